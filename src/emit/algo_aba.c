/* The articulated-body algorithm (Featherstone, Pinocchio's local-frame form) as a symbolic builder. */
#include <stdlib.h>
#include <string.h>
#include "algos.h"

int ea_aba(ek_kin *k, const sv *v, const sv *u, const sv *fext, sv *qdd)
{
    sym_graph *g = k->g;
    const em_model *em = k->em;
    const int nb = em->nb;
    sv (*vel)[6] = ek_calloc((size_t)nb, sizeof *vel);
    sv (*cb)[6] = ek_calloc((size_t)nb, sizeof *cb);
    sv (*pA)[6] = ek_calloc((size_t)nb, sizeof *pA);
    sv (*acc)[6] = ek_calloc((size_t)nb, sizeof *acc);
    sv (*IA)[36] = ek_calloc((size_t)nb, sizeof *IA);
    sv (*U)[36] = ek_calloc((size_t)nb, sizeof *U);
    sv (*Dinv)[36] = ek_calloc((size_t)nb, sizeof *Dinv);
    sv (*uu)[6] = ek_calloc((size_t)nb, sizeof *uu);
    int rc = -1;
    if (!vel || !cb || !pA || !acc || !IA || !U || !Dinv || !uu) goto done;
    const sv zero = sym_const(g, 0.0);
    const sv a0[6] = {zero, zero, sym_const(g, -em->gravity), zero, zero, zero};

    /* pass 1: velocities, bias accelerations c_i = v_i x S qd, bias forces v x* (I v) - fext */
    for (int i = 0; i < nb; i++) {
        const em_body *b = &em->b[i];
        sv vj[6], t[6], Iv[6];
        ek_body_comment(g, em, i, "velocities and bias forces");
        ek_joint_motion(g, &k->view[i], v + b->iv, vj);
        if (b->parent < 0) {
            memcpy(vel[i], vj, sizeof vj);
            for (int e = 0; e < 6; e++) cb[i][e] = zero;
        } else {
            sp_motion_act_inv(g, &k->X[i], vel[b->parent], t);
            for (int e = 0; e < 6; e++) vel[i][e] = sym_add(g, t[e], vj[e]);
            sp_motion_cross(g, vel[i], vj, cb[i]);
        }
        sp_body_inertia_matrix(g, &k->view[i], IA[i]);
        sp_body_inertia_apply(g, &k->view[i], vel[i], Iv);
        sp_force_cross(g, vel[i], Iv, pA[i]);
        if (fext)
            for (int e = 0; e < 6; e++) pA[i][e] = sym_sub(g, pA[i][e], fext[6 * i + e]);
    }
    /* pass 2: articulated inertias and forces, leaves to root */
    for (int i = nb - 1; i >= 0; i--) {
        const em_body *b = &em->b[i];
        const int n = b->nv;
        sv D[36], s[6];
        ek_body_comment(g, em, i, "articulated inertia and force");
        /* U = IA S, D = S^T U, u = tau - S^T pA */
        for (int c = 0; c < n; c++) {
            sv sc[6];
            for (int e = 0; e < 6; e++) sc[e] = k->view[i].S[n * e + c];
            sp_mat6_vec(g, IA[i], sc, U[i] + 6 * c);
        }
        for (int c = 0; c < n; c++) {
            sv p[6];
            ek_joint_project(g, &k->view[i], U[i] + 6 * c, p);
            for (int r = 0; r < n; r++) D[n * r + c] = p[r];
        }
        if (n == 1) Dinv[i][0] = sym_div(g, sym_const(g, 1.0), D[0]);
        else sp_spd_inverse(g, n, D, Dinv[i]);
        ek_joint_project(g, &k->view[i], pA[i], s);
        for (int m = 0; m < n; m++) uu[i][m] = sym_sub(g, u[b->iv + m], s[m]);
        if (b->parent < 0) continue;
        /* Ia = IA - U Dinv U^T (basis-vector S: its row and column are exactly zero),
           pa = pA + Ia c + U Dinv u */
        sv UD[36], Ia[36], pa[6], Iac[6], t[36];
        for (int c = 0; c < n; c++)
            for (int e = 0; e < 6; e++) {
                sv x = zero;
                for (int m = 0; m < n; m++) x = sym_add(g, x, sym_mul(g, U[i][6 * m + e], Dinv[i][n * m + c]));
                UD[6 * c + e] = x;
            }
        for (int r = 0; r < 6; r++)
            for (int c = r; c < 6; c++) {
                sv x = IA[i][6 * r + c];
                for (int m = 0; m < n; m++) x = sym_sub(g, x, sym_mul(g, UD[6 * m + r], U[i][6 * m + c]));
                if (b->s_basis >= 0 && (r == b->s_basis || c == b->s_basis)) x = zero;
                Ia[6 * r + c] = Ia[6 * c + r] = x;
            }
        sp_mat6_vec(g, Ia, cb[i], Iac);
        for (int e = 0; e < 6; e++) {
            sv x = sym_add(g, pA[i][e], Iac[e]);
            for (int m = 0; m < n; m++) x = sym_add(g, x, sym_mul(g, UD[6 * m + e], uu[i][m]));
            pa[e] = x;
        }
        ek_mat6_to_parent(k, i, Ia, t);
        for (int e = 0; e < 36; e++) IA[b->parent][e] = sym_add(g, IA[b->parent][e], t[e]);
        sp_force_act(g, &k->X[i], pa, pa);
        for (int e = 0; e < 6; e++) pA[b->parent][e] = sym_add(g, pA[b->parent][e], pa[e]);
    }
    /* pass 3: accelerations, root to leaves */
    for (int i = 0; i < nb; i++) {
        const em_body *b = &em->b[i];
        const int n = b->nv;
        sv a[6], ua[6], sq[6];
        ek_body_comment(g, em, i, "accelerations");
        sp_motion_act_inv(g, &k->X[i], b->parent >= 0 ? acc[b->parent] : a0, a);
        for (int e = 0; e < 6; e++) a[e] = sym_add(g, a[e], cb[i][e]);
        /* qdd = Dinv (u - U^T a) */
        for (int m = 0; m < n; m++) ua[m] = sym_sub(g, uu[i][m], sym_dot(g, U[i] + 6 * m, a, 6));
        for (int m = 0; m < n; m++) {
            sv x = zero;
            for (int j = 0; j < n; j++) x = sym_add(g, x, sym_mul(g, Dinv[i][n * m + j], ua[j]));
            qdd[b->iv + m] = x;
        }
        ek_joint_motion(g, &k->view[i], qdd + b->iv, sq);
        for (int e = 0; e < 6; e++) acc[i][e] = sym_add(g, a[e], sq[e]);
    }
    rc = 0;
done:
    free(vel);
    free(cb);
    free(pA);
    free(acc);
    free(IA);
    free(U);
    free(Dinv);
    free(uu);
    return rc;
}
