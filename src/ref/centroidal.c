/* Reference centre of mass and centroidal quantities, from world placements and each body's Jacobian at its centre. */
#include <assert.h>
#include <string.h>
#include "ref_rows.h"
#include "spatial.h"

/* com = sum m_i c_i / m and J = sum m_i J_i / m (jacobianCenterOfMass), J_i the world linear velocity Jacobian of body
   i's centre: a column of an ancestor joint j with world motion (v_o, w) moves the point c at v_o + w x c */
void ref_row_com(const grid_model *m, const double *const *in, double *const *out, const int *attr, double *work)
{
    (void)attr;
    const size_t nb = (size_t)m->nb, nv = (size_t)m->nv_full;
    double *liMi = work, *oMi = liMi + 12 * nb, *cw = oMi + 12 * nb; /* cw: each body's world centre of mass */
    assert((size_t)(cw + 3 * nb - work) <= grid_ref_work_size(m));
    grid_sp_placements(m, in[0], liMi, oMi);
    double *com = out[0], *J = out[1], mass = 0.0;
    memset(com, 0, 3 * sizeof(double));
    memset(J, 0, 3 * nv * sizeof(double));
    for (int i = 0; i < m->nb; i++) {
        const double *X = oMi + 12 * i, *c = m->bodies[i].inertia.com, mi = m->bodies[i].inertia.mass;
        for (int r = 0; r < 3; r++) {
            cw[3 * i + r] = X[3 * r] * c[0] + X[3 * r + 1] * c[1] + X[3 * r + 2] * c[2] + X[9 + r];
            com[r] += mi * cw[3 * i + r];
        }
        mass += mi;
        for (int b = i; b >= 0; b = m->bodies[b].joint.parent) {
            const grid_joint *j = &m->bodies[b].joint;
            double S[36];
            grid_sp_joint_subspace(j, S);
            for (int k = 0; k < j->nv; k++) {
                double s[6], mo[6];
                for (int r = 0; r < 6; r++) s[r] = S[j->nv * r + k];
                grid_sp_motion_act(oMi + 12 * b, s, mo);
                const double *w = mo + 3, *p = cw + 3 * i;
                const double v[3] = {mo[0] + w[1] * p[2] - w[2] * p[1], mo[1] + w[2] * p[0] - w[0] * p[2],
                                     mo[2] + w[0] * p[1] - w[1] * p[0]};
                for (int r = 0; r < 3; r++) J[(size_t)r * nv + (size_t)(j->iv + k)] += mi * v[r];
            }
        }
    }
    const double inv = mass > 0.0 ? 1.0 / mass : 0.0;
    for (int r = 0; r < 3; r++) com[r] *= inv;
    for (size_t e = 0; e < 3 * nv; e++) J[e] *= inv;
}
