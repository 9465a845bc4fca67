/* The articulated-body algorithm (Featherstone, Pinocchio's local-frame form) as one program for both schedules. */
#include <stdlib.h>
#include <assert.h>
#include <string.h>
#include "algos.h"

/* Mimic couplings (em_model.group_aba; the recursion of bench/coupled_aba_proto.py): a group member (EM_MEMBER, its
   leader included when the group hangs from a host) eliminates no coordinate. It hands its parent the composite
   X^T IA X and X^T (IA c + pA), as CRBA does, and three group terms: with ms = mult S,
       alpha = IA ms + AL,  AL_parent += X^T alpha,
       BE_parent += ms^T AL + BE + alpha^T ms,
       GA_parent += ms^T pA + GA - u + alpha^T c        (u: its own input, the group's at the leader, 0 elsewhere).
   The group's coordinate is eliminated where the group hangs: at its leader (EM_LEADER, every other member below it)
   with U = IA S + AL, D = S^T (IA S + AL) + S^T AL + BE, u = u - S^T pA - GA; or at the host body its top members
   hang from (EM_HOST), before the host's own step: IA -= AL AL^T / BE, pA -= AL GA / BE, and after the host's
   acceleration a, qdd_group = -(GA + AL^T a) / BE. A member's acceleration then adds mult S qdd_group. */
/* IA_parent += X^T M X (IA >= 0) and PA_parent += X^T f (PA >= 0): what a body hands its parent (articulated, or a
   member's composite) */
static void add_to_parent(ep_prog *p, sym_graph *g, int IA, int PA, const sv M[36], const sv f[6])
{
    sv t[36], y[6];
    if (IA >= 0) {
        ep_mat6_to_parent(p, EP_I, M, t);
        for (int e = 0; e < 36; e++) ep_set(p, IA, EP_I, EP_PARENT, e, sym_add(g, ep_get(p, IA, EP_I, EP_PARENT, e), t[e]));
    }
    if (PA >= 0) {
        sp_force_act(g, ep_X(p, EP_I), f, y);
        for (int e = 0; e < 6; e++) ep_set(p, PA, EP_I, EP_PARENT, e, sym_add(g, ep_get(p, PA, EP_I, EP_PARENT, e), y[e]));
    }
}

void ea_member_inertia(ep_prog *p, int IA, int AL, int BE, const sv IAi[36], sv ms[6], sv alpha[6])
{
    sym_graph *g = ep_graph(p);
    const ek_body *b = ep_body(p, EP_I);
    sv t[6], al[6], sal, y[6];
    assert(b->nv == 1 && !ep_is_root(p, EP_I));
    for (int e = 0; e < 6; e++) al[e] = ep_get(p, AL, EP_I, EP_SELF, e);
    ek_joint_motion(g, b, &b->mult, ms);
    sp_mat6_vec(g, IAi, ms, t);
    for (int e = 0; e < 6; e++) alpha[e] = sym_add(g, t[e], al[e]);
    ek_joint_project(g, b, al, &sal);
    const sv beta = sym_add(g, sym_mul(g, b->mult, sal), ep_get(p, BE, EP_I, EP_SELF, 0));
    add_to_parent(p, g, IA, -1, IAi, NULL);
    sp_force_act(g, ep_X(p, EP_I), alpha, y);
    for (int e = 0; e < 6; e++) ep_set(p, AL, EP_I, EP_PARENT, e, sym_add(g, ep_get(p, AL, EP_I, EP_PARENT, e), y[e]));
    ep_set(p, BE, EP_I, EP_PARENT, 0, sym_add(g, ep_get(p, BE, EP_I, EP_PARENT, 0), sym_add(g, beta, sym_dot(g, alpha, ms, 6))));
}

void ea_group_pieces(ep_prog *p, int role, int AL, int BE, sv IAi[36], sv U[36], sv Dinv[36], ek_body *bl)
{
    sym_graph *g = ep_graph(p);
    const ek_body *b = ep_body(p, EP_I);
    sv al[6];
    *bl = *b;
    if (role == EM_HOST || role == EM_LEADER)
        for (int e = 0; e < 6; e++) al[e] = ep_get(p, AL, EP_I, EP_SELF, e);
    if (role == EM_HOST) {
        /* the group hanging from this body first: IA -= AL AL^T / BE */
        const sv bi = sym_div(g, sym_const(g, 1.0), ep_get(p, BE, EP_I, EP_SELF, 0));
        for (int r = 0; r < 6; r++) {
            const sv ar = sym_mul(g, al[r], bi);
            for (int c = 0; c < 6; c++) IAi[6 * r + c] = sym_sub(g, IAi[6 * r + c], sym_mul(g, ar, al[c]));
        }
    }
    ea_joint_pieces(g, b, IAi, U, Dinv);
    if (role == EM_LEADER) {
        /* the group's coordinate here: U = IA S + AL, D = S^T U + S^T AL + BE */
        sv su, sal;
        assert(b->nv == 1);
        for (int e = 0; e < 6; e++) U[e] = sym_add(g, U[e], al[e]);
        ek_joint_project(g, b, U, &su);
        ek_joint_project(g, b, al, &sal);
        Dinv[0] = sym_div(g, sym_const(g, 1.0), sym_add(g, sym_add(g, su, sal), ep_get(p, BE, EP_I, EP_SELF, 0)));
        bl->s_basis = -1; /* Ia S = 0 holds for U = IA S only */
    }
}

int ea_aba_program(ep_prog *p, int has_fext, int coupled)
{
    if (coupled) ep_coupling_roles(p);
    const int VEL = ep_buffer(p, "vel", 6, 1), CB = ep_buffer(p, "cb", 6, 1), PA = ep_buffer(p, "pA", 6, 1);
    const int IA = ep_buffer(p, "IA", 36, 1), U = ep_buffer(p, "U", 36, 1), DINV = ep_buffer(p, "Dinv", 36, 1);
    const int UU = ep_buffer(p, "uu", 6, 1), ACC = ep_buffer(p, "acc", 6, 1);
    /* the group terms (a host keeps its group's in its own slots) and each member's group acceleration */
    const int AL = coupled ? ep_buffer(p, "AL", 6, 1) : -1, BE = coupled ? ep_buffer(p, "BE", 1, 1) : -1;
    const int GA = coupled ? ep_buffer(p, "GA", 1, 1) : -1, QG = coupled ? ep_buffer(p, "QG", 1, 1) : -1;
    /* pass 1: velocities, bias accelerations c_i = v_i x S qd, bias forces v x* (I v) - fext */
    for (ep_bodies(p, 0); ep_next(p);) {
        sym_graph *g = ep_graph(p);
        const ek_body *b = ep_body(p, EP_I);
        const sv zero = sym_const(g, 0.0);
        sv qd[6], vj[6], t[6], Iv[6], vel[6], cb[6], IAi[36], pA[6];
        ep_comment(p, "velocities and bias forces");
        for (int c = 0; c < b->nv; c++) qd[c] = ep_in(p, EP_V, EP_I, c);
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
            for (int e = 0; e < 6; e++) pA[e] = sym_sub(g, pA[e], ep_in(p, EP_F, EP_I, e));
        for (int e = 0; e < 6; e++) {
            ep_set(p, VEL, EP_I, EP_SELF, e, vel[e]);
            ep_set(p, CB, EP_I, EP_SELF, e, cb[e]);
            ep_set(p, PA, EP_I, EP_SELF, e, pA[e]);
        }
        for (int e = 0; e < 36; e++) ep_set(p, IA, EP_I, EP_SELF, e, IAi[e]);
        if (coupled) {
            for (int e = 0; e < 6; e++) ep_set(p, AL, EP_I, EP_SELF, e, zero);
            ep_set(p, BE, EP_I, EP_SELF, 0, zero);
            ep_set(p, GA, EP_I, EP_SELF, 0, zero);
        }
    }
    /* pass 2: articulated inertias and forces, leaves to root */
    for (ep_bodies(p, 1); ep_next(p);) {
        sym_graph *g = ep_graph(p);
        const ek_body *b = ep_body(p, EP_I);
        const int n = b->nv;
        const sv zero = sym_const(g, 0.0);
        sv IAi[36], U_[36] = {0}, Dinv[36] = {0}, pA[6], s[6], uu[6];
        const int role = coupled ? ep_role(p, EP_I) : EM_PLAIN;
        ep_comment(p, "articulated inertia and force");
        for (int e = 0; e < 36; e++) IAi[e] = ep_get(p, IA, EP_I, EP_SELF, e);
        for (int e = 0; e < 6; e++) pA[e] = ep_get(p, PA, EP_I, EP_SELF, e);
        sv al[6], be = zero, ga = zero;
        if (role != EM_PLAIN) {
            for (int e = 0; e < 6; e++) al[e] = ep_get(p, AL, EP_I, EP_SELF, e);
            be = ep_get(p, BE, EP_I, EP_SELF, 0);
            ga = ep_get(p, GA, EP_I, EP_SELF, 0);
        }
        if (role == EM_MEMBER) {
            /* no coordinate of its own: the composite and the group terms to the parent */
            sv ms[6], alpha[6], spa, cb[6], f[6];
            ea_member_inertia(p, IA, AL, BE, IAi, ms, alpha);
            for (int e = 0; e < 6; e++) cb[e] = ep_get(p, CB, EP_I, EP_SELF, e);
            sp_mat6_vec(g, IAi, cb, f);
            for (int e = 0; e < 6; e++) f[e] = sym_add(g, f[e], pA[e]);
            add_to_parent(p, g, -1, PA, NULL, f);
            /* gamma = ms^T pA + GA - u */
            ek_joint_project(g, b, pA, &spa);
            const sv gamma = sym_sub(g, sym_add(g, sym_mul(g, b->mult, spa), ga), ep_in(p, EP_A, EP_I, 0));
            ep_set(p, GA, EP_I, EP_PARENT, 0,
                   sym_add(g, ep_get(p, GA, EP_I, EP_PARENT, 0), sym_add(g, gamma, sym_dot(g, alpha, cb, 6))));
            continue;
        }
        if (role == EM_HOST) {
            /* the group hanging from this body first: pA -= AL GA / BE (IA: below) */
            const sv w = sym_div(g, ga, be);
            for (int r = 0; r < 6; r++) pA[r] = sym_sub(g, pA[r], sym_mul(g, al[r], w));
        }
        /* U = IA S, D = S^T U (a host's and a leader's group in them), u = tau - S^T pA (a leader's: - GA) */
        ek_body bl;
        ea_group_pieces(p, role, AL, BE, IAi, U_, Dinv, &bl);
        ek_joint_project(g, b, pA, s);
        for (int m = 0; m < n; m++) uu[m] = sym_sub(g, ep_in(p, EP_A, EP_I, m), s[m]);
        if (role == EM_LEADER) uu[0] = sym_sub(g, uu[0], ga);
        for (int e = 0; e < 6 * n; e++) ep_set(p, U, EP_I, EP_SELF, e, U_[e]);
        for (int e = 0; e < n * n; e++) ep_set(p, DINV, EP_I, EP_SELF, e, Dinv[e]);
        for (int m = 0; m < n; m++) ep_set(p, UU, EP_I, EP_SELF, m, uu[m]);
        if (ep_is_root(p, EP_I)) continue;
        /* Ia = IA - U Dinv U^T (basis-vector S: its row and column are exactly zero),
           pa = pA + Ia c + U Dinv u */
        sv UD[36], Ia[36], pa[6], Iac[6], cb[6];
        ea_articulated_minus_joint(g, &bl, IAi, U_, Dinv, Ia, UD);
        for (int e = 0; e < 6; e++) cb[e] = ep_get(p, CB, EP_I, EP_SELF, e);
        sp_mat6_vec(g, Ia, cb, Iac);
        for (int e = 0; e < 6; e++) {
            sv x = sym_add(g, pA[e], Iac[e]);
            for (int m = 0; m < n; m++) x = sym_add(g, x, sym_mul(g, UD[6 * m + e], uu[m]));
            pa[e] = x;
        }
        add_to_parent(p, g, IA, PA, Ia, pa);
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
        const int role = coupled ? ep_role(p, EP_I) : EM_PLAIN;
        if (role == EM_MEMBER) {
            /* the group's acceleration, from the parent (the leader, another member or the host) */
            const sv qg = ep_get(p, QG, EP_I, EP_PARENT, 0), x = sym_mul(g, b->mult, qg);
            ep_set(p, QG, EP_I, EP_SELF, 0, qg);
            ep_out(p, x, ep_coord(EP_I, EP_SELF, 0));
            ek_joint_motion(g, b, &x, sq);
            for (int e = 0; e < 6; e++) ep_set(p, ACC, EP_I, EP_SELF, e, sym_add(g, a[e], sq[e]));
            continue;
        }
        /* qdd = Dinv (u - U^T a) */
        for (int e = 0; e < 6 * n; e++) U_[e] = ep_get(p, U, EP_I, EP_SELF, e);
        for (int m = 0; m < n; m++) ua[m] = sym_sub(g, ep_get(p, UU, EP_I, EP_SELF, m), sym_dot(g, U_ + 6 * m, a, 6));
        for (int m = 0; m < n; m++) {
            sv x = zero;
            for (int j = 0; j < n; j++) x = sym_add(g, x, sym_mul(g, ep_get(p, DINV, EP_I, EP_SELF, n * m + j), ua[j]));
            qdd[m] = x;
            ep_out(p, x, ep_coord(EP_I, EP_SELF, m));
        }
        ek_joint_motion(g, b, qdd, sq);
        for (int e = 0; e < 6; e++) ep_set(p, ACC, EP_I, EP_SELF, e, sym_add(g, a[e], sq[e]));
        if (role == EM_LEADER) ep_set(p, QG, EP_I, EP_SELF, 0, qdd[0]);
        if (role == EM_HOST) {
            /* the hanging group's coordinate from this body's acceleration: qdd = -(GA + AL^T a) / BE */
            sv ah[6], al[6];
            for (int e = 0; e < 6; e++) ah[e] = sym_add(g, a[e], sq[e]);
            for (int e = 0; e < 6; e++) al[e] = ep_get(p, AL, EP_I, EP_SELF, e);
            const sv x = sym_add(g, ep_get(p, GA, EP_I, EP_SELF, 0), sym_dot(g, al, ah, 6));
            ep_set(p, QG, EP_I, EP_SELF, 0, sym_neg(g, sym_div(g, x, ep_get(p, BE, EP_I, EP_SELF, 0))));
        }
    }
    return 0;
}
