/* Reference joint-space mass matrix: the composite rigid body algorithm in body-local frames. */
#include <string.h>
#include "grid/ref.h"
#include "spatial.h"

size_t grid_sp_work_crba(const grid_model *m)
{
    /* placements, then one composite inertia per body */
    return grid_sp_work_kinematics(m) + 36 * (size_t)m->nb;
}

void grid_ref_crba(const grid_model *m, const double *q, double *M, double *work)
{
    const size_t nb = (size_t)m->nb;
    const int nv = m->nv_full;
    double *liMi = work, *oMi = liMi + 12 * nb, *Ic = oMi + 12 * nb;
    grid_sp_placements(m, q, liMi, oMi);
    memset(M, 0, (size_t)nv * (size_t)nv * sizeof(double));

    /* composite inertias start as the body inertias */
    for (int i = 0; i < m->nb; i++) grid_sp_inertia_matrix(&m->bodies[i].inertia, Ic + 36 * i);

    /* backward pass: children first */
    for (int i = m->nb - 1; i >= 0; i--) {
        const grid_joint *ji = &m->bodies[i].joint;
        double Si[36], F[36];
        grid_sp_joint_subspace(ji, Si);

        /* F = Ic_i S_i, the force that moving joint i's coordinates needs (6 x nv_i) */
        for (int c = 0; c < ji->nv; c++) {
            double s[6], fc[6];
            for (int r = 0; r < 6; r++) s[r] = Si[ji->nv * r + c];
            grid_sp_mat6_vec(Ic + 36 * i, s, fc);
            for (int r = 0; r < 6; r++) F[ji->nv * r + c] = fc[r];
        }

        /* walk to the root: M[j, i] = S_j^T F with F carried into each ancestor's frame */
        int k = i;
        for (;;) {
            const grid_joint *jk = &m->bodies[k].joint;
            double Sk[36];
            grid_sp_joint_subspace(jk, Sk);
            for (int a = 0; a < jk->nv; a++)
                for (int c = 0; c < ji->nv; c++) {
                    double s = 0.0;
                    for (int r = 0; r < 6; r++) s += Sk[jk->nv * r + a] * F[ji->nv * r + c];
                    M[(size_t)(jk->iv + a) * nv + ji->iv + c] = s;
                    M[(size_t)(ji->iv + c) * nv + jk->iv + a] = s;
                }
            if (jk->parent < 0) break;
            /* carry F from body k's frame to its parent's */
            for (int c = 0; c < ji->nv; c++) {
                double fc[6], fp[6];
                for (int r = 0; r < 6; r++) fc[r] = F[ji->nv * r + c];
                grid_sp_force_act(liMi + 12 * k, fc, fp);
                for (int r = 0; r < 6; r++) F[ji->nv * r + c] = fp[r];
            }
            k = jk->parent;
        }

        /* add the composite inertia of body i to its parent's */
        if (ji->parent >= 0) {
            double Ip[36];
            grid_sp_inertia_to_parent(liMi + 12 * i, Ic + 36 * i, Ip);
            for (int e = 0; e < 36; e++) Ic[36 * ji->parent + e] += Ip[e];
        }
    }
}
