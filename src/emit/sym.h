/* The symbolic scalar engine: constants and SSA temporaries with folding, CSE, liveness and emission. */
#ifndef GRID_EMIT_SYM_H
#define GRID_EMIT_SYM_H

#include "writer.h"

/* a symbolic value: (node index << 1) | negated. Constants are never negated
   (their node holds the signed value); the sign bit makes negation free. */
typedef int sv;

#define SV_NEG(x) ((x) ^ 1)

/* node kinds */
enum {
    SYM_CONST = 0, /* k */
    SYM_INPUT,     /* element b of array a */
    SYM_ADD,       /* a + b */
    SYM_SUB,       /* a - b */
    SYM_MUL,       /* a * b */
    SYM_DIV,       /* a / b */
    SYM_SQRT,
    SYM_SIN,
    SYM_COS,
    SYM_ABS,       /* |a| */
    SYM_ATAN2,     /* atan2(a, b) */
    SYM_STORE,     /* array a, element b = value c */
    SYM_TEXT,      /* verbatim text at offset a of the text pool; b = 1 for a droppable comment */
    SYM_NKINDS
};

typedef struct sym_graph sym_graph;

/* a new empty graph, NULL when out of memory */
sym_graph *sym_new(void);
void sym_free(sym_graph *g);

/* 1 once an allocation failed (every later operation returns the constant 0) */
int sym_failed(const sym_graph *g);
/* a budget of nodes: past it every operation returns the constant 0 and sym_over_limit is 1 */
void sym_set_limit(sym_graph *g, long nodes);
int sym_over_limit(const sym_graph *g);
long sym_node_count(const sym_graph *g);

/* declare an array the code reads (input) or writes (output); returns its id.
   scaled = 1: a state array addressed with the target's element stride; 0: a plain local array */
int sym_array(sym_graph *g, const char *name, int scaled);
/* the same over a runtime offset: element k is ptr[base + k] (ptr[(base + k) * st] when scaled),
   its loads named <tag>_<k>; base is C text the emitter writes (never from the URDF) */
int sym_array_at(sym_graph *g, const char *tag, const char *ptr, const char *base, int scaled);
/* array holds plain reals read by vector code (a model table): a load broadcasts the element to every lane
   (fn_splat of the style; nothing in a scalar style) */
void sym_array_broadcast(sym_graph *g, int array);
/* a local array of n reals the function declares at its top (stores may move ahead of raw code) */
int sym_local_array(sym_graph *g, const char *name, int n);

sv sym_const(sym_graph *g, double k);
sv sym_input(sym_graph *g, int array, int index);
sv sym_add(sym_graph *g, sv a, sv b);
sv sym_sub(sym_graph *g, sv a, sv b);
sv sym_mul(sym_graph *g, sv a, sv b);
sv sym_div(sym_graph *g, sv a, sv b);
sv sym_neg(sym_graph *g, sv a);
sv sym_sqrt(sym_graph *g, sv a);
sv sym_sin(sym_graph *g, sv a);
sv sym_cos(sym_graph *g, sv a);
sv sym_atan2(sym_graph *g, sv y, sv x);
sv sym_abs(sym_graph *g, sv a);

/* a*b + c and friends, written out for readability of the algorithm code */
sv sym_fma(sym_graph *g, sv a, sv b, sv c);
/* sum_k a[k] * b[k] */
sv sym_dot(sym_graph *g, const sv *a, const sv *b, int n);

/* 1 when x is a constant (value in *k when k is not NULL) */
int sym_is_const(const sym_graph *g, sv x, double *k);
/* 1 when x is the constant 0 */
int sym_is_zero(const sym_graph *g, sv x);

/* side effects, kept in creation order: a store, a droppable comment, raw code */
void sym_store(sym_graph *g, int array, int index, sv value);
void sym_comment(sym_graph *g, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void sym_raw(sym_graph *g, const char *text);

/* how emission spells things; filled by the caller from the target and dtype tables */
typedef struct {
    const char *real;        /* the real type name */
    int is_float;            /* constants rounded to float and suffixed 'f' */
    const char *fn_sqrt, *fn_sin, *fn_cos, *fn_atan2;
    const char *fn_sincos;   /* when set, a live sin(x) and cos(x) pair becomes one call fn_sincos(x, &s, &c) */
    const char *fn_splat;    /* when set (vector code), a constant stored to an array goes through fn_splat(k) */
    const char *fn_put;      /* when set (vector code), a store to a state array is fn_put(name, k, value) */
    const char *elem_scale;  /* scaled array element k is name[k<elem_scale>], e.g. "" or " * st" */
    const char *indent;
    const char *fn_abs;      /* |x| */
} sym_style;

/* counts of live operations in a graph */
typedef struct {
    long statements; /* emitted assignments (loads and stores included) */
    long flops;      /* + - * / */
    long transcendental;
    long loads, stores;
    long work;       /* reals of caller workspace the function uses per state (rolled schedule) */
} sym_stats;

/* emit every live statement in creation order; returns 0, or -1 on out of memory */
int sym_emit(const sym_graph *g, const sym_style *st, ew_writer *w, sym_stats *stats);

/* Stores to one array in chunks of len consecutive elements (a GPU warp's output tile): a chunk's stores are
   held back to its last store in creation order, then written as ptr[k - first] and followed by the text
   flush(first, n). The values stay in registers meanwhile; nothing else moves. */
typedef struct {
    const char *array; /* the array's C name as the builders store to it ("out") */
    int len;           /* elements per chunk */
    const char *ptr;   /* the chunk's buffer */
    const char *flush; /* printf format of (int first, int n) written after each chunk */
} sym_chunks;

/* the width of the chunked array (every element 0..width-1 stored, no raw code, never read back), or 0 when
   the graph does not suit chunks */
int sym_chunk_width(const sym_graph *g, const sym_chunks *ch);
/* sym_emit with the stores to ch->array in chunks; the graph must have sym_chunk_width > 0 */
int sym_emit_chunked(const sym_graph *g, const sym_style *st, ew_writer *w, sym_stats *stats, const sym_chunks *ch);

/* Some of the stores to one array: those whose element index k has keep[k] != 0 (keep covers the array's
   width). The others, and every value only they need, are left out; stores to other arrays and raw code stay. */
typedef struct {
    const char *array;         /* the array's C name ("out") */
    const unsigned char *keep;
} sym_subset;

/* sym_emit of the subset */
int sym_emit_subset(const sym_graph *g, const sym_style *st, ew_writer *w, sym_stats *stats, const sym_subset *sub);
/* the live operations (+ - * / and transcendental) the subset needs: its cost; -1 when out of memory */
long sym_subset_ops(const sym_graph *g, const sym_subset *sub);

/* write a real literal of value k in the style (shortest text that reads back exactly) */
void sym_write_literal(ew_writer *w, const sym_style *st, double k);

#endif
