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
    for (int i = nb - 1; i >= 0; i--) {
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
    for (int i = 0; i < nb; i++) {
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
