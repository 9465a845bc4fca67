/* Target and dtype tables (C: OpenMP loops over lane tiles; CUDA: a thread per state) and their batch wrappers. */
#include <stdio.h>
#include <string.h>
#include "grid/abi.h"
#include "grid/emit.h"
#include "target.h"
#include "target_cuda.h"

static const emit_real reals[] = {
    {GRID_FLOAT64, "double", "sqrt", "sin", "cos", "atan2", 0},
    {GRID_FLOAT32, "float", "sqrtf", "sinf", "cosf", "atan2f", 1},
};

const emit_real *emit_real_get(int dtype)
{
    for (size_t i = 0; i < sizeof reals / sizeof reals[0]; i++)
        if (reals[i].dtype == dtype) return &reals[i];
    return NULL;
}

void emit_state_params(ew_writer *w, const emit_target *t)
{
    const char *r = t->restrict_kw;
    ew_printf(w, "(const grid_real *%s q, const grid_real *%s v, const grid_real *%s a, "
                 "const grid_real *%s fext, grid_real *%s out, const int frame, const int rf, grid_real *%s ws%s)",
              r, r, r, r, r, r, t->stride_param);
}

/* ---- pieces shared by both wrappers ---- */

/* the argument checks every entry point starts with (GRID_ERR_ARG = 7); both targets use it */
void emit_write_checks(ew_writer *w, const emit_entry *e)
{
    ew_puts(w, "    if (!c || c->batch < 0) return 7; /* GRID_ERR_ARG */\n"
               "    if (c->batch == 0) return 0;\n");
    ew_printf(w, "    if (!c->q || !c->out%s%s) return 7;\n", e->needs_v ? " || !c->v" : "",
              e->needs_a ? " || !c->a" : "");
    if (e->frame_check)
        ew_printf(w, "    if (c->frame < 0 || c->frame >= %d) return 7;\n"
                     "    if (c->reference_frame < 0 || c->reference_frame > 2) return 7;\n",
                  e->nframes);
}

static int uses_a(const emit_entry *e) { return e->needs_a || e->opt_a; }
static int uses_fext(const emit_entry *e) { return e->opt_fext; }

/* local pointer declarations of the inputs the entry reads */
static void write_pointers(ew_writer *w, const emit_entry *e)
{
    ew_puts(w, "    const grid_real *q = (const grid_real *)c->q;\n");
    if (e->needs_v) ew_puts(w, "    const grid_real *v = (const grid_real *)c->v;\n");
    if (uses_a(e)) ew_puts(w, "    const grid_real *a = (const grid_real *)c->a;\n");
    if (uses_fext(e)) ew_puts(w, "    const grid_real *f = (const grid_real *)c->fext;\n");
    ew_puts(w, "    grid_real *o = (grid_real *)c->out;\n");
    if (e->work > 0)
        ew_printf(w, "    /* workspace: W reals per thread of the team, in c->work (meta.work_bytes per thread) */\n"
                     "    const size_t W = %lld;\n"
                     "    grid_real *const wsb = (grid_real *)c->work;\n"
                     "    if (!wsb) return 7;\n", e->work);
}

/* the call of a per-state function on state b */
static void write_call(ew_writer *w, const emit_entry *e, const emit_variant *vr, const char *stride_arg)
{
    ew_printf(w, "grid_s_%s(q + b * %lld, ", vr->fn, e->nq);
    if (e->needs_v) ew_printf(w, "v + b * %lld, ", e->nv);
    else ew_puts(w, "0, ");
    if (vr->reads_a && e->needs_a) ew_printf(w, "a + b * %lld, ", e->nv);
    else if (vr->reads_a) ew_printf(w, "a ? a + b * %lld : grid_zeros_, ", e->nv);
    else ew_puts(w, "0, ");
    if (vr->reads_fext) ew_printf(w, "f ? f + b * %lld : grid_zeros_, ", e->nfext);
    else ew_puts(w, "0, ");
    ew_printf(w, "o + b * %lld, fr, rf, %s%s)", e->nout, e->work > 0 ? "wsb + (size_t)grid_thread_() * W" : "0", stride_arg);
}

/* the variant slots in use: 1 entry when the algorithm has no optional input */
static int variant_count(const emit_entry *e)
{
    return (e->opt_a || e->opt_fext) ? 4 : 1;
}

static const emit_variant *variant_at(const emit_entry *e, int k)
{
    return e->variant[k].fn ? &e->variant[k] : &e->variant[0];
}

static void write_selector(ew_writer *w, const emit_entry *e)
{
    ew_printf(w, "    switch (%s | %s) {\n", e->opt_a ? "(a != 0)" : "0", e->opt_fext ? "((f != 0) << 1)" : "0");
}

/* ---- C: a per-state (or per-tile) loop, split over an OpenMP team for large batches ---- */

static long long at_least_1(long long n) { return n > 0 ? n : 1; }

/* a tile function: GRID_LANES states from b (the last state repeated past n) gathered into
   lane vectors, one call of the lane function, the valid lanes scattered back */
static void write_tile(ew_writer *w, const emit_target *t, const emit_entry *e, const emit_variant *vr)
{
    const char *r = t->restrict_kw;
    ew_printf(w, "%s void grid_tile_%s_%s(const grid_real *%s q, const grid_real *%s v, const grid_real *%s a, "
                 "const grid_real *%s f, grid_real *%s o, const long long b, const long long n)\n{\n",
              t->state_fn, e->name, vr->fn, r, r, r, r, r);
    ew_printf(w, "    grid_vec tq[%lld], to[%lld];\n", at_least_1(e->nq), at_least_1(e->nout));
    if (e->needs_v) ew_printf(w, "    grid_vec tv[%lld];\n", at_least_1(e->nv));
    if (vr->reads_a) ew_printf(w, "    grid_vec ta[%lld];\n", at_least_1(e->nv));
    if (vr->reads_fext) ew_printf(w, "    grid_vec tf[%lld];\n", at_least_1(e->nfext));
    ew_puts(w, "    (void)v; (void)a; (void)f;\n"
               "    if (b + 1 == n) {\n"
               "        /* one state: broadcast it to every lane */\n");
    ew_printf(w, "        for (int k = 0; k < %lld; k++) tq[k] = grid_splat_(q[b * %lld + k]);\n", e->nq, e->nq);
    if (e->needs_v) ew_printf(w, "        for (int k = 0; k < %lld; k++) tv[k] = grid_splat_(v[b * %lld + k]);\n", e->nv, e->nv);
    if (vr->reads_a)
        ew_printf(w, "        for (int k = 0; k < %lld; k++) ta[k] = grid_splat_(a ? a[b * %lld + k] : 0);\n", e->nv, e->nv);
    if (vr->reads_fext)
        ew_printf(w, "        for (int k = 0; k < %lld; k++) tf[k] = grid_splat_(f ? f[b * %lld + k] : 0);\n", e->nfext,
                  e->nfext);
    ew_puts(w, "    } else {\n"
               "        for (int l = 0; l < GRID_LANES; l++) {\n"
               "            const long long s = b + l < n ? b + l : n - 1;\n");
    ew_printf(w, "            for (int k = 0; k < %lld; k++) tq[k][l] = q[s * %lld + k];\n", e->nq, e->nq);
    if (e->needs_v) ew_printf(w, "            for (int k = 0; k < %lld; k++) tv[k][l] = v[s * %lld + k];\n", e->nv, e->nv);
    if (vr->reads_a)
        ew_printf(w, "            for (int k = 0; k < %lld; k++) ta[k][l] = a ? a[s * %lld + k] : 0;\n", e->nv, e->nv);
    if (vr->reads_fext)
        ew_printf(w, "            for (int k = 0; k < %lld; k++) tf[k][l] = f ? f[s * %lld + k] : 0;\n", e->nfext, e->nfext);
    ew_printf(w, "        }\n    }\n    grid_v_%s(tq, %s, %s, %s, to);\n", vr->fn, e->needs_v ? "tv" : "tq",
              vr->reads_a ? "ta" : "tq", vr->reads_fext ? "tf" : "tq");
    ew_printf(w, "    if (b + GRID_LANES <= n) {\n"
                 "        grid_real *rows[GRID_LANES];\n"
                 "        for (int l = 0; l < GRID_LANES; l++) rows[l] = o + (b + l) * %lld;\n"
                 "        grid_scatter_(to, %lld, rows);\n"
                 "    } else {\n"
                 "        for (int l = 0; b + l < n; l++)\n"
                 "            for (int k = 0; k < %lld; k++) o[(b + l) * %lld + k] = to[k][l];\n"
                 "    }\n}\n\n",
              e->nout, e->nout, e->nout, e->nout);
}

static void batch_c(ew_writer *w, const emit_target *t, const emit_entry *e)
{
    int nvar = variant_count(e);
    if (e->vector)
        for (int k = 0; k < nvar; k++) {
            const emit_variant *vr = variant_at(e, k);
            int dup = 0;
            for (int j = 0; j < k; j++) dup |= strcmp(variant_at(e, j)->fn, vr->fn) == 0;
            if (!dup) write_tile(w, t, e, vr);
        }
    ew_printf(w, "%s int grid_%s(const grid_call *c)\n{\n", t->export_fn, e->name);
    emit_write_checks(w, e);
    if (e->vector) {
        /* every pointer goes to the tile function, which reads what it needs */
        ew_puts(w, "    const grid_real *q = (const grid_real *)c->q;\n"
                   "    const grid_real *v = (const grid_real *)c->v;\n"
                   "    const grid_real *a = (const grid_real *)c->a;\n"
                   "    const grid_real *f = (const grid_real *)c->fext;\n"
                   "    grid_real *o = (grid_real *)c->out;\n");
        ew_printf(w, "    const long long n = c->batch, tiles = (n + GRID_LANES - 1) / GRID_LANES;\n"
                     "    const int nt = grid_threads_(c->num_threads, tiles, (%lldLL + GRID_LANES - 1) / GRID_LANES);\n",
                  e->min_parallel);
    } else {
        write_pointers(w, e);
        ew_printf(w, "    const long long n = c->batch;\n"
                     "    const int fr = c->frame, rf = c->reference_frame;\n"
                     "    const int nt = grid_threads_(%s, n, %lldLL);\n",
                  e->work > 0 ? "c->num_threads > 0 ? c->num_threads : 1 /* workspace covers the requested threads */"
                              : "c->num_threads",
                  e->min_parallel);
    }
    if (nvar > 1) write_selector(w, e);
    for (int k = 0; k < nvar; k++) {
        const emit_variant *vr = variant_at(e, k);
        const char *ind = nvar > 1 ? "        " : "    ";
        if (nvar > 1) ew_printf(w, "    case %d:\n", k);
        for (int team = 0; team < 2; team++) {
            if (team == 0) ew_printf(w, "%sif (nt <= 1) {\n", ind);
            else ew_printf(w, "%s} else {\n#ifdef _OPENMP\n#pragma omp parallel for schedule(static) num_threads(nt)\n#endif\n", ind);
            if (e->vector)
                ew_printf(w, "%s    for (long long i = 0; i < tiles; i++) grid_tile_%s_%s(q, v, a, f, o, i * GRID_LANES, n)",
                          ind, e->name, vr->fn);
            else {
                ew_printf(w, "%s    for (long long b = 0; b < n; b++) ", ind);
                write_call(w, e, vr, "");
            }
            ew_puts(w, ";\n");
        }
        ew_printf(w, "%s}\n", ind);
        if (nvar > 1) ew_puts(w, "        break;\n");
    }
    if (nvar > 1) ew_puts(w, "    }\n");
    ew_puts(w, "    return 0;\n}\n\n");
}

void emit_batch_helpers(ew_writer *w, const emit_target *t)
{
    if (t->id == GRID_TARGET_CUDA) {
        emit_cuda_helpers(w, t);
        return;
    }
    ew_puts(w, "/* threads for a batch of n states: one below min_parallel, else the request or OpenMP's default */\n"
               "static inline __attribute__((unused)) int grid_threads_(int requested, long long n, long long min_parallel)\n{\n"
               "#ifdef _OPENMP\n"
               "    if (n < min_parallel || requested == 1) return 1;\n"
               "    int nt = requested > 0 ? requested : omp_get_max_threads();\n"
               "    if ((long long)nt > n) nt = (int)n;\n"
               "    return nt < 1 ? 1 : nt;\n"
               "#else\n"
               "    (void)requested; (void)n; (void)min_parallel;\n"
               "    return 1;\n"
               "#endif\n}\n\n"
               "/* this thread's index in the team (its workspace slice) */\n"
               "static inline __attribute__((unused)) int grid_thread_(void)\n{\n"
               "#ifdef _OPENMP\n    return omp_get_thread_num();\n#else\n    return 0;\n#endif\n}\n\n");
}

static const emit_target targets[] = {
    {GRID_TARGET_C, "c", "static inline", "static inline __attribute__((unused))", "restrict", "static const", "", "",
     "#include <math.h>\n#include <stddef.h>\n#ifdef _OPENMP\n#include <omp.h>\n#endif\n",
     "__attribute__((visibility(\"default\")))", 1, batch_c},
    {GRID_TARGET_CUDA, "cuda", "static __device__ __forceinline__", "static __device__ __forceinline__ __attribute__((unused))", "__restrict__", "static __constant__ const",
     ", const int st", " * st", "#include <math.h>\n#include <stddef.h>\n#include <cuda_runtime.h>\n",
     "extern \"C\" __attribute__((visibility(\"default\")))", 0, emit_cuda_batch},
};

const emit_target *emit_target_get(int target)
{
    for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++)
        if (targets[i].id == target) return &targets[i];
    return NULL;
}
