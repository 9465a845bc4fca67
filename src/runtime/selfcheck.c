/* The post-build self-check: every method, variant, attribute value and batch path of a fresh CPU library against the float64 reference, judged by the round-off its dtype allows on each state. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "grid/abi.h"
#include "grid/ref.h"
#include "grid/runtime.h"
#include "grid/selfcheck.h"

/* How a block (one output of one state) is judged. err = max |lib - ref| over the block, S = max |ref|,
   u = the unit round-off of the library's dtype.
   1. err <= QUICK * u * S passes at once.
   2. Otherwise two spreads are measured, PERTURB_RUNS runs each:
      sigma: the reference on the model and inputs moved by one rounding (every inertia, axis and input by u of
        its own size, every placement and centre of mass by u of its distance from the world origin): what
        rounding the problem does to the answer, so it grows with the state's conditioning (cond(M),
        cancellation) and with the robot's distance from the origin;
      noise: the library on its inputs moved by a few roundings: its own round-off (of large intermediates,
        say) shows as noise between such neighbours, where a wrong constant or operation does not; it counts
        up to sqrt(u) S + NOISE_OVER_SIGMA sigma (noise at the output's own size is garbage, not round-off).
      The block passes when err <= ROUNDOFF * (sigma + noise + u S).
   A block whose reference is not finite (a singular mass matrix: massless moving links) carries no evidence
   and is skipped; a non-finite library block passes only where a perturbed reference is not finite either.
   Angles at the +-pi cut of atan2 are compared as angles. */
#define CHECK_STATES 4
#define TAIL_STATES 17        /* a full tile and a tail for every lane width up to 16 */
#define PERTURB_RUNS 3
#define QUICK 16.0
#define ROUNDOFF 64.0
#define NOISE_OVER_SIGMA 16.0
#define PATH_ULPS 8.0         /* batch paths run the same per-state code: equal to the small batch within this */
#define PATH_SECONDS 0.1      /* the threaded, streamed batch is skipped when it would take longer than this */
#define PATH_BYTES (16LL << 20)
#define STREAM_BYTES (8LL << 20) /* GRID_STREAM_MIN_BYTES of src/emit/lane_store.h */
#define BIG_STATES 16384LL
#define MAX_COMBOS 16384LL    /* attribute combinations checked one by one (a Jacobian's frames x reference frames) */    /* the largest team threshold the emitter sets (emit.c, min_parallel) */

/* a reproducible number in [-1, 1) */
static double next_unit(unsigned long long *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(*s >> 11) / 4503599627370496.0 - 1.0;
}

/* about N(0, 1): the sum of three uniforms, scaled */
static double next_normal(unsigned long long *s) { return (next_unit(s) + next_unit(s) + next_unit(s)); }

static double now_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* q of one state from the joint-model table: unit quaternions, moderate angles and translations */
static void fill_q(const grid_model *m, double *q, unsigned long long *s)
{
    for (int b = 0; b < m->nb; b++) {
        const grid_joint *j = &m->bodies[b].joint;
        const grid_joint_model *jm = grid_joint_model_of(j->type);
        if (j->mimic) continue; /* no coordinates of its own */
        double *x = q + j->uq;
        for (int i = 0; i < j->nq; i++)
            x[i] = (i == jm->angle || j->type == GRID_JOINT_REVOLUTE ? 1.5 : 0.3) * next_unit(s);
        if (jm->quat >= 0) {
            double n = 0;
            for (int i = 0; i < 4; i++) {
                x[jm->quat + i] = next_unit(s) + (i == 3 ? 2.0 : 0.0);
                n += x[jm->quat + i] * x[jm->quat + i];
            }
            for (int i = 0; i < 4; i++) x[jm->quat + i] /= sqrt(n);
        }
    }
}

/* ---- the model and inputs moved by one rounding ---- */

static double vec_norm(const double *x, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++) s += x[i] * x[i];
    return sqrt(s);
}

/* x += e * |x| * noise, componentwise at the vector's norm (an error of u in its largest component) */
static void nudge_vec(double *x, int n, double e, unsigned long long *s)
{
    const double scale = e * vec_norm(x, n);
    for (int i = 0; i < n; i++) x[i] += scale * next_normal(s);
}

/* R <- R (I + [d]x): a rotation turned by an angle of e, as a rounded rotation matrix is */
static void nudge_rotation(double *R, double e, unsigned long long *s)
{
    const double d[3] = {e * next_normal(s), e * next_normal(s), e * next_normal(s)};
    const double K[9] = {1, -d[2], d[1], d[2], 1, -d[0], -d[1], d[0], 1};
    double out[9];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) out[3 * i + j] = R[3 * i] * K[j] + R[3 * i + 1] * K[3 + j] + R[3 * i + 2] * K[6 + j];
    memcpy(R, out, sizeof out);
}

/* a placement turned by e and moved by e * reach: the world coordinates the code computes carry an error of one
   rounding of their own size, the distance from the world origin (reach), not of the local offset's */
static void nudge_transform(grid_transform *t, double e, double reach, unsigned long long *s)
{
    nudge_rotation(t->R, e, s);
    for (int i = 0; i < 3; i++) t->p[i] += e * reach * next_normal(s);
}

/* a copy of m with every number the algorithms read moved by about e of its size; arrays owned by the copy,
   names shared with m (free with free_perturbed) */
static int perturbed_model(const grid_model *m, double e, unsigned long long seed, grid_model *pm)
{
    *pm = *m;
    pm->bodies = malloc((size_t)m->nb * sizeof *pm->bodies);
    pm->frames = malloc((size_t)(m->nframes > 0 ? m->nframes : 1) * sizeof *pm->frames);
    if (!pm->bodies || !pm->frames) {
        free(pm->bodies);
        free(pm->frames);
        return GRID_ERR_NOMEM;
    }
    memcpy(pm->bodies, m->bodies, (size_t)m->nb * sizeof *pm->bodies);
    if (m->nframes > 0) memcpy(pm->frames, m->frames, (size_t)m->nframes * sizeof *pm->frames);
    double *reach = malloc((size_t)m->nb * sizeof(double));
    if (!reach) {
        free(pm->bodies);
        free(pm->frames);
        return GRID_ERR_NOMEM;
    }
    unsigned long long s = seed;
    pm->gravity *= 1 + e * next_normal(&s);
    for (int b = 0; b < m->nb; b++) {
        grid_body *bd = &pm->bodies[b];
        /* the body's distance from the world origin, at most (parents come first; a floating base adds its q) */
        reach[b] = vec_norm(bd->joint.placement.p, 3) + (bd->joint.parent >= 0 ? reach[bd->joint.parent] : 1.0);
        nudge_transform(&bd->joint.placement, e, reach[b], &s);
        nudge_vec(bd->joint.axis, 3, e, &s);
        bd->joint.mimic_multiplier *= 1 + e * next_normal(&s);
        bd->joint.mimic_offset *= 1 + e * next_normal(&s);
        bd->inertia.mass *= 1 + e * next_normal(&s);
        const double cr = e * (reach[b] + vec_norm(bd->inertia.com, 3));
        for (int i = 0; i < 3; i++) bd->inertia.com[i] += cr * next_normal(&s);
        /* a symmetric change at the inertia's own size */
        const double in = e * vec_norm(bd->inertia.I_com, 9);
        for (int i = 0; i < 3; i++)
            for (int j = i; j < 3; j++) {
                const double d = in * next_normal(&s);
                bd->inertia.I_com[3 * i + j] += d;
                if (j != i) bd->inertia.I_com[3 * j + i] += d;
            }
    }
    for (int f = 0; f < m->nframes; f++) {
        grid_frame *fr = &pm->frames[f];
        nudge_transform(&fr->placement, e, vec_norm(fr->placement.p, 3) + (fr->body >= 0 ? reach[fr->body] : 1.0), &s);
    }
    free(reach);
    return GRID_OK;
}

static void free_perturbed(grid_model *pm)
{
    free(pm->bodies);
    free(pm->frames);
}

/* ---- one check point: a method, its present inputs, its attributes, some states ---- */

typedef struct {
    const grid_lib *lib;
    const grid_model *m;
    int algo;
    const grid_method_info *r;
    int dt;
    size_t esz;
    double u;                  /* unit round-off of the library's dtype */
    grid_selfcheck_method *rep;
    double *scratch;           /* one state of the widest input */
    double per_state;          /* seconds the library took per state in the last judged batch */
    /* the failure, for the message */
    double fail_err, fail_bound, fail_sigma, fail_scale;
    int fail_state, fail_output;
    const char *fail_what;     /* NULL: a block beyond round-off; else what else went wrong */
} checker;

typedef struct {
    long long n;               /* states */
    unsigned absent;           /* bit k: input k absent */
    double *in64[GRID_MAX_IN], *out64[GRID_MAX_OUT];
    void *inl[GRID_MAX_IN], *outl[GRID_MAX_OUT];
    void *work;
    size_t work_bytes;
} batch;

static void batch_free(batch *b)
{
    for (int k = 0; k < GRID_MAX_IN; k++) {
        free(b->in64[k]);
        free(b->inl[k]);
    }
    for (int k = 0; k < GRID_MAX_OUT; k++) {
        free(b->out64[k]);
        free(b->outl[k]);
    }
    free(b->work);
    memset(b, 0, sizeof *b);
}

/* allocate n states (reference buffers only when ref), inputs absent where bit k of `absent` is set */
static int batch_alloc(const checker *c, batch *b, long long n, unsigned absent, int ref, int threads)
{
    memset(b, 0, sizeof *b);
    b->n = n;
    b->absent = absent;
    int oom = 0;
    for (int k = 0; k < c->r->n_in; k++) {
        if (absent >> k & 1) continue;
        const size_t w = (size_t)c->r->in[k].width * (size_t)n;
        oom |= !(b->inl[k] = malloc(w * c->esz + 1));
        if (ref) oom |= !(b->in64[k] = malloc(w * sizeof(double) + 1));
    }
    for (int k = 0; k < c->r->n_out; k++) {
        const size_t w = (size_t)c->r->out[k].width * (size_t)n;
        oom |= !(b->outl[k] = malloc(w * c->esz + 1));
        if (ref) oom |= !(b->out64[k] = malloc(w * sizeof(double) + 1));
    }
    const size_t wb = grid_lib_meta(c->lib)->work_bytes;
    if (wb) {
        /* aligned as the ABI asks (lane vectors), a whole number of 64-byte blocks per thread */
        b->work_bytes = (wb + 63) / 64 * 64 * (size_t)threads;
        oom |= !(b->work = aligned_alloc(64, b->work_bytes));
    }
    if (oom) batch_free(b);
    return oom ? GRID_ERR_NOMEM : GRID_OK;
}

/* fill state `state` of the float64 inputs from seed, and its dtype copy (the reference then reads exactly
   what the library reads) */
static void fill_state(const checker *c, batch *b, long long state, unsigned long long seed)
{
    unsigned long long s = seed;
    for (int k = 0; k < c->r->n_in; k++) {
        if (!b->inl[k]) continue;
        const long long w = c->r->in[k].width;
        double *x = c->scratch;
        if (k == 0) fill_q(c->m, x, &s); /* every row's first input is q */
        else for (long long i = 0; i < w; i++) x[i] = next_unit(&s);
        if (!strcmp(c->r->in[k].name, "target")) /* [frame id, tool offset]: a valid frame, by the state */
            x[0] = c->m->nframes > 0 ? (double)(state % c->m->nframes) : 0;
        for (long long i = 0; i < w; i++) {
            if (c->dt == GRID_FLOAT32) {
                const float f = (float)x[i];
                ((float *)b->inl[k])[state * w + i] = f;
                if (b->in64[k]) b->in64[k][state * w + i] = f;
            } else {
                ((double *)b->inl[k])[state * w + i] = x[i];
                if (b->in64[k]) b->in64[k][state * w + i] = x[i];
            }
        }
    }
}

static grid_call call_of(const checker *c, const batch *b, const int *attr, int f64, int threads)
{
    grid_call k;
    memset(&k, 0, sizeof k);
    k.in = f64 ? (const void *const *)b->in64 : (const void *const *)b->inl;
    k.out = f64 ? (void *const *)b->out64 : (void *const *)b->outl;
    k.n_in = c->r->n_in;
    k.n_out = c->r->n_out;
    k.batch = b->n;
    for (int a = 0; a < c->r->n_attr; a++) k.attr[a] = attr[a];
    k.num_threads = threads;
    if (!f64) {
        k.work = b->work;
        k.work_bytes = b->work_bytes;
    }
    return k;
}

static double lib_value(const checker *c, const void *x, long long i)
{
    return c->dt == GRID_FLOAT32 ? (double)((const float *)x)[i] : ((const double *)x)[i];
}

/* |x - y|, and angles at the +-pi cut of atan2 (roll, yaw) compared as angles: both within [-pi, pi] and apart by
   about 2 pi are the same angle */
static double elem_diff(double x, double y)
{
    const double d = fabs(x - y), cut = M_PI * (1 + 1e-6);
    return d > M_PI && fabs(x) <= cut && fabs(y) <= cut ? fabs(d - 2 * M_PI) : d;
}

/* err and S of one block, -1 in *err when the reference is not finite there, INFINITY when only ours is not */
static void block_measure(const checker *c, const void *x, const double *ref, long long n, double *err, double *scale)
{
    double e = 0, s = 0;
    int lib_bad = 0;
    for (long long i = 0; i < n; i++) {
        if (!isfinite(ref[i])) {
            *err = -1;
            *scale = 0;
            return;
        }
        const double v = lib_value(c, x, i);
        if (!isfinite(v)) lib_bad = 1;
        else if (elem_diff(v, ref[i]) > e) e = elem_diff(v, ref[i]);
        if (fabs(ref[i]) > s) s = fabs(ref[i]);
    }
    *err = lib_bad ? INFINITY : e;
    *scale = s;
}

/* input k of every state of b moved by e of its own size (q's angles: of max(|q|, 1)), into x */
static void nudge_inputs(const checker *c, const batch *b, int k, double *x, double e, unsigned long long *s)
{
    const long long w = c->r->in[k].width;
    memcpy(x, b->in64[k], (size_t)(w * b->n) * sizeof(double));
    for (long long st = 0; st < b->n; st++) {
        double *y = x + st * w;
        if (k == 0)
            for (long long i = 0; i < w; i++) y[i] += e * (fabs(y[i]) > 1 ? fabs(y[i]) : 1) * next_normal(s);
        else nudge_vec(y, (int)w, e, s);
    }
}

/* the library's own change of each block over PERTURB_RUNS runs on its inputs moved by a few roundings: its
   round-off (of large intermediates, say) shows as noise between such neighbours, where a wrong constant or a
   wrong operation does not. sigma[k * n + b] */
static int lib_spread(checker *c, const batch *b, const int *attr, double *sigma)
{
    const grid_method_info *r = c->r;
    batch p;
    int rc = batch_alloc(c, &p, b->n, b->absent, 1, 1);
    if (rc) return rc;
    for (int k = 0; k < r->n_out; k++)
        for (long long st = 0; st < b->n; st++) sigma[k * b->n + st] = 0;
    for (int run = 0; run < PERTURB_RUNS && rc == GRID_OK; run++) {
        unsigned long long s = 0xA0761D6478BD642Full * (unsigned long long)(run + 1) + (unsigned long long)c->algo;
        for (int k = 0; k < r->n_in; k++) {
            if (!p.inl[k]) continue;
            const long long w = r->in[k].width * b->n;
            nudge_inputs(c, b, k, p.in64[k], 4 * c->u, &s);
            for (long long i = 0; i < w; i++) {
                if (c->dt == GRID_FLOAT32) ((float *)p.inl[k])[i] = (float)p.in64[k][i];
                else ((double *)p.inl[k])[i] = p.in64[k][i];
            }
        }
        grid_call k = call_of(c, &p, attr, 0, 1);
        if ((rc = grid_lib_fn(c->lib, c->algo)(&k)) != GRID_OK) break;
        for (int o = 0; o < r->n_out; o++) {
            const long long w = r->out[o].width;
            for (long long st = 0; st < b->n; st++) {
                const char *x = (const char *)p.outl[o] + (size_t)(st * w) * c->esz;
                const char *y = (const char *)b->outl[o] + (size_t)(st * w) * c->esz;
                double d = 0;
                for (long long i = 0; i < w; i++) {
                    const double xv = lib_value(c, x, i), yv = lib_value(c, y, i);
                    const double e = isfinite(xv) && isfinite(yv) ? elem_diff(xv, yv) : INFINITY;
                    if (!(e <= d)) d = e;
                }
                if (!(d <= sigma[o * b->n + st])) sigma[o * b->n + st] = d;
            }
        }
    }
    batch_free(&p);
    return rc;
}

/* the reference's largest change of each block over the perturbed runs; sigma[k * n + b] (INFINITY where a
   perturbed reference is not finite) */
static int perturbation_spread(const checker *c, const batch *b, const int *attr, double *sigma)
{
    const grid_method_info *r = c->r;
    int rc = GRID_OK;
    double *pin[GRID_MAX_IN] = {0}, *pout[GRID_MAX_OUT] = {0};
    for (int k = 0; k < r->n_in && rc == GRID_OK; k++)
        if (b->in64[k] && !(pin[k] = malloc((size_t)(r->in[k].width * b->n) * sizeof(double) + 1))) rc = GRID_ERR_NOMEM;
    for (int k = 0; k < r->n_out && rc == GRID_OK; k++)
        if (!(pout[k] = malloc((size_t)(r->out[k].width * b->n) * sizeof(double) + 1))) rc = GRID_ERR_NOMEM;
    for (int k = 0; k < r->n_out; k++)
        for (long long s = 0; s < b->n; s++) sigma[k * b->n + s] = 0;
    for (int run = 0; run < PERTURB_RUNS && rc == GRID_OK; run++) {
        unsigned long long s = 0xD1B54A32D192ED03ull * (unsigned long long)(run + 1) + (unsigned long long)c->algo;
        grid_model pm;
        if ((rc = perturbed_model(c->m, c->u, s, &pm))) break;
        for (int k = 0; k < r->n_in; k++)
            if (pin[k]) nudge_inputs(c, b, k, pin[k], c->u, &s);
        grid_call k = call_of(c, b, attr, 1, 1);
        k.in = (const void *const *)pin;
        k.out = (void *const *)pout;
        rc = grid_ref_batch_as(&pm, c->algo, GRID_FLOAT64, c->dt, &k);
        free_perturbed(&pm);
        if (rc) break;
        for (int o = 0; o < r->n_out; o++) {
            const long long w = r->out[o].width;
            for (long long st = 0; st < b->n; st++) {
                double d = 0;
                for (long long i = 0; i < w; i++) {
                    const double x = pout[o][st * w + i], y = b->out64[o][st * w + i];
                    const double e = isfinite(x) ? elem_diff(x, y) : INFINITY;
                    if (!(e <= d)) d = e;
                }
                if (!(d <= sigma[o * b->n + st])) sigma[o * b->n + st] = d;
            }
        }
    }
    for (int k = 0; k < GRID_MAX_IN; k++) free(pin[k]);
    for (int k = 0; k < GRID_MAX_OUT; k++) free(pout[k]);
    return rc;
}

static void note_ratio(checker *c, double ratio, double rel)
{
    if (ratio > c->rep->worst_ratio) c->rep->worst_ratio = ratio;
    if (rel > c->rep->worst_relative) c->rep->worst_relative = rel;
}

/* Run the library and the reference on b (inputs filled) and judge every block. 0 pass, 1 fail (c->fail_*),
   else a status. */
static int judge(checker *c, batch *b, const int *attr)
{
    grid_call k = call_of(c, b, attr, 0, 1);
    const double t0 = now_seconds();
    int rc = grid_lib_fn(c->lib, c->algo)(&k);
    c->per_state = (now_seconds() - t0) / (double)b->n;
    if (rc != GRID_OK) {
        c->fail_what = "returned an error status";
        c->fail_err = rc;
        return 1;
    }
    grid_call k64 = call_of(c, b, attr, 1, 1);
    if ((rc = grid_ref_batch_as(c->m, c->algo, GRID_FLOAT64, c->dt, &k64)) != GRID_OK) return rc;
    c->rep->checks++;
    const grid_method_info *r = c->r;
    double *sigma = NULL;
    for (int o = 0; o < r->n_out; o++) {
        const long long w = r->out[o].width;
        for (long long st = 0; st < b->n; st++) {
            double err, S;
            block_measure(c, (const char *)b->outl[o] + (size_t)(st * w) * c->esz, b->out64[o] + st * w, w, &err, &S);
            if (err < 0) {
                c->rep->non_finite_reference++;
                continue;
            }
            const double floor = c->u * S;
            if (err <= QUICK * floor) {
                note_ratio(c, floor > 0 ? err / (ROUNDOFF * floor) : 0, S > 0 ? err / S : err);
                continue;
            }
            if (!sigma) {
                const size_t nb = (size_t)(r->n_out * b->n);
                if (!(sigma = malloc(2 * nb * sizeof(double)))) return GRID_ERR_NOMEM;
                if ((rc = perturbation_spread(c, b, attr, sigma)) || (rc = lib_spread(c, b, attr, sigma + nb))) {
                    free(sigma);
                    return rc;
                }
                c->rep->perturbed++;
            }
            const double sg = sigma[o * b->n + st];
            if (!isfinite(sg)) {
                c->rep->non_finite_reference++; /* singular within one rounding: no evidence either way */
                continue;
            }
            /* the library's own noise counts up to sqrt(u) of the scale (more only where the problem's conditioning
               shows it too): noise of the output's own size is garbage, not round-off */
            const double noise = sigma[(size_t)(r->n_out * b->n) + (size_t)(o * b->n + st)];
            const double cap = sqrt(c->u) * S + NOISE_OVER_SIGMA * sg;
            const double bound = ROUNDOFF * (sg + (noise < cap ? noise : cap) + floor);
            const double ratio = bound > 0 ? err / bound : (err > 0 ? INFINITY : 0);
            note_ratio(c, ratio, S > 0 ? err / S : err);
            if (!(ratio <= 1)) {
                c->fail_err = err;
                c->fail_bound = bound;
                c->fail_sigma = sg;
                c->fail_scale = S;
                c->fail_state = (int)st;
                c->fail_output = o;
                c->fail_what = NULL;
                free(sigma);
                return 1;
            }
        }
    }
    free(sigma);
    return 0;
}

/* the library on n states (state i = check state i mod small->n) with `threads` threads: every block equal to the
   small batch's within PATH_ULPS roundings. 0 pass, 1 fail, else a status. */
static int check_path(checker *c, const batch *small, long long n, int threads, unsigned absent, const int *attr)
{
    batch b;
    int rc = batch_alloc(c, &b, n, absent, 0, threads);
    if (rc) return rc;
    const grid_method_info *r = c->r;
    for (int k = 0; k < r->n_in; k++) {
        if (!b.inl[k]) continue;
        const size_t w = (size_t)r->in[k].width * c->esz;
        for (long long st = 0; st < n; st++)
            memcpy((char *)b.inl[k] + (size_t)st * w, (const char *)small->inl[k] + (size_t)(st % small->n) * w, w);
    }
    grid_call k = call_of(c, &b, attr, 0, threads);
    const double t0 = now_seconds();
    rc = grid_lib_fn(c->lib, c->algo)(&k);
    c->per_state = (now_seconds() - t0) / (double)n;
    if (rc != GRID_OK) {
        c->fail_what = "returned an error status on a large batch";
        c->fail_err = rc;
        batch_free(&b);
        return 1;
    }
    for (int o = 0; o < r->n_out && !rc; o++) {
        const long long w = r->out[o].width;
        for (long long st = 0; st < n && !rc; st++) {
            const char *x = (const char *)b.outl[o] + (size_t)(st * w) * c->esz;
            const char *y = (const char *)small->outl[o] + (size_t)((st % small->n) * w) * c->esz;
            double e = 0, S = 0;
            for (long long i = 0; i < w; i++) {
                const double xv = lib_value(c, x, i), yv = lib_value(c, y, i);
                if (isfinite(yv) && !(elem_diff(xv, yv) <= e)) e = elem_diff(xv, yv);
                if (isfinite(yv) && fabs(yv) > S) S = fabs(yv);
            }
            if (!(e <= PATH_ULPS * c->u * S)) {
                c->fail_what = "differs between batch sizes (the batched, threaded or streamed path)";
                c->fail_err = e;
                c->fail_scale = S;
                c->fail_state = (int)st;
                c->fail_output = o;
                c->fail_bound = (double)n;
                rc = 1;
            }
        }
    }
    batch_free(&b);
    return rc;
}

/* ---- the whole check ---- */

/* "without qdd, f_ext" for the inputs absent in `absent` */
static void variant_text(const grid_method_info *r, unsigned absent, char *buf, size_t cap)
{
    buf[0] = 0;
    for (int k = 0; k < r->n_in; k++)
        if (absent >> k & 1)
            snprintf(buf + strlen(buf), cap - strlen(buf), "%s%s", buf[0] ? ", " : " without ", r->in[k].name);
}

static void attr_text(const grid_model *m, const grid_method_info *r, const int *attr, char *buf, size_t cap)
{
    buf[0] = 0;
    for (int a = 0; a < r->n_attr; a++) {
        snprintf(buf + strlen(buf), cap - strlen(buf), "%s%s=%d", a ? ", " : " at ", r->attr_name[a], attr[a]);
        if (strcmp(r->attr_name[a], "frame") == 0 && attr[a] >= 0 && attr[a] < m->nframes)
            snprintf(buf + strlen(buf), cap - strlen(buf), " ('%s')", m->frames[attr[a]].name);
    }
}

static int fail_message(const checker *c, unsigned absent, const int *attr, grid_error *err)
{
    const char *dts = c->dt == GRID_FLOAT32 ? "float32" : "float64";
    char var[160], at[200];
    variant_text(c->r, absent, var, sizeof var);
    attr_text(c->m, c->r, attr, at, sizeof at);
    const char *ways = "Ways out: codegen=False (the float64 reference provider), codegen_schedule='rolled' or "
                       "'unrolled' (the other layout of the code), dtype='float64', or another compiler or flags "
                       "(GRID_RBD_CC, GRID_RBD_CFLAGS)";
    if (c->fail_what)
        return grid_error_set(err, GRID_ERR_BUILD, 0, 0,
                              "self-check failed: the compiled %s%s%s (%s) %s (%s %.3g at state %d of %.0f); the "
                              "entry was not published. %s",
                              c->r->name, var, at, dts, c->fail_what,
                              c->fail_bound > 0 ? "difference" : "status", c->fail_err, c->fail_state,
                              c->fail_bound, ways);
    const double rel = c->fail_scale > 0 ? c->fail_err / c->fail_scale : c->fail_err;
    return grid_error_set(err, GRID_ERR_BUILD, 0, 0,
                          "self-check failed: the compiled %s%s%s (%s) disagrees with the float64 reference on "
                          "check state %d, output '%s': error %.3g (relative error %.3g), while rounding the problem in %s "
                          "moves the answer by only %.3g (%.3g of its scale %.3g; the bound is %.0fx that plus %.0fx "
                          "one rounding of the scale, %.3g). An error this far beyond round-off points at the "
                          "compiler or its flags, and the entry was not published. %s",
                          c->r->name, var, at, dts, c->fail_state, c->r->out[c->fail_output].name, c->fail_err, rel,
                          dts, c->fail_sigma, c->fail_scale > 0 ? c->fail_sigma / c->fail_scale : 0, c->fail_scale,
                          ROUNDOFF, ROUNDOFF, c->fail_bound, ways);
}

/* one (variant, attributes) point on n states, plus the batch paths when paths is set */
static int check_point(checker *c, unsigned absent, const int *attr, long long n, unsigned long long seed, int paths,
                       grid_error *err)
{
    batch b;
    int rc = batch_alloc(c, &b, n, absent, 1, 1);
    if (rc) return grid_error_set(err, GRID_ERR_NOMEM, 0, 0, "self-check: out of memory");
    for (long long st = 0; st < n; st++) fill_state(c, &b, st, seed + 0x9E3779B97F4A7C15ull * (unsigned long long)st);
    rc = judge(c, &b, attr);
    if (rc == 0 && paths) {
        /* one state (broadcast to every lane), a full tile and a tail, then a batch large enough for the thread team
           and the streamed stores, on two threads, where it fits the time and memory at hand */
        rc = check_path(c, &b, 1, 1, absent, attr);
        if (rc == 0) rc = check_path(c, &b, TAIL_STATES, 2, absent, attr);
        const double per_state = c->per_state; /* warm: the tail's */
        long long in_w = 0;
        for (int k = 0; k < c->r->n_in; k++) in_w += absent >> k & 1 ? 0 : c->r->in[k].width;
        const long long out_bytes = c->r->out[0].width * (long long)c->esz;
        long long state_bytes = in_w * (long long)c->esz;
        for (int o = 0; o < c->r->n_out; o++) state_bytes += c->r->out[o].width * (long long)c->esz;
        /* the streamed stores where they fit the memory at hand, else the team alone */
        long long big = (STREAM_BYTES + out_bytes - 1) / (out_bytes > 0 ? out_bytes : 1) + TAIL_STATES;
        if (big * state_bytes > PATH_BYTES) big = BIG_STATES;
        if (big < BIG_STATES) big = BIG_STATES;
        if (rc == 0 && absent == 0 && big * state_bytes <= PATH_BYTES && (double)big * per_state <= PATH_SECONDS) {
            rc = check_path(c, &b, big, 2, absent, attr);
            c->rep->threaded = 1;
        } else if (rc == 0 && absent == 0) c->rep->threaded = -1;
    }
    if (rc == 1) rc = fail_message(c, absent, attr, err);
    else if (rc > 1) rc = grid_error_set(err, rc, 0, 0, "self-check: the reference refused %s (status %d)", c->r->name, rc);
    batch_free(&b);
    return rc;
}

static int check_method(const grid_lib *lib, const grid_model *m, int algo, grid_selfcheck_method *rep,
                        grid_error *err)
{
    const grid_method_info *r = grid_lib_method(lib, algo);
    const grid_robot_meta_t *meta = grid_lib_meta(lib);
    checker c;
    memset(&c, 0, sizeof c);
    c.lib = lib;
    c.m = m;
    c.algo = algo;
    c.r = r;
    c.dt = meta->dtype;
    c.esz = c.dt == GRID_FLOAT32 ? sizeof(float) : sizeof(double);
    c.u = c.dt == GRID_FLOAT32 ? ldexp(1.0, -24) : ldexp(1.0, -53);
    c.rep = rep;
    memset(rep, 0, sizeof *rep);
    rep->name = r->name;
    long long widest = 1;
    for (int k = 0; k < r->n_in; k++) widest = r->in[k].width > widest ? r->in[k].width : widest;
    if (!(c.scratch = malloc((size_t)widest * sizeof(double))))
        return grid_error_set(err, GRID_ERR_NOMEM, 0, 0, "self-check: out of memory");
    int rc = GRID_OK;
    unsigned opt = 0;
    for (int k = 0; k < r->n_in; k++) opt |= (unsigned)(r->in[k].optional != GRID_REQUIRED) << k;
    const unsigned long long seed = 0x9E3779B97F4A7C15ull * (unsigned long long)(algo + 1);
    /* every variant (each subset of the optional inputs absent) at each attribute's lowest and highest value, with
       the batch paths */
    for (unsigned absent = 0;; absent = (absent - opt) & opt) {
        for (int cmb = 0; cmb < 1 << r->n_attr; cmb++) {
            int attr[GRID_MAX_ATTR] = {0};
            for (int a = 0; a < r->n_attr; a++) attr[a] = (cmb >> a) & 1 ? r->attr_hi[a] - 1 : r->attr_lo[a];
            rc = check_point(&c, absent, attr, CHECK_STATES, seed + absent * 7919u + (unsigned)cmb, cmb == 0, err);
            if (rc) goto done;
        }
        if (((absent - opt) & opt) == 0) break;
    }
    /* then every combination of attribute values (every frame under every reference frame) on one state, or,
       past MAX_COMBOS, every value of each attribute at least once */
    long long all = 1, cover = 0;
    for (int a = 0; a < r->n_attr; a++) {
        const long long range = r->attr_hi[a] - r->attr_lo[a];
        all *= range > 0 ? range : 1;
        cover = range > cover ? range : cover;
    }
    const int product = all <= MAX_COMBOS;
    for (long long i = 0; i < (product ? all : cover) && r->n_attr > 0; i++) {
        int attr[GRID_MAX_ATTR] = {0};
        long long rest = i;
        for (int a = 0; a < r->n_attr; a++) {
            const long long range = r->attr_hi[a] - r->attr_lo[a] > 0 ? r->attr_hi[a] - r->attr_lo[a] : 1;
            attr[a] = r->attr_lo[a] + (int)((product ? rest : i) % range);
            rest /= range;
        }
        rc = check_point(&c, 0, attr, 1, seed + 104729u * (unsigned)i, 0, err);
        if (rc) goto done;
    }
done:
    free(c.scratch);
    return rc;
}

int grid_lib_selfcheck(const grid_lib *lib, const grid_model *m, grid_selfcheck_report *report, grid_error *err)
{
    const grid_robot_meta_t *meta = grid_lib_meta(lib);
    grid_selfcheck_report local;
    if (!report) report = &local;
    memset(report, 0, sizeof *report);
    if (meta->target != GRID_TARGET_C) return GRID_OK; /* CUDA code needs a GPU: checked by the GPU tests */
    /* the large batches run on two threads: the OpenMP runtime stays loaded, so its idle workers never outlive
       their code when the library is unloaded after the check */
    grid_lib_pin_openmp(lib);
    const double t0 = now_seconds();
    for (int algo = 0; algo < GRID_ALGO_COUNT; algo++) {
        if (!grid_lib_method(lib, algo) || !grid_lib_fn(lib, algo)) continue;
        grid_selfcheck_method *rep = &report->method[report->n_methods];
        const int rc = check_method(lib, m, algo, rep, err);
        report->n_methods++;
        rep->seconds = now_seconds() - t0 - report->seconds;
        report->seconds += rep->seconds;
        if (rc) return rc;
    }
    return GRID_OK;
}

int grid_selfcheck_report_json(const grid_selfcheck_report *rep, int dtype, char *buf, size_t cap)
{
    int n = snprintf(buf, cap, "{\"version\": 1, \"dtype\": \"%s\", \"quick\": %g, \"roundoff\": %g, \"seconds\": %.3f, "
                     "\"methods\": {", dtype == GRID_FLOAT32 ? "float32" : "float64", QUICK, ROUNDOFF, rep->seconds);
    for (int i = 0; i < rep->n_methods && n >= 0 && (size_t)n < cap; i++) {
        const grid_selfcheck_method *r = &rep->method[i];
        n += snprintf(buf + n, cap - (size_t)n,
                      "%s\"%s\": {\"checks\": %d, \"perturbed\": %d, \"worst_ratio\": %.4g, \"worst_relative_error\": "
                      "%.4g, \"non_finite_reference_blocks\": %d, \"threaded_path\": %s, \"seconds\": %.3f}",
                      i ? ", " : "", r->name, r->checks, r->perturbed, r->worst_ratio, r->worst_relative,
                      r->non_finite_reference, r->threaded > 0 ? "true" : "false", r->seconds);
    }
    if (n >= 0 && (size_t)n < cap) n += snprintf(buf + n, cap - (size_t)n, "}}\n");
    return n >= 0 && (size_t)n < cap ? n : -1;
}
