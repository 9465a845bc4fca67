/* Output conventions on the CPU: a model's per-joint basis data, each call's job (which row runs, what its inputs and output are) and the chunked pre/post passes around a provider's batch call. */
#include <assert.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include "grid/convention.h"
#include "grid/signature.h"
#include "../model/robot_desc.h" /* grid_name_for_message */

/* the per-state passes, once per real type, and their public names */
#define GRID_CV_FN static
#define GRID_CV_REAL double
#define GRID_CV_NAME(x) cv_d_##x
#include "conv_state.h"
#undef GRID_CV_REAL
#undef GRID_CV_NAME
#define GRID_CV_REAL float
#define GRID_CV_NAME(x) cv_f_##x
#include "conv_state.h"
#undef GRID_CV_REAL
#undef GRID_CV_NAME
#undef GRID_CV_FN

void grid_conv_pre_d(const grid_conv_job *j, const double *q, const double *v, const double *a, const double *u,
                     const double *g, double *qp, double *vp, double *ap, double *up, double *gp)
{
    cv_d_pre(j, q, v, a, u, g, qp, vp, ap, up, gp);
}

void grid_conv_post_d(const grid_conv_job *j, const double *qp, const double *vp, const double *ap, const double *up,
                      const double *gp, const double *const *x, double *out)
{
    cv_d_post(j, qp, vp, ap, up, gp, x, out);
}

void grid_conv_pre_f(const grid_conv_job *j, const float *q, const float *v, const float *a, const float *u,
                     const float *g, float *qp, float *vp, float *ap, float *up, float *gp)
{
    cv_f_pre(j, q, v, a, u, g, qp, vp, ap, up, gp);
}

void grid_conv_post_f(const grid_conv_job *j, const float *qp, const float *vp, const float *ap, const float *up,
                      const float *gp, const float *const *x, float *out)
{
    cv_f_post(j, qp, vp, ap, up, gp, x, out);
}

/* Coupled joints (mimic) have no MuJoCo coordinates (MuJoCo couples joints by equality constraints, not in its
   coordinates): a model with couplings is refused in the MuJoCo convention */
static int model_couplings(const grid_model *m) { return m->nmimic; }

int grid_convention_init(grid_convention *cv, const grid_model *m, int kind, grid_error *err)
{
    assert(cv && m);
    memset(cv, 0, sizeof *cv);
    if (kind != GRID_CONVENTION_PINOCCHIO && kind != GRID_CONVENTION_MUJOCO)
        return grid_error_set(err, GRID_ERR_ARG, 0, 0, "unknown output convention %d", kind);
    cv->kind = kind;
    cv->nq = m->nq;
    cv->nv = m->nv;
    cv->nb = m->nb;
    cv->nee = m->nee;
    cv->nframes = m->nframes;
    if (kind == GRID_CONVENTION_PINOCCHIO) return GRID_OK;
    if (model_couplings(m) > 0)
        return grid_error_set(err, GRID_ERR_ARG, 0, 0, "output_convention='mujoco' does not support coupled (mimic) "
                              "joints yet; pass ignore_mimic=True or output_convention='pinocchio'");
    for (int b = 0; b < m->nb; b++) {
        const grid_joint *jt = &m->bodies[b].joint;
        int block = 0;
        /* every joint type states its MuJoCo coordinates (no default: a new type is a compile error here) */
        switch (jt->type) {
        case GRID_JOINT_REVOLUTE:
        case GRID_JOINT_PRISMATIC:
            break; /* one coordinate, the same in both */
        case GRID_JOINT_FREE:
            block = GRID_CONV_FREE;
            break;
        case GRID_JOINT_SPHERICAL:
            block = GRID_CONV_BALL; /* q xyzw -> wxyz; v is the local angular velocity in both */
            break;
        case GRID_JOINT_PLANAR:
            /* MuJoCo has no planar joint: it composes slide, slide, hinge, whose rates are the parent-frame ones */
        {
            char name[80];
            return grid_error_set(err, GRID_ERR_ARG, 0, 0, "output_convention='mujoco': joint '%s' is planar, which has "
                                  "no MuJoCo joint of its own (MuJoCo writes it as two slides and a hinge); use "
                                  "output_convention='pinocchio'", grid_name_for_message(jt->name, name, sizeof name));
        }
        case GRID_JOINT_NTYPES:
            assert(0);
            break;
        }
        if (!block) continue;
        if (cv->n_blocks == GRID_CONV_MAX_BLOCKS)
            return grid_error_set(err, GRID_ERR_ARG, 0, 0, "output_convention='mujoco' handles at most %d free and "
                                  "spherical joints; this robot has more", GRID_CONV_MAX_BLOCKS);
        assert(jt->uq >= 0 && jt->uv >= 0 && jt->uq + jt->nq <= m->nq && jt->uv + jt->nv <= m->nv);
        cv->block[cv->n_blocks++] = (grid_conv_block){block, jt->uq, jt->uv};
        cv->n_free += block == GRID_CONV_FREE;
    }
    return GRID_OK;
}

/* What a row's output is for the conversion, from the signature table: a primal row's stated quantity, or for a
   derivative or VJP the one its primal row (the first whose derivative / vjp link names it) implies; whether its
   cotangent is a torque's or an acceleration's (converted like u) or a world quantity's (passed); and the rows a
   derivative's chain rule needs beside it on a free flyer: the primal output, then M or M^-1. Returns 0, or -1 for a
   row with no conversion (a quantity neither stated nor derived: the MuJoCo convention refuses it). */
typedef struct {
    int out, cot_converts, n_aux;
    int aux[GRID_CONV_MAX_AUX];
} conv_row;

static const int primal_kind[] = {[GRID_QTY_WORLD] = GRID_CONV_OUT_NONE, [GRID_QTY_FORCE] = GRID_CONV_OUT_TAU,
                                  [GRID_QTY_ACCEL] = GRID_CONV_OUT_QDD, [GRID_QTY_INERTIA] = GRID_CONV_OUT_MAT,
                                  [GRID_QTY_JACOBIAN] = GRID_CONV_OUT_JAC, [GRID_QTY_CORIOLIS] = GRID_CONV_OUT_COR,
                                  [GRID_QTY_JACOBIAN_RATE] = GRID_CONV_OUT_JDOT};

/* a row of several outputs: each one's conversion, from its stated quantity (one that needs no aux row); -1 when one
   has none */
static int conv_parts(const grid_signature_row *row, int part[GRID_MAX_OUT])
{
    for (int k = 0; k < row->n_out; k++) {
        const int q = grid_sig_quantity_of(row->quantity, k);
        if (q == GRID_QTY_DERIVED || q == GRID_QTY_CORIOLIS || q == GRID_QTY_JACOBIAN_RATE) return -1;
        part[k] = primal_kind[q];
    }
    return 0;
}

static int conv_row_of(int algo, conv_row *c)
{
    memset(c, 0, sizeof *c);
    const grid_signature_row *row = grid_sig_row(algo);
    if (!row) return -1;
    if (row->n_out > 1) {
        int part[GRID_MAX_OUT];
        if (conv_parts(row, part) != 0) return -1;
        c->out = part[0];
        return 0;
    }
    if (row->quantity != GRID_QTY_DERIVED) {
        c->out = primal_kind[row->quantity];
        if (row->quantity == GRID_QTY_CORIOLIS) *c = (conv_row){GRID_CONV_OUT_COR, 0, 1, {GRID_ALGO_CRBA}};
        if (row->quantity == GRID_QTY_JACOBIAN_RATE) *c = (conv_row){GRID_CONV_OUT_JDOT, 0, 1, {row->rate_of}};
        return 0;
    }
    for (int p = 0; p < GRID_ALGO_COUNT; p++) {
        const grid_signature_row *pr = grid_sig_row(p);
        const int deriv = pr->derivative == algo, vjp = pr->vjp == algo;
        if (!deriv && !vjp) continue;
        switch (pr->quantity) {
        case GRID_QTY_FORCE: /* d tau: the chain rule needs tau and M */
            *c = (conv_row){deriv ? GRID_CONV_OUT_DTAU : GRID_CONV_OUT_VJP_TAU, vjp, 2, {p, GRID_ALGO_CRBA}};
            return 0;
        case GRID_QTY_ACCEL: /* d qdd: qdd and M^-1 (a VJP's h = M^-1 g comes out of its own output) */
            *c = deriv ? (conv_row){GRID_CONV_OUT_DQDD, 0, 2, {p, GRID_ALGO_MINV}} : (conv_row){GRID_CONV_OUT_VJP_QDD, 1, 1, {p}};
            return 0;
        case GRID_QTY_WORLD: /* of a world quantity: rows x nv (a Jacobian), its VJP a generalised force */
            *c = (conv_row){deriv ? GRID_CONV_OUT_JAC : GRID_CONV_OUT_TAU, 0, 0, {0}};
            return 0;
        default:
            return -1;
        }
    }
    return -1;
}

int grid_convention_aux_rows(int algo, int aux[GRID_CONV_MAX_AUX])
{
    conv_row c;
    if (conv_row_of(algo, &c) != 0) return 0;
    int n = 0;
    for (int x = 0; x < c.n_aux; x++) aux[n++] = c.aux[x];
    if (algo == GRID_ALGO_NLE) aux[n++] = GRID_ALGO_RNEA; /* NLE runs as RNEA (grid_convention_job) */
    return n;
}

/* what an input is, by its name in the row; -1: unknown */
static int role_of(const char *name)
{
    static const struct {
        const char *name;
        int role;
    } roles[] = {{"q", GRID_CONV_IN_Q},  {"qd", GRID_CONV_IN_V},        {"qdd", GRID_CONV_IN_A},
                 {"u", GRID_CONV_IN_U},  {"f_ext", GRID_CONV_IN_PASS}, {"cotangent", GRID_CONV_IN_G},
                 {"target", GRID_CONV_IN_PASS}};
    for (size_t k = 0; k < sizeof roles / sizeof roles[0]; k++)
        if (strcmp(name, roles[k].name) == 0) return roles[k].role;
    return -1;
}

/* every row's input roles, from the signature table once */
static signed char row_roles[GRID_ALGO_COUNT][GRID_MAX_IN];
static pthread_once_t roles_once = PTHREAD_ONCE_INIT;

static void init_roles(void)
{
    for (int a = 0; a < GRID_ALGO_COUNT; a++) {
        const grid_signature_row *r = grid_sig_row(a);
        for (int k = 0; k < r->n_in; k++) row_roles[a][k] = (signed char)role_of(r->in[k].name);
    }
}

int grid_convention_job(const grid_convention *cv, int algo, const void *const *in, grid_conv_job *job)
{
    assert(cv && job && cv->n_blocks >= 0 && cv->n_blocks <= GRID_CONV_MAX_BLOCKS);
    const grid_signature_row *row = grid_sig_row(algo);
    if (!row) return GRID_ERR_ARG;
    conv_row cr;
    if (conv_row_of(algo, &cr) != 0) return GRID_ERR_UNSUPPORTED;
    pthread_once(&roles_once, init_roles);
    /* the convention without its unused blocks, then the job's own fields */
    memcpy(&job->cv, cv, offsetof(grid_convention, block) + (size_t)cv->n_blocks * sizeof cv->block[0]);
    job->algo = algo;
    job->out_kind = cr.out;
    job->slot_q = job->slot_v = job->slot_a = job->slot_u = job->slot_g = -1;
    job->a_zero = 0;

    /* MuJoCo's bias includes Tdot v: on a free flyer NLE runs as RNEA with the zero acceleration of MuJoCo's basis */
    const int as_rnea = algo == GRID_ALGO_NLE && cv->n_free > 0;
    const int run_algo = as_rnea ? GRID_ALGO_RNEA : algo;
    const grid_signature_row *run = grid_sig_row(run_algo);
    job->run_algo = run_algo;
    job->n_in = run->n_in;
    for (int k = 0; k < GRID_MAX_IN; k++) job->role[k] = 0, job->src[k] = -1;
    for (int k = 0; k < run->n_in; k++) {
        const int role = row_roles[run_algo][k];
        if (role < 0) return GRID_ERR_UNSUPPORTED;
        job->role[k] = role;
        /* the caller's input of the same name (the same slot when the row runs itself) */
        for (int s = 0; s < row->n_in; s++)
            if ((run == row ? s == k : strcmp(row->in[s].name, run->in[k].name) == 0) && in && in[s]) job->src[k] = s;
        switch (role) {
        case GRID_CONV_IN_Q: job->slot_q = k; break;
        case GRID_CONV_IN_V: job->slot_v = k; break;
        case GRID_CONV_IN_U: job->slot_u = k; break;
        case GRID_CONV_IN_G:
            /* a world quantity's cotangent (the pose's) passes unchanged */
            if (cr.cot_converts) job->slot_g = k;
            else job->role[k] = GRID_CONV_IN_PASS;
            break;
        case GRID_CONV_IN_A:
            /* an absent acceleration is zero in MuJoCo's basis: Tdot v in Pinocchio's (zero without a free flyer) */
            if (job->src[k] >= 0 || cv->n_free > 0) job->slot_a = k;
            job->a_zero = job->src[k] < 0 && cv->n_free > 0;
            break;
        default: break;
        }
    }
    assert(job->slot_q == 0 && (job->slot_a < 0 || job->slot_v >= 0));
    /* each output: out_rows x nv per state for everything that changes */
    const grid_sizes sz = grid_sizes_of(cv->nq, cv->nv, cv->nb, cv->nee, cv->nframes);
    job->n_out = run->n_out;
    int part[GRID_MAX_OUT] = {cr.out};
    if (run->n_out > 1) (void)conv_parts(run, part);
    for (int o = 0; o < run->n_out; o++) {
        int shape[GRID_MAX_RANK];
        const int kind = part[o], rank = run->out[o].rank;
        const long long width = grid_sig_shape(&run->out[o], &sz, shape);
        job->part_kind[o] = kind;
        job->part_width[o] = width;
        job->part_rows[o] = rank == 2 ? shape[0] : 1;
        /* a generalised force is nv x columns (1, or a regressor's parameters); the rest out_rows x nv */
        if (kind == GRID_CONV_OUT_TAU) assert(rank >= 1 && shape[0] == cv->nv);
        else if (kind != GRID_CONV_OUT_NONE)
            assert(rank >= 1 && width % cv->nv == 0 &&
                   (kind >= GRID_CONV_OUT_DTAU || (shape[rank - 1] == cv->nv && width == job->part_rows[o] * cv->nv)));
    }
    job->out_width = job->part_width[0];
    job->out_rows = job->part_rows[0];
    /* a derivative's chain rule (or the Coriolis matrix's M Tdot) on a free flyer: its aux rows, each input and
       attribute the run row's of the same name */
    job->n_aux = 0;
    for (int x = 0; cv->n_free > 0 && x < cr.n_aux; x++) {
        const int ax = cr.aux[x];
        const grid_signature_row *ar = grid_sig_row(ax);
        assert(ar && ar->n_out >= 1 && ar->n_out <= GRID_MAX_OUT);
        for (int s = 0; s < GRID_MAX_IN; s++) job->aux_in[x][s] = -1;
        for (int s = 0; s < ar->n_in; s++)
            for (int k = 0; k < run->n_in; k++)
                if (strcmp(ar->in[s].name, run->in[k].name) == 0) job->aux_in[x][s] = k;
        assert(job->aux_in[x][0] == job->slot_q);
        for (int s = 0; s < GRID_MAX_ATTR; s++) job->aux_attr[x][s] = -1;
        for (int s = 0; s < ar->n_attr; s++)
            for (int k = 0; k < run->n_attr; k++)
                if (strcmp(ar->attr[s].name, run->attr[k].name) == 0) job->aux_attr[x][s] = k;
        job->aux[x] = ax;
        job->aux_n_in[x] = ar->n_in;
        job->aux_n_out[x] = ar->n_out;
        job->aux_total[x] = 0;
        for (int o = 0; o < ar->n_out; o++) job->aux_total[x] += job->aux_part[x][o] = grid_sig_shape(&ar->out[o], &sz, NULL);
        job->aux_width[x] = job->aux_part[x][0];
        job->n_aux = x + 1;
    }
    return GRID_OK;
}

/* A call runs on up to c->num_threads threads, each over a contiguous slice of at least GRID_CONV_SLICE_MIN states,
   in chunks whose converted inputs and output take about GRID_CONV_CHUNK_BYTES (they stay in cache between the
   passes and the run, which gets one chunk on one thread) and at least GRID_CONV_CHUNK_MIN states. */
#define GRID_CONV_SLICE_MIN 256
#define GRID_CONV_CHUNK_BYTES (256 << 10)
#define GRID_CONV_CHUNK_MIN 32
#define GRID_CONV_MAX_THREADS 1024

/* one thread's share of a call */
typedef struct {
    const grid_conv_job *job;
    const grid_call *c;
    int dtype;
    grid_conv_run_fn run;
    void *user;
    long long begin, end, chunk;      /* its states, and states per chunk */
    const long long *width, *at;      /* per-state widths of the run row's inputs; offsets of the converted ones */
    long long state_width;            /* elements per state of the converted inputs */
    char *scratch;                    /* chunk states of converted inputs, then of the aux rows' outputs */
    void *work;                       /* its part of c->work */
    size_t work_bytes;
    int status;
} conv_slice;

static void *conv_slice_run(void *arg)
{
    conv_slice *sl = arg;
    const grid_conv_job *job = sl->job;
    const grid_call *c = sl->c;
    const size_t es = (size_t)sl->dtype;
    const long long *width = sl->width, *at = sl->at;
    sl->status = GRID_OK;
    for (long long off = sl->begin; off < sl->end && sl->status == GRID_OK; off += sl->chunk) {
        const long long k = sl->end - off < sl->chunk ? sl->end - off : sl->chunk;
        const void *in[GRID_MAX_IN] = {0};
        const char *from[GRID_MAX_IN] = {0}; /* the caller's array of each input at this chunk's first state */
        for (int s = 0; s < job->n_in; s++) {
            if (job->src[s] >= 0) from[s] = (const char *)c->in[job->src[s]] + (size_t)(off * width[s]) * es;
            in[s] = at[s] >= 0 ? sl->scratch + (size_t)(at[s] * k) * es : from[s];
        }
        void *outs[GRID_MAX_OUT] = {0};
        for (int o = 0; o < job->n_out; o++) outs[o] = (char *)c->out[o] + (size_t)(off * job->part_width[o]) * es;
        /* state b of input s: the caller's (NULL when absent) and the converted one (NULL when not converted) */
#define SRC(s, b) ((s) >= 0 && from[s] ? from[s] + (size_t)((b) * width[s]) * es : NULL)
#define CNV(s, b) ((s) >= 0 && at[s] >= 0 ? (char *)in[s] + (size_t)((b) * width[s]) * es : NULL)
        const int q = job->slot_q, v = job->slot_v, a = job->slot_a, u = job->slot_u, g = job->slot_g;
        for (long long b = 0; b < k; b++) {
            if (sl->dtype == GRID_FLOAT64)
                cv_d_pre(job, (const double *)SRC(q, b), (const double *)SRC(v, b), (const double *)SRC(a, b),
                         (const double *)SRC(u, b), (const double *)SRC(g, b), (double *)CNV(q, b),
                         (double *)CNV(v, b), (double *)CNV(a, b), (double *)CNV(u, b), (double *)CNV(g, b));
            else
                cv_f_pre(job, (const float *)SRC(q, b), (const float *)SRC(v, b), (const float *)SRC(a, b),
                         (const float *)SRC(u, b), (const float *)SRC(g, b), (float *)CNV(q, b), (float *)CNV(v, b),
                         (float *)CNV(a, b), (float *)CNV(u, b), (float *)CNV(g, b));
        }
        grid_call cc = *c;
        cc.n_in = job->n_in;
        cc.batch = k;
        cc.num_threads = 1;
        cc.work = sl->work;
        cc.work_bytes = sl->work_bytes;
        /* the aux rows first (into scratch after the converted inputs), on the converted inputs of their names */
        char *aux_out[GRID_CONV_MAX_AUX] = {0};
        char *next = sl->scratch + (size_t)(sl->state_width * k) * es;
        for (int x = 0; x < job->n_aux && sl->status == GRID_OK; x++) {
            const grid_signature_row *ar = grid_sig_row(job->aux[x]);
            const void *ain[GRID_MAX_IN] = {0};
            for (int s = 0; s < ar->n_in; s++) ain[s] = job->aux_in[x][s] >= 0 ? in[job->aux_in[x][s]] : NULL;
            aux_out[x] = next;
            void *aouts[GRID_MAX_OUT] = {0};
            for (int o = 0; o < job->aux_n_out[x]; o++) {
                aouts[o] = next;
                next += (size_t)(job->aux_part[x][o] * k) * es;
            }
            grid_call ac = cc;
            ac.in = ain;
            ac.out = aouts;
            ac.n_in = ar->n_in;
            ac.n_out = job->aux_n_out[x];
            grid_conv_aux_attrs(job, x, c->attr, ac.attr);
            sl->status = sl->run(sl->user, job->aux[x], &ac);
        }
        cc.in = in;
        cc.out = outs;
        if (sl->status == GRID_OK) sl->status = sl->run(sl->user, job->run_algo, &cc);
        for (int p = 0; p < job->n_out; p++) {
            grid_conv_job part;
            const grid_conv_job *jp = job;
            if (job->n_out > 1) {
                grid_conv_job_part(job, p, &part);
                jp = &part;
            }
            for (long long b = 0; sl->status == GRID_OK && jp->out_kind != GRID_CONV_OUT_NONE && b < k; b++) {
                char *o = (char *)outs[p] + (size_t)(b * jp->out_width) * es;
                const void *xs[GRID_CONV_MAX_AUX] = {0};
                for (int x = 0; x < job->n_aux; x++) xs[x] = aux_out[x] + (size_t)(b * job->aux_width[x]) * es;
                if (sl->dtype == GRID_FLOAT64)
                    cv_d_post(jp, (const double *)CNV(q, b), (const double *)CNV(v, b), (const double *)CNV(a, b),
                              (const double *)CNV(u, b), (const double *)CNV(g, b), (const double *const *)xs,
                              (double *)o);
                else
                    cv_f_post(jp, (const float *)CNV(q, b), (const float *)CNV(v, b), (const float *)CNV(a, b),
                              (const float *)CNV(u, b), (const float *)CNV(g, b), (const float *const *)xs, (float *)o);
            }
        }
#undef SRC
#undef CNV
    }
    return NULL;
}

int grid_convention_call(const grid_convention *cv, int algo, int dtype, const grid_call *c, grid_context *ctx,
                         grid_conv_run_fn run, void *user, long long chunk_states)
{
    if (!cv || !c || !ctx || !run || (dtype != GRID_FLOAT32 && dtype != GRID_FLOAT64) || c->batch < 0 || !c->in ||
        !c->out || chunk_states < 0)
        return GRID_ERR_ARG;
    const grid_signature_row *row = grid_sig_row(algo);
    if (!row || c->n_in != row->n_in || c->n_out != row->n_out) return GRID_ERR_ARG;
    for (int o = 0; o < row->n_out; o++)
        if (!c->out[o]) return GRID_ERR_ARG;
    grid_conv_job job;
    int rc = grid_convention_job(cv, algo, c->in, &job);
    if (rc != GRID_OK || c->batch == 0) return rc;
    if (!c->in[0]) return GRID_ERR_ARG;

    /* per-state widths of the run row's inputs, and where the converted ones sit in a chunk's scratch */
    const grid_sizes sz = grid_sizes_of(cv->nq, cv->nv, cv->nb, cv->nee, cv->nframes);
    const grid_signature_row *rr = grid_sig_row(job.run_algo);
    long long width[GRID_MAX_IN], at[GRID_MAX_IN], per_state = 0;
    for (int s = 0; s < job.n_in; s++) {
        width[s] = grid_sig_shape(&rr->in[s], &sz, NULL);
        const int converted =
            s == job.slot_q || s == job.slot_v || s == job.slot_a || s == job.slot_u || s == job.slot_g;
        at[s] = converted ? per_state : -1;
        if (converted) per_state += width[s];
    }
    long long aux_width = 0;
    for (int x = 0; x < job.n_aux; x++) aux_width += job.aux_total[x];
    const size_t es = (size_t)dtype, state_bytes = (size_t)(per_state + aux_width) * es;
    long long out_width = 0;
    for (int o = 0; o < job.n_out; o++) out_width += job.part_width[o];
    long long chunk = chunk_states ? chunk_states
                                   : (long long)(GRID_CONV_CHUNK_BYTES / (state_bytes + (size_t)out_width * es));
    if (chunk < GRID_CONV_CHUNK_MIN) chunk = GRID_CONV_CHUNK_MIN;

    /* the slices: threads as asked, each with enough states, each its own scratch and part of the workspace */
    long long threads = c->num_threads > 0 ? c->num_threads : 1;
    if (threads > GRID_CONV_MAX_THREADS) threads = GRID_CONV_MAX_THREADS;
    if (threads > c->batch / GRID_CONV_SLICE_MIN) threads = c->batch / GRID_CONV_SLICE_MIN;
    if (threads < 1) threads = 1;
    const long long per = (c->batch + threads - 1) / threads;
    if (chunk > per) chunk = per;
    const size_t scratch_bytes = ((size_t)chunk * state_bytes + 63) / 64 * 64;
    const size_t work_share = c->work ? c->work_bytes / (size_t)threads / 64 * 64 : 0;
    /* one block: the slices, their threads and whether each started, then the scratch (cache-line aligned) */
    const size_t head = ((size_t)threads * (sizeof(conv_slice) + sizeof(pthread_t) + 1) + 63) / 64 * 64;
    const grid_ctx_mark_t mark = grid_ctx_mark(ctx);
    char *mem = grid_ctx_alloc(ctx, head + (size_t)threads * scratch_bytes, 0);
    if (!mem) return GRID_ERR_NOMEM;
    conv_slice *sl = (conv_slice *)mem;
    pthread_t *tid = (pthread_t *)(sl + threads);
    char *started = (char *)(tid + threads), *scratch = mem + head;
    for (long long t = 0; t < threads; t++) {
        const long long begin = t * per, end = begin + per < c->batch ? begin + per : c->batch;
        sl[t] = (conv_slice){&job, c, dtype, run, user, begin, end, chunk, width, at, per_state,
                             scratch + (size_t)t * scratch_bytes, c->work ? (char *)c->work + (size_t)t * work_share : NULL,
                             work_share, GRID_OK};
        /* the calling thread takes slice 0; a thread that cannot be started has its slice run here afterwards */
        started[t] = t > 0 && pthread_create(&tid[t], NULL, conv_slice_run, &sl[t]) == 0;
    }
    conv_slice_run(&sl[0]);
    for (long long t = 1; t < threads; t++) {
        if (started[t]) pthread_join(tid[t], NULL);
        else conv_slice_run(&sl[t]);
    }
    for (long long t = 0; t < threads && rc == GRID_OK; t++) rc = sl[t].status;
    grid_ctx_release(ctx, mark);
    return rc;
}
