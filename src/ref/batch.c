/* The reference provider's batched entry point: the grid_call ABI over the single-state algorithms, driven by the signature table. */
#include <stdlib.h>
#include <string.h>
#include "grid/ref.h"

/* One state of one row: in[k] is the row's input k in float64 (NULL when an optional input is absent),
   out[k] its output k, attr the call's attributes. */
typedef void (*ref_state_fn)(const grid_model *m, const double *const *in, double *const *out, const int *attr,
                             double *work);

static void ref_rnea(const grid_model *m, const double *const *in, double *const *out, const int *attr, double *work)
{
    (void)attr;
    grid_ref_rnea(m, in[0], in[1], in[2], in[3], out[0], work);
}

static void ref_nle(const grid_model *m, const double *const *in, double *const *out, const int *attr, double *work)
{
    (void)attr;
    grid_ref_nonlinear_effects(m, in[0], in[1], out[0], work);
}

static void ref_gravity(const grid_model *m, const double *const *in, double *const *out, const int *attr, double *work)
{
    (void)attr;
    grid_ref_gravity(m, in[0], out[0], work);
}

static void ref_crba(const grid_model *m, const double *const *in, double *const *out, const int *attr, double *work)
{
    (void)attr;
    grid_ref_crba(m, in[0], out[0], work);
}

static void ref_minv(const grid_model *m, const double *const *in, double *const *out, const int *attr, double *work)
{
    (void)attr;
    grid_ref_minv(m, in[0], out[0], work);
}

static void ref_fd(const grid_model *m, const double *const *in, double *const *out, const int *attr, double *work)
{
    (void)attr;
    grid_ref_forward_dynamics(m, in[0], in[1], in[2], in[3], out[0], work);
}

static void ref_aba(const grid_model *m, const double *const *in, double *const *out, const int *attr, double *work)
{
    (void)attr;
    grid_ref_aba(m, in[0], in[1], in[2], in[3], out[0], work);
}

static void ref_fk(const grid_model *m, const double *const *in, double *const *out, const int *attr, double *work)
{
    (void)attr;
    grid_ref_forward_kinematics(m, in[0], out[0], work);
}

static void ref_ee_pose(const grid_model *m, const double *const *in, double *const *out, const int *attr, double *work)
{
    (void)attr;
    grid_ref_end_effector_pose(m, in[0], out[0], work);
}

static void ref_frame_jacobian(const grid_model *m, const double *const *in, double *const *out, const int *attr,
                               double *work)
{
    grid_ref_frame_jacobian(m, in[0], attr[0], attr[1], out[0], work);
}

/* the reference function of every row of the signature table */
static const ref_state_fn ref_fns[GRID_ALGO_COUNT] = {
    [GRID_ALGO_RNEA] = ref_rnea, [GRID_ALGO_NLE] = ref_nle, [GRID_ALGO_GRAVITY] = ref_gravity,
    [GRID_ALGO_CRBA] = ref_crba, [GRID_ALGO_MINV] = ref_minv, [GRID_ALGO_FD] = ref_fd, [GRID_ALGO_ABA] = ref_aba,
    [GRID_ALGO_FK] = ref_fk, [GRID_ALGO_EE_POSE] = ref_ee_pose, [GRID_ALGO_FRAME_JACOBIAN] = ref_frame_jacobian,
};

/* widen n inputs of state b to float64 (or point at them when they already are) */
static const double *state_input(const void *base, int dtype, long long b, size_t n, double *buf)
{
    if (!base) return NULL;
    if (dtype == GRID_FLOAT64) return (const double *)base + (size_t)b * n;
    const float *src = (const float *)base + (size_t)b * n;
    for (size_t k = 0; k < n; k++) buf[k] = (double)src[k];
    return buf;
}

/* the row's argument checks: GRID_OK or GRID_ERR_ARG */
static int check_call(const grid_method_info *r, const grid_call *call)
{
    if (call->n_in != r->n_in || call->n_out != r->n_out || !call->in || !call->out) return GRID_ERR_ARG;
    for (int k = 0; k < r->n_in; k++)
        if (!call->in[k] && !r->in[k].optional) return GRID_ERR_ARG;
    for (int k = 0; k < r->n_out; k++)
        if (!call->out[k]) return GRID_ERR_ARG;
    for (int k = 0; k < r->n_attr; k++)
        if (call->attr[k] < r->attr_lo[k] || call->attr[k] >= r->attr_hi[k]) return GRID_ERR_ARG;
    return GRID_OK;
}

int grid_ref_batch(const grid_model *m, int algo, int dtype, const grid_call *call)
{
    /* check the arguments before touching any array */
    if (!m || !call || algo < 0 || algo >= GRID_ALGO_COUNT) return GRID_ERR_ARG;
    if (dtype != GRID_FLOAT32 && dtype != GRID_FLOAT64) return GRID_ERR_ARG;
    if (call->batch < 0) return GRID_ERR_ARG;
    if (call->batch == 0) return GRID_OK;
    const grid_sizes sz = grid_sizes_of(m->nq, m->nv, m->nb, m->nee, m->nframes);
    grid_method_info r;
    grid_sig_concrete(algo, &sz, 0, &r);
    int rc = check_call(&r, call);
    if (rc != GRID_OK) return rc;
    if (!ref_fns[algo]) return GRID_ERR_UNSUPPORTED; /* a row without a reference function yet */

    /* scratch once per call: work, then float64 copies of one state's inputs and outputs */
    const size_t nwork = grid_ref_work_size(m);
    size_t total = nwork + 1;
    for (int k = 0; k < r.n_in; k++) total += (size_t)r.in[k].width;
    for (int k = 0; k < r.n_out; k++) total += (size_t)r.out[k].width;
    double *scratch = malloc(total * sizeof(double));
    if (!scratch) return GRID_ERR_NOMEM;
    double *work = scratch, *at = scratch + nwork, *inb[GRID_MAX_IN], *outb[GRID_MAX_OUT];
    for (int k = 0; k < r.n_in; k++, at += r.in[k - 1].width) inb[k] = at;
    for (int k = 0; k < r.n_out; k++, at += r.out[k - 1].width) outb[k] = at;

    const double *in[GRID_MAX_IN] = {0};
    double *out[GRID_MAX_OUT] = {0};
    for (long long b = 0; b < call->batch; b++) {
        for (int k = 0; k < r.n_in; k++) in[k] = state_input(call->in[k], dtype, b, (size_t)r.in[k].width, inb[k]);
        for (int k = 0; k < r.n_out; k++)
            out[k] = dtype == GRID_FLOAT64 ? (double *)call->out[k] + (size_t)b * (size_t)r.out[k].width : outb[k];
        ref_fns[algo](m, in, out, call->attr, work);
        if (dtype == GRID_FLOAT32)
            /* narrow the float64 results */
            for (int k = 0; k < r.n_out; k++) {
                float *dst = (float *)call->out[k] + (size_t)b * (size_t)r.out[k].width;
                for (long long e = 0; e < r.out[k].width; e++) dst[e] = (float)outb[k][e];
            }
    }
    free(scratch);
    return GRID_OK;
}
