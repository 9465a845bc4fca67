/* Reference joint torque regressor: Y with tau = Y pi, from each body's spatial-force regressor carried up its chain. */
#include <assert.h>
#include <string.h>
#include "ref_rows.h"
#include "spatial.h"

/* f = A pi for one body (A 6 x 10, column-major: column p at 6 p), f = I a + v x* (I v) with I in Pinocchio's dynamic
   parameters (m, h = m c, Ixx Ixy Iyy Ixz Iyz Izz about the body origin): with a' = a_lin + w x v_lin,
   f_lin = m a' + alpha x h + w x (w x h) and n = h x a' + I alpha + w x (I w) */
static void body_regressor(const double v[6], const double a[6], double A[60])
{
    const double *vl = v, *w = v + 3, *al = a, *alpha = a + 3;
    const double ap[3] = {al[0] + w[1] * vl[2] - w[2] * vl[1], al[1] + w[2] * vl[0] - w[0] * vl[2],
                          al[2] + w[0] * vl[1] - w[1] * vl[0]};
    memset(A, 0, 60 * sizeof(double));
    for (int r = 0; r < 3; r++) A[r] = ap[r];
    for (int k = 0; k < 3; k++) {
        double e[3] = {0, 0, 0}, t[3], wxe[3];
        e[k] = 1.0;
        double *col = A + 6 * (1 + k);
        /* alpha x e + w x (w x e) */
        t[0] = alpha[1] * e[2] - alpha[2] * e[1];
        t[1] = alpha[2] * e[0] - alpha[0] * e[2];
        t[2] = alpha[0] * e[1] - alpha[1] * e[0];
        wxe[0] = w[1] * e[2] - w[2] * e[1];
        wxe[1] = w[2] * e[0] - w[0] * e[2];
        wxe[2] = w[0] * e[1] - w[1] * e[0];
        col[0] = t[0] + w[1] * wxe[2] - w[2] * wxe[1];
        col[1] = t[1] + w[2] * wxe[0] - w[0] * wxe[2];
        col[2] = t[2] + w[0] * wxe[1] - w[1] * wxe[0];
        /* e x a' */
        col[3] = e[1] * ap[2] - e[2] * ap[1];
        col[4] = e[2] * ap[0] - e[0] * ap[2];
        col[5] = e[0] * ap[1] - e[1] * ap[0];
    }
    /* the inertia's six entries: I x = L(x) (Ixx, Ixy, Iyy, Ixz, Iyz, Izz); n = L(alpha) + w x L(w) */
    static const int row_of[6][2][2] = {{{0, 0}, {-1, -1}}, {{0, 1}, {1, 0}}, {{1, 1}, {-1, -1}},
                                        {{0, 2}, {2, 0}}, {{1, 2}, {2, 1}}, {{2, 2}, {-1, -1}}};
    for (int p = 0; p < 6; p++) {
        double la[3] = {0, 0, 0}, lw[3] = {0, 0, 0};
        for (int s = 0; s < 2; s++) {
            const int r = row_of[p][s][0], c = row_of[p][s][1];
            if (r < 0) continue;
            la[r] += alpha[c];
            lw[r] += w[c];
        }
        double *col = A + 6 * (4 + p);
        col[3] = la[0] + w[1] * lw[2] - w[2] * lw[1];
        col[4] = la[1] + w[2] * lw[0] - w[0] * lw[2];
        col[5] = la[2] + w[0] * lw[1] - w[1] * lw[0];
    }
}

/* Y (nv x 10 nb, computeJointTorqueRegressor): body k's f_k = A_k pi_k, gravity as the world's upward acceleration;
   Y[iv_j .., 10 k ..] = S_j^T (jX_k^* A_k) for k and each of its ancestors j, zeros elsewhere */
void ref_row_inverse_dynamics_regressor(const grid_model *m, const double *const *in, double *const *out,
                                        const int *attr, double *work)
{
    (void)attr;
    const size_t nb = (size_t)m->nb;
    const size_t nv = (size_t)m->nv_full, cols = 10 * nb;
    const double *q = in[0], *v = in[1], *qdd = in[2];
    double *liMi = work, *oMi = liMi + 12 * nb, *vel = oMi + 12 * nb, *acc = vel + 6 * nb;
    assert((size_t)(acc + 6 * nb - work) <= grid_ref_work_size(m));
    double *Y = out[0];
    memset(Y, 0, sizeof(double) * nv * cols);
    grid_sp_accelerations(m, q, v, qdd, liMi, oMi, vel, acc);
    for (int k = 0; k < m->nb; k++) {
        double A[60];
        body_regressor(vel + 6 * k, acc + 6 * k, A);
        for (int b = k; b >= 0; b = m->bodies[b].joint.parent) {
            const grid_joint *j = &m->bodies[b].joint;
            double S[36];
            grid_sp_joint_subspace(j, S);
            for (int c = 0; c < j->nv; c++)
                for (int p = 0; p < 10; p++) {
                    double s = 0.0;
                    for (int r = 0; r < 6; r++) s += S[j->nv * r + c] * A[6 * p + r];
                    Y[(size_t)(j->iv + c) * cols + 10 * (size_t)k + (size_t)p] = s;
                }
            if (j->parent >= 0)
                for (int p = 0; p < 10; p++) {
                    double f[6];
                    grid_sp_force_act(liMi + 12 * b, A + 6 * p, f);
                    memcpy(A + 6 * p, f, sizeof f);
                }
        }
    }
}
