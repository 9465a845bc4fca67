/* Reference energies: kinetic, potential and mechanical energy of a state, and their inertial-parameter regressors. */
#include <assert.h>
#include "ref_rows.h"
#include "spatial.h"

/* placements (liMi, oMi) and the body-local spatial velocities of every body at (q, qd): 30 nb doubles, inside
   RNEA's workspace (grid_sp_work_rnea), which grid_ref_work_size covers */
static void body_velocities(const grid_model *m, const double *q, const double *v, double *work)
{
    const size_t nb = (size_t)m->nb;
    assert(grid_sp_work_kinematics(m) + 6 * nb <= grid_sp_work_rnea(m));
    grid_sp_velocities(m, q, v, work, work + 12 * nb, work + 24 * nb);
}

/* [kinetic, potential, mechanical] (computeKineticEnergy, computePotentialEnergy, computeMechanicalEnergy):
   T = sum 1/2 v_i . I_i v_i, V = -sum m_i g . c_i (c_i the world centre of mass; links welded to a fixed base's world
   are in no body and count in neither, as Pinocchio's universe) */
void ref_row_energy(const grid_model *m, const double *const *in, double *const *out, const int *attr, double *work)
{
    (void)attr;
    const size_t nb = (size_t)m->nb;
    body_velocities(m, in[0], in[1], work);
    const double *oMi = work + 12 * nb, *vel = oMi + 12 * nb;
    double T = 0.0, V = 0.0;
    for (int i = 0; i < m->nb; i++) {
        const grid_inertia *in_i = &m->bodies[i].inertia;
        double I[36], Iv[6];
        grid_sp_inertia_matrix(in_i, I);
        grid_sp_mat6_vec(I, vel + 6 * i, Iv);
        for (int r = 0; r < 6; r++) T += 0.5 * vel[6 * i + r] * Iv[r];
        /* the world z of the centre of mass: row 2 of R times c, plus p_z */
        const double *X = oMi + 12 * i;
        const double z = X[6] * in_i->com[0] + X[7] * in_i->com[1] + X[8] * in_i->com[2] + X[11];
        V -= in_i->mass * m->gravity * z;
    }
    out[0][0] = T;
    out[0][1] = V;
    out[0][2] = T + V;
}

/* y with T = y . pi, pi per body in Pinocchio's order (m, m c, Ixx Ixy Iyy Ixz Iyz Izz about the body origin)
   (computeKineticEnergyRegressor): with v, w body i's local linear and angular velocity, T_i = 1/2 m v.v + m c . (v x w)
   + 1/2 w^T I w */
void ref_row_kinetic_energy_regressor(const grid_model *m, const double *const *in, double *const *out, const int *attr,
                                      double *work)
{
    (void)attr;
    const size_t nb = (size_t)m->nb;
    body_velocities(m, in[0], in[1], work);
    const double *vel = work + 24 * nb;
    for (int i = 0; i < m->nb; i++) {
        const double *v = vel + 6 * i, *w = v + 3;
        double *y = out[0] + 10 * i;
        y[0] = 0.5 * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
        y[1] = v[1] * w[2] - v[2] * w[1];
        y[2] = v[2] * w[0] - v[0] * w[2];
        y[3] = v[0] * w[1] - v[1] * w[0];
        y[4] = 0.5 * w[0] * w[0];
        y[5] = w[0] * w[1];
        y[6] = 0.5 * w[1] * w[1];
        y[7] = w[0] * w[2];
        y[8] = w[1] * w[2];
        y[9] = 0.5 * w[2] * w[2];
    }
}

/* y with V = y . pi (computePotentialEnergyRegressor): V_i = -g . (m p_i + R_i m c) with oMi = (R_i, p_i), so body i's
   columns are [-g . p_i, -(R_i^T g), 0 x 6] */
void ref_row_potential_energy_regressor(const grid_model *m, const double *const *in, double *const *out,
                                        const int *attr, double *work)
{
    (void)attr;
    const size_t nb = (size_t)m->nb;
    double *liMi = work, *oMi = liMi + 12 * nb;
    grid_sp_placements(m, in[0], liMi, oMi);
    for (int i = 0; i < m->nb; i++) {
        const double *X = oMi + 12 * i;
        double *y = out[0] + 10 * i;
        y[0] = -m->gravity * X[11];
        for (int k = 0; k < 3; k++) y[1 + k] = -m->gravity * X[6 + k];
        for (int k = 4; k < 10; k++) y[k] = 0.0;
    }
}
