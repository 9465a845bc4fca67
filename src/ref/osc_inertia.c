/* The reference operational-space inertia of a frame: (J M^-1 J^T)^-1 in the user's coordinates, dependent directions dropped. */
#include <assert.h>
#include "ref_rows.h"
#include "spatial.h"

/* Phi = J_u M_u^-1 J_u^T with J_u = J G, M_u = G^T M G (G = I without mimic joints; src/ref/batch.c hands a coupled
   model's row the full q), by a dense solve with M_u rather than M^-1; then Phi = L D L^T in the order [linear;
   angular], a pivot d_k <= tol max(1, max_i Phi_ii) dropped (inverse 0, column of L e_k), out = L^-T D^+ L^-1; tol
   of the dtype the answer stands for: 1e-10 for float64, 1e-5 for float32 */
void ref_row_osc_inertia(const grid_model *m, const double *const *in, double *const *out, const int *attr,
                         double *work)
{
    const int nvf = m->nv_full, nv = m->nv;
    const int mshape[2] = {nvf, nvf}, mtangent[2] = {1, 1}, jshape[2] = {6, nvf}, jtangent[2] = {0, 1};
    double *Mf = work, *Jf = Mf + (size_t)nvf * nvf, *M = Jf + 6 * (size_t)nvf, *J = M + (size_t)nv * nv;
    double *X = J + 6 * (size_t)nv, *inner = X + 6 * (size_t)nv;
    int *body_of_v = (int *)inner;
    inner += (nvf + 1) / 2;
    assert((size_t)(inner + grid_sp_work_crba(m) - work) <= grid_ref_work_size(m) &&
           grid_sp_work_jacobian(m) <= grid_sp_work_crba(m));
    grid_ref_crba(m, in[0], Mf, inner);
    grid_ref_frame_jacobian(m, in[0], attr[0], attr[1], Jf, inner);
    grid_ref_body_of_v(m, body_of_v);
    grid_ref_project(m, 2, mshape, mtangent, Mf, M, body_of_v);
    grid_ref_project(m, 2, jshape, jtangent, Jf, J, body_of_v);
    /* X = M_u^-1 J_u^T (nv x 6), Phi = J_u X */
    for (int r = 0; r < nv; r++)
        for (int c = 0; c < 6; c++) X[r * 6 + c] = J[c * nv + r];
    grid_ref_spd_solve(nv, M, X, 6);
    double P[6][6], L[6][6] = {{0}}, d[6], dinv[6], big = 1.0;
    for (int r = 0; r < 6; r++)
        for (int c = 0; c < 6; c++) {
            double s = 0.0;
            for (int k = 0; k < nv; k++) s += J[r * nv + k] * X[k * 6 + c];
            P[r][c] = s;
        }
    for (int r = 0; r < 6; r++)
        if (P[r][r] > big) big = P[r][r];
    const double tol = (attr[GRID_REF_RULE] == GRID_FLOAT32 ? 1e-5 : 1e-10) * big;
    for (int k = 0; k < 6; k++) {
        double dk = P[k][k];
        for (int j = 0; j < k; j++) dk -= L[k][j] * L[k][j] * d[j];
        const int keep = dk > tol;
        d[k] = keep ? dk : 0.0;
        dinv[k] = keep ? 1.0 / dk : 0.0;
        L[k][k] = 1.0;
        for (int i = k + 1; i < 6; i++) {
            double s = P[i][k];
            for (int j = 0; j < k; j++) s -= L[i][j] * L[k][j] * d[j];
            L[i][k] = s * dinv[k];
        }
    }
    /* W = L^-1 by forward substitution, out = W^T D^+ W */
    double W[6][6] = {{0}};
    for (int c = 0; c < 6; c++)
        for (int i = c; i < 6; i++) {
            double s = i == c ? 1.0 : 0.0;
            for (int j = c; j < i; j++) s -= L[i][j] * W[j][c];
            W[i][c] = s;
        }
    for (int r = 0; r < 6; r++)
        for (int c = 0; c < 6; c++) {
            double s = 0.0;
            for (int k = 0; k < 6; k++) s += W[k][r] * dinv[k] * W[k][c];
            out[0][6 * r + c] = s;
        }
}
