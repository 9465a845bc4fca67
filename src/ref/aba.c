/* Reference forward dynamics: Featherstone's articulated body algorithm in body-local frames. */
#include <string.h>
#include "grid/ref.h"
#include "spatial.h"

size_t grid_sp_work_aba(const grid_model *m)
{
    /* placements; v, c, pA, u, a (6 each), IA, U, D^-1 (36 each) per body */
    return grid_sp_work_kinematics(m) + 138 * (size_t)m->nb;
}

void grid_ref_aba(const grid_model *m, const double *q, const double *v, const double *u,
                  const double *fext, double *qdd, double *work)
{
    const size_t nb = (size_t)m->nb;
    double *liMi = work, *oMi = liMi + 12 * nb;
    double *vel = oMi + 12 * nb, *cor = vel + 6 * nb, *pA = cor + 6 * nb, *uu = pA + 6 * nb;
    double *acc = uu + 6 * nb, *IA = acc + 6 * nb, *U = IA + 36 * nb, *Dinv = U + 36 * nb;
    grid_sp_placements(m, q, liMi, oMi);

    const double a_world[6] = {0.0, 0.0, -m->gravity, 0.0, 0.0, 0.0};
    const double v_world[6] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0};

    /* pass 1, parents first: velocities, velocity-product accelerations, bias forces */
    for (int i = 0; i < m->nb; i++) {
        const grid_joint *j = &m->bodies[i].joint;
        double S[36], vJ[6] = {0}, Iv[6], t[6];
        grid_sp_joint_subspace(j, S);
        for (int r = 0; r < 6; r++)
            for (int c = 0; c < j->nv; c++) vJ[r] += S[j->nv * r + c] * v[j->iv + c];
        const double *vp = j->parent < 0 ? v_world : vel + 6 * j->parent;
        double *vi = vel + 6 * i;
        /* v_i = X v_parent + S qd; c_i = v_i x (S qd) */
        grid_sp_motion_act_inv(liMi + 12 * i, vp, vi);
        for (int r = 0; r < 6; r++) vi[r] += vJ[r];
        grid_sp_motion_cross(vi, vJ, cor + 6 * i);
        /* IA_i = I_i; pA_i = v_i x* (I_i v_i) - fext_i */
        grid_sp_inertia_matrix(&m->bodies[i].inertia, IA + 36 * i);
        grid_sp_mat6_vec(IA + 36 * i, vi, Iv);
        grid_sp_force_cross(vi, Iv, t);
        for (int r = 0; r < 6; r++) pA[6 * i + r] = t[r] - (fext ? fext[6 * i + r] : 0.0);
    }

    /* pass 2, children first: articulated inertias and bias forces */
    for (int i = m->nb - 1; i >= 0; i--) {
        const grid_joint *j = &m->bodies[i].joint;
        const int n = j->nv;
        double S[36], D[36];
        double *Ii = IA + 36 * i, *Ui = U + 36 * i, *Di = Dinv + 36 * i, *ui = uu + 6 * i;
        grid_sp_joint_subspace(j, S);
        /* U = IA S (6 x n), D = S^T U, u = tau - S^T pA */
        for (int r = 0; r < 6; r++)
            for (int c = 0; c < n; c++) {
                double s = 0.0;
                for (int k = 0; k < 6; k++) s += Ii[6 * r + k] * S[n * k + c];
                Ui[n * r + c] = s;
            }
        for (int a = 0; a < n; a++) {
            double s = 0.0;
            for (int c = 0; c < n; c++) {
                double d = 0.0;
                for (int k = 0; k < 6; k++) d += S[n * k + a] * Ui[n * k + c];
                D[n * a + c] = d;
            }
            for (int k = 0; k < 6; k++) s += S[n * k + a] * pA[6 * i + k];
            ui[a] = u[j->iv + a] - s;
        }
        grid_sp_small_inverse(n, D, Di);
        if (j->parent < 0) continue;

        /* Ia = IA - U D^-1 U^T; pa = pA + Ia c + U D^-1 u */
        double Ia[36], pa[6], Du[6], t[6];
        for (int a = 0; a < n; a++) {
            double s = 0.0;
            for (int b = 0; b < n; b++) s += Di[n * a + b] * ui[b];
            Du[a] = s;
        }
        for (int r = 0; r < 6; r++)
            for (int c = 0; c < 6; c++) {
                double s = 0.0;
                for (int a = 0; a < n; a++)
                    for (int b = 0; b < n; b++) s += Ui[n * r + a] * Di[n * a + b] * Ui[n * c + b];
                Ia[6 * r + c] = Ii[6 * r + c] - s;
            }
        grid_sp_mat6_vec(Ia, cor + 6 * i, pa);
        for (int r = 0; r < 6; r++) {
            double s = 0.0;
            for (int a = 0; a < n; a++) s += Ui[n * r + a] * Du[a];
            pa[r] += pA[6 * i + r] + s;
        }
        /* hand both to the parent, in its frame */
        double Ip[36];
        grid_sp_inertia_to_parent(liMi + 12 * i, Ia, Ip);
        for (int e = 0; e < 36; e++) IA[36 * j->parent + e] += Ip[e];
        grid_sp_force_act(liMi + 12 * i, pa, t);
        for (int r = 0; r < 6; r++) pA[6 * j->parent + r] += t[r];
    }

    /* pass 3, parents first: accelerations */
    for (int i = 0; i < m->nb; i++) {
        const grid_joint *j = &m->bodies[i].joint;
        const int n = j->nv;
        double S[36], uta[6];
        const double *Ui = U + 36 * i, *Di = Dinv + 36 * i, *ui = uu + 6 * i;
        const double *ap = j->parent < 0 ? a_world : acc + 6 * j->parent;
        double *ai = acc + 6 * i;
        grid_sp_joint_subspace(j, S);
        /* a' = X a_parent + c_i */
        grid_sp_motion_act_inv(liMi + 12 * i, ap, ai);
        for (int r = 0; r < 6; r++) ai[r] += cor[6 * i + r];
        /* qdd = D^-1 (u - U^T a') */
        for (int a = 0; a < n; a++) {
            double s = 0.0;
            for (int r = 0; r < 6; r++) s += Ui[n * r + a] * ai[r];
            uta[a] = ui[a] - s;
        }
        for (int a = 0; a < n; a++) {
            double s = 0.0;
            for (int b = 0; b < n; b++) s += Di[n * a + b] * uta[b];
            qdd[j->iv + a] = s;
        }
        /* a_i = a' + S qdd */
        for (int r = 0; r < 6; r++)
            for (int a = 0; a < n; a++) ai[r] += S[n * r + a] * qdd[j->iv + a];
    }
}
