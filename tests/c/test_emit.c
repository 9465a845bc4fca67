/* Generated robot libraries compiled with cc, loaded, and compared with the float64 reference. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <math.h>
#include "check.h"
#include "calls.h"
#include "grid/abi.h"
#include "grid/emit.h"
#include "grid/ref.h"
#include "grid/runtime.h"
#include "grid/sha256.h"
#include "../../src/driver/build_internal.h" /* grid_fs_copy */
#include "grid/urdf.h"

/* the flags docs/emitter.md recommends (gcc's compile-time savers only for gcc); warnings are errors */
#define TEST_CFLAGS_COMMON "-march=native -ffp-contract=fast -fno-math-errno -fPIC -fopenmp -Wall -Wextra -Werror"
#define TEST_CFLAGS_GCC "-fno-schedule-insns2 --param=max-combine-insns=2 -fno-tree-pre -fno-dse -fno-tree-dse"
/* the optimisation level: -O2 (the build driver's) for iiwa, whose library also meets the optimiser's warnings, and
   for float32, whose error budget holds with the optimiser's contractions (FMA) and not always without them; -O0 for
   the other float64 libraries, a third of the compile time for the same C semantics (tests/python builds every robot
   at -O2); GRID_TEST_EMIT_OPT overrides both */
static const char *opt_level = "-O0";
static int build_dtype; /* the dtype of the library build_lib compiles */
static int float64_only; /* 1: the robot tests build float64 only (the rolled pass: tests/python/test_rolled.py
                            compares the rolled float32 libraries of five robots) */

static char tmpdir[64];
static int lib_counter;
static int quiet; /* 1: comparisons report their error without failing (perturbation test) */
static int emit_schedule = GRID_SCHEDULE_AUTO; /* the schedule emit_and_build asks for */

/* ---- random states ---- */

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static double urand(double lo, double hi)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return lo + (hi - lo) * (double)(rng >> 11) / 9007199254740992.0;
}

/* q: angles in [-pi, pi], a free-flyer position in [-1, 1] and a non-unit quaternion */
static void random_q(const grid_model *m, double *q)
{
    for (int i = 0; i < m->nb; i++) {
        const grid_joint *j = &m->bodies[i].joint;
        if (j->type == GRID_JOINT_FREE) {
            double n = 0.0, s = urand(0.5, 2.0);
            for (int k = 0; k < 3; k++) q[j->iq + k] = urand(-1, 1);
            for (int k = 3; k < 7; k++) {
                q[j->iq + k] = urand(-1, 1);
                n += q[j->iq + k] * q[j->iq + k];
            }
            for (int k = 3; k < 7; k++) q[j->iq + k] *= s / sqrt(n);
        } else if (j->type == GRID_JOINT_PRISMATIC) {
            q[j->iq] = urand(-0.5, 0.5);
        } else {
            q[j->iq] = urand(-M_PI, M_PI);
        }
    }
}

/* ---- compiling and loading ---- */

typedef struct {
    void *dl;
    const grid_robot_meta_t *meta;
    grid_batch_fn fn[GRID_ALGO_COUNT];
} lib;

/* copy a file whole or not at all (grid_fs_copy, the build driver's, leaves a partial one on failure); 0 on success */
static int copy_whole(const char *from, const char *to)
{
    if (grid_fs_copy(from, to) == 0) return 0;
    remove(to);
    return -1;
}

/* write src to a file, compile it to a shared object (or take it from the compile cache) and load it; 0 on success */
static int build_lib(const char *src, size_t len, lib *L)
{
    char cpath[128], sopath[128], cmd[1024];
    memset(L, 0, sizeof *L);
    int id = lib_counter++;
    snprintf(cpath, sizeof cpath, "%s/robot%d.c", tmpdir, id);
    snprintf(sopath, sizeof sopath, "%s/robot%d.so", tmpdir, id);
    FILE *f = fopen(cpath, "wb");
    if (!f) return -1;
    fwrite(src, 1, len, f);
    fclose(f);
    const char *cc = getenv("CC") ? getenv("CC") : "cc";
    char flags[256];
    const char *opt = getenv("GRID_TEST_EMIT_OPT") ? getenv("GRID_TEST_EMIT_OPT")
                      : build_dtype == GRID_FLOAT32 ? "-O2" : opt_level;
    snprintf(flags, sizeof flags, "%s %s %s", opt, TEST_CFLAGS_COMMON, strstr(cc, "clang") ? "" : TEST_CFLAGS_GCC);
    /* the parts of a large robot compile on two cores, as the build driver does */
    int parts = 1;
    if (sscanf(src, "/* grid-rbd parts: %d", &parts) != 1 || parts < 1) parts = 1;
    if (parts == 1)
        snprintf(cmd, sizeof cmd, "%s %s -shared %s -o %s -lm", cc, flags, cpath, sopath);
    else
        snprintf(cmd, sizeof cmd,
                 "seq 1 %d | xargs -P 2 -I@ %s %s -DGRID_PART=@ -c %s -o %s.part@.o && %s -shared -fopenmp %s.part*.o -o %s -lm",
                 parts, cc, flags, cpath, cpath, cc, cpath, sopath);
    /* the compile cache (GRID_TEST_EMIT_CACHE, a folder): a library keyed by its source and compile command; make test
       sets it so that the AddressSanitizer pass loads the libraries the plain pass compiled (the generated code is not
       instrumented either way) */
    char cached[512] = "";
    const char *cache = getenv("GRID_TEST_EMIT_CACHE");
    if (cache && *cache) {
        char key[1280];
        unsigned char d[32];
        snprintf(key, sizeof key, "%s %s %d", cc, flags, parts);
        grid_sha256_ctx h;
        grid_sha256_init(&h);
        grid_sha256_update(&h, key, strlen(key) + 1);
        grid_sha256_update(&h, src, len);
        grid_sha256_final(&h, d);
        int at = snprintf(cached, sizeof cached, "%s/", cache);
        for (int k = 0; k < 16 && at > 0 && at < (int)sizeof cached - 8; k++) at += snprintf(cached + at, 3, "%02x", d[k]);
        snprintf(cached + at, sizeof cached - (size_t)at, ".so");
    }
    double t0 = check_seconds_();
    int hit = cached[0] && copy_whole(cached, sopath) == 0;
    int sys_rc = hit ? 0 : system(cmd);
    if (getenv("GRID_TEST_EMIT_TIMES"))
        printf("    build %d: %zu bytes, %d parts, %s, %.1f s%s\n", id, len, parts, opt, check_seconds_() - t0,
               hit ? " (cached)" : "");
    if (sys_rc != 0) {
        fprintf(stderr, "  compile failed: %s\n", cmd);
        return -1;
    }
    if (cached[0] && !hit) { /* published whole or not at all: a private copy renamed into place */
        char tmp[560];
        snprintf(tmp, sizeof tmp, "%s.%d.tmp", cached, (int)getpid());
        if (copy_whole(sopath, tmp) != 0 || rename(tmp, cached) != 0) remove(tmp);
    }
    /* RTLD_NODELETE: libgomp worker threads outlive dlclose otherwise */
    L->dl = dlopen(sopath, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!L->dl) {
        fprintf(stderr, "  dlopen: %s\n", dlerror());
        return -1;
    }
    const grid_robot_meta_t *(*meta)(void) = (const grid_robot_meta_t *(*)(void))dlsym(L->dl, "grid_robot_meta");
    if (!meta) return -1;
    L->meta = meta();
    /* the shared test workspace covers this library's threads */
    if (L->meta->work_bytes * 4 > test_work_len) return -1;
    for (int a = 0; a < GRID_ALGO_COUNT; a++) {
        char name[64];
        snprintf(name, sizeof name, "grid_%s", grid_algo_name(a));
        L->fn[a] = (grid_batch_fn)dlsym(L->dl, name);
    }
    return 0;
}

static void close_lib(lib *L)
{
    if (L->dl) dlclose(L->dl);
    memset(L, 0, sizeof *L);
}

static int emit_and_build(const grid_model *m, int dtype, const char *hash, lib *L)
{
    grid_emit_options o = grid_emit_options_default();
    o.dtype = dtype;
    o.model_hash = hash;
    o.schedule = emit_schedule;
    /* every row, in float64 the opt-in ones (built only when named: the second-order derivatives) too; their
       float32 code is the same program (tests/python/test_second_order.py runs it), and their build time counts */
    int every[GRID_ALGO_COUNT];
    o.methods = every;
    o.n_methods = 0;
    for (int a = 0; a < GRID_ALGO_COUNT; a++)
        if (dtype == GRID_FLOAT64 || !grid_sig_opt_in(a)) every[o.n_methods++] = a;
    char *src = NULL;
    size_t len = 0;
    grid_error err;
    if (grid_emit_source(m, &o, &src, &len, &err) != GRID_OK) {
        fprintf(stderr, "  emit failed: %s\n", err.message);
        return -1;
    }
    build_dtype = dtype;
    int rc = build_lib(src, len, L);
    free(src);
    return rc;
}

/* ---- comparisons ---- */

/* smallest and largest eigenvalue of a symmetric matrix by cyclic Jacobi rotations */
static double condition_number(const double *M, int n)
{
    double *A = malloc((size_t)n * n * sizeof *A);
    memcpy(A, M, (size_t)n * n * sizeof *A);
    for (int sweep = 0; sweep < 60; sweep++) {
        double off = 0.0;
        for (int p = 0; p < n; p++)
            for (int q = p + 1; q < n; q++) off += A[p * n + q] * A[p * n + q];
        if (off < 1e-30) break;
        for (int p = 0; p < n; p++)
            for (int q = p + 1; q < n; q++) {
                double apq = A[p * n + q];
                if (fabs(apq) < 1e-300) continue;
                double theta = (A[q * n + q] - A[p * n + p]) / (2 * apq);
                double t = (theta >= 0 ? 1 : -1) / (fabs(theta) + sqrt(theta * theta + 1));
                double c = 1 / sqrt(t * t + 1), s = t * c;
                for (int k = 0; k < n; k++) {
                    double akp = A[k * n + p], akq = A[k * n + q];
                    A[k * n + p] = c * akp - s * akq;
                    A[k * n + q] = s * akp + c * akq;
                }
                for (int k = 0; k < n; k++) {
                    double apk = A[p * n + k], aqk = A[q * n + k];
                    A[p * n + k] = c * apk - s * aqk;
                    A[q * n + k] = s * apk + c * aqk;
                }
            }
    }
    double lo = INFINITY, hi = 0.0;
    for (int k = 0; k < n; k++) {
        double e = fabs(A[k * n + k]);
        if (e < lo) lo = e;
        if (e > hi) hi = e;
    }
    free(A);
    return lo > 0 ? hi / lo : INFINITY;
}

/* relative Frobenius error of x against ref (ref norms below 1e-9 compare absolutely) */
static double rel_error(const double *x, const double *ref, long long n)
{
    double num = 0.0, den = 0.0;
    for (long long k = 0; k < n; k++) {
        double d = x[k] - ref[k];
        num += d * d;
        den += ref[k] * ref[k];
    }
    if (isnan(num)) return INFINITY;
    return sqrt(num) / (sqrt(den) > 1e-9 ? sqrt(den) : 1.0);
}

static double *widen(const void *p, int dtype, long long n)
{
    double *d = malloc((size_t)(n > 0 ? n : 1) * sizeof *d);
    for (long long k = 0; k < n; k++) d[k] = dtype == GRID_FLOAT64 ? ((const double *)p)[k] : (double)((const float *)p)[k];
    return d;
}

/* one batch of random states, in the library's dtype */
typedef struct {
    int dtype;
    long long B;
    void *q, *v, *a, *fext, *g, *t;  /* t: the targets [frame id, offset] of the rows that take one */
    double *cond; /* cond(M) per state */
} states;

static void *alloc_real(int dtype, long long n)
{
    return calloc((size_t)(n > 0 ? n : 1), (size_t)dtype);
}

static void put(void *p, int dtype, long long k, double x)
{
    if (dtype == GRID_FLOAT64) ((double *)p)[k] = x;
    else ((float *)p)[k] = (float)x;
}

static void make_states(const grid_model *m, int dtype, long long B, states *s)
{
    s->dtype = dtype;
    s->B = B;
    s->q = alloc_real(dtype, B * m->nq);
    s->v = alloc_real(dtype, B * m->nv);
    s->a = alloc_real(dtype, B * m->nv);
    s->fext = alloc_real(dtype, B * 6 * m->nb);
    /* cotangents of the VJP rows: B states of the widest of their outputs' widths (nv, 6 nee) */
    const long long gw = m->nv > 6 * m->nee ? m->nv : 6 * m->nee;
    s->g = alloc_real(dtype, B * (gw > 0 ? gw : 1));
    for (long long k = 0; k < B * gw; k++) put(s->g, dtype, k, urand(-1, 1));
    test_cotangent = s->g;
    /* every frame in turn, tool offsets of a few centimetres */
    s->t = alloc_real(dtype, B * 4);
    for (long long b = 0; b < B; b++) {
        put(s->t, dtype, 4 * b, (double)(m->nframes > 0 ? b % m->nframes : 0));
        for (int k = 1; k < 4; k++) put(s->t, dtype, 4 * b + k, urand(-0.1, 0.1));
    }
    test_target = s->t;
    s->cond = calloc((size_t)B, sizeof *s->cond);
    double *q = malloc((size_t)(m->nq > 0 ? m->nq : 1) * sizeof *q);
    for (long long b = 0; b < B; b++) {
        random_q(m, q);
        for (int k = 0; k < m->nq; k++) put(s->q, dtype, b * m->nq + k, q[k]);
        for (int k = 0; k < m->nv; k++) {
            put(s->v, dtype, b * m->nv + k, urand(-10, 10));
            put(s->a, dtype, b * m->nv + k, urand(-50, 50));
        }
        for (int k = 0; k < 6 * m->nb; k++) put(s->fext, dtype, b * 6 * m->nb + k, urand(-10, 10));
    }
    free(q);
    /* cond(M) of each state as the library sees it (rounded inputs) */
    double *M = malloc((size_t)(m->nv * m->nv > 0 ? m->nv * m->nv : 1) * sizeof *M);
    test_call t;
    for (long long b = 0; b < B; b++) {
        double *qd = widen((const char *)s->q + (size_t)(b * m->nq * dtype), dtype, m->nq);
        grid_ref_batch(m, GRID_ALGO_CRBA, GRID_FLOAT64, test_call_init(&t, GRID_ALGO_CRBA, qd, NULL, NULL, NULL, M, 1, 0, 0));
        s->cond[b] = m->nv ? condition_number(M, m->nv) : 1.0;
        free(qd);
    }
    free(M);
}

static void free_states(states *s)
{
    free(s->q);
    free(s->v);
    free(s->a);
    free(s->fext);
    free(s->g);
    free(s->t);
    test_cotangent = NULL;
    test_target = NULL;
    free(s->cond);
}

/* the brief's tolerances: float64 1e-12; float32 1e-5, or 1e-6 cond(M) for the inverse dynamics */
static double tolerance(int algo, int dtype, double cond)
{
    int inverse = algo == GRID_ALGO_MINV || algo == GRID_ALGO_FD || algo == GRID_ALGO_ABA || algo == GRID_ALGO_FD_GRAD ||
                  algo == GRID_ALGO_FD_VJP;
    if (dtype == GRID_FLOAT64) return 1e-12;
    return inverse ? 1e-6 * cond : 1e-5;
}

/* run algo (with these optional inputs) on the library and the reference; worst error / tolerance */
static double compare_algo(const grid_model *m, const lib *L, const states *s, int algo, int use_a, int use_fext,
                           int frame, int rf, const char *what)
{
    const long long B = s->B;
    const grid_sizes sz = grid_sizes_of(m->nq, m->nv, m->nb, m->nee, m->nframes);
    const long long w = test_width_total(algo, &sz);
    void *out = alloc_real(s->dtype, B * w);
    double *ref = calloc((size_t)(B * w > 0 ? B * w : 1), sizeof *ref);
    test_call t;
    grid_call *c = test_call_init(&t, algo, s->q, s->v, use_a ? s->a : NULL, use_fext ? s->fext : NULL, out, B, frame, rf);
    test_call_outputs(&t, algo, &sz, out, B, (size_t)s->dtype);
    c->num_threads = 1;
    int rc = L->fn[algo](c);
    CHECK_MSG(rc == 0, "%s %s returned %d", what, grid_algo_name(algo), rc);
    test_call_outputs(&t, algo, &sz, ref, B, s->dtype == GRID_FLOAT64 ? sizeof(double) : sizeof(float));
    /* the reference reads the same (rounded) inputs and computes in float64 */
    rc = grid_ref_batch(m, algo, s->dtype, c);
    double worst = 0.0;
    if (s->dtype == GRID_FLOAT32) {
        /* grid_ref_batch narrowed its result; redo it in float64 per state */
        double *q = widen(s->q, s->dtype, B * m->nq), *v = widen(s->v, s->dtype, B * m->nv);
        double *a = widen(s->a, s->dtype, B * m->nv), *f = widen(s->fext, s->dtype, B * 6 * m->nb);
        const long long gw = m->nv > 6 * m->nee ? m->nv : 6 * m->nee;
        double *g = widen(s->g, s->dtype, B * gw), *tg = widen(s->t, s->dtype, B * 4);
        test_call t64;
        test_cotangent = g;
        test_target = tg;
        test_call_init(&t64, algo, q, v, use_a ? a : NULL, use_fext ? f : NULL, ref, B, frame, rf);
        test_call_outputs(&t64, algo, &sz, ref, B, sizeof(double));
        rc = grid_ref_batch(m, algo, GRID_FLOAT64, &t64.c);
        test_cotangent = s->g;
        test_target = s->t;
        free(g);
        free(tg);
        free(q);
        free(v);
        free(a);
        free(f);
    }
    CHECK(rc == 0);
    double *got = widen(out, s->dtype, B * w), *gs = calloc((size_t)w + 1, sizeof *gs), *rs = calloc((size_t)w + 1, sizeof *rs);
    for (long long b = 0; b < B; b++) {
        test_state_of(algo, &sz, B, got, b, sizeof(double), gs);
        test_state_of(algo, &sz, B, ref, b, sizeof(double), rs);
        double e = rel_error(gs, rs, w);
        double tol = tolerance(algo, s->dtype, s->cond[b]);
        if (e / tol > worst) worst = e / tol;
        if (e > tol && !quiet) {
            CHECK_MSG(e <= tol, "%s %s (a %d fext %d frame %d rf %d) state %lld: rel error %.3g > %.3g (cond %.3g)",
                      what, grid_algo_name(algo), use_a, use_fext, frame, rf, b, e, tol, s->cond[b]);
            break;
        }
    }
    free(got);
    free(gs);
    free(rs);
    free(out);
    free(ref);
    return worst;
}

/* every algorithm and variant on one library */
static void compare_all(const grid_model *m, const lib *L, const states *s, const char *what)
{
    double worst[GRID_ALGO_COUNT] = {0};
    for (int algo = 0; algo < GRID_ALGO_COUNT; algo++) {
        CHECK_MSG(L->fn[algo] != NULL || (s->dtype == GRID_FLOAT32 && grid_sig_opt_in(algo)), "%s: grid_%s missing",
                  what, grid_algo_name(algo));
        if (!L->fn[algo]) continue;
        double e = 0.0;
        switch (algo) {
        case GRID_ALGO_RNEA: case GRID_ALGO_RNEA_GRAD: case GRID_ALGO_RNEA_VJP:
            for (int va = 0; va < 2; va++)
                for (int vf = 0; vf < 2; vf++) e = fmax(e, compare_algo(m, L, s, algo, va, vf, 0, 0, what));
            break;
        case GRID_ALGO_FD: case GRID_ALGO_ABA: case GRID_ALGO_FD_GRAD: case GRID_ALGO_FD_VJP:
            for (int vf = 0; vf < 2; vf++) e = fmax(e, compare_algo(m, L, s, algo, 1, vf, 0, 0, what));
            break;
        case GRID_ALGO_FRAME_JACOBIAN:
            for (int f = 0; f < m->nframes; f++)
                for (int rf = 0; rf < 3; rf++) e = fmax(e, compare_algo(m, L, s, algo, 0, 0, f, rf, what));
            break;
        default: {
            /* from the row: a required u is given, an optional qdd and f_ext are tried absent and present */
            const grid_signature_row *r = grid_sig_row(algo);
            int a_lo = 0, a_hi = 0, f_hi = 0;
            for (int k = 0; k < r->n_in; k++) {
                if (!strcmp(r->in[k].name, "u")) a_lo = a_hi = 1;
                if (!strcmp(r->in[k].name, "qdd")) a_hi = 1;
                if (!strcmp(r->in[k].name, "f_ext")) f_hi = 1;
            }
            for (int va = a_lo; va <= a_hi; va++)
                for (int vf = 0; vf <= f_hi; vf++) e = fmax(e, compare_algo(m, L, s, algo, va, vf, 0, 0, what));
            break;
        }
        }
        worst[algo] = e;
    }
    printf("  %-34s worst error / tolerance:", what);
    for (int algo = 0; algo < GRID_ALGO_COUNT; algo++) printf(" %s %.2g", grid_algo_name(algo), worst[algo]);
    printf("\n");
}

/* the batch entry points: argument checks, threads give the same bits */
static void check_entry_points(const grid_model *m, const lib *L, const states *s, const char *what)
{
    const long long B = s->B;
    test_call t;
    long long wmax = 0;
    const grid_sizes sz = grid_sizes_of(m->nq, m->nv, m->nb, m->nee, m->nframes);
    for (int algo = 0; algo < GRID_ALGO_COUNT; algo++) {
        long long w = test_width_total(algo, &sz);
        if (w > wmax) wmax = w;
    }
    void *o1 = alloc_real(s->dtype, B * wmax), *o2 = alloc_real(s->dtype, B * wmax), *o3 = alloc_real(s->dtype, wmax);
    /* bad arguments */
    CHECK(L->fn[GRID_ALGO_RNEA](NULL) == GRID_ERR_ARG);
    CHECK(L->fn[GRID_ALGO_RNEA](test_call_init(&t, GRID_ALGO_RNEA, NULL, s->v, s->a, NULL, o1, B, 0, 0)) == GRID_ERR_ARG);
    grid_call *c = test_call_init(&t, GRID_ALGO_CRBA, s->q, NULL, NULL, NULL, o1, -1, 0, 0);
    CHECK(L->fn[GRID_ALGO_CRBA](c) == GRID_ERR_ARG);
    c->batch = 0;
    CHECK(L->fn[GRID_ALGO_CRBA](c) == GRID_OK);
    c->batch = B;
    CHECK(L->fn[GRID_ALGO_CRBA](c) == GRID_OK);
    c->n_in = 2; /* the row's counts are checked */
    CHECK(L->fn[GRID_ALGO_CRBA](c) == GRID_ERR_ARG);
    c->n_in = 1;
    c->n_out = 0;
    CHECK(L->fn[GRID_ALGO_CRBA](c) == GRID_ERR_ARG);
    CHECK(L->fn[GRID_ALGO_ABA](test_call_init(&t, GRID_ALGO_ABA, s->q, s->v, NULL, NULL, o1, B, 0, 0)) == GRID_ERR_ARG);
    CHECK(L->fn[GRID_ALGO_ABA](test_call_init(&t, GRID_ALGO_ABA, s->q, s->v, s->a, NULL, NULL, B, 0, 0)) == GRID_ERR_ARG);
    CHECK(L->fn[GRID_ALGO_FRAME_JACOBIAN](test_call_init(&t, GRID_ALGO_FRAME_JACOBIAN, s->q, 0, 0, 0, o1, B, m->nframes, 0)) ==
          GRID_ERR_ARG);
    CHECK(L->fn[GRID_ALGO_FRAME_JACOBIAN](test_call_init(&t, GRID_ALGO_FRAME_JACOBIAN, s->q, 0, 0, 0, o1, B, -1, 0)) ==
          GRID_ERR_ARG);
    CHECK(L->fn[GRID_ALGO_FRAME_JACOBIAN](test_call_init(&t, GRID_ALGO_FRAME_JACOBIAN, s->q, 0, 0, 0, o1, B, 0, 3)) ==
          GRID_ERR_ARG);
    /* the FD gradient keeps lane vectors in the workspace (every schedule): too little of it, or a pointer that
       is not 64-byte aligned, is refused, never read past */
    c = test_call_init(&t, GRID_ALGO_FD_GRAD, s->q, s->v, s->a, NULL, o1, B, 0, 0);
    c->num_threads = 1;
    if (m->nv > 0) { /* (no joint, no lane vectors) */
        CHECK(L->meta->methods[GRID_ALGO_FD_GRAD].work_bytes > 0);
        c->work_bytes = L->meta->methods[GRID_ALGO_FD_GRAD].work_bytes - 1;
        CHECK(L->fn[GRID_ALGO_FD_GRAD](c) == GRID_ERR_ARG);
        c->work = (char *)test_work_ptr + 8;
        c->work_bytes = test_work_len - 64;
        CHECK(L->fn[GRID_ALGO_FD_GRAD](c) == GRID_ERR_ARG);
    }
    c->work = test_work_ptr;
    CHECK(L->fn[GRID_ALGO_FD_GRAD](c) == GRID_OK);
    /* two threads give bitwise the output of one; so does each state alone (B = 1) */
    for (int algo = 0; algo < GRID_ALGO_COUNT; algo++) {
        if (!L->fn[algo]) continue; /* (an opt-in row of a float32 library) */
        long long w = test_width_total(algo, &sz);
        c = test_call_init(&t, algo, s->q, s->v, s->a, NULL, o1, B, 0, 0);
        test_call_outputs(&t, algo, &sz, o1, B, (size_t)s->dtype);
        c->num_threads = 1;
        L->fn[algo](c);
        c->num_threads = 2;
        test_call_outputs(&t, algo, &sz, o2, B, (size_t)s->dtype);
        L->fn[algo](c);
        CHECK_MSG(memcmp(o1, o2, (size_t)(B * w * s->dtype)) == 0, "%s %s: threads change the result", what,
                  grid_algo_name(algo));
        /* the cotangent's width in this row (0: not a VJP) */
        long long gw = 0;
        const grid_signature_row *row = grid_sig_row(algo);
        const grid_sizes sz = grid_sizes_of(m->nq, m->nv, m->nb, m->nee, m->nframes);
        for (int k = 0; k < row->n_in; k++)
            if (!strcmp(row->in[k].name, "cotangent")) gw = grid_sig_shape(&row->in[k], &sz, NULL);
        for (long long b = 0; b < B; b += 7) {
            test_call t1;
            test_cotangent = (const char *)s->g + b * gw * s->dtype;
            test_target = (const char *)s->t + b * 4 * s->dtype;
            grid_call *c1 = test_call_init(&t1, algo, (const char *)s->q + b * m->nq * s->dtype,
                                           (const char *)s->v + b * m->nv * s->dtype,
                                           (const char *)s->a + b * m->nv * s->dtype, NULL, o2, 1, 0, 0);
            test_call_outputs(&t1, algo, &sz, o2, 1, (size_t)s->dtype);
            c1->num_threads = 2;
            L->fn[algo](c1);
            test_state_of(algo, &sz, B, o1, b, (size_t)s->dtype, o3);
            CHECK_MSG(memcmp(o3, o2, (size_t)(w * s->dtype)) == 0,
                      "%s %s: state %lld alone differs from the batch", what, grid_algo_name(algo), b);
        }
        test_cotangent = s->g;
        test_target = s->t;
    }
    free(o1);
    free(o2);
    free(o3);
}

/* NaN in, NaN out: a state whose q (then v) is all NaN gives NaN in every algorithm's output,
   and the other states of the batch are untouched */
static void check_nan(const grid_model *m, const lib *L, const states *s, const char *what)
{
    const int dt = s->dtype;
    const long long B = 5;
    void *q = alloc_real(dt, B * m->nq), *v = alloc_real(dt, B * m->nv);
    memcpy(q, s->q, (size_t)(B * m->nq * dt));
    memcpy(v, s->v, (size_t)(B * m->nv * dt));
    for (int k = 0; k < m->nq; k++) put(q, dt, 2 * m->nq + k, NAN);
    for (int k = 0; k < m->nv; k++) put(v, dt, 3 * m->nv + k, NAN);
    const grid_sizes sz = grid_sizes_of(m->nq, m->nv, m->nb, m->nee, m->nframes);
    for (int algo = 0; algo < GRID_ALGO_COUNT; algo++) {
        long long w = test_width_total(algo, &sz);
        if (w == 0 || !L->fn[algo]) continue;
        void *o = alloc_real(dt, B * w);
        /* a frame on a moving body (a frame welded to the world has a zero Jacobian; a WORLD
           column of a root joint does not depend on q at all) */
        int frame = 0;
        for (int f = 0; f < m->nframes; f++)
            if (m->frames[f].body >= 0) frame = f;
        test_call t;
        test_call_init(&t, algo, q, v, s->a, NULL, o, B, frame, GRID_LOCAL);
        test_call_outputs(&t, algo, &sz, o, B, (size_t)dt);
        CHECK(L->fn[algo](&t.c) == 0);
        /* state-major: state b's outputs one after another at x + b w */
        double *xb = widen(o, dt, B * w), *x = calloc((size_t)(B * w), sizeof *x);
        for (long long b = 0; b < B; b++) test_state_of(algo, &sz, B, xb, b, sizeof(double), x + b * w);
        free(xb);
        int nan_q = 0, nan_v = 0, nan_other = 0;
        for (long long k = 0; k < w; k++) {
            nan_q |= isnan(x[2 * w + k]);
            nan_v |= isnan(x[3 * w + k]);
            nan_other |= isnan(x[k]) || isnan(x[w + k]) || isnan(x[4 * w + k]);
        }
        int uses_v = test_row_has(algo, "qd");
        /* q_pullback reads q at quaternion and planar joints only (the rest of the map is the identity) */
        int reads_q = algo != GRID_ALGO_Q_PULLBACK;
        for (int b = 0; b < m->nb && !reads_q; b++) reads_q = m->bodies[b].joint.nq > 1;
        if (m->nb == 0) {
            /* no body: nothing depends on the state (the energies of nothing are zeros; fk_batched's pose is the
               identity, quaternion [1 0 0 0]) */
            for (long long k = 0; k < B * w; k++) {
                const double want = algo == GRID_ALGO_FK_BATCHED && k % 7 == 3 ? 1.0 : 0.0;
                /* (a target's pose is its frame's fixed placement: compare_algo checks its value) */
                if (algo == GRID_ALGO_EE_POSE_RUNTIME) CHECK_MSG(isfinite(x[k]), "%s %s: element %lld", what,
                                                                 grid_algo_name(algo), k);
                else CHECK_MSG(x[k] == want, "%s %s: element %lld", what, grid_algo_name(algo), k);
            }
        } else {
            CHECK_MSG(nan_q == reads_q && (!uses_v || nan_v) && !nan_other, "%s %s: NaN in q %d, in v %d, elsewhere %d",
                      what, grid_algo_name(algo), nan_q, nan_v, nan_other);
        }
        free(x);
        free(o);
    }
    free(q);
    free(v);
}

/* ---- robots ---- */

static grid_model *load(const char *path, int floating)
{
    grid_model_options o = grid_model_options_default();
    o.floating_base = floating;
    grid_model *m = NULL;
    grid_error err;
    if (grid_urdf_load_file(path, &o, &m, &err) != GRID_OK) {
        fprintf(stderr, "  %s: %s\n", path, err.message);
        return NULL;
    }
    return m;
}

/* under AddressSanitizer (make test-asan) the float32 libraries are left to the plain run: the emitter takes the
   same paths for both dtypes (only the spelling tables differ), and every robot's second compile is CI time */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(UNDER_ASAN)
#define UNDER_ASAN 1
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

static void check_robot(const char *file, int floating, long long B)
{
    char path[256], what[96];
    snprintf(path, sizeof path, "../shared/robots/%s", file);
    if (access(path, R_OK) != 0) {
        printf("  skip %s: not found (run from the repository root with ../shared/robots present)\n", path);
        return;
    }
    grid_model *m = load(path, floating);
    CHECK(m != NULL);
    if (!m) return;
    /* float32 on the floating base only (the plain run): the dtype changes the spelling tables, not the emitter's
       paths, and tests/python compares iiwa's float32 library with float64 */
    for (int d = 0; d < (UNDER_ASAN || float64_only || !floating ? 1 : 2); d++) {
        int dtype = d ? GRID_FLOAT32 : GRID_FLOAT64;
        lib L;
        snprintf(what, sizeof what, "%s%s %s", file, floating ? " floating" : "", d ? "float32" : "float64");
        int rc = emit_and_build(m, dtype, "00ff", &L);
        CHECK_MSG(rc == 0, "%s: build failed", what);
        if (rc != 0) {
            close_lib(&L);
            continue;
        }
        /* metadata */
        const grid_robot_meta_t *mt = L.meta;
        CHECK(mt->abi_version == GRID_ABI_VERSION && mt->nq == m->nq && mt->nv == m->nv && mt->nb == m->nb);
        CHECK(mt->nframes == m->nframes && mt->nee == m->nee && mt->dtype == dtype && mt->target == GRID_TARGET_C);
        int n_opt_in = 0;
        for (int a = 0; a < GRID_ALGO_COUNT; a++) n_opt_in += grid_sig_opt_in(a);
        CHECK(mt->n_methods == GRID_ALGO_COUNT - (dtype == GRID_FLOAT32 ? n_opt_in : 0) && mt->methods);
        if (emit_schedule == GRID_SCHEDULE_ROLLED) CHECK(mt->work_bytes > 0);
        /* unrolled, only the derivatives take workspace (the end-effector pose's scalar composites: poses and a
           Jacobian; the RNEA gradient and VJP when AUTO rolls them, and the FD composites calling them); every
           other row's per-state code lives in registers and locals */
        for (int a = 0; emit_schedule != GRID_SCHEDULE_ROLLED && a < mt->n_methods; a++)
            CHECK_MSG(a >= GRID_ALGO_RNEA_GRAD || mt->methods[a].work_bytes == 0,
                      "%s: %s takes %zu bytes of workspace unrolled", what, mt->methods[a].name, mt->methods[a].work_bytes);
        /* the library's rows are the table's, with this robot's shapes */
        const grid_sizes sz = grid_sizes_of(m->nq, m->nv, m->nb, m->nee, m->nframes);
        char why[256];
        for (int k = 0; k < mt->n_methods && k < GRID_ALGO_COUNT; k++) {
            /* (by name: a library without the opt-in rows lists the rows after them earlier) */
            const int a = grid_sig_find(mt->methods[k].name);
            CHECK_MSG(a >= 0 && grid_sig_mismatch(a, &sz, &mt->methods[k], why, sizeof why) == 0, "%s method %d: %s", what,
                      k, a >= 0 ? why : mt->methods[k].name);
        }
        CHECK(strcmp(mt->model_hash, "00ff") == 0);
        states s;
        make_states(m, dtype, B, &s);
        compare_all(m, &L, &s, what);
        check_entry_points(m, &L, &s, what);
        check_nan(m, &L, &s, what);
        free_states(&s);
        close_lib(&L);
    }
    grid_model_free(m);
}

/* a fixed-base arm and a floating quadruped (branches, a multi-dof root); the other robots' generated libraries are
   compared with this reference and with Pinocchio by tests/python (test_codegen, test_pinocchio_crosscheck) */
static void test_iiwa(void)
{
    opt_level = "-O2";
    check_robot("iiwa.urdf", 0, 61);
    opt_level = "-O0";
}
static void test_go2_floating(void) { check_robot("go2.urdf", 1, 33); }


/* ---- determinism and untrusted names ---- */

/* a small branching robot with unaligned and negative axes, a prismatic joint and a welded frame;
   names: 0 robot, 1..5 links, 6..9 joints */
static char *small_urdf_rooted(const char *const names[10], int j4_parent)
{
    static const char fmt[] =
        "<?xml version=\"1.0\"?>\n<robot name=\"%s\">\n"
        "<link name=\"%s\"><inertial><origin xyz=\"0 0 0\" rpy=\"0 0 0\"/><mass value=\"3\"/>"
        "<inertia ixx=\"0.1\" ixy=\"0\" ixz=\"0\" iyy=\"0.1\" iyz=\"0\" izz=\"0.1\"/></inertial></link>\n"
        "<link name=\"%s\"><inertial><origin xyz=\"0.01 0.02 0.1\" rpy=\"0 0 0\"/><mass value=\"2\"/>"
        "<inertia ixx=\"0.05\" ixy=\"0.001\" ixz=\"0.002\" iyy=\"0.04\" iyz=\"0.003\" izz=\"0.03\"/></inertial></link>\n"
        "<link name=\"%s\"><inertial><origin xyz=\"0.1 -0.02 0.01\" rpy=\"0.1 0.2 0.3\"/><mass value=\"1.5\"/>"
        "<inertia ixx=\"0.02\" ixy=\"0\" ixz=\"0\" iyy=\"0.03\" iyz=\"0\" izz=\"0.025\"/></inertial></link>\n"
        "<link name=\"%s\"><inertial><origin xyz=\"0.05 0.01 -0.03\" rpy=\"0 0 0\"/><mass value=\"0.7\"/>"
        "<inertia ixx=\"0.004\" ixy=\"0.0005\" ixz=\"0\" iyy=\"0.006\" iyz=\"0\" izz=\"0.005\"/></inertial></link>\n"
        "<link name=\"%s\"><inertial><origin xyz=\"0 0 0.05\" rpy=\"0 0 0\"/><mass value=\"0.5\"/>"
        "<inertia ixx=\"0.001\" ixy=\"0\" ixz=\"0\" iyy=\"0.001\" iyz=\"0\" izz=\"0.002\"/></inertial></link>\n"
        "<joint name=\"%s\" type=\"revolute\"><parent link=\"%s\"/><child link=\"%s\"/>"
        "<origin xyz=\"0 0 0.1\" rpy=\"0 0 0\"/><axis xyz=\"0 0 1\"/><limit lower=\"-3\" upper=\"3\" effort=\"1\" velocity=\"1\"/></joint>\n"
        "<joint name=\"%s\" type=\"revolute\"><parent link=\"%s\"/><child link=\"%s\"/>"
        "<origin xyz=\"0.05 0 0.3\" rpy=\"0.3 -0.2 0.5\"/><axis xyz=\"0 0.6 0.8\"/><limit lower=\"-3\" upper=\"3\" effort=\"1\" velocity=\"1\"/></joint>\n"
        "<joint name=\"%s\" type=\"prismatic\"><parent link=\"%s\"/><child link=\"%s\"/>"
        "<origin xyz=\"0.4 0.01 0\" rpy=\"-0.1 0.4 0.2\"/><axis xyz=\"1 0 0\"/><limit lower=\"-1\" upper=\"1\" effort=\"1\" velocity=\"1\"/></joint>\n"
        "<joint name=\"%s\" type=\"continuous\"><parent link=\"%s\"/><child link=\"%s\"/>"
        "<origin xyz=\"0 0.1 0.2\" rpy=\"1.5707963267948966 0 0\"/><axis xyz=\"0 -1 0\"/></joint>\n"
        "</robot>\n";
    /* names: 0 robot, 1..5 links, 6..9 joints; the 4th joint branches off link 1 */
    size_t cap = sizeof fmt + 4096;
    char *s = malloc(cap);
    snprintf(s, cap, fmt, names[0], names[1], names[2], names[3], names[4], names[5], names[6], names[1], names[2],
             names[7], names[2], names[3], names[8], names[3], names[4], names[9], names[j4_parent], names[5]);
    return s;
}

/* the fourth joint branches off link 1 */
static char *small_urdf(const char *const names[10])
{
    return small_urdf_rooted(names, 2);
}

static grid_model *load_text(const char *text, int floating)
{
    grid_model_options o = grid_model_options_default();
    o.floating_base = floating;
    grid_model *m = NULL;
    grid_error err;
    if (grid_urdf_load(text, strlen(text), &o, &m, &err) != GRID_OK) {
        fprintf(stderr, "  small robot: %s (line %d)\n", err.message, err.line);
        return NULL;
    }
    return m;
}

/* emit and compile m's library, then every comparison with the reference on B random states */
static void build_and_check(const grid_model *m, int dtype, long long B, const char *what)
{
    lib L;
    CHECK_MSG(emit_and_build(m, dtype, NULL, &L) == 0, "%s: build failed", what);
    if (L.dl) {
        states s;
        make_states(m, dtype, B, &s);
        compare_all(m, &L, &s, what);
        check_entry_points(m, &L, &s, what);
        check_nan(m, &L, &s, what);
        free_states(&s);
    }
    close_lib(&L);
}

static void test_small_robot(void)
{
    const char *plain[10] = {"r", "base", "l1", "l2", "l3", "l4", "j1", "j2", "j3", "j4"};
    /* fixed base, floating base, and a fixed base with two chains on the root link */
    for (int config = 0; config < 3; config++) {
        const int floating = config == 1;
        char *u = small_urdf_rooted(plain, config == 2 ? 1 : 2);
        grid_model *m = load_text(u, floating);
        free(u);
        CHECK(m != NULL);
        if (!m) continue;
        for (int d = 0; d < (UNDER_ASAN || float64_only ? 1 : 2); d++) {
            char what[64];
            snprintf(what, sizeof what, "small robot%s %s", floating ? " floating" : config == 2 ? " two roots" : "",
                     d ? "float32" : "float64");
            build_and_check(m, d ? GRID_FLOAT32 : GRID_FLOAT64, 63, what);
        }
        grid_model_free(m);
    }
}

/* a robot with no moving joint (hector's quadrotor_base.urdf, iris_simple.urdf: one body welded to another) on a fixed
   base has nq = nv = 0: every buffer sized by nv is empty, and emitting it used to abort on an assertion */
static void test_no_joints(void)
{
    const char *u = "<robot name='quad'><link name='base'><inertial><mass value='1.5'/>"
                    "<inertia ixx='0.01' iyy='0.01' izz='0.02' ixy='0' ixz='0' iyz='0'/></inertial></link>"
                    "<link name='cam'><inertial><origin xyz='0.1 0 -0.05'/><mass value='0.1'/>"
                    "<inertia ixx='1e-4' iyy='1e-4' izz='1e-4' ixy='0' ixz='0' iyz='0'/></inertial></link>"
                    "<joint name='weld' type='fixed'><parent link='base'/><child link='cam'/>"
                    "<origin xyz='0.1 0 0'/></joint></robot>";
    grid_model *m = load_text(u, 0);
    CHECK(m != NULL && m->nv == 0 && m->nq == 0);
    if (!m) return;
    for (int sched = 0; sched < 2; sched++) {
        emit_schedule = sched ? GRID_SCHEDULE_ROLLED : GRID_SCHEDULE_UNROLLED;
        build_and_check(m, GRID_FLOAT64, 5, sched ? "no joints rolled" : "no joints unrolled");
    }
    emit_schedule = GRID_SCHEDULE_AUTO;
    grid_model_free(m);
}

static void test_hostile_names(void)
{
    const char *plain[10] = {"r", "base", "l1", "l2", "l3", "l4", "j1", "j2", "j3", "j4"};
    /* XML-escaped: comment closers, newlines, quotes, backslashes, preprocessor lines, trigraphs */
    const char *evil[10] = {
        "*/ #define x y /*", "base */ int evil; /*", "l1&#10;#define grid_real int&#10;", "l2 \\&quot;&apos; ?\?/",
        "l3 */ } void f(){ /*", "&#13;#include &lt;stdio.h&gt;*/", "j1 */", "j2\\", "j3 &#10;*/ #error x",
        "j4 //comment"};
    char *up = small_urdf(plain), *ue = small_urdf(evil);
    grid_model *mp = load_text(up, 1), *me = load_text(ue, 1);
    free(up);
    free(ue);
    CHECK(mp && me);
    if (!mp || !me) {
        grid_model_free(mp);
        grid_model_free(me);
        return;
    }
    lib Lp, Le;
    CHECK(emit_and_build(mp, GRID_FLOAT64, NULL, &Lp) == 0);
    CHECK(emit_and_build(me, GRID_FLOAT64, NULL, &Le) == 0);
    if (Lp.dl && Le.dl) {
        states s;
        make_states(mp, GRID_FLOAT64, 16, &s);
        for (int algo = 0; algo < GRID_ALGO_COUNT; algo++) {
            const grid_sizes sz = grid_sizes_of(mp->nq, mp->nv, mp->nb, mp->nee, mp->nframes);
            long long w = test_width_total(algo, &sz) * s.B;
            double *o1 = calloc((size_t)w + 1, sizeof *o1), *o2 = calloc((size_t)w + 1, sizeof *o2);
            test_call t;
            grid_call *c = test_call_init(&t, algo, s.q, s.v, s.a, s.fext, o1, s.B, 3, 0);
            test_call_outputs(&t, algo, &sz, o1, s.B, sizeof(double));
            CHECK(Lp.fn[algo](c) == 0);
            test_call_outputs(&t, algo, &sz, o2, s.B, sizeof(double));
            CHECK(Le.fn[algo](c) == 0);
            CHECK_MSG(memcmp(o1, o2, (size_t)w * sizeof *o1) == 0, "%s differs with hostile names", grid_algo_name(algo));
            free(o1);
            free(o2);
        }
        free_states(&s);
    }
    close_lib(&Lp);
    close_lib(&Le);
    grid_model_free(mp);
    grid_model_free(me);
}

/* the CUDA source of a robot with wide outputs (g1 floating: 35x35 matrices, RNEA's 35 torques over four
   inputs): the chunked forms exist where they should, and emission stays in bounds (ASan) */
static void test_cuda_wide_outputs(void)
{
    const char *path = "../shared/robots/g1_29dof.urdf";
    if (access(path, R_OK) != 0) {
        printf("  skip cuda wide outputs: %s not found\n", path);
        return;
    }
    grid_model *m = load(path, 1);
    CHECK(m != NULL);
    if (!m) return;
    for (int d = 0; d < 2; d++)
        for (int sch = 0; sch < 2; sch++) {
            grid_emit_options o = grid_emit_options_default();
            o.target = GRID_TARGET_CUDA;
            o.dtype = d ? GRID_FLOAT32 : GRID_FLOAT64;
            o.schedule = sch ? GRID_SCHEDULE_ROLLED : GRID_SCHEDULE_UNROLLED;
            char *src = NULL;
            size_t n = 0;
            CHECK(grid_emit_source(m, &o, &src, &n, NULL) == GRID_OK);
            if (!src) continue;
            /* unrolled: CRBA and Minv (1225 wide) and RNEA (35) in chunks; rolled code writes in place */
            const int chunked = strstr(src, "#define GRID_CHUNKED_crba 1225") && strstr(src, "#define GRID_CHUNKED_minv 1225") &&
                                strstr(src, "#define GRID_CHUNKED_rnea_f 35") && strstr(src, "grid_c_crba(sq, 0, 0, 0, 0, tc + lane * 33");
            CHECK_MSG(chunked == !sch, "dtype %d schedule %d", d, sch);
            free(src);
        }
    grid_model_free(m);
}

static void test_determinism(void)
{
    const char *path = "../shared/robots/go2.urdf";
    if (access(path, R_OK) != 0) {
        printf("  skip determinism: %s not found\n", path);
        return;
    }
    grid_model *m = load(path, 1);
    CHECK(m != NULL);
    if (!m) return;
    for (int t = 0; t < 2; t++)
        for (int d = 0; d < 2; d++) {
            grid_emit_options o = grid_emit_options_default();
            o.target = t;
            o.dtype = d ? GRID_FLOAT32 : GRID_FLOAT64;
            char *s1 = NULL, *s2 = NULL;
            size_t n1 = 0, n2 = 0;
            CHECK(grid_emit_source(m, &o, &s1, &n1, NULL) == GRID_OK);
            CHECK(grid_emit_source(m, &o, &s2, &n2, NULL) == GRID_OK);
            CHECK(s1 && s2 && n1 == n2 && memcmp(s1, s2, n1) == 0 && strlen(s1) == n1);
            free(s1);
            free(s2);
        }
    /* bad options */
    grid_emit_options o = grid_emit_options_default();
    char *s = NULL;
    size_t n;
    grid_error err;
    o.dtype = 3;
    CHECK(grid_emit_source(m, &o, &s, &n, &err) == GRID_ERR_ARG && s == NULL);
    o = grid_emit_options_default();
    o.target = 5;
    CHECK(grid_emit_source(m, &o, &s, &n, &err) == GRID_ERR_ARG);
    o = grid_emit_options_default();
    o.model_hash = "abc\"); evil(); //";
    CHECK(grid_emit_source(m, &o, &s, &n, &err) == GRID_ERR_ARG);
    o = grid_emit_options_default();
    const int unknown[1] = {GRID_ALGO_COUNT + 20}, twice[2] = {GRID_ALGO_NLE, GRID_ALGO_NLE};
    o.methods = unknown;
    o.n_methods = 1;
    CHECK(grid_emit_source(m, &o, &s, &n, &err) == GRID_ERR_ARG);
    o.methods = twice;
    o.n_methods = 2;
    CHECK(grid_emit_source(m, &o, &s, &n, &err) == GRID_ERR_ARG && strstr(err.message, "twice"));
    /* a subset: only the selected entry points (and rows) exist */
    o = grid_emit_options_default();
    const int subset[2] = {GRID_ALGO_EE_POSE, GRID_ALGO_NLE};
    o.methods = subset;
    o.n_methods = 2;
    CHECK(grid_emit_source(m, &o, &s, &n, &err) == GRID_OK);
    if (s) {
        CHECK(strstr(s, "int grid_nle(") && strstr(s, "int grid_ee_pose(") && !strstr(s, "int grid_rnea("));
        lib L;
        CHECK(build_lib(s, n, &L) == 0);
        /* rows in table order, whatever the order of the request */
        if (L.dl)
            CHECK(L.meta->n_methods == 2 && strcmp(L.meta->methods[0].name, "nle") == 0 &&
                  strcmp(L.meta->methods[1].name, "ee_pose") == 0 && L.fn[GRID_ALGO_NLE] && !L.fn[GRID_ALGO_RNEA]);
        if (L.dl) {
            int (*n_methods)(void) = (int (*)(void))dlsym(L.dl, "grid_n_methods");
            const grid_method_info *(*method)(int) = (const grid_method_info *(*)(int))dlsym(L.dl, "grid_method");
            CHECK(n_methods && method && n_methods() == 2 && method(1) == &L.meta->methods[1] && method(2) == NULL &&
                  method(-1) == NULL);
        }
        close_lib(&L);
        /* the same library with one row's output shape altered is refused by the loader, naming the method */
        char want[96], bad[96];
        snprintf(want, sizeof want, "{\"c\", 1, {%d, 0, 0, 0}, %dLL, 0}", m->nv, m->nv);
        snprintf(bad, sizeof bad, "{\"c\", 1, {%d, 0, 0, 0}, %dLL, 0}", m->nv + 1, m->nv + 1);
        char *at = strstr(s, want);
        CHECK(at != NULL && strlen(want) == strlen(bad));
        if (at) {
            memcpy(at, bad, strlen(bad));
            CHECK(build_lib(s, n, &L) == 0);
            char so[128];
            snprintf(so, sizeof so, "%s/robot%d.so", tmpdir, lib_counter - 1);
            grid_lib *gl = NULL;
            CHECK(grid_lib_open(so, NULL, &gl, &err) == GRID_ERR_LOAD && gl == NULL);
            CHECK_MSG(strstr(err.message, "method nle does not match") && strstr(err.message, "output 0 is 'c'"), "%s",
                      err.message);
        }
        close_lib(&L);
    }
    free(s);
    grid_model_free(m);
}

/* a comparison can fail: code generated from a model disagrees with the reference run on a
   slightly perturbed copy (a mass changed by 1e-9, then a joint offset by 1e-9 m) */
static void test_perturbed_model_detected(void)
{
    const char *plain[10] = {"r", "base", "l1", "l2", "l3", "l4", "j1", "j2", "j3", "j4"};
    char *u = small_urdf(plain);
    grid_model *m = load_text(u, 0);
    free(u);
    CHECK(m != NULL);
    if (!m) return;
    lib L;
    CHECK(emit_and_build(m, GRID_FLOAT64, NULL, &L) == 0);
    if (L.dl) {
        states s;
        make_states(m, GRID_FLOAT64, 8, &s);
        quiet = 1;
        double clean = compare_algo(m, &L, &s, GRID_ALGO_RNEA, 1, 0, 0, 0, "clean");
        m->bodies[1].inertia.mass *= 1.0 + 1e-9;
        double mass = compare_algo(m, &L, &s, GRID_ALGO_RNEA, 1, 0, 0, 0, "mass");
        double minv = compare_algo(m, &L, &s, GRID_ALGO_MINV, 0, 0, 0, 0, "mass");
        m->bodies[1].inertia.mass /= 1.0 + 1e-9;
        m->bodies[2].joint.placement.p[1] += 1e-9;
        double offset = compare_algo(m, &L, &s, GRID_ALGO_FRAME_JACOBIAN, 0, 0, 3, GRID_LOCAL_WORLD_ALIGNED, "offset");
        quiet = 0;
        printf("  perturbation: error / tolerance clean %.2g, mass (rnea) %.3g, mass (minv) %.3g, offset (jacobian) %.3g\n",
               clean, mass, minv, offset);
        CHECK(clean <= 1.0 && mass > 1.0 && minv > 1.0 && offset > 1.0);
        free_states(&s);
    }
    close_lib(&L);
    grid_model_free(m);
}

/* a chain of n revolute joints (axes cycling z, y, x), as bench/chains.py writes it */
static char *chain_urdf(int n)
{
    size_t cap = 512 + (size_t)n * 600;
    char *s = malloc(cap);
    size_t len = (size_t)snprintf(s, cap, "<?xml version=\"1.0\"?>\n<robot name=\"chain%d\">\n", n);
    for (int i = 0; i <= n; i++)
        len += (size_t)snprintf(s + len, cap - len,
                                "<link name=\"l%d\"><inertial><origin xyz=\"0.01 0.02 0.1\" rpy=\"0 0 0\"/><mass value=\"1.%d\"/>"
                                "<inertia ixx=\"0.05\" ixy=\"0.001\" ixz=\"0.002\" iyy=\"0.04\" iyz=\"0.003\" izz=\"0.03\"/>"
                                "</inertial></link>\n", i, i % 10);
    static const char *const axes[3] = {"0 0 1", "0 1 0", "1 0 0"};
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(s + len, cap - len,
                                "<joint name=\"j%d\" type=\"revolute\"><parent link=\"l%d\"/><child link=\"l%d\"/>"
                                "<origin xyz=\"0 0.01 0.2\" rpy=\"0.1 0 0.05\"/><axis xyz=\"%s\"/>"
                                "<limit lower=\"-3\" upper=\"3\" effort=\"1\" velocity=\"1\"/></joint>\n", i, i, i + 1, axes[i % 3]);
    snprintf(s + len, cap - len, "</robot>\n");
    return s;
}

/* AUTO keeps small robots unrolled and rolls what passes the budget; rolled code does not grow with the robot */
static void test_schedule_code_size(void)
{
    long rolled_size[2][GRID_ALGO_COUNT];
    const int sizes[2] = {100, 200};
    for (int t = 0; t < 2; t++) {
        char *u = chain_urdf(sizes[t]);
        grid_model *m = load_text(u, 0);
        free(u);
        CHECK(m != NULL);
        if (!m) return;
        for (int sched = GRID_SCHEDULE_AUTO; sched <= GRID_SCHEDULE_ROLLED; sched += 2) {
            grid_emit_options o = grid_emit_options_default();
            o.schedule = sched;
            /* rolled: every row, the opt-in second-order ones too (AUTO: the default set) */
            int every[GRID_ALGO_COUNT];
            for (int a = 0; a < GRID_ALGO_COUNT; a++) every[a] = a;
            if (sched == GRID_SCHEDULE_ROLLED) {
                o.methods = every;
                o.n_methods = GRID_ALGO_COUNT;
            }
            grid_emit_stats st;
            char *src = NULL;
            size_t len = 0;
            grid_error err;
            /* AUTO on the 200-link chain would unroll minv and the Jacobian: emit only what rolls or is linear */
            CHECK_MSG(grid_emit_source_stats(m, &o, &src, &len, &st, &err) == GRID_OK, "%s", err.message);
            free(src);
            for (int a = 0; a < GRID_ALGO_COUNT; a++) {
                if (sched == GRID_SCHEDULE_ROLLED) {
                    /* (q_pullback has no schedule: joint by joint, a run of one-coordinate joints one loop) */
                    CHECK_MSG(st.rolled[a] == (a != GRID_ALGO_Q_PULLBACK), "chain %d: %s not rolled", sizes[t],
                              grid_algo_name(a));
                    rolled_size[t][a] = st.statements[a];
                } else if (!grid_sig_opt_in(a)) {
                    /* the budget: CRBA, minv and the per-body Jacobian grow faster than linearly and roll at
                       100 links; FK, the smallest linear one, stays unrolled there */
                    int quadratic = a == GRID_ALGO_CRBA || a == GRID_ALGO_MINV || a == GRID_ALGO_FRAME_JACOBIAN;
                    if (quadratic || (sizes[t] == 100 && a == GRID_ALGO_FK))
                        CHECK_MSG(st.rolled[a] == quadratic, "chain %d AUTO: %s rolled = %d", sizes[t], grid_algo_name(a),
                                  st.rolled[a]);
                }
            }
        }
        grid_model_free(m);
    }
    /* the rolled code is the same size for 100 and 200 bodies (only the tables grow) */
    for (int a = 0; a < GRID_ALGO_COUNT; a++)
        CHECK_MSG(rolled_size[0][a] == rolled_size[1][a] && rolled_size[0][a] > 0 && rolled_size[0][a] < 20000,
                  "%s: rolled statements %ld (100 links) vs %ld (200)", grid_algo_name(a), rolled_size[0][a], rolled_size[1][a]);
    /* every test robot keeps today's methods unrolled under AUTO: no behaviour change */
    const char *robots[] = {"iiwa.urdf", "hyq.urdf", "go2.urdf", "g1_29dof.urdf", "atlas.urdf"};
    for (size_t r = 0; r < sizeof robots / sizeof robots[0]; r++)
        for (int floating = 0; floating < 2; floating++) {
            char path[256];
            snprintf(path, sizeof path, "../shared/robots/%s", robots[r]);
            if (access(path, R_OK) != 0) continue;
            grid_model *m = load(path, floating);
            if (!m) continue;
            grid_emit_options o = grid_emit_options_default();
            grid_emit_stats st;
            char *src = NULL;
            size_t len = 0;
            grid_error err;
            CHECK(grid_emit_source_stats(m, &o, &src, &len, &st, &err) == GRID_OK);
            free(src);
            /* (the gradients, whose unrolled code is O(nv depth) statements, and the VJPs roll from
               GRID_EMIT_GRADIENT_BUDGET on); the rows after them (issue 27 on: the Coriolis matrix rolls on g1 and
               atlas floating) take what the AUTO budget gives, both schedules checked against the reference */
            for (int a = 0; a < GRID_ALGO_ENERGY; a++)
                CHECK_MSG(st.rolled[a] == 0 || a == GRID_ALGO_RNEA_GRAD || a == GRID_ALGO_FD_GRAD ||
                              a == GRID_ALGO_RNEA_VJP || a == GRID_ALGO_FD_VJP,
                          "%s%s: %s rolled under AUTO", robots[r], floating ? " floating" : "", grid_algo_name(a));
            grid_model_free(m);
        }
}

/* the rolled schedule forced: every algorithm that has it, against the reference as above (the small robots and a
   floating quadruped; tests/python/test_rolled.py covers the larger robots, both dtypes, against the same reference) */
static void test_rolled(void)
{
    emit_schedule = GRID_SCHEDULE_ROLLED;
    float64_only = 1;
    test_small_robot();
    check_robot("go2.urdf", 1, 11);
    float64_only = 0;
    emit_schedule = GRID_SCHEDULE_AUTO;
}

int main(void)
{
    /* workspace for the rolled schedule's calls: up to 4 threads of the largest test robot */
    test_work_len = 16u << 20;
    test_work_ptr = aligned_alloc(64, test_work_len); /* (the ABI's alignment) */
    if (test_work_ptr) memset(test_work_ptr, 0, test_work_len);
    if (!test_work_ptr) return 1;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/grid_test_emit_XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    RUN_TEST(test_small_robot);
    RUN_TEST(test_no_joints);
    RUN_TEST(test_schedule_code_size);
    RUN_TEST(test_rolled);
    RUN_TEST(test_hostile_names);
    RUN_TEST(test_perturbed_model_detected);
    RUN_TEST(test_determinism);
    RUN_TEST(test_iiwa);
    RUN_TEST(test_go2_floating);
    RUN_TEST(test_cuda_wide_outputs);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "  could not remove %s\n", tmpdir);
    free(test_work_ptr);
    return check_summary("test_emit");
}
