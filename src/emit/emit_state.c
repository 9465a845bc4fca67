/* One per-state function: symbolic inputs, one algorithm builder, stores, then live-only emission (or the rolled loop nest). */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "emit_ctx.h"

const char *emit_state_qualifiers(const emit_ctx *cx)
{
    return cx->called && cx->t->lanes ? "static __attribute__((noinline, noclone))" : cx->t->state_fn;
}

/* the full coordinates' sizes (a coupled model's inner functions run on them) */
static grid_sizes full_sizes(const em_model *em) { return grid_sizes_of(em->nq, em->nv, em->nb, em->nee, em->nframes); }
/* the user's (a coupled model's functions in one graph, emit_coupled_in_graph, take and give them) */
static grid_sizes user_sizes(const em_model *em)
{
    return grid_sizes_of(em->nq_user, em->nv_user, em->nb, em->nee, em->nframes);
}

/* the row's output on the full coordinates (a coupled model's inner functions run on them; its inner M^-1 gives the
   user's nv x nv): its rank, dims and elements */
static int output_shape(const emit_ctx *cx, const state_spec *sp, int dims[GRID_MAX_RANK], long long *n)
{
    grid_sizes s = full_sizes(cx->em);
    if (sp->m->coupling == COUPLE_INVERSE && cx->em->group_minv) s.nv = cx->em->nv_user;
    const grid_signature_row *r = grid_sig_row(sp->m->row);
    if (r->n_out > 1) {
        /* several outputs: one block of all their elements, in order (a program views each, emit_output_part) */
        *n = 0;
        for (int k = 0; k < r->n_out; k++) *n += grid_sig_shape(&r->out[k], &s, NULL);
        dims[0] = (int)*n;
        return 1;
    }
    *n = grid_sig_shape(&r->out[0], &s, dims);
    return r->out[0].rank;
}

void emit_output_part(ep_prog *p, const emit_ctx *cx, const state_spec *sp, int k)
{
    const grid_sizes s = full_sizes(cx->em);
    const grid_signature_row *r = grid_sig_row(sp->m->row);
    assert(k >= 0 && k < r->n_out && r->out[k].rank >= 1);
    long base = 0;
    for (int j = 0; j < k; j++) base += (long)grid_sig_shape(&r->out[j], &s, NULL);
    int dims[GRID_MAX_RANK];
    (void)grid_sig_shape(&r->out[k], &s, dims);
    ep_out_view(p, base, r->out[k].rank, dims);
}

/* a program of sp on a schedule, its output shaped as the row's */
static ep_prog *program_new(const emit_ctx *cx, const state_spec *sp, ek_kin *k, int schedule, const sv *const in[EP_OUT],
                            sv *res, const sym_style *st, ew_writer *steps)
{
    int dims[GRID_MAX_RANK];
    long long n;
    const int rank = output_shape(cx, sp, dims, &n);
    ep_prog *p = ep_new(cx->em, k, schedule, sp->fn, in, res, st, cx->t, steps);
    if (p) ep_out_shape(p, rank, dims);
    return p;
}

/* the unrolled schedule of sp's program: its loops run here, the n outputs (zeros until written) into res */
static int unrolled_program(const emit_ctx *cx, const state_spec *sp, ek_kin *k, const sv *const in[EP_COUNT], sv *res,
                            long long n)
{
    ep_prog *p = program_new(cx, sp, k, EP_UNROLLED, in, res, NULL, NULL);
    if (!p) return -1;
    for (long long i = 0; i < n; i++) res[i] = sym_const(k->g, 0.0);
    int rc = sp->m->program(p, cx, sp);
    if (rc == 0) rc = ep_finish(p, NULL, NULL, NULL);
    ep_free(p);
    return rc;
}

/* run the builder of sp on fresh kinematics; outputs land in out[] through stores (on a coupled model's function in
   the user's coordinates, cx is the outer context and ix the full coordinates' the builder runs in: the outputs are
   folded onto the user's first) */
static int build(const emit_ctx *cx, const emit_ctx *ix, const state_spec *sp, ek_kin *k, const sv *const in[EP_COUNT],
                 sym_stats *extra)
{
    if (sp->m->graph) return sp->m->graph(ix, k, extra);
    int dims[GRID_MAX_RANK];
    long long n, nu = 0;
    (void)output_shape(ix, sp, dims, &n);
    const int couple = ix != cx;
    if (couple) {
        const grid_sizes us = user_sizes(cx->em);
        const grid_signature_row *r = grid_sig_row(sp->m->row);
        for (int j = 0; j < r->n_out; j++) nu += grid_sig_shape(&r->out[j], &us, NULL);
    }
    sv *res = ek_calloc((size_t)n + 1, sizeof *res), *ures = couple ? ek_calloc((size_t)nu + 1, sizeof *ures) : res;
    int rc = -1;
    if (res && ures) {
        rc = sp->m->values ? sp->m->values(k, in, res) : unrolled_program(ix, sp, k, in, res, n);
        if (rc == 0 && couple) {
            sym_comment(k->g, "/* the outputs folded onto the user's coordinates (mimic couplings) */");
            rc = emit_coupled_project(cx, sp, k->g, res, ures);
            n = nu;
        }
    }
    if (rc == 0) {
        sym_comment(k->g, "/* outputs */");
        for (long long i = 0; i < n; i++) sym_store(k->g, EP_OUT, (int)i, ures[i]);
    }
    if (ures != res) free(ures);
    free(res);
    return rc;
}

/* symbolic loads of one input array of n full coordinates (NULL when the function does not read it); couple: the
   user's nu loaded and expanded onto the full ones (q, or a tangent vector) */
static sv *inputs(sym_graph *g, int array, int n, int nu, int couple, int tangent, const em_model *em, int wanted)
{
    if (!wanted) return NULL;
    sv *x = ek_calloc((size_t)n, sizeof *x), *u = couple ? ek_calloc((size_t)nu + 1, sizeof *u) : x;
    if (x && u) {
        for (int i = 0; i < (couple ? nu : n); i++) u[i] = sym_input(g, array, i);
        if (couple) emit_coupled_expand(em, g, u, x, tangent);
    }
    if (u != x) free(u);
    if (u && x) return x;
    free(x);
    return NULL;
}

/* the unrolled graph of sp, built into g (arrays declared, outputs stored); extra gets the counts of
   functions a builder wrote besides this one */
static int unrolled_graph(const emit_ctx *cx, const state_spec *sp, sym_graph *g, sym_stats *extra)
{
    const em_model *em = cx->em;
    int rc = -1;
    sv *q = NULL, *v = NULL, *a = NULL, *fext = NULL, *ct = NULL;
    ek_kin k = {0};
    /* a coupled model's function in the user's coordinates: the builder runs on the full ones (ix) */
    const int couple = emit_coupled(cx);
    assert(!couple || emit_coupled_in_graph(cx, sp));
    emit_ctx ix = *cx;
    ix.inner = 1;
    /* array ids follow EP_Q .. EP_OUT */
    sym_array(g, "q", 1);
    sym_array(g, "v", 1);
    sym_array(g, "a", 1);
    sym_array(g, "fext", 1);
    sym_array(g, "g", 1);
    sym_array(g, "out", 1);
    q = inputs(g, EP_Q, em->nq, em->nq_user, couple, 0, em, 1);
    v = inputs(g, EP_V, em->nv, em->nv_user, couple, 1, em, sp->reads_v);
    a = inputs(g, EP_A, em->nv, em->nv_user, couple, 1, em, sp->reads_a);
    fext = inputs(g, EP_F, 6 * em->nb, 6 * em->nb, 0, 0, em, sp->reads_fext);
    ct = inputs(g, EP_G, em->nv, em->nv_user, couple, 1, em, sp->reads_g);
    if (!q || (sp->reads_v && !v) || (sp->reads_a && !a) || (sp->reads_fext && !fext) || (sp->reads_g && !ct)) goto done;
    if (ek_kin_init(&k, g, em, q) != 0) goto done;
    const sv *const in[EP_COUNT] = {[EP_Q] = q, [EP_V] = v, [EP_A] = a, [EP_F] = fext, [EP_G] = ct};
    if (build(cx, couple ? &ix : cx, sp, &k, in, extra) != 0 || sym_failed(g)) goto done;
    rc = 0;
done:
    ek_kin_free(&k);
    free(q);
    free(v);
    free(a);
    free(fext);
    free(ct);
    return rc;
}

long emit_state_size(const emit_ctx *cx, const state_spec *sp)
{
    if (emit_coupled(cx)) return emit_coupled_size(cx, sp);
    if (!sp->m->program) return -1;
    /* estimated (the frame Jacobian's functions per body), or built with a capped graph into a scratch writer and
       measured */
    if (sp->m->size_estimate) return sp->m->size_estimate(cx->em);
    sym_graph *g = sym_new();
    ew_writer scratch;
    ew_init(&scratch);
    emit_ctx tx = *cx;
    tx.w = &scratch;
    sym_stats extra = {0};
    long size = GRID_EMIT_UNROLL_BUDGET + 1; /* past the cap (or out of memory): too large */
    if (g) {
        sym_set_limit(g, GRID_EMIT_UNROLL_BUDGET);
        if (unrolled_graph(&tx, sp, g, &extra) == 0 && !sym_over_limit(g)) size = sym_node_count(g) + extra.statements;
    }
    sym_free(g);
    ew_free(&scratch);
    return size;
}

/* the signature of a lane function grid_v_<fn>: GRID_LANES states' inputs, outputs and workspace (a rolled
   function's; unused unrolled) as lane vectors */
void emit_lane_signature(const emit_ctx *cx, const char *qualifiers, const char *fn)
{
    ew_printf(cx->w, "%s void grid_v_%s", qualifiers, fn);
    emit_lane_params(cx->w, cx->t);
    ew_puts(cx->w, "\n{\n");
    emit_state_unused(cx->w, cx->t, 1, 0, 0);
    ew_puts(cx->w, "\n");
}

/* the rolled form: model tables, the program's step functions, then the per-state loop nest; vector = 1: on lane
   vectors (grid_v_<fn>, its workspace in vectors) */
static int rolled_function(const emit_ctx *cx, const state_spec *sp, int vector, sym_stats *stats)
{
    ew_writer body;
    ew_init(&body);
    long work = 0;
    int rc = -1;
    ep_write_tables(cx->em, cx->w, &cx->st, cx->t->model_table);
    ep_prog *p = program_new(cx, sp, NULL, vector ? EP_ROLLED_LANES : EP_ROLLED, NULL, NULL, vector ? &cx->vst : &cx->st,
                             cx->w);
    if (p && sp->m->program(p, cx, sp) == 0 && ep_finish(p, &body, &work, stats) == 0 && !body.oom) {
        ew_printf(cx->w, "/* %s, rolled schedule%s: loops over the body tables, %ld %s of workspace */\n", sp->fn,
                  vector ? " on lane vectors" : "", work, vector ? "vectors" : "reals");
        if (vector) {
            emit_lane_signature(cx, emit_state_qualifiers(cx), sp->fn);
            ew_puts(cx->w, "    const int frame = 0; /* (lane functions take no attributes) */\n    (void)frame;\n");
        } else {
            ew_printf(cx->w, "%s%s void grid_s_%s", cx->t->group_fn, cx->t->state_fn, sp->fn);
            emit_rolled_state_params(cx->w, cx->t);
            ew_puts(cx->w, "\n{\n");
            emit_state_unused(cx->w, cx->t, 0, 0, 0);
            ew_printf(cx->w, "%s\n", cx->t->group_fn[0] ? " (void)gl; (void)gm;" : "");
        }
        ew_putn(cx->w, body.buf, body.len);
        ew_puts(cx->w, "}\n\n");
        if (stats) {
            /* statements are code size; flops and transcendentals become the executed estimate (the steps
               run about once per body), which sizes the batches worth a thread team */
            stats->work = work;
            stats->flops *= cx->em->nb;
            stats->transcendental *= cx->em->nb;
        }
        rc = 0;
    }
    ep_free(p);
    ew_free(&body);
    return rc;
}

/* The CUDA form of an unrolled function with a wide output: grid_c_<fn> writes its output in chunks of 32
   elements into the warp's tile (row `out` of `tile`, one row per lane) and, after each chunk, the warp
   copies the chunk of its m states to global memory (go: the warp's first state), each store instruction
   32 consecutive elements of one state. GRID_CHUNKED_<fn> (its width) tells the kernel it exists. */
#define EMIT_CUDA_CHUNK 32
static int chunked_function(const emit_ctx *cx, const state_spec *sp, const sym_graph *g)
{
    sym_chunks ch = {"out", EMIT_CUDA_CHUNK, "out", NULL};
    const int width = sym_chunk_width(g, &ch);
    if (width <= EMIT_CUDA_CHUNK) return 0; /* narrow, or not suited: the kernel uses grid_s_<fn> */
    char flush[96];
    snprintf(flush, sizeof flush, "grid_chunk_out_<%d>(go, tile, %%d, %%d, m, lane);", width);
    ch.flush = flush;
    ew_printf(cx->w, "/* %s, chunked output (32 elements per warp flush) */\n#define GRID_CHUNKED_%s %d\n", sp->fn, sp->fn,
              width);
    ew_printf(cx->w, "%s void grid_c_%s(const grid_real *__restrict__ q, const grid_real *__restrict__ v,\n"
                     "    const grid_real *__restrict__ a, const grid_real *__restrict__ fext, const grid_real *__restrict__ g,\n"
                     "    grid_real *__restrict__ out, const int frame, const int rf, const int st, grid_real *__restrict__ tile,\n"
                     "    grid_real *__restrict__ go, const int m, const int lane)\n{\n"
                     "    (void)q; (void)v; (void)a; (void)fext; (void)g; (void)frame; (void)rf; (void)st;\n",
              cx->t->state_fn, sp->fn);
    if (sym_emit_chunked(g, &cx->st, cx->w, NULL, &ch) != 0) return -1;
    ew_puts(cx->w, "}\n\n");
    return 0;
}

/* ---- CUDA, small batches: a wide output's columns split over threads ---- */

/* the columns of sp's output (its last dimension: out[i * cols + j]) that pieces are cut along: an output of nv
   rows (M, M^-1, the RNEA gradient); 0: never split */
static int split_columns(const emit_ctx *cx, const state_spec *sp)
{
    const grid_sig_arg *o = &grid_sig_row(sp->m->row)->out[0];
    if (grid_sig_row(sp->m->row)->n_out > 1 || o->rank != 2 || o->dim[0].sym != GRID_SYM_NV || o->dim[0].mul != 1) return 0;
    const grid_sizes s = user_sizes(cx->em); /* (a function that may split is in the user's coordinates) */
    return (int)grid_sig_dim(o->dim[1], &s);
}

/* the operations piece `pc` of the column assignment `piece` needs, every column's for PIECE_ALL (keep: scratch of
   rows * cols) */
enum { PIECE_ALL = -2 };
static long piece_ops(const sym_graph *g, const int *piece, int pc, int rows, int cols, unsigned char *keep)
{
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++) keep[i * cols + j] = (unsigned char)(pc == PIECE_ALL || piece[j] == pc);
    const sym_subset sub = {"out", keep};
    return sym_subset_ops(g, &sub);
}

/* Columns into pieces, heaviest column first: each joins the first piece that stays within GRID_EMIT_SPLIT_SLACK of
   the heaviest single column's cost, else opens a new one. Returns the pieces (piece[j] = column j's), 0 when a
   split does not pay (the largest piece costs more than GRID_EMIT_SPLIT_GAIN of the whole function) or the pieces
   together pass GRID_EMIT_SPLIT_BUDGET; -1 when out of memory */
static int split_plan(const sym_graph *g, int rows, int cols, int *piece)
{
    unsigned char *keep = malloc((size_t)rows * (size_t)cols);
    long *cost = malloc((size_t)cols * sizeof *cost), *pcost = malloc((size_t)cols * sizeof *pcost);
    int *order = malloc((size_t)cols * sizeof *order), np = 0, rc = -1;
    if (!keep || !cost || !pcost || !order) goto done;
    const long whole = piece_ops(g, piece, PIECE_ALL, rows, cols, keep);
    long heaviest = 0;
    for (int j = 0; j < cols; j++) {
        for (int c = 0; c < cols; c++) piece[c] = c == j ? 0 : -1;
        cost[j] = piece_ops(g, piece, 0, rows, cols, keep);
        if (cost[j] > heaviest) heaviest = cost[j];
        order[j] = j;
    }
    for (int a = 1; a < cols; a++) /* insertion sort, heaviest first (ties: lower column first) */
        for (int b = a; b > 0 && cost[order[b]] > cost[order[b - 1]]; b--) {
            const int t = order[b];
            order[b] = order[b - 1];
            order[b - 1] = t;
        }
    const long limit = heaviest + heaviest * GRID_EMIT_SPLIT_SLACK / 100;
    for (int j = 0; j < cols; j++) piece[j] = -1;
    for (int k = 0; k < cols; k++) {
        const int j = order[k];
        int placed = 0;
        for (int pc = 0; pc < np && !placed; pc++) {
            piece[j] = pc;
            const long c = piece_ops(g, piece, pc, rows, cols, keep);
            if (c <= limit) {
                pcost[pc] = c;
                placed = 1;
            }
        }
        if (!placed) {
            piece[j] = np;
            pcost[np++] = cost[j];
        }
    }
    long total = 0, largest = 0;
    for (int pc = 0; pc < np; pc++) {
        total += pcost[pc];
        if (pcost[pc] > largest) largest = pcost[pc];
    }
    rc = np > 1 && whole >= GRID_EMIT_SPLIT_MIN && largest * 100 <= whole * GRID_EMIT_SPLIT_GAIN &&
         total <= GRID_EMIT_SPLIT_BUDGET ? np : 0;
done:
    free(keep);
    free(cost);
    free(pcost);
    free(order);
    return rc;
}

/* The pieces of sp from its unrolled graph g: grid_sx_<fn>_<k>, each the columns of piece k and everything they
   need (the shared part is computed by every piece), the dispatcher grid_sx_<fn>(piece, ...), GRID_SPLIT_<fn>
   (their count), which gives the kernel writer's grid_kx_<fn> a thread per piece and state, and GRID_SPLIT_MAX_<fn>
   (the largest batch it runs: the knob of a function written unrolled, or rolled = 1, of one written rolled) */
static int split_functions(const emit_ctx *cx, const state_spec *sp, const sym_graph *g, int rolled)
{
    const int cols = split_columns(cx, sp);
    const long width = cx->em->nv_user * (long)cols;
    int *piece = cols > 0 ? calloc((size_t)cols, sizeof *piece) : NULL; /* (calloc: gcc -O1 cannot see that PIECE_ALL reads none) */
    unsigned char *keep = cols > 0 ? malloc((size_t)width) : NULL;
    int rc = -1;
    if (cols > 0 && (!piece || !keep)) goto done;
    const int np = cols > 0 ? split_plan(g, cx->em->nv_user, cols, piece) : 0;
    if (np < 0) goto done;
    const long whole = np > 0 ? piece_ops(g, piece, PIECE_ALL, cx->em->nv_user, cols, keep) : 0;
    for (int pc = 0; pc < np; pc++) {
        ew_printf(cx->w, "/* %s, piece %d of %d (%ld of the function's %ld operations): columns", sp->fn, pc, np,
                  piece_ops(g, piece, pc, cx->em->nv_user, cols, keep), whole);
        for (int j = 0; j < cols; j++)
            if (piece[j] == pc) ew_printf(cx->w, " %d", j);
        ew_printf(cx->w, " */\n%s void grid_sx_%s_%d", cx->t->state_fn, sp->fn, pc);
        emit_state_params(cx->w, cx->t);
        ew_puts(cx->w, "\n{\n");
        emit_state_unused(cx->w, cx->t, 0, 0, 0);
        ew_puts(cx->w, "\n");
        for (long k = 0; k < width; k++) keep[k] = (unsigned char)(piece[k % cols] == pc);
        const sym_subset sub = {"out", keep};
        if (sym_emit_subset(g, &cx->st, cx->w, NULL, &sub) != 0) goto done;
        ew_puts(cx->w, "}\n\n");
    }
    if (np > 0) {
        /* the batches it runs: beside a rolled form, every batch (its unrolled pieces are faster there) */
        ew_printf(cx->w, "#define GRID_SPLIT_%s %d\n#define GRID_SPLIT_MAX_%s %s\n", sp->fn, np, sp->fn,
                  rolled ? "GRID_CUDA_SPLIT_MAX_ROLLED" : "GRID_CUDA_SPLIT_MAX");
        ew_printf(cx->w, "%s void grid_sx_%s(const int piece, ", cx->t->state_fn, sp->fn);
        ew_puts(cx->w, "const grid_real *__restrict__ q, const grid_real *__restrict__ v, const grid_real *__restrict__ a,\n"
                       "    const grid_real *__restrict__ fext, const grid_real *__restrict__ g, grid_real *__restrict__ out, const int frame,\n"
                       "    const int rf, grid_real *__restrict__ ws, const int st)\n{\n    switch (piece) {\n");
        for (int pc = 0; pc < np; pc++)
        {
            char name[96];
            snprintf(name, sizeof name, "grid_sx_%s_%d", sp->fn, pc);
            ew_printf(cx->w, "    case %d: ", pc);
            emit_state_call(cx->w, cx->t, 0, name, NULL, NULL);
            ew_puts(cx->w, "; break;\n");
        }
        ew_puts(cx->w, "    }\n}\n\n");
    }
    rc = 0;
done:
    free(piece);
    free(keep);
    return rc;
}

/* split_functions for a function written rolled: from its unrolled graph, when that fits GRID_EMIT_SPLIT_GRAPH */
static int split_rolled(const emit_ctx *cx, const state_spec *sp)
{
    if (split_columns(cx, sp) == 0) return 0;
    sym_graph *g = sym_new();
    sym_stats extra = {0};
    int rc = -1;
    if (!g) return -1;
    sym_set_limit(g, GRID_EMIT_SPLIT_GRAPH);
    if (unrolled_graph(cx, sp, g, &extra) != 0) goto done;
    assert(extra.statements == 0); /* (the split kinds' builders write no functions besides their own) */
    rc = sym_over_limit(g) ? 0 : split_functions(cx, sp, g, 1);
done:
    sym_free(g);
    return rc;
}

/* CUDA's one-thread-per-state functions that the kernel writer may split (a composite's callees are not) */
static int may_split(const emit_ctx *cx, int vector)
{
    return !vector && !cx->inner && !cx->copy && cx->t->id == GRID_TARGET_CUDA;
}

int emit_state_function(const emit_ctx *cx, const state_spec *sp, int rolled, int vector, sym_stats *stats)
{
    if (emit_coupled(cx) && (rolled || !emit_coupled_in_graph(cx, sp)))
        return emit_coupled_function(cx, sp, rolled, vector, stats);
    assert(!rolled || sp->m->program);
    if (rolled) {
        if (rolled_function(cx, sp, vector, stats) != 0) return -1;
        /* (a rolled schedule the caller asked for stays rolled) */
        return may_split(cx, vector) && cx->schedule == GRID_SCHEDULE_AUTO ? split_rolled(cx, sp) : 0;
    }
    int rc = -1;
    sym_graph *g = sym_new();
    sym_stats extra = {0};  /* functions a builder wrote besides this one */
    if (!g) return -1;
    if (unrolled_graph(cx, sp, g, &extra) != 0) goto done;

    if (vector) {
        emit_lane_signature(cx, emit_state_qualifiers(cx), sp->fn);
    } else {
        /* (not a template on the group size, unlike the rolled form: nvcc's front end takes minutes on a large
           unrolled function template) */
        ew_printf(cx->w, "%s void grid_s_%s", emit_state_qualifiers(cx), sp->fn);
        emit_state_params(cx->w, cx->t);
        ew_puts(cx->w, "\n{\n");
        emit_state_unused(cx->w, cx->t, 0, 0, 0);
        ew_puts(cx->w, "\n");
    }
    if (sym_emit(g, vector ? &cx->vst : &cx->st, cx->w, stats) != 0) goto done;
    if (stats) {
        stats->statements += extra.statements;
        stats->flops += extra.flops;
        stats->transcendental += extra.transcendental;
        stats->loads += extra.loads;
        stats->stores += extra.stores;
    }
    ew_puts(cx->w, "}\n\n");
    /* (a full-coordinate function of a coupled model writes into its wrapper's array, not a tile) */
    if (may_split(cx, vector) && (chunked_function(cx, sp, g) != 0 || split_functions(cx, sp, g, 0) != 0)) goto done;
    rc = 0;
done:
    sym_free(g);
    return rc;
}
