/* Forward dynamics M^-1 (u - c): the RNEA bias, then Carpentier's factor applied to one vector. */
#include <stdlib.h>
#include "algos.h"

int ea_fd(ek_kin *k, const sv *v, const sv *u, const sv *fext, sv *qdd)
{
    sym_graph *g = k->g;
    const em_model *em = k->em;
    const int nb = em->nb, nv = em->nv;
    ea_factor fa = {0};
    sv *r = ek_calloc((size_t)nv, sizeof *r);
    sv *y = ek_calloc((size_t)nv, sizeof *y);
    sv (*pA)[6] = ek_calloc((size_t)nb, sizeof *pA);
    sv (*acc)[6] = ek_calloc((size_t)nb, sizeof *acc);
    int rc = -1;
    if (!r || !y || !pA || !acc) goto done;
    /* r = u - rnea(q, v, 0, fext) */
    if (ea_rnea(k, v, NULL, fext, r) != 0) goto done;
    for (int i = 0; i < nv; i++) r[i] = sym_sub(g, u[i], r[i]);
    if (ea_factor_build(k, &fa) != 0) goto done;

    const sv zero = sym_const(g, 0.0);
    for (int i = 0; i < nb; i++)
        for (int m = 0; m < 6; m++) pA[i][m] = zero;
    /* backward: y_i = Dinv_i (r_i - S_i^T pA_i); the parent takes liMi (pA_i + U_i y_i) */
    for (int i = nb - 1; i >= 0; i--) {
        const em_body *b = &em->b[i];
        const int n = b->nv;
        sv s[6], w[6];
        ek_body_comment(g, em, i, "backward substitution");
        ek_joint_project(g, &k->view[i], pA[i], s);
        for (int m = 0; m < n; m++) s[m] = sym_sub(g, r[b->iv + m], s[m]);
        for (int m = 0; m < n; m++) {
            sv t = zero;
            for (int j = 0; j < n; j++) t = sym_add(g, t, sym_mul(g, fa.Dinv[i][n * m + j], s[j]));
            y[b->iv + m] = t;
        }
        if (b->parent >= 0) {
            for (int e = 0; e < 6; e++) {
                w[e] = pA[i][e];
                for (int m = 0; m < n; m++) w[e] = sym_add(g, w[e], sym_mul(g, fa.U[i][6 * m + e], y[b->iv + m]));
            }
            sp_force_act(g, &k->X[i], w, w);
            for (int e = 0; e < 6; e++) pA[b->parent][e] = sym_add(g, pA[b->parent][e], w[e]);
        }
    }
    /* forward: a_i = liMi^-1 a_p; qdd_i = y_i - Dinv_i U_i^T a_i; a_i += S_i qdd_i */
    for (int i = 0; i < nb; i++) {
        const em_body *b = &em->b[i];
        const int n = b->nv;
        sv a[6], ua[6], sq[6];
        ek_body_comment(g, em, i, "forward substitution");
        if (b->parent >= 0) sp_motion_act_inv(g, &k->X[i], acc[b->parent], a);
        else
            for (int e = 0; e < 6; e++) a[e] = zero;
        for (int m = 0; m < n; m++) ua[m] = sym_dot(g, fa.U[i] + 6 * m, a, 6);
        for (int m = 0; m < n; m++) {
            sv t = zero;
            for (int j = 0; j < n; j++) t = sym_add(g, t, sym_mul(g, fa.Dinv[i][n * m + j], ua[j]));
            qdd[b->iv + m] = sym_sub(g, y[b->iv + m], t);
        }
        ek_joint_motion(g, &k->view[i], qdd + b->iv, sq);
        for (int e = 0; e < 6; e++) acc[i][e] = sym_add(g, a[e], sq[e]);
    }
    rc = 0;
done:
    ea_factor_free(&fa);
    free(r);
    free(y);
    free(pA);
    free(acc);
    return rc;
}
