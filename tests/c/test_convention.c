/* The MuJoCo output convention on the CPU: per-joint blocks from a model, the per-state passes (free flyer, ball joint, in place, float32), and whole calls through the reference checked against identities that hold in any basis. */
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include "check.h"
#include "calls.h"
#include "grid/convention.h"
#include "grid/context.h"
#include "grid/ref.h"
#include "grid/urdf.h"
#include "small_arm.h"


/* the reference as the provider the convention runs */
static int run_ref(void *user, int algo, const grid_call *c)
{
    return grid_ref_batch((const grid_model *)user, algo, GRID_FLOAT64, c);
}

/* threads a call may use (grid_call.num_threads) */
static int mj_threads = 1;

/* one call of row algo in the MuJoCo convention on the reference (float64) */
static int mj_call(const grid_model *m, const grid_convention *cv, grid_context *ctx, int algo, const double *q,
                   const double *v, const double *a, const double *f, double *out, long long batch, int frame, int rf)
{
    test_call t;
    grid_call *c = test_call_init(&t, algo, q, v, a, f, out, batch, frame, rf);
    c->num_threads = mj_threads;
    return grid_convention_call(cv, algo, GRID_FLOAT64, c, ctx, run_ref, (void *)m, 0);
}

/* a state in MuJoCo's coordinates: base position, a non-unit quaternion (w x y z), joints; v, a in [-s, s] */
static void random_state(const grid_model *m, unsigned *seed, double *q, double *v, double *a, double s)
{
    for (int i = 0; i < m->nq; i++) q[i] = 2.0 * rand_r(seed) / RAND_MAX - 1.0;
    if (m->floating_base) q[3] += 1.5; /* away from zero; not unit */
    for (int i = 0; i < m->nv; i++) v[i] = s * (2.0 * rand_r(seed) / RAND_MAX - 1.0);
    for (int i = 0; i < m->nv; i++) a[i] = s * (2.0 * rand_r(seed) / RAND_MAX - 1.0);
}

static void quat_R(const double *wxyz, double R[9])
{
    const double n = sqrt(wxyz[0] * wxyz[0] + wxyz[1] * wxyz[1] + wxyz[2] * wxyz[2] + wxyz[3] * wxyz[3]);
    const double w = wxyz[0] / n, x = wxyz[1] / n, y = wxyz[2] / n, z = wxyz[3] / n;
    const double r[9] = {1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
                         2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
                         2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)};
    memcpy(R, r, sizeof r);
}

static double max_abs_diff(const double *x, const double *y, long long n)
{
    double d = 0;
    for (long long i = 0; i < n; i++) d = fmax(d, fabs(x[i] - y[i]));
    return d;
}

static void test_blocks(void)
{
    grid_model *fixed = test_small_arm(0), *flo = test_small_arm(1);
    grid_convention cv;
    grid_error err;
    CHECK(grid_convention_init(&cv, flo, GRID_CONVENTION_PINOCCHIO, &err) == GRID_OK && grid_convention_identity(&cv));
    CHECK(grid_convention_init(&cv, fixed, GRID_CONVENTION_MUJOCO, &err) == GRID_OK && grid_convention_identity(&cv));
    CHECK(grid_convention_init(&cv, flo, GRID_CONVENTION_MUJOCO, &err) == GRID_OK && !grid_convention_identity(&cv));
    CHECK(cv.n_blocks == 1 && cv.n_free == 1 && cv.block[0].kind == GRID_CONV_FREE && cv.block[0].iq == 0 &&
          cv.block[0].iv == 0 && cv.nq == flo->nq && cv.nv == flo->nv && cv.nb == flo->nb && cv.nee == flo->nee &&
          cv.nframes == flo->nframes);
    CHECK(grid_convention_init(&cv, flo, 7, &err) == GRID_ERR_ARG && strstr(err.message, "convention"));
    /* NLE on a free flyer runs as RNEA with the zero acceleration of MuJoCo's basis */
    grid_convention_init(&cv, flo, GRID_CONVENTION_MUJOCO, &err);
    grid_conv_job j;
    const void *in2[2] = {&j, &j};
    CHECK(grid_convention_job(&cv, GRID_ALGO_NLE, in2, &j) == GRID_OK);
    CHECK(j.run_algo == GRID_ALGO_RNEA && j.n_in == 4 && j.slot_a == 2 && j.a_zero && j.src[2] == -1 && j.src[3] == -1);
    CHECK(grid_convention_job(&cv, GRID_ALGO_FRAME_JACOBIAN, in2, &j) == GRID_OK && j.out_kind == GRID_CONV_OUT_JAC &&
          j.out_rows == 6 && j.out_width == 6 * flo->nv);
    CHECK(grid_convention_job(&cv, GRID_ALGO_COUNT, in2, &j) == GRID_ERR_ARG);
    /* every row's output width is the row's own (fk: nb x 4 x 4, ee_pose: 6 nee) */
    for (int al = 0; al < GRID_ALGO_COUNT; al++) {
        const void *all[GRID_MAX_IN] = {&j, &j, &j, &j};
        /* a row that neither states a quantity nor is a linked derivative has no conversion: refused */
        int linked = 0;
        for (int p = 0; p < GRID_ALGO_COUNT; p++)
            linked |= grid_sig_row(p)->derivative == al || grid_sig_row(p)->vjp == al;
        if (grid_sig_row(al)->quantity == GRID_QTY_DERIVED && !linked) {
            CHECK_MSG(grid_convention_job(&cv, al, all, &j) == GRID_ERR_UNSUPPORTED, "%s", grid_algo_name(al));
            continue;
        }
        CHECK(grid_convention_job(&cv, al, all, &j) == GRID_OK);
        CHECK_MSG(j.out_width == grid_algo_output_width(al, flo->nq, flo->nv, flo->nb, flo->nee), "%s",
                  grid_algo_name(al));
        /* the dynamics' derivatives run their primal row and M or Minv beside them, a Jacobian's rate its Jacobian
           (its row's every output: ccrba's A and h); the pose's need nothing */
        const int q = grid_sig_row(al)->quantity;
        const int dyn = al == GRID_ALGO_RNEA_GRAD || al == GRID_ALGO_FD_GRAD || al == GRID_ALGO_RNEA_VJP ||
                        al == GRID_ALGO_FD_VJP || q == GRID_QTY_CORIOLIS || q == GRID_QTY_JACOBIAN_RATE;
        if (q == GRID_QTY_JACOBIAN_RATE)
            CHECK_MSG(j.n_aux == 1 && j.aux[0] == grid_sig_row(al)->rate_of &&
                          j.aux_n_out[0] == grid_sig_row(j.aux[0])->n_out && j.aux_width[0] == j.aux_part[0][0] &&
                          j.aux_total[0] >= j.aux_width[0],
                      "%s: its aux row", grid_algo_name(al));
        /* every aux attribute is the run row's of its name (a Jacobian's rate: the same frame), the rest 0 */
        for (int x = 0; x < j.n_aux; x++) {
            const grid_signature_row *rr = grid_sig_row(al), *ar = grid_sig_row(j.aux[x]);
            const int call[GRID_MAX_ATTR] = {3, 2, 5, 7};
            int got[GRID_MAX_ATTR];
            grid_conv_aux_attrs(&j, x, call, got);
            for (int s = 0; s < GRID_MAX_ATTR; s++) {
                int want = 0;
                for (int k = 0; s < ar->n_attr && k < rr->n_attr; k++)
                    if (strcmp(ar->attr[s].name, rr->attr[k].name) == 0) want = call[k];
                CHECK_MSG(got[s] == want, "%s: aux row %d attribute %d", grid_algo_name(al), x, s);
            }
        }
        CHECK_MSG(dyn ? j.n_aux >= 1 && j.aux_in[0][0] == 0 : j.n_aux == 0, "%s: %d aux rows", grid_algo_name(al),
                  j.n_aux);
        CHECK(j.slot_g == (al == GRID_ALGO_RNEA_VJP ? 2 : al == GRID_ALGO_FD_VJP ? 3 : -1));
    }
    /* without a free flyer a derivative needs no aux rows */
    grid_convention_init(&cv, fixed, GRID_CONVENTION_MUJOCO, &err);
    const void *all[GRID_MAX_IN] = {&j, &j, &j, &j};
    CHECK(grid_convention_job(&cv, GRID_ALGO_RNEA_GRAD, all, &j) == GRID_OK && j.n_aux == 0);
    grid_model_free(fixed);
    grid_model_free(flo);
}

/* the free flyer's pre pass against the formulas written out, in place and out of place, and float32 */
static void test_free_pass(void)
{
    grid_model *m = test_small_arm(1);
    grid_convention cv;
    grid_convention_init(&cv, m, GRID_CONVENTION_MUJOCO, NULL);
    const int nq = m->nq, nv = m->nv;
    double q[16], v[16], a[16], u[16], qp[16], vp[16], ap[16], up[16], R[9];
    unsigned seed = 3;
    random_state(m, &seed, q, v, a, 10);
    for (int i = 0; i < nv; i++) u[i] = 0.5 * a[i] - 1;
    grid_conv_job j;
    const void *in4[4] = {q, v, u, NULL};
    CHECK(grid_convention_job(&cv, GRID_ALGO_FD, in4, &j) == GRID_OK && j.slot_u == 2 && !j.a_zero);
    grid_conv_pre_d(&j, q, v, a, u, NULL, qp, vp, ap, up, NULL);
    quat_R(q + 3, R);
    CHECK(qp[3] == q[4] && qp[4] == q[5] && qp[5] == q[6] && qp[6] == q[3] && qp[0] == q[0] && qp[nq - 1] == q[nq - 1]);
    double vb[3], ab[3], ub[3];
    for (int r = 0; r < 3; r++) {
        vb[r] = R[r] * v[0] + R[3 + r] * v[1] + R[6 + r] * v[2];
        ub[r] = R[r] * u[0] + R[3 + r] * u[1] + R[6 + r] * u[2];
        ab[r] = R[r] * a[0] + R[3 + r] * a[1] + R[6 + r] * a[2];
    }
    const double *w = v + 3;
    ab[0] -= w[1] * vb[2] - w[2] * vb[1];
    ab[1] -= w[2] * vb[0] - w[0] * vb[2];
    ab[2] -= w[0] * vb[1] - w[1] * vb[0];
    for (int r = 0; r < 3; r++) {
        CHECK_NEAR(vp[r], vb[r], 1e-13);
        CHECK_NEAR(up[r], ub[r], 1e-13);
        CHECK_NEAR(ap[r], ab[r], 1e-12);
    }
    for (int i = 3; i < nv; i++) CHECK(vp[i] == v[i] && ap[i] == a[i] && up[i] == u[i]);
    /* in place gives the same bits */
    double q2[16], v2[16], a2[16], u2[16];
    memcpy(q2, q, sizeof q);
    memcpy(v2, v, sizeof v);
    memcpy(a2, a, sizeof a);
    memcpy(u2, u, sizeof u);
    grid_conv_pre_d(&j, q2, v2, a2, u2, NULL, q2, v2, a2, u2, NULL);
    CHECK(!memcmp(q2, qp, nq * sizeof(double)) && !memcmp(v2, vp, nv * sizeof(double)) &&
          !memcmp(a2, ap, nv * sizeof(double)) && !memcmp(u2, up, nv * sizeof(double)));
    /* a zero acceleration in MuJoCo's basis is -omega x v_body in Pinocchio's, in place over any contents */
    j.a_zero = 1;
    double az[16];
    grid_conv_pre_d(&j, q, v, NULL, NULL, NULL, qp, vp, az, NULL, NULL);
    CHECK_NEAR(az[0], -(w[1] * vb[2] - w[2] * vb[1]), 1e-12);
    CHECK(az[nv - 1] == 0);
    /* post of the QDD output undoes the acceleration's pre pass */
    j.out_kind = GRID_CONV_OUT_QDD;
    double back[16];
    memcpy(back, ap, sizeof back);
    grid_conv_post_d(&j, qp, vp, NULL, NULL, NULL, NULL, back);
    CHECK(max_abs_diff(back, a, nv) < 1e-12);
    /* float32 within its rounding of float64 */
    float qf[16], vf[16], af[16], qpf[16], vpf[16], apf[16];
    for (int i = 0; i < nq; i++) qf[i] = (float)q[i];
    for (int i = 0; i < nv; i++) vf[i] = (float)v[i], af[i] = (float)a[i];
    grid_conv_job jf = j;
    jf.a_zero = 0;
    grid_conv_pre_f(&jf, qf, vf, af, NULL, NULL, qpf, vpf, apf, NULL, NULL);
    for (int r = 0; r < 3; r++) CHECK_NEAR(vpf[r], vb[r], 1e-4 * 10);
    grid_model_free(m);
}

/* a ball joint (spherical: not in grid_model yet) by hand: the quaternion reorder alone, v untouched */
static void test_ball_block(void)
{
    grid_conv_job j;
    memset(&j, 0, sizeof j);
    j.cv.kind = GRID_CONVENTION_MUJOCO;
    j.cv.nq = 6;
    j.cv.nv = 5;
    j.cv.n_blocks = 1;
    j.cv.block[0] = (grid_conv_block){GRID_CONV_BALL, 1, 1};
    j.out_kind = GRID_CONV_OUT_MAT;
    j.out_rows = 5;
    const double q[6] = {0.3, 0.9, 0.1, 0.2, 0.3, -0.7}, v[5] = {1, 2, 3, 4, 5};
    double qp[6], vp[5], M[25], M0[25];
    grid_conv_pre_d(&j, q, v, NULL, NULL, NULL, qp, vp, NULL, NULL, NULL);
    CHECK(qp[0] == 0.3 && qp[1] == 0.1 && qp[2] == 0.2 && qp[3] == 0.3 && qp[4] == 0.9 && qp[5] == -0.7);
    CHECK(!memcmp(vp, v, sizeof v));
    for (int i = 0; i < 25; i++) M[i] = M0[i] = i * 0.5;
    grid_conv_post_d(&j, qp, vp, NULL, NULL, NULL, NULL, M);
    CHECK(!memcmp(M, M0, sizeof M)); /* a ball joint's velocity is the same in both: outputs unchanged */
}

/* whole calls through the reference: identities that hold in any basis, and T's action written out */
static void test_calls_identities(void)
{
    grid_model *m = test_small_arm(1);
    grid_convention cv;
    grid_convention_init(&cv, m, GRID_CONVENTION_MUJOCO, NULL);
    grid_context ctx;
    grid_ctx_init(&ctx, NULL);
    const int nv = m->nv;
    double q[16], v[16], a[16], zero[16] = {0}, tau[16], nle[16], g[16], g2[16], M[256], Mi[256], qdd[16], qdd2[16];
    double qpin[16], vpin[16], J[6 * 16], Jp[6 * 16], tau_pin[16];
    unsigned seed = 11;
    for (int trial = 0; trial < 8; trial++) {
        random_state(m, &seed, q, v, a, trial < 4 ? 1 : 10);
        CHECK(mj_call(m, &cv, &ctx, GRID_ALGO_RNEA, q, v, a, NULL, tau, 1, 0, 0) == GRID_OK);
        CHECK(mj_call(m, &cv, &ctx, GRID_ALGO_NLE, q, v, NULL, NULL, nle, 1, 0, 0) == GRID_OK);
        CHECK(mj_call(m, &cv, &ctx, GRID_ALGO_GRAVITY, q, NULL, NULL, NULL, g, 1, 0, 0) == GRID_OK);
        CHECK(mj_call(m, &cv, &ctx, GRID_ALGO_NLE, q, zero, NULL, NULL, g2, 1, 0, 0) == GRID_OK);
        CHECK(mj_call(m, &cv, &ctx, GRID_ALGO_CRBA, q, NULL, NULL, NULL, M, 1, 0, 0) == GRID_OK);
        CHECK(mj_call(m, &cv, &ctx, GRID_ALGO_MINV, q, NULL, NULL, NULL, Mi, 1, 0, 0) == GRID_OK);
        CHECK(mj_call(m, &cv, &ctx, GRID_ALGO_FD, q, v, tau, NULL, qdd, 1, 0, 0) == GRID_OK);
        CHECK(mj_call(m, &cv, &ctx, GRID_ALGO_ABA, q, v, tau, NULL, qdd2, 1, 0, 0) == GRID_OK);
        double scale = 0, e_split = 0, e_inv = 0, e_sym = 0;
        for (int i = 0; i < nv; i++) {
            /* rnea = M a + nle */
            double Ma = nle[i];
            for (int k = 0; k < nv; k++) Ma += M[i * nv + k] * a[k];
            scale = fmax(scale, fabs(tau[i]));
            e_split = fmax(e_split, fabs(Ma - tau[i]));
            for (int k = 0; k < nv; k++) {
                double p = 0;
                for (int l = 0; l < nv; l++) p += Mi[i * nv + l] * M[l * nv + k];
                e_inv = fmax(e_inv, fabs(p - (i == k)));
                e_sym = fmax(e_sym, fabs(M[i * nv + k] - M[k * nv + i]));
            }
        }
        CHECK_MSG(e_split <= 1e-11 * fmax(scale, 1), "rnea - (M a + nle): %.3e", e_split);
        CHECK_MSG(e_inv <= 1e-10, "Minv M - I: %.3e", e_inv);
        CHECK(e_sym == 0);
        CHECK_MSG(max_abs_diff(qdd, a, nv) <= 1e-9, "fd(rnea(a)) - a: %.3e", max_abs_diff(qdd, a, nv));
        CHECK_MSG(max_abs_diff(qdd2, a, nv) <= 1e-9, "aba(rnea(a)) - a: %.3e", max_abs_diff(qdd2, a, nv));
        CHECK(max_abs_diff(g, g2, nv) <= 1e-12);
        /* J_mj v_mj is the frame's velocity J_pin v_pin; the power tau . v is the same in both bases */
        double R[9];
        quat_R(q + 3, R);
        memcpy(qpin, q, sizeof qpin);
        qpin[3] = q[4], qpin[4] = q[5], qpin[5] = q[6], qpin[6] = q[3];
        memcpy(vpin, v, sizeof vpin);
        for (int r = 0; r < 3; r++) vpin[r] = R[r] * v[0] + R[3 + r] * v[1] + R[6 + r] * v[2];
        const int frame = m->nframes - 1;
        for (int rf = 0; rf < 3; rf++) {
            CHECK(mj_call(m, &cv, &ctx, GRID_ALGO_FRAME_JACOBIAN, q, NULL, NULL, NULL, J, 1, frame, rf) == GRID_OK);
            double work[4096];
            CHECK(grid_ref_work_size(m) <= 4096);
            grid_ref_frame_jacobian(m, qpin, frame, rf, Jp, work);
            for (int r = 0; r < 6; r++) {
                double x = 0, y = 0;
                for (int k = 0; k < nv; k++) x += J[r * nv + k] * v[k], y += Jp[r * nv + k] * vpin[k];
                CHECK_NEAR(x, y, 1e-11 * fmax(1, fabs(y)));
            }
        }
        /* rnea_mj = T^T rnea_pin(q, T v, T a + Tdot v), written out; the power tau . v agrees */
        double apin[16], work[4096];
        memcpy(apin, a, sizeof apin);
        for (int r = 0; r < 3; r++) apin[r] = R[r] * a[0] + R[3 + r] * a[1] + R[6 + r] * a[2];
        apin[0] -= v[4] * vpin[2] - v[5] * vpin[1];
        apin[1] -= v[5] * vpin[0] - v[3] * vpin[2];
        apin[2] -= v[3] * vpin[1] - v[4] * vpin[0];
        grid_ref_rnea(m, qpin, vpin, apin, NULL, tau_pin, work);
        double p_mj = 0, p_pin = 0;
        for (int i = 0; i < nv; i++) p_mj += tau[i] * v[i], p_pin += tau_pin[i] * vpin[i];
        CHECK_NEAR(p_mj, p_pin, 1e-11 * fmax(1, fabs(p_pin)));
        for (int r = 0; r < 3; r++)
            CHECK_NEAR(tau[r], R[3 * r] * tau_pin[0] + R[3 * r + 1] * tau_pin[1] + R[3 * r + 2] * tau_pin[2],
                       1e-11 * fmax(1, scale));
        for (int i = 3; i < nv; i++) CHECK_NEAR(tau[i], tau_pin[i], 1e-11 * fmax(1, scale));
    }
    grid_ctx_free(&ctx);
    grid_model_free(m);
}

/* q moved along MuJoCo's tangent d (mj_integratePos): p += d_lin (world), quaternion (w x y z) times exp(d_ang)
   in the body, joints += d */
static void mj_integrate(const grid_model *m, const double *q, const double *d, double *out)
{
    memcpy(out, q, sizeof(double) * (size_t)m->nq);
    for (int i = 0; i < 3; i++) out[i] += d[i];
    const double t = sqrt(d[3] * d[3] + d[4] * d[4] + d[5] * d[5]);
    const double c = cos(t / 2), s = t > 0 ? sin(t / 2) / t : 0.5;
    const double e[4] = {c, s * d[3], s * d[4], s * d[5]}, *a = q + 3;
    out[3] = a[0] * e[0] - a[1] * e[1] - a[2] * e[2] - a[3] * e[3];
    out[4] = a[0] * e[1] + a[1] * e[0] + a[2] * e[3] - a[3] * e[2];
    out[5] = a[0] * e[2] - a[1] * e[3] + a[2] * e[0] + a[3] * e[1];
    out[6] = a[0] * e[3] + a[1] * e[2] - a[2] * e[1] + a[3] * e[0];
    for (int i = 7; i < m->nq; i++) out[i] += d[i - 1];
}

/* The derivatives in MuJoCo's basis against central differences of the converted RNEA, FD and pose along MuJoCo's
   tangent (h = 1e-6), with and without an acceleration and f_ext, at speeds up to 10; the VJPs against g^T of the
   gradients. A wrong chain-rule term (any of them) is off by O(|v| |a|), far above the tolerance. */
static void test_derivatives(void)
{
    grid_model *m = test_small_arm(1);
    grid_convention cv;
    grid_convention_init(&cv, m, GRID_CONVENTION_MUJOCO, NULL);
    grid_context ctx;
    grid_ctx_init(&ctx, NULL);
    const int nq = m->nq, nv = m->nv, nb = m->nb, ne = 6 * m->nee;
    double q[16], v[16], a[16], f[6 * 16], d[16], qq[16], vv[16], yp[96], ym[96], G[16 * 32], F[16 * 32], P[96 * 16];
    double cot[96], vjp[48];
    CHECK(nv <= 16 && nq <= 16 && nb <= 16 && ne <= 96);
    const double h = 1e-6;
    unsigned seed = 5;
    double worst = 0, worst_vjp = 0;
    for (int trial = 0; trial < 6; trial++) {
        random_state(m, &seed, q, v, a, trial < 2 ? 1 : 10);
        for (int i = 0; i < 6 * nb; i++) f[i] = trial % 2 ? 2.0 * rand_r(&seed) / RAND_MAX - 1.0 : 0.0;
        const double *fx = trial % 2 ? f : NULL, *ax = trial == 4 ? NULL : a;
        CHECK(mj_call(m, &cv, &ctx, GRID_ALGO_RNEA_GRAD, q, v, ax, fx, G, 1, 0, 0) == GRID_OK);
        CHECK(mj_call(m, &cv, &ctx, GRID_ALGO_FD_GRAD, q, v, a, fx, F, 1, 0, 0) == GRID_OK);
        CHECK(mj_call(m, &cv, &ctx, GRID_ALGO_EE_POSE_GRAD, q, NULL, NULL, NULL, P, 1, 0, 0) == GRID_OK);
        /* column c of each: q along the tangent (c < nv), then v */
        for (int c = 0; c < 2 * nv; c++) {
            const int algos[3] = {GRID_ALGO_RNEA, GRID_ALGO_FD, GRID_ALGO_EE_POSE};
            const double *grads[3] = {G, F, P};
            for (int k = 0; k < (c < nv ? 3 : 2); k++) {
                const int rows = k == 2 ? ne : nv, w = k == 2 ? nv : 2 * nv;
                double *ys[2] = {yp, ym};
                for (int sgn = 0; sgn < 2; sgn++) {
                    memset(d, 0, sizeof d);
                    memcpy(qq, q, sizeof qq);
                    memcpy(vv, v, sizeof vv);
                    if (c < nv) {
                        d[c] = sgn ? -h : h;
                        mj_integrate(m, q, d, qq);
                    } else {
                        vv[c - nv] += sgn ? -h : h;
                    }
                    CHECK(mj_call(m, &cv, &ctx, algos[k], qq, vv, k == 0 ? ax : a, fx, ys[sgn], 1, 0, 0) == GRID_OK);
                }
                double scale = 1, err = 0;
                for (int r = 0; r < rows; r++) scale = fmax(scale, fabs(grads[k][r * w + c]));
                for (int r = 0; r < rows; r++)
                    err = fmax(err, fabs((yp[r] - ym[r]) / (2 * h) - grads[k][r * w + c]));
                worst = fmax(worst, err / scale);
                CHECK_MSG(err <= 1e-6 * scale, "trial %d %s column %d: %.3e (scale %.3e)", trial,
                          grid_algo_name(algos[k]), c, err, scale);
            }
        }
        /* the VJPs: g^T of the gradients (FD's u block: g^T Minv in MuJoCo's basis) */
        for (int i = 0; i < ne; i++) cot[i] = 2.0 * rand_r(&seed) / RAND_MAX - 1.0;
        test_cotangent = cot;
        double Mi[256];
        CHECK(mj_call(m, &cv, &ctx, GRID_ALGO_MINV, q, NULL, NULL, NULL, Mi, 1, 0, 0) == GRID_OK);
        const int vj[3] = {GRID_ALGO_RNEA_VJP, GRID_ALGO_FD_VJP, GRID_ALGO_EE_POSE_VJP};
        for (int k = 0; k < 3; k++) {
            CHECK(mj_call(m, &cv, &ctx, vj[k], q, v, k == 0 ? ax : a, fx, vjp, 1, 0, 0) == GRID_OK);
            const double *J = k == 0 ? G : k == 1 ? F : P;
            const int rows = k == 2 ? ne : nv, w = k == 2 ? nv : 2 * nv, cols = k == 1 ? 3 * nv : w;
            for (int c = 0; c < cols; c++) {
                double s = 0, sc = 0;
                for (int r = 0; r < rows; r++) {
                    const double e = c < w ? J[r * w + c] : Mi[r * nv + c - w];
                    s += cot[r] * e, sc += fabs(cot[r] * e);
                }
                const double e_vjp = fabs(vjp[c] - s) / fmax(1, sc);
                worst_vjp = fmax(worst_vjp, e_vjp);
                CHECK_MSG(e_vjp <= 1e-12, "trial %d %s entry %d: %.3e", trial, grid_algo_name(vj[k]), c, e_vjp);
            }
        }
        test_cotangent = NULL;
    }
    printf("  MuJoCo-basis derivatives: worst central-difference error %.2e, worst VJP error %.2e\n", worst,
           worst_vjp);
    grid_ctx_free(&ctx);
    grid_model_free(m);
}

/* results bitwise the same for one state and a batch over many chunks on one thread or several (slices of
   uneven length), and with an output over its input */
static void test_batches_bitwise(void)
{
    grid_model *m = test_small_arm(1);
    grid_convention cv;
    grid_convention_init(&cv, m, GRID_CONVENTION_MUJOCO, NULL);
    grid_context ctx;
    grid_ctx_init(&ctx, NULL);
    const int nq = m->nq, nv = m->nv;
    const long long B = 9001; /* many chunks of 256 KiB */
    double *q = malloc(sizeof(double) * (size_t)(B * nq)), *v = malloc(sizeof(double) * (size_t)(B * nv)),
           *a = malloc(sizeof(double) * (size_t)(B * nv)), *o = malloc(sizeof(double) * (size_t)(B * 16 * nv * nv)),
           *one = malloc(sizeof(double) * (size_t)(16 * nv * nv));
    unsigned seed = 5;
    for (long long b = 0; b < B; b++) random_state(m, &seed, q + b * nq, v + b * nv, a + b * nv, 10);
    const int algos[] = {GRID_ALGO_RNEA, GRID_ALGO_NLE, GRID_ALGO_CRBA, GRID_ALGO_FD, GRID_ALGO_FRAME_JACOBIAN,
                         GRID_ALGO_FK, GRID_ALGO_EE_POSE};
    for (size_t k = 0; k < sizeof algos / sizeof algos[0]; k++) {
        const int al = algos[k];
        const long long w = grid_algo_output_width(al, nq, nv, m->nb, m->nee);
        mj_threads = 3;
        CHECK(mj_call(m, &cv, &ctx, al, q, v, a, NULL, o, B, 2, 0) == GRID_OK);
        mj_threads = 1;
        int same = 1;
        for (long long b = 0; b < B; b += 997) {
            CHECK(mj_call(m, &cv, &ctx, al, q + b * nq, v + b * nv, a + b * nv, NULL, one, 1, 2, 0) == GRID_OK);
            same &= !memcmp(one, o + b * w, sizeof(double) * (size_t)w);
        }
        CHECK_MSG(same, "%s differs between B=1 and B=%lld", grid_algo_name(al), B);
    }
    /* fd with out = u (exactly an input): the same as into a fresh array */
    double *u = malloc(sizeof(double) * (size_t)(B * nv));
    memcpy(u, a, sizeof(double) * (size_t)(B * nv));
    CHECK(mj_call(m, &cv, &ctx, GRID_ALGO_FD, q, v, a, NULL, o, B, 0, 0) == GRID_OK);
    mj_threads = 2;
    CHECK(mj_call(m, &cv, &ctx, GRID_ALGO_FD, q, v, u, NULL, u, B, 0, 0) == GRID_OK);
    mj_threads = 1;
    CHECK(!memcmp(u, o, sizeof(double) * (size_t)(B * nv)));
    /* nothing stays allocated past a call */
    CHECK(grid_ctx_in_use(&ctx) == 0);
    free(u);
    free(q);
    free(v);
    free(a);
    free(o);
    free(one);
    grid_ctx_free(&ctx);
    grid_model_free(m);
}

/* a provider that fails (after doing its work) on any chunk of fewer than 1000 states */
static int run_fail(void *user, int algo, const grid_call *c)
{
    const int rc = run_ref(user, algo, c);
    return rc == GRID_OK && c->batch < 1000 ? GRID_ERR_NOMEM : rc;
}

/* argument errors are statuses, not crashes */
static void test_bad_calls(void)
{
    grid_model *m = test_small_arm(1);
    grid_convention cv;
    grid_convention_init(&cv, m, GRID_CONVENTION_MUJOCO, NULL);
    grid_context ctx;
    grid_ctx_init(&ctx, NULL);
    double q[16] = {0}, out[16];
    q[3] = 1;
    test_call t;
    grid_call *c = test_call_init(&t, GRID_ALGO_GRAVITY, q, NULL, NULL, NULL, out, 1, 0, 0);
    CHECK(grid_convention_call(&cv, GRID_ALGO_GRAVITY, 3, c, &ctx, run_ref, m, 0) == GRID_ERR_ARG);
    CHECK(grid_convention_call(&cv, -1, GRID_FLOAT64, c, &ctx, run_ref, m, 0) == GRID_ERR_ARG);
    CHECK(grid_convention_call(&cv, GRID_ALGO_RNEA, GRID_FLOAT64, c, &ctx, run_ref, m, 0) == GRID_ERR_ARG); /* n_in */
    c->batch = 0;
    CHECK(grid_convention_call(&cv, GRID_ALGO_GRAVITY, GRID_FLOAT64, c, &ctx, run_ref, m, 0) == GRID_OK);
    /* a failing run on any thread is the call's status */
    double *qs = calloc(2000 * 16, sizeof(double)), *os = malloc(2000 * 16 * sizeof(double));
    for (int b = 0; b < 2000; b++) qs[b * m->nq + 3] = 1;
    c = test_call_init(&t, GRID_ALGO_GRAVITY, qs, NULL, NULL, NULL, os, 2000, 0, 0);
    c->num_threads = 4;
    CHECK(grid_convention_call(&cv, GRID_ALGO_GRAVITY, GRID_FLOAT64, c, &ctx, run_fail, m, 0) == GRID_ERR_NOMEM);
    CHECK(grid_convention_call(&cv, GRID_ALGO_GRAVITY, GRID_FLOAT64, c, &ctx, run_ref, m, 0) == GRID_OK);
    CHECK(grid_ctx_in_use(&ctx) == 0);
    free(qs);
    free(os);
    grid_ctx_free(&ctx);
    grid_model_free(m);
}

int main(void)
{
    RUN_TEST(test_blocks);
    RUN_TEST(test_free_pass);
    RUN_TEST(test_ball_block);
    RUN_TEST(test_calls_identities);
    RUN_TEST(test_derivatives);
    RUN_TEST(test_batches_bitwise);
    RUN_TEST(test_bad_calls);
    return check_summary("test_convention");
}
