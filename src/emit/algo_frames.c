/* Kinematic outputs: forward kinematics, end-effector poses (rpy, quaternion) and the frame Jacobian's constant frame tables. */
#include <stdio.h>
#include <string.h>
#include "emit_ctx.h"

void emit_elem(const emit_ctx *cx, char *buf, size_t cap, const char *name, const char *expr)
{
    if (cx->st.elem_scale[0]) snprintf(buf, cap, "%s[(%s)%s]", name, expr, cx->st.elem_scale);
    else snprintf(buf, cap, "%s[%s]", name, expr);
}

/* oMf of frame f: the body placement times the frame's constant placement (or the constant alone) */
static void frame_placement(ek_kin *k, int f, sxf *out)
{
    const em_frame *fr = &k->em->f[f];
    sxf P;
    sp_xf_const(k->g, fr->R, fr->p, &P);
    if (fr->body < 0) *out = P;
    else sp_xf_compose(k->g, &k->oM[fr->body], &P, out);
}

int ea_fk(const emit_ctx *cx, ek_kin *k)
{
    sym_graph *g = k->g;
    if (ek_world(k) != 0) return -1;
    for (int i = 0; i < cx->em->nb; i++) {
        const sxf *X = &k->oM[i];
        ek_body_comment(g, cx->em, i, "oMi");
        for (int r = 0; r < 3; r++) {
            for (int c = 0; c < 3; c++) sym_store(g, EP_OUT, 16 * i + 4 * r + c, X->R[3 * r + c]);
            sym_store(g, EP_OUT, 16 * i + 4 * r + 3, X->p[r]);
        }
        for (int c = 0; c < 4; c++) sym_store(g, EP_OUT, 16 * i + 12 + c, sym_const(g, c == 3 ? 1.0 : 0.0));
    }
    return 0;
}

void emit_rpy_helper(const emit_ctx *cx)
{
    const emit_real *re = cx->re;
    const char *f = re->is_float ? "f" : "";
    /* Pinocchio rounds every product; -ffp-contract=fast (nvcc: --fmad) would fuse them, and the roll's sign at
       +-pi comes from the rounding residual of s1 R02 - c1 R12: grid_rpy_mul_ keeps each product rounded */
    ew_printf(cx->w,
              "/* a * b rounded, never fused into an fma */\n"
              "%s grid_real grid_rpy_mul_(const grid_real a, const grid_real b)\n{\n"
              "#ifdef __CUDA_ARCH__\n    return __%cmul_rn(a, b);\n#else\n"
              "    volatile grid_real p = a * b;\n    return p;\n#endif\n}\n\n",
              cx->t->helper_fn, re->is_float ? 'f' : 'd');
    ew_printf(cx->w,
              "/* roll, pitch, yaw of R (row-major) exactly as pinocchio.rpy.matrixToRpy, bit for bit:\n"
              "   Eigen's eulerAngles(2, 1, 0) reversed, then the pitch folded into [-pi/2, pi/2] */\n"
              "%s void grid_rpy_(const grid_real *R, grid_real *rpy)\n{\n"
              "    const grid_real pi = 3.14159265358979323846%s;\n"
              "    grid_real a0 = %s(R[3], R[0]);\n"
              "    const grid_real c2 = %s(grid_rpy_mul_(R[8], R[8]) + grid_rpy_mul_(R[7], R[7]));\n"
              "    grid_real a1;\n"
              "    if (a0 < 0) {\n"
              "        a0 += pi;\n"
              "        a1 = %s(-R[6], -c2);\n"
              "    } else {\n"
              "        a1 = %s(-R[6], c2);\n"
              "    }\n"
              "    const grid_real s1 = %s(a0), c1 = %s(a0);\n"
              "    grid_real r = %s(grid_rpy_mul_(s1, R[2]) - grid_rpy_mul_(c1, R[5]),\n"
              "                     grid_rpy_mul_(c1, R[4]) - grid_rpy_mul_(s1, R[1])), p = a1, y = a0;\n"
              "    if (p < -pi / 2) p += 2 * pi;\n"
              "    if (p > pi / 2) {\n"
              "        p = pi - p;\n"
              "        if (r < 0) r += pi;\n"
              "        else r -= pi;\n"
              "        y -= pi;\n"
              "    }\n"
              "    rpy[0] = r;\n    rpy[1] = p;\n    rpy[2] = y;\n}\n\n",
              cx->t->helper_fn, f, re->fn_atan2, re->fn_sqrt, re->fn_atan2, re->fn_atan2, re->fn_sin, re->fn_cos,
              re->fn_atan2);
}

int ea_ee_pose(const emit_ctx *cx, ek_kin *k)
{
    sym_graph *g = k->g;
    const em_model *em = cx->em;
    char buf[160], el[96];
    if (em->nee == 0) return 0;
    if (ek_world(k) != 0) return -1;
    int re = sym_local_array(g, "Re", 9 * em->nee);
    for (int e = 0; e < em->nee; e++) {
        sxf X;
        sym_comment(g, "/* end effector %d: frame %d */", e, em->ee[e]);
        frame_placement(k, em->ee[e], &X);
        for (int r = 0; r < 3; r++) sym_store(g, EP_OUT, 6 * e + r, X.p[r]);
        for (int r = 0; r < 9; r++) sym_store(g, re, 9 * e + r, X.R[r]);
    }
    /* roll, pitch, yaw of each rotation */
    sym_raw(g, "    {\n        grid_real r_[3];\n");
    for (int e = 0; e < em->nee; e++) {
        snprintf(buf, sizeof buf, "        grid_rpy_(Re + %d, r_);\n", 9 * e);
        sym_raw(g, buf);
        for (int r = 0; r < 3; r++) {
            char ix[32];
            snprintf(ix, sizeof ix, "%d", 6 * e + 3 + r);
            emit_elem(cx, el, sizeof el, "out", ix);
            snprintf(buf, sizeof buf, "        %s = r_[%d];\n", el, r);
            sym_raw(g, buf);
        }
    }
    sym_raw(g, "    }\n");
    return 0;
}

/* a table row of n reals */
static void write_reals(const emit_ctx *cx, const double *x, int n)
{
    for (int i = 0; i < n; i++) {
        if (i) ew_puts(cx->w, ", ");
        sym_write_literal(cx->w, &cx->st, x[i]);
    }
}

void emit_frame_tables(const emit_ctx *cx)
{
    const em_model *em = cx->em;
    const char *q = cx->t->table;
    ew_writer *w = cx->w;
    /* once per translation unit: two rows' parts compiled as one may both hold them */
    ew_puts(w, "#ifndef GRID_FRAME_TABLES_\n#define GRID_FRAME_TABLES_\n");
    ew_puts(w, "/* frame -> body (-1 = world) and placement in the body frame [R row-major, p] */\n");
    ew_printf(w, "%s int grid_frame_body_[%d] = {", q, em->nframes > 0 ? em->nframes : 1);
    for (int f = 0; f < em->nframes; f++) ew_printf(w, "%s%d", f ? ", " : "", em->f[f].body);
    if (em->nframes == 0) ew_puts(w, "-1");
    ew_printf(w, "};\n%s grid_real grid_frame_place_[%d][12] = {\n", q, em->nframes > 0 ? em->nframes : 1);
    for (int f = 0; f < em->nframes; f++) {
        ew_puts(w, "    {");
        write_reals(cx, em->f[f].R, 9);
        ew_puts(w, ", ");
        write_reals(cx, em->f[f].p, 3);
        ew_puts(w, "},\n");
    }
    if (em->nframes == 0) ew_puts(w, "    {0},\n");
    ew_puts(w, "};\n#endif\n");
    ew_puts(w, "\n");
}

/* ---- programs (program.h) ---- */

/* oMi of every body into the 12-wide buffer OM ([R row-major, p]); with FK's output when write_out */
static void world_pass(ep_prog *p, int OM, int write_out)
{
    for (ep_bodies(p, 0); ep_next(p);) {
        sym_graph *g = ep_graph(p);
        (void)ep_X(p, EP_I); /* (liMi first, then the comment: the source stays as it was) */
        ep_comment(p, "oMi");
        const sxf o = ep_world_placement(p, OM, 0);
        if (!write_out) continue;
        for (int r = 0; r < 3; r++) {
            for (int c = 0; c < 3; c++) ep_out(p, o.R[3 * r + c], ep_body_ix(EP_I), ep_at(r), ep_at(c));
            ep_out(p, o.p[r], ep_body_ix(EP_I), ep_at(r), ep_at(3));
        }
        for (int c = 0; c < 4; c++) ep_out(p, sym_const(g, c == 3 ? 1.0 : 0.0), ep_body_ix(EP_I), ep_at(3), ep_at(c));
    }
}

int ea_fk_program(ep_prog *p)
{
    world_pass(p, ep_buffer(p, "oM", 12, 1), 1);
    return 0;
}

int ea_ee_pose_program(ep_prog *p, const emit_ctx *cx)
{
    const em_model *em = cx->em;
    const int OM = ep_buffer(p, "oM", 12, 1);
    char buf[160], el[96];
    world_pass(p, OM, 0);
    if (em->nee == 0) return 0;
    /* the end effectors: fixed bodies, so one step reads their placements */
    sym_graph *g = ep_graph(p);
    int re = sym_local_array(g, "Re", 9 * em->nee);
    for (int e = 0; e < em->nee; e++) {
        const em_frame *fr = &em->f[em->ee[e]];
        sxf P, X;
        sym_comment(g, "/* end effector %d: frame %d */", e, em->ee[e]);
        sp_xf_const(g, fr->R, fr->p, &P);
        if (fr->body < 0) {
            X = P;
        } else {
            sxf o;
            for (int k = 0; k < 9; k++) o.R[k] = ep_get_at(p, OM, fr->body, k);
            for (int k = 0; k < 3; k++) o.p[k] = ep_get_at(p, OM, fr->body, 9 + k);
            sp_xf_compose(g, &o, &P, &X);
        }
        for (int r = 0; r < 3; r++) ep_out(p, X.p[r], ep_at(6 * e + r));
        for (int r = 0; r < 9; r++) sym_store(g, re, 9 * e + r, X.R[r]);
    }
    /* roll, pitch, yaw of each rotation */
    sym_raw(g, "    {\n        grid_real r_[3];\n");
    for (int e = 0; e < em->nee; e++) {
        snprintf(buf, sizeof buf, "        grid_rpy_(Re + %d, r_);\n", 9 * e);
        sym_raw(g, buf);
        for (int r = 0; r < 3; r++) {
            char ix[32];
            snprintf(ix, sizeof ix, "%d", 6 * e + 3 + r);
            emit_elem(cx, el, sizeof el, "out", ix);
            snprintf(buf, sizeof buf, "        %s = r_[%d];\n", el, r);
            sym_raw(g, buf);
        }
    }
    sym_raw(g, "    }\n");
    return 0;
}

int ea_jacobian_program(ep_prog *p)
{
    const int OM = ep_buffer(p, "oM", 12, 1), OMF = ep_buffer(p, "oMf", 12, 0);
    world_pass(p, OM, 0);
    ep_zero_output(p);
    /* a frame welded to the world has a zero Jacobian */
    ep_raw(p, "if (grid_frame_body_[frame] >= 0) {\n");
    /* oMf: the frame body's placement times the frame's */
    {
        sym_graph *g = ep_graph(p);
        sxf o, P, f;
        for (int k = 0; k < 9; k++) o.R[k] = ep_get_at(p, OM, EP_BODY_FRAME, k);
        for (int k = 0; k < 3; k++) o.p[k] = ep_get_at(p, OM, EP_BODY_FRAME, 9 + k);
        for (int k = 0; k < 9; k++) P.R[k] = ep_frame_place(p, k);
        for (int k = 0; k < 3; k++) P.p[k] = ep_frame_place(p, 9 + k);
        sp_xf_compose(g, &o, &P, &f);
        for (int k = 0; k < 9; k++) ep_set(p, OMF, EP_I, EP_SELF, k, f.R[k]);
        for (int k = 0; k < 3; k++) ep_set(p, OMF, EP_I, EP_SELF, 9 + k, f.p[k]);
    }
    /* the columns of every joint on the frame's chain, per reference frame */
    static const char *const branch[3] = {"if (rf == 0) {\n", "} else if (rf == 1) {\n", "} else {\n"};
    for (int rf = 0; rf < 3; rf++) {
        ep_raw(p, branch[rf]);
        for (ep_chain(p, "grid_frame_body_[frame]"); ep_next(p);) {
            sym_graph *g = ep_graph(p);
            const ek_body *b = ep_body(p, EP_I);
            sxf o;
            sv pf[3], Rf[9];
            ep_comment(p, rf == 0 ? "WORLD columns" : rf == 1 ? "LOCAL columns" : "LOCAL_WORLD_ALIGNED columns");
            for (int k = 0; k < 9; k++) o.R[k] = ep_get(p, OM, EP_I, EP_SELF, k);
            for (int k = 0; k < 3; k++) o.p[k] = ep_get(p, OM, EP_I, EP_SELF, 9 + k);
            for (int k = 0; k < 9; k++) Rf[k] = ep_get(p, OMF, EP_I, EP_SELF, k);
            for (int k = 0; k < 3; k++) pf[k] = ep_get(p, OMF, EP_I, EP_SELF, 9 + k);
            for (int c = 0; c < b->nv; c++) {
                sv s[6], w[6], col[6];
                for (int r = 0; r < 6; r++) s[r] = b->S[b->nv * r + c];
                /* the world column [v; w] (velocity of the point at the world origin) */
                sp_motion_act(g, &o, s, w);
                if (rf == GRID_WORLD) {
                    for (int r = 0; r < 6; r++) col[r] = w[r];
                } else {
                    /* the frame origin's velocity: v - p_f x w; LOCAL also rotates into the frame */
                    sv pxw[3], lin[3];
                    sp_cross(g, pf, w + 3, pxw);
                    for (int r = 0; r < 3; r++) lin[r] = sym_sub(g, w[r], pxw[r]);
                    if (rf == GRID_LOCAL) {
                        sp_rot_t(g, Rf, lin, col);
                        sp_rot_t(g, Rf, w + 3, col + 3);
                    } else {
                        for (int r = 0; r < 3; r++) {
                            col[r] = lin[r];
                            col[3 + r] = w[3 + r];
                        }
                    }
                }
                for (int r = 0; r < 6; r++) ep_out(p, col[r], ep_at(r), ep_coord(EP_I, EP_SELF, c));
            }
        }
    }
    ep_raw(p, "}\n}\n");
    return 0;
}

/* [x y z qw qx qy qz] of the first end effector (the identity pose on a robot without one): its placement, then the
   quaternion of its rotation as Eigen's Quaternion(Matrix3) computes it (Shepperd's choice of the largest of w, x, y, z
   from the trace and the diagonal), negated where qw < 0 so that q and -q give one answer */
EMIT_PROGRAM(ea_fk_batched_program)
{
    (void)sp;
    const em_model *em = cx->em;
    const int OM = ep_buffer(p, "oM", 12, 1);
    world_pass(p, OM, 0);
    sym_graph *g = ep_graph(p);
    sxf X;
    static const double I3[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, O3[3] = {0, 0, 0};
    sp_xf_const(g, I3, O3, &X);
    if (em->nee > 0) {
        const em_frame *fr = &em->f[em->ee[0]];
        sxf P;
        sym_comment(g, "/* end effector 0: frame %d */", em->ee[0]);
        sp_xf_const(g, fr->R, fr->p, &P);
        if (fr->body < 0) {
            X = P;
        } else {
            sxf o;
            for (int k = 0; k < 9; k++) o.R[k] = ep_get_at(p, OM, fr->body, k);
            for (int k = 0; k < 3; k++) o.p[k] = ep_get_at(p, OM, fr->body, 9 + k);
            sp_xf_compose(g, &o, &P, &X);
        }
    }
    for (int r = 0; r < 3; r++) ep_out(p, X.p[r], ep_at(r));
    const int rq = sym_local_array(g, "Rq", 9);
    for (int r = 0; r < 9; r++) sym_store(g, rq, r, X.R[r]);
    /* the quaternion (branches: raw code) into Qt, whose loads are the outputs */
    const int qt = sym_local_array(g, "Qt", 4);
    const char *sq = cx->re->fn_sqrt;
    char buf[2048];
    snprintf(buf, sizeof buf,
             "    {\n"
             "        /* the quaternion [w x y z] of Rq (row-major) */\n"
             "        const grid_real h_ = (grid_real)0.5, t_ = Rq[0] + Rq[4] + Rq[8];\n"
             "        if (t_ > 0) {\n"
             "            const grid_real s_ = %s(t_ + 1), u_ = h_ / s_;\n"
             "            Qt[0] = h_ * s_;\n"
             "            Qt[1] = (Rq[7] - Rq[5]) * u_;\n"
             "            Qt[2] = (Rq[2] - Rq[6]) * u_;\n"
             "            Qt[3] = (Rq[3] - Rq[1]) * u_;\n"
             "        } else {\n"
             "            int i_ = Rq[4] > Rq[0];\n"
             "            if (Rq[8] > Rq[4 * i_]) i_ = 2;\n"
             "            const int j_ = (i_ + 1) %% 3, k_ = (j_ + 1) %% 3;\n"
             "            const grid_real s_ = %s(Rq[4 * i_] - Rq[4 * j_] - Rq[4 * k_] + 1), u_ = h_ / s_;\n"
             "            Qt[1 + i_] = h_ * s_;\n"
             "            Qt[0] = (Rq[3 * k_ + j_] - Rq[3 * j_ + k_]) * u_;\n"
             "            Qt[1 + j_] = (Rq[3 * j_ + i_] + Rq[3 * i_ + j_]) * u_;\n"
             "            Qt[1 + k_] = (Rq[3 * k_ + i_] + Rq[3 * i_ + k_]) * u_;\n"
             "        }\n"
             "        if (Qt[0] < 0)\n"
             "            for (int c_ = 0; c_ < 4; c_++) Qt[c_] = -Qt[c_];\n"
             "    }\n",
             sq, sq);
    sym_raw(g, buf);
    for (int c = 0; c < 4; c++) ep_out(p, sym_input(g, qt, c), ep_at(3 + c));
    return 0;
}
