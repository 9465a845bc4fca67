/* Carpentier's direct inverse of the mass matrix, with the U vectors carried to every ancestor. */
#include <stdlib.h>
#include <string.h>
#include "algos.h"

/* K(a, c) = S_a^T (U_c carried up to body a), for every ancestor a of c: n_a x n_c, row-major.
   Stored per body c, by depth: kc[c][d] belongs to the d-th ancestor (0 = parent). */
typedef struct {
    int *depth;     /* number of ancestors per body */
    int *first;     /* offset of body c's entries in k */
    sv (*k)[36];
} coupling;

static int depth_of(const em_model *em, int c)
{
    int d = 0;
    for (int j = em->b[c].parent; j >= 0; j = em->b[j].parent) d++;
    return d;
}

static int coupling_build(ek_kin *k, const ea_factor *fa, coupling *cp)
{
    sym_graph *g = k->g;
    const em_model *em = k->em;
    const int nb = em->nb;
    size_t total = 0;
    cp->depth = ek_calloc((size_t)nb, sizeof *cp->depth);
    cp->first = ek_calloc((size_t)nb, sizeof *cp->first);
    if (!cp->depth || !cp->first) return -1;
    for (int c = 0; c < nb; c++) {
        cp->depth[c] = depth_of(em, c);
        cp->first[c] = (int)total;
        total += (size_t)cp->depth[c];
    }
    cp->k = ek_calloc(total, sizeof *cp->k);
    if (!cp->k) return -1;
    for (int c = 0; c < nb; c++) {
        const em_body *bc = &em->b[c];
        sv W[6][6];
        ek_body_comment(g, em, c, "joint-space coupling to the ancestors");
        for (int m = 0; m < bc->nv; m++) memcpy(W[m], fa->U[c] + 6 * m, sizeof W[m]);
        int d = 0;
        for (int j = c; em->b[j].parent >= 0; j = em->b[j].parent, d++) {
            const em_body *ba = &em->b[em->b[j].parent];
            sv *K = cp->k[cp->first[c] + d];
            for (int m = 0; m < bc->nv; m++) {
                sv col[6];
                sp_force_act(g, &k->X[j], W[m], W[m]);
                ek_joint_project(g, &k->view[em->b[j].parent], W[m], col);
                for (int r = 0; r < ba->nv; r++) K[bc->nv * r + m] = col[r];
            }
        }
    }
    return 0;
}

static void coupling_free(coupling *cp)
{
    free(cp->depth);
    free(cp->first);
    free(cp->k);
}

/* K(a, c) for the ancestor a of c */
static const sv *coupling_at(const em_model *em, const coupling *cp, int a, int c)
{
    int d = 0;
    for (int j = em->b[c].parent; j != a; j = em->b[j].parent) d++;
    return cp->k[cp->first[c] + d];
}

int ea_minv(ek_kin *k, sv *Minv)
{
    sym_graph *g = k->g;
    const em_model *em = k->em;
    const int nb = em->nb, nv = em->nv;
    ea_factor fa = {0};
    coupling cp = {0};
    sv *Mb = ek_calloc((size_t)nv * (size_t)nv, sizeof *Mb);
    int rc = -1;
    if (!Mb || ea_factor_build(k, &fa) != 0 || coupling_build(k, &fa, &cp) != 0) goto done;
    for (int i = 0; i < nv * nv; i++) Mb[i] = Minv[i] = sym_const(g, 0.0);

    /* backward rows: Mb(i, i) = Dinv_i; Mb(i, b) = -Dinv_i sum_{c on the path i -> b, c != i} K(i, c) Mb(c, b) */
    for (int i = nb - 1; i >= 0 && !sym_over_limit(g); i--) {
        const em_body *bi = &em->b[i];
        const int ni = bi->nv;
        ek_body_comment(g, em, i, "backward rows of the inverse");
        for (int r = 0; r < ni; r++)
            for (int c = 0; c < ni; c++) Mb[(bi->iv + r) * nv + bi->iv + c] = fa.Dinv[i][ni * r + c];
        for (int b = i + 1; b < nb; b++) {
            if (!em_is_ancestor(em, i, b)) continue;
            const em_body *bb = &em->b[b];
            for (int col = 0; col < bb->nv; col++) {
                sv acc[6];
                for (int r = 0; r < ni; r++) acc[r] = sym_const(g, 0.0);
                for (int c = b; c != i; c = em->b[c].parent) {
                    const em_body *bc = &em->b[c];
                    const sv *K = coupling_at(em, &cp, i, c);
                    for (int r = 0; r < ni; r++)
                        for (int m = 0; m < bc->nv; m++)
                            acc[r] = sym_add(g, acc[r], sym_mul(g, K[bc->nv * r + m], Mb[(bc->iv + m) * nv + bb->iv + col]));
                }
                for (int r = 0; r < ni; r++) {
                    sv s = sym_const(g, 0.0);
                    for (int m = 0; m < ni; m++) s = sym_add(g, s, sym_mul(g, fa.Dinv[i][ni * r + m], acc[m]));
                    Mb[(bi->iv + r) * nv + bb->iv + col] = sym_neg(g, s);
                }
            }
        }
    }
    /* forward rows: Minv(i, b) = Mb(i, b) - Dinv_i sum_{a ancestor of i} K(a, i)^T Minv(a, b), for b >= i */
    for (int i = 0; i < nb && !sym_over_limit(g); i++) {
        const em_body *bi = &em->b[i];
        const int ni = bi->nv;
        ek_body_comment(g, em, i, "forward rows of the inverse");
        for (int b = i; b < nb; b++) {
            const em_body *bb = &em->b[b];
            for (int col = 0; col < bb->nv; col++) {
                sv acc[6];
                for (int r = 0; r < ni; r++) acc[r] = sym_const(g, 0.0);
                for (int a = bi->parent; a >= 0; a = em->b[a].parent) {
                    const em_body *ba = &em->b[a];
                    const sv *K = coupling_at(em, &cp, a, i);
                    for (int r = 0; r < ni; r++)
                        for (int m = 0; m < ba->nv; m++)
                            acc[r] = sym_add(g, acc[r], sym_mul(g, K[ni * m + r], Minv[(ba->iv + m) * nv + bb->iv + col]));
                }
                for (int r = 0; r < ni; r++) {
                    sv s = sym_const(g, 0.0);
                    for (int m = 0; m < ni; m++) s = sym_add(g, s, sym_mul(g, fa.Dinv[i][ni * r + m], acc[m]));
                    Minv[(bi->iv + r) * nv + bb->iv + col] = sym_sub(g, Mb[(bi->iv + r) * nv + bb->iv + col], s);
                }
            }
        }
    }
    /* the lower triangle mirrors the upper */
    for (int r = 0; r < nv; r++)
        for (int c = 0; c < r; c++) Minv[r * nv + c] = Minv[c * nv + r];
    rc = 0;
done:
    ea_factor_free(&fa);
    coupling_free(&cp);
    free(Mb);
    return rc;
}

/* The rolled form: the reference's formulation (src/ref/minv.c), ABA on every unit torque at once, with
   per-body 6 x nv column blocks B_i in the workspace; O(n * nv) work and code independent of n. Column k
   of B_i belongs to the unit torque on coordinate k. */
int ea_minv_program(ep_prog *p, int nv)
{
    const int IA = ep_buffer(p, "IA", 36, 1), U = ep_buffer(p, "U", 36, 1), DINV = ep_buffer(p, "Dinv", 36, 1);
    const int B = ep_buffer(p, "B", 6 * nv, 1);
    ep_zero_output(p, (long)nv * nv);
    /* pass 1: placements; articulated inertias start as body inertias; B_i's own columns start at zero */
    for (ep_bodies(p, 0); ep_next(p);) {
        sv M[36];
        sp_body_inertia_matrix(ep_graph(p), ep_body(p, EP_I), M);
        for (int e = 0; e < 36; e++) ep_set(p, IA, EP_I, EP_SELF, e, M[e]);
        for (ep_columns(p, EP_COLS_OWN); ep_next(p);)
            for (int r = 0; r < 6; r++) ep_setk(p, B, EP_I, EP_SELF, r, sym_const(ep_graph(p), 0.0));
    }
    /* pass 2: children first */
    for (ep_bodies(p, 1); ep_next(p);) {
        sym_graph *g = ep_graph(p);
        const ek_body *b = ep_body(p, EP_I);
        const int n = b->nv;
        sv IAi[36], U_[36] = {0}, Dinv[36] = {0};
        ep_comment(p, "articulated inertia and the diagonal block");
        for (int e = 0; e < 36; e++) IAi[e] = ep_get(p, IA, EP_I, EP_SELF, e);
        ea_joint_pieces(g, b, IAi, U_, Dinv);
        for (int e = 0; e < 6 * n; e++) ep_set(p, U, EP_I, EP_SELF, e, U_[e]);
        for (int e = 0; e < n * n; e++) ep_set(p, DINV, EP_I, EP_SELF, e, Dinv[e]);
        for (int r = 0; r < n; r++)
            for (int c = 0; c < n; c++) ep_out_mat(p, EP_I, EP_SELF, r, EP_I, c, Dinv[n * r + c]);
        const int root = ep_is_root(p, EP_I);
        /* Minv[i, k] = -D_i^-1 S_i^T B_i[:, k] for the descendants' columns */
        for (ep_columns(p, EP_COLS_BELOW); ep_next(p);) {
            sym_graph *gk = ep_graph(p);
            const ek_body *bk = ep_body(p, EP_I);
            sv col[6], stb[6];
            for (int r = 0; r < 6; r++) col[r] = ep_getk(p, B, EP_I, EP_SELF, r);
            ek_joint_project(gk, bk, col, stb);
            for (int a = 0; a < n; a++) {
                sv s = sym_const(gk, 0.0);
                for (int e = 0; e < n; e++) s = sym_add(gk, s, sym_mul(gk, ep_get(p, DINV, EP_I, EP_SELF, n * a + e), stb[e]));
                ep_out_setk(p, EP_I, a, sym_neg(gk, s));
            }
        }
        if (root) continue;
        /* B_parent[:, k] = X_i (B_i[:, k] + U_i Minv[i, k]) over the subtree's columns */
        for (ep_columns(p, EP_COLS_SUBTREE); ep_next(p);) {
            sym_graph *gk = ep_graph(p);
            sv col[6], mi[6];
            for (int a = 0; a < n; a++) mi[a] = ep_out_getk(p, EP_I, a);
            for (int r = 0; r < 6; r++) {
                sv x = ep_getk(p, B, EP_I, EP_SELF, r);
                for (int a = 0; a < n; a++) x = sym_add(gk, x, sym_mul(gk, ep_get(p, U, EP_I, EP_SELF, 6 * a + r), mi[a]));
                col[r] = x;
            }
            sp_force_act(gk, ep_X(p, EP_I), col, col);
            for (int r = 0; r < 6; r++) ep_setk(p, B, EP_I, EP_PARENT, r, col[r]);
        }
        /* the articulated inertia handed to the parent */
        sym_graph *gp = ep_graph(p);
        const ek_body *bp = ep_body(p, EP_I);
        sv Ia[36], t[36];
        for (int e = 0; e < 36; e++) IAi[e] = ep_get(p, IA, EP_I, EP_SELF, e);
        for (int e = 0; e < 6 * n; e++) U_[e] = ep_get(p, U, EP_I, EP_SELF, e);
        for (int e = 0; e < n * n; e++) Dinv[e] = ep_get(p, DINV, EP_I, EP_SELF, e);
        ea_articulated_minus_joint(gp, bp, IAi, U_, Dinv, Ia, NULL);
        ep_mat6_to_parent(p, EP_I, Ia, t);
        for (int e = 0; e < 36; e++) ep_set(p, IA, EP_I, EP_PARENT, e, sym_add(gp, ep_get(p, IA, EP_I, EP_PARENT, e), t[e]));
    }
    /* pass 3: parents first, over the columns of this and every later body */
    for (ep_bodies(p, 0); ep_next(p);) {
        const int root = ep_is_root(p, EP_I);
        for (ep_columns(p, EP_COLS_FROM); ep_next(p);) {
            sym_graph *g = ep_graph(p);
            const ek_body *b = ep_body(p, EP_I);
            const int n = b->nv;
            sv a[6], mi[6];
            for (int e = 0; e < n; e++) mi[e] = ep_out_getk(p, EP_I, e);
            if (!root) {
                /* the parent's acceleration under this unit torque; Minv[i, k] -= D_i^-1 U_i^T a */
                sv ap[6], uta[6];
                for (int r = 0; r < 6; r++) ap[r] = ep_getk(p, B, EP_I, EP_PARENT, r);
                sp_motion_act_inv(g, ep_X(p, EP_I), ap, a);
                for (int e = 0; e < n; e++) {
                    sv s = sym_const(g, 0.0);
                    for (int r = 0; r < 6; r++) s = sym_add(g, s, sym_mul(g, ep_get(p, U, EP_I, EP_SELF, 6 * e + r), a[r]));
                    uta[e] = s;
                }
                for (int e = 0; e < n; e++) {
                    sv s = sym_const(g, 0.0);
                    for (int f = 0; f < n; f++) s = sym_add(g, s, sym_mul(g, ep_get(p, DINV, EP_I, EP_SELF, n * e + f), uta[f]));
                    mi[e] = sym_sub(g, mi[e], s);
                    ep_out_setk(p, EP_I, e, mi[e]);
                }
            } else {
                for (int r = 0; r < 6; r++) a[r] = sym_const(g, 0.0);
            }
            /* B_i[:, k] = a + S_i Minv[i, k], body i's acceleration */
            sv sq[6];
            ek_joint_motion(g, b, mi, sq);
            for (int r = 0; r < 6; r++) ep_setk(p, B, EP_I, EP_SELF, r, sym_add(g, a[r], sq[r]));
        }
    }
    ep_mirror_upper(p);
    return 0;
}
