/* Reference first-order derivatives of inverse and forward dynamics (Pinocchio's computeRNEADerivatives and
   computeABADerivatives), in world-frame quantities with plain loops over body pairs. */
#include <assert.h>
#include <math.h>
#include <string.h>
#include "grid/ref.h"
#include "ref_rows.h"
#include "spatial.h"

size_t grid_sp_work_derivatives(const grid_model *m)
{
    /* placements; per tangent column J, dVdq, dAdq, dAdv; per body v, a, F and the 6x6 Yc, Dc */
    const size_t nb = (size_t)m->nb, nv = (size_t)m->nv_full;
    return grid_sp_work_kinematics(m) + 24 * nv + 18 * nb + 72 * nb;
}

int grid_sp_ancestor_or_self(const grid_model *m, int a, int b)
{
    for (; b >= 0; b = m->bodies[b].joint.parent)
        if (b == a) return 1;
    return 0;
}

/* out += A m for a 6x6 A */
static void mat6_vec_acc(const double A[36], const double m[6], double out[6])
{
    double t[6];
    grid_sp_mat6_vec(A, m, t);
    for (int r = 0; r < 6; r++) out[r] += t[r];
}

void grid_sp_rnea_world_pass(const grid_model *m, const double *q, const double *v, const double *a,
                             const double *fext, const grid_sp_world *w)
{
    const int nb = m->nb;
    double *liMi = w->liMi, *oMi = w->oMi, *J = w->J, *dVdq = w->dVdq, *dAdq = w->dAdq, *dAdv = w->dAdv;
    double *vel = w->vel, *acc = w->acc, *F = w->F, *Yc = w->Yc, *Dc = w->Dc;
    grid_sp_placements(m, q, liMi, oMi);

    /* gravity as a fictitious upward acceleration of the world (as rnea.c) */
    const double a_world[6] = {0.0, 0.0, -m->gravity, 0.0, 0.0, 0.0};
    const double v_world[6] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0};

    /* forward pass, parents first: everything in the world frame */
    for (int i = 0; i < nb; i++) {
        const grid_joint *j = &m->bodies[i].joint;
        const double *xi = oMi + 12 * i;
        const double *vp = j->parent < 0 ? v_world : vel + 6 * j->parent;
        const double *ap = j->parent < 0 ? a_world : acc + 6 * j->parent;
        double *vi = vel + 6 * i, *ai = acc + 6 * i, *fi = F + 6 * i, *Yi = Yc + 36 * i, *Di = Dc + 36 * i;

        /* J_i = oMi.act(S_i) column by column; vJ = J_i qd_i, aJ = J_i qdd_i */
        double S[36], vJ[6] = {0}, aJ[6] = {0};
        grid_sp_joint_subspace(j, S);
        for (int c = 0; c < j->nv; c++) {
            double s[6], *Jc = J + 6 * (j->iv + c);
            for (int r = 0; r < 6; r++) s[r] = S[j->nv * r + c];
            grid_sp_motion_act(xi, s, Jc);
            for (int r = 0; r < 6; r++) {
                vJ[r] += Jc[r] * v[j->iv + c];
                if (a) aJ[r] += Jc[r] * a[j->iv + c];
            }
        }

        /* v_i = v_parent + J qd; a_i = a_parent + J qdd + v_parent x (J qd) */
        double t[6];
        grid_sp_motion_cross(vp, vJ, t);
        for (int r = 0; r < 6; r++) {
            vi[r] = vp[r] + vJ[r];
            ai[r] = ap[r] + aJ[r] + t[r];
        }

        /* per column: dVdq = v_parent x J, dAdq = a_parent x J + v_parent x dVdq, dAdv = (v_parent + v_i) x J */
        double vsum[6];
        for (int r = 0; r < 6; r++) vsum[r] = vp[r] + vi[r];
        for (int c = j->iv; c < j->iv + j->nv; c++) {
            double u[6];
            grid_sp_motion_cross(vp, J + 6 * c, dVdq + 6 * c);
            grid_sp_motion_cross(ap, J + 6 * c, dAdq + 6 * c);
            grid_sp_motion_cross(vp, dVdq + 6 * c, u);
            for (int r = 0; r < 6; r++) dAdq[6 * c + r] += u[r];
            grid_sp_motion_cross(vsum, J + 6 * c, dAdv + 6 * c);
        }

        /* Y_i: the body inertia in the world; h_i = Y v_i; f_i = Y a_i + v_i x* h_i - oMi.act_force(fext_i) */
        double I[36], h[6];
        grid_sp_inertia_matrix(&m->bodies[i].inertia, I);
        grid_sp_inertia_to_parent(xi, I, Yi);
        grid_sp_mat6_vec(Yi, vi, h);
        grid_sp_mat6_vec(Yi, ai, fi);
        grid_sp_force_cross(vi, h, t);
        for (int r = 0; r < 6; r++) fi[r] += t[r];
        if (fext) {
            grid_sp_force_act(xi, fext + 6 * i, t);
            for (int r = 0; r < 6; r++) fi[r] -= t[r];
        }

        /* D_i m = v_i x* (Y m) - Y (v_i x m) + m x* h_i, built column by column from unit motions */
        double hx[36];
        grid_sp_inertia_rate(Yi, vi, Di);
        grid_sp_force_cross_matrix(h, hx);
        for (int e = 0; e < 36; e++) Di[e] += hx[e];
    }
}

void grid_sp_world_at(const grid_model *m, double *work, grid_sp_world *w)
{
    const int nb = m->nb, nv = m->nv_full;
    w->liMi = work;
    w->oMi = w->liMi + 12 * nb;
    w->J = w->oMi + 12 * nb;
    w->dVdq = w->J + 6 * nv;
    w->dAdq = w->dVdq + 6 * nv;
    w->dAdv = w->dAdq + 6 * nv;
    w->vel = w->dAdv + 6 * nv;
    w->acc = w->vel + 6 * nb;
    w->F = w->acc + 6 * nb;
    w->Yc = w->F + 6 * nb;
    w->Dc = w->Yc + 36 * nb;
    assert(w->Dc + 36 * nb == work + grid_sp_work_derivatives(m));
}

void grid_ref_rnea_derivatives(const grid_model *m, const double *q, const double *v, const double *a,
                               const double *fext, double *out, double *work)
{
    const int nb = m->nb, nv = m->nv_full;
    assert(q && v && out && work);
    grid_sp_world w;
    grid_sp_world_at(m, work, &w);
    grid_sp_rnea_world_pass(m, q, v, a, fext, &w);
    const double *J = w.J, *dVdq = w.dVdq, *dAdq = w.dAdq, *dAdv = w.dAdv;
    double *F = w.F, *Yc = w.Yc, *Dc = w.Dc;

    /* backward pass, children first: Yc, Dc and F become sums over each subtree */
    for (int i = nb - 1; i >= 0; i--) {
        const int p = m->bodies[i].joint.parent;
        if (p < 0) continue;
        for (int r = 0; r < 36; r++) {
            Yc[36 * p + r] += Yc[36 * i + r];
            Dc[36 * p + r] += Dc[36 * i + r];
        }
        for (int r = 0; r < 6; r++) F[6 * p + r] += F[6 * i + r];
    }

    /* every pair of joints (j: the row's, k: the column's) */
    memset(out, 0, (size_t)nv * 2 * (size_t)nv * sizeof *out);
    for (int bj = 0; bj < nb; bj++) {
        const grid_joint *jj = &m->bodies[bj].joint;
        for (int bk = 0; bk < nb; bk++) {
            const grid_joint *jk = &m->bodies[bk].joint;
            /* jj in subtree(k): its own subtree's sums; jj a strict ancestor of k: k's, plus the transport of F_k */
            int body;
            if (grid_sp_ancestor_or_self(m, bk, bj)) body = bj;
            else if (grid_sp_ancestor_or_self(m, bj, bk)) body = bk;
            else continue; /* different branches */
            const int strict_ancestor = body == bk && bj != bk;
            const double *Yb = Yc + 36 * body, *Db = Dc + 36 * body;
            for (int ck = jk->iv; ck < jk->iv + jk->nv; ck++) {
                /* the force columns: d F / d q_ck and d F / d qd_ck */
                double fq[6] = {0}, fv[6] = {0};
                mat6_vec_acc(Yb, dAdq + 6 * ck, fq);
                mat6_vec_acc(Db, dVdq + 6 * ck, fq);
                mat6_vec_acc(Yb, dAdv + 6 * ck, fv);
                mat6_vec_acc(Db, J + 6 * ck, fv);
                if (strict_ancestor) {
                    double t[6];
                    grid_sp_force_cross(J + 6 * ck, F + 6 * bk, t);
                    for (int r = 0; r < 6; r++) fq[r] += t[r];
                }
                /* project on the row joint: J_j^T */
                for (int cj = jj->iv; cj < jj->iv + jj->nv; cj++) {
                    double sq = 0.0, sv = 0.0;
                    for (int r = 0; r < 6; r++) {
                        sq += J[6 * cj + r] * fq[r];
                        sv += J[6 * cj + r] * fv[r];
                    }
                    out[(size_t)cj * 2 * nv + ck] = sq;
                    out[(size_t)cj * 2 * nv + nv + ck] = sv;
                }
            }
        }
    }
}

size_t grid_sp_work_fd_derivatives(const grid_model *m)
{
    /* qdd, Minv, D, then room for whichever of forward dynamics, minv and the RNEA derivatives needs most */
    const size_t nv = (size_t)m->nv_full;
    size_t inner = grid_sp_work_forward_dynamics(m);
    if (grid_sp_work_minv(m) > inner) inner = grid_sp_work_minv(m);
    if (grid_sp_work_derivatives(m) > inner) inner = grid_sp_work_derivatives(m);
    return nv + nv * nv + 2 * nv * nv + inner;
}

void grid_ref_fd_derivatives(const grid_model *m, const double *q, const double *v, const double *u,
                             const double *fext, double *out, double *work)
{
    const size_t nv = (size_t)m->nv_full;
    double *qdd = work, *Minv = qdd + nv, *D = Minv + nv * nv, *inner = D + 2 * nv * nv;
    /* qdd = FD(q, v, u, fext); D = d rnea / d(q, v) at qdd; out = -M^-1 D */
    grid_ref_forward_dynamics(m, q, v, u, fext, qdd, inner);
    grid_ref_rnea_derivatives(m, q, v, qdd, fext, D, inner);
    grid_ref_minv(m, q, Minv, inner);
    for (size_t r = 0; r < nv; r++)
        for (size_t c = 0; c < 2 * nv; c++) {
            double s = 0.0;
            for (size_t k = 0; k < nv; k++) s += Minv[r * nv + k] * D[k * 2 * nv + c];
            out[r * 2 * nv + c] = -s;
        }
}

size_t grid_sp_work_ee_derivatives(const grid_model *m)
{
    /* the poses and one Jacobian, then the work of the pose and Jacobian functions */
    size_t inner = grid_sp_work_kinematics(m);
    if (grid_sp_work_jacobian(m) > inner) inner = grid_sp_work_jacobian(m);
    return 6 * (size_t)m->nee + 6 * (size_t)m->nv_full + inner;
}

/* the pose rows [d xyz; d rpy] (6 x nv, row-major, into o) of a frame's LOCAL_WORLD_ALIGNED Jacobian J at the pose
   (its rpy at pose[3..5]), for the point at r = R offset from the frame origin (world axes): its velocity is the
   origin's plus omega x r. R = Rz(y) Ry(p) Rx(r): omega = E [dr, dp, dy] with E = [Rz Ry e_x, Rz e_y, e_z]; its
   inverse below (infinite at cp = 0) */
static void pose_rows(int nv, const double *J, const double pose[6], const double r[3], double *o)
{
    const double p = pose[4], y = pose[5];
    const double sp = sin(p), cp = cos(p), sy = sin(y), cy = cos(y);
    for (int c = 0; c < nv; c++) {
        const double wx = J[3 * nv + c], wy = J[4 * nv + c], wz = J[5 * nv + c];
        const double dr = (cy * wx + sy * wy) / cp;
        o[c] = J[c] + (wy * r[2] - wz * r[1]);
        o[nv + c] = J[nv + c] + (wz * r[0] - wx * r[2]);
        o[2 * nv + c] = J[2 * nv + c] + (wx * r[1] - wy * r[0]);
        o[3 * nv + c] = dr;
        o[4 * nv + c] = -sy * wx + cy * wy;
        o[5 * nv + c] = wz + sp * dr;
    }
}

void grid_ref_ee_pose_derivatives(const grid_model *m, const double *q, double *out, double *work)
{
    const int nv = m->nv_full;
    const double zero[3] = {0, 0, 0};
    double *pose = work, *J = pose + 6 * m->nee, *inner = J + 6 * nv;
    grid_ref_end_effector_pose(m, q, pose, inner);
    for (int e = 0; e < m->nee; e++) {
        /* the frame's velocity in world axes: d xyz = J_linear dq, omega = J_angular dq */
        grid_ref_frame_jacobian(m, q, m->ee_frames[e], GRID_LOCAL_WORLD_ALIGNED, J, inner);
        pose_rows(nv, J, pose + 6 * e, zero, out + (size_t)6 * e * nv);
    }
}

void ref_row_ee_pose_runtime_grad(const grid_model *m, const double *const *in, double *const *out, const int *attr,
                                  double *work)
{
    (void)attr;
    const int nv = m->nv_full;
    const double *t = in[1];
    double pose[6], R[9], r[3], *J = work, *inner = J + 6 * nv;
    if (grid_ref_target_pose(m, in[0], t, pose, R, inner) != 0) {
        for (int k = 0; k < 6 * nv; k++) out[0][k] = NAN; /* not a frame id */
        return;
    }
    for (int k = 0; k < 3; k++) r[k] = R[3 * k] * t[1] + R[3 * k + 1] * t[2] + R[3 * k + 2] * t[3];
    grid_ref_frame_jacobian(m, in[0], (int)t[0], GRID_LOCAL_WORLD_ALIGNED, J, inner);
    pose_rows(nv, J, pose, r, out[0]);
}
