/* The symbolic scalar engine: hash-consed SSA nodes with constant folding, then live-only emission. */
#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sym.h"

typedef struct {
    unsigned char op;
    int a, b, c;  /* operands (handles), or array/index/value for INPUT and STORE */
    double k;     /* CONST value */
} sym_node;

struct sym_graph {
    sym_node *nodes;
    int n, cap;
    int *slots;   /* open-addressing table of node indices, -1 = empty */
    int nslots;
    char *text;   /* pool of TEXT node strings */
    size_t tlen, tcap;
    /* the arrays, grown as declared (a rolled step reads one per fixed body it addresses: one per end effector) */
    char (*arrays)[24];  /* the tag: loads are named <tag>_<k> */
    char (*ptr)[40];     /* the C array the elements live in */
    char (*base)[64];    /* "" or a runtime offset expression: element k is ptr[base + k] */
    int *scaled;
    int *local_size;     /* > 0: a local array declared at the top */
    unsigned char *broadcast; /* plain reals under a vector style: loads are splat */
    int narrays, arrcap;
    int oom;
    long limit;   /* > 0: at most this many nodes; past it every operation returns 0 and `over` is set */
    int over;
};

/* handles of the two constants every graph starts with */
enum { ZERO = 0, ONE = 2 };

static int hv_node(sv x) { return x >> 1; }
static int hv_negated(sv x) { return x & 1; }

/* ---- node table and hashing ---- */

static uint64_t mix(unsigned op, int a, int b)
{
    uint64_t h = (uint64_t)op * 0x9E3779B97F4A7C15ull;
    h ^= (uint64_t)(uint32_t)a + 0x632BE59BD9B4E019ull + (h << 6) + (h >> 2);
    h ^= (uint64_t)(uint32_t)b + 0x85EBCA77C2B2AE63ull + (h << 6) + (h >> 2);
    h ^= h >> 31;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 29;
    return h;
}

static int grow_slots(sym_graph *g)
{
    int ns = g->nslots ? 2 * g->nslots : 1024;
    int *s = malloc((size_t)ns * sizeof *s);
    if (!s) return -1;
    for (int i = 0; i < ns; i++) s[i] = -1;
    for (int i = 0; i < g->nslots; i++) {
        int id = g->slots[i];
        if (id < 0) continue;
        const sym_node *nd = &g->nodes[id];
        size_t h = (size_t)mix(nd->op, nd->a, nd->b) & (size_t)(ns - 1);
        while (s[h] >= 0) h = (h + 1) & (size_t)(ns - 1);
        s[h] = id;
    }
    free(g->slots);
    g->slots = s;
    g->nslots = ns;
    return 0;
}

static int append_node(sym_graph *g, const sym_node *nd)
{
    if (g->n == g->cap) {
        int cap = g->cap ? 2 * g->cap : 4096;
        sym_node *p = realloc(g->nodes, (size_t)cap * sizeof *p);
        if (!p) {
            g->oom = 1;
            return -1;
        }
        g->nodes = p;
        g->cap = cap;
    }
    g->nodes[g->n] = *nd;
    return g->n++;
}

/* find or create the node (op, a, b); returns its positive handle */
static sv intern(sym_graph *g, unsigned char op, int a, int b, double k)
{
    if (g->oom || g->over) return ZERO;
    if (g->limit > 0 && g->n >= g->limit) {
        g->over = 1;
        return ZERO;
    }
    if (2 * (g->n + 1) > g->nslots && grow_slots(g) != 0) {
        g->oom = 1;
        return ZERO;
    }
    size_t mask = (size_t)g->nslots - 1, h = (size_t)mix(op, a, b) & mask;
    for (;;) {
        int id = g->slots[h];
        if (id < 0) break;
        const sym_node *nd = &g->nodes[id];
        if (nd->op == op && nd->a == a && nd->b == b) return id << 1;
        h = (h + 1) & mask;
    }
    sym_node nd = {op, a, b, 0, k};
    int id = append_node(g, &nd);
    if (id < 0) return ZERO;
    g->slots[h] = id;
    return id << 1;
}

/* the node (op, a, b) when it exists, else -1 (no side effects) */
static int lookup(const sym_graph *g, unsigned char op, int a, int b)
{
    if (!g->nslots) return -1;
    size_t mask = (size_t)g->nslots - 1, h = (size_t)mix(op, a, b) & mask;
    for (;;) {
        int id = g->slots[h];
        if (id < 0) return -1;
        const sym_node *nd = &g->nodes[id];
        if (nd->op == op && nd->a == a && nd->b == b) return id;
        h = (h + 1) & mask;
    }
}

sym_graph *sym_new(void)
{
    sym_graph *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    /* ZERO and ONE get handles 0 and 2 */
    sym_const(g, 0.0);
    sym_const(g, 1.0);
    if (g->oom) {
        sym_free(g);
        return NULL;
    }
    return g;
}

void sym_free(sym_graph *g)
{
    if (!g) return;
    free(g->nodes);
    free(g->slots);
    free(g->text);
    free(g->arrays);
    free(g->ptr);
    free(g->base);
    free(g->scaled);
    free(g->local_size);
    free(g->broadcast);
    free(g);
}

int sym_failed(const sym_graph *g)
{
    return g->oom;
}

void sym_set_limit(sym_graph *g, long nodes)
{
    g->limit = nodes;
}

int sym_over_limit(const sym_graph *g)
{
    return g->over;
}

long sym_node_count(const sym_graph *g)
{
    return g->n;
}

/* room for one more array (each table doubled, the new entries zeroed); -1 when out of memory */
static int grow_arrays(sym_graph *g)
{
    if (g->narrays < g->arrcap) return 0;
    const int cap = g->arrcap ? 2 * g->arrcap : 16, old = g->arrcap;
#define GROW_(f)                                                                                                   \
    do {                                                                                                           \
        void *q_ = realloc(g->f, (size_t)cap * sizeof g->f[0]);                                                   \
        if (!q_) return -1;                                                                                        \
        g->f = q_;                                                                                                 \
        memset(&g->f[old], 0, (size_t)(cap - old) * sizeof g->f[0]);                                              \
    } while (0)
    GROW_(arrays);
    GROW_(ptr);
    GROW_(base);
    GROW_(scaled);
    GROW_(local_size);
    GROW_(broadcast);
#undef GROW_
    g->arrcap = cap;
    return 0;
}

int sym_array_at(sym_graph *g, const char *tag, const char *ptr, const char *base, int scaled)
{
    if (strlen(tag) >= sizeof g->arrays[0] || strlen(ptr) >= sizeof g->ptr[0] || strlen(base) >= sizeof g->base[0] ||
        grow_arrays(g) != 0) {
        g->oom = 1; /* too long a name is a programming error; either surfaces as a failure */
        return 0;
    }
    snprintf(g->arrays[g->narrays], sizeof g->arrays[0], "%s", tag);
    snprintf(g->ptr[g->narrays], sizeof g->ptr[0], "%s", ptr);
    snprintf(g->base[g->narrays], sizeof g->base[0], "%s", base);
    g->scaled[g->narrays] = scaled;
    return g->narrays++;
}

int sym_array(sym_graph *g, const char *name, int scaled)
{
    return sym_array_at(g, name, name, "", scaled);
}

/* ---- leaves ---- */

void sym_array_broadcast(sym_graph *g, int array)
{
    assert(array >= 0 && array < g->narrays);
    g->broadcast[array] = 1;
}

int sym_local_array(sym_graph *g, const char *name, int n)
{
    int id = sym_array(g, name, 0);
    g->local_size[id] = n > 0 ? n : 1;
    return id;
}

sv sym_const(sym_graph *g, double k)
{
    if (k == 0.0) k = 0.0; /* one zero: -0.0 folds into +0.0 */
    uint64_t bits;
    memcpy(&bits, &k, sizeof bits);
    return intern(g, SYM_CONST, (int)(uint32_t)bits, (int)(uint32_t)(bits >> 32), k);
}

sv sym_input(sym_graph *g, int array, int index)
{
    return intern(g, SYM_INPUT, array, index, 0.0);
}

int sym_is_const(const sym_graph *g, sv x, double *k)
{
    const sym_node *nd = &g->nodes[hv_node(x)];
    if (nd->op != SYM_CONST) return 0;
    if (k) *k = nd->k; /* constants are never negated */
    return 1;
}

int sym_is_zero(const sym_graph *g, sv x)
{
    double k;
    return sym_is_const(g, x, &k) && k == 0.0;
}

/* x as a positive handle and a sign; a negative constant becomes its absolute value */
static sv split(sym_graph *g, sv x, int *neg)
{
    double k;
    if (sym_is_const(g, x, &k) && k < 0) {
        *neg = 1;
        return sym_const(g, -k);
    }
    *neg = hv_negated(x);
    return x & ~1;
}

static sv with_sign(sym_graph *g, sv x, int neg)
{
    return neg ? sym_neg(g, x) : x;
}

sv sym_neg(sym_graph *g, sv a)
{
    double k;
    if (sym_is_const(g, a, &k)) return sym_const(g, -k);
    return SV_NEG(a);
}

/* ---- arithmetic with folding; operands of stored nodes are positive handles ---- */

/* the constant operand of a MUL node (0 when it has none) */
static int mul_const_operand(const sym_graph *g, sv x, sv *other, double *k)
{
    const sym_node *nd = &g->nodes[hv_node(x)];
    if (nd->op != SYM_MUL) return 0;
    if (sym_is_const(g, nd->a, k)) { *other = nd->b; return 1; }
    if (sym_is_const(g, nd->b, k)) { *other = nd->a; return 1; }
    return 0;
}

static sv add_node(sym_graph *g, sv x, sv y)
{
    if (x > y) { sv t = x; x = y; y = t; }
    return intern(g, SYM_ADD, x, y, 0.0);
}

/* x - y in the canonical operand order; -(y - x) is bitwise x - y */
static sv sub_node(sym_graph *g, sv x, sv y)
{
    if (x > y) return SV_NEG(intern(g, SYM_SUB, y, x, 0.0));
    return intern(g, SYM_SUB, x, y, 0.0);
}

/* x and k with x = y * k for a MUL node y by a constant, or k = 1 for any other x */
static sv scaled_term(const sym_graph *g, sv y, double *k)
{
    sv other;
    if (mul_const_operand(g, y, &other, k)) return other;
    *k = 1.0;
    return y;
}

sv sym_add(sym_graph *g, sv a, sv b)
{
    if (g->oom) return ZERO;
    double ka, kb;
    int ca = sym_is_const(g, a, &ka), cb = sym_is_const(g, b, &kb);
    if (ca && cb) return sym_const(g, ka + kb);
    if (ca && ka == 0.0) return b;
    if (cb && kb == 0.0) return a;
    int na, nb;
    sv pa = split(g, a, &na), pb = split(g, b, &nb);
    /* x k1 + x k2 = x (k1 + k2): one multiplication instead of two (a rounding-level change) */
    if (!ca && !cb) {
        double k1, k2;
        sv x1 = scaled_term(g, pa, &k1), x2 = scaled_term(g, pb, &k2);
        double k = (na ? -k1 : k1) + (nb ? -k2 : k2);
        /* (not when the sum is 0: x k - x k must stay NaN for a NaN x) */
        if (x1 == x2 && (k1 != 1.0 || k2 != 1.0) && k != 0.0) return sym_mul(g, x1, sym_const(g, k));
    }
    if (!na && !nb) return add_node(g, pa, pb);
    if (!na && nb) return sub_node(g, pa, pb);
    if (na && !nb) return sub_node(g, pb, pa);
    return SV_NEG(add_node(g, pa, pb));
}

sv sym_sub(sym_graph *g, sv a, sv b)
{
    return sym_add(g, a, sym_neg(g, b));
}

sv sym_mul(sym_graph *g, sv a, sv b)
{
    if (g->oom) return ZERO;
    double ka, kb;
    int ca = sym_is_const(g, a, &ka), cb = sym_is_const(g, b, &kb);
    if (ca && cb) return sym_const(g, ka * kb);
    /* structural zeros and ones of the model fold away */
    if ((ca && ka == 0.0) || (cb && kb == 0.0)) return ZERO;
    if (ca && ka == 1.0) return b;
    if (cb && kb == 1.0) return a;
    if (ca && ka == -1.0) return sym_neg(g, b);
    if (cb && kb == -1.0) return sym_neg(g, a);
    int na, nb;
    sv pa = split(g, a, &na), pb = split(g, b, &nb);
    int neg = na ^ nb;
    /* k1 * (x * k2) = x * (k1 k2) */
    if (ca || cb) {
        double kc = ca ? fabs(ka) : fabs(kb), k2;
        sv x = ca ? pb : pa, other;
        if (mul_const_operand(g, x, &other, &k2))
            return with_sign(g, sym_mul(g, other, sym_const(g, kc * k2)), neg);
    }
    if (pa > pb) { sv t = pa; pa = pb; pb = t; }
    sv r = intern(g, SYM_MUL, pa, pb, 0.0);
    return neg ? SV_NEG(r) : r;
}

sv sym_div(sym_graph *g, sv a, sv b)
{
    if (g->oom) return ZERO;
    double ka, kb;
    int ca = sym_is_const(g, a, &ka), cb = sym_is_const(g, b, &kb);
    if (ca && cb && kb != 0.0) return sym_const(g, ka / kb);
    if (cb && kb != 0.0) return sym_mul(g, a, sym_const(g, 1.0 / kb));
    if (ca && ka == 0.0) return ZERO;
    int na, nb;
    sv pa = split(g, a, &na), pb = split(g, b, &nb);
    sv r = intern(g, SYM_DIV, pa, pb, 0.0);
    return (na ^ nb) ? SV_NEG(r) : r;
}

sv sym_sqrt(sym_graph *g, sv a)
{
    double k;
    if (sym_is_const(g, a, &k) && k >= 0) return sym_const(g, sqrt(k));
    return intern(g, SYM_SQRT, a, 0, 0.0);
}

sv sym_sin(sym_graph *g, sv a)
{
    double k;
    if (sym_is_const(g, a, &k)) return sym_const(g, sin(k));
    if (hv_negated(a)) return SV_NEG(intern(g, SYM_SIN, a & ~1, 0, 0.0));
    return intern(g, SYM_SIN, a, 0, 0.0);
}

sv sym_cos(sym_graph *g, sv a)
{
    double k;
    if (sym_is_const(g, a, &k)) return sym_const(g, cos(k));
    return intern(g, SYM_COS, a & ~1, 0, 0.0);
}

sv sym_abs(sym_graph *g, sv a)
{
    double k;
    if (sym_is_const(g, a, &k)) return sym_const(g, fabs(k));
    a &= ~1; /* |-x| = |x| */
    const int op = g->nodes[hv_node(a)].op;
    if (op == SYM_ABS || op == SYM_SQRT) return a; /* already nonnegative */
    return intern(g, SYM_ABS, a, 0, 0.0);
}

sv sym_atan2(sym_graph *g, sv y, sv x)
{
    double ky, kx;
    if (sym_is_const(g, y, &ky) && sym_is_const(g, x, &kx)) return sym_const(g, atan2(ky, kx));
    return intern(g, SYM_ATAN2, y, x, 0.0);
}

sv sym_fma(sym_graph *g, sv a, sv b, sv c)
{
    return sym_add(g, sym_mul(g, a, b), c);
}

sv sym_dot(sym_graph *g, const sv *a, const sv *b, int n)
{
    sv s = ZERO;
    for (int k = 0; k < n; k++) s = sym_add(g, s, sym_mul(g, a[k], b[k]));
    return s;
}

/* ---- side effects ---- */

void sym_store(sym_graph *g, int array, int index, sv value)
{
    if (g->oom) return;
    sym_node nd = {SYM_STORE, array, index, value, 0.0};
    append_node(g, &nd);
}

static void add_text(sym_graph *g, const char *s, int droppable)
{
    if (g->oom) return;
    size_t n = strlen(s) + 1;
    if (g->tlen + n > g->tcap) {
        size_t cap = g->tcap ? g->tcap : 4096;
        while (cap < g->tlen + n) cap *= 2;
        char *t = realloc(g->text, cap);
        if (!t) {
            g->oom = 1;
            return;
        }
        g->text = t;
        g->tcap = cap;
    }
    memcpy(g->text + g->tlen, s, n);
    sym_node nd = {SYM_TEXT, (int)g->tlen, droppable, 0, 0.0};
    g->tlen += n;
    append_node(g, &nd);
}

void sym_comment(sym_graph *g, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    add_text(g, buf, 1);
}

void sym_raw(sym_graph *g, const char *text)
{
    add_text(g, text, 0);
}

/* ---- emission ---- */

void sym_write_literal(ew_writer *w, const sym_style *st, double k)
{
    char buf[64];
    if (!isfinite(k) || (st->is_float && !isfinite((float)k))) {
        /* inf and NaN as constant expressions (a division by a zero constant, e.g. a massless body) */
        const char *f = st->is_float ? "f" : "";
        if (isnan(k)) ew_printf(w, "(0.0%s / 0.0%s)", f, f);
        else ew_printf(w, "(%s1.0%s / 0.0%s)", k < 0 ? "-" : "", f, f);
        return;
    }
    if (st->is_float) {
        float f = (float)k;
        for (int p = 1; p <= 9; p++) {
            snprintf(buf, sizeof buf, "%.*g", p, (double)f);
            if (strtof(buf, NULL) == f) break;
        }
    } else {
        for (int p = 1; p <= 17; p++) {
            snprintf(buf, sizeof buf, "%.*g", p, k);
            if (strtod(buf, NULL) == k) break;
        }
    }
    if (!strpbrk(buf, ".en")) strcat(buf, ".0");
    ew_puts(w, buf);
    if (st->is_float) ew_puts(w, "f");
}

typedef struct {
    const sym_graph *g;
    const sym_style *st;
    ew_writer *w;
    const int *name;       /* temp number of each node, -1 for others */
    const unsigned char *live;
    unsigned char *done;   /* node already written (loads, sincos partners, stores) */
    const int *first_store, *next_store; /* stores of each value node, in creation order */
    sym_stats *stats;
    const sym_chunks *ch;  /* NULL, or the chunked array (index carr) */
    int carr;
} emitter;

static void put_name(const emitter *e, int id)
{
    const sym_node *nd = &e->g->nodes[id];
    if (nd->op == SYM_INPUT)
        ew_printf(e->w, "%s_%d", e->g->arrays[nd->a], nd->b);
    else
        ew_printf(e->w, "t%d", e->name[id]);
}

/* an operand: literal (parenthesised when negative) or [-]name */
static void put_operand(const emitter *e, sv x, int in_binary)
{
    double k;
    if (sym_is_const(e->g, x, &k)) {
        if (k < 0 && in_binary) {
            ew_puts(e->w, "(");
            sym_write_literal(e->w, e->st, k);
            ew_puts(e->w, ")");
        } else {
            sym_write_literal(e->w, e->st, k);
        }
        return;
    }
    if (hv_negated(x)) ew_puts(e->w, in_binary ? "(-" : "-");
    put_name(e, hv_node(x));
    if (hv_negated(x) && in_binary) ew_puts(e->w, ")");
}

static void put_element(const emitter *e, int array, int index)
{
    const char *scale = e->g->scaled[array] ? e->st->elem_scale : "";
    const char *base = e->g->base[array];
    if (!base[0]) ew_printf(e->w, "%s[%d%s]", e->g->ptr[array], index, scale);
    else if (scale[0]) ew_printf(e->w, "%s[(%s + %d)%s]", e->g->ptr[array], base, index, scale);
    else if (index == 0) ew_printf(e->w, "%s[%s]", e->g->ptr[array], base);
    else ew_printf(e->w, "%s[%s + %d]", e->g->ptr[array], base, index);
}

static void emit_store(emitter *e, int i)
{
    const sym_node *nd = &e->g->nodes[i];
    const int put = e->st->fn_put && e->g->scaled[nd->a];
    ew_puts(e->w, e->st->indent);
    if (e->ch && nd->a == e->carr) {
        assert(!put);
        ew_printf(e->w, "%s[%d] = ", e->ch->ptr, nd->b % e->ch->len);
    } else if (put) ew_printf(e->w, "%s(%s, %d, ", e->st->fn_put, e->g->ptr[nd->a], nd->b);
    else {
        put_element(e, nd->a, nd->b);
        ew_puts(e->w, " = ");
    }
    if (e->st->fn_splat && sym_is_const(e->g, nd->c, NULL)) {
        /* a constant into a vector element: broadcast it */
        ew_printf(e->w, "%s(", e->st->fn_splat);
        put_operand(e, nd->c, 0);
        ew_puts(e->w, ")");
    } else {
        put_operand(e, nd->c, 0);
    }
    ew_puts(e->w, put ? ");\n" : ";\n");
    e->done[i] = 1;
    e->stats->statements++;
    e->stats->stores++;
}

/* the stores of value node id, right after it: its register is freed sooner */
static void flush_stores(emitter *e, int id)
{
    for (int s = e->first_store[id]; s >= 0; s = e->next_store[s])
        if (e->live[s] && !e->done[s] && !(e->ch && e->g->nodes[s].a == e->carr)) emit_store(e, s);
}

/* an input is loaded just before its first use */
static void ensure_loaded(emitter *e, sv x)
{
    int id = hv_node(x);
    const sym_node *nd = &e->g->nodes[id];
    if (nd->op != SYM_INPUT || e->done[id]) return;
    const int splat = e->g->broadcast[nd->a] && e->st->fn_splat;
    ew_printf(e->w, "%sconst %s ", e->st->indent, e->st->real);
    put_name(e, id);
    ew_printf(e->w, " = %s%s", splat ? e->st->fn_splat : "", splat ? "(" : "");
    put_element(e, nd->a, nd->b);
    ew_puts(e->w, splat ? ");\n" : ";\n");
    e->done[id] = 1;
    e->stats->statements++;
    e->stats->loads++;
    flush_stores(e, id);
}

static void emit_node(emitter *e, int i)
{
    static const char *const binop[] = {[SYM_ADD] = " + ", [SYM_SUB] = " - ", [SYM_MUL] = " * ",
                                        [SYM_DIV] = " / "};
    const sym_graph *g = e->g;
    const sym_style *st = e->st;
    ew_writer *w = e->w;
    const sym_node *nd = &g->nodes[i];
    if (e->done[i]) return;
    switch (nd->op) {
    case SYM_ADD: case SYM_SUB: case SYM_MUL: case SYM_DIV: case SYM_ATAN2:
        ensure_loaded(e, nd->a);
        ensure_loaded(e, nd->b);
        if (nd->op == SYM_ATAN2) {
            ew_printf(w, "%sconst %s t%d = %s(", st->indent, st->real, e->name[i], st->fn_atan2);
            put_operand(e, nd->a, 0);
            ew_puts(w, ", ");
            put_operand(e, nd->b, 0);
            ew_puts(w, ");\n");
            e->stats->transcendental++;
        } else {
            /* two constants (only a division by a zero constant stays unfolded): broadcast in vector code */
            const int splat = st->fn_splat && sym_is_const(g, nd->a, NULL) && sym_is_const(g, nd->b, NULL);
            ew_printf(w, "%sconst %s t%d = %s%s", st->indent, st->real, e->name[i], splat ? st->fn_splat : "",
                      splat ? "(" : "");
            put_operand(e, nd->a, 1);
            ew_puts(w, binop[nd->op]);
            put_operand(e, nd->b, 1);
            ew_puts(w, splat ? ");\n" : ";\n");
            e->stats->flops++;
        }
        e->stats->statements++;
        break;
    case SYM_SIN: case SYM_COS: case SYM_SQRT: case SYM_ABS: {
        ensure_loaded(e, nd->a);
        /* a live sin/cos pair of one argument: one sincos call at the first of the two */
        int other = -1;
        if ((nd->op == SYM_SIN || nd->op == SYM_COS) && st->fn_sincos) other = lookup(g, nd->op == SYM_SIN ? SYM_COS : SYM_SIN, nd->a, 0);
        if (other >= 0 && e->live[other]) {
            int is = nd->op == SYM_SIN ? i : other, ic = nd->op == SYM_SIN ? other : i;
            ew_printf(w, "%s%s t%d, t%d;\n%s%s(", st->indent, st->real, e->name[is], e->name[ic], st->indent,
                      st->fn_sincos);
            put_operand(e, nd->a, 0);
            ew_printf(w, ", &t%d, &t%d);\n", e->name[is], e->name[ic]);
            e->stats->statements++;
            e->stats->transcendental += 2;
            e->done[other] = 1;
            flush_stores(e, other);
            break;
        }
        const char *fn = nd->op == SYM_SQRT ? st->fn_sqrt : nd->op == SYM_ABS ? st->fn_abs
                       : nd->op == SYM_SIN ? st->fn_sin : st->fn_cos;
        ew_printf(w, "%sconst %s t%d = %s(", st->indent, st->real, e->name[i], fn);
        put_operand(e, nd->a, 0);
        ew_puts(w, ");\n");
        e->stats->statements++;
        e->stats->transcendental++;
        break;
    }
    case SYM_STORE:
        ensure_loaded(e, nd->c);
        emit_store(e, i);
        return;
    case SYM_TEXT:
        if (nd->b) ew_printf(w, "%s%s\n", st->indent, g->text + nd->a);
        else ew_puts(w, g->text + nd->a);
        e->done[i] = 1;
        return;
    default: /* constants are literals; inputs load on first use */
        return;
    }
    e->done[i] = 1;
    flush_stores(e, i);
}

/* the index of the array whose C name is name, or -1 */
static int array_named(const sym_graph *g, const char *name)
{
    for (int a = 0; a < g->narrays; a++)
        if (strcmp(g->ptr[a], name) == 0) return a;
    return -1;
}

int sym_chunk_width(const sym_graph *g, const sym_chunks *ch)
{
    const int arr = array_named(g, ch->array);
    if (g->oom || arr < 0 || g->base[arr][0] || g->local_size[arr] > 0 || ch->len <= 0) return 0;
    int width = 0;
    for (int i = 0; i < g->n; i++) {
        const sym_node *nd = &g->nodes[i];
        if (nd->op == SYM_TEXT && !nd->b) return 0;              /* raw code may touch the array */
        if (nd->op == SYM_INPUT && nd->a == arr) return 0;       /* read back */
        if (nd->op == SYM_STORE && nd->a == arr && nd->b + 1 > width) width = nd->b + 1;
    }
    for (int a = 0; a < g->narrays; a++)
        if (a != arr && strcmp(g->ptr[a], ch->array) == 0) return 0; /* the same C array under two tags */
    unsigned char *seen = calloc((size_t)width + 1, 1);
    if (!seen) return 0;
    for (int i = 0; i < g->n; i++)
        if (g->nodes[i].op == SYM_STORE && g->nodes[i].a == arr) seen[g->nodes[i].b] = 1;
    int all = width > 0;
    for (int k = 0; k < width; k++) all &= seen[k];
    free(seen);
    return all ? width : 0;
}

/* liveness: stores (those sub keeps, when given) and raw text are roots; walk operands backwards. Returns the
   live operations (arithmetic and transcendental nodes) */
static long mark_live(const sym_graph *g, unsigned char *live, const sym_subset *sub)
{
    const int arr = sub ? array_named(g, sub->array) : -1;
    long ops = 0;
    for (int i = g->n - 1; i >= 0; i--) {
        const sym_node *nd = &g->nodes[i];
        if ((nd->op == SYM_STORE && (nd->a != arr || sub->keep[nd->b])) || (nd->op == SYM_TEXT && !nd->b)) live[i] = 1;
        if (!live[i]) continue;
        switch (nd->op) {
        case SYM_ADD: case SYM_SUB: case SYM_MUL: case SYM_DIV: case SYM_ATAN2:
            live[hv_node(nd->a)] = 1;
            live[hv_node(nd->b)] = 1;
            ops++;
            break;
        case SYM_SQRT: case SYM_SIN: case SYM_COS: case SYM_ABS:
            live[hv_node(nd->a)] = 1;
            ops++;
            break;
        case SYM_STORE:
            live[hv_node(nd->c)] = 1;
            break;
        default:
            break;
        }
    }
    return ops;
}

long sym_subset_ops(const sym_graph *g, const sym_subset *sub)
{
    unsigned char *live = calloc((size_t)g->n + 1, 1);
    if (!live) return -1;
    const long ops = mark_live(g, live, sub);
    free(live);
    return ops;
}

static int emit_graph(const sym_graph *g, const sym_style *st, ew_writer *w, sym_stats *stats, const sym_chunks *ch,
                      const sym_subset *sub);

int sym_emit(const sym_graph *g, const sym_style *st, ew_writer *w, sym_stats *stats)
{
    return emit_graph(g, st, w, stats, NULL, NULL);
}

int sym_emit_subset(const sym_graph *g, const sym_style *st, ew_writer *w, sym_stats *stats, const sym_subset *sub)
{
    return emit_graph(g, st, w, stats, NULL, sub);
}

int sym_emit_chunked(const sym_graph *g, const sym_style *st, ew_writer *w, sym_stats *stats, const sym_chunks *ch)
{
    return emit_graph(g, st, w, stats, ch, NULL);
}

static int emit_graph(const sym_graph *g, const sym_style *st, ew_writer *w, sym_stats *stats, const sym_chunks *ch,
                      const sym_subset *sub)
{
    if (g->oom) return -1;
    sym_stats s0;
    memset(&s0, 0, sizeof s0);
    size_t n1 = (size_t)g->n + 1;
    unsigned char *live = calloc(n1, 1), *done = calloc(n1, 1);
    int *name = malloc(n1 * sizeof *name), *first = malloc(n1 * sizeof *first), *next = malloc(n1 * sizeof *next);
    if (!live || !done || !name || !first || !next) {
        free(live);
        free(done);
        free(name);
        free(first);
        free(next);
        return -1;
    }
    mark_live(g, live, sub);
    /* a comment survives only when a live statement follows it before the next text */
    int seen = 0;
    for (int i = g->n - 1; i >= 0; i--) {
        const sym_node *nd = &g->nodes[i];
        if (nd->op == SYM_TEXT) {
            if (nd->b) live[i] = (unsigned char)seen;
            seen = 0;
        } else if (live[i] && nd->op >= SYM_ADD && nd->op <= SYM_ATAN2) {
            seen = 1;
        }
    }
    /* number the temporaries densely in creation order; list each value's stores */
    int next_name = 0;
    for (int i = 0; i < g->n; i++) {
        const sym_node *nd = &g->nodes[i];
        name[i] = (live[i] && nd->op >= SYM_ADD && nd->op <= SYM_ATAN2) ? next_name++ : -1;
        first[i] = next[i] = -1;
    }
    for (int i = g->n - 1; i >= 0; i--) {
        const sym_node *nd = &g->nodes[i];
        if (nd->op != SYM_STORE || sym_is_const(g, nd->c, NULL)) continue;
        next[i] = first[hv_node(nd->c)];
        first[hv_node(nd->c)] = i;
    }
    emitter e = {g, st, w, name, live, done, first, next, &s0, ch, ch ? array_named(g, ch->array) : -1};
    /* chunks: when each is ready (its stores' last value node, clast) and its stores in creation order
       (cfirst/cnext); a chunk is written right after its last value, so values wait in registers briefly */
    const int width = ch ? sym_chunk_width(g, ch) : 0;
    const int nchunk = ch ? (width + ch->len - 1) / ch->len : 0;
    assert(!ch || width > 0);
    int *clast = NULL, *cfirst = NULL, *cnext = NULL, *chead = NULL, *cafter = NULL;
    int rc = 0;
    if (ch) {
        clast = malloc((size_t)nchunk * sizeof *clast);
        cfirst = malloc((size_t)nchunk * sizeof *cfirst);
        cafter = malloc((size_t)nchunk * sizeof *cafter);
        cnext = malloc(n1 * sizeof *cnext);
        chead = malloc(n1 * sizeof *chead); /* chunks ready at node i: chead[i], then cafter[] */
        if (!clast || !cfirst || !cafter || !cnext || !chead) {
            rc = -1;
            goto out;
        }
        for (int c = 0; c < nchunk; c++) clast[c] = cfirst[c] = -1;
        for (size_t i = 0; i < n1; i++) chead[i] = -1;
        for (int i = g->n - 1; i >= 0; i--) {
            const sym_node *nd = &g->nodes[i];
            if (nd->op != SYM_STORE || nd->a != e.carr) continue;
            const int c = nd->b / ch->len;
            if (hv_node(nd->c) > clast[c]) clast[c] = hv_node(nd->c);
            cnext[i] = cfirst[c];
            cfirst[c] = i;
        }
        for (int c = nchunk - 1; c >= 0; c--) {
            cafter[c] = chead[clast[c]];
            chead[clast[c]] = c;
        }
    }
    for (int a = 0; a < g->narrays; a++)
        if (g->local_size[a] > 0) ew_printf(w, "%s%s %s[%d];\n", st->indent, st->real, g->arrays[a], g->local_size[a]);
    for (int i = 0; i < g->n; i++) {
        const sym_node *nd = &g->nodes[i];
        if (live[i] && !(ch && nd->op == SYM_STORE && nd->a == e.carr)) emit_node(&e, i);
        /* the chunks whose values are all written now: their stores, then the flush */
        for (int c = ch ? chead[i] : -1; c >= 0; c = cafter[c]) {
            for (int s = cfirst[c]; s >= 0; s = cnext[s]) {
                ensure_loaded(&e, g->nodes[s].c);
                emit_store(&e, s);
            }
            const int f0 = c * ch->len, cn = width - f0 < ch->len ? width - f0 : ch->len;
            ew_puts(w, st->indent);
            ew_printf(w, ch->flush, f0, cn);
            ew_puts(w, "\n");
        }
    }
out:
    free(clast);
    free(cfirst);
    free(cafter);
    free(cnext);
    free(chead);
    free(live);
    free(done);
    free(name);
    free(first);
    free(next);
    if (rc) return rc;
    if (stats) *stats = s0;
    return w->oom ? -1 : 0;
}
