/* grid_emit_source: the layout of one generated robot library (structs, its signature rows, tables, per-state code, entry points). */
#include <assert.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include "emit_ctx.h"

grid_emit_options grid_emit_options_default(void)
{
    grid_emit_options o = {GRID_FLOAT64, GRID_TARGET_C, NULL, 0, NULL, GRID_SCHEDULE_AUTO};
    return o;
}

/* The per-state functions a library may contain, derived once from the method table (methods.c): each row's
   variants, named <row> or, with several, <row>_0 / _a / _f (the optional acceleration, the external forces read);
   the functions each one calls; and per row how its inputs and attributes map onto the per-state parameters (q, v,
   a, fext, g; frame, rf) and the function of each combination of its optional inputs */
enum { MAX_FNS = GRID_ALGO_COUNT * EMIT_MAX_VARIANTS, MAX_CALLS = EMIT_MAX_CALLS };
static state_spec specs[MAX_FNS];
static char spec_names[MAX_FNS][48];
static int n_fns;
static int calls[MAX_FNS][MAX_CALLS]; /* -1 = none */

/* per row of the signature table: how its inputs and attributes map onto the per-state parameters, and the per-state
   function of each combination of the row's optional inputs (slot bit k = its k-th optional input given; -1 = past
   the row's slots); main = the slot the stats report (every optional input given but the external forces) */
typedef struct {
    int param_in[EP_COUNT];
    int attr_frame, attr_rf;
    int slot[1 << EMIT_MAX_OPT];
    int main;
} method_layout;
static method_layout layouts[GRID_ALGO_COUNT];
#define NSLOT (1 << EMIT_MAX_OPT)

/* the per-state parameter an input feeds, by its name in the row; -1: none known */
static int param_of_input(const char *name)
{
    static const struct { const char *name; int param; } map[] = {
        {"q", EP_Q}, {"qd", EP_V}, {"qdd", EP_A}, {"u", EP_A}, {"f_ext", EP_F}, {"cotangent", EP_G},
        {"target", EP_A}}; /* (a per-state target takes the acceleration's slot: no row has both) */
    for (size_t k = 0; k < sizeof map / sizeof map[0]; k++)
        if (strcmp(name, map[k].name) == 0) return map[k].param;
    return -1;
}

/* the optional inputs of row r, in order; returns their count */
static int optional_inputs(const grid_signature_row *r, int opt[GRID_MAX_IN])
{
    int n = 0;
    for (int k = 0; k < r->n_in; k++)
        if (r->in[k].optional != GRID_REQUIRED) opt[n++] = k;
    return n;
}

/* the parameters per-state function sp reads, as EM_READS bits */
static int spec_bits(const state_spec *sp)
{
    return EM_READS(EP_Q) | (sp->reads_v ? EM_READS(EP_V) : 0) | (sp->reads_a ? EM_READS(EP_A) : 0) |
           (sp->reads_fext ? EM_READS(EP_F) : 0) | (sp->reads_g ? EM_READS(EP_G) : 0);
}

/* the function of row `row`'s method (or the one it shares) that a call reading `reads` runs: its first variant that
   reads all of them; -1 when none does */
static int function_for(int row, int reads)
{
    const emit_method *m = emit_method_of(row);
    const int owner = m->shares >= 0 ? m->shares : row;
    for (int f = 0; f < n_fns; f++)
        if (specs[f].m->row == owner && (spec_bits(&specs[f]) & reads) == reads) return f;
    return -1;
}

static void init_tables(void)
{
    for (int a = 0; a < GRID_ALGO_COUNT; a++) {
        const emit_method *m = emit_method_of(a);
        assert(m && (m->shares < 0 || !m->variants[0]));
        int nvar = 0;
        while (nvar < EMIT_MAX_VARIANTS && m->variants[nvar]) nvar++;
        const grid_signature_row *r = grid_sig_row(a);
        for (int k = 0; k < nvar; k++) {
            const int f = n_fns++, rd = m->variants[k];
            assert(f < MAX_FNS && (rd & EM_READS(EP_Q)));
            /* a variant's suffix: what it reads of the row's optional acceleration and external forces */
            int a_opt = 0;
            for (int i = 0; i < r->n_in; i++) a_opt |= param_of_input(r->in[i].name) == EP_A && r->in[i].optional;
            const char *sfx = nvar == 1 ? "" : (rd & EM_READS(EP_F)) ? "_f" : (a_opt && (rd & EM_READS(EP_A))) ? "_a" : "_0";
            snprintf(spec_names[f], sizeof spec_names[f], "%s%s", r->name, sfx);
            specs[f] = (state_spec){spec_names[f], m, !!(rd & EM_READS(EP_V)), !!(rd & EM_READS(EP_A)),
                                    !!(rd & EM_READS(EP_F)), m->lanes, !!(rd & EM_READS(EP_G))};
        }
    }
    for (int f = 0; f < n_fns; f++)
        for (int c = 0; c < MAX_CALLS; c++) {
            const emit_method *m = specs[f].m;
            calls[f][c] = c < m->n_callees ? function_for(m->callees[c].row, m->callees[c].reads) : -1;
            assert(c >= m->n_callees || (calls[f][c] >= 0 && calls[f][c] < f));
        }
    for (int a = 0; a < GRID_ALGO_COUNT; a++) {
        const grid_signature_row *r = grid_sig_row(a);
        method_layout *L = &layouts[a];
        int opt[GRID_MAX_IN], given = 0, fopt = -1;
        const int n_opt = optional_inputs(r, opt);
        assert(n_opt <= EMIT_MAX_OPT);
        for (int p = 0; p < EP_COUNT; p++) L->param_in[p] = -1;
        for (int k = 0; k < r->n_in; k++) {
            const int p = param_of_input(r->in[k].name);
            assert(p >= 0 && L->param_in[p] < 0);
            L->param_in[p] = k;
            if (!r->in[k].optional) given |= EM_READS(p);
        }
        L->attr_frame = L->attr_rf = -1;
        for (int k = 0; k < r->n_attr; k++) {
            if (strcmp(r->attr[k].name, "frame") == 0) L->attr_frame = k;
            else if (strcmp(r->attr[k].name, "reference_frame") == 0) L->attr_rf = k;
            else assert(!"an attribute without a per-state parameter");
        }
        for (int s = 0; s < NSLOT; s++) {
            int rd = given;
            for (int k = 0; k < n_opt; k++)
                if (s & (1 << k)) rd |= EM_READS(param_of_input(r->in[opt[k]].name));
            L->slot[s] = s < (1 << n_opt) ? function_for(a, rd) : -1;
            assert(s >= (1 << n_opt) || L->slot[s] >= 0);
        }
        for (int k = 0; k < n_opt; k++)
            if (param_of_input(r->in[opt[k]].name) == EP_F) fopt = k;
        L->main = ((1 << n_opt) - 1) & ~(fopt >= 0 ? 1 << fopt : 0);
    }
}
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

const state_spec *emit_function_for(int row, int reads)
{
    pthread_once(&tables_once, init_tables);
    const int f = function_for(row, reads);
    return f >= 0 ? &specs[f] : NULL;
}

/* which per-state parameters the function f reads */
static void spec_reads(int f, int reads[EP_COUNT])
{
    for (int p = 0; p < EP_COUNT; p++) reads[p] = !!(spec_bits(&specs[f]) & EM_READS(p));
}

/* the layouts agree with the signature table: every function reads only parameters the row feeds, and functions
   shared by two rows see the same optional-ness on every parameter they read (their kernels are shared) */
static void check_layouts(void)
{
#ifndef NDEBUG
    for (int a = 0; a < GRID_ALGO_COUNT; a++) {
        const grid_signature_row *r = grid_sig_row(a);
        const method_layout *L = &layouts[a];
        for (int s = 0; s < NSLOT; s++) {
            if (L->slot[s] < 0) continue;
            int reads[EP_COUNT];
            spec_reads(L->slot[s], reads);
            for (int p = 0; p < EP_COUNT; p++) assert(!reads[p] || L->param_in[p] >= 0);
            for (int b = 0; b < a; b++)
                for (int t = 0; t < NSLOT; t++)
                    if (layouts[b].slot[t] == L->slot[s])
                        for (int p = 0; p < EP_COUNT; p++)
                            assert(!reads[p] || L->param_in[p] < 0 || layouts[b].param_in[p] < 0 ||
                                   (r->in[L->param_in[p]].optional == GRID_REQUIRED) ==
                                       (grid_sig_row(b)->in[layouts[b].param_in[p]].optional == GRID_REQUIRED));
        }
    }
#endif
}

/* the struct definitions of include/grid/abi.h, field for field */
static const char abi_structs[] =
    "#ifndef GRID_ABI_H\n"
    "/* the batch ABI of include/grid/abi.h (same layout; skipped when that header came first) */\n"
    "#define GRID_ABI_VERSION 2\n#define GRID_MAX_IN 8\n#define GRID_MAX_OUT 4\n#define GRID_MAX_ATTR 4\n#define GRID_MAX_RANK 4\n"
    "typedef struct {\n"
    "    const void *const *in;\n    void *const *out;\n    int n_in, n_out;\n    long long batch;\n"
    "    int attr[GRID_MAX_ATTR];\n    int num_threads;\n    void *work;\n    size_t work_bytes;\n    void *stream;\n"
    "} grid_call;\n\n"
    "typedef struct {\n"
    "    const char *name;\n    int rank;\n    int shape[GRID_MAX_RANK];\n    long long width;\n    int optional;\n"
    "} grid_arg_info;\n\n"
    "typedef struct {\n"
    "    const char *name;\n    int n_in, n_out, n_attr;\n    grid_arg_info in[GRID_MAX_IN];\n"
    "    grid_arg_info out[GRID_MAX_OUT];\n    const char *attr_name[GRID_MAX_ATTR];\n"
    "    int attr_lo[GRID_MAX_ATTR], attr_hi[GRID_MAX_ATTR];\n    size_t work_bytes;\n    int gpu_map;\n"
    "} grid_method_info;\n\n"
    "typedef struct {\n"
    "    int abi_version;\n    int nq, nv, nb, nframes, nee;\n    int dtype;\n    int target;\n"
    "    int n_methods;\n    const grid_method_info *methods;\n    size_t work_bytes;\n    const char *model_hash;\n"
    "} grid_robot_meta_t;\n"
    "#endif\n\n";

static int valid_hash(const char *h)
{
    size_t n = strlen(h);
    if (n > 128) return 0;
    for (size_t i = 0; i < n; i++) {
        char c = h[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) return 0;
    }
    return 1;
}

static void write_banner(const emit_ctx *cx, const grid_emit_options *o, const int *sel)
{
    const em_model *em = cx->em;
    ew_printf(cx->w,
              "/* grid-rbd robot library for robot '%s', generated by the grid-rbd emitter; do not edit.\n"
              "   nq = %d, nv = %d, nb = %d, frames = %d, end effectors = %d, %s, target %s.\n"
              "   Entry points (include/grid/abi.h):",
              em->robot, em->nq_user, em->nv_user, em->nb, em->nframes, em->nee,
              o->dtype == GRID_FLOAT32 ? "float32" : "float64", cx->t->name);
    for (int a = 0; a < GRID_ALGO_COUNT; a++)
        if (sel[a]) ew_printf(cx->w, " %s%s", cx->t->id == GRID_TARGET_CUDA ? "grid_cuda_" : "grid_", grid_algo_name(a));
    ew_puts(cx->w, ". */\n");
}

/* one grid_arg_info initializer */
static void write_arg_info(ew_writer *w, const grid_arg_info *a)
{
    ew_printf(w, "{\"%s\", %d, {%d, %d, %d, %d}, %lldLL, %d}", a->name, a->rank, a->shape[0], a->shape[1], a->shape[2],
              a->shape[3], a->width, a->optional);
}

/* the library's rows (this robot's shapes and workspace), the metadata pointing at them, and the exports */
static void write_meta(const emit_ctx *cx, const grid_emit_options *o, const grid_method_info *rows, const int *sel,
                       const int *lanes, const char *hash)
{
    const em_model *em = cx->em;
    ew_writer *w = cx->w;
    int n = 0;
    size_t work = 0, lane_work = 0; /* bytes per thread: of scalar rows; of lane rows, per lane */
    ew_puts(w, "/* the methods of this library: their signature rows for this robot (grid/signature.h) */\n"
               "static const grid_method_info grid_methods_[] = {\n");
    for (int a = 0; a < GRID_ALGO_COUNT; a++) {
        if (!sel[a]) continue;
        const grid_method_info *r = &rows[a];
        n++;
        if (!lanes[a] && r->work_bytes > work) work = r->work_bytes;
        if (lanes[a] && r->work_bytes > lane_work) lane_work = r->work_bytes;
        ew_printf(w, "    {\"%s\", %d, %d, %d,\n     {", r->name, r->n_in, r->n_out, r->n_attr);
        for (int k = 0; k < r->n_in; k++) {
            if (k) ew_puts(w, ", ");
            write_arg_info(w, &r->in[k]);
        }
        ew_puts(w, "},\n     {");
        for (int k = 0; k < r->n_out; k++) {
            if (k) ew_puts(w, ", ");
            write_arg_info(w, &r->out[k]);
        }
        ew_puts(w, "},\n     {");
        for (int k = 0; k < GRID_MAX_ATTR; k++)
            if (k < r->n_attr) ew_printf(w, "%s\"%s\"", k ? ", " : "", r->attr_name[k]);
            else ew_printf(w, "%s0", k ? ", " : "");
        ew_printf(w, "}, {%d, %d, %d, %d}, {%d, %d, %d, %d}, %zu%s, %d},\n", r->attr_lo[0], r->attr_lo[1], r->attr_lo[2],
                  r->attr_lo[3], r->attr_hi[0], r->attr_hi[1], r->attr_hi[2], r->attr_hi[3], r->work_bytes,
                  lanes[a] && r->work_bytes ? "u * GRID_LANES" : "", r->gpu_map);
    }
    ew_puts(w, "};\n\n");
    /* the most any row takes (a lane row's scales with GRID_LANES, which the compiler flags set) */
    char total[96];
    if (lane_work) snprintf(total, sizeof total, "(%zuu * GRID_LANES > %zuu ? %zuu * GRID_LANES : %zuu)", lane_work, work,
                            lane_work, work);
    else snprintf(total, sizeof total, "%zuu", work);
    ew_printf(w,
              "static const grid_robot_meta_t grid_meta_ = {%d, %d, %d, %d, %d, %d, %d, %d, %d, grid_methods_, %s, \"%s\"};\n\n"
              "%s const grid_robot_meta_t *grid_robot_meta(void)\n{\n    return &grid_meta_;\n}\n\n"
              "%s int grid_n_methods(void)\n{\n    return %d;\n}\n\n"
              "%s const grid_method_info *grid_method(int i)\n{\n    return i >= 0 && i < %d ? &grid_methods_[i] : 0;\n}\n\n",
              GRID_ABI_VERSION, em->nq_user, em->nv_user, em->nb, em->nframes, em->nee, o->dtype, o->target, n, total, hash,
              cx->t->export_fn, cx->t->export_fn, n, cx->t->export_fn, n);
}

/* smallest batch worth a thread team: about 400k operations (~100 us on one core), so the team's
   fork/join (a few us when the cores are idle, milliseconds when they are oversubscribed) stays small
   against the work (bench/RESULTS.md: a 256-state iiwa RNEA on two busy cores took 8 ms with a team) */
static long long min_parallel(long flops)
{
    long long n = 400000 / (flops > 0 ? flops : 1);
    return n < 2 ? 2 : n > 16384 ? 16384 : n;
}

/* one part per this many statements (compile time grows with function size, not file size,
   so parts only help the wall clock when compiled in parallel) */
#define STATEMENTS_PER_PART 12000L
#define MAX_PARTS 8

/* the schedule of each per-state function: SCHED_ROLLED, SCHED_LANES for a lane function (either schedule), and
   SCHED_STAGED for a composite whose CUDA entry also launches its callees' own kernels one after another (the FD
   gradient: docs/cuda.md "Staged FD gradient"), so the library's callees are in its part */
enum { SCHED_ROLLED = 1, SCHED_LANES = 2, SCHED_STAGED = 4 };

/* 1 when per-state function f is a template on the lanes that share a state (the target's group_fn): a rolled
   loop nest, or a rolled scalar FD composite, whose callees are then rolled templates too (not a coupled model's
   wrappers, not a lane function) */
static int group_template(const emit_ctx *cx, int f, const int *rolled, const int *vec)
{
    return cx->t->group_fn[0] && rolled[f] && !vec[f] && !emit_coupled(cx) &&
           (!specs[f].m->composite || specs[f].m->composite_groups);
}

/* row a's entry: its concrete row, parameter mapping, and the per-state function of each variant slot */
static void fill_entry(const emit_ctx *cx, int a, const grid_method_info *row, const sym_stats *fstats, const int *vec,
                       const int *rolled, const int *ilv, emit_entry *e)
{
    const method_layout *L = &layouts[a];
    memset(e, 0, sizeof *e);
    e->row = row;
    memcpy(e->param_in, L->param_in, sizeof e->param_in);
    e->attr_frame = L->attr_frame;
    e->attr_rf = L->attr_rf;
    int opt[GRID_MAX_IN];
    e->n_opt = optional_inputs(grid_sig_row(a), opt);
    for (int k = 0; k < e->n_opt; k++) e->opt[k] = opt[k];
    for (int s = 0; s < NSLOT; s++) {
        if (L->slot[s] < 0) continue;
        e->variant[s].fn = specs[L->slot[s]].fn;
        e->variant[s].work = fstats[L->slot[s]].work;
        e->variant[s].grouped = group_template(cx, L->slot[s], rolled, vec);
        e->variant[s].interleaved = ilv[L->slot[s]];
        spec_reads(L->slot[s], e->variant[s].reads);
    }
    e->vector = vec[L->slot[0]];
    for (int s = 0; s < NSLOT; s++)
        if (L->slot[s] >= 0 && fstats[L->slot[s]].work > e->work) e->work = fstats[L->slot[s]].work;
    if (e->vector) {
        e->tile_at = e->work;
        e->tile = emit_lane_tile(row, L->param_in);
        e->work += e->tile;
    }
    const sym_stats *ms = &fstats[L->slot[L->main]];
    e->min_parallel = min_parallel(ms->flops + 20 * ms->transcendental);
}

/* the first row (and its variant slot) whose layout runs per-state function f: the launcher a staged composite
   reuses for that callee */
static int row_of(int f, int *slot)
{
    for (int a = 0; a < GRID_ALGO_COUNT; a++)
        for (int s = 0; s < NSLOT; s++)
            if (layouts[a].slot[s] == f) {
                *slot = s;
                return a;
            }
    return -1;
}

/* a row with several outputs as the row of one output holding all their elements, in order (its per-state
   functions' packed block), named <name>_packed */
static void packed_row(const grid_method_info *r, grid_method_info *pk, char *name, size_t cap)
{
    *pk = *r;
    snprintf(name, cap, "%s_packed", r->name);
    pk->name = name;
    pk->n_out = 1;
    long long w = 0;
    for (int k = 0; k < r->n_out; k++) w += r->out[k].width;
    memset(pk->out, 0, sizeof pk->out);
    pk->out[0] = (grid_arg_info){"packed", 1, {(int)w}, w, GRID_REQUIRED};
}

/* the batch entry of row a (rows: every row's concrete form, for a staged composite's callees); a row with several
   outputs: the entry of its packed row, then the one that splits the packed block into the row's outputs */
static void write_entry(const emit_ctx *cx, int a, const grid_method_info *rows, const sym_stats *fstats, const int *vec,
                        const int *rolled, const int *ilv, const int *sched)
{
    emit_entry e, st[EMIT_STAGES];
    grid_method_info pk;
    char pk_name[80];
    if (rows[a].n_out > 1) packed_row(&rows[a], &pk, pk_name, sizeof pk_name);
    fill_entry(cx, a, rows[a].n_out > 1 ? &pk : &rows[a], fstats, vec, rolled, ilv, &e);
    e.split = rows[a].n_out > 1 ? &rows[a] : NULL;
    const int f = layouts[a].slot[0];
    if (sched[f] & SCHED_STAGED)
        for (int k = 0; k < EMIT_STAGES; k++) {
            int slot = 0;
            const int r = row_of(calls[f][k], &slot);
            assert(r >= 0);
            fill_entry(cx, r, &rows[r], fstats, vec, rolled, ilv, &st[k]);
            e.stage[k] = &st[k];
            e.stage_variant[k] = &st[k].variant[slot];
        }
    cx->t->batch(cx->w, cx->t, &e);
}

/* The schedule of every needed per-state function: forced by the option, or under AUTO rolled when its unrolled
   form passes GRID_EMIT_UNROLL_BUDGET, and then the largest unrolled ones while the library's unrolled total
   passes GRID_EMIT_LIBRARY_BUDGET (compile time follows the total) */
static void choose_schedules(const emit_ctx *cx, const int *need, int *rolled)
{
    long size[MAX_FNS], total = 0;
    /* on a coupled model the wrappers' full-coordinate functions, which wrappers share by name */
    char inner[MAX_FNS][2][64];
    long inner_size[MAX_FNS][2];
    int n_inner[MAX_FNS];
    const int coupled = emit_coupled(cx);
    for (int f = 0; f < n_fns; f++) {
        rolled[f] = 0;
        n_inner[f] = 0;
        if (coupled && need[f] && !emit_coupled_in_graph(cx, &specs[f])) {
            /* (a function in the user's coordinates is one graph of its own, sized and counted like any other) */
            n_inner[f] = emit_coupled_inners(cx, &specs[f], inner[f], inner_size[f]);
            size[f] = n_inner[f] < 0 ? -1 : 0;
            for (int k = 0; k < n_inner[f]; k++) size[f] += inner_size[f][k];
        } else size[f] = need[f] ? emit_state_size(cx, &specs[f]) : -1;
        if (size[f] < 0) continue; /* not needed, or no program: unrolled */
        if (cx->schedule == GRID_SCHEDULE_ROLLED) rolled[f] = 1;
        else if (cx->schedule == GRID_SCHEDULE_AUTO) {
            /* a function's own budget; a wrapper's inner functions are each a function of their own */
            static const long budgets[] = {[BUDGET_UNROLL] = GRID_EMIT_UNROLL_BUDGET,
                                           [BUDGET_JACOBIAN] = GRID_EMIT_JACOBIAN_BUDGET,
                                           [BUDGET_GRADIENT] = GRID_EMIT_GRADIENT_BUDGET};
            const long budget = budgets[specs[f].m->budget];
            rolled[f] = n_inner[f] == 0 && size[f] > budget;
            for (int k = 0; k < n_inner[f]; k++) rolled[f] |= inner_size[f][k] > budget;
        }
    }
    for (;;) {
        /* the variants of one method share its schedule (one batch wrapper serves them all) */
        for (int pass = 0; pass < 2; pass++)
            for (int a = 0; a < GRID_ALGO_COUNT; a++) {
                int any = 0;
                for (int s = 0; s < NSLOT; s++) any |= layouts[a].slot[s] >= 0 && rolled[layouts[a].slot[s]];
                for (int s = 0; s < NSLOT && any; s++)
                    if (layouts[a].slot[s] >= 0 && size[layouts[a].slot[s]] >= 0) rolled[layouts[a].slot[s]] = 1;
                /* a composite is rolled when a function it calls is (its lane form calls lane functions only; the
                   rolled form gets rolled copies of the callees the library keeps unrolled) */
                for (int f = 0; f < n_fns; f++)
                    for (int c = 0; c < MAX_CALLS && need[f]; c++) rolled[f] |= calls[f][c] >= 0 && rolled[calls[f][c]];
            }
        total = 0;
        int big = -1;
        for (int f = 0; f < n_fns; f++) {
            if (size[f] < 0 || rolled[f]) continue;
            if (n_inner[f] == 0) total += size[f];
            /* a full-coordinate function counts once, however many unrolled wrappers call it */
            for (int k = 0; k < n_inner[f]; k++) {
                int seen = 0;
                for (int g = 0; g < f && !seen; g++)
                    for (int j = 0; j < n_inner[g] && !seen; j++)
                        seen = size[g] >= 0 && !rolled[g] && strcmp(inner[g][j], inner[f][k]) == 0;
                if (!seen) total += inner_size[f][k];
            }
            if (big < 0 || size[f] > size[big]) big = f;
        }
        if (cx->schedule != GRID_SCHEDULE_AUTO || total <= GRID_EMIT_LIBRARY_BUDGET || big < 0) break;
        rolled[big] = 1;
    }
}


/* 1 when composite g makes its own rolled scalar copy of its callee f: a scalar composite, rolled while the library
   keeps f unrolled, or calling a lane function (a lane composite calls the library's lane functions, rolled or not) */
static int copies_callee(int g, int f, const int *sched)
{
    return !(sched[g] & SCHED_LANES) && (((sched[g] & SCHED_ROLLED) && !(sched[f] & SCHED_ROLLED)) || (sched[f] & SCHED_LANES));
}

/* 1 when composite g calls the library's function f itself */
static int calls_fn(int g, int f, const int *sched)
{
    for (int c = 0; c < MAX_CALLS; c++)
        if (calls[g][c] == f) return !copies_callee(g, f, sched) || (sched[g] & SCHED_STAGED);
    return 0;
}

/* 1 when row a's functions (its slots and what they call) include f */
static int row_uses(int a, int f, const int *sched)
{
    for (int s = 0; s < NSLOT; s++) {
        const int g = layouts[a].slot[s];
        if (g >= 0 && (g == f || calls_fn(g, f, sched))) return 1;
    }
    return 0;
}

/* 1 when rows a and b call a common per-state function (they must share a part) */
static int share_function(int a, int b, const int *sched)
{
    for (int f = 0; f < n_fns; f++)
        if (row_uses(a, f, sched) && row_uses(b, f, sched)) return 1;
    return 0;
}

/* statements of the distinct functions row a calls */
static long algo_statements(int a, const sym_stats *fstats)
{
    long n = 0;
    for (int s = 0; s < NSLOT; s++) {
        int f = layouts[a].slot[s], dup = 0;
        if (f < 0) continue;
        for (int r = 0; r < s; r++) dup |= layouts[a].slot[r] == f;
        if (!dup) n += fstats[f].statements;
    }
    return n;
}

/* assign each selected row to a part: groups that share functions stay together,
   heaviest group first onto the lightest part; deterministic */
static int assign_parts(const int *sel, const sym_stats *fstats, const int *sched, int apart, int part[GRID_ALGO_COUNT])
{
    int group[GRID_ALGO_COUNT], ngroups = 0;
    long weight[GRID_ALGO_COUNT] = {0}, total = 0;
    for (int a = 0; a < GRID_ALGO_COUNT; a++) {
        part[a] = -1;
        group[a] = -1;
        if (!sel[a]) continue;
        /* a row sharing functions with several groups joins them into one (a composite calls rows' functions),
           unless the target lets each part hold its own copies (apart) */
        for (int b = 0; b < a && !apart; b++) {
            if (group[b] < 0 || !share_function(a, b, sched)) continue;
            if (group[a] < 0) {
                group[a] = group[b];
                continue;
            }
            if (group[a] == group[b]) continue;
            const int from = group[b] > group[a] ? group[b] : group[a], to = group[b] < group[a] ? group[b] : group[a];
            for (int c = 0; c <= a; c++)
                if (group[c] == from) group[c] = to;
                else if (group[c] > from) group[c]--;
            ngroups--;
        }
        if (group[a] < 0) group[a] = ngroups++;
    }
    /* a function shared by two algorithms counts once; apart (a group per row), once per row that uses it (its own
       copy), the callees' included */
    long fcount[MAX_FNS] = {0};
    for (int a = 0; a < GRID_ALGO_COUNT && apart; a++)
        for (int f = 0; f < n_fns && group[a] >= 0; f++)
            if (row_uses(a, f, sched)) {
                weight[group[a]] += fstats[f].statements;
                total += fstats[f].statements;
            }
    for (int a = 0; a < GRID_ALGO_COUNT && !apart; a++) {
        if (group[a] < 0) continue;
        for (int s = 0; s < NSLOT; s++) {
            int f = layouts[a].slot[s];
            if (f < 0 || fcount[f]) continue;
            fcount[f] = 1;
            weight[group[a]] += fstats[f].statements;
            total += fstats[f].statements;
        }
    }
    int nparts = (int)((total + STATEMENTS_PER_PART - 1) / STATEMENTS_PER_PART);
    if (nparts < 1) nparts = 1;
    if (nparts > MAX_PARTS) nparts = MAX_PARTS;
    if (nparts > ngroups) nparts = ngroups > 0 ? ngroups : 1;
    long load[MAX_PARTS] = {0};
    int gpart[GRID_ALGO_COUNT], placed[GRID_ALGO_COUNT] = {0};
    for (int k = 0; k < ngroups; k++) {
        int best = -1;
        for (int g = 0; g < ngroups; g++)
            if (!placed[g] && (best < 0 || weight[g] > weight[best])) best = g;
        int p = 0;
        for (int q = 1; q < nparts; q++)
            if (load[q] < load[p]) p = q;
        placed[best] = 1;
        gpart[best] = p;
        load[p] += weight[best];
    }
    for (int a = 0; a < GRID_ALGO_COUNT; a++)
        if (group[a] >= 0) part[a] = gpart[group[a]];
    return nparts;
}

/* A float32 library's rows computed in float64 (emit_method.wide_real) live in a part of their own: a float64 library
   of those rows alone (its own prologue and tables, one part), without metadata, whose entry points are renamed
   grid_f64_<row> (grid_cuda_f64_, grid_host_f64_) by macros at its top; the float32 parts' entries of those rows
   widen the inputs, call them and round the outputs (emit_target.widened) */
typedef struct {
    size_t work_bytes[GRID_ALGO_COUNT]; /* out: each of its rows' workspace bytes per state (scalar rows only) */
} wide_part;

static int emit_library(const grid_model *m, const grid_emit_options *opts, wide_part *inner, char **source,
                        size_t *len, grid_emit_stats *stats, grid_error *err);

int grid_emit_source_stats(const grid_model *m, const grid_emit_options *opts, char **source, size_t *len,
                           grid_emit_stats *stats, grid_error *err)
{
    return emit_library(m, opts, NULL, source, len, stats, err);
}

static int emit_library(const grid_model *m, const grid_emit_options *opts, wide_part *inner, char **source,
                        size_t *len, grid_emit_stats *stats, grid_error *err)
{
    grid_emit_options o = opts ? *opts : grid_emit_options_default();
    if (source) *source = NULL;
    if (len) *len = 0;
    if (stats) memset(stats, 0, sizeof *stats);
    if (!m || !source) return grid_error_set(err, GRID_ERR_ARG, 0, 0, "grid_emit_source: model and source are required");
    const emit_target *t = emit_target_get(o.target);
    const emit_real *re = emit_real_get(o.dtype);
    if (!t) return grid_error_set(err, GRID_ERR_ARG, 0, 0, "unknown emit target %d", o.target);
    if (!re) return grid_error_set(err, GRID_ERR_ARG, 0, 0, "unknown dtype %d (use GRID_FLOAT32 or GRID_FLOAT64)", o.dtype);
    pthread_once(&tables_once, init_tables);
    check_layouts();
    /* the selected rows: every row of the table, or the listed ones (each once) */
    int sel[GRID_ALGO_COUNT];
    for (int a = 0; a < GRID_ALGO_COUNT; a++) sel[a] = o.n_methods <= 0 && !grid_sig_opt_in(a);
    if (o.n_methods < 0 || (o.n_methods > 0 && !o.methods))
        return grid_error_set(err, GRID_ERR_ARG, 0, 0, "n_methods %d without a list of method ids", o.n_methods);
    for (int k = 0; k < o.n_methods; k++) {
        const int a = o.methods[k];
        if (a < 0 || a >= GRID_ALGO_COUNT)
            return grid_error_set(err, GRID_ERR_ARG, 0, 0, "unknown method id %d (the table has %d rows)", a,
                                  GRID_ALGO_COUNT);
        if (sel[a]) return grid_error_set(err, GRID_ERR_ARG, 0, 0, "method %s is selected twice", grid_algo_name(a));
        sel[a] = 1;
    }
    const char *hash = o.model_hash ? o.model_hash : "";
    if (!valid_hash(hash)) return grid_error_set(err, GRID_ERR_ARG, 0, 0, "model_hash must be at most 128 hex digits");
    /* the rows computed in float64 (wide), emitted first as the float64 part; gen: the rows this emission writes */
    int wide[GRID_ALGO_COUNT] = {0}, wide_ids[GRID_ALGO_COUNT], n_wide = 0, gen[GRID_ALGO_COUNT];
    for (int a = 0; a < GRID_ALGO_COUNT; a++) {
        if (sel[a] && re->is_float && !inner && emit_method_of(a)->wide_real) {
            wide[a] = 1;
            wide_ids[n_wide++] = a;
        }
        gen[a] = sel[a] && !wide[a];
    }
    char *src64 = NULL;
    size_t len64 = 0;
    grid_emit_stats st64;
    wide_part part64 = {{0}};
    if (n_wide) {
        grid_emit_options o64 = o;
        o64.dtype = GRID_FLOAT64;
        o64.methods = wide_ids;
        o64.n_methods = n_wide;
        const int r64 = emit_library(m, &o64, &part64, &src64, &len64, &st64, err);
        if (r64 != GRID_OK) return r64;
    }

    em_model em;
    int rc = em_model_init(&em, m, err);
    if (rc != GRID_OK) {
        free(src64);
        return rc;
    }
    ew_writer w, fw[MAX_FNS];
    ew_init(&w);
    for (int f = 0; f < n_fns; f++) ew_init(&fw[f]);
    emit_ctx cx = {&em, t, re, {"grid_real", re->is_float, re->fn_sqrt, re->fn_sin, re->fn_cos, re->fn_atan2,
                                "grid_sincos_", NULL, NULL, t->elem_scale, "    ", re->is_float ? "fabsf" : "fabs"},
                   {"grid_vec", re->is_float, "grid_vsqrt_", "grid_vsin_", "grid_vcos_", "grid_vatan2_", "grid_vsincos_",
                    "grid_splat_", NULL, "", "    ", "grid_vabs_"}, &w, o.schedule, 0, 0, 0};

    /* per-state functions the selected rows call, each into its own buffer */
    int need[MAX_FNS] = {0};
    for (int a = 0; a < GRID_ALGO_COUNT; a++)
        for (int s = 0; s < NSLOT && gen[a]; s++)
            if (layouts[a].slot[s] >= 0) need[layouts[a].slot[s]] = 1;
    for (int f = 0; f < n_fns; f++)
        for (int c = 0; c < MAX_CALLS && need[f]; c++)
            if (calls[f][c] >= 0) need[calls[f][c]] = 1;
    sym_stats fstats[MAX_FNS];
    memset(fstats, 0, sizeof fstats);
    int vec[MAX_FNS], rolled[MAX_FNS], sched[MAX_FNS], ilv[MAX_FNS] = {0}, any_vec = 0;
    if (o.schedule < GRID_SCHEDULE_AUTO || o.schedule > GRID_SCHEDULE_ROLLED) rc = grid_error_set(err, GRID_ERR_ARG, 0, 0, "unknown schedule %d (use GRID_SCHEDULE_AUTO, _UNROLLED or _ROLLED)", o.schedule);
    if (rc == GRID_OK) choose_schedules(&cx, need, rolled);
    /* lane functions on either schedule */
    for (int f = 0; f < n_fns && rc == GRID_OK; f++) {
        vec[f] = t->lanes && specs[f].lanes_ok;
        sched[f] = (rolled[f] ? SCHED_ROLLED : 0) | (vec[f] ? SCHED_LANES : 0) |
                   (t->id == GRID_TARGET_CUDA && specs[f].m->staged_cuda ? SCHED_STAGED : 0);
    }
    for (int f = 0; f < n_fns && rc == GRID_OK; f++) {
        if (!need[f]) continue;
        any_vec |= vec[f];
        cx.w = &fw[f];
        int frc;
        if (specs[f].m->composite) {
            /* a composite (a template may call none): its callees come first in the table, so their workspace is
               known */
            for (int c = 0; c < MAX_CALLS; c++) assert(calls[f][c] < f);
            char copy[MAX_CALLS][48];
            const char *name[MAX_CALLS];
            long inner_work = 0;
            sym_stats cs = {0};
            frc = 0;
            for (int c = 0; c < MAX_CALLS && frc == 0; c++) {
                const int g = calls[f][c];
                name[c] = g >= 0 ? specs[g].fn : NULL;
                if (g < 0) continue;
                if (fstats[g].work > inner_work) inner_work = fstats[g].work;
                if (!copies_callee(f, g, sched)) continue;
                /* a rolled scalar copy of a callee the library keeps unrolled or has as a lane function only (small:
                   its size does not grow with the robot), once per translation unit */
                state_spec sp = specs[g];
                snprintf(copy[c], sizeof copy[c], "%s_rc", specs[g].fn);
                sp.fn = name[c] = copy[c];
                ew_printf(cx.w, "#ifndef GRID_COPY_%s\n#define GRID_COPY_%s\n", copy[c], copy[c]);
                sym_stats s1 = {0};
                cx.copy = 1;
                frc = emit_state_function(&cx, &sp, 1, 0, &s1);
                cx.copy = 0;
                ew_puts(cx.w, "#endif\n\n");
                cs.statements += s1.statements;
                if (s1.work > inner_work) inner_work = s1.work;
            }
            composite_inners in = {{0}, inner_work, group_template(&cx, f, rolled, vec), 0};
            for (int c = 0; c < MAX_CALLS; c++) in.fn[c] = name[c];
            /* CUDA, one thread per state, callees without workspace: the arrays interleaved over the warp */
            in.interleave = t->group_fn[0] && specs[f].m->composite_groups && !vec[f] && !in.group && inner_work == 0;
            ilv[f] = in.interleave;
            if (frc == 0)
                frc = specs[f].m->composite(&cx, &specs[f], &in, vec[f], &fstats[f]);
            fstats[f].statements += cs.statements;
            /* the executed work, which sizes the batches worth a thread team, includes the callees' */
            for (int c = 0; c < MAX_CALLS; c++)
                if (calls[f][c] >= 0) {
                    fstats[f].flops += fstats[calls[f][c]].flops;
                    fstats[f].transcendental += fstats[calls[f][c]].transcendental;
                }
        } else {
            cx.called = 0;
            for (int g = 0; g < n_fns; g++)
                cx.called |= need[g] && calls_fn(g, f, sched);
            frc = emit_state_function(&cx, &specs[f], rolled[f], vec[f], &fstats[f]);
            cx.called = 0;
        }
        if (frc != 0 || fw[f].oom)
            rc = grid_error_set(err, GRID_ERR_NOMEM, 0, 0, "out of memory emitting %s", specs[f].fn);
    }
    cx.w = &w;
    int part[GRID_ALGO_COUNT];
    int nparts = assign_parts(gen, fstats, sched, t->parts_apart, part);
    if (inner) { /* the float64 part is one part of the library: no guards of its own */
        for (int a = 0; a < GRID_ALGO_COUNT; a++)
            if (part[a] >= 0) part[a] = 0;
        nparts = 1;
    }

    /* the concrete rows of this robot: shapes, attribute ranges, workspace bytes per thread; and the widest
       optional input (the zeros an absent one reads) */
    const grid_sizes sizes = grid_sizes_of(em.nq_user, em.nv_user, em.nb, em.nee, em.nframes);
    grid_method_info rows[GRID_ALGO_COUNT];
    int row_lanes[GRID_ALGO_COUNT]; /* the row runs lane functions: its workspace bytes are per lane */
    long long nz = 1;
    for (int a = 0; a < GRID_ALGO_COUNT; a++) {
        long work = 0;
        for (int s = 0; s < NSLOT; s++)
            if (layouts[a].slot[s] >= 0 && fstats[layouts[a].slot[s]].work > work) work = fstats[layouts[a].slot[s]].work;
        row_lanes[a] = rc == GRID_OK && !wide[a] && vec[layouts[a].slot[0]];
        if (row_lanes[a]) { /* a large tile lives in the workspace (fill_entry, the same sum) */
            grid_method_info r0;
            grid_sig_concrete(a, &sizes, 0, &r0);
            work += (long)emit_lane_tile(&r0, layouts[a].param_in);
        }
        grid_sig_concrete(a, &sizes, wide[a] ? part64.work_bytes[a] : (size_t)work * (size_t)o.dtype, &rows[a]);
        for (int k = 0; gen[a] && k < rows[a].n_in; k++)
            if (rows[a].in[k].optional && rows[a].in[k].width > nz) nz = rows[a].in[k].width;
        if (inner && sel[a]) {
            assert(!row_lanes[a]); /* a widened entry passes its thread's workspace on: scalar rows only */
            inner->work_bytes[a] = rows[a].work_bytes;
        }
    }

    /* prologue, shared by every part: banner, includes, ABI structs, the real type, helpers */
    if (rc == GRID_OK) {
        /* the float64 part first: a build starts its parts in order, and it is among the longest (h1_2 on the CPU:
           47 s, beside idsva_so's 44 s and seven parts of 3-7 s) */
        if (n_wide) {
            ew_printf(&w, "/* grid-rbd parts: %d (compile as %d objects with -DGRID_PART=1..%d and link them: part 1 is "
                          "float64) */\n#ifndef GRID_PART\n#error \"this library computes rows in float64 in a part of "
                          "its own: compile it as %d objects with -DGRID_PART=1..%d\"\n#endif\n"
                          "#if GRID_PART == 1 /* the rows computed in float64 */\n",
                      nparts + 1, nparts + 1, nparts + 1, nparts + 1, nparts + 1);
            ew_putn(&w, src64, len64);
            ew_puts(&w, "#else /* GRID_PART 2.. */\n");
        } else if (nparts > 1)
            ew_printf(&w, "/* grid-rbd parts: %d (compile once, or as %d objects with -DGRID_PART=1..%d and link them) */\n",
                      nparts, nparts, nparts);
        else
            ew_puts(&w, "/* grid-rbd parts: 1 */\n");
        for (int a = 0; a < GRID_ALGO_COUNT && inner; a++)
            if (sel[a])
                ew_printf(&w, "/* the float64 part's entry points, beside the float32 library's */\n"
                              "#define grid_%s grid_f64_%s\n#define grid_cuda_%s grid_cuda_f64_%s\n"
                              "#define grid_host_%s grid_host_f64_%s\n",
                          grid_algo_name(a), grid_algo_name(a), grid_algo_name(a), grid_algo_name(a),
                          grid_algo_name(a), grid_algo_name(a));
        write_banner(&cx, &o, sel);
        ew_puts(&w, t->includes);
        ew_puts(&w, "\n");
        ew_puts(&w, abi_structs);
        ew_printf(&w, "typedef %s grid_real;\n\n", re->c_type);
        emit_math_helpers(&cx);
        if (any_vec) emit_lane_helpers(&cx);
        int rpy = 0;
        for (int f = 0; f < n_fns; f++) rpy |= need[f] && (specs[f].m->prelude & PRELUDE_RPY);
        if (rpy) emit_rpy_helper(&cx);
        emit_batch_helpers(&w, t);
    }
    /* the parts: functions and entry points of their rows */
    for (int p = 0; p < nparts && rc == GRID_OK; p++) {
        int fn_in_part[MAX_FNS] = {0}, zeros = 0;
        for (int a = 0; a < GRID_ALGO_COUNT; a++) {
            if (part[a] != p) continue;
            for (int k = 0; k < rows[a].n_in; k++) zeros |= rows[a].in[k].optional && !vec[layouts[a].slot[0]];
            for (int f = 0; f < n_fns; f++)
                if (row_uses(a, f, sched)) fn_in_part[f] = 1;
        }
        if (nparts > 1) ew_printf(&w, "#if !defined(GRID_PART) || GRID_PART == %d\n\n", p + 1 + (n_wide > 0));
        if (p == 0 && !inner) write_meta(&cx, &o, rows, sel, row_lanes, hash);
        for (int a = 0; a < GRID_ALGO_COUNT && p == 0; a++)
            if (wide[a]) t->widened(&w, t, &rows[a]);
        if (zeros)
            /* once per translation unit, whichever parts it holds */
            ew_printf(&w, "#ifndef GRID_ZEROS_\n#define GRID_ZEROS_\n"
                          "/* stands in for an absent optional input (GRID_ABSENT_ZEROS) */\n%s grid_real grid_zeros_[%lld] = {0};\n#endif\n\n",
                      t->table, nz);
        int frame_tables = 0;
        for (int f = 0; f < n_fns; f++) frame_tables |= fn_in_part[f] && (specs[f].m->prelude & PRELUDE_FRAME_TABLES);
        if (frame_tables) emit_frame_tables(&cx);
        /* (each function once per translation unit: apart, rows of several parts may share it) */
        for (int f = 0; f < n_fns; f++)
            if (fn_in_part[f]) {
                if (t->parts_apart) ew_printf(&w, "#ifndef GRID_FN_%s\n#define GRID_FN_%s\n", specs[f].fn, specs[f].fn);
                ew_putn(&w, fw[f].buf, fw[f].len);
                if (t->parts_apart) ew_puts(&w, "#endif\n\n");
            }
        for (int a = 0; a < GRID_ALGO_COUNT; a++)
            if (part[a] == p) write_entry(&cx, a, rows, fstats, vec, rolled, ilv, sched);
        if (nparts > 1) ew_printf(&w, "#endif /* GRID_PART %d */\n\n", p + 1 + (n_wide > 0));
    }
    if (rc == GRID_OK && n_wide) {
        ew_puts(&w, "#endif /* GRID_PART 2.. */\n");
    }
    if (stats && rc == GRID_OK) {
        stats->parts = nparts + (n_wide > 0);
        for (int a = 0; a < GRID_ALGO_COUNT; a++) {
            if (wide[a]) {
                stats->statements[a] = st64.statements[a];
                stats->rolled[a] = st64.rolled[a];
                stats->work[a] = st64.work[a];
                stats->flops[a] = st64.flops[a];
                stats->transcendental[a] = st64.transcendental[a];
            }
            if (!gen[a]) continue;
            const sym_stats *ms = &fstats[layouts[a].slot[layouts[a].main]];
            stats->statements[a] = algo_statements(a, fstats);
            stats->rolled[a] = rolled[layouts[a].slot[0]];
            stats->work[a] = fstats[layouts[a].slot[0]].work;
            stats->flops[a] = ms->flops;
            stats->transcendental[a] = ms->transcendental;
        }
    }
    em_model_free(&em);
    free(src64);
    for (int f = 0; f < n_fns; f++) ew_free(&fw[f]);
    if (rc != GRID_OK) {
        ew_free(&w);
        return rc;
    }
    *source = ew_take(&w, len);
    if (!*source) return grid_error_set(err, GRID_ERR_NOMEM, 0, 0, "out of memory assembling the generated source");
    return GRID_OK;
}

int grid_emit_source(const grid_model *m, const grid_emit_options *o, char **source, size_t *len, grid_error *err)
{
    return grid_emit_source_stats(m, o, source, len, NULL, err);
}
