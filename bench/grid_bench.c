/* Times every method a generated robot.so exports (its rows, meta.methods), one thread, per call at batch 1 and per state at a larger batch; prints JSON. */
/*
 * usage: grid_bench ROBOT.so [--algos a,b,..] [--pool N] [--batch B] [--runs R] [--min-ms T]
 *                            [--threads K] [--frame F] [--reference local|world|local_world_aligned]
 *                            [--absent NAME,..]
 *
 * (a) per call: grid_<algo>() at batch = 1 over a pool of N pre-generated random states,
 *     cycled (the analogue of one Pinocchio call);
 * (b) per state: one grid_<algo>() call at batch = B over B states, time / B (amortised).
 * One run is a timed loop of at least T milliseconds; runs of every algorithm and mode are
 * interleaved in R rounds, and the figure is the median over the R runs.
 * Inputs follow each row: q uniform in [-1, 1], the base quaternion of a floating base (nq == nv + 1)
 * normalised; every other input uniform in [-1, 1] (one pool per input position); optional inputs
 * named in --absent (default f_ext) are passed as NULL. Attributes: frame <- --frame, reference_frame
 * <- --reference, any other its lowest value. In the library's dtype (meta->dtype).
 */
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "grid/abi.h"

typedef const grid_robot_meta_t *(*meta_fn)(void);

typedef struct {
    const char *so_path;
    const char *algos;    /* comma-separated names, NULL = every row of the library */
    const char *absent;   /* comma-separated names of optional inputs passed as NULL */
    int pool, batch, runs, threads, frame, reference;
    double min_ms;
} options;

typedef struct {
    double median_us, min_us;
    long long calls_per_run;
} timing;

/* the states and outputs of one benchmark, in the library's dtype */
typedef struct {
    int nq, nv, nb, nee, elem;  /* elem: bytes per element */
    long long nstates;
    unsigned char *q;                   /* configurations (input "q") */
    unsigned char *target;              /* per-call targets (input "target"): the last frame, a tool offset */
    unsigned char *in[GRID_MAX_IN];     /* one random pool per input position, in_width[k] per state */
    long long in_width[GRID_MAX_IN];
    unsigned char *out;
    long long out_width;                /* the widest row's outputs, per state */
    unsigned char *work;
    size_t work_bytes;
} states;

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* xorshift64*: a fixed-seed generator so every run times the same states */
static uint64_t rng_state = 0x9E3779B97F4A7C15ULL;

static double uniform_pm1(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    uint64_t r = rng_state * 0x2545F4914F6CDD1DULL;
    return 2.0 * ((double)(r >> 11) * (1.0 / 9007199254740992.0)) - 1.0;
}

static void store(unsigned char *base, int elem, long long i, double x)
{
    if (elem == 8) ((double *)base)[i] = x;
    else ((float *)base)[i] = (float)x;
}

static void *aligned_zeroed(size_t bytes)
{
    size_t n = (bytes + 63) / 64 * 64;
    void *p = aligned_alloc(64, n ? n : 64);
    if (p) memset(p, 0, n ? n : 64);
    return p;
}

/* fill nstates random states; a floating base gets a unit quaternion at q[3..6] */
static int states_init(states *s, const grid_robot_meta_t *m, long long nstates, int threads)
{
    memset(s, 0, sizeof *s);
    s->nq = m->nq;
    s->nv = m->nv;
    s->nb = m->nb;
    s->nee = m->nee;
    s->elem = m->dtype == GRID_FLOAT32 ? 4 : 8;
    s->nstates = nstates;
    for (int i = 0; i < m->n_methods; i++) {
        const grid_method_info *r = &m->methods[i];
        long long w = 0;
        for (int k = 0; k < r->n_out; k++) w += r->out[k].width;
        if (w > s->out_width) s->out_width = w;
        for (int k = 0; k < r->n_in; k++)
            if (r->in[k].width > s->in_width[k]) s->in_width[k] = r->in[k].width;
    }
    size_t e = (size_t)s->elem, n = (size_t)nstates;
    s->q = aligned_zeroed(n * (size_t)m->nq * e);
    s->out = aligned_zeroed(n * (size_t)s->out_width * e);
    s->work_bytes = m->work_bytes * (size_t)(threads > 0 ? threads : 1);
    s->work = aligned_zeroed(s->work_bytes);
    if (!s->q || !s->out || !s->work) return -1;
    for (int k = 0; k < GRID_MAX_IN; k++) {
        if (!s->in_width[k]) continue;
        if (!(s->in[k] = aligned_zeroed(n * (size_t)s->in_width[k] * e))) return -1;
        for (long long i = 0; i < nstates * s->in_width[k]; i++) store(s->in[k], s->elem, i, uniform_pm1());
    }

    if (!(s->target = aligned_zeroed(n * 4 * e))) return -1;
    for (long long i = 0; i < nstates; i++) {
        const double t[4] = {m->nframes > 0 ? m->nframes - 1 : 0, 0.05, -0.02, 0.1};
        for (int j = 0; j < 4; j++) store(s->target, s->elem, 4 * i + j, t[j]);
    }

    int floating = m->nq == m->nv + 1;
    for (long long i = 0; i < nstates; i++) {
        double qi[m->nq > 0 ? m->nq : 1];
        for (int j = 0; j < m->nq; j++) qi[j] = uniform_pm1();
        if (floating) {
            double n2 = 0;
            for (int j = 3; j < 7; j++) n2 += qi[j] * qi[j];
            if (n2 < 1e-12) { qi[3] = qi[4] = qi[5] = 0; qi[6] = n2 = 1; }
            for (int j = 3; j < 7; j++) qi[j] /= sqrt(n2);
        }
        for (int j = 0; j < m->nq; j++) store(s->q, s->elem, i * m->nq + j, qi[j]);
    }
    return 0;
}

static void states_free(states *s)
{
    free(s->q); free(s->target); free(s->out); free(s->work);
    for (int k = 0; k < GRID_MAX_IN; k++) free(s->in[k]);
}

static int wanted(const char *list, const char *name);

/* one call's argument arrays (the grid_call points into them) */
typedef struct {
    const void *in[GRID_MAX_IN];
    void *out[GRID_MAX_OUT];
    grid_call c;
} call_args;

/* the call for states [first, first + batch) of row r: every input of the row from its pool (optional
   inputs named in --absent NULL), the outputs one after the other in the output pool */
static void make_call(call_args *ca, const states *s, const grid_method_info *r, long long first, long long batch,
                      const options *o)
{
    memset(ca, 0, sizeof *ca);
    const size_t e = (size_t)s->elem;
    for (int k = 0; k < r->n_in; k++) {
        const grid_arg_info *a = &r->in[k];
        if (a->optional && wanted(o->absent, a->name)) continue;
        ca->in[k] = strcmp(a->name, "q") == 0        ? s->q + (size_t)first * (size_t)s->nq * e
                  : strcmp(a->name, "target") == 0 ? s->target + (size_t)first * 4 * e
                                                   : s->in[k] + (size_t)first * (size_t)a->width * e;
    }
    size_t at = 0;
    for (int k = 0; k < r->n_out; k++) {
        ca->out[k] = s->out + (size_t)batch * at * e + (size_t)first * (size_t)r->out[k].width * e;
        at += (size_t)r->out[k].width;
    }
    grid_call *c = &ca->c;
    c->in = ca->in;
    c->out = ca->out;
    c->n_in = r->n_in;
    c->n_out = r->n_out;
    c->batch = batch;
    for (int k = 0; k < r->n_attr; k++)
        c->attr[k] = strcmp(r->attr_name[k], "frame") == 0 ? o->frame
                   : strcmp(r->attr_name[k], "reference_frame") == 0 ? o->reference : r->attr_lo[k];
    c->num_threads = o->threads;
    c->work = s->work;
    c->work_bytes = s->work_bytes;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* one timing job: an entry point and the calls it cycles through */
typedef struct {
    int row;            /* index in meta->methods */
    grid_batch_fn fn;
    call_args *calls;
    int ncalls;
    double states_per_call;
    long long n;        /* calls per timed loop */
    double *per_state;  /* one figure per round, us per state */
    int status;         /* first non-zero status of a warm-up call */
} job;

/* warm up (stopping at a failing call), then grow the call count until a loop lasts min_ms */
static void calibrate(job *j, double min_ms)
{
    for (int i = 0; i < 2 * j->ncalls; i++) {
        int rc = j->fn(&j->calls[i % j->ncalls].c);
        if (rc) { j->status = rc; return; }
    }
    long long n = j->ncalls;
    for (;;) {
        double t0 = now_seconds();
        for (long long i = 0; i < n; i++) j->fn(&j->calls[i % j->ncalls].c);
        double dt = now_seconds() - t0;
        if (dt * 1e3 >= min_ms || n > (1LL << 34)) {
            if (dt > 0) n = (long long)((double)n * (min_ms / 1e3) / dt) + 1;
            break;
        }
        n *= (dt * 1e3 < min_ms / 16) ? 8 : 2;
    }
    j->n = n < j->ncalls ? j->ncalls : n;
}

/* one timed loop; microseconds per state */
static double timed_loop(const job *j)
{
    double t0 = now_seconds();
    for (long long i = 0; i < j->n; i++) j->fn(&j->calls[i % j->ncalls].c);
    return (now_seconds() - t0) / (double)j->n / j->states_per_call * 1e6;
}

static timing summarize(const job *j, int runs)
{
    qsort(j->per_state, (size_t)runs, sizeof *j->per_state, cmp_double);
    return (timing){j->per_state[runs / 2], j->per_state[0], j->n};
}

/* outputs that are NaN or infinite over the first nstates states of row r */
static long long count_nonfinite(const states *s, const grid_method_info *r, long long nstates)
{
    long long w = 0, bad = 0;
    for (int k = 0; k < r->n_out; k++) w += r->out[k].width;
    for (long long i = 0; i < w * nstates; i++) {
        double x = s->elem == 8 ? ((const double *)s->out)[i] : (double)((const float *)s->out)[i];
        if (!isfinite(x)) bad++;
    }
    return bad;
}

static int wanted(const char *list, const char *name)
{
    if (!list) return 1;
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0) return 1;
        if (!end) break;
        p = end + 1;
    }
    return 0;
}

static int usage(void)
{
    fprintf(stderr,
            "usage: grid_bench ROBOT.so [--algos a,b,..] [--pool N] [--batch B] [--runs R] [--min-ms T]\n"
            "                           [--threads K] [--frame F] [--reference local|world|local_world_aligned]\n"
            "                           [--absent NAME,..]\n");
    return 2;
}

static int parse_args(int argc, char **argv, options *o)
{
    *o = (options){NULL, NULL, "f_ext", 256, 256, 7, 1, -1, GRID_LOCAL, 20.0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (a[0] != '-') {
            if (o->so_path) return -1;
            o->so_path = a;
            continue;
        }
        if (!val) return -1;
        i++;
        if (strcmp(a, "--algos") == 0) o->algos = val;
        else if (strcmp(a, "--absent") == 0) o->absent = val;
        else if (strcmp(a, "--pool") == 0) o->pool = atoi(val);
        else if (strcmp(a, "--batch") == 0) o->batch = atoi(val);
        else if (strcmp(a, "--runs") == 0) o->runs = atoi(val);
        else if (strcmp(a, "--min-ms") == 0) o->min_ms = atof(val);
        else if (strcmp(a, "--threads") == 0) o->threads = atoi(val);
        else if (strcmp(a, "--frame") == 0) o->frame = atoi(val);
        else if (strcmp(a, "--reference") == 0) {
            if (strcmp(val, "local") == 0) o->reference = GRID_LOCAL;
            else if (strcmp(val, "world") == 0) o->reference = GRID_WORLD;
            else if (strcmp(val, "local_world_aligned") == 0) o->reference = GRID_LOCAL_WORLD_ALIGNED;
            else return -1;
        } else return -1;
    }
    if (!o->so_path || o->pool < 1 || o->batch < 1 || o->runs < 1 || o->min_ms <= 0) return -1;
    return 0;
}

static const char *reference_name(int r)
{
    return r == GRID_WORLD ? "world" : r == GRID_LOCAL_WORLD_ALIGNED ? "local_world_aligned" : "local";
}

int main(int argc, char **argv)
{
    options o;
    if (parse_args(argc, argv, &o)) return usage();

    /* load the library and check its metadata */
    void *lib = dlopen(o.so_path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "grid_bench: %s\n", dlerror());
        return 1;
    }
    meta_fn get_meta = (meta_fn)dlsym(lib, "grid_robot_meta");
    const grid_robot_meta_t *m = get_meta ? get_meta() : NULL;
    if (!m) {
        fprintf(stderr, "grid_bench: %s exports no grid_robot_meta\n", o.so_path);
        return 1;
    }
    if (m->abi_version != GRID_ABI_VERSION || m->target != 0 ||
        (m->dtype != GRID_FLOAT32 && m->dtype != GRID_FLOAT64) || m->nq < 1 || m->nv < 1 || m->nb < 1) {
        fprintf(stderr, "grid_bench: %s: unsupported metadata (abi %d, target %d, dtype %d, nq %d, nv %d, nb %d)\n",
                o.so_path, m->abi_version, m->target, m->dtype, m->nq, m->nv, m->nb);
        return 1;
    }
    if (o.frame < 0) o.frame = m->nframes > 0 ? m->nframes - 1 : 0;

    /* one pool large enough for both the per-call cycle and the batch */
    long long nstates = o.pool > o.batch ? o.pool : o.batch;
    states s;
    if (states_init(&s, m, nstates, o.threads)) {
        fprintf(stderr, "grid_bench: out of memory\n");
        return 1;
    }
    /* two jobs per row of the library: (a) batch 1 over the pool, (b) one call at batch B */
    const int nrows = m->n_methods;
    job *jobs = calloc(2 * (size_t)(nrows > 0 ? nrows : 1), sizeof *jobs);
    const char **missing = calloc((size_t)(nrows > 0 ? nrows : 1), sizeof *missing);
    long long *nonfinite = calloc((size_t)(nrows > 0 ? nrows : 1), sizeof *nonfinite);
    int njobs = 0;
    for (int k = 0; k < nrows && jobs && missing && nonfinite; k++) {
        const grid_method_info *r = &m->methods[k];
        if (!wanted(o.algos, r->name)) continue;
        char sym[96];
        snprintf(sym, sizeof sym, "grid_%s", r->name);
        grid_batch_fn fn = (grid_batch_fn)dlsym(lib, sym);
        if (!fn) {
            missing[k] = "missing";
            continue;
        }
        for (int mode = 0; mode < 2 && jobs; mode++) {
            job *j = &jobs[njobs++];
            j->row = k;
            j->fn = fn;
            j->ncalls = mode == 0 ? o.pool : 1;
            j->states_per_call = mode == 0 ? 1.0 : (double)o.batch;
            j->calls = calloc((size_t)j->ncalls, sizeof *j->calls);
            j->per_state = calloc((size_t)o.runs, sizeof *j->per_state);
            if (!j->calls || !j->per_state) { free(jobs); jobs = NULL; break; }
            for (int i = 0; i < j->ncalls; i++) make_call(&j->calls[i], &s, r, i, mode == 0 ? 1 : o.batch, &o);
        }
    }
    if (!jobs || !missing || !nonfinite) {
        fprintf(stderr, "grid_bench: out of memory\n");
        return 1;
    }

    /* calibrate each job; then time in rounds, one loop of every job per round, so that a
       slow spell of the machine spreads over all methods instead of one */
    for (int i = 0; i < njobs; i++) {
        job *j = &jobs[i];
        memset(s.out, 0, (size_t)s.nstates * (size_t)s.out_width * (size_t)s.elem);
        calibrate(j, o.min_ms);
        if (!j->status) {
            long long bad = count_nonfinite(&s, &m->methods[j->row], j->ncalls == 1 ? o.batch : o.pool);
            if (bad > nonfinite[j->row]) nonfinite[j->row] = bad;
        }
    }
    for (int r = 0; r < o.runs; r++)
        for (int i = 0; i < njobs; i++)
            if (!jobs[i].status) jobs[i].per_state[r] = timed_loop(&jobs[i]);

    /* report, in the library's row order */
    printf("{\n  \"library\": \"grid\",\n  \"so\": \"%s\",\n", o.so_path);
    printf("  \"nq\": %d, \"nv\": %d, \"nb\": %d, \"nframes\": %d, \"nee\": %d,\n", m->nq, m->nv, m->nb, m->nframes,
           m->nee);
    printf("  \"floating_base\": %s, \"dtype\": \"%s\", \"work_bytes\": %zu,\n", m->nq == m->nv + 1 ? "true" : "false",
           m->dtype == GRID_FLOAT32 ? "float32" : "float64", m->work_bytes);
    printf("  \"model_hash\": \"%s\",\n", m->model_hash ? m->model_hash : "");
    printf("  \"pool\": %d, \"batch\": %d, \"runs\": %d, \"min_ms\": %g, \"threads\": %d,\n", o.pool, o.batch, o.runs,
           o.min_ms, o.threads);
    printf("  \"jacobian_frame\": %d, \"reference_frame\": \"%s\",\n", o.frame, reference_name(o.reference));
    printf("  \"unit\": \"us (per_call: one call at batch 1; batch: per state at batch B)\",\n  \"results\": {");
    int first = 1, failures = 0;
    for (int k = 0; k < nrows; k++) {
        const char *name = m->methods[k].name;
        if (!wanted(o.algos, name)) continue;
        printf("%s\n    \"%s\": ", first ? "" : ",", name);
        first = 0;
        if (missing[k]) {
            printf("{\"error\": \"symbol grid_%s missing\"}", name);
            failures++;
            continue;
        }
        const job *ja = NULL, *jb = NULL;
        for (int i = 0; i < njobs; i++)
            if (jobs[i].row == k) *(jobs[i].ncalls == 1 ? &jb : &ja) = &jobs[i];
        if (ja->status || jb->status) {
            printf("{\"error\": \"status %d (batch 1) / %d (batch %d)\"}", ja->status, jb->status, o.batch);
            failures++;
            continue;
        }
        timing t1 = summarize(ja, o.runs), t2 = summarize(jb, o.runs);
        printf("{\"per_call_us\": %.6g, \"per_call_min_us\": %.6g, \"batch_per_state_us\": %.6g, "
               "\"batch_per_state_min_us\": %.6g, \"batch_call_us\": %.6g, \"nonfinite_outputs\": %lld}",
               t1.median_us, t1.min_us, t2.median_us, t2.min_us, t2.median_us * o.batch, nonfinite[k]);
    }
    printf("\n  }\n}\n");

    for (int i = 0; i < njobs; i++) {
        free(jobs[i].calls);
        free(jobs[i].per_state);
    }
    free(jobs);
    free(missing);
    free(nonfinite);
    states_free(&s);
    dlclose(lib);
    return failures ? 3 : 0;
}
