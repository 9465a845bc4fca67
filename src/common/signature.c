/* The signature table of every batched method, and the helpers that evaluate its shapes for one model. */
#include <assert.h>
#include <stdio.h>
#include <string.h>
#include "grid/signature.h"

/* the arguments rows share, spelled once (each row below is still one initializer) */
#define DIM(s, m) {GRID_SYM_##s, m}
#define ARG(name, desc, opt, ...) {name, desc, opt, (int)(sizeof((grid_dim[]){__VA_ARGS__}) / sizeof(grid_dim)), {__VA_ARGS__}}
#define IN_Q ARG("q", "configuration width", GRID_REQUIRED, DIM(NQ, 1))
#define IN_QD ARG("qd", "tangent width", GRID_REQUIRED, DIM(NV, 1))
#define IN_QDD_OPT ARG("qdd", "tangent width", GRID_ABSENT_ZEROS, DIM(NV, 1))
#define IN_U ARG("u", "tangent width", GRID_REQUIRED, DIM(NV, 1))
#define IN_FEXT_OPT ARG("f_ext", "body-local wrenches", GRID_ABSENT_ZEROS, DIM(NB, 6))
#define OUT_NV(name, desc) ARG(name, desc, GRID_REQUIRED, DIM(NV, 1))
#define OUT_NVxNV(name, desc) ARG(name, desc, GRID_REQUIRED, DIM(NV, 1), DIM(NV, 1))
#define NO_LINKS -1, -1
#define NO_RATE -1 /* rate_of: not a Jacobian rate */
#define IN_COTANGENT(dim) ARG("cotangent", "the output's width", GRID_REQUIRED, dim)
/* a target chosen per call: [frame id, x, y, z], a point fixed in that frame (the tool offset, in its axes) */
#define IN_TARGET ARG("target", "frame id and tool offset", GRID_REQUIRED, DIM(ONE, 4))
#define OUT_NVx2NV(name, desc) ARG(name, desc, GRID_REQUIRED, DIM(NV, 1), DIM(NV, 2))
#define OUT_NV3(name, desc) ARG(name, desc, GRID_REQUIRED, DIM(NV, 1), DIM(NV, 1), DIM(NV, 1))

/* (a row states second_order only where it is 1: the field's zero by default) */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
static const grid_signature_row rows[GRID_ALGO_COUNT] = {
#define GRID_ROW(ID, id, ref, ...) [GRID_ALGO_##ID] = __VA_ARGS__,
#include "grid/signature_rows.h"
#undef GRID_ROW
};
#pragma GCC diagnostic pop

int grid_sig_count(void) { return GRID_ALGO_COUNT; }

int grid_sig_opt_in(int id)
{
    const grid_signature_row *r = grid_sig_row(id);
    return r && r->second_order;
}

const grid_signature_row *grid_sig_row(int id)
{
    return id >= 0 && id < GRID_ALGO_COUNT ? &rows[id] : NULL;
}

int grid_sig_find(const char *name)
{
    for (int i = 0; name && i < GRID_ALGO_COUNT; i++)
        if (strcmp(name, rows[i].name) == 0) return i;
    return -1;
}

grid_sizes grid_sizes_of(int nq, int nv, int nb, int nee, int nframes)
{
    grid_sizes s = {nq, nv, nb, nee, nframes};
    return s;
}

long long grid_sig_dim(grid_dim d, const grid_sizes *s)
{
    long long n = 1;
    switch (d.sym) {
    case GRID_SYM_ONE: n = 1; break;
    case GRID_SYM_NQ: n = s->nq; break;
    case GRID_SYM_NV: n = s->nv; break;
    case GRID_SYM_NB: n = s->nb; break;
    case GRID_SYM_NEE: n = s->nee; break;
    case GRID_SYM_NFRAMES: n = s->nframes; break;
    default: assert(!"unknown dimension symbol"); return -1;
    }
    return n * d.mul;
}

long long grid_sig_shape(const grid_sig_arg *a, const grid_sizes *s, int shape[GRID_MAX_RANK])
{
    assert(a->rank >= 0 && a->rank <= GRID_MAX_RANK);
    long long w = 1;
    for (int k = 0; k < GRID_MAX_RANK; k++) {
        long long d = k < a->rank ? grid_sig_dim(a->dim[k], s) : 0;
        if (shape) shape[k] = (int)d;
        if (k < a->rank) w *= d;
    }
    return w;
}

const char *grid_sym_name(int sym)
{
    static const char *const names[GRID_SYM_COUNT] = {"1", "nq", "nv", "nb", "nee", "nframes"};
    return sym >= 0 && sym < GRID_SYM_COUNT ? names[sym] : "?";
}

const char *grid_sig_dim_text(grid_dim d, char *buf, size_t cap)
{
    if (d.sym == GRID_SYM_ONE) snprintf(buf, cap, "%d", d.mul);
    else if (d.mul == 1) snprintf(buf, cap, "%s", grid_sym_name(d.sym));
    else snprintf(buf, cap, "%d*%s", d.mul, grid_sym_name(d.sym));
    return buf;
}

static void concrete_arg(const grid_sig_arg *a, const grid_sizes *s, grid_arg_info *o)
{
    memset(o, 0, sizeof *o);
    o->name = a->name;
    o->rank = a->rank;
    o->width = grid_sig_shape(a, s, o->shape);
    o->optional = a->optional;
}

void grid_sig_concrete(int id, const grid_sizes *s, size_t work_bytes, grid_method_info *out)
{
    const grid_signature_row *r = grid_sig_row(id);
    assert(r && r->n_in <= GRID_MAX_IN && r->n_out <= GRID_MAX_OUT && r->n_attr <= GRID_MAX_ATTR);
    memset(out, 0, sizeof *out);
    out->name = r->name;
    out->n_in = r->n_in;
    out->n_out = r->n_out;
    out->n_attr = r->n_attr;
    for (int k = 0; k < r->n_in; k++) concrete_arg(&r->in[k], s, &out->in[k]);
    for (int k = 0; k < r->n_out; k++) concrete_arg(&r->out[k], s, &out->out[k]);
    for (int k = 0; k < r->n_attr; k++) {
        out->attr_name[k] = r->attr[k].name;
        out->attr_lo[k] = r->attr[k].lo;
        out->attr_hi[k] = (int)grid_sig_dim(r->attr[k].hi, s);
    }
    out->work_bytes = work_bytes;
    out->gpu_map = r->gpu_map;
}

/* "(7, 7)" */
static void shape_text(const grid_arg_info *a, char *buf, size_t cap)
{
    size_t n = (size_t)snprintf(buf, cap, "(");
    for (int k = 0; k < a->rank && n < cap; k++)
        n += (size_t)snprintf(buf + n, cap - n, "%d%s", a->shape[k], a->rank == 1 ? "," : k + 1 < a->rank ? ", " : "");
    if (n < cap) snprintf(buf + n, cap - n, ")");
}

static int same_name(const char *a, const char *b) { return a && b && strcmp(a, b) == 0; }

/* 0 when the two arguments agree, else 1 with the difference in why */
static int arg_mismatch(const char *kind, int k, const grid_arg_info *want, const grid_arg_info *have, char *why,
                        size_t cap)
{
    int same = same_name(want->name, have->name) && want->rank == have->rank && want->optional == have->optional &&
               want->width == have->width && have->rank >= 0 && have->rank <= GRID_MAX_RANK;
    for (int d = 0; same && d < want->rank; d++) same = want->shape[d] == have->shape[d];
    if (same) return 0;
    char ws[64], hs[64];
    shape_text(want, ws, sizeof ws);
    if (have->rank >= 0 && have->rank <= GRID_MAX_RANK) shape_text(have, hs, sizeof hs);
    else snprintf(hs, sizeof hs, "(rank %d)", have->rank);
    snprintf(why, cap, "%s %d is '%s' %s%s, this grid-rbd expects '%s' %s%s", kind, k,
             have->name ? have->name : "(null)", hs, have->optional ? " (optional)" : "", want->name, ws,
             want->optional ? " (optional)" : "");
    return 1;
}

int grid_sig_mismatch(int id, const grid_sizes *s, const grid_method_info *have, char *why, size_t cap)
{
    grid_method_info want;
    grid_sig_concrete(id, s, 0, &want);
    if (!same_name(want.name, have->name)) {
        snprintf(why, cap, "the row is named '%s', expected '%s'", have->name ? have->name : "(null)", want.name);
        return 1;
    }
    if (want.n_in != have->n_in || want.n_out != have->n_out || want.n_attr != have->n_attr) {
        snprintf(why, cap, "it has %d inputs, %d outputs and %d attributes; this grid-rbd expects %d, %d and %d",
                 have->n_in, have->n_out, have->n_attr, want.n_in, want.n_out, want.n_attr);
        return 1;
    }
    for (int k = 0; k < want.n_in; k++)
        if (arg_mismatch("input", k, &want.in[k], &have->in[k], why, cap)) return 1;
    for (int k = 0; k < want.n_out; k++)
        if (arg_mismatch("output", k, &want.out[k], &have->out[k], why, cap)) return 1;
    for (int k = 0; k < want.n_attr; k++)
        if (!same_name(want.attr_name[k], have->attr_name[k]) || want.attr_lo[k] != have->attr_lo[k] ||
            want.attr_hi[k] != have->attr_hi[k]) {
            snprintf(why, cap, "attribute %d is '%s' in [%d, %d), this grid-rbd expects '%s' in [%d, %d)", k,
                     have->attr_name[k] ? have->attr_name[k] : "(null)", have->attr_lo[k], have->attr_hi[k],
                     want.attr_name[k], want.attr_lo[k], want.attr_hi[k]);
            return 1;
        }
    return 0;
}

const char *grid_algo_name(int algo)
{
    const grid_signature_row *r = grid_sig_row(algo);
    return r ? r->name : NULL;
}

int grid_algo_from_name(const char *name) { return grid_sig_find(name); }

long long grid_algo_output_width(int algo, int nq, int nv, int nb, int nee)
{
    const grid_signature_row *r = grid_sig_row(algo);
    if (!r) return -1;
    grid_sizes s = grid_sizes_of(nq, nv, nb, nee, 0);
    return grid_sig_shape(&r->out[0], &s, NULL);
}
