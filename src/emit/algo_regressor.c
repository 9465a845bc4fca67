/* The joint torque regressor Y (tau = Y pi) as one program for both schedules: body regressors carried up the tree. */
#include "emit_ctx.h"

/* f = A pi of one body at local velocity v and acceleration a (gravity included), A 6 x 10 column-major (column p at
   6 p), pi = (m, h = m c, Ixx Ixy Iyy Ixz Iyz Izz about the body origin): with a' = a_lin + w x v_lin,
   f_lin = m a' + alpha x h + w x (w x h), n = h x a' + I alpha + w x (I w) */
static void body_regressor(sym_graph *g, const sv v[6], const sv a[6], sv A[60])
{
    const sv zero = sym_const(g, 0.0), one = sym_const(g, 1.0);
    const sv *w = v + 3, *alpha = a + 3;
    sv wxv[3], ap[3];
    sp_cross(g, w, v, wxv);
    for (int r = 0; r < 3; r++) ap[r] = sym_add(g, a[r], wxv[r]);
    for (int e = 0; e < 60; e++) A[e] = zero;
    for (int r = 0; r < 3; r++) A[r] = ap[r];
    for (int k = 0; k < 3; k++) {
        sv e[3], axe[3], wxe[3], wwxe[3];
        for (int r = 0; r < 3; r++) e[r] = r == k ? one : zero;
        sp_cross(g, alpha, e, axe);
        sp_cross(g, w, e, wxe);
        sp_cross(g, w, wxe, wwxe);
        sv *col = A + 6 * (1 + k);
        for (int r = 0; r < 3; r++) col[r] = sym_add(g, axe[r], wwxe[r]);
        sp_cross(g, e, ap, col + 3);
    }
    /* the inertia's entries (Ixx, Ixy, Iyy, Ixz, Iyz, Izz): I x = L(x) of them; n = L(alpha) + w x L(w) */
    static const int rc[6][2][2] = {{{0, 0}, {-1, -1}}, {{0, 1}, {1, 0}}, {{1, 1}, {-1, -1}},
                                    {{0, 2}, {2, 0}}, {{1, 2}, {2, 1}}, {{2, 2}, {-1, -1}}};
    for (int p = 0; p < 6; p++) {
        sv la[3] = {zero, zero, zero}, lw[3] = {zero, zero, zero}, wxl[3];
        for (int s = 0; s < 2 && rc[p][s][0] >= 0; s++) {
            la[rc[p][s][0]] = alpha[rc[p][s][1]];
            lw[rc[p][s][0]] = w[rc[p][s][1]];
        }
        sp_cross(g, w, lw, wxl);
        for (int r = 0; r < 3; r++) A[6 * (4 + p) + 3 + r] = sym_add(g, la[r], wxl[r]);
    }
}

/* Y (nv x nb x 10, computeJointTorqueRegressor): per body i its local velocity and acceleration (a_0 = -gravity);
   then its regressor A_i, Y[i][i] = S_i^T A_i, and A_i carried to each ancestor j (W = jX^* W through the chain's
   children): Y[j][i] = S_j^T W. Pairs off one chain stay zero. */
EMIT_PROGRAM(ea_inverse_dynamics_regressor_program)
{
    (void)sp;
    const int VEL = ep_buffer(p, "vel", 6, 1), ACC = ep_buffer(p, "acc", 6, 1), W = ep_buffer(p, "W", 60, 0);
    const int dims[3] = {cx->em->nv, cx->em->nb, 10};
    ep_out_shape(p, 3, dims);
    ep_zero_output(p);
    for (ep_bodies(p, 0); ep_next(p);) {
        sym_graph *g = ep_graph(p);
        const ek_body *b = ep_body(p, EP_I);
        const sxf *X = ep_X(p, EP_I);
        sv vel[6], acc[6], qd[6], qdd[6], vj[6], aj[6], t[6];
        ep_comment(p, "joint torque regressor: body velocities and accelerations");
        ep_body_velocity(p, VEL, vel);
        for (int c = 0; c < b->nv; c++) {
            qd[c] = ep_in(p, EP_V, EP_I, c);
            qdd[c] = ep_in(p, EP_A, EP_I, c);
        }
        ek_joint_motion(g, b, qd, vj);
        ek_joint_motion(g, b, qdd, aj);
        /* a_i = liMi^-1 a_p + S qdd + v_i x S qd, a_0 = (0, 0, -g, 0, 0, 0) */
        if (ep_is_root(p, EP_I)) {
            const sv zero = sym_const(g, 0.0);
            const sv a0[6] = {zero, zero, sym_const(g, -ep_gravity(p)), zero, zero, zero};
            sp_motion_act_inv(g, X, a0, t);
            for (int r = 0; r < 6; r++) acc[r] = sym_add(g, t[r], aj[r]);
        } else {
            sv ap[6], c[6];
            for (int r = 0; r < 6; r++) ap[r] = ep_get(p, ACC, EP_I, EP_PARENT, r);
            sp_motion_act_inv(g, X, ap, t);
            sp_motion_cross(g, vel, vj, c);
            for (int r = 0; r < 6; r++) acc[r] = sym_add(g, sym_add(g, t[r], aj[r]), c[r]);
        }
        for (int r = 0; r < 6; r++) ep_set(p, ACC, EP_I, EP_SELF, r, acc[r]);
    }
    /* (a second pass: the ancestors loop reads placements the first one computed) */
    for (ep_bodies(p, 0); ep_next(p);) {
        sym_graph *g = ep_graph(p);
        const ek_body *b = ep_body(p, EP_I);
        sv vel[6], acc[6], A[60];
        ep_comment(p, "joint torque regressor: the body's regressor, its block and its ancestors'");
        for (int r = 0; r < 6; r++) {
            vel[r] = ep_get(p, VEL, EP_I, EP_SELF, r);
            acc[r] = ep_get(p, ACC, EP_I, EP_SELF, r);
        }
        body_regressor(g, vel, acc, A);
        for (int k = 0; k < 10; k++) {
            sv col[6];
            ek_joint_project(g, b, A + 6 * k, col);
            for (int r = 0; r < b->nv; r++) ep_out(p, col[r], ep_coord(EP_I, EP_SELF, r), ep_body_ix(EP_I), ep_at(k));
        }
        for (int e = 0; e < 60; e++) ep_set(p, W, EP_I, EP_SELF, e, A[e]);
        for (ep_ancestors(p, 0); ep_next(p);) {
            sym_graph *ga = ep_graph(p);
            const ek_body *ba = ep_body(p, EP_J);
            const sxf *Xc = ep_X_child(p);
            for (int k = 0; k < 10; k++) {
                sv f[6], col[6];
                for (int r = 0; r < 6; r++) f[r] = ep_get(p, W, EP_I, EP_SELF, 6 * k + r);
                sp_force_act(ga, Xc, f, f);
                ek_joint_project(ga, ba, f, col);
                for (int r = 0; r < ba->nv; r++)
                    ep_out(p, col[r], ep_coord(EP_J, EP_SELF, r), ep_body_ix(EP_I), ep_at(k));
                for (int r = 0; r < 6; r++) ep_set(p, W, EP_I, EP_SELF, 6 * k + r, f[r]);
            }
        }
    }
    return 0;
}
