/* Property tests of the float64 reference algorithms on hand-built models: a chain, a free-flyer tree, planar and
   spherical joints, coupled mimic joints. */
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include "check.h"
#include "calls.h"
#include "grid/ref.h"
#include "../../src/ref/ref_rows.h"

/* the target [frame id, offset] row_state passes a row that takes one */
static const double *row_target;

/* one state of a row by its reference function, its inputs by name (q, qd, qdd or u, f_ext, target), the call's
   attributes */
static void row_state(const grid_model *m, int algo, const double *q, const double *v, const double *a,
                      const double *f, const int *attr, double *out, double *w)
{
    const grid_signature_row *row = grid_sig_row(algo);
    const double *in[GRID_MAX_IN] = {0};
    for (int k = 0; k < row->n_in; k++) {
        const char *n = row->in[k].name;
        in[k] = !strcmp(n, "q") ? q : !strcmp(n, "qd") ? v : !strcmp(n, "qdd") || !strcmp(n, "u") ? a
              : !strcmp(n, "f_ext") ? f : !strcmp(n, "target") ? row_target : NULL;
        CHECK_MSG(in[k] != NULL, "%s: input %s", row->name, n);
    }
    /* several outputs: one after another in out */
    const grid_sizes sz = grid_sizes_of(m->nq, m->nv, m->nb, m->nee, m->nframes);
    double *outs[GRID_MAX_OUT] = {out};
    for (int k = 1; k < row->n_out; k++) outs[k] = outs[k - 1] + grid_sig_shape(&row->out[k - 1], &sz, NULL);
    /* the call's attributes, then the float64 rule */
    int all[GRID_REF_ATTRS] = {[GRID_REF_RULE] = GRID_FLOAT64};
    for (int k = 0; k < GRID_MAX_ATTR; k++) all[k] = attr[k];
    const ref_state_fn fn = ref_row_fn(algo);
    CHECK(fn != NULL);
    if (fn) fn(m, in, outs, all, w);
}

/* ---- hand-built models ---- */

/* R = Rz(y) Ry(p) Rx(r), the URDF rpy convention */
static void set_placement(grid_transform *t, double x, double y, double z, double r, double p, double yw)
{
    const double cr = cos(r), sr = sin(r), cp = cos(p), sp = sin(p), cy = cos(yw), sy = sin(yw);
    const double R[9] = {cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr,
                         sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr,
                         -sp, cp * sr, cp * cr};
    memcpy(t->R, R, sizeof R);
    t->p[0] = x; t->p[1] = y; t->p[2] = z;
}

static void set_joint(grid_body *b, grid_joint_type type, double ax, double ay, double az, int parent,
                      int iq, int iv)
{
    grid_joint *j = &b->joint;
    const double n = sqrt(ax * ax + ay * ay + az * az);
    j->type = type;
    j->axis[0] = ax / n; j->axis[1] = ay / n; j->axis[2] = az / n;
    j->parent = parent;
    j->iq = iq; j->iv = iv;
    j->uq = iq; j->uv = iv;
    j->mimic_leader = -1;
    j->nq = grid_joint_model_of(type)->nq;
    j->nv = grid_joint_model_of(type)->nv;
}

/* make body b's joint a mimic of body leader's: q = mult * q_leader + off, in the leader's user coordinate */
static void set_mimic(grid_body *bodies, int b, int leader, double mult, double off)
{
    grid_joint *j = &bodies[b].joint;
    j->mimic = 1;
    j->mimic_leader = leader;
    j->mimic_multiplier = mult;
    j->mimic_offset = off;
    j->uq = bodies[leader].joint.uq;
    j->uv = bodies[leader].joint.uv;
}

static void set_inertia(grid_body *b, double mass, double cx, double cy, double cz,
                        double ixx, double iyy, double izz, double ixy, double ixz, double iyz)
{
    grid_inertia *in = &b->inertia;
    in->mass = mass;
    in->com[0] = cx; in->com[1] = cy; in->com[2] = cz;
    const double I[9] = {ixx, ixy, ixz, ixy, iyy, iyz, ixz, iyz, izz};
    memcpy(in->I_com, I, sizeof I);
}

static void set_frame(grid_frame *f, int body, double x, double y, double z, double r, double p, double yw)
{
    f->body = body;
    set_placement(&f->placement, x, y, z, r, p, yw);
}

/* fixed-base chain: revolute z, revolute about an unaligned axis, prismatic x */
static grid_body chain_bodies[3];
static grid_frame chain_frames[6];
static int chain_ee[1] = {5};
static grid_model chain;

/* frames 0..2 sit on bodies 0..2 with identity placement, 3 is welded to the world,
   4 and 5 are offset frames on bodies 1 and 2 */
static void build_chain(void)
{
    memset(chain_bodies, 0, sizeof chain_bodies);
    memset(chain_frames, 0, sizeof chain_frames);
    set_joint(&chain_bodies[0], GRID_JOINT_REVOLUTE, 0, 0, 1, -1, 0, 0);
    set_placement(&chain_bodies[0].joint.placement, 0.0, 0.0, 0.1, 0.0, 0.0, 0.0);
    set_inertia(&chain_bodies[0], 2.0, 0.01, 0.02, 0.15, 0.05, 0.04, 0.03, 0.001, 0.002, 0.003);
    set_joint(&chain_bodies[1], GRID_JOINT_REVOLUTE, 0, 0.6, 0.8, 0, 1, 1);
    set_placement(&chain_bodies[1].joint.placement, 0.05, 0.0, 0.3, 0.3, -0.2, 0.5);
    set_inertia(&chain_bodies[1], 1.5, 0.1, -0.02, 0.01, 0.02, 0.03, 0.025, -0.002, 0.001, 0.004);
    set_joint(&chain_bodies[2], GRID_JOINT_PRISMATIC, 1, 0, 0, 1, 2, 2);
    set_placement(&chain_bodies[2].joint.placement, 0.4, 0.01, 0.0, -0.1, 0.4, 0.2);
    set_inertia(&chain_bodies[2], 0.7, 0.05, 0.01, -0.03, 0.004, 0.006, 0.005, 0.0005, -0.0003, 0.0002);
    for (int i = 0; i < 3; i++) set_frame(&chain_frames[i], i, 0, 0, 0, 0, 0, 0);
    set_frame(&chain_frames[3], -1, 0.1, 0.2, 0.3, 0.1, 0.2, 0.3);
    set_frame(&chain_frames[4], 1, 0.2, -0.1, 0.05, 0.7, 0.1, -0.4);
    set_frame(&chain_frames[5], 2, 0.1, 0.05, -0.02, 0.2, 0.1, -0.3);
    chain = (grid_model){.robot_name = "chain", .nq = 3, .nv = 3, .nq_full = 3, .nv_full = 3, .nb = 3, .floating_base = 0,
                         .gravity = -9.81, .bodies = chain_bodies, .nframes = 6, .frames = chain_frames,
                         .nee = 1, .ee_frames = chain_ee};
}

/* free-flyer tree, parents first but not depth first (0; 1, 2 on 0; 3 on 1; 4 on 2; 5 on 3),
   so subtrees are not contiguous in v */
static grid_body tree_bodies[6];
static grid_frame tree_frames[10];
static int tree_ee[2] = {8, 9};
static grid_model tree;

/* frames 0..5 on bodies 0..5 with identity placement, 6 and 7 welded to the world,
   8 and 9 are offset feet on bodies 5 and 4 */
static void build_tree(void)
{
    memset(tree_bodies, 0, sizeof tree_bodies);
    memset(tree_frames, 0, sizeof tree_frames);
    set_joint(&tree_bodies[0], GRID_JOINT_FREE, 0, 0, 1, -1, 0, 0);
    set_placement(&tree_bodies[0].joint.placement, 0, 0, 0, 0, 0, 0);
    set_inertia(&tree_bodies[0], 8.0, 0.02, -0.01, 0.03, 0.3, 0.5, 0.4, 0.01, -0.02, 0.015);
    set_joint(&tree_bodies[1], GRID_JOINT_REVOLUTE, 1, 0, 0, 0, 7, 6);
    set_placement(&tree_bodies[1].joint.placement, 0.2, 0.15, -0.05, 0.1, 0.0, -0.2);
    set_inertia(&tree_bodies[1], 1.2, 0.0, 0.05, -0.1, 0.02, 0.015, 0.01, 0.001, 0.0, -0.002);
    set_joint(&tree_bodies[2], GRID_JOINT_REVOLUTE, 0.48, 0.6, 0.64, 0, 8, 7);
    set_placement(&tree_bodies[2].joint.placement, -0.2, 0.1, -0.05, -0.3, 0.2, 0.1);
    set_inertia(&tree_bodies[2], 1.0, 0.03, 0.0, -0.12, 0.018, 0.02, 0.008, 0.0, 0.001, 0.0);
    set_joint(&tree_bodies[3], GRID_JOINT_REVOLUTE, 0, 1, 0, 1, 9, 8);
    set_placement(&tree_bodies[3].joint.placement, 0.0, 0.02, -0.25, 0.0, 0.3, 0.0);
    set_inertia(&tree_bodies[3], 0.8, 0.01, 0.0, -0.15, 0.01, 0.012, 0.004, 0.0, 0.0005, 0.0);
    set_joint(&tree_bodies[4], GRID_JOINT_PRISMATIC, 0, 0, 1, 2, 10, 9);
    set_placement(&tree_bodies[4].joint.placement, 0.01, -0.03, -0.3, 0.2, -0.1, 0.3);
    set_inertia(&tree_bodies[4], 0.5, 0.0, 0.01, -0.05, 0.003, 0.004, 0.002, 0.0, 0.0, 0.0003);
    set_joint(&tree_bodies[5], GRID_JOINT_REVOLUTE, 0, 0, -1, 3, 11, 10);
    set_placement(&tree_bodies[5].joint.placement, 0.05, 0.0, -0.3, -0.2, 0.1, 0.6);
    set_inertia(&tree_bodies[5], 0.3, 0.02, 0.01, 0.0, 0.001, 0.002, 0.0015, 0.0001, 0.0, 0.0);
    for (int i = 0; i < 6; i++) set_frame(&tree_frames[i], i, 0, 0, 0, 0, 0, 0);
    set_frame(&tree_frames[6], -1, 0, 0, 0, 0, 0, 0);
    set_frame(&tree_frames[7], -1, 0.5, -0.2, 0.1, 0.3, -0.2, 1.0);
    set_frame(&tree_frames[8], 5, 0.1, 0.02, -0.05, 0.4, -0.3, 0.2);
    set_frame(&tree_frames[9], 4, -0.03, 0.04, -0.1, -0.5, 0.2, 2.5);
    tree = (grid_model){.robot_name = "tree", .nq = 12, .nv = 11, .nq_full = 12, .nv_full = 11, .nb = 6, .floating_base = 1,
                        .gravity = -9.81, .bodies = tree_bodies, .nframes = 10, .frames = tree_frames,
                        .nee = 2, .ee_frames = tree_ee};
}

/* fixed base with multi-dof joints: a revolute root; on it a planar joint (unaligned normal; not the root, so its
   translation matters), a spherical, a revolute; and a prismatic branch ending in another spherical */
static grid_body multi_bodies[6];
static grid_frame multi_frames[6];
static int multi_ee[2] = {3, 5};
static grid_model multi;

static void build_multi(void)
{
    memset(multi_bodies, 0, sizeof multi_bodies);
    memset(multi_frames, 0, sizeof multi_frames);
    set_joint(&multi_bodies[0], GRID_JOINT_REVOLUTE, 0.1, 0.2, 1, -1, 0, 0);
    set_placement(&multi_bodies[0].joint.placement, 0.0, 0.0, 0.1, 0.0, 0.0, 0.0);
    set_inertia(&multi_bodies[0], 2.0, 0.03, 0.01, 0.1, 0.04, 0.05, 0.03, 0.001, 0.0, 0.002);
    set_joint(&multi_bodies[1], GRID_JOINT_PLANAR, 0.3, -0.4, 0.866, 0, 1, 1);
    set_placement(&multi_bodies[1].joint.placement, 0.1, -0.05, 0.2, 0.2, 0.1, -0.3);
    set_inertia(&multi_bodies[1], 3.0, 0.05, -0.02, 0.04, 0.08, 0.06, 0.07, 0.004, -0.002, 0.001);
    set_joint(&multi_bodies[2], GRID_JOINT_SPHERICAL, 0, 0, 1, 1, 4, 4);
    set_placement(&multi_bodies[2].joint.placement, 0.15, 0.1, 0.25, -0.2, 0.3, 0.1);
    set_inertia(&multi_bodies[2], 1.1, 0.02, 0.08, -0.05, 0.02, 0.025, 0.015, 0.001, 0.0, -0.002);
    set_joint(&multi_bodies[3], GRID_JOINT_REVOLUTE, 0.2, 0.9, -0.1, 2, 8, 7);
    set_placement(&multi_bodies[3].joint.placement, 0.0, 0.3, -0.1, 0.4, 0.0, 0.2);
    set_inertia(&multi_bodies[3], 0.6, 0.1, 0.0, 0.02, 0.005, 0.008, 0.006, 0.0, 0.0004, 0.0);
    set_joint(&multi_bodies[4], GRID_JOINT_PRISMATIC, 0.5, 0.5, 0.7, 0, 9, 8);
    set_placement(&multi_bodies[4].joint.placement, -0.2, 0.05, 0.1, 0.0, -0.4, 0.6);
    set_inertia(&multi_bodies[4], 0.9, -0.03, 0.02, 0.1, 0.01, 0.012, 0.009, 0.0005, 0.0, 0.0);
    set_joint(&multi_bodies[5], GRID_JOINT_SPHERICAL, 0, 0, 1, 4, 10, 9);
    set_placement(&multi_bodies[5].joint.placement, 0.05, -0.1, 0.2, 0.3, 0.2, -0.1);
    set_inertia(&multi_bodies[5], 0.4, 0.0, -0.04, 0.06, 0.003, 0.002, 0.004, 0.0, 0.0002, 0.0001);
    for (int i = 0; i < 6; i++) set_frame(&multi_frames[i], i, 0, 0, 0, 0, 0, 0);
    multi = (grid_model){.robot_name = "multi", .nq = 14, .nv = 12, .nq_full = 14, .nv_full = 12, .nb = 6,
                         .floating_base = 0, .gravity = -9.81, .bodies = multi_bodies, .nframes = 6,
                         .frames = multi_frames, .nee = 2, .ee_frames = multi_ee};
}

/* free-flyer with two coupled mimic joints: 2 follows the revolute 1 (-0.7 q1 + 0.2), 4 (on 1) follows the
   prismatic 3 (on 2) across branches (1.3 q3 - 0.05); user q / v: 9 / 8, full: 11 / 10 */
static grid_body mimic_bodies[5];
static grid_frame mimic_frames[5];
static int mimic_ee[2] = {3, 4};
static grid_model mimic;

static void build_mimic(void)
{
    memset(mimic_bodies, 0, sizeof mimic_bodies);
    memset(mimic_frames, 0, sizeof mimic_frames);
    set_joint(&mimic_bodies[0], GRID_JOINT_FREE, 0, 0, 1, -1, 0, 0);
    set_placement(&mimic_bodies[0].joint.placement, 0, 0, 0, 0, 0, 0);
    set_inertia(&mimic_bodies[0], 5.0, 0.01, 0.02, -0.03, 0.2, 0.25, 0.3, 0.01, 0.0, -0.01);
    set_joint(&mimic_bodies[1], GRID_JOINT_REVOLUTE, 0, 1, 0, 0, 7, 6);
    set_placement(&mimic_bodies[1].joint.placement, 0.1, 0.1, 0.0, 0.1, 0.0, 0.2);
    set_inertia(&mimic_bodies[1], 0.5, 0.05, 0.0, 0.01, 0.004, 0.005, 0.003, 0.0, 0.0, 0.0002);
    set_joint(&mimic_bodies[2], GRID_JOINT_REVOLUTE, 0, -1, 0.2, 0, 8, 7);
    set_placement(&mimic_bodies[2].joint.placement, 0.1, -0.1, 0.0, -0.1, 0.1, -0.2);
    set_inertia(&mimic_bodies[2], 0.5, 0.05, 0.0, -0.01, 0.004, 0.005, 0.003, 0.0, 0.0001, 0.0);
    set_joint(&mimic_bodies[3], GRID_JOINT_PRISMATIC, 1, 0, 0, 2, 9, 8);
    set_placement(&mimic_bodies[3].joint.placement, 0.1, 0.0, 0.02, 0.0, 0.2, 0.0);
    set_inertia(&mimic_bodies[3], 0.2, 0.02, 0.01, 0.0, 0.001, 0.002, 0.001, 0.0, 0.0, 0.0);
    set_joint(&mimic_bodies[4], GRID_JOINT_PRISMATIC, 0, 0.6, 0.8, 1, 10, 9);
    set_placement(&mimic_bodies[4].joint.placement, 0.1, 0.0, -0.02, 0.3, 0.0, 0.1);
    set_inertia(&mimic_bodies[4], 0.3, 0.0, 0.01, 0.02, 0.001, 0.001, 0.002, 0.0, 0.0, 0.0001);
    /* user coordinates: the free-flyer, q1, q3 */
    mimic_bodies[3].joint.uq = 8;
    mimic_bodies[3].joint.uv = 7;
    set_mimic(mimic_bodies, 2, 1, -0.7, 0.2);
    set_mimic(mimic_bodies, 4, 3, 1.3, -0.05);
    for (int i = 0; i < 5; i++) set_frame(&mimic_frames[i], i, 0, 0, 0, 0, 0, 0);
    mimic = (grid_model){.robot_name = "mimic", .nq = 9, .nv = 8, .nq_full = 11, .nv_full = 10, .nb = 5,
                         .nmimic = 2, .floating_base = 1, .gravity = -9.81, .bodies = mimic_bodies, .nframes = 5,
                         .frames = mimic_frames, .nee = 2, .ee_frames = mimic_ee};
}

/* ---- helpers ---- */

static unsigned long long rng_state = 88172645463325252ULL;

/* uniform in [-1, 1) from xorshift64 */
static double urand(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) / 4503599627370496.0 - 1.0;
}

static void rand_vec(double *x, int n, double scale)
{
    for (int k = 0; k < n; k++) x[k] = scale * urand();
}

/* a random configuration in the full (full = 1) or the user's layout; quaternions are left unnormalised on purpose */
static void rand_config(const grid_model *m, int full, double *q)
{
    rand_vec(q, full ? m->nq_full : m->nq, 3.0);
    for (int i = 0; i < m->nb; i++) {
        const grid_joint *j = &m->bodies[i].joint;
        const int quat = grid_joint_model_of(j->type)->quat;
        if (quat < 0 || (!full && j->mimic)) continue;
        double *x = q + (full ? j->iq : j->uq) + quat, n2 = 0.0;
        for (int k = 0; k < 4; k++) n2 += x[k] * x[k];
        if (n2 < 0.1) x[3] += 1.0;
    }
}

static void rand_q(const grid_model *m, double *q) { rand_config(m, 0, q); }

static double max_abs_diff(const double *a, const double *b, int n)
{
    double e = 0.0;
    for (int k = 0; k < n; k++) {
        const double d = fabs(a[k] - b[k]);
        if (d != d) return INFINITY;
        if (d > e) e = d;
    }
    return e;
}

static double max_abs(const double *a, int n)
{
    double e = 0.0;
    for (int k = 0; k < n; k++) e = fabs(a[k]) > e ? fabs(a[k]) : e;
    return e;
}

/* relative agreement: max |a - b| <= tol * max(1, max |b|) */
static int close_rel(const double *a, const double *b, int n, double tol)
{
    const double s = max_abs(b, n);
    return max_abs_diff(a, b, n) <= tol * (s > 1.0 ? s : 1.0);
}

static double *new_work(const grid_model *m)
{
    const size_t n = grid_ref_work_size(m);
    double *w = malloc(n * sizeof(double));
    /* poison, so a read of unwritten scratch shows up as NaN */
    for (size_t k = 0; k < n; k++) w[k] = NAN;
    return w;
}

#define NMAX 16

/* ---- tests ---- */

/* M is symmetric positive definite and M * Minv = I */
static void check_mass_matrix(const grid_model *m)
{
    const int nv = m->nv;
    double *w = new_work(m), q[NMAX], M[NMAX * NMAX], Mi[NMAX * NMAX], L[NMAX * NMAX];
    for (int trial = 0; trial < 20; trial++) {
        rand_q(m, q);
        grid_ref_crba(m, q, M, w);
        grid_ref_minv(m, q, Mi, w);
        /* symmetric */
        for (int r = 0; r < nv; r++)
            for (int c = 0; c < nv; c++) {
                CHECK(M[r * nv + c] == M[c * nv + r]);
                CHECK(Mi[r * nv + c] == Mi[c * nv + r]);
            }
        /* positive definite: Cholesky succeeds */
        int pd = 1;
        memcpy(L, M, sizeof(double) * nv * nv);
        for (int j = 0; j < nv && pd; j++) {
            double d = L[j * nv + j];
            for (int k = 0; k < j; k++) d -= L[j * nv + k] * L[j * nv + k];
            if (!(d > 0.0)) { pd = 0; break; }
            L[j * nv + j] = sqrt(d);
            for (int i = j + 1; i < nv; i++) {
                double s = L[i * nv + j];
                for (int k = 0; k < j; k++) s -= L[i * nv + k] * L[j * nv + k];
                L[i * nv + j] = s / L[j * nv + j];
            }
        }
        CHECK(pd);
        /* M Minv = I */
        double e = 0.0;
        for (int r = 0; r < nv; r++)
            for (int c = 0; c < nv; c++) {
                double s = 0.0;
                for (int k = 0; k < nv; k++) s += M[r * nv + k] * Mi[k * nv + c];
                e = fmax(e, fabs(s - (r == c)));
            }
        CHECK_MSG(e < 1e-11, "|M Minv - I| = %g", e);
    }
    free(w);
}

static void test_mass_matrix_chain(void) { check_mass_matrix(&chain); }
static void test_mass_matrix_tree(void) { check_mass_matrix(&tree); }

/* ABA(q, v, RNEA(q, v, qdd, fext), fext) = qdd, FD == ABA, and M qdd = RNEA(qdd) - RNEA(0) */
static void check_dynamics(const grid_model *m)
{
    const int nv = m->nv, nf = 6 * m->nb;
    double *w = new_work(m), q[NMAX], v[NMAX], qdd[NMAX], tau[NMAX], back[NMAX], fd[NMAX];
    double fext[6 * NMAX], M[NMAX * NMAX], bias[NMAX], Ma[NMAX];
    for (int trial = 0; trial < 20; trial++) {
        rand_q(m, q);
        rand_vec(v, nv, 2.0);
        rand_vec(qdd, nv, 5.0);
        rand_vec(fext, nf, 3.0);
        for (int with_f = 0; with_f < 2; with_f++) {
            const double *f = with_f ? fext : NULL;
            grid_ref_rnea(m, q, v, qdd, f, tau, w);
            grid_ref_aba(m, q, v, tau, f, back, w);
            CHECK_MSG(close_rel(back, qdd, nv, 1e-11), "aba(rnea(qdd)) off by %g", max_abs_diff(back, qdd, nv));
            grid_ref_forward_dynamics(m, q, v, tau, f, fd, w);
            CHECK_MSG(close_rel(fd, back, nv, 1e-11), "fd vs aba off by %g", max_abs_diff(fd, back, nv));
        }
        /* CRBA agrees with RNEA: M qdd = rnea(q, v, qdd) - rnea(q, v, 0) */
        grid_ref_crba(m, q, M, w);
        grid_ref_rnea(m, q, v, qdd, NULL, tau, w);
        grid_ref_rnea(m, q, v, NULL, NULL, bias, w);
        for (int r = 0; r < nv; r++) {
            double s = 0.0;
            for (int k = 0; k < nv; k++) s += M[r * nv + k] * qdd[k];
            Ma[r] = s;
            tau[r] -= bias[r];
        }
        CHECK_MSG(close_rel(Ma, tau, nv, 1e-12), "M qdd off by %g", max_abs_diff(Ma, tau, nv));
    }
    free(w);
}

static void test_dynamics_chain(void) { check_dynamics(&chain); }
static void test_dynamics_tree(void) { check_dynamics(&tree); }

/* gravity == rnea(q, 0, 0), nle == rnea(q, v, 0); a NULL equals a zero */
static void check_bias_terms(const grid_model *m)
{
    const int nv = m->nv;
    double *w = new_work(m), q[NMAX], v[NMAX], zero[NMAX] = {0}, a[NMAX], b[NMAX];
    for (int trial = 0; trial < 10; trial++) {
        rand_q(m, q);
        rand_vec(v, nv, 2.0);
        grid_ref_gravity(m, q, a, w);
        grid_ref_rnea(m, q, zero, zero, NULL, b, w);
        CHECK(max_abs_diff(a, b, nv) == 0.0);
        grid_ref_nonlinear_effects(m, q, v, a, w);
        grid_ref_rnea(m, q, v, NULL, NULL, b, w);
        CHECK(max_abs_diff(a, b, nv) == 0.0);
        grid_ref_rnea(m, q, v, zero, NULL, a, w);
        CHECK(max_abs_diff(a, b, nv) == 0.0);
    }
    free(w);
}

static void test_bias_terms_chain(void) { check_bias_terms(&chain); }
static void test_bias_terms_tree(void) { check_bias_terms(&tree); }

/* a force on one body: rnea(fext) = rnea - J_local^T f, J of the frame at the body origin */
static void check_fext(const grid_model *m)
{
    const int nv = m->nv, nf = 6 * m->nb;
    double *w = new_work(m), q[NMAX], v[NMAX], a[NMAX], t0[NMAX], t1[NMAX], J[6 * NMAX];
    double fext[6 * NMAX];
    for (int body = 0; body < m->nb; body++) {
        rand_q(m, q);
        rand_vec(v, nv, 2.0);
        rand_vec(a, nv, 2.0);
        memset(fext, 0, sizeof(double) * nf);
        rand_vec(fext + 6 * body, 6, 4.0);
        grid_ref_rnea(m, q, v, a, NULL, t0, w);
        grid_ref_rnea(m, q, v, a, fext, t1, w);
        /* frames 0..nb-1 are the body origins in both models */
        grid_ref_frame_jacobian(m, q, body, GRID_LOCAL, J, w);
        for (int c = 0; c < nv; c++) {
            double s = 0.0;
            for (int r = 0; r < 6; r++) s += J[r * nv + c] * fext[6 * body + r];
            t0[c] -= s;
        }
        CHECK_MSG(close_rel(t1, t0, nv, 1e-12), "body %d: off by %g", body, max_abs_diff(t1, t0, nv));
    }
    free(w);
}

static void test_fext_chain(void) { check_fext(&chain); }
static void test_fext_tree(void) { check_fext(&tree); }

/* q moved by eps along tangent direction k (free-flyer: body-local twist) */
static void perturb(const grid_model *m, const double *q, int k, double eps, double *out)
{
    memcpy(out, q, sizeof(double) * m->nq);
    for (int i = 0; i < m->nb; i++) {
        const grid_joint *j = &m->bodies[i].joint;
        if (k < j->iv || k >= j->iv + j->nv) continue;
        if (j->type != GRID_JOINT_FREE) { out[j->iq + k - j->iv] += eps; return; }
        const int d = k - j->iv;
        const double *qu = q + j->iq + 3;
        const double n = sqrt(qu[0] * qu[0] + qu[1] * qu[1] + qu[2] * qu[2] + qu[3] * qu[3]);
        const double x = qu[0] / n, y = qu[1] / n, z = qu[2] / n, qw = qu[3] / n;
        if (d < 3) {
            /* translate along the body's own axis d: p += eps * R e_d */
            const double R[9] = {1 - 2 * (y * y + z * z), 2 * (x * y - z * qw), 2 * (x * z + y * qw),
                                 2 * (x * y + z * qw), 1 - 2 * (x * x + z * z), 2 * (y * z - x * qw),
                                 2 * (x * z - y * qw), 2 * (y * z + x * qw), 1 - 2 * (x * x + y * y)};
            for (int r = 0; r < 3; r++) out[j->iq + r] += eps * R[3 * r + d];
        } else {
            /* rotate about the body's own axis: quat * (sin(eps/2) e, cos(eps/2)) */
            double e[3] = {0, 0, 0};
            e[d - 3] = sin(eps / 2);
            const double ew = cos(eps / 2);
            out[j->iq + 3] = qw * e[0] + x * ew + y * e[2] - z * e[1];
            out[j->iq + 4] = qw * e[1] - x * e[2] + y * ew + z * e[0];
            out[j->iq + 5] = qw * e[2] + x * e[1] - y * e[0] + z * ew;
            out[j->iq + 6] = qw * ew - x * e[0] - y * e[1] - z * e[2];
        }
        return;
    }
}

/* Jacobians against central differences of the frame placement, and the three frames against each other */
static void check_jacobian(const grid_model *m)
{
    const int nv = m->nv;
    const double eps = 1e-6;
    double *w = new_work(m), q[NMAX], qp[NMAX], qm[NMAX], Hp[16], Hm[16], H[16];
    double Jw[6 * NMAX], Jl[6 * NMAX], Ja[6 * NMAX];
    for (int frame = 0; frame < m->nframes; frame++) {
        rand_q(m, q);
        grid_ref_frame_placement(m, q, frame, H, w);
        grid_ref_frame_jacobian(m, q, frame, GRID_WORLD, Jw, w);
        grid_ref_frame_jacobian(m, q, frame, GRID_LOCAL, Jl, w);
        grid_ref_frame_jacobian(m, q, frame, GRID_LOCAL_WORLD_ALIGNED, Ja, w);
        double e = 0.0, e_frames = 0.0;
        for (int k = 0; k < nv; k++) {
            perturb(m, q, k, eps, qp);
            perturb(m, q, k, -eps, qm);
            grid_ref_frame_placement(m, qp, frame, Hp, w);
            grid_ref_frame_placement(m, qm, frame, Hm, w);
            /* linear: dp/dq; angular: skew(dR/dq R^T) */
            double col[6], dR[9], Om[9];
            for (int r = 0; r < 3; r++) col[r] = (Hp[4 * r + 3] - Hm[4 * r + 3]) / (2 * eps);
            for (int r = 0; r < 3; r++)
                for (int c = 0; c < 3; c++) dR[3 * r + c] = (Hp[4 * r + c] - Hm[4 * r + c]) / (2 * eps);
            for (int r = 0; r < 3; r++)
                for (int c = 0; c < 3; c++) {
                    double s = 0.0;
                    for (int t = 0; t < 3; t++) s += dR[3 * r + t] * H[4 * c + t];
                    Om[3 * r + c] = s;
                }
            col[3] = Om[7]; col[4] = Om[2]; col[5] = Om[3];
            for (int r = 0; r < 6; r++) e = fmax(e, fabs(col[r] - Ja[r * nv + k]));
            /* WORLD linear = LWA linear - w x p_f, angular equal; LOCAL = R_f^T LWA */
            const double wa[3] = {Ja[3 * nv + k], Ja[4 * nv + k], Ja[5 * nv + k]};
            const double p[3] = {H[3], H[7], H[11]};
            const double wxp[3] = {wa[1] * p[2] - wa[2] * p[1], wa[2] * p[0] - wa[0] * p[2], wa[0] * p[1] - wa[1] * p[0]};
            for (int r = 0; r < 3; r++) {
                e_frames = fmax(e_frames, fabs(Jw[r * nv + k] - (Ja[r * nv + k] - wxp[r])));
                e_frames = fmax(e_frames, fabs(Jw[(r + 3) * nv + k] - Ja[(r + 3) * nv + k]));
                double lin = 0.0, ang = 0.0;
                for (int t = 0; t < 3; t++) {
                    lin += H[4 * t + r] * Ja[t * nv + k];
                    ang += H[4 * t + r] * Ja[(t + 3) * nv + k];
                }
                e_frames = fmax(e_frames, fabs(Jl[r * nv + k] - lin));
                e_frames = fmax(e_frames, fabs(Jl[(r + 3) * nv + k] - ang));
            }
        }
        CHECK_MSG(e < 1e-7, "frame %d: J vs finite differences off by %g", frame, e);
        CHECK_MSG(e_frames < 1e-13, "frame %d: WORLD/LOCAL/LWA disagree by %g", frame, e_frames);
        /* a frame welded to the world has a zero Jacobian */
        if (m->frames[frame].body < 0) CHECK(max_abs(Jw, 6 * nv) == 0.0 && max_abs(Jl, 6 * nv) == 0.0);
    }
    free(w);
}

static void test_jacobian_chain(void) { check_jacobian(&chain); }
static void test_jacobian_tree(void) { check_jacobian(&tree); }

/* ---- Pinocchio values for fixed states (pinocchio 4.1, the same models built with
   JointModelRevoluteUnaligned / PrismaticUnaligned / FreeFlyer; M from RNEA columns) ---- */

static const double chain_rnea[3] = {
    -0.056007502554964075, -0.91956321995583812, 0.13953108986077667};
static const double chain_rnea_fext[3] = {
    0.4355971318029121, -0.43818994590794436, -0.060468910139223397};
static const double chain_crba[9] = {
    0.35669030373259802, 0.29642494936961455, 0.077683967242758278, 0.29642494936961405,
    0.2847581463802582, 0.084844696822910182, 0.077683967242758056, 0.084844696822909627,
    0.69999999999999996};
static const double chain_aba[3] = {
    46.058946868623067, -49.111062935649407, 1.1891111601097422};
static const double chain_fk_last[16] = {
    0.89654671437211375, -0.44123641625477217, 0.038915471463328133, 0.55063037044164254,
    0.43250042572242992, 0.85304324484414018, -0.29199418517446046, 0.12186311064148507,
    0.095641887781894364, 0.27861738530900365, 0.95562805625676861, 0.56472309596871229,
    0, 0, 0, 1};
static const double chain_ee_pose[6] = {
    0.61744491163684878, 0.21360519915942427, 0.56910559288721652, 0.50002390143949227,
    0.08652354065705245, 0.19131414361076643};
static const double chain_jac_lwa[18] = {
    0.079444866324682242, 0.09379414658904317, 0, 0.24519427964317148,
    0.20753619255356637, 0, -0, 0.015211405129116728,
    0, 0, -0.37192357035772949, 0,
    0, 0.10044985739645695, 0, 1,
    0.92281237744266875, 0};
static const double tree_rnea[11] = {
    88.776033545803841, 37.384373373394808, 65.879492369012311, 5.2289405112188803,
    -4.8309189342848269, -4.11564280496723, 3.2123114923415876, -1.2275069232080043,
    -0.10583383819236114, 3.3055116159258309, 0.014698860196015106};
static const double tree_rnea_fext[11] = {
    89.031994797504581, 37.486620990738409, 66.08327069610344, 5.1539970953876377,
    -4.5549360009571949, -3.1307027019086817, 3.1978201906241561, -1.4445852609460976,
    0.87624553511193937, 3.2055116159258308, -0.18530113980398485};
static const double tree_crba[121] = {
    11.800000000000011, 0, 0, 0,
    -0.5556994259546002, -0.67469000507259125, 0.073492023351676039, -0.14976623551220314,
    -0.13088291767888904, -0.034459722022148753, 0.0030831482014264111, 0,
    11.799999999999997, 0, 0.55569942595460731, 0,
    0.25617115350573982, 0.36254753331402156, 0.12615298632869809, -0.07695409714379764,
    0.11598523050857779, 0.0055315237183179988, 0, 0,
    11.799999999999997, 0.67469000507257704, -0.25617115350573272, 0,
    0.35894626120897044, -0.094352983833900339, 0.14824894534207544, 0.48513910774336466,
    -0.0022127906637905426, 0, 0.55569942595460553, 0.67469000507258325,
    0.81283374497544258, -0.081537496791714403, -0.023486859434505902, 0.25884463722601314,
    0.039795329100749122, 0.037364840670035093, 0.011748284784285801, -0.00017707774919362151,
    -0.55569942595460553, -8.8817841970012523e-16, -0.25617115350573449, -0.081537496791714403,
    0.87510036231187804, 0.19061990440755583, -0.068547167608782544, 0.035298387014481847,
    0.044948723655700462, 0.10040894329982208, -0.00077198806862632807, -0.67469000507258414,
    0.25617115350573627, 8.8817841970012523e-16, -0.023486859434505902, 0.19061990440755583,
    0.80196158900447756, 0.0080715774243520499, -0.022285154934433393, 0.056322863654042266,
    -0.023170904234327772, -0.002176539938732347, 0.073492023351667157, 0.3625475333140229,
    0.358946261208966, 0.25884463722601359, -0.068547167608783877, 0.008071577424352494,
    0.18177612336754301, 0, 0.0050766474616765755, 0,
    9.135799784898424e-05, -0.14976623551219492, 0.12615298632869787, -0.094352983833903004,
    0.039795329100748233, 0.035298387014481625, -0.022285154934434281, 0,
    0.054539486454957986, 0, -0.020115924929821505, 0,
    -0.13088291767888471, -0.076954097143798639, 0.14824894534208227, 0.037364840670034316,
    0.044948723655699296, 0.056322863654040822, 0.0050766474616763535, 0,
    0.059320315843601756, 0, -0.001989507655181022, -0.034459722022138095,
    0.1159852305085769, 0.48513910774336599, 0.011748284784284913, 0.10040894329982208,
    -0.023170904234327772, 0, -0.020115924929820839, 0,
    0.5, 0, 0.0030831482014234551, 0.0055315237183146231,
    -0.0022127906637958855, -0.00017707774919327804, -0.00077198806862792402, -0.0021765399387336445,
    9.1357997848644235e-05, 0, -0.0019895076551809561, 0,
    0.0016500000000000022};
static const double tree_aba[11] = {
    -7.4179467724579924, -3.1794513749582696, -4.6603559787880444, -2.8351539716546901,
    1.5362059121860341, -1.3228925228375412, 16.524197813274419, -18.301322959654449,
    -15.343418670961478, 3.924768030624715, -131.08902525370149};
static const double tree_fk_last[16] = {
    -0.72817023107758694, -0.62900174962804378, 0.2722589090135964, 0.21852301948390196,
    0.48635705314566308, -0.75408358090665728, -0.44137826165598554, 0.38087032759357731,
    0.48293367187211211, -0.18898347010215671, 0.85502065273317596, 0.20347547809449784,
    0, 0, 0, 1};
static const double tree_ee_pose[12] = {
    0.11951301593290256, 0.43649327437280977, 0.20523814324300713, 0.012075953021297435,
    -0.73282912348776952, 2.8944756079995, 0.21958348282724283, -0.079873118119964226,
    -0.091747220171777888, -1.2507009662523025, 0.94514886795858233, 2.4549068342057621};
static const double tree_jac_lwa[66] = {
    0.64836074051091119, -0.34543386079222255, -0.67845692419071257, -0.48586794490948998,
    -0.26138096096240576, -0.33123380137548136, -0.28706995407783636, 0,
    -0.27220090262730756, 0, 0.048336770341252666, 0.01447926362602131,
    0.89657668838556215, -0.44265177370979414, 0.076293088972567077, -0.027325444086066526,
    -0.052851224842512007, 0.11878446038077632, 0, -0.2479296304134721,
    0, 0.085135499153579, 0.76119557348226285, 0.27717447512669358,
    0.58630675354224848, 0.41239471660073823, -0.23736124434041955, -0.42319579808592506,
    0.3206977133641995, 0, -0.048479482199507221, 0,
    0.028557020447657906, 0, 0, 0,
    0.64836074051091119, -0.34543386079222255, -0.67845692419071257, 0.70406380611668717,
    0, -0.55619048682468997, 0, -0.2722589090135964,
    0, 0, 0, 0.01447926362602131,
    0.89657668838556215, -0.44265177370979414, -0.16393164833639592, 0,
    0.4776605612205404, 0, 0.44137826165598554, 0,
    0, 0, 0.76119557348226285, 0.27717447512669358,
    0.58630675354224848, 0.69095627328377018, 0, 0.68006803381734759,
    0, -0.85502065273317596};

static const double chain_q[3] = {0.3, -0.7, 0.15}, chain_v[3] = {0.5, -1.2, 0.8};
static const double chain_a[3] = {1.0, 0.3, -0.6}, chain_u[3] = {2.0, -1.0, 0.5};
static const double tree_q[12] = {0.1, -0.2, 0.3, 0.2, -0.4, 0.1, 0.87, 0.5, -0.3, 0.8, 0.05, -1.1};
static const double tree_v[11] = {0.3, -0.1, 0.2, 0.5, -0.4, 0.7, 1.1, -0.6, 0.9, -0.2, 0.4};
static const double tree_a[11] = {0.2, 0.5, -0.3, 0.1, 0.6, -0.2, -1.0, 0.4, 0.3, 0.7, -0.5};
static const double tree_u[11] = {5.0, -3.0, 20.0, 1.0, -0.5, 0.3, 2.0, -1.5, 0.8, 3.0, -0.4};

/* the same body-local forces the generator used */
static void fixed_fext(int nb, double *f)
{
    for (int k = 0; k < 6 * nb; k++) f[k] = 0.1 * ((7 * k) % 11) - 0.5;
}

struct expected {
    const grid_model *m;
    const double *q, *v, *a, *u;
    const double *rnea, *rnea_fext, *crba, *aba, *fk_last, *ee, *jac_lwa;
    int jac_frame;
};

static void check_against_pinocchio(const struct expected *x)
{
    const grid_model *m = x->m;
    const int nv = m->nv;
    const double tol = 1e-12;
    double *w = new_work(m), out[NMAX * NMAX], fext[6 * NMAX], H[16 * NMAX];
    fixed_fext(m->nb, fext);
    grid_ref_rnea(m, x->q, x->v, x->a, NULL, out, w);
    CHECK_MSG(close_rel(out, x->rnea, nv, tol), "rnea off by %g", max_abs_diff(out, x->rnea, nv));
    grid_ref_rnea(m, x->q, x->v, x->a, fext, out, w);
    CHECK_MSG(close_rel(out, x->rnea_fext, nv, tol), "rnea fext off by %g", max_abs_diff(out, x->rnea_fext, nv));
    grid_ref_crba(m, x->q, out, w);
    CHECK_MSG(close_rel(out, x->crba, nv * nv, tol), "crba off by %g", max_abs_diff(out, x->crba, nv * nv));
    grid_ref_aba(m, x->q, x->v, x->u, fext, out, w);
    CHECK_MSG(close_rel(out, x->aba, nv, tol), "aba off by %g", max_abs_diff(out, x->aba, nv));
    grid_ref_forward_dynamics(m, x->q, x->v, x->u, fext, out, w);
    CHECK_MSG(close_rel(out, x->aba, nv, 1e-11), "fd off by %g", max_abs_diff(out, x->aba, nv));
    grid_ref_forward_kinematics(m, x->q, H, w);
    CHECK(close_rel(H + 16 * (m->nb - 1), x->fk_last, 16, tol));
    grid_ref_end_effector_pose(m, x->q, out, w);
    CHECK_MSG(close_rel(out, x->ee, 6 * m->nee, tol), "ee off by %g", max_abs_diff(out, x->ee, 6 * m->nee));
    grid_ref_frame_jacobian(m, x->q, x->jac_frame, GRID_LOCAL_WORLD_ALIGNED, out, w);
    CHECK(close_rel(out, x->jac_lwa, 6 * nv, tol));
    free(w);
}

static void test_pinocchio_values_chain(void)
{
    const struct expected x = {&chain, chain_q, chain_v, chain_a, chain_u, chain_rnea, chain_rnea_fext,
                               chain_crba, chain_aba, chain_fk_last, chain_ee_pose, chain_jac_lwa, 4};
    check_against_pinocchio(&x);
}

static void test_pinocchio_values_tree(void)
{
    const struct expected x = {&tree, tree_q, tree_v, tree_a, tree_u, tree_rnea, tree_rnea_fext,
                               tree_crba, tree_aba, tree_fk_last, tree_ee_pose, tree_jac_lwa, 8};
    check_against_pinocchio(&x);
}

/* a test must be able to fail: a 1% heavier body breaks the comparison above */
static void test_perturbed_model_is_detected(void)
{
    double *w = new_work(&chain), out[NMAX];
    const double mass = chain_bodies[1].inertia.mass;
    chain_bodies[1].inertia.mass = mass * 1.01;
    grid_ref_rnea(&chain, chain_q, chain_v, chain_a, NULL, out, w);
    chain_bodies[1].inertia.mass = mass;
    CHECK(!close_rel(out, chain_rnea, 3, 1e-6));
    free(w);
}

/* FK, frame placements and the EE pose agree; the quaternion is normalised internally */
static void check_kinematics(const grid_model *m)
{
    double *w = new_work(m), q[NMAX], q2[NMAX], H[16 * NMAX], H2[16 * NMAX], F[16], pose[6 * NMAX];
    for (int trial = 0; trial < 10; trial++) {
        rand_q(m, q);
        grid_ref_forward_kinematics(m, q, H, w);
        /* frames 0..nb-1 are the body origins */
        for (int i = 0; i < m->nb; i++) {
            grid_ref_frame_placement(m, q, i, F, w);
            CHECK(max_abs_diff(F, H + 16 * i, 16) == 0.0);
            /* homogeneous rows, orthonormal rotation */
            CHECK(F[12] == 0.0 && F[13] == 0.0 && F[14] == 0.0 && F[15] == 1.0);
            for (int r = 0; r < 3; r++)
                for (int c = 0; c < 3; c++) {
                    double s = 0.0;
                    for (int k = 0; k < 3; k++) s += F[4 * r + k] * F[4 * c + k];
                    CHECK_NEAR(s, r == c, 1e-14);
                }
        }
        /* world frames do not move */
        for (int f = 0; f < m->nframes; f++) {
            if (m->frames[f].body >= 0) continue;
            grid_ref_frame_placement(m, q, f, F, w);
            for (int r = 0; r < 3; r++) {
                CHECK(F[4 * r + 3] == m->frames[f].placement.p[r]);
                for (int c = 0; c < 3; c++) CHECK(F[4 * r + c] == m->frames[f].placement.R[3 * r + c]);
            }
        }
        /* EE pose: position and Rz(y) Ry(p) Rx(r) rebuild the frame placement */
        grid_ref_end_effector_pose(m, q, pose, w);
        for (int k = 0; k < m->nee; k++) {
            grid_ref_frame_placement(m, q, m->ee_frames[k], F, w);
            const double *e = pose + 6 * k;
            grid_transform t;
            set_placement(&t, e[0], e[1], e[2], e[3], e[4], e[5]);
            CHECK(e[4] >= -M_PI / 2 && e[4] <= M_PI / 2);
            for (int r = 0; r < 3; r++) {
                CHECK(e[r] == F[4 * r + 3]);
                for (int c = 0; c < 3; c++) CHECK_NEAR(t.R[3 * r + c], F[4 * r + c], 1e-13);
            }
        }
        /* scaling the quaternion changes nothing */
        if (m->floating_base) {
            memcpy(q2, q, sizeof(double) * m->nq);
            for (int k = 3; k < 7; k++) q2[k] *= 3.7;
            grid_ref_forward_kinematics(m, q2, H2, w);
            CHECK(max_abs_diff(H, H2, 16 * m->nb) < 1e-14);
        }
    }
    free(w);
}

static void test_kinematics_chain(void) { check_kinematics(&chain); }
static void test_kinematics_tree(void) { check_kinematics(&tree); }

/* rpy at the pitch singularity stays a valid decomposition */
static void test_rpy_singularity(void)
{
    static grid_body b[1];
    static grid_frame f[1];
    static int ee[1] = {0};
    memset(b, 0, sizeof b);
    memset(f, 0, sizeof f);
    set_joint(&b[0], GRID_JOINT_FREE, 0, 0, 1, -1, 0, 0);
    set_placement(&b[0].joint.placement, 0, 0, 0, 0, 0, 0);
    set_inertia(&b[0], 1.0, 0, 0, 0, 0.1, 0.1, 0.1, 0, 0, 0);
    set_frame(&f[0], 0, 0, 0, 0, 0, 0, 0);
    const grid_model m = {.robot_name = "one", .nq = 7, .nv = 6, .nq_full = 7, .nv_full = 6, .nb = 1, .floating_base = 1, .gravity = -9.81,
                          .bodies = b, .nframes = 1, .frames = f, .nee = 1, .ee_frames = ee};
    double *w = new_work(&m), pose[6], F[16];
    /* rotations of +-90 degrees about y, composed with others about z */
    const double s = sqrt(0.5);
    const double quats[][4] = {{0, s, 0, s}, {0, -s, 0, s}, {0.5, 0.5, -0.5, 0.5}, {-0.5, 0.5, 0.5, 0.5},
                               {0, 0, 1, 0}, {1, 0, 0, 0}, {0, 0, 0, 1}};
    for (size_t k = 0; k < sizeof quats / sizeof quats[0]; k++) {
        const double q[7] = {0.1, 0.2, 0.3, quats[k][0], quats[k][1], quats[k][2], quats[k][3]};
        grid_ref_end_effector_pose(&m, q, pose, w);
        grid_ref_frame_placement(&m, q, 0, F, w);
        grid_transform t;
        set_placement(&t, 0, 0, 0, pose[3], pose[4], pose[5]);
        for (int r = 0; r < 3; r++)
            for (int c = 0; c < 3; c++) CHECK_NEAR(t.R[3 * r + c], F[4 * r + c], 1e-12);
        CHECK(fabs(pose[3]) <= M_PI && fabs(pose[4]) <= M_PI / 2 && fabs(pose[5]) <= M_PI);
    }
    free(w);
}

/* ---- first-order derivatives against central differences ---- */

/* the rotation of the normalised quaternion (x, y, z, w), row-major */
static void quat_rotation(const double *qu, double R[9])
{
    const double n = sqrt(qu[0] * qu[0] + qu[1] * qu[1] + qu[2] * qu[2] + qu[3] * qu[3]);
    const double x = qu[0] / n, y = qu[1] / n, z = qu[2] / n, w = qu[3] / n;
    const double r[9] = {1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w),
                         2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w),
                         2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)};
    memcpy(R, r, sizeof r);
}

/* out = normalised(qu) * exp(w / 2): a turn by w about the body's own axes */
static void quat_turn(const double *qu, const double w[3], double *out)
{
    const double n = sqrt(qu[0] * qu[0] + qu[1] * qu[1] + qu[2] * qu[2] + qu[3] * qu[3]);
    const double x = qu[0] / n, y = qu[1] / n, z = qu[2] / n, qw = qu[3] / n;
    const double t = sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2]);
    const double sc = t > 0.0 ? sin(t / 2) / t : 0.5, ew = cos(t / 2);
    const double e[3] = {sc * w[0], sc * w[1], sc * w[2]};
    out[0] = qw * e[0] + x * ew + y * e[2] - z * e[1];
    out[1] = qw * e[1] - x * e[2] + y * ew + z * e[0];
    out[2] = qw * e[2] + x * e[1] - y * e[0] + z * ew;
    out[3] = qw * ew - x * e[0] - y * e[1] - z * e[2];
}

/* qout = q (+) dv along every joint's local tangent (pinocchio.integrate to first order), in the full (full = 1)
   or the user's layout (mimic joints follow their leaders there); offsets from the joint-model table */
static void integrate(const grid_model *m, int full, const double *q, const double *dv, double *qout)
{
    memcpy(qout, q, sizeof(double) * (size_t)(full ? m->nq_full : m->nq));
    for (int i = 0; i < m->nb; i++) {
        const grid_joint *j = &m->bodies[i].joint;
        if (!full && j->mimic) continue;
        const grid_joint_model *jm = grid_joint_model_of(j->type);
        const double *qj = q + (full ? j->iq : j->uq), *d = dv + (full ? j->iv : j->uv);
        double *oj = qout + (full ? j->iq : j->uq);
        switch (j->type) {
        case GRID_JOINT_REVOLUTE:
        case GRID_JOINT_PRISMATIC:
            oj[0] += d[0];
            break;
        case GRID_JOINT_FREE: {
            /* v = [v_lin, omega] in the body frame: p += R v_lin, quat = quat * exp(omega / 2) */
            double R[9];
            quat_rotation(qj + jm->quat, R);
            for (int r = 0; r < 3; r++) oj[jm->trans + r] += R[3 * r] * d[0] + R[3 * r + 1] * d[1] + R[3 * r + 2] * d[2];
            quat_turn(qj + jm->quat, d + 3, oj + jm->quat);
            break;
        }
        case GRID_JOINT_PLANAR: {
            /* v = [vx, vy, omega] in the body frame: [x, y] += R(theta) [vx, vy], theta += omega */
            const double c = cos(qj[jm->angle]), sn = sin(qj[jm->angle]);
            oj[jm->trans] += c * d[0] - sn * d[1];
            oj[jm->trans + 1] += sn * d[0] + c * d[1];
            oj[jm->angle] += d[2];
            break;
        }
        case GRID_JOINT_SPHERICAL:
            quat_turn(qj + jm->quat, d, oj + jm->quat);
            break;
        case GRID_JOINT_NTYPES:
            CHECK(0);
            break;
        }
    }
}

/* q (+) h e_k and q (+) -h e_k along the local tangent, in the full (full = 1) or the user's coordinates (dv: zeros,
   left so) */
static void tangent_steps(const grid_model *m, int full, const double *q, int k, double h, double *dv, double *qp,
                          double *qm)
{
    dv[k] = h;
    integrate(m, full, q, dv, qp);
    dv[k] = -h;
    integrate(m, full, q, dv, qm);
    dv[k] = 0.0;
}

/* one function of (q, v, x, fext) into nv outputs: RNEA (x = a), forward dynamics (x = u), single-state on the full
   coordinates or batched on the user's */
typedef struct {
    const grid_model *m;
    int batched;  /* 0: grid_ref_rnea / grid_ref_forward_dynamics on the full coordinates; 1: grid_ref_batch */
    int fd;       /* 0: RNEA, 1: forward dynamics */
    double *work;
} dyn_fn;

static void dyn_eval(const dyn_fn *f, const double *q, const double *v, const double *x, const double *fext, double *out)
{
    if (!f->batched) {
        if (f->fd) grid_ref_forward_dynamics(f->m, q, v, x, fext, out, f->work);
        else grid_ref_rnea(f->m, q, v, x, fext, out, f->work);
        return;
    }
    const int algo = f->fd ? GRID_ALGO_FD : GRID_ALGO_RNEA;
    test_call t;
    CHECK(grid_ref_batch(f->m, algo, GRID_FLOAT64, test_call_init(&t, algo, q, v, x, fext, out, 1, 0, 0)) == GRID_OK);
}

/* [d/dq | d/dqd] (nv x 2nv) of f by central differences; q steps along the local tangent */
static void numeric_gradient(const dyn_fn *f, const double *q, const double *v, const double *x, const double *fext,
                             double *G)
{
    const int full = !f->batched, nv = full ? f->m->nv_full : f->m->nv;
    const double h = 1e-6;
    double dv[NMAX] = {0}, qp[NMAX], qm[NMAX], vp[NMAX], vm[NMAX], yp[NMAX], ym[NMAX];
    for (int c = 0; c < nv; c++) {
        tangent_steps(f->m, full, q, c, h, dv, qp, qm);
        dyn_eval(f, qp, v, x, fext, yp);
        dyn_eval(f, qm, v, x, fext, ym);
        for (int r = 0; r < nv; r++) G[r * 2 * nv + c] = (yp[r] - ym[r]) / (2 * h);
        memcpy(vp, v, sizeof(double) * nv);
        memcpy(vm, v, sizeof(double) * nv);
        vp[c] += h;
        vm[c] -= h;
        dyn_eval(f, q, vp, x, fext, yp);
        dyn_eval(f, q, vm, x, fext, ym);
        for (int r = 0; r < nv; r++) G[r * 2 * nv + nv + c] = (yp[r] - ym[r]) / (2 * h);
    }
}

/* |analytic - numeric| / max(1, max |numeric|) */
static double rel_err(const double *an, const double *num, int n)
{
    const double s = max_abs(num, n);
    return max_abs_diff(an, num, n) / (s > 1.0 ? s : 1.0);
}

/* grid_ref_rnea_derivatives / grid_ref_fd_derivatives on the full coordinates against central differences of
   grid_ref_rnea / grid_ref_forward_dynamics: random states (|qd| <= 3), with and without qdd and fext */
static void check_derivatives(const grid_model *m)
{
    const int nv = m->nv_full, nf = 6 * m->nb, n = nv * 2 * nv;
    double *w = new_work(m), *w2 = new_work(m);
    double q[NMAX], v[NMAX], a[NMAX], fext[6 * NMAX], D[2 * NMAX * NMAX], N[2 * NMAX * NMAX];
    double worst_rnea = 0.0, worst_fd = 0.0;
    for (int trial = 0; trial < 6; trial++) {
        rand_config(m, 1, q);
        rand_vec(v, nv, 3.0);
        rand_vec(a, nv, 5.0);
        rand_vec(fext, nf, 3.0);
        for (int variant = 0; variant < 3; variant++) {
            /* 0: qdd and fext, 1: qdd, 2: neither (a NULL) */
            const double *f = variant == 0 ? fext : NULL, *acc = variant == 2 ? NULL : a;
            const dyn_fn rnea = {m, 0, 0, w2}, fd = {m, 0, 1, w2};
            grid_ref_rnea_derivatives(m, q, v, acc, f, D, w);
            numeric_gradient(&rnea, q, v, acc, f, N);
            double e = rel_err(D, N, n);
            worst_rnea = fmax(worst_rnea, e);
            CHECK_MSG(e < 1e-6, "%s rnea_grad trial %d variant %d: relative error %g", m->robot_name, trial, variant, e);
            /* forward dynamics with u = a (as the torque) */
            grid_ref_fd_derivatives(m, q, v, a, f, D, w);
            numeric_gradient(&fd, q, v, a, f, N);
            e = rel_err(D, N, n);
            worst_fd = fmax(worst_fd, e);
            CHECK_MSG(e < 1e-6, "%s fd_grad trial %d variant %d: relative error %g", m->robot_name, trial, variant, e);
        }
    }
    if (getenv("GRID_TEST_VERBOSE"))
        printf("  %s: worst relative error rnea_grad %.3g, fd_grad %.3g\n", m->robot_name, worst_rnea, worst_fd);
    free(w);
    free(w2);
}

/* grid_ref_rnea_second_derivatives (fd = 0) / grid_ref_fd_second_derivatives (fd = 1) against central differences
   of the first-order references (themselves checked above and against Pinocchio): d/dq_k of d/dq_j at q (+) h e_k,
   d/dqd_k of d/dqd_j and of d/dq_j, and d/dq_k of M (M^-1 for forward dynamics); random states (|qd| <= 3), with and
   without qdd (u) and fext */
static void check_second_derivatives(const grid_model *m, int fd)
{
    const int nv = m->nv_full, nf = 6 * m->nb;
    const size_t n3 = (size_t)nv * nv * nv;
    double *w = new_work(m), *w2 = new_work(m);
    double q[NMAX], v[NMAX], a[NMAX], fext[6 * NMAX], dv[NMAX] = {0}, qp[NMAX], qm[NMAX], vp[NMAX], vm[NMAX];
    double *T = malloc(4 * n3 * sizeof *T), *N = malloc(4 * n3 * sizeof *N);
    double Dp[2 * NMAX * NMAX], Dm[2 * NMAX * NMAX], Mp[NMAX * NMAX], Mm[NMAX * NMAX];
    const double h = 1e-5;
    double worst = 0.0;
    for (int trial = 0; trial < 4; trial++) {
        rand_config(m, 1, q);
        rand_vec(v, nv, 3.0);
        rand_vec(a, nv, 5.0);
        rand_vec(fext, nf, 3.0);
        for (int variant = 0; variant < 3; variant++) {
            const double *f = variant == 0 ? fext : NULL, *acc = variant == 2 ? NULL : a;
            if (fd && !acc) continue; /* (forward dynamics takes u) */
            if (fd) grid_ref_fd_second_derivatives(m, q, v, acc, f, T, w);
            else grid_ref_rnea_second_derivatives(m, q, v, acc, f, T, w);
            for (int k = 0; k < nv; k++) {
                /* along q_k: the first-order rows and M at q (+) -h e_k, q (+) h e_k */
                tangent_steps(m, 1, q, k, h, dv, qp, qm);
                (fd ? grid_ref_fd_derivatives : grid_ref_rnea_derivatives)(m, qp, v, acc, f, Dp, w2);
                (fd ? grid_ref_fd_derivatives : grid_ref_rnea_derivatives)(m, qm, v, acc, f, Dm, w2);
                (fd ? grid_ref_minv : grid_ref_crba)(m, qp, Mp, w2);
                (fd ? grid_ref_minv : grid_ref_crba)(m, qm, Mm, w2);
                for (int i = 0; i < nv; i++)
                    for (int j = 0; j < nv; j++) {
                        const size_t at = ((size_t)i * nv + j) * nv + k;
                        N[at] = (Dp[i * 2 * nv + j] - Dm[i * 2 * nv + j]) / (2 * h);
                        N[3 * n3 + at] = (Mp[i * nv + j] - Mm[i * nv + j]) / (2 * h);
                    }
                /* along qd_k */
                memcpy(vp, v, sizeof(double) * nv);
                memcpy(vm, v, sizeof(double) * nv);
                vp[k] += h;
                vm[k] -= h;
                (fd ? grid_ref_fd_derivatives : grid_ref_rnea_derivatives)(m, q, vp, acc, f, Dp, w2);
                (fd ? grid_ref_fd_derivatives : grid_ref_rnea_derivatives)(m, q, vm, acc, f, Dm, w2);
                for (int i = 0; i < nv; i++)
                    for (int j = 0; j < nv; j++) {
                        const size_t at = ((size_t)i * nv + j) * nv + k;
                        N[n3 + at] = (Dp[i * 2 * nv + nv + j] - Dm[i * 2 * nv + nv + j]) / (2 * h);
                        N[2 * n3 + at] = (Dp[i * 2 * nv + j] - Dm[i * 2 * nv + j]) / (2 * h);
                    }
            }
            static const char *const what[2][4] = {{"d2tau/dq dq", "d2tau/dqd dqd", "d2tau/dq dqd", "dM/dq"},
                                                   {"d2qdd/dq dq", "d2qdd/dqd dqd", "d2qdd/dq dqd", "dMinv/dq"}};
            for (int t = 0; t < 4; t++) {
                const double e = rel_err(T + t * n3, N + t * n3, (int)n3);
                worst = fmax(worst, e);
                CHECK_MSG(e < 1e-6, "%s %s trial %d variant %d: relative error %g", m->robot_name, what[fd][t], trial,
                          variant, e);
            }
        }
    }
    if (getenv("GRID_TEST_VERBOSE")) printf("  %s: worst relative error of the %s second derivatives %.3g\n",
                                            m->robot_name, fd ? "FD" : "RNEA", worst);
    free(T);
    free(N);
    free(w);
    free(w2);
}

/* grid_ref_ee_pose_second_derivatives against central differences of grid_ref_ee_pose_derivatives (d/dq_k at
   q (+) h e_k), on random states away from pitch +-pi/2 */
static void check_ee_pose_hessian(const grid_model *m)
{
    const int nv = m->nv_full, rows = 6 * m->nee;
    const size_t n = (size_t)rows * nv * nv;
    double *w = new_work(m), *w2 = new_work(m), *H = malloc(n * sizeof *H), *N = malloc(n * sizeof *N);
    double *Gp = malloc((size_t)rows * nv * sizeof *Gp), *Gm = malloc((size_t)rows * nv * sizeof *Gm);
    double q[NMAX], dv[NMAX] = {0}, qp[NMAX], qm[NMAX];
    const double h = 1e-5;
    double worst = 0.0;
    for (int trial = 0; trial < 6; trial++) {
        rand_config(m, 1, q);
        grid_ref_ee_pose_second_derivatives(m, q, H, w);
        for (int k = 0; k < nv; k++) {
            tangent_steps(m, 1, q, k, h, dv, qp, qm);
            grid_ref_ee_pose_derivatives(m, qp, Gp, w2);
            grid_ref_ee_pose_derivatives(m, qm, Gm, w2);
            for (int r = 0; r < rows; r++)
                for (int j = 0; j < nv; j++)
                    N[((size_t)r * nv + j) * nv + k] = (Gp[r * nv + j] - Gm[r * nv + j]) / (2 * h);
        }
        const double e = rel_err(H, N, (int)n);
        worst = fmax(worst, e);
        CHECK_MSG(e < 1e-6, "%s ee pose Hessian trial %d: relative error %g", m->robot_name, trial, e);
    }
    if (getenv("GRID_TEST_VERBOSE")) printf("  %s: worst relative error of the pose Hessian %.3g\n", m->robot_name, worst);
    free(H), free(N), free(Gp), free(Gm), free(w), free(w2);
}

static void test_second_derivatives_chain(void)
{
    check_second_derivatives(&chain, 0), check_second_derivatives(&chain, 1), check_ee_pose_hessian(&chain);
}
static void test_second_derivatives_tree(void)
{
    check_second_derivatives(&tree, 0), check_second_derivatives(&tree, 1), check_ee_pose_hessian(&tree);
}
static void test_second_derivatives_multi(void)
{
    check_second_derivatives(&multi, 0), check_second_derivatives(&multi, 1), check_ee_pose_hessian(&multi);
}
static void test_second_derivatives_floating(void)
{
    check_second_derivatives(&mimic, 0), check_second_derivatives(&mimic, 1), check_ee_pose_hessian(&mimic);
}

static void test_derivatives_chain(void) { check_derivatives(&chain); }
static void test_derivatives_tree(void) { check_derivatives(&tree); }
static void test_derivatives_multi(void) { check_derivatives(&multi); }
static void test_derivatives_mimic_full(void) { check_derivatives(&mimic); }

/* the coupled rows through grid_ref_batch on the user's coordinates: every output element written, and the
   gradient against central differences of the batched rnea / fd */
static void test_derivatives_mimic_coupled(void)
{
    const grid_model *m = &mimic;
    enum { B = 3 };
    const int nq = m->nq, nv = m->nv, nf = 6 * m->nb, n = nv * 2 * nv;
    double q[B * NMAX], v[B * NMAX], a[B * NMAX], fext[B * 6 * NMAX], N[2 * NMAX * NMAX];
    static double out[B * 2 * NMAX * NMAX + 1];
    double worst[2] = {0.0, 0.0};
    for (int b = 0; b < B; b++) {
        rand_config(m, 0, q + b * nq);
        rand_vec(v + b * nv, nv, 3.0);
        rand_vec(a + b * nv, nv, 5.0);
        rand_vec(fext + b * nf, nf, 3.0);
    }
    for (int fd = 0; fd < 2; fd++)
        for (int with_f = 0; with_f < 2; with_f++) {
            const int algo = fd ? GRID_ALGO_FD_GRAD : GRID_ALGO_RNEA_GRAD;
            const double *f = with_f ? fext : NULL;
            for (size_t k = 0; k < sizeof out / sizeof out[0]; k++) out[k] = NAN;
            test_call t;
            CHECK(grid_ref_batch(m, algo, GRID_FLOAT64, test_call_init(&t, algo, q, v, a, f, out, B, 0, 0)) == GRID_OK);
            long long written = 0;
            for (int k = 0; k < B * n; k++) written += !isnan(out[k]);
            CHECK_MSG(written == B * n && isnan(out[B * n]), "%d of %d written", (int)written, B * n);
            const dyn_fn fn = {m, 1, fd, NULL};
            for (int b = 0; b < B; b++) {
                numeric_gradient(&fn, q + b * nq, v + b * nv, a + b * nv, f ? f + b * nf : NULL, N);
                const double e = rel_err(out + b * n, N, n);
                worst[fd] = fmax(worst[fd], e);
                CHECK_MSG(e < 1e-6, "coupled %s state %d fext %d: relative error %g", fd ? "fd_grad" : "rnea_grad", b,
                          with_f, e);
            }
        }
    if (getenv("GRID_TEST_VERBOSE"))
        printf("  mimic (coupled, batched): worst relative error rnea_grad %.3g, fd_grad %.3g\n", worst[0], worst[1]);
}

/* grid_ref_batch: float64 equals the single-state calls, float32 is close, bad arguments are refused */
static void test_batch(void)
{
    const grid_model *m = &tree;
    enum { B = 5 };
    const int nq = m->nq, nv = m->nv, nf = 6 * m->nb;
    double q[B * NMAX], v[B * NMAX], a[B * NMAX], fext[B * 6 * NMAX], g[B * 6 * NMAX];
    float qf[B * NMAX], vf[B * NMAX], af[B * NMAX], ff[B * 6 * NMAX], gf[B * 6 * NMAX];
    /* (the widest: the second-order rows' four nv^3 tensors) */
    static double out[B * 4 * NMAX * NMAX * NMAX], one[4 * NMAX * NMAX * NMAX], jac[16 * NMAX * NMAX];
    static float outf[B * 4 * NMAX * NMAX * NMAX];
    double *w = new_work(m);
    for (int b = 0; b < B; b++) {
        rand_q(m, q + b * nq);
        rand_vec(v + b * nv, nv, 1.0);
        rand_vec(a + b * nv, nv, 1.0);
        rand_vec(fext + b * nf, nf, 1.0);
    }
    for (int k = 0; k < B * nq; k++) qf[k] = (float)q[k];
    for (int k = 0; k < B * nv; k++) { vf[k] = (float)v[k]; af[k] = (float)a[k]; }
    for (int k = 0; k < B * nf; k++) ff[k] = (float)fext[k];
    /* cotangents: B states of the widest VJP cotangent (nv or 6 nee) */
    const int gw = nv > 6 * m->nee ? nv : 6 * m->nee;
    rand_vec(g, B * gw, 1.0);
    for (int k = 0; k < B * gw; k++) gf[k] = (float)g[k];
    /* targets: a frame per state and a tool offset (float32-exact, so both dtypes see the same) */
    double tg[B * 4];
    float tgf[B * 4];
    for (int b = 0; b < B; b++) {
        const double t4[4] = {(double)((8 + 3 * b) % m->nframes), 0.125 * b, -0.25, 0.0625};
        for (int k = 0; k < 4; k++) tgf[4 * b + k] = (float)(tg[4 * b + k] = t4[k]);
    }

    for (int algo = 0; algo < GRID_ALGO_COUNT; algo++) {
        test_call t;
        test_cotangent = g;
        test_target = tg;
        const grid_sizes sz = grid_sizes_of(m->nq, m->nv, m->nb, m->nee, m->nframes);
        test_call_init(&t, algo, q, v, a, fext, out, B, 8, GRID_LOCAL);
        test_call_outputs(&t, algo, &sz, out, B, sizeof(double));
        CHECK(grid_ref_batch(m, algo, GRID_FLOAT64, &t.c) == GRID_OK);
        /* every output's elements per state (one after another in one) */
        const grid_signature_row *row = grid_sig_row(algo);
        int width = 0;
        for (int k = 0; k < row->n_out; k++) width += (int)grid_sig_shape(&row->out[k], &sz, NULL);
        for (int b = 0; b < B; b++) {
            const double *qb = q + b * nq, *vb = v + b * nv, *ab = a + b * nv, *fb = fext + b * nf;
            switch (algo) {
            case GRID_ALGO_RNEA: grid_ref_rnea(m, qb, vb, ab, fb, one, w); break;
            case GRID_ALGO_NLE: grid_ref_nonlinear_effects(m, qb, vb, one, w); break;
            case GRID_ALGO_GRAVITY: grid_ref_gravity(m, qb, one, w); break;
            case GRID_ALGO_CRBA: grid_ref_crba(m, qb, one, w); break;
            case GRID_ALGO_MINV: grid_ref_minv(m, qb, one, w); break;
            case GRID_ALGO_FD: grid_ref_forward_dynamics(m, qb, vb, ab, fb, one, w); break;
            case GRID_ALGO_ABA: grid_ref_aba(m, qb, vb, ab, fb, one, w); break;
            case GRID_ALGO_FK: grid_ref_forward_kinematics(m, qb, one, w); break;
            case GRID_ALGO_EE_POSE: grid_ref_end_effector_pose(m, qb, one, w); break;
            case GRID_ALGO_FRAME_JACOBIAN: grid_ref_frame_jacobian(m, qb, 8, GRID_LOCAL, one, w); break;
            case GRID_ALGO_RNEA_GRAD: grid_ref_rnea_derivatives(m, qb, vb, ab, fb, one, w); break;
            case GRID_ALGO_IDSVA_SO: grid_ref_rnea_second_derivatives(m, qb, vb, ab, fb, one, w); break;
            case GRID_ALGO_FDSVA_SO: grid_ref_fd_second_derivatives(m, qb, vb, ab, fb, one, w); break;
            case GRID_ALGO_FD_GRAD: grid_ref_fd_derivatives(m, qb, vb, ab, fb, one, w); break;
            case GRID_ALGO_EE_POSE_GRAD: grid_ref_ee_pose_derivatives(m, qb, one, w); break;
            case GRID_ALGO_OSC_INERTIA: { /* the batch's frame and reference frame, the float64 rule */
                const int at[GRID_REF_ATTRS] = {8, GRID_LOCAL, [GRID_REF_RULE] = GRID_FLOAT64};
                const double *in1[GRID_MAX_IN] = {qb};
                double *out1[GRID_MAX_OUT] = {one};
                ref_row_fn(algo)(m, in1, out1, at, w);
                break;
            }
            case GRID_ALGO_RNEA_VJP: case GRID_ALGO_FD_VJP: case GRID_ALGO_EE_POSE_VJP: {
                /* g^T of the gradient (and FD's u block g^T M^-1) */
                const int ee = algo == GRID_ALGO_EE_POSE_VJP, rows = ee ? 6 * m->nee : nv, cols = ee ? nv : 2 * nv;
                const double *gb = g + b * (ee ? 6 * m->nee : nv);
                if (algo == GRID_ALGO_RNEA_VJP) grid_ref_rnea_derivatives(m, qb, vb, ab, fb, jac, w);
                else if (algo == GRID_ALGO_FD_VJP) grid_ref_fd_derivatives(m, qb, vb, ab, fb, jac, w);
                else grid_ref_ee_pose_derivatives(m, qb, jac, w);
                for (int c = 0; c < cols; c++) {
                    double acc = 0;
                    for (int r = 0; r < rows; r++) acc += gb[r] * jac[r * cols + c];
                    one[c] = acc;
                }
                if (algo == GRID_ALGO_FD_VJP) {
                    grid_ref_minv(m, qb, jac, w);
                    for (int c = 0; c < nv; c++) {
                        double acc = 0;
                        for (int r = 0; r < nv; r++) acc += gb[r] * jac[r * nv + c];
                        one[2 * nv + c] = acc;
                    }
                }
                break;
            }
            case GRID_ALGO_Q_PULLBACK: { /* its row function on q and the tangent's cotangent g */
                const double *in1[GRID_MAX_IN] = {qb, g + b * nv};
                double *out1[GRID_MAX_OUT] = {one};
                const int at[GRID_REF_ATTRS] = {[GRID_REF_RULE] = GRID_FLOAT64};
                ref_row_fn(algo)(m, in1, out1, at, w);
                break;
            }
            case GRID_ALGO_EE_POSE_RUNTIME_VJP: { /* g^T of the target's pose gradient */
                const double *in1[GRID_MAX_IN] = {qb, tg + 4 * b};
                double *out1[GRID_MAX_OUT] = {jac};
                const int at[GRID_REF_ATTRS] = {[GRID_REF_RULE] = GRID_FLOAT64};
                ref_row_fn(GRID_ALGO_EE_POSE_RUNTIME_GRAD)(m, in1, out1, at, w);
                for (int c = 0; c < nv; c++) {
                    double acc = 0;
                    for (int r = 0; r < 6; r++) acc += g[6 * b + r] * jac[r * nv + c];
                    one[c] = acc;
                }
                break;
            }
            default:
                row_target = tg + 4 * b;
                row_state(m, algo, qb, vb, ab, fb, t.c.attr, one, w);
                break;
            }
            for (int k = 0, at = 0; k < row->n_out; k++) {
                const int wk = (int)grid_sig_shape(&row->out[k], &sz, NULL);
                CHECK_MSG(max_abs_diff(out + B * at + b * wk, one + at, wk) == 0.0, "algo %d output %d state %d", algo, k, b);
                at += wk;
            }
        }
        /* float32: widened inputs, narrowed outputs */
        test_cotangent = gf;
        test_target = tgf;
        test_call_init(&t, algo, qf, vf, af, ff, outf, B, 8, GRID_LOCAL);
        test_call_outputs(&t, algo, &sz, outf, B, sizeof(float));
        CHECK(grid_ref_batch(m, algo, GRID_FLOAT32, &t.c) == GRID_OK);
        test_cotangent = NULL;
        test_target = NULL;
        double scale = fmax(1.0, max_abs(out, B * width)), e = 0.0;
        for (int k = 0; k < B * width; k++) e = fmax(e, fabs((double)outf[k] - out[k]));
        CHECK_MSG(e < 1e-4 * scale, "algo %d float32 off by %g (scale %g)", algo, e, scale);
    }

    /* optional inputs: RNEA with a and fext NULL is nle */
    test_call t;
    grid_call *call = test_call_init(&t, GRID_ALGO_RNEA, q, v, NULL, NULL, out, B, 0, 0);
    CHECK(grid_ref_batch(m, GRID_ALGO_RNEA, GRID_FLOAT64, call) == GRID_OK);
    for (int b = 0; b < B; b++) {
        grid_ref_nonlinear_effects(m, q + b * nq, v + b * nv, one, w);
        CHECK(max_abs_diff(out + b * nv, one, nv) == 0.0);
    }

    /* refusals */
    test_call tb;
    grid_call *bad = test_call_init(&tb, GRID_ALGO_FRAME_JACOBIAN, q, v, a, NULL, out, B, m->nframes, 0);
    CHECK(grid_ref_batch(m, GRID_ALGO_FRAME_JACOBIAN, GRID_FLOAT64, bad) == GRID_ERR_ARG);
    bad->attr[0] = -1;
    CHECK(grid_ref_batch(m, GRID_ALGO_FRAME_JACOBIAN, GRID_FLOAT64, bad) == GRID_ERR_ARG);
    bad->attr[0] = 0;
    bad->attr[1] = 3;
    CHECK(grid_ref_batch(m, GRID_ALGO_FRAME_JACOBIAN, GRID_FLOAT64, bad) == GRID_ERR_ARG);
    bad->attr[1] = 0;
    CHECK(grid_ref_batch(m, GRID_ALGO_FRAME_JACOBIAN, GRID_FLOAT64, bad) == GRID_OK);
    bad->n_in = 2; /* counts must be the row's */
    CHECK(grid_ref_batch(m, GRID_ALGO_FRAME_JACOBIAN, GRID_FLOAT64, bad) == GRID_ERR_ARG);
    CHECK(grid_ref_batch(m, GRID_ALGO_COUNT, GRID_FLOAT64, call) == GRID_ERR_ARG);
    CHECK(grid_ref_batch(m, -1, GRID_FLOAT64, call) == GRID_ERR_ARG);
    CHECK(grid_ref_batch(m, GRID_ALGO_RNEA, 2, call) == GRID_ERR_ARG);
    CHECK(grid_ref_batch(m, GRID_ALGO_ABA, GRID_FLOAT64,
                         test_call_init(&tb, GRID_ALGO_ABA, q, v, NULL, NULL, out, B, 0, 0)) == GRID_ERR_ARG); /* u missing */
    CHECK(grid_ref_batch(NULL, GRID_ALGO_RNEA, GRID_FLOAT64, call) == GRID_ERR_ARG);
    CHECK(grid_ref_batch(m, GRID_ALGO_RNEA, GRID_FLOAT64, NULL) == GRID_ERR_ARG);
    grid_call empty = {.batch = 0};
    CHECK(grid_ref_batch(m, GRID_ALGO_RNEA, GRID_FLOAT64, &empty) == GRID_OK);
    free(w);
}

/* the signature table: every row's concrete output shape is exactly what its reference function writes
   (no element left unwritten, none past the end), inputs and attributes are within the GRID_MAX_* bounds,
   names are unique, and the helpers agree with each other */
/* each entry of signature_rows.h: its lower-case token is the row's ABI name (grid_<name>, ref_row_<name>) */
static void test_row_tokens_are_the_names(void)
{
    static const char *const tokens[GRID_ALGO_COUNT] = {
#define GRID_ROW(ID, id, ref, ...) [GRID_ALGO_##ID] = #id,
#include "grid/signature_rows.h"
#undef GRID_ROW
    };
    for (int a = 0; a < GRID_ALGO_COUNT; a++)
        CHECK_MSG(tokens[a] && !strcmp(tokens[a], grid_sig_row(a)->name), "row %d: token %s, name %s", a,
                  tokens[a] ? tokens[a] : "(none)", grid_sig_row(a)->name);
}

static void test_signature_table(void)
{
    const grid_model *m = &tree;
    const grid_sizes sz = grid_sizes_of(m->nq, m->nv, m->nb, m->nee, m->nframes);
    CHECK(grid_sig_count() == GRID_ALGO_COUNT && grid_sig_row(-1) == NULL && grid_sig_row(GRID_ALGO_COUNT) == NULL);
    enum { B = 3 };
    static double q[B * NMAX], v[B * NMAX], a[B * NMAX], fext[B * 6 * NMAX], out[B * 4 * NMAX * NMAX * NMAX + 1];
    for (int b = 0; b < B; b++) {
        rand_q(m, q + b * m->nq);
        rand_vec(v + b * m->nv, m->nv, 1.0);
        rand_vec(a + b * m->nv, m->nv, 1.0);
        rand_vec(fext + b * 6 * m->nb, 6 * m->nb, 1.0);
    }
    for (int id = 0; id < GRID_ALGO_COUNT; id++) {
        const grid_signature_row *r = grid_sig_row(id);
        CHECK(r && r->name && grid_sig_find(r->name) == id && strcmp(grid_algo_name(id), r->name) == 0);
        if (!r) continue;
        CHECK(r->n_in >= 1 && r->n_in <= GRID_MAX_IN && r->n_out >= 1 && r->n_out <= GRID_MAX_OUT &&
              r->n_attr <= GRID_MAX_ATTR);
        /* a row of several outputs states each one's quantity (their conversions need no aux row), or none (a
           derivative with no conversion yet: the second-order rows) */
        for (int k = 1; k < r->n_out && r->quantity != GRID_QTY_DERIVED; k++)
            CHECK(grid_sig_quantity_of(r->quantity, k) != GRID_QTY_DERIVED);
        CHECK(strcmp(r->in[0].name, "q") == 0 && r->in[0].optional == GRID_REQUIRED && r->py_name && r->doc);
        CHECK(r->gpu_map == GRID_GPU_THREAD);
        /* a VJP row takes its method's inputs and a required cotangent of the method's output */
        CHECK(r->vjp == -1 || (r->vjp > id && r->vjp < GRID_ALGO_COUNT));
        if (r->vjp > id && r->vjp < GRID_ALGO_COUNT) {
            const grid_signature_row *j = grid_sig_row(r->vjp);
            CHECK(j->n_in == r->n_in + 1);
            int has_ct = 0;
            for (int k = 0; k < j->n_in; k++)
                if (!strcmp(j->in[k].name, "cotangent")) {
                    has_ct = 1;
                    CHECK(j->in[k].optional == GRID_REQUIRED && j->in[k].rank == r->out[0].rank &&
                          grid_sig_dim(j->in[k].dim[0], &sz) == grid_sig_dim(r->out[0].dim[0], &sz));
                }
            CHECK_MSG(has_ct, "%s has no cotangent", j->name);
        }
        /* a derivative row is another row with the same inputs */
        CHECK(r->derivative == -1 || (r->derivative >= 0 && r->derivative < GRID_ALGO_COUNT && r->derivative != id));
        if (r->derivative >= 0 && r->derivative < GRID_ALGO_COUNT) {
            const grid_signature_row *d = grid_sig_row(r->derivative);
            CHECK(d->n_in == r->n_in);
            for (int k = 0; k < r->n_in && k < d->n_in; k++)
                CHECK(strcmp(d->in[k].name, r->in[k].name) == 0 && d->in[k].optional == r->in[k].optional);
        }
        for (int j = 0; j < id; j++) CHECK(strcmp(grid_sig_row(j)->name, r->name) != 0);
        grid_method_info info;
        grid_sig_concrete(id, &sz, 0, &info);
        char why[256];
        CHECK(grid_sig_mismatch(id, &sz, &info, why, sizeof why) == 0);
        CHECK(info.out[0].width == grid_algo_output_width(id, m->nq, m->nv, m->nb, m->nee));
        const long long w = test_width_total(id, &sz);
        CHECK(w > 0 && w <= 4 * NMAX * NMAX * NMAX);
        /* NaN everywhere; the reference must overwrite exactly B * w elements (its outputs one batch block after
           another) */
        for (size_t k = 0; k < sizeof out / sizeof out[0]; k++) out[k] = NAN;
        test_call t;
        test_cotangent = fext; /* (B states of 6 nb >= any cotangent's width) */
        double tg[4 * B];
        for (int b = 0; b < B; b++) tg[4 * b] = b % m->nframes, tg[4 * b + 1] = tg[4 * b + 2] = tg[4 * b + 3] = 0.1;
        test_target = tg;
        test_call_init(&t, id, q, v, a, fext, out, B, 8, GRID_LOCAL);
        test_call_outputs(&t, id, &sz, out, B, sizeof(double));
        CHECK(grid_ref_batch(m, id, GRID_FLOAT64, &t.c) == GRID_OK);
        test_cotangent = NULL;
        test_target = NULL;
        long long written = 0;
        for (long long k = 0; k < B * w; k++) written += !isnan(out[k]);
        CHECK_MSG(written == B * w && isnan(out[B * w]), "%s: %lld of %lld outputs written, past the end %g", r->name,
                  written, B * w, out[B * w]);
        /* a library row that differs is named */
        grid_method_info bad = info;
        bad.out[0].shape[0]++;
        CHECK(grid_sig_mismatch(id, &sz, &bad, why, sizeof why) == 1 && strstr(why, "output 0"));
        bad = info;
        bad.n_in++;
        CHECK(grid_sig_mismatch(id, &sz, &bad, why, sizeof why) == 1 && strstr(why, "inputs"));
    }
    /* shapes in symbols */
    char buf[32];
    CHECK(strcmp(grid_sig_dim_text((grid_dim){GRID_SYM_NB, 6}, buf, sizeof buf), "6*nb") == 0);
    CHECK(strcmp(grid_sig_dim_text((grid_dim){GRID_SYM_NV, 1}, buf, sizeof buf), "nv") == 0);
    CHECK(strcmp(grid_sig_dim_text((grid_dim){GRID_SYM_ONE, 4}, buf, sizeof buf), "4") == 0);
    int shape[GRID_MAX_RANK];
    CHECK(grid_sig_shape(&grid_sig_row(GRID_ALGO_FK)->out[0], &sz, shape) == 16LL * m->nb && shape[0] == m->nb &&
          shape[1] == 4 && shape[2] == 4 && shape[3] == 0);
    CHECK(grid_sig_shape(&grid_sig_row(GRID_ALGO_FRAME_JACOBIAN)->out[0], &sz, shape) == 6LL * m->nv && shape[0] == 6 &&
          shape[1] == m->nv);
    CHECK(grid_sig_find("nope") == -1 && grid_sig_find(NULL) == -1);
}

int main(void)
{
    build_chain();
    build_tree();
    build_multi();
    build_mimic();
    RUN_TEST(test_mass_matrix_chain);
    RUN_TEST(test_mass_matrix_tree);
    RUN_TEST(test_dynamics_chain);
    RUN_TEST(test_dynamics_tree);
    RUN_TEST(test_bias_terms_chain);
    RUN_TEST(test_bias_terms_tree);
    RUN_TEST(test_fext_chain);
    RUN_TEST(test_fext_tree);
    RUN_TEST(test_jacobian_chain);
    RUN_TEST(test_jacobian_tree);
    RUN_TEST(test_pinocchio_values_chain);
    RUN_TEST(test_pinocchio_values_tree);
    RUN_TEST(test_perturbed_model_is_detected);
    RUN_TEST(test_kinematics_chain);
    RUN_TEST(test_kinematics_tree);
    RUN_TEST(test_rpy_singularity);
    RUN_TEST(test_derivatives_chain);
    RUN_TEST(test_second_derivatives_chain);
    RUN_TEST(test_second_derivatives_tree);
    RUN_TEST(test_second_derivatives_multi);
    RUN_TEST(test_second_derivatives_floating);
    RUN_TEST(test_derivatives_tree);
    RUN_TEST(test_derivatives_multi);
    RUN_TEST(test_derivatives_mimic_full);
    RUN_TEST(test_derivatives_mimic_coupled);
    RUN_TEST(test_batch);
    RUN_TEST(test_signature_table);
    RUN_TEST(test_row_tokens_are_the_names);
    return check_summary("ref");
}
