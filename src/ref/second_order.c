/* Reference second-order derivatives of inverse dynamics (Pinocchio's ComputeRNEASecondOrderDerivatives, IDSVA) and of forward dynamics: four (nv, nv, nv) tensors each. */
#include <assert.h>
#include <math.h>
#include <string.h>
#include "grid/ref.h"
#include "ref_rows.h"
#include "spatial.h"

/* y = A^T x */
static void mat6_tvec(const double A[36], const double x[6], double y[6])
{
    for (int c = 0; c < 6; c++) {
        double s = 0;
        for (int r = 0; r < 6; r++) s += A[6 * r + c] * x[r];
        y[c] = s;
    }
}

static double dot6(const double a[6], const double b[6])
{
    double s = 0;
    for (int r = 0; r < 6; r++) s += a[r] * b[r];
    return s;
}

size_t grid_sp_work_second_order(const grid_model *m)
{
    /* the world pass, then the column rates phid = dAdv - dVdq */
    return grid_sp_work_derivatives(m) + 6 * (size_t)m->nv_full;
}

/* the four tensors into T[0..3] */
static void rnea_second_derivatives(const grid_model *m, const double *q, const double *v, const double *a,
                                    const double *fext, double *const T[4], double *work)
{
    const int nb = m->nb, nv = m->nv_full;
    const size_t n3 = (size_t)nv * (size_t)nv * (size_t)nv;
    assert(q && v && T[0] && T[1] && T[2] && T[3] && work);
    grid_sp_world w;
    grid_sp_world_at(m, work, &w);
    double *phid = work + grid_sp_work_derivatives(m);
    grid_sp_rnea_world_pass(m, q, v, a, fext, &w);
    /* phid = v_i x J (Pinocchio's dJ), psid = dVdq, psidd = dAdq */
    for (int k = 0; k < 6 * nv; k++) phid[k] = w.dAdv[k] - w.dVdq[k];
    const double *S = w.J, *psid = w.dVdq, *psidd = w.dAdq;
    for (int t = 0; t < 4; t++) memset(T[t], 0, n3 * sizeof *T[t]);
    double *T1 = T[0], *T2 = T[1], *T3 = T[2], *T4 = T[3];
#define AT(T, i, j, k) (T)[((size_t)(i) * (size_t)nv + (size_t)(j)) * (size_t)nv + (size_t)(k)]

    /* backward, children first: body i with its subtree's composite Y, D and F (children already added) */
    for (int i = nb - 1; i >= 0; i--) {
        const grid_joint *ji = &m->bodies[i].joint;
        const double *Y = w.Yc + 36 * i, *Bc = w.Dc + 36 * i, *of = w.F + 6 * i;
        for (int ip = ji->iv; ip < ji->iv + ji->nv; ip++) {
            const double *Si = S + 6 * ip, *pdi = psid + 6 * ip, *pddi = psidd + 6 * ip, *phi_i = phid + 6 * ip;
            double r0[36], r1[36], r2[36], r3[36], r4[36], r5[36], r6[36], r7[36], Bic[36], Bpsid[36];
            double SA[36], t1[36], t2[36], f[6], t[6];
            grid_sp_inertia_rate(Y, Si, r1);          /* variation(S_i) */
            memcpy(Bic, r1, sizeof Bic);
            grid_sp_inertia_rate(Y, pdi, Bpsid);      /* variation(psid_i) */
            grid_sp_mat6_vec(Y, Si, f);
            grid_sp_force_cross_matrix(f, r0);
            for (int e = 0; e < 36; e++) Bic[e] += r0[e];
            grid_sp_mat6_vec(Y, pdi, f);
            grid_sp_force_cross_matrix(f, t1);
            for (int e = 0; e < 36; e++) Bpsid[e] += t1[e];
            for (int e = 0; e < 36; e++) r2[e] = 2 * r0[e] - Bic[e];
            /* r3 = Bpsid - S_iA^T Bc - Bc S_iA */
            grid_sp_motion_cross_matrix(Si, SA);
            for (int r = 0; r < 6; r++)
                for (int c = 0; c < 6; c++) {
                    double s = 0;
                    for (int k = 0; k < 6; k++) s += SA[6 * k + r] * Bc[6 * k + c];
                    t1[6 * r + c] = s;
                }
            grid_sp_mat6_mul(Bc, SA, t2);
            for (int e = 0; e < 36; e++) r3[e] = Bpsid[e] - t1[e] - t2[e];
            /* r4 = cmf(Bc^T S_i) */
            mat6_tvec(Bc, Si, f);
            grid_sp_force_cross_matrix(f, r4);
            /* r5 = cmf(Bc psid_i + S_i x* F + Y psidd_i) */
            grid_sp_mat6_vec(Bc, pdi, f);
            grid_sp_force_cross(Si, of, t);
            for (int r = 0; r < 6; r++) f[r] += t[r];
            grid_sp_mat6_vec(Y, pddi, t);
            for (int r = 0; r < 6; r++) f[r] += t[r];
            grid_sp_force_cross_matrix(f, r5);
            /* r6 = r0 + S_i x* Y (the force cross of S_i times Y: -SA^T Y) */
            for (int r = 0; r < 6; r++)
                for (int c = 0; c < 6; c++) {
                    double s = 0;
                    for (int k = 0; k < 6; k++) s -= SA[6 * k + r] * Y[6 * k + c];
                    r6[6 * r + c] = r0[6 * r + c] + s;
                }
            /* r7 = cmf(Bc S_i + Y (psid_i + phid_i)) */
            double sum[6];
            for (int r = 0; r < 6; r++) sum[r] = pdi[r] + phi_i[r];
            grid_sp_mat6_vec(Bc, Si, f);
            grid_sp_mat6_vec(Y, sum, t);
            for (int r = 0; r < 6; r++) f[r] += t[r];
            grid_sp_force_cross_matrix(f, r7);

            for (int j = i; j >= 0; j = m->bodies[j].joint.parent) {
                const grid_joint *jj = &m->bodies[j].joint;
                for (int jq = jj->iv; jq < jj->iv + jj->nv; jq++) {
                    const double *Sj = S + 6 * jq, *pdj = psid + 6 * jq, *pddj = psidd + 6 * jq, *phj = phid + 6 * jq;
                    double u1[6], u2[6], u3[6], u4[6], u5[6], u6[6], u7[6], u8[6], u9[6], u10[6], u11[6], u12[6],
                        u13[6], x[6];
                    mat6_tvec(r3, Sj, u1);
                    mat6_tvec(r1, Sj, u2);
                    grid_sp_mat6_vec(r3, pdj, u3);
                    grid_sp_mat6_vec(r1, pddj, x);
                    for (int r = 0; r < 6; r++) u3[r] += x[r];
                    grid_sp_mat6_vec(r5, Sj, x);
                    for (int r = 0; r < 6; r++) u3[r] += x[r];
                    grid_sp_mat6_vec(r6, Sj, u4);
                    grid_sp_mat6_vec(r2, pdj, u5);
                    grid_sp_mat6_vec(Bic, pdj, u6);
                    grid_sp_mat6_vec(r7, Sj, x);
                    for (int r = 0; r < 6; r++) u6[r] += x[r];
                    for (int r = 0; r < 6; r++) sum[r] = pdj[r] + phj[r];
                    grid_sp_mat6_vec(r3, Sj, u7);
                    grid_sp_mat6_vec(r1, sum, x);
                    for (int r = 0; r < 6; r++) u7[r] += x[r];
                    grid_sp_mat6_vec(r4, Sj, u8);
                    grid_sp_mat6_vec(r0, Sj, u9);
                    grid_sp_mat6_vec(Bic, Sj, u10);
                    mat6_tvec(Bic, Sj, u11);
                    mat6_tvec(Bic, pdj, u12);
                    grid_sp_mat6_vec(r1, Sj, u13);
                    double u8m12[6];
                    for (int r = 0; r < 6; r++) u8m12[r] = u8[r] - u12[r];

                    for (int k = j; k >= 0; k = m->bodies[k].joint.parent) {
                        const grid_joint *jk = &m->bodies[k].joint;
                        for (int kr = jk->iv; kr < jk->iv + jk->nv; kr++) {
                            const double *Sk = S + 6 * kr, *pdk = psid + 6 * kr, *pddk = psidd + 6 * kr;
                            double pk[6];
                            for (int r = 0; r < 6; r++) pk[r] = pdk[r] + phid[6 * kr + r];
                            const double p1 = dot6(u11, pdk);
                            const double p2 = dot6(u9, pddk) + dot6(u8m12, pdk);
                            AT(T1, ip, jq, kr) = p2;
                            AT(T3, ip, kr, jq) = -p1;
                            if (j != i) {
                                const double p3 = -dot6(u11, Sk), p4 = dot6(Sk, u13);
                                AT(T1, jq, kr, ip) = dot6(u1, pdk) + dot6(u2, pddk);
                                AT(T1, jq, ip, kr) = AT(T1, jq, kr, ip);
                                AT(T3, jq, kr, ip) = p1;
                                AT(T3, jq, ip, kr) = dot6(u1, Sk) + dot6(u2, pk);
                                AT(T2, jq, kr, ip) = -p3;
                                AT(T2, jq, ip, kr) = -p3;
                                AT(T4, kr, jq, ip) = p4;
                                AT(T4, jq, kr, ip) = p4;
                            }
                            if (k != j) {
                                const double p3 = -dot6(u11, Sk), p5 = dot6(Sk, u9);
                                double u58[6];
                                for (int r = 0; r < 6; r++) u58[r] = u5[r] + u8[r];
                                AT(T1, ip, kr, jq) = p2;
                                AT(T1, kr, ip, jq) = dot6(Sk, u3);
                                AT(T2, ip, jq, kr) = p3;
                                AT(T2, ip, kr, jq) = p3;
                                AT(T3, ip, jq, kr) = dot6(Sk, u58) + dot6(u9, pk);
                                AT(T3, kr, jq, ip) = dot6(Sk, u6);
                                AT(T4, kr, ip, jq) = p5;
                                AT(T4, ip, kr, jq) = p5;
                                if (j != i) {
                                    const double p6 = dot6(Sk, u10);
                                    AT(T1, kr, jq, ip) = AT(T1, kr, ip, jq);
                                    AT(T2, kr, ip, jq) = p6;
                                    AT(T2, kr, jq, ip) = p6;
                                    AT(T3, kr, ip, jq) = dot6(Sk, u7);
                                } else {
                                    AT(T2, kr, jq, ip) = dot6(Sk, u4);
                                }
                            } else {
                                AT(T2, ip, jq, kr) = -dot6(u2, Sk);
                            }
                        }
                    }
                }
            }
        }
        /* the subtree's sums go to the parent */
        const int p = ji->parent;
        if (p >= 0) {
            for (int e = 0; e < 36; e++) {
                w.Yc[36 * p + e] += w.Yc[36 * i + e];
                w.Dc[36 * p + e] += w.Dc[36 * i + e];
            }
            for (int r = 0; r < 6; r++) w.F[6 * p + r] += w.F[6 * i + r];
        }
    }
#undef AT
}

void grid_ref_rnea_second_derivatives(const grid_model *m, const double *q, const double *v, const double *a,
                                      const double *fext, double *out, double *work)
{
    const size_t nv = (size_t)m->nv_full, n3 = nv * nv * nv;
    double *const T[4] = {out, out + n3, out + 2 * n3, out + 3 * n3};
    rnea_second_derivatives(m, q, v, a, fext, T, work);
}

void ref_row_idsva_so(const grid_model *m, const double *const *in, double *const *out, const int *attr, double *work)
{
    (void)attr;
    rnea_second_derivatives(m, in[0], in[1], in[2], in[3], out, work);
}

size_t grid_sp_work_fd_second_order(const grid_model *m)
{
    /* qdd, M^-1, the first-order [D_q | D_v] and the four second-order tensors of RNEA at qdd, a (nv) scratch, then
       the inner algorithms' work */
    const size_t nv = (size_t)m->nv_full, n3 = nv * nv * nv;
    size_t inner = grid_sp_work_forward_dynamics(m);
    if (grid_sp_work_minv(m) > inner) inner = grid_sp_work_minv(m);
    if (grid_sp_work_derivatives(m) > inner) inner = grid_sp_work_derivatives(m);
    if (grid_sp_work_second_order(m) > inner) inner = grid_sp_work_second_order(m);
    return 2 * nv + nv * nv + 2 * nv * nv + 4 * n3 + inner;
}

/* y[i * stride] = -(M^-1 r)_i (y may not alias r) */
static void minv_neg(size_t nv, const double *Minv, const double *r, double *y, size_t stride)
{
    for (size_t i = 0; i < nv; i++) {
        double s = 0.0;
        for (size_t l = 0; l < nv; l++) s += Minv[i * nv + l] * r[l];
        y[i * stride] = -s;
    }
}

void grid_ref_fd_so_from_parts(size_t nv, const double *Minv, double *D, const double *T, double *const O[4], double *r)
{
    const size_t n3 = nv * nv * nv;
    for (size_t c = 0; c < 2 * nv; c++) {
        for (size_t i = 0; i < nv; i++) r[i] = D[i * 2 * nv + c];
        minv_neg(nv, Minv, r, D + c, 2 * nv);
    }
#define T3(t, i, j, k) T[(size_t)(t) * n3 + ((i) * nv + (j)) * nv + (k)]
#define AQ(l, k) D[(l) * 2 * nv + (k)]
#define AV(l, k) D[(l) * 2 * nv + nv + (k)]
    /* tau(q, v, qdd(q, v, u)) = u differentiated twice: with dM_j = dM/dq_j,
         d2qdd/dq_j dq_k  = -M^-1 (d2tau/dq_j dq_k + dM_j a_q[:, k] + dM_k a_q[:, j])
         d2qdd/dv_j dv_k  = -M^-1 d2tau/dv_j dv_k
         d2qdd/dq_j dv_k  = -M^-1 (d2tau/dq_j dv_k + dM_j a_v[:, k])
         d2qdd_i/du_j dq_k = dMinv_ij/dq_k = -(M^-1 dM_k M^-1)_ij (below) */
    for (int t = 0; t < 3; t++)
        for (size_t j = 0; j < nv; j++)
            for (size_t k = 0; k < nv; k++) {
                for (size_t i = 0; i < nv; i++) {
                    double s = T3(t, i, j, k);
                    for (size_t l = 0; l < nv; l++) {
                        if (t == 0) s += T3(3, i, l, j) * AQ(l, k) + T3(3, i, l, k) * AQ(l, j);
                        else if (t == 2) s += T3(3, i, l, j) * AV(l, k);
                    }
                    r[i] = s;
                }
                minv_neg(nv, Minv, r, O[t] + j * nv + k, nv * nv);
            }
    /* dMinv/dq_k = -M^-1 dM_k M^-1, element [i][j][k] */
    for (size_t k = 0; k < nv; k++)
        for (size_t j = 0; j < nv; j++) {
            /* r = dM_k M^-1[:, j] */
            for (size_t i = 0; i < nv; i++) {
                double s = 0.0;
                for (size_t l = 0; l < nv; l++) s += T3(3, i, l, k) * Minv[l * nv + j];
                r[i] = s;
            }
            minv_neg(nv, Minv, r, O[3] + j * nv + k, nv * nv);
        }
#undef T3
#undef AQ
#undef AV
}

/* the four tensors into O[0..3] */
static void fd_second_derivatives(const grid_model *m, const double *q, const double *v, const double *u,
                                  const double *fext, double *const O[4], double *work)
{
    const size_t nv = (size_t)m->nv_full, n3 = nv * nv * nv;
    double *qdd = work, *Minv = qdd + nv, *D = Minv + nv * nv, *T = D + 2 * nv * nv, *r = T + 4 * n3, *inner = r + nv;
    /* qdd = FD; D = d rnea / d(q, v) and T its second derivatives at qdd, M^-1 */
    grid_ref_forward_dynamics(m, q, v, u, fext, qdd, inner);
    grid_ref_rnea_derivatives(m, q, v, qdd, fext, D, inner);
    grid_ref_rnea_second_derivatives(m, q, v, qdd, fext, T, inner);
    grid_ref_minv(m, q, Minv, inner);
    grid_ref_fd_so_from_parts(nv, Minv, D, T, O, r);
}

void grid_ref_fd_second_derivatives(const grid_model *m, const double *q, const double *v, const double *u,
                                    const double *fext, double *out, double *work)
{
    const size_t nv = (size_t)m->nv_full, n3 = nv * nv * nv;
    double *const O[4] = {out, out + n3, out + 2 * n3, out + 3 * n3};
    fd_second_derivatives(m, q, v, u, fext, O, work);
}

void ref_row_fdsva_so(const grid_model *m, const double *const *in, double *const *out, const int *attr, double *work)
{
    (void)attr;
    fd_second_derivatives(m, in[0], in[1], in[2], in[3], out, work);
}

size_t grid_sp_work_ee_second_order(const grid_model *m)
{
    /* the poses, the world columns of every joint and the LOCAL_WORLD_ALIGNED Jacobian of one end effector, then
       the pose and kinematics work */
    size_t inner = grid_sp_work_jacobian(m);
    if (grid_sp_work_kinematics(m) > inner) inner = grid_sp_work_kinematics(m);
    return 6 * (size_t)m->nee + 13 * (size_t)m->nv_full + inner;
}

void grid_ref_ee_pose_second_derivatives(const grid_model *m, const double *q, double *out, double *work)
{
    const int nv = m->nv_full, nb = m->nb;
    const size_t nv2 = (size_t)nv * (size_t)nv;
    /* the poses, the world columns, one Jacobian, each column's body (as a double), then the inner work */
    double *pose = work, *C = pose + 6 * m->nee, *J = C + 6 * nv, *own = J + 6 * nv, *inner = own + nv;
    double *liMi = inner, *oMi = inner + 12 * (size_t)nb;
    memset(out, 0, 6 * (size_t)m->nee * nv2 * sizeof *out);
    grid_ref_end_effector_pose(m, q, pose, inner);
    /* the world columns c = oMi.act(S) of every joint (spatial, about the world origin) and their bodies */
    grid_sp_placements(m, q, liMi, oMi);
    for (int i = 0; i < nb; i++) {
        const grid_joint *j = &m->bodies[i].joint;
        double S[36];
        grid_sp_joint_subspace(j, S);
        for (int c = 0; c < j->nv; c++) {
            double s[6];
            for (int r = 0; r < 6; r++) s[r] = S[j->nv * r + c];
            grid_sp_motion_act(oMi + 12 * i, s, C + 6 * (j->iv + c));
            own[j->iv + c] = i;
        }
    }
    for (int e = 0; e < m->nee; e++) {
        const int body = m->frames[m->ee_frames[e]].body;
        if (body < 0) continue; /* welded to the world: no motion */
        grid_ref_frame_jacobian(m, q, m->ee_frames[e], GRID_LOCAL_WORLD_ALIGNED, J, inner);
        const double *P = pose + 6 * e, pf[3] = {P[0], P[1], P[2]};
        const double sp = sin(P[4]), cp = cos(P[4]), sy = sin(P[5]), cy = cos(P[5]);
        double *H = out + 6 * (size_t)e * nv2;
        for (int j = 0; j < nv; j++) {
            const int bj = (int)own[j];
            if (!grid_sp_ancestor_or_self(m, bj, body)) continue;
            const double *cj = C + 6 * j, wx = J[3 * nv + j], wy = J[4 * nv + j];
            const double drj = (cy * wx + sy * wy) / cp;
            for (int k = 0; k < nv; k++) {
                const int bk = (int)own[k];
                if (!grid_sp_ancestor_or_self(m, bk, body)) continue;
                /* d c_j / d q_k = c_k x c_j when joint k moves joint j (its body an ancestor of j's, or j's own) */
                double dc[6] = {0};
                if (grid_sp_ancestor_or_self(m, bk, bj)) grid_sp_motion_cross(C + 6 * k, cj, dc);
                /* the frame origin's rate along q_k: J_lin[:, k]; d J_lin[:, j] = d v_j - d p_f x w_j - p_f x d w_j */
                const double dp[3] = {J[k], J[nv + k], J[2 * nv + k]}, *w = cj + 3, *dw = dc + 3;
                double lin[3];
                lin[0] = dc[0] - (dp[1] * w[2] - dp[2] * w[1]) - (pf[1] * dw[2] - pf[2] * dw[1]);
                lin[1] = dc[1] - (dp[2] * w[0] - dp[0] * w[2]) - (pf[2] * dw[0] - pf[0] * dw[2]);
                lin[2] = dc[2] - (dp[0] * w[1] - dp[1] * w[0]) - (pf[0] * dw[1] - pf[1] * dw[0]);
                /* the angles' rates along q_k (the gradient's rows), then the rows' derivatives */
                const double wkx = J[3 * nv + k], wky = J[4 * nv + k], wkz = J[5 * nv + k];
                const double drk = (cy * wkx + sy * wky) / cp, dpk = -sy * wkx + cy * wky, dyk = wkz + sp * drk;
                const double ddr = ((-sy * wx + cy * wy) * dyk + (cy * wx + sy * wy) * sp * dpk / cp +
                                    cy * dw[0] + sy * dw[1]) / cp;
                const double ddp = (-cy * wx - sy * wy) * dyk - sy * dw[0] + cy * dw[1];
                const double ddy = dw[2] + cp * dpk * drj + sp * ddr;
                const double row[6] = {lin[0], lin[1], lin[2], ddr, ddp, ddy};
                for (int r = 0; r < 6; r++) H[(size_t)r * nv2 + (size_t)j * nv + k] = row[r];
            }
        }
    }
}

void ref_row_ee_pose_hessian(const grid_model *m, const double *const *in, double *const *out, const int *attr,
                             double *work)
{
    (void)attr;
    grid_ref_ee_pose_second_derivatives(m, in[0], out[0], work);
}
