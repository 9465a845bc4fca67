/* The reference provider's batched entry point: the grid_call ABI over the single-state algorithms. */
#include <stdlib.h>
#include <string.h>
#include "grid/ref.h"

/* widen n inputs of state b to float64 (or point at them when they already are) */
static const double *state_input(const void *base, int dtype, long long b, size_t n, double *buf)
{
    if (!base) return NULL;
    if (dtype == GRID_FLOAT64) return (const double *)base + (size_t)b * n;
    const float *src = (const float *)base + (size_t)b * n;
    for (size_t k = 0; k < n; k++) buf[k] = (double)src[k];
    return buf;
}

/* 1 when the algorithm needs v, and when it needs a (u) */
static int needs_v(int algo)
{
    return algo == GRID_ALGO_RNEA || algo == GRID_ALGO_NLE || algo == GRID_ALGO_FD || algo == GRID_ALGO_ABA;
}

static int needs_u(int algo)
{
    return algo == GRID_ALGO_FD || algo == GRID_ALGO_ABA;
}

/* run one algorithm on one float64 state */
static void run_state(const grid_model *m, int algo, const grid_call *call, const double *q,
                      const double *v, const double *a, const double *fext, double *out, double *work)
{
    switch (algo) {
    case GRID_ALGO_RNEA: grid_ref_rnea(m, q, v, a, fext, out, work); break;
    case GRID_ALGO_NLE: grid_ref_nonlinear_effects(m, q, v, out, work); break;
    case GRID_ALGO_GRAVITY: grid_ref_gravity(m, q, out, work); break;
    case GRID_ALGO_CRBA: grid_ref_crba(m, q, out, work); break;
    case GRID_ALGO_MINV: grid_ref_minv(m, q, out, work); break;
    case GRID_ALGO_FD: grid_ref_forward_dynamics(m, q, v, a, fext, out, work); break;
    case GRID_ALGO_ABA: grid_ref_aba(m, q, v, a, fext, out, work); break;
    case GRID_ALGO_FK: grid_ref_forward_kinematics(m, q, out, work); break;
    case GRID_ALGO_EE_POSE: grid_ref_end_effector_pose(m, q, out, work); break;
    case GRID_ALGO_FRAME_JACOBIAN:
        grid_ref_frame_jacobian(m, q, call->frame, call->reference_frame, out, work);
        break;
    default: break;
    }
}

int grid_ref_batch(const grid_model *m, int algo, int dtype, const grid_call *call)
{
    /* check the arguments before touching any array */
    if (!m || !call || algo < 0 || algo >= GRID_ALGO_COUNT) return GRID_ERR_ARG;
    if (dtype != GRID_FLOAT32 && dtype != GRID_FLOAT64) return GRID_ERR_ARG;
    if (call->batch < 0) return GRID_ERR_ARG;
    if (call->batch == 0) return GRID_OK;
    if (!call->q || !call->out) return GRID_ERR_ARG;
    if (needs_v(algo) && !call->v) return GRID_ERR_ARG;
    if (needs_u(algo) && !call->a) return GRID_ERR_ARG;
    if (algo == GRID_ALGO_FRAME_JACOBIAN) {
        if (call->frame < 0 || call->frame >= m->nframes) return GRID_ERR_ARG;
        if (call->reference_frame != GRID_WORLD && call->reference_frame != GRID_LOCAL &&
            call->reference_frame != GRID_LOCAL_WORLD_ALIGNED)
            return GRID_ERR_ARG;
    }

    const size_t nq = (size_t)m->nq, nv = (size_t)m->nv, nf = 6 * (size_t)m->nb;
    const size_t width = (size_t)grid_algo_output_width(algo, m->nq, m->nv, m->nb, m->nee);
    const int takes_a_fext = algo == GRID_ALGO_RNEA || needs_u(algo);

    /* scratch once per call: work, then float64 copies of one state's inputs and output */
    const size_t nwork = grid_ref_work_size(m);
    double *scratch = malloc((nwork + nq + 2 * nv + nf + width + 1) * sizeof(double));
    if (!scratch) return GRID_ERR_NOMEM;
    double *work = scratch, *qb = work + nwork, *vb = qb + nq, *ab = vb + nv, *fb = ab + nv;
    double *ob = fb + nf;

    for (long long b = 0; b < call->batch; b++) {
        const double *q = state_input(call->q, dtype, b, nq, qb);
        const double *v = needs_v(algo) ? state_input(call->v, dtype, b, nv, vb) : NULL;
        const double *a = takes_a_fext ? state_input(call->a, dtype, b, nv, ab) : NULL;
        const double *f = takes_a_fext ? state_input(call->fext, dtype, b, nf, fb) : NULL;
        if (dtype == GRID_FLOAT64) {
            run_state(m, algo, call, q, v, a, f, (double *)call->out + (size_t)b * width, work);
        } else {
            /* narrow the float64 result */
            float *dst = (float *)call->out + (size_t)b * width;
            run_state(m, algo, call, q, v, a, f, ob, work);
            for (size_t k = 0; k < width; k++) dst[k] = (float)ob[k];
        }
    }
    free(scratch);
    return GRID_OK;
}
