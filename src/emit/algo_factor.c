/* Articulated inertias without bias terms and their joint-space pieces U, D^-1: the factor of M^-1, as a program. */
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
void ea_joint_pieces(sym_graph *g, const ek_body *b, const sv IA[36], sv U[36], sv Dinv[36])
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
   (Ia S = 0 holds analytically, so only rounding noise is dropped); UD = U Dinv when UD is not NULL */
void ea_articulated_minus_joint(sym_graph *g, const ek_body *b, const sv IA[36], const sv U[36], const sv Dinv[36],
                                sv Ia[36], sv *UDout)
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
    if (UDout) memcpy(UDout, UD, sizeof UD);
}

int ea_factor_program(ep_prog *p, int U_buf, int DINV_buf, int AL, int BE)
{
    const int coupled = AL >= 0;
    if (coupled) ep_coupling_roles(p);
    const int IA = ep_buffer(p, "IA", 36, 1);
    for (ep_bodies(p, 0); ep_next(p);) {
        sym_graph *g = ep_graph(p);
        sv M[36];
        sp_body_inertia_matrix(g, ep_body(p, EP_I), M);
        for (int e = 0; e < 36; e++) ep_set(p, IA, EP_I, EP_SELF, e, M[e]);
        for (int e = 0; e < 6 && coupled; e++) ep_set(p, AL, EP_I, EP_SELF, e, sym_const(g, 0.0));
        if (coupled) ep_set(p, BE, EP_I, EP_SELF, 0, sym_const(g, 0.0));
    }
    for (ep_bodies(p, 1); ep_next(p);) {
        sym_graph *g = ep_graph(p);
        const ek_body *b = ep_body(p, EP_I);
        const int role = coupled ? ep_role(p, EP_I) : EM_PLAIN;
        sv IAi[36], U[36] = {0}, Dinv[36] = {0};
        ep_comment(p, "articulated inertia");
        for (int e = 0; e < 36; e++) IAi[e] = ep_get(p, IA, EP_I, EP_SELF, e);
        if (role == EM_MEMBER) {
            /* a mimic group's member: the composite and the group terms to the parent, no pieces of its own */
            sv ms[6], alpha[6];
            ea_member_inertia(p, IA, AL, BE, IAi, ms, alpha);
            continue;
        }
        ek_body bl;
        ea_group_pieces(p, role, AL, BE, IAi, U, Dinv, &bl);
        for (int e = 0; e < 6 * b->nv; e++) ep_set(p, U_buf, EP_I, EP_SELF, e, U[e]);
        for (int e = 0; e < b->nv * b->nv; e++) ep_set(p, DINV_buf, EP_I, EP_SELF, e, Dinv[e]);
        if (!ep_is_root(p, EP_I)) {
            sv Ia[36], t[36];
            ea_articulated_minus_joint(g, &bl, IAi, U, Dinv, Ia, NULL);
            ep_mat6_to_parent(p, EP_I, Ia, t);
            for (int e = 0; e < 36; e++)
                ep_set(p, IA, EP_I, EP_PARENT, e, sym_add(g, ep_get(p, IA, EP_I, EP_PARENT, e), t[e]));
        }
    }
    return 0;
}

int ea_factor_build(ek_kin *k, ea_factor *fa)
{
    const int nb = k->em->nb;
    fa->U = ek_calloc((size_t)nb, sizeof *fa->U);
    fa->Dinv = ek_calloc((size_t)nb, sizeof *fa->Dinv);
    ep_prog *p = ep_new(k->em, k, 0, "factor", NULL, NULL, NULL, NULL, NULL);
    if (!fa->U || !fa->Dinv || !p) {
        ea_factor_free(fa);
        ep_free(p);
        return -1;
    }
    const int U = ep_buffer(p, "U", 36, 1), DINV = ep_buffer(p, "Dinv", 36, 1);
    const int coupled = k->em->group_minv;
    const int AL = coupled ? ep_buffer(p, "AL", 6, 1) : -1, BE = coupled ? ep_buffer(p, "BE", 1, 1) : -1;
    int rc = ea_factor_program(p, U, DINV, AL, BE);
    if (rc == 0) rc = ep_finish(p, NULL, NULL, NULL);
    if (rc == 0) {
        memcpy(fa->U, ep_buffer_values(p, U), (size_t)nb * sizeof *fa->U);
        memcpy(fa->Dinv, ep_buffer_values(p, DINV), (size_t)nb * sizeof *fa->Dinv);
        /* a group under a host is the host's virtual child: its pieces at the leader (a child of the host), U = AL of
           the host brought into the leader's frame (carried back up it is AL again), D = BE */
        for (int l = 0; l < nb && coupled; l++) {
            const em_body *L = &k->em->b[l];
            if (L->crole != EM_MEMBER || L->mimic) continue;
            sp_force_act_inv(k->g, &k->X[l], ep_buffer_values(p, AL) + 6 * L->parent, fa->U[l]);
            fa->Dinv[l][0] = sym_div(k->g, sym_const(k->g, 1.0), ep_buffer_values(p, BE)[L->parent]);
        }
    } else {
        ea_factor_free(fa);
    }
    ep_free(p);
    return rc;
}
