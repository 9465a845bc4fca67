/* The articulated-body algorithm (Featherstone, Pinocchio's local-frame form) as one program for both schedules. */
#include <stdlib.h>
#include <string.h>
#include "algos.h"

int ea_aba_program(ep_prog *p, int has_fext)
{
    const int VEL = ep_buffer(p, "vel", 6, 1), CB = ep_buffer(p, "cb", 6, 1), PA = ep_buffer(p, "pA", 6, 1);
    const int IA = ep_buffer(p, "IA", 36, 1), U = ep_buffer(p, "U", 36, 1), DINV = ep_buffer(p, "Dinv", 36, 1);
    const int UU = ep_buffer(p, "uu", 6, 1), ACC = ep_buffer(p, "acc", 6, 1);
    /* pass 1: velocities, bias accelerations c_i = v_i x S qd, bias forces v x* (I v) - fext */
    for (ep_bodies(p, 0); ep_next(p);) {
        sym_graph *g = ep_graph(p);
        const ek_body *b = ep_body(p, EP_I);
        const sv zero = sym_const(g, 0.0);
        sv qd[6], vj[6], t[6], Iv[6], vel[6], cb[6], IAi[36], pA[6];
        ep_comment(p, "velocities and bias forces");
        for (int c = 0; c < b->nv; c++) qd[c] = ep_in(p, ARR_V, EP_I, c);
        ek_joint_motion(g, b, qd, vj);
        if (ep_is_root(p, EP_I)) {
            memcpy(vel, vj, sizeof vj);
            for (int e = 0; e < 6; e++) cb[e] = zero;
        } else {
            sv vp[6];
            for (int e = 0; e < 6; e++) vp[e] = ep_get(p, VEL, EP_I, EP_PARENT, e);
            sp_motion_act_inv(g, ep_X(p, EP_I), vp, t);
            for (int e = 0; e < 6; e++) vel[e] = sym_add(g, t[e], vj[e]);
            sp_motion_cross(g, vel, vj, cb);
        }
        sp_body_inertia_matrix(g, b, IAi);
        sp_body_inertia_apply(g, b, vel, Iv);
        sp_force_cross(g, vel, Iv, pA);
        if (has_fext)
            for (int e = 0; e < 6; e++) pA[e] = sym_sub(g, pA[e], ep_in(p, ARR_FEXT, EP_I, e));
        for (int e = 0; e < 6; e++) {
            ep_set(p, VEL, EP_I, EP_SELF, e, vel[e]);
            ep_set(p, CB, EP_I, EP_SELF, e, cb[e]);
            ep_set(p, PA, EP_I, EP_SELF, e, pA[e]);
        }
        for (int e = 0; e < 36; e++) ep_set(p, IA, EP_I, EP_SELF, e, IAi[e]);
    }
    /* pass 2: articulated inertias and forces, leaves to root */
    for (ep_bodies(p, 1); ep_next(p);) {
        sym_graph *g = ep_graph(p);
        const ek_body *b = ep_body(p, EP_I);
        const int n = b->nv;
        const sv zero = sym_const(g, 0.0);
        sv IAi[36], U_[36] = {0}, Dinv[36] = {0}, pA[6], s[6], uu[6];
        ep_comment(p, "articulated inertia and force");
        for (int e = 0; e < 36; e++) IAi[e] = ep_get(p, IA, EP_I, EP_SELF, e);
        for (int e = 0; e < 6; e++) pA[e] = ep_get(p, PA, EP_I, EP_SELF, e);
        /* U = IA S, D = S^T U, u = tau - S^T pA */
        ea_joint_pieces(g, b, IAi, U_, Dinv);
        ek_joint_project(g, b, pA, s);
        for (int m = 0; m < n; m++) uu[m] = sym_sub(g, ep_in(p, ARR_A, EP_I, m), s[m]);
        for (int e = 0; e < 6 * n; e++) ep_set(p, U, EP_I, EP_SELF, e, U_[e]);
        for (int e = 0; e < n * n; e++) ep_set(p, DINV, EP_I, EP_SELF, e, Dinv[e]);
        for (int m = 0; m < n; m++) ep_set(p, UU, EP_I, EP_SELF, m, uu[m]);
        if (ep_is_root(p, EP_I)) continue;
        /* Ia = IA - U Dinv U^T (basis-vector S: its row and column are exactly zero),
           pa = pA + Ia c + U Dinv u */
        sv UD[36], Ia[36], pa[6], Iac[6], t[36], cb[6];
        ea_articulated_minus_joint(g, b, IAi, U_, Dinv, Ia, UD);
        for (int e = 0; e < 6; e++) cb[e] = ep_get(p, CB, EP_I, EP_SELF, e);
        sp_mat6_vec(g, Ia, cb, Iac);
        for (int e = 0; e < 6; e++) {
            sv x = sym_add(g, pA[e], Iac[e]);
            for (int m = 0; m < n; m++) x = sym_add(g, x, sym_mul(g, UD[6 * m + e], uu[m]));
            pa[e] = x;
        }
        ep_mat6_to_parent(p, EP_I, Ia, t);
        for (int e = 0; e < 36; e++) ep_set(p, IA, EP_I, EP_PARENT, e, sym_add(g, ep_get(p, IA, EP_I, EP_PARENT, e), t[e]));
        sp_force_act(g, ep_X(p, EP_I), pa, pa);
        for (int e = 0; e < 6; e++) ep_set(p, PA, EP_I, EP_PARENT, e, sym_add(g, ep_get(p, PA, EP_I, EP_PARENT, e), pa[e]));
        (void)zero;
    }
    /* pass 3: accelerations, root to leaves */
    for (ep_bodies(p, 0); ep_next(p);) {
        sym_graph *g = ep_graph(p);
        const ek_body *b = ep_body(p, EP_I);
        const int n = b->nv;
        const sv zero = sym_const(g, 0.0);
        sv a[6], ua[6], sq[6], ap[6], qdd[6], U_[36];
        ep_comment(p, "accelerations");
        if (ep_is_root(p, EP_I)) {
            const sv a0[6] = {zero, zero, sym_const(g, -ep_gravity(p)), zero, zero, zero};
            memcpy(ap, a0, sizeof ap);
        } else {
            for (int e = 0; e < 6; e++) ap[e] = ep_get(p, ACC, EP_I, EP_PARENT, e);
        }
        sp_motion_act_inv(g, ep_X(p, EP_I), ap, a);
        for (int e = 0; e < 6; e++) a[e] = sym_add(g, a[e], ep_get(p, CB, EP_I, EP_SELF, e));
        /* qdd = Dinv (u - U^T a) */
        for (int e = 0; e < 6 * n; e++) U_[e] = ep_get(p, U, EP_I, EP_SELF, e);
        for (int m = 0; m < n; m++) ua[m] = sym_sub(g, ep_get(p, UU, EP_I, EP_SELF, m), sym_dot(g, U_ + 6 * m, a, 6));
        for (int m = 0; m < n; m++) {
            sv x = zero;
            for (int j = 0; j < n; j++) x = sym_add(g, x, sym_mul(g, ep_get(p, DINV, EP_I, EP_SELF, n * m + j), ua[j]));
            qdd[m] = x;
            ep_out_vec(p, EP_I, m, x);
        }
        ek_joint_motion(g, b, qdd, sq);
        for (int e = 0; e < 6; e++) ep_set(p, ACC, EP_I, EP_SELF, e, sym_add(g, a[e], sq[e]));
    }
    return 0;
}

int ea_aba(ek_kin *k, const sv *v, const sv *u, const sv *fext, sv *qdd)
{
    const sv *in[ARR_OUT] = {NULL, v, u, fext, NULL};
    ep_prog *p = ep_new(k->em, k, 0, "aba", in, qdd, NULL, NULL, NULL);
    if (!p) return -1;
    int rc = ea_aba_program(p, fext != NULL);
    if (rc == 0) rc = ep_finish(p, NULL, NULL, NULL);
    ep_free(p);
    return rc;
}
