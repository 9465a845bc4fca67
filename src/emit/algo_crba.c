/* Composite-rigid-body mass matrix (local frames, rigid-inertia composites) as a symbolic builder. */
#include <stdlib.h>
#include "algos.h"

int ea_crba(ek_kin *k, sv *M)
{
    sym_graph *g = k->g;
    const em_model *em = k->em;
    const int nb = em->nb, nv = em->nv;
    sci *Yc = ek_calloc((size_t)nb, sizeof *Yc);
    if (!Yc) return -1;
    for (int i = 0; i < nv * nv; i++) M[i] = sym_const(g, 0.0);
    for (int i = 0; i < nb; i++) sp_body_inertia_sci(g, &k->view[i], &Yc[i]);

    for (int i = nb - 1; i >= 0; i--) {
        const em_body *b = &em->b[i];
        sv F[6][6], col[6];
        ek_body_comment(g, em, i, "composite inertia");
        /* F = Yc_i S_i; M_ii = S_i^T F */
        for (int c = 0; c < b->nv; c++) {
            sv s[6];
            for (int r = 0; r < 6; r++) s[r] = k->view[i].S[b->nv * r + c];
            sp_sci_apply(g, &Yc[i], s, F[c]);
            ek_joint_project(g, &k->view[i], F[c], col);
            for (int r = 0; r < b->nv; r++) M[(b->iv + r) * nv + b->iv + c] = col[r];
        }
        /* carry F up the tree: M_ji = S_j^T (X F) for every ancestor j */
        for (int j = i; em->b[j].parent >= 0;) {
            const int p = em->b[j].parent;
            const em_body *bp = &em->b[p];
            for (int c = 0; c < b->nv; c++) {
                sp_force_act(g, &k->X[j], F[c], F[c]);
                ek_joint_project(g, &k->view[p], F[c], col);
                for (int r = 0; r < bp->nv; r++) {
                    M[(bp->iv + r) * nv + b->iv + c] = col[r];
                    M[(b->iv + c) * nv + bp->iv + r] = col[r];
                }
            }
            j = p;
        }
        /* the parent's composite takes this one */
        if (b->parent >= 0) {
            sci t;
            ek_sci_to_parent(k, i, &Yc[i], &t);
            sp_sci_add(g, &Yc[b->parent], &t);
        }
    }
    free(Yc);
    return 0;
}
