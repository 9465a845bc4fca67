/* Reference forward dynamics through the inverse mass matrix: qdd = M^-1 (u - rnea(q, v, 0, fext)). */
#include <string.h>
#include "grid/ref.h"
#include "spatial.h"

size_t grid_sp_work_forward_dynamics(const grid_model *m)
{
    /* Minv and the bias c, then room for whichever of minv and rnea needs more */
    const size_t nv = (size_t)m->nv_full;
    size_t inner = grid_sp_work_minv(m);
    if (grid_sp_work_rnea(m) > inner) inner = grid_sp_work_rnea(m);
    return nv * nv + nv + inner;
}

void grid_ref_forward_dynamics(const grid_model *m, const double *q, const double *v, const double *u,
                               const double *fext, double *qdd, double *work)
{
    const size_t nv = (size_t)m->nv_full;
    double *Minv = work, *c = Minv + nv * nv, *inner = c + nv;
    /* bias forces c = rnea(q, v, 0, fext), then M^-1 by Carpentier's algorithm */
    grid_ref_rnea(m, q, v, NULL, fext, c, inner);
    grid_ref_minv(m, q, Minv, inner);
    /* qdd = M^-1 (u - c) */
    for (size_t r = 0; r < nv; r++) {
        double s = 0.0;
        for (size_t k = 0; k < nv; k++) s += Minv[r * nv + k] * (u[k] - c[k]);
        qdd[r] = s;
    }
}
