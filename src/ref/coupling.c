/* Mimic couplings for the reference: the user's coordinates into the full ones, full outputs back (G^T x, G^T M G,
   J G), and the dense solve of the coupled mass matrix. */
#include <math.h>
#include <string.h>
#include "grid/ref.h"

void grid_ref_expand_q(const grid_model *m, const double *q, double *qf)
{
    for (int b = 0; b < m->nb; b++) {
        const grid_joint *j = &m->bodies[b].joint;
        for (int k = 0; k < j->nq; k++)
            qf[j->iq + k] = j->mimic ? j->mimic_multiplier * q[j->uq] + j->mimic_offset : q[j->uq + k];
    }
}

void grid_ref_expand_v(const grid_model *m, const double *v, double *vf)
{
    for (int b = 0; b < m->nb; b++) {
        const grid_joint *j = &m->bodies[b].joint;
        for (int k = 0; k < j->nv; k++) vf[j->iv + k] = j->mimic ? j->mimic_multiplier * v[j->uv] : v[j->uv + k];
    }
}

/* the user's index and weight of full tangent coordinate i */
static void coupled_index(const grid_model *m, const int *body_of_v, int i, int *u, double *w)
{
    const grid_joint *j = &m->bodies[body_of_v[i]].joint;
    *u = j->uv + (j->mimic ? 0 : i - j->iv);
    *w = j->mimic ? j->mimic_multiplier : 1.0;
}

void grid_ref_body_of_v(const grid_model *m, int *body_of_v)
{
    for (int b = 0; b < m->nb; b++)
        for (int k = 0; k < m->bodies[b].joint.nv; k++) body_of_v[m->bodies[b].joint.iv + k] = b;
}

void grid_ref_project(const grid_model *m, int rank, const int *shape, const int *tangent, const double *xf,
                      double *x, const int *body_of_v)
{
    /* the user's shape: every tangent dimension nv wide */
    long long nu = 1, nf = 1;
    int ushape[GRID_MAX_RANK];
    for (int d = 0; d < rank; d++) {
        ushape[d] = tangent[d] ? m->nv : shape[d];
        nu *= ushape[d];
        nf *= shape[d];
    }
    memset(x, 0, (size_t)nu * sizeof *x);
    for (long long e = 0; e < nf; e++) {
        long long rest = e, ue = 0, scale = 1;
        double w = 1.0;
        int idx[GRID_MAX_RANK];
        for (int d = rank - 1; d >= 0; d--) {
            idx[d] = (int)(rest % shape[d]);
            rest /= shape[d];
        }
        for (int d = rank - 1; d >= 0; d--) {
            int u = idx[d];
            double wd = 1.0;
            if (tangent[d]) coupled_index(m, body_of_v, idx[d], &u, &wd);
            ue += scale * u;
            scale *= ushape[d];
            w *= wd;
        }
        x[ue] += w * xf[e];
    }
}

void grid_ref_spd_solve(int n, double *A, double *B, int nrhs)
{
    /* A = L D L^T in place (L unit lower, D on the diagonal), no pivoting: A is symmetric positive definite */
    for (int j = 0; j < n; j++) {
        for (int k = 0; k < j; k++) {
            const double ljk = A[j * n + k];
            A[j * n + j] -= ljk * ljk * A[k * n + k];
        }
        const double d = A[j * n + j];
        for (int i = j + 1; i < n; i++) {
            double s = A[i * n + j];
            for (int k = 0; k < j; k++) s -= A[i * n + k] * A[j * n + k] * A[k * n + k];
            A[i * n + j] = s / d;
        }
    }
    /* B (n x nrhs, row-major) <- A^-1 B: L y = B, D z = y, L^T x = z */
    for (int c = 0; c < nrhs; c++) {
        for (int i = 0; i < n; i++) {
            double s = B[i * nrhs + c];
            for (int k = 0; k < i; k++) s -= A[i * n + k] * B[k * nrhs + c];
            B[i * nrhs + c] = s;
        }
        for (int i = 0; i < n; i++) B[i * nrhs + c] /= A[i * n + i];
        for (int i = n - 1; i >= 0; i--) {
            double s = B[i * nrhs + c];
            for (int k = i + 1; k < n; k++) s -= A[k * n + i] * B[k * nrhs + c];
            B[i * nrhs + c] = s;
        }
    }
}
