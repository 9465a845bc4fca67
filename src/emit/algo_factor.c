/* Articulated inertias without bias terms and their joint-space pieces U, D^-1: the factor of M^-1. */
#include <stdlib.h>
#include <string.h>
#include "algos.h"

void ea_factor_free(ea_factor *fa)
{
    free(fa->U);
    free(fa->Dinv);
    fa->U = NULL;
    fa->Dinv = NULL;
}

/* U = IA S (6 x n, by columns), Dinv = (S^T U)^-1 */
static void joint_pieces(sym_graph *g, const ek_body *b, const sv IA[36], sv U[36], sv Dinv[36])
{
    sv D[36];
    for (int c = 0; c < b->nv; c++) {
        sv s[6];
        for (int r = 0; r < 6; r++) s[r] = b->S[b->nv * r + c];
        sp_mat6_vec(g, IA, s, U + 6 * c);
    }
    for (int r = 0; r < b->nv; r++)
        for (int c = 0; c < b->nv; c++) {
            sv p[6];
            ek_joint_project(g, b, U + 6 * c, p);
            D[b->nv * r + c] = p[r];
        }
    if (b->nv == 1) Dinv[0] = sym_div(g, sym_const(g, 1.0), D[0]);
    else sp_spd_inverse(g, b->nv, D, Dinv);
}

/* Ia = IA - U Dinv U^T, with the row and column of a basis-vector S set to exact zero
   (Ia S = 0 holds analytically, so only rounding noise is dropped) */
static void articulated_minus_joint(sym_graph *g, const ek_body *b, const sv IA[36], const sv U[36],
                                    const sv Dinv[36], sv Ia[36])
{
    const int n = b->nv;
    sv UD[36];
    /* UD = U Dinv (6 x n, by columns) */
    for (int c = 0; c < n; c++)
        for (int r = 0; r < 6; r++) {
            sv s = sym_const(g, 0.0);
            for (int m = 0; m < n; m++) s = sym_add(g, s, sym_mul(g, U[6 * m + r], Dinv[n * m + c]));
            UD[6 * c + r] = s;
        }
    for (int r = 0; r < 6; r++)
        for (int c = r; c < 6; c++) {
            sv s = IA[6 * r + c];
            for (int m = 0; m < n; m++) s = sym_sub(g, s, sym_mul(g, UD[6 * m + r], U[6 * m + c]));
            if (b->s_basis >= 0 && (r == b->s_basis || c == b->s_basis)) s = sym_const(g, 0.0);
            Ia[6 * r + c] = Ia[6 * c + r] = s;
        }
}

int ea_factor_build(ek_kin *k, ea_factor *fa)
{
    sym_graph *g = k->g;
    const em_model *em = k->em;
    const int nb = em->nb;
    fa->U = ek_calloc((size_t)nb, sizeof *fa->U);
    fa->Dinv = ek_calloc((size_t)nb, sizeof *fa->Dinv);
    sv (*IA)[36] = ek_calloc((size_t)nb, sizeof *IA);
    if (!fa->U || !fa->Dinv || !IA) {
        ea_factor_free(fa);
        free(IA);
        return -1;
    }
    for (int i = 0; i < nb; i++) sp_body_inertia_matrix(g, &k->view[i], IA[i]);
    for (int i = nb - 1; i >= 0; i--) {
        const em_body *b = &em->b[i];
        ek_body_comment(g, em, i, "articulated inertia");
        joint_pieces(g, &k->view[i], IA[i], fa->U[i], fa->Dinv[i]);
        if (b->parent >= 0) {
            sv Ia[36], t[36];
            articulated_minus_joint(g, &k->view[i], IA[i], fa->U[i], fa->Dinv[i], Ia);
            ek_mat6_to_parent(k, i, Ia, t);
            for (int r = 0; r < 36; r++) IA[b->parent][r] = sym_add(g, IA[b->parent][r], t[r]);
        }
    }
    free(IA);
    return 0;
}
