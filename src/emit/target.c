/* Target and dtype tables (C: OpenMP loops over lane tiles; CUDA: a thread per state) and their batch wrappers, written from each method's signature row. */
#include <assert.h>
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

/* the per-state parameters: name, scalar type, lane type (NULL: not a parameter of the lane form) */
static const struct {
    const char *name, *type, *lane_type;
    int pointer;
} state_args[EP_NARGS] = {
    [EP_Q] = {"q", "const grid_real *", "const grid_vec *", 1}, [EP_V] = {"v", "const grid_real *", "const grid_vec *", 1},
    [EP_A] = {"a", "const grid_real *", "const grid_vec *", 1}, [EP_F] = {"fext", "const grid_real *", "const grid_vec *", 1},
    [EP_G] = {"g", "const grid_real *", "const grid_vec *", 1}, [EP_OUT] = {"out", "grid_real *", "grid_vec *", 1},
    [EP_FRAME] = {"frame", "const int", NULL, 0}, [EP_RF] = {"rf", "const int", NULL, 0},
    [EP_WS] = {"ws", "grid_real *", "grid_vec *", 1},
};

static void state_params(ew_writer *w, const emit_target *t, int lanes, const char *extra)
{
    int first = 1;
    ew_puts(w, "(");
    for (int k = 0; k < EP_NARGS; k++) {
        const char *type = lanes ? state_args[k].lane_type : state_args[k].type;
        if (!type) continue;
        ew_printf(w, "%s%s%s %s", first ? "" : ", ", type, state_args[k].pointer ? t->restrict_kw : "", state_args[k].name);
        first = 0;
    }
    ew_printf(w, "%s%s)", lanes ? "" : t->stride_param, lanes ? "" : extra);
}

void emit_state_params(ew_writer *w, const emit_target *t) { state_params(w, t, 0, ""); }

void emit_rolled_state_params(ew_writer *w, const emit_target *t) { state_params(w, t, 0, t->group_params); }

void emit_lane_params(ew_writer *w, const emit_target *t) { state_params(w, t, 1, ""); }

void emit_state_unused(ew_writer *w, const emit_target *t, int lanes, unsigned skip, int skip_stride)
{
    ew_puts(w, "   ");
    for (int k = 0; k < EP_NARGS; k++)
        if (!(skip & (1u << k)) && (lanes ? state_args[k].lane_type : state_args[k].type))
            ew_printf(w, " (void)%s;", state_args[k].name);
    if (!lanes && !skip_stride && t->stride_param[0]) ew_puts(w, " (void)st;");
}

void emit_state_arglist(ew_writer *w, const emit_target *t, int lanes, const char *const arg[EP_NARGS],
                        const char *stride)
{
    int first = 1;
    for (int k = 0; k < EP_NARGS; k++) {
        if (lanes && !state_args[k].lane_type) continue;
        ew_printf(w, "%s%s", first ? "" : ", ", arg && arg[k] ? arg[k] : state_args[k].name);
        first = 0;
    }
    if (!lanes && t->stride_param[0]) ew_printf(w, ", %s", stride ? stride : "st");
}

void emit_state_call(ew_writer *w, const emit_target *t, int lanes, const char *name, const char *const arg[EP_NARGS],
                     const char *stride)
{
    ew_printf(w, "%s(", name);
    emit_state_arglist(w, t, lanes, arg, stride);
    ew_puts(w, ")");
}

/* ---- pieces shared by both wrappers ---- */

long long emit_param_width(const emit_entry *e, int p)
{
    assert(p >= 0 && p < EP_COUNT);
    return e->param_in[p] >= 0 ? e->row->in[e->param_in[p]].width : 0;
}

int emit_param_optional(const emit_entry *e, int p)
{
    return e->param_in[p] >= 0 && e->row->in[e->param_in[p]].optional != GRID_REQUIRED;
}

const char *emit_param_name(int p)
{
    static const char *const names[EP_COUNT] = {"q", "v", "a", "f", "g"};
    assert(p >= 0 && p < EP_COUNT);
    return names[p];
}

int emit_variant_count(const emit_entry *e) { return 1 << e->n_opt; }

const emit_variant *emit_variant_at(const emit_entry *e, int k)
{
    assert(k >= 0 && k < emit_variant_count(e) && e->variant[0].fn);
    return e->variant[k].fn ? &e->variant[k] : &e->variant[0];
}

void emit_write_selector(ew_writer *w, const emit_entry *e)
{
    ew_puts(w, "    switch (");
    for (int k = 0; k < e->n_opt; k++)
        ew_printf(w, k ? " | ((c->in[%d] != 0) << %d)" : "(c->in[%d] != 0)", e->opt[k], k);
    ew_puts(w, ") {\n");
}

void emit_write_pointers(ew_writer *w, const emit_entry *e)
{
    for (int p = 0; p < EP_COUNT; p++)
        if (e->param_in[p] >= 0)
            ew_printf(w, "    const grid_real *%s = (const grid_real *)c->in[%d]; /* %s */\n", emit_param_name(p),
                      e->param_in[p], e->row->in[e->param_in[p]].name);
        else
            ew_printf(w, "    const grid_real *%s = 0;\n", emit_param_name(p));
    ew_printf(w, "    grid_real *o = (grid_real *)c->out[0]; /* %s */\n"
                 "    (void)v; (void)a; (void)f; (void)g;\n", e->row->out[0].name);
}

void emit_write_attrs(ew_writer *w, const emit_entry *e)
{
    char fr[32] = "0", rf[32] = "0";
    if (e->attr_frame >= 0) snprintf(fr, sizeof fr, "c->attr[%d]", e->attr_frame);
    if (e->attr_rf >= 0) snprintf(rf, sizeof rf, "c->attr[%d]", e->attr_rf);
    ew_printf(w, "    const int fr = %s, rf = %s;\n", fr, rf);
}

/* the argument checks every entry point starts with (GRID_ERR_ARG = 7); both targets use it */
void emit_write_checks(ew_writer *w, const grid_method_info *r)
{
    ew_puts(w, "    if (!c || c->batch < 0) return 7; /* GRID_ERR_ARG */\n"
               "    if (c->batch == 0) return 0;\n");
    ew_printf(w, "    if (c->n_in != %d || c->n_out != %d || !c->in || !c->out) return 7;\n", r->n_in, r->n_out);
    ew_puts(w, "    if (");
    int first = 1;
    for (int k = 0; k < r->n_in; k++)
        if (r->in[k].optional == GRID_REQUIRED) {
            ew_printf(w, "%s!c->in[%d]", first ? "" : " || ", k);
            first = 0;
        }
    for (int k = 0; k < r->n_out; k++) {
        ew_printf(w, "%s!c->out[%d]", first ? "" : " || ", k);
        first = 0;
    }
    ew_puts(w, ") return 7;\n");
    for (int k = 0; k < r->n_attr; k++)
        ew_printf(w, "    if (c->attr[%d] < %d || c->attr[%d] >= %d) return 7; /* %s */\n", k, r->attr_lo[k], k,
                  r->attr_hi[k], r->attr_name[k]);
}

void emit_state_inputs(const emit_entry *e, const emit_variant *vr, char text[EP_COUNT][96], const char *arg[EP_NARGS])
{
    for (int k = 0; k < EP_NARGS; k++) arg[k] = NULL;
    for (int p = 0; p < EP_COUNT; p++) {
        const char *n = emit_param_name(p);
        const long long wd = emit_param_width(e, p);
        if (!vr->reads[p]) snprintf(text[p], sizeof text[p], "0");
        else if (emit_param_optional(e, p)) snprintf(text[p], sizeof text[p], "%s ? %s + b * %lld : grid_zeros_", n, n, wd);
        else snprintf(text[p], sizeof text[p], "%s + b * %lld", n, wd);
        arg[p] = text[p];
    }
}

/* the call of a per-state function on state b (the C target: no stride parameter) */
static void write_call(ew_writer *w, const emit_target *t, const emit_entry *e, const emit_variant *vr)
{
    char text[EP_COUNT][96], out[48], name[96];
    const char *arg[EP_NARGS];
    emit_state_inputs(e, vr, text, arg);
    snprintf(out, sizeof out, "o + b * %lld", e->row->out[0].width);
    snprintf(name, sizeof name, "grid_s_%s", vr->fn);
    arg[EP_OUT] = out;
    arg[EP_FRAME] = "fr";
    arg[EP_WS] = e->work > 0 ? "wsb + (size_t)grid_thread_() * W" : "0";
    emit_state_call(w, t, 0, name, arg, NULL);
}

/* ---- C: a per-state (or per-tile) loop, split over an OpenMP team for large batches ---- */

static long long at_least_1(long long n) { return n > 0 ? n : 1; }

/* GRID_STREAM_PAD_ (lane_store.h) at emit time */
static long long stream_pad(long long n) { return (n + 3) / 4 * 4 + 8; }

/* the tile's outputs: padded for the streamed stores, which read whole blocks of four past an output's last element
   (GRID_STREAM_PAD_), and 4 more for a row of several outputs scattered one by one (the last may start mid-block) */
static long long tile_out(long long nout) { return stream_pad(at_least_1(nout)) + 4; }

/* the tile's arrays in order: to (padded), then the inputs tq, tv, ta, tf, tg the row feeds */
long long emit_lane_tile(const grid_method_info *row, const int *param_in)
{
    long long nout = 0; /* every output's elements (a row of several: its packed block) */
    for (int k = 0; k < row->n_out; k++) nout += row->out[k].width;
    long long n = tile_out(nout);
    for (int p = 0; p < EP_COUNT; p++)
        if (param_in[p] >= 0) n += at_least_1(row->in[param_in[p]].width);
    return n > EMIT_TILE_STACK_MAX ? n : 0;
}

/* the valid lanes of a tile (to, from element off) scattered into rows of nout elements at o (an expression of b) */
static void write_scatter(ew_writer *w, long long off, long long nout, const char *o)
{
    ew_printf(w, "    if (b + GRID_LANES <= n && stream) {\n"
                 "        grid_stream_scatter_(to + %lld, %lld, %s + b * %lld);\n"
                 "    } else if (b + GRID_LANES <= n) {\n"
                 "        grid_real *rows[GRID_LANES];\n"
                 "        for (int l = 0; l < GRID_LANES; l++) rows[l] = %s + (b + l) * %lld;\n"
                 "        grid_scatter_(to + %lld, %lld, rows);\n"
                 "    } else {\n"
                 "        for (int l = 0; b + l < n; l++)\n"
                 "            for (int k = 0; k < %lld; k++) %s[(b + l) * %lld + k] = to[%lld + k][l];\n"
                 "    }\n",
              off, nout, o, nout, o, nout, off, nout, nout, o, nout, off);
}

/* a tile function: GRID_LANES states from b (the last state repeated past n) gathered into lane vectors, one call of
   the lane function, the valid lanes scattered back: into o, or for a row of several outputs (e->split) each
   output's block of the tile into its own array os[k] */
static void write_tile(ew_writer *w, const emit_target *t, const emit_entry *e, const emit_variant *vr)
{
    const char *r = t->restrict_kw;
    const long long nout = e->row->out[0].width;
    char outp[48];
    snprintf(outp, sizeof outp, e->split ? "grid_real *const *os" : "grid_real *%s o", r);
    ew_printf(w, "%s void grid_tile_%s_%s(const grid_real *%s q, const grid_real *%s v, const grid_real *%s a, "
                 "const grid_real *%s f, const grid_real *%s g, %s, const long long b, const long long n, "
                 "const int stream, grid_vec *%s ws)\n{\n",
              t->state_fn, e->row->name, vr->fn, r, r, r, r, r, outp, r);
    assert(vr->reads[EP_Q]);
    if (e->tile > 0) {
        /* too large for a thread's stack (nv^2 at nv = 700 is 15.7 MB): in the workspace, past the function's own */
        long long at = e->tile_at + tile_out(nout);
        ew_printf(w, "    /* the tile: %lld lane vectors of the workspace */\n"
                     "    grid_vec *%s const to = ws + %lld;\n", e->tile, r, e->tile_at);
        for (int p = 0; p < EP_COUNT; p++) {
            if (e->param_in[p] < 0) continue;
            if (vr->reads[p]) ew_printf(w, "    grid_vec *%s const t%s = ws + %lld;\n", r, emit_param_name(p), at);
            at += at_least_1(emit_param_width(e, p));
        }
        assert(at == e->tile_at + e->tile);
    } else {
        /* padded for the streamed stores, which read whole blocks of four past an output's last element */
        ew_printf(w, "    grid_vec to[GRID_STREAM_PAD_(%lld) + 4];\n", at_least_1(nout));
        for (int p = 0; p < EP_COUNT; p++)
            if (vr->reads[p]) ew_printf(w, "    grid_vec t%s[%lld];\n", emit_param_name(p), at_least_1(emit_param_width(e, p)));
    }
    ew_puts(w, "    (void)v; (void)a; (void)f; (void)g;\n"
               "    if (b + 1 == n) {\n"
               "        /* one state: broadcast it to every lane */\n");
    for (int p = 0; p < EP_COUNT; p++) {
        if (!vr->reads[p]) continue;
        const char *nm = emit_param_name(p);
        const long long wd = emit_param_width(e, p);
        if (emit_param_optional(e, p))
            ew_printf(w, "        for (int k = 0; k < %lld; k++) t%s[k] = grid_splat_(%s ? %s[b * %lld + k] : 0);\n", wd, nm,
                      nm, nm, wd);
        else
            ew_printf(w, "        for (int k = 0; k < %lld; k++) t%s[k] = grid_splat_(%s[b * %lld + k]);\n", wd, nm, nm, wd);
    }
    ew_puts(w, "    } else {\n"
               "        for (int l = 0; l < GRID_LANES; l++) {\n"
               "            const long long s = b + l < n ? b + l : n - 1;\n");
    for (int p = 0; p < EP_COUNT; p++) {
        if (!vr->reads[p]) continue;
        const char *nm = emit_param_name(p);
        const long long wd = emit_param_width(e, p);
        if (emit_param_optional(e, p))
            ew_printf(w, "            for (int k = 0; k < %lld; k++) t%s[k][l] = %s ? %s[s * %lld + k] : 0;\n", wd, nm, nm,
                      nm, wd);
        else
            ew_printf(w, "            for (int k = 0; k < %lld; k++) t%s[k][l] = %s[s * %lld + k];\n", wd, nm, nm, wd);
    }
    /* absent parameters get tq (any lane array: the function does not read it) */
    char fn[96];
    snprintf(fn, sizeof fn, "grid_v_%s", vr->fn);
    const char *arg[EP_NARGS] = {[EP_Q] = "tq", [EP_V] = vr->reads[EP_V] ? "tv" : "tq", [EP_A] = vr->reads[EP_A] ? "ta" : "tq",
                                 [EP_F] = vr->reads[EP_F] ? "tf" : "tq", [EP_G] = vr->reads[EP_G] ? "tg" : "tq",
                                 [EP_OUT] = "to"};
    ew_puts(w, "        }\n    }\n    ");
    emit_state_call(w, t, 1, fn, arg, NULL);
    ew_puts(w, ";\n");
    /* (the padding the streamed stores read: defined values) */
    ew_printf(w, "    if (stream)\n        for (int k = %lld; k < GRID_STREAM_PAD_(%lld) + 4; k++) to[k] = grid_splat_(0);\n",
              nout, at_least_1(nout));
    if (!e->split) {
        write_scatter(w, 0, nout, "o");
    } else {
        long long off = 0;
        for (int k = 0; k < e->split->n_out; k++) {
            char o[16];
            snprintf(o, sizeof o, "os[%d]", k);
            ew_printf(w, "    /* %s */\n", e->split->out[k].name);
            write_scatter(w, off, e->split->out[k].width, o);
            off += e->split->out[k].width;
        }
        assert(off == nout);
    }
    ew_puts(w, "}\n\n");
}

/* ---- a row of several outputs: its packed entry on slices of the batch, each slice's block split ---- */

void emit_write_slice_setup(ew_writer *w, const emit_entry *e, const char *prefix)
{
    const grid_method_info *r = e->split;
    ew_printf(w, "    const void *in[%d];\n"
                 "    void *po[1] = {pk};\n"
                 "    grid_call pc = *c;\n"
                 "    pc.in = in;\n    pc.out = po;\n    pc.n_out = 1;\n"
                 "    int rc = 0;\n"
                 "    for (long long at = 0; at < n && !rc; at += S) {\n"
                 "        const long long k = n - at < S ? n - at : S;\n",
              r->n_in);
    for (int j = 0; j < r->n_in; j++)
        ew_printf(w, "        in[%d] = c->in[%d] ? (const void *)((const grid_real *)c->in[%d] + at * %lldLL) : 0;\n", j, j,
                  j, r->in[j].width);
    ew_printf(w, "        pc.batch = k;\n        rc = %s%s(&pc);\n", prefix, e->row->name);
}

/* the C entry of e->split: slices of S states of the packed block in heap scratch (at most 1 MiB), each state's
   outputs copied out while the slice is in cache */
static void write_split_c(ew_writer *w, const emit_target *t, const emit_entry *e)
{
    const grid_method_info *r = e->split;
    /* (W is 0 on a robot without joints when every output is nv wide) */
    const long long W = e->row->out[0].width, S = W > 0 && (1LL << 20) / (8 * W) > 64 ? (1LL << 20) / (8 * W) : 64;
    ew_puts(w, "#ifndef GRID_SPLIT_INCLUDES_\n#define GRID_SPLIT_INCLUDES_\n#include <stdlib.h>\n#include <string.h>\n#endif\n");
    ew_printf(w, "/* %s: its %d outputs from %s's block of %lld elements per state */\n", r->name, r->n_out, e->row->name, W);
    ew_printf(w, "%s int grid_%s(const grid_call *c)\n{\n", t->export_fn, r->name);
    emit_write_checks(w, r);
    ew_printf(w, "    const long long n = c->batch, S = %lldLL;\n"
                 "    grid_real *const pk = (grid_real *)malloc((size_t)(n < S ? n : S) * %lldu * sizeof(grid_real));\n"
                 "    if (!pk) return 6; /* GRID_ERR_NOMEM */\n",
              S, W);
    emit_write_slice_setup(w, e, "grid_");
    ew_puts(w, "        for (long long b = 0; b < k && !rc; b++) {\n");
    long long off = 0;
    for (int k = 0; k < r->n_out; k++) {
        ew_printf(w, "            memcpy((grid_real *)c->out[%d] + (at + b) * %lldLL, pk + b * %lldLL + %lld, %lldu * sizeof(grid_real));\n",
                  k, r->out[k].width, W, off, r->out[k].width);
        off += r->out[k].width;
    }
    assert(off == W);
    ew_puts(w, "        }\n    }\n    free(pk);\n    return rc;\n}\n\n");
}

/* ---- a row computed in float64 in a float32 library (emit_method.wide_real) ---- */

long long emit_widened_reals(const grid_method_info *r)
{
    long long per = 0;
    for (int j = 0; j < r->n_in; j++) per += r->in[j].width;
    for (int j = 0; j < r->n_out; j++) per += r->out[j].width;
    return per;
}

void emit_write_widened_loop(ew_writer *w, const grid_method_info *r, const char *prefix, const char *stream)
{
    ew_printf(w, "    const void *in[%d];\n    void *out[%d];\n    grid_call pc = *c;\n    pc.in = in;\n    pc.out = out;\n"
                 "    int rc = 0;\n    for (long long at = 0; at < n && !rc; at += S) {\n"
                 "        const long long k = n - at < S ? n - at : S;\n",
              r->n_in, r->n_out);
    /* x: each input's K states, then each output's */
    long long off = 0, out_at[GRID_MAX_OUT];
    for (int j = 0; j < r->n_in; j++) {
        ew_printf(w, "        in[%d] = c->in[%d] ? grid_widen_((const grid_real *)c->in[%d] + at * %lldLL, x + K * %lldLL, "
                     "k * %lldLL%s) : 0; /* %s */\n",
                  j, j, j, r->in[j].width, off, r->in[j].width, stream, r->in[j].name);
        off += r->in[j].width;
    }
    for (int j = 0; j < r->n_out; j++) {
        out_at[j] = off;
        ew_printf(w, "        out[%d] = x + K * %lldLL; /* %s */\n", j, off, r->out[j].name);
        off += r->out[j].width;
    }
    assert(off == emit_widened_reals(r));
    ew_printf(w, "        pc.batch = k;\n        rc = grid_%sf64_%s(&pc);\n", prefix, r->name);
    for (int j = 0; j < r->n_out; j++)
        ew_printf(w, "        if (!rc) grid_narrow_(x + K * %lldLL, (grid_real *)c->out[%d] + at * %lldLL, k * %lldLL%s);\n",
                  out_at[j], j, r->out[j].width, r->out[j].width, stream);
    ew_puts(w, "    }\n");
}

/* the C target's: slices of at least 64 states, or of 32 MiB of float64 scratch, on the heap */
static void widened_c(ew_writer *w, const emit_target *t, const grid_method_info *r)
{
    const long long per = emit_widened_reals(r), S = (32LL << 20) / (8 * (per > 0 ? per : 1)) > 64 ?
                                                        (32LL << 20) / (8 * (per > 0 ? per : 1)) : 64;
    ew_puts(w, "#ifndef GRID_WIDEN_\n#define GRID_WIDEN_\n#include <stdlib.h>\n"
               "/* a float32 slice as float64 (a widened entry's inputs), and back (its outputs) */\n"
               "static const void *grid_widen_(const grid_real *s, double *d, const long long n)\n{\n"
               "    for (long long i = 0; i < n; i++) d[i] = s[i];\n    return d;\n}\n\n"
               "static void grid_narrow_(const double *s, grid_real *d, const long long n)\n{\n"
               "    for (long long i = 0; i < n; i++) d[i] = (grid_real)s[i];\n}\n#endif\n\n");
    ew_printf(w, "int grid_f64_%s(const grid_call *c); /* the library's float64 part */\n\n"
                 "/* %s: computed in float64 by the library's float64 part, %lld states at a time */\n"
                 "%s int grid_%s(const grid_call *c)\n{\n",
              r->name, r->name, S, t->export_fn, r->name);
    emit_write_checks(w, r);
    ew_printf(w, "    const long long n = c->batch, S = %lldLL, K = n < S ? n : S;\n"
                 "    double *const x = (double *)malloc((size_t)K * %lldu * sizeof(double) + 1);\n"
                 "    if (!x) return 6; /* GRID_ERR_NOMEM */\n",
              S, per);
    emit_write_widened_loop(w, r, "", "");
    ew_puts(w, "    free(x);\n    return rc;\n}\n\n");
}

static void batch_c(ew_writer *w, const emit_target *t, const emit_entry *e)
{
    const int nvar = emit_variant_count(e);
    if (e->vector)
        for (int k = 0; k < nvar; k++) {
            const emit_variant *vr = emit_variant_at(e, k);
            int dup = 0;
            for (int j = 0; j < k; j++) dup |= strcmp(emit_variant_at(e, j)->fn, vr->fn) == 0;
            if (!dup) write_tile(w, t, e, vr);
        }
    /* a row of several outputs: on lane tiles, its entry scatters each output's block of the tile into its own array;
       per state, the entry of its packed row, whose block write_split_c splits */
    const int direct = e->split && e->vector;
    ew_printf(w, "%s int grid_%s(const grid_call *c)\n{\n", e->split && !direct ? "static" : t->export_fn,
              direct ? e->split->name : e->row->name);
    emit_write_checks(w, direct ? e->split : e->row);
    /* every pointer goes to the tile function, which reads what it needs */
    emit_write_pointers(w, e);
    if (direct) ew_puts(w, "    grid_real *const *const os = (grid_real *const *)c->out;\n    (void)o;\n");
    if (e->vector) {
        ew_printf(w, "    const long long n = c->batch, tiles = (n + GRID_LANES - 1) / GRID_LANES;\n"
                     "    const int nt = grid_threads_(%s, tiles, (%lldLL + GRID_LANES - 1) / GRID_LANES);\n"
                     "    /* outputs past the caches are streamed (src/emit/lane_store.h) */\n"
                     "    const int stream = n * %lldLL * (long long)sizeof(grid_real) >= GRID_STREAM_MIN_BYTES;\n",
                  e->work > 0 ? "c->num_threads > 0 ? c->num_threads : 1 /* workspace covers the requested threads */"
                              : "c->num_threads",
                  e->min_parallel, e->row->out[0].width);
        if (e->work > 0)
            ew_printf(w, "    /* workspace: W lane vectors per thread of the team, in c->work (meta.work_bytes per thread) */\n"
                         "    const size_t W = %lld;\n"
                         "    grid_vec *const wsb = (grid_vec *)c->work;\n"
                         "    if (!wsb || c->work_bytes / (W * sizeof(grid_vec)) < (size_t)nt || (size_t)c->work %% sizeof(grid_vec))\n"
                         "        return 7;\n",
                      e->work);
    } else {
        emit_write_attrs(w, e);
        ew_printf(w, "    const long long n = c->batch;\n"
                     "    const int nt = grid_threads_(%s, n, %lldLL);\n",
                  e->work > 0 ? "c->num_threads > 0 ? c->num_threads : 1 /* workspace covers the requested threads */"
                              : "c->num_threads",
                  e->min_parallel);
        if (e->work > 0)
            ew_printf(w, "    /* workspace: W reals per thread of the team, in c->work (meta.work_bytes per thread) */\n"
                         "    const size_t W = %lld;\n"
                         "    grid_real *const wsb = (grid_real *)c->work;\n"
                         "    if (!wsb || c->work_bytes / (W * sizeof(grid_real)) < (size_t)nt) return 7;\n",
                      e->work);
    }
    if (nvar > 1) emit_write_selector(w, e);
    for (int k = 0; k < nvar; k++) {
        const emit_variant *vr = emit_variant_at(e, k);
        const char *ind = nvar > 1 ? "        " : "    ";
        if (nvar > 1) ew_printf(w, "    case %d:\n", k);
        for (int team = 0; team < 2; team++) {
            if (team == 0) ew_printf(w, "%sif (nt <= 1) {\n", ind);
            else if (e->vector)
                /* each thread of the team fences its own streamed stores before the team joins */
                ew_printf(w, "%s} else {\n#ifdef _OPENMP\n#pragma omp parallel num_threads(nt)\n#endif\n%s    {\n"
                             "#ifdef _OPENMP\n#pragma omp for schedule(static)\n#endif\n", ind, ind);
            else ew_printf(w, "%s} else {\n#ifdef _OPENMP\n#pragma omp parallel for schedule(static) num_threads(nt)\n#endif\n", ind);
            if (e->vector) {
                const char *in2 = team ? "    " : "";
                ew_printf(w, "%s%s    for (long long i = 0; i < tiles; i++) grid_tile_%s_%s(q, v, a, f, g, %s, i * GRID_LANES, n, stream, %s);\n"
                             "%s%s    if (stream) grid_stream_fence_();\n",
                          ind, in2, e->row->name, vr->fn, direct ? "os" : "o",
                          e->work > 0 ? "wsb + (size_t)grid_thread_() * W" : "0", ind, in2);
                if (team) ew_printf(w, "%s    }\n", ind);
            } else {
                ew_printf(w, "%s    for (long long b = 0; b < n; b++) ", ind);
                write_call(w, t, e, vr);
                ew_puts(w, ";\n");
            }
        }
        ew_printf(w, "%s}\n", ind);
        if (nvar > 1) ew_puts(w, "        break;\n");
    }
    if (nvar > 1) ew_puts(w, "    }\n");
    ew_puts(w, "    return 0;\n}\n\n");
    if (e->split && !direct) write_split_c(w, t, e);
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
    {GRID_TARGET_C, "c", "static inline", "static inline __attribute__((always_inline))", "static __attribute__((noinline))", 4000,
     "#ifdef _OPENMP\n#pragma omp simd\n#endif\n", "static inline __attribute__((unused))", "restrict", "static const",
     "static const __attribute__((unused))" /* a part may hold rolled functions that read only some tables */, "", "",
     "#include <math.h>\n#include <stddef.h>\n#ifdef _OPENMP\n#include <omp.h>\n#endif\n",
     "__attribute__((visibility(\"default\")))", 1, "", "", batch_c, widened_c, 0},
    {GRID_TARGET_CUDA, "cuda", "static __device__ __forceinline__", "static __device__ __forceinline__",
     "GRID_BIG_FN_" /* (cuda_host.h: its own function unless GRID_CUDA_INLINE_BIG) */, 10000, "",
     "static __device__ __forceinline__ __attribute__((unused))", "__restrict__", "static __constant__ const",
     "static __device__ const",
     ", const int st", " * st",
     "#include <math.h>\n#include <stddef.h>\n#include <cuda_runtime.h>\n"
     "#include \"cuda_host.h\" /* the knobs and the host runtime's interface (src/runtime; -I at build time) */\n",
     "extern \"C\" __attribute__((visibility(\"default\")))", 0, "template <int GRID_G_ = 1> ",
     ", const int gl = 0, const unsigned gm = 0xffffffffu", emit_cuda_batch, emit_cuda_widened, 1},
};

const emit_target *emit_target_get(int target)
{
    for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++)
        if (targets[i].id == target) return &targets[i];
    return NULL;
}
