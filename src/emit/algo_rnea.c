/* Recursive Newton-Euler inverse dynamics (Pinocchio's local-frame form) as one program for both schedules. */
#include <stdlib.h>
#include "algos.h"

int ea_rnea_program(ep_prog *p, int has_v, int has_a, int has_fext, int tau_buf)
{
    const int VEL = ep_buffer(p, "vel", 6, 1), ACC = ep_buffer(p, "acc", 6, 1), F = ep_buffer(p, "f", 6, 1);
    for (ep_bodies(p, 0); ep_next(p);) {
        sym_graph *g = ep_graph(p);
        const ek_body *b = ep_body(p, EP_I);
        const sxf *X = ep_X(p, EP_I);
        const sv zero = sym_const(g, 0.0);
        const double gravity = ep_gravity(p);
        sv qd[6], qdd[6], vj[6], aj[6], vel[6], acc[6], t[6], f[6], Iv[6], vxIv[6];
        ep_comment(p, "forward pass");
        /* joint velocity S qd and acceleration S qdd */
        for (int c = 0; c < b->nv; c++) {
            qd[c] = has_v ? ep_in(p, EP_V, EP_I, c) : zero;
            qdd[c] = has_a ? ep_in(p, EP_A, EP_I, c) : zero;
        }
        ek_joint_motion(g, b, qd, vj);
        ek_joint_motion(g, b, qdd, aj);
        if (ep_is_root(p, EP_I)) {
            /* v_i = S qd; a_i = liMi^-1 a_0 + S qdd with a_0 = (0, 0, -g, 0, 0, 0) (v_i x S qd vanishes) */
            const sv a0[6] = {zero, zero, sym_const(g, -gravity), zero, zero, zero};
            for (int r = 0; r < 6; r++) vel[r] = vj[r];
            sp_motion_act_inv(g, X, a0, t);
            for (int r = 0; r < 6; r++) acc[r] = sym_add(g, t[r], aj[r]);
        } else {
            /* v_i = liMi^-1 v_p + S qd; a_i = liMi^-1 a_p + S qdd + v_i x S qd */
            sv vp[6], ap[6], c[6];
            for (int r = 0; r < 6; r++) vp[r] = ep_get(p, VEL, EP_I, EP_PARENT, r);
            for (int r = 0; r < 6; r++) ap[r] = ep_get(p, ACC, EP_I, EP_PARENT, r);
            sp_motion_act_inv(g, X, vp, t);
            for (int r = 0; r < 6; r++) vel[r] = sym_add(g, t[r], vj[r]);
            sp_motion_act_inv(g, X, ap, t);
            sp_motion_cross(g, vel, vj, c);
            for (int r = 0; r < 6; r++) acc[r] = sym_add(g, sym_add(g, t[r], aj[r]), c[r]);
        }
        /* f_i = I a_i + v_i x* (I v_i) - fext_i */
        sp_body_inertia_apply(g, b, acc, f);
        sp_body_inertia_apply(g, b, vel, Iv);
        sp_force_cross(g, vel, Iv, vxIv);
        for (int r = 0; r < 6; r++) {
            f[r] = sym_add(g, f[r], vxIv[r]);
            if (has_fext) f[r] = sym_sub(g, f[r], ep_in(p, EP_F, EP_I, r));
        }
        for (int r = 0; r < 6; r++) {
            ep_set(p, VEL, EP_I, EP_SELF, r, vel[r]);
            ep_set(p, ACC, EP_I, EP_SELF, r, acc[r]);
            ep_set(p, F, EP_I, EP_SELF, r, f[r]);
        }
    }
    for (ep_bodies(p, 1); ep_next(p);) {
        sym_graph *g = ep_graph(p);
        const ek_body *b = ep_body(p, EP_I);
        sv f[6], tau[6];
        ep_comment(p, "backward pass");
        /* tau_i = S^T f_i; the parent takes liMi f_i */
        for (int r = 0; r < 6; r++) f[r] = ep_get(p, F, EP_I, EP_SELF, r);
        ek_joint_project(g, b, f, tau);
        for (int c = 0; c < b->nv; c++) {
            if (tau_buf >= 0) ep_set(p, tau_buf, EP_I, EP_SELF, c, tau[c]);
            else ep_out(p, tau[c], ep_coord(EP_I, EP_SELF, c));
        }
        if (!ep_is_root(p, EP_I)) {
            sv t[6];
            sp_force_act(g, ep_X(p, EP_I), f, t);
            for (int r = 0; r < 6; r++)
                ep_set(p, F, EP_I, EP_PARENT, r, sym_add(g, ep_get(p, F, EP_I, EP_PARENT, r), t[r]));
        }
    }
    return 0;
}
