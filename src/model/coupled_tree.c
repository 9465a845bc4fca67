/* The elimination tree of a coupled robot's mass matrix G^T M G: a parent per user velocity coordinate such that
   Featherstone's L^T D L factorisation, walking each coordinate's ancestors, touches every nonzero and its fill. */
#include <assert.h>
#include <stdlib.h>
#include "grid/model.h"

int grid_model_coupled_tree(const grid_model *m, int *lambda)
{
    const int n = m->nv, nb = m->nb;
    if (n == 0) return 0;
    unsigned char *P = calloc((size_t)n * n, 1);
    if (!P) return GRID_ERR_NOMEM;
    /* the pattern: user coordinates a, b couple when a body that a moves and a body that b moves lie on one
       branch (M's entry of two full coordinates is structurally zero only off the branch): every body with each
       of its ancestors and itself, O(nb * depth) pairs */
    for (int i = 0; i < nb; i++) {
        const grid_joint *ji = &m->bodies[i].joint;
        for (int j = i; j >= 0 && ji->nv > 0; j = m->bodies[j].joint.parent) {
            const grid_joint *jj = &m->bodies[j].joint;
            /* a coupled joint moves its leader's coordinate; the others their own */
            for (int a = 0; a < ji->nv; a++)
                for (int b = 0; b < jj->nv; b++) {
                    const int ua = ji->uv + (ji->mimic ? 0 : a), ub = jj->uv + (jj->mimic ? 0 : b);
                    assert(ua >= 0 && ua < n && ub >= 0 && ub < n);
                    P[ua * n + ub] = P[ub * n + ua] = 1;
                }
        }
    }
    /* symbolic elimination from the last coordinate to the first (the order L^T D L factorises in): the parent
       of k is its largest remaining neighbour below k, which inherits k's other neighbours as fill */
    for (int k = n - 1; k >= 0; k--) {
        int parent = -1;
        for (int j = k - 1; j >= 0 && parent < 0; j--)
            if (P[k * n + j]) parent = j;
        lambda[k] = parent;
        if (parent < 0) continue;
        for (int j = 0; j < parent; j++)
            if (P[k * n + j]) P[parent * n + j] = P[j * n + parent] = 1;
    }
    free(P);
    return 0;
}
