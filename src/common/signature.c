/* The signature table of every batched method, and the helpers that evaluate its shapes for one model. */
#include <assert.h>
#include <stdio.h>
#include <string.h>
#include "grid/signature.h"

/* the arguments rows share, spelled once (each row below is still one initializer) */
#define DIM(s, m) {GRID_SYM_##s, m}
#define ARG(name, desc, opt, ...) {name, desc, opt, (int)(sizeof((grid_dim[]){__VA_ARGS__}) / sizeof(grid_dim)), {__VA_ARGS__}}
#define IN_Q ARG("q", "configuration width", GRID_REQUIRED, DIM(NQ, 1))
#define IN_QD ARG("qd", "tangent width", GRID_REQUIRED, DIM(NV, 1))
#define IN_QDD_OPT ARG("qdd", "tangent width", GRID_ABSENT_ZEROS, DIM(NV, 1))
#define IN_U ARG("u", "tangent width", GRID_REQUIRED, DIM(NV, 1))
#define IN_FEXT_OPT ARG("f_ext", "body-local wrenches", GRID_ABSENT_ZEROS, DIM(NB, 6))
#define OUT_NV(name, desc) ARG(name, desc, GRID_REQUIRED, DIM(NV, 1))
#define OUT_NVxNV(name, desc) ARG(name, desc, GRID_REQUIRED, DIM(NV, 1), DIM(NV, 1))
#define NO_LINKS -1, -1
#define IN_COTANGENT(dim) ARG("cotangent", "the output's width", GRID_REQUIRED, dim)
#define OUT_NVx2NV(name, desc) ARG(name, desc, GRID_REQUIRED, DIM(NV, 1), DIM(NV, 2))

static const grid_signature_row rows[GRID_ALGO_COUNT] = {
    [GRID_ALGO_RNEA] = {"rnea", "inverse_dynamics", "rnea", "tau = M(q) qdd + c(q, qd) - J^T f_ext (RNEA)",
                        4, {IN_Q, IN_QD, IN_QDD_OPT, IN_FEXT_OPT}, 1, {OUT_NV("tau", "joint torques")},
                        0, {{0}}, GRID_GPU_THREAD, GRID_ALGO_RNEA_GRAD, GRID_ALGO_RNEA_VJP, GRID_QTY_FORCE},
    [GRID_ALGO_NLE] = {"nle", "nonlinear_effects", "", "c(q, qd) = rnea(q, qd, 0)",
                       2, {IN_Q, IN_QD}, 1, {OUT_NV("c", "bias torques")}, 0, {{0}}, GRID_GPU_THREAD, NO_LINKS, GRID_QTY_FORCE},
    [GRID_ALGO_GRAVITY] = {"gravity", "generalized_gravity", "", "g(q) = rnea(q, 0, 0)",
                           1, {IN_Q}, 1, {OUT_NV("g", "gravity torques")}, 0, {{0}}, GRID_GPU_THREAD, NO_LINKS, GRID_QTY_FORCE},
    [GRID_ALGO_CRBA] = {"crba", "crba", "", "M(q), full symmetric (CRBA)",
                        1, {IN_Q}, 1, {OUT_NVxNV("M", "mass matrix")}, 0, {{0}}, GRID_GPU_THREAD, NO_LINKS, GRID_QTY_INERTIA},
    [GRID_ALGO_MINV] = {"minv", "minv", "", "M(q)^-1 by the direct algorithm",
                        1, {IN_Q}, 1, {OUT_NVxNV("Minv", "inverse mass matrix")}, 0, {{0}}, GRID_GPU_THREAD, NO_LINKS, GRID_QTY_INERTIA},
    [GRID_ALGO_FD] = {"fd", "forward_dynamics", "fd", "qdd = M^-1 (u - c(q, qd) + J^T f_ext)",
                      4, {IN_Q, IN_QD, IN_U, IN_FEXT_OPT}, 1, {OUT_NV("qdd", "joint accelerations")},
                      0, {{0}}, GRID_GPU_THREAD, GRID_ALGO_FD_GRAD, GRID_ALGO_FD_VJP, GRID_QTY_ACCEL},
    [GRID_ALGO_ABA] = {"aba", "aba", "", "qdd by the articulated-body algorithm",
                       4, {IN_Q, IN_QD, IN_U, IN_FEXT_OPT}, 1, {OUT_NV("qdd", "joint accelerations")},
                       0, {{0}}, GRID_GPU_THREAD, GRID_ALGO_FD_GRAD, GRID_ALGO_FD_VJP, GRID_QTY_ACCEL},
    [GRID_ALGO_FK] = {"fk", "forward_kinematics", "", "oMi of every body, 4x4 homogeneous, row-major",
                      1, {IN_Q}, 1, {ARG("oMi", "body placements", GRID_REQUIRED, DIM(NB, 1), DIM(ONE, 4), DIM(ONE, 4))},
                      0, {{0}}, GRID_GPU_THREAD, NO_LINKS, GRID_QTY_WORLD},
    [GRID_ALGO_EE_POSE] = {"ee_pose", "end_effector_pose", "", "[x y z roll pitch yaw] per end effector",
                           1, {IN_Q}, 1, {ARG("pose", "end-effector poses", GRID_REQUIRED, DIM(NEE, 6))},
                           0, {{0}}, GRID_GPU_THREAD, GRID_ALGO_EE_POSE_GRAD, GRID_ALGO_EE_POSE_VJP, GRID_QTY_WORLD},
    [GRID_ALGO_FRAME_JACOBIAN] = {"frame_jacobian", "frame_jacobian", "", "J of one frame, rows [linear; angular]",
                                  1, {IN_Q}, 1, {ARG("J", "frame Jacobian", GRID_REQUIRED, DIM(ONE, 6), DIM(NV, 1))},
                                  2, {{"frame", 0, DIM(NFRAMES, 1), "frame id %ld is out of range: the robot has %d frames"},
                                      {"reference_frame", 0, DIM(ONE, 3),
                                       "reference_frame id %ld is not WORLD (0), LOCAL (1) or LOCAL_WORLD_ALIGNED (2)"}},
                                  GRID_GPU_THREAD, NO_LINKS, GRID_QTY_JACOBIAN},
    /* first-order derivatives: q columns along the local tangent (pin.integrate), as Pinocchio's */
    [GRID_ALGO_RNEA_GRAD] = {"rnea_grad", "inverse_dynamics_gradient", "rnea_grad",
                             "[dtau/dq | dtau/dqd] of RNEA at (q, qd, qdd, f_ext) (computeRNEADerivatives)",
                             4, {IN_Q, IN_QD, IN_QDD_OPT, IN_FEXT_OPT}, 1, {OUT_NVx2NV("dtau", "torque gradient")},
                             0, {{0}}, GRID_GPU_THREAD, NO_LINKS, GRID_QTY_DERIVED},
    [GRID_ALGO_FD_GRAD] = {"fd_grad", "forward_dynamics_gradient", "forward_dynamics_grad aba_gradient",
                           "[dqdd/dq | dqdd/dqd] of forward dynamics at (q, qd, u, f_ext) (computeABADerivatives)",
                           4, {IN_Q, IN_QD, IN_U, IN_FEXT_OPT}, 1, {OUT_NVx2NV("dqdd", "acceleration gradient")},
                           0, {{0}}, GRID_GPU_THREAD, NO_LINKS, GRID_QTY_DERIVED},
    [GRID_ALGO_EE_POSE_GRAD] = {"ee_pose_grad", "end_effector_pose_gradient", "ee_pose_grad",
                                "d[x y z roll pitch yaw]/dq per end effector (local tangent; rpy rows: coordinate "
                                "derivatives, infinite at pitch = +-pi/2)",
                                1, {IN_Q}, 1, {ARG("dpose", "pose gradient", GRID_REQUIRED, DIM(NEE, 6), DIM(NV, 1))},
                                0, {{0}}, GRID_GPU_THREAD, NO_LINKS, GRID_QTY_DERIVED},
    /* vector-Jacobian products, cotangent^T d(out)/d(in) over the differentiable inputs (the specification's: ID in
       q and qd, FD in q, qd and u, the pose in q), the q block in the local tangent: the backward passes of autograd */
    [GRID_ALGO_RNEA_VJP] = {"rnea_vjp", "inverse_dynamics_vjp", "rnea_vjp",
                            "[g^T dtau/dq | g^T dtau/dqd] of RNEA at (q, qd, qdd, f_ext) for a cotangent g (O(n))",
                            5, {IN_Q, IN_QD, IN_COTANGENT(DIM(NV, 1)), IN_QDD_OPT, IN_FEXT_OPT},
                            1, {ARG("vjp", "cotangents of q and qd", GRID_REQUIRED, DIM(NV, 2))},
                            0, {{0}}, GRID_GPU_THREAD, NO_LINKS, GRID_QTY_DERIVED},
    [GRID_ALGO_FD_VJP] = {"fd_vjp", "forward_dynamics_vjp", "fd_vjp aba_vjp",
                          "[g^T dqdd/dq | g^T dqdd/dqd | g^T dqdd/du] of forward dynamics at (q, qd, u, f_ext) for a "
                          "cotangent g",
                          5, {IN_Q, IN_QD, IN_U, IN_COTANGENT(DIM(NV, 1)), IN_FEXT_OPT},
                          1, {ARG("vjp", "cotangents of q, qd and u", GRID_REQUIRED, DIM(NV, 3))},
                          0, {{0}}, GRID_GPU_THREAD, NO_LINKS, GRID_QTY_DERIVED},
    [GRID_ALGO_EE_POSE_VJP] = {"ee_pose_vjp", "end_effector_pose_vjp", "ee_pose_vjp",
                               "g^T d[x y z roll pitch yaw]/dq of the end-effector poses for a cotangent g",
                               2, {IN_Q, IN_COTANGENT(DIM(NEE, 6))},
                               1, {ARG("vjp", "cotangent of q", GRID_REQUIRED, DIM(NV, 1))},
                               0, {{0}}, GRID_GPU_THREAD, NO_LINKS, GRID_QTY_DERIVED},
};

int grid_sig_count(void) { return GRID_ALGO_COUNT; }

const grid_signature_row *grid_sig_row(int id)
{
    return id >= 0 && id < GRID_ALGO_COUNT ? &rows[id] : NULL;
}

int grid_sig_find(const char *name)
{
    for (int i = 0; name && i < GRID_ALGO_COUNT; i++)
        if (strcmp(name, rows[i].name) == 0) return i;
    return -1;
}

grid_sizes grid_sizes_of(int nq, int nv, int nb, int nee, int nframes)
{
    grid_sizes s = {nq, nv, nb, nee, nframes};
    return s;
}

long long grid_sig_dim(grid_dim d, const grid_sizes *s)
{
    long long n = 1;
    switch (d.sym) {
    case GRID_SYM_ONE: n = 1; break;
    case GRID_SYM_NQ: n = s->nq; break;
    case GRID_SYM_NV: n = s->nv; break;
    case GRID_SYM_NB: n = s->nb; break;
    case GRID_SYM_NEE: n = s->nee; break;
    case GRID_SYM_NFRAMES: n = s->nframes; break;
    default: assert(!"unknown dimension symbol"); return -1;
    }
    return n * d.mul;
}

long long grid_sig_shape(const grid_sig_arg *a, const grid_sizes *s, int shape[GRID_MAX_RANK])
{
    assert(a->rank >= 0 && a->rank <= GRID_MAX_RANK);
    long long w = 1;
    for (int k = 0; k < GRID_MAX_RANK; k++) {
        long long d = k < a->rank ? grid_sig_dim(a->dim[k], s) : 0;
        if (shape) shape[k] = (int)d;
        if (k < a->rank) w *= d;
    }
    return w;
}

const char *grid_sym_name(int sym)
{
    static const char *const names[GRID_SYM_COUNT] = {"1", "nq", "nv", "nb", "nee", "nframes"};
    return sym >= 0 && sym < GRID_SYM_COUNT ? names[sym] : "?";
}

const char *grid_sig_dim_text(grid_dim d, char *buf, size_t cap)
{
    if (d.sym == GRID_SYM_ONE) snprintf(buf, cap, "%d", d.mul);
    else if (d.mul == 1) snprintf(buf, cap, "%s", grid_sym_name(d.sym));
    else snprintf(buf, cap, "%d*%s", d.mul, grid_sym_name(d.sym));
    return buf;
}

static void concrete_arg(const grid_sig_arg *a, const grid_sizes *s, grid_arg_info *o)
{
    memset(o, 0, sizeof *o);
    o->name = a->name;
    o->rank = a->rank;
    o->width = grid_sig_shape(a, s, o->shape);
    o->optional = a->optional;
}

void grid_sig_concrete(int id, const grid_sizes *s, size_t work_bytes, grid_method_info *out)
{
    const grid_signature_row *r = grid_sig_row(id);
    assert(r && r->n_in <= GRID_MAX_IN && r->n_out <= GRID_MAX_OUT && r->n_attr <= GRID_MAX_ATTR);
    memset(out, 0, sizeof *out);
    out->name = r->name;
    out->n_in = r->n_in;
    out->n_out = r->n_out;
    out->n_attr = r->n_attr;
    for (int k = 0; k < r->n_in; k++) concrete_arg(&r->in[k], s, &out->in[k]);
    for (int k = 0; k < r->n_out; k++) concrete_arg(&r->out[k], s, &out->out[k]);
    for (int k = 0; k < r->n_attr; k++) {
        out->attr_name[k] = r->attr[k].name;
        out->attr_lo[k] = r->attr[k].lo;
        out->attr_hi[k] = (int)grid_sig_dim(r->attr[k].hi, s);
    }
    out->work_bytes = work_bytes;
    out->gpu_map = r->gpu_map;
}

/* "(7, 7)" */
static void shape_text(const grid_arg_info *a, char *buf, size_t cap)
{
    size_t n = (size_t)snprintf(buf, cap, "(");
    for (int k = 0; k < a->rank && n < cap; k++)
        n += (size_t)snprintf(buf + n, cap - n, "%d%s", a->shape[k], a->rank == 1 ? "," : k + 1 < a->rank ? ", " : "");
    if (n < cap) snprintf(buf + n, cap - n, ")");
}

static int same_name(const char *a, const char *b) { return a && b && strcmp(a, b) == 0; }

/* 0 when the two arguments agree, else 1 with the difference in why */
static int arg_mismatch(const char *kind, int k, const grid_arg_info *want, const grid_arg_info *have, char *why,
                        size_t cap)
{
    int same = same_name(want->name, have->name) && want->rank == have->rank && want->optional == have->optional &&
               want->width == have->width && have->rank >= 0 && have->rank <= GRID_MAX_RANK;
    for (int d = 0; same && d < want->rank; d++) same = want->shape[d] == have->shape[d];
    if (same) return 0;
    char ws[64], hs[64];
    shape_text(want, ws, sizeof ws);
    if (have->rank >= 0 && have->rank <= GRID_MAX_RANK) shape_text(have, hs, sizeof hs);
    else snprintf(hs, sizeof hs, "(rank %d)", have->rank);
    snprintf(why, cap, "%s %d is '%s' %s%s, this grid-rbd expects '%s' %s%s", kind, k,
             have->name ? have->name : "(null)", hs, have->optional ? " (optional)" : "", want->name, ws,
             want->optional ? " (optional)" : "");
    return 1;
}

int grid_sig_mismatch(int id, const grid_sizes *s, const grid_method_info *have, char *why, size_t cap)
{
    grid_method_info want;
    grid_sig_concrete(id, s, 0, &want);
    if (!same_name(want.name, have->name)) {
        snprintf(why, cap, "the row is named '%s', expected '%s'", have->name ? have->name : "(null)", want.name);
        return 1;
    }
    if (want.n_in != have->n_in || want.n_out != have->n_out || want.n_attr != have->n_attr) {
        snprintf(why, cap, "it has %d inputs, %d outputs and %d attributes; this grid-rbd expects %d, %d and %d",
                 have->n_in, have->n_out, have->n_attr, want.n_in, want.n_out, want.n_attr);
        return 1;
    }
    for (int k = 0; k < want.n_in; k++)
        if (arg_mismatch("input", k, &want.in[k], &have->in[k], why, cap)) return 1;
    for (int k = 0; k < want.n_out; k++)
        if (arg_mismatch("output", k, &want.out[k], &have->out[k], why, cap)) return 1;
    for (int k = 0; k < want.n_attr; k++)
        if (!same_name(want.attr_name[k], have->attr_name[k]) || want.attr_lo[k] != have->attr_lo[k] ||
            want.attr_hi[k] != have->attr_hi[k]) {
            snprintf(why, cap, "attribute %d is '%s' in [%d, %d), this grid-rbd expects '%s' in [%d, %d)", k,
                     have->attr_name[k] ? have->attr_name[k] : "(null)", have->attr_lo[k], have->attr_hi[k],
                     want.attr_name[k], want.attr_lo[k], want.attr_hi[k]);
            return 1;
        }
    return 0;
}

const char *grid_algo_name(int algo)
{
    const grid_signature_row *r = grid_sig_row(algo);
    return r ? r->name : NULL;
}

int grid_algo_from_name(const char *name) { return grid_sig_find(name); }

long long grid_algo_output_width(int algo, int nq, int nv, int nb, int nee)
{
    const grid_signature_row *r = grid_sig_row(algo);
    if (!r) return -1;
    grid_sizes s = grid_sizes_of(nq, nv, nb, nee, 0);
    return grid_sig_shape(&r->out[0], &s, NULL);
}
