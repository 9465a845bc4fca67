/* Reference Coriolis matrix: C = sum over bodies k of J_k^T (Y_k dJ_k + B_k J_k), world frame, as computeCoriolisMatrix. */
#include <assert.h>
#include <string.h>
#include "ref_rows.h"
#include "spatial.h"

/* B m = 1/2 (v x* (Y m) - Y (v x m)) + 1/2 m x* (Y v), column by column: B v = v x* Y v, B + B^T = dY/dt */
static void coriolis_inertia(const double Y[36], const double v[6], double B[36])
{
    double h[6], dY[36];
    grid_sp_mat6_vec(Y, v, h);
    grid_sp_inertia_rate(Y, v, dY);
    for (int c = 0; c < 6; c++) {
        double e[6] = {0}, exh[6];
        e[c] = 1.0;
        grid_sp_force_cross(e, h, exh);
        for (int r = 0; r < 6; r++) B[6 * r + c] = 0.5 * (dY[6 * r + c] + exh[r]);
    }
}

/* C (nv x nv) with C qd + g = nle: J_k's column of a coordinate of joint j (an ancestor of k, or k) is S_j in the world
   frame, the same for every k below j, and its rate dJ = v_j x J with v_j body j's world velocity */
void ref_row_coriolis_matrix(const grid_model *m, const double *const *in, double *const *out, const int *attr,
                             double *work)
{
    (void)attr;
    const size_t nb = (size_t)m->nb;
    const int nv = m->nv_full;
    const double *q = in[0], *v = in[1];
    double *liMi = work, *oMi = liMi + 12 * nb, *vel = oMi + 12 * nb, *ov = vel + 6 * nb;
    double *J = ov + 6 * nb, *dJ = J + 6 * (size_t)nv, *F = dJ + 6 * (size_t)nv; /* 6 x nv each, column-major */
    assert((size_t)(F + 6 * (size_t)nv - work) <= grid_ref_work_size(m));
    double *C = out[0];
    memset(C, 0, sizeof(double) * (size_t)nv * (size_t)nv);
    grid_sp_velocities(m, q, v, liMi, oMi, vel);
    for (int i = 0; i < m->nb; i++) {
        const grid_joint *j = &m->bodies[i].joint;
        double S[36];
        grid_sp_joint_subspace(j, S);
        const double *vi = vel + 6 * i;
        grid_sp_motion_act(oMi + 12 * i, vi, ov + 6 * i);
        for (int c = 0; c < j->nv; c++) {
            double s[6];
            for (int r = 0; r < 6; r++) s[r] = S[j->nv * r + c];
            grid_sp_motion_act(oMi + 12 * i, s, J + 6 * (j->iv + c));
            grid_sp_motion_cross(ov + 6 * i, J + 6 * (j->iv + c), dJ + 6 * (j->iv + c));
        }
    }
    for (int k = 0; k < m->nb; k++) {
        double Il[36], Y[36], B[36];
        grid_sp_inertia_matrix(&m->bodies[k].inertia, Il);
        grid_sp_inertia_to_parent(oMi + 12 * k, Il, Y);
        coriolis_inertia(Y, ov + 6 * k, B);
        /* F = Y dJ_k + B J_k on the columns of k's path to the root, then C += J_k^T F on those rows */
        for (int a = k; a >= 0; a = m->bodies[a].joint.parent) {
            const grid_joint *ja = &m->bodies[a].joint;
            for (int c = ja->iv; c < ja->iv + ja->nv; c++) {
                double t[6];
                grid_sp_mat6_vec(Y, dJ + 6 * c, F + 6 * c);
                grid_sp_mat6_vec(B, J + 6 * c, t);
                for (int r = 0; r < 6; r++) F[6 * c + r] += t[r];
            }
        }
        for (int a = k; a >= 0; a = m->bodies[a].joint.parent)
            for (int b = k; b >= 0; b = m->bodies[b].joint.parent) {
                const grid_joint *ja = &m->bodies[a].joint, *jb = &m->bodies[b].joint;
                for (int r = ja->iv; r < ja->iv + ja->nv; r++)
                    for (int c = jb->iv; c < jb->iv + jb->nv; c++) {
                        double s = 0.0;
                        for (int e = 0; e < 6; e++) s += J[6 * r + e] * F[6 * c + e];
                        C[(size_t)r * (size_t)nv + (size_t)c] += s;
                    }
            }
    }
}
