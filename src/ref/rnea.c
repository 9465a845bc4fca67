/* Reference inverse dynamics: the recursive Newton-Euler algorithm, nonlinear effects and gravity. */
#include <string.h>
#include "grid/ref.h"
#include "spatial.h"

size_t grid_sp_work_rnea(const grid_model *m)
{
    /* placements, then v, a, f per body */
    return grid_sp_work_kinematics(m) + 18 * (size_t)m->nb;
}

/* RNEA in body-local frames; v, a, fext may each be NULL (zero) */
static void rnea(const grid_model *m, const double *q, const double *v, const double *a,
                 const double *fext, double *tau, double *work)
{
    const size_t nb = (size_t)m->nb;
    double *liMi = work, *oMi = liMi + 12 * nb;
    double *vel = oMi + 12 * nb, *acc = vel + 6 * nb, *f = acc + 6 * nb;
    /* forward pass: velocities and accelerations, parents first (gravity as the world's upward acceleration) */
    grid_sp_accelerations(m, q, v, a, liMi, oMi, vel, acc);
    for (int i = 0; i < m->nb; i++) {
        const double *vi = vel + 6 * i, *ai = acc + 6 * i;
        double *fi = f + 6 * i, t[6];
        /* f_i = I a_i + v_i x* (I v_i) - fext_i */
        double I[36], Iv[6];
        grid_sp_inertia_matrix(&m->bodies[i].inertia, I);
        grid_sp_mat6_vec(I, ai, fi);
        grid_sp_mat6_vec(I, vi, Iv);
        grid_sp_force_cross(vi, Iv, t);
        for (int r = 0; r < 6; r++) fi[r] += t[r] - (fext ? fext[6 * i + r] : 0.0);
    }

    /* backward pass: project on the joint, hand the force to the parent */
    for (int i = m->nb - 1; i >= 0; i--) {
        const grid_joint *j = &m->bodies[i].joint;
        double S[36];
        grid_sp_joint_subspace(j, S);
        for (int c = 0; c < j->nv; c++) {
            double s = 0.0;
            for (int r = 0; r < 6; r++) s += S[j->nv * r + c] * f[6 * i + r];
            tau[j->iv + c] = s;
        }
        if (j->parent >= 0) {
            double fp[6];
            grid_sp_force_act(liMi + 12 * i, f + 6 * i, fp);
            for (int r = 0; r < 6; r++) f[6 * j->parent + r] += fp[r];
        }
    }
}

void grid_ref_rnea(const grid_model *m, const double *q, const double *v, const double *a,
                   const double *fext, double *tau, double *work)
{
    rnea(m, q, v, a, fext, tau, work);
}

void grid_ref_nonlinear_effects(const grid_model *m, const double *q, const double *v,
                                double *tau, double *work)
{
    rnea(m, q, v, NULL, NULL, tau, work);
}

void grid_ref_gravity(const grid_model *m, const double *q, double *tau, double *work)
{
    rnea(m, q, NULL, NULL, NULL, tau, work);
}
