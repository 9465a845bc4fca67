/* Recursive Newton-Euler inverse dynamics (Pinocchio's local-frame form) as a symbolic builder. */
#include <stdlib.h>
#include "algos.h"

int ea_rnea(ek_kin *k, const sv *v, const sv *a, const sv *fext, sv *tau)
{
    sym_graph *g = k->g;
    const em_model *em = k->em;
    const int nb = em->nb;
    sv (*vel)[6] = ek_calloc((size_t)nb, sizeof *vel);
    sv (*acc)[6] = ek_calloc((size_t)nb, sizeof *acc);
    sv (*f)[6] = ek_calloc((size_t)nb, sizeof *f);
    if (!vel || !acc || !f) {
        free(vel);
        free(acc);
        free(f);
        return -1;
    }
    const sv zero = sym_const(g, 0.0);
    const sv zeros[6] = {zero, zero, zero, zero, zero, zero};
    /* the root's acceleration is minus gravity: a_0 = (0, 0, -g, 0, 0, 0) */
    const sv a0[6] = {zero, zero, sym_const(g, -em->gravity), zero, zero, zero};

    for (int i = 0; i < nb; i++) {
        const em_body *b = &em->b[i];
        sv vj[6], aj[6], t[6], Iv[6], vxIv[6];
        ek_body_comment(g, em, i, "forward pass");
        /* joint velocity S qd and acceleration S qdd */
        ek_joint_motion(g, b, v ? v + b->iv : zeros, vj);
        ek_joint_motion(g, b, a ? a + b->iv : zeros, aj);
        if (b->parent < 0) {
            /* v_i = S qd; a_i = liMi^-1 a_0 + S qdd (v_i x S qd vanishes) */
            for (int r = 0; r < 6; r++) vel[i][r] = vj[r];
            sp_motion_act_inv(g, &k->X[i], a0, t);
            for (int r = 0; r < 6; r++) acc[i][r] = sym_add(g, t[r], aj[r]);
        } else {
            /* v_i = liMi^-1 v_p + S qd; a_i = liMi^-1 a_p + S qdd + v_i x S qd */
            sv c[6];
            sp_motion_act_inv(g, &k->X[i], vel[b->parent], t);
            for (int r = 0; r < 6; r++) vel[i][r] = sym_add(g, t[r], vj[r]);
            sp_motion_act_inv(g, &k->X[i], acc[b->parent], t);
            sp_motion_cross(g, vel[i], vj, c);
            for (int r = 0; r < 6; r++) acc[i][r] = sym_add(g, sym_add(g, t[r], aj[r]), c[r]);
        }
        /* f_i = I a_i + v_i x* (I v_i) - fext_i */
        sp_body_inertia_apply(g, b, acc[i], f[i]);
        sp_body_inertia_apply(g, b, vel[i], Iv);
        sp_force_cross(g, vel[i], Iv, vxIv);
        for (int r = 0; r < 6; r++) {
            f[i][r] = sym_add(g, f[i][r], vxIv[r]);
            if (fext) f[i][r] = sym_sub(g, f[i][r], fext[6 * i + r]);
        }
    }
    for (int i = nb - 1; i >= 0; i--) {
        const em_body *b = &em->b[i];
        ek_body_comment(g, em, i, "backward pass");
        /* tau_i = S^T f_i; the parent takes liMi f_i */
        ek_joint_project(g, b, f[i], tau + b->iv);
        if (b->parent >= 0) {
            sv t[6];
            sp_force_act(g, &k->X[i], f[i], t);
            for (int r = 0; r < 6; r++) f[b->parent][r] = sym_add(g, f[b->parent][r], t[r]);
        }
    }
    free(vel);
    free(acc);
    free(f);
    return 0;
}
