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

/* world-frame composites about the world origin: Yc (36 per body, row-major) of every subtree, and the whole
   robot's mass and centre of mass (a composite's angular-linear block is m [c]x) */
static double world_composites(const grid_model *m, const double *oMi, double *Yc, double c[3])
{
    for (int i = 0; i < m->nb; i++) {
        double I[36];
        grid_sp_inertia_matrix(&m->bodies[i].inertia, I);
        grid_sp_inertia_to_parent(oMi + 12 * i, I, Yc + 36 * i);
    }
    for (int i = m->nb - 1; i >= 0; i--) {
        const int p = m->bodies[i].joint.parent;
        if (p >= 0)
            for (int e = 0; e < 36; e++) Yc[36 * p + e] += Yc[36 * i + e];
    }
    double mass = 0.0;
    c[0] = c[1] = c[2] = 0.0;
    for (int i = 0; i < m->nb; i++)
        if (m->bodies[i].joint.parent < 0) {
            const double *Y = Yc + 36 * i;
            mass += Y[0];
            c[0] += Y[6 * 5 + 1];
            c[1] += Y[6 * 3 + 2];
            c[2] += Y[6 * 4 + 0];
        }
    for (int k = 0; k < 3 && mass > 0.0; k++) c[k] /= mass;
    return mass;
}

/* A (6 x nv) and h = A qd about the centre of mass c, world axes (ccrba): column of a coordinate of joint j is
   Yc_j S_j (about the world origin) with its moment moved to c, n_g = n - c x f */
void ref_row_ccrba(const grid_model *m, const double *const *in, double *const *out, const int *attr, double *work)
{
    (void)attr;
    const size_t nb = (size_t)m->nb, nv = (size_t)m->nv_full;
    double *liMi = work, *oMi = liMi + 12 * nb, *Yc = oMi + 12 * nb;
    assert((size_t)(Yc + 36 * nb - work) <= grid_ref_work_size(m));
    grid_sp_placements(m, in[0], liMi, oMi);
    double c[3];
    world_composites(m, oMi, Yc, c);
    double *A = out[0], *h = out[1];
    memset(h, 0, 6 * sizeof(double));
    for (int i = 0; i < m->nb; i++) {
        const grid_joint *j = &m->bodies[i].joint;
        double S[36];
        grid_sp_joint_subspace(j, S);
        for (int k = 0; k < j->nv; k++) {
            double s[6], sw[6], f[6];
            for (int r = 0; r < 6; r++) s[r] = S[j->nv * r + k];
            grid_sp_motion_act(oMi + 12 * i, s, sw);
            grid_sp_mat6_vec(Yc + 36 * i, sw, f);
            f[3] -= c[1] * f[2] - c[2] * f[1];
            f[4] -= c[2] * f[0] - c[0] * f[2];
            f[5] -= c[0] * f[1] - c[1] * f[0];
            const size_t col = (size_t)(j->iv + k);
            for (int r = 0; r < 6; r++) {
                A[nv * (size_t)r + col] = f[r];
                h[r] += f[r] * in[1][col];
            }
        }
    }
}

/* the work of cmm_rate: placements, velocities, composites and their rates per body, A_o */
static size_t cmm_rate_work(const grid_model *m) { return 108 * (size_t)m->nb + 6 * (size_t)m->nv_full; }

/* dAg (6 x nv, Pinocchio's dccrba) along v: A_o's column of a coordinate of joint j is Yc_j S_j (about the world
   origin), its rate dYc_j S_j + Yc_j (v_j x S_j) with v_j the body's world spatial velocity; Ag = A_o moved to the
   centre of mass c (n_g = n_o - c x f), so dAg also has -dc x f, m dc the linear momentum */
static void cmm_rate(const grid_model *m, const double *q, const double *v, double *dA, double *work)
{
    const size_t nb = (size_t)m->nb, nv = (size_t)m->nv_full;
    double *liMi = work, *oMi = liMi + 12 * nb, *vel = oMi + 12 * nb, *ov = vel + 6 * nb;
    double *Yc = ov + 6 * nb, *dYc = Yc + 36 * nb, *A = dYc + 36 * nb; /* A: A_o, 6 x nv row-major */
    assert((size_t)(A + 6 * nv - work) == cmm_rate_work(m));
    grid_sp_velocities(m, q, v, liMi, oMi, vel);
    for (int i = 0; i < m->nb; i++) {
        double I[36], Yw[36];
        grid_sp_motion_act(oMi + 12 * i, vel + 6 * i, ov + 6 * i);
        grid_sp_inertia_matrix(&m->bodies[i].inertia, I);
        grid_sp_inertia_to_parent(oMi + 12 * i, I, Yw);
        grid_sp_inertia_rate(Yw, ov + 6 * i, dYc + 36 * i);
    }
    for (int i = m->nb - 1; i >= 0; i--) {
        const int p = m->bodies[i].joint.parent;
        if (p >= 0)
            for (int e = 0; e < 36; e++) dYc[36 * p + e] += dYc[36 * i + e];
    }
    double c[3], pl[3] = {0, 0, 0};
    const double mass = world_composites(m, oMi, Yc, c);
    for (int i = 0; i < m->nb; i++) {
        const grid_joint *j = &m->bodies[i].joint;
        double S[36];
        grid_sp_joint_subspace(j, S);
        for (int k = 0; k < j->nv; k++) {
            double s[6], sw[6], ds[6], a[6], da[6], t[6];
            for (int r = 0; r < 6; r++) s[r] = S[j->nv * r + k];
            grid_sp_motion_act(oMi + 12 * i, s, sw);
            grid_sp_motion_cross(ov + 6 * i, sw, ds);
            grid_sp_mat6_vec(Yc + 36 * i, sw, a);
            grid_sp_mat6_vec(dYc + 36 * i, sw, da);
            grid_sp_mat6_vec(Yc + 36 * i, ds, t);
            const size_t col = (size_t)(j->iv + k);
            for (int r = 0; r < 6; r++) {
                A[nv * (size_t)r + col] = a[r];
                dA[nv * (size_t)r + col] = da[r] + t[r];
            }
            for (int r = 0; r < 3; r++) pl[r] += a[r] * v[col];
        }
    }
    const double inv = mass > 0.0 ? 1.0 / mass : 0.0, dc[3] = {pl[0] * inv, pl[1] * inv, pl[2] * inv};
    for (size_t col = 0; col < nv; col++) {
        const double f[3] = {A[col], A[nv + col], A[2 * nv + col]}, df[3] = {dA[col], dA[nv + col], dA[2 * nv + col]};
        /* n_g = n - c x f, so dn_g = dn - c x df - dc x f */
        dA[3 * nv + col] -= c[1] * df[2] - c[2] * df[1] + dc[1] * f[2] - dc[2] * f[1];
        dA[4 * nv + col] -= c[2] * df[0] - c[0] * df[2] + dc[2] * f[0] - dc[0] * f[2];
        dA[5 * nv + col] -= c[0] * df[1] - c[1] * df[0] + dc[0] * f[1] - dc[1] * f[0];
    }
}

void ref_row_cmm_time_variation(const grid_model *m, const double *const *in, double *const *out, const int *attr,
                                double *work)
{
    (void)attr;
    assert(cmm_rate_work(m) <= grid_ref_work_size(m));
    cmm_rate(m, in[0], in[1], out[0], work);
}

/* dA/dq (6 x nv x nv): moving q along the local tangent e_k is the motion at the unit velocity e_k, so column k,
   out[r][j][k] = dA[r][j]/dq_k, is the rate of A (cmm_rate) along e_k */
void ref_row_dccrba(const grid_model *m, const double *const *in, double *const *out, const int *attr, double *work)
{
    (void)attr;
    const size_t nv = (size_t)m->nv_full;
    double *e = work + cmm_rate_work(m), *dA = e + nv;
    assert(cmm_rate_work(m) + 7 * nv <= grid_ref_work_size(m));
    memset(e, 0, nv * sizeof *e);
    for (size_t k = 0; k < nv; k++) {
        e[k] = 1.0;
        cmm_rate(m, in[0], e, dA, work);
        e[k] = 0.0;
        for (size_t rj = 0; rj < 6 * nv; rj++) out[0][rj * nv + k] = dA[rj];
    }
}
