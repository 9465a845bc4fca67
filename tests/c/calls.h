/* Test helper: a grid_call of one signature row, filled from the four classic arrays (q, v, a, fext) by input name. */
#ifndef GRID_TEST_CALLS_H
#define GRID_TEST_CALLS_H

#include <string.h>
#include "grid/abi.h"
#include "grid/signature.h"

/* the call and the pointer arrays it points into (use tc() to get the call: it re-points it after a copy) */
typedef struct {
    const void *in[GRID_MAX_IN];
    void *out[GRID_MAX_OUT];
    grid_call c;
} test_call;

static inline grid_call *tc(test_call *t)
{
    t->c.in = t->in;
    t->c.out = t->out;
    return &t->c;
}

/* row algo's inputs by name: "q" <- q, "qd" <- v, "qdd" / "u" <- a, "f_ext" <- f (NULL: absent), "cotangent" <-
   test_cotangent, "target" <- test_target;
   attributes by name: "frame" <- frame, "reference_frame" <- rf */
/* workspace every call gets (tests set it once; the reference ignores it) */
static void *test_work_ptr;
static size_t test_work_len;
/* the cotangent every vector-Jacobian product gets ("cotangent": B states of the row's width, NULL: absent) */
static const void *test_cotangent;
/* the per-call targets of the rows that take one ("target": B states of [frame id, offset x y z], NULL: absent) */
static const void *test_target;

static inline grid_call *test_call_init(test_call *t, int algo, const void *q, const void *v, const void *a,
                                        const void *f, void *out, long long batch, int frame, int rf)
{
    memset(t, 0, sizeof *t);
    const grid_signature_row *r = grid_sig_row(algo);
    if (!r) return tc(t);
    for (int k = 0; k < r->n_in; k++) {
        const char *n = r->in[k].name;
        t->in[k] = !strcmp(n, "q") ? q : !strcmp(n, "qd") ? v : (!strcmp(n, "qdd") || !strcmp(n, "u")) ? a
                 : !strcmp(n, "f_ext") ? f : !strcmp(n, "cotangent") ? test_cotangent
                 : !strcmp(n, "target") ? test_target : NULL;
    }
    for (int k = 0; k < r->n_attr; k++)
        t->c.attr[k] = !strcmp(r->attr[k].name, "frame") ? frame : !strcmp(r->attr[k].name, "reference_frame") ? rf : 0;
    t->out[0] = out;
    t->c.n_in = r->n_in;
    t->c.n_out = r->n_out;
    t->c.batch = batch;
    t->c.work = test_work_ptr;
    t->c.work_bytes = test_work_len;
    return tc(t);
}

/* a row of several outputs: output k at out + B * (the elements per state of outputs 0 .. k-1), each a batch block
   (elem: the element size); a row of one output keeps out */
static inline void test_call_outputs(test_call *t, int algo, const grid_sizes *s, void *out, long long batch, size_t elem)
{
    const grid_signature_row *r = grid_sig_row(algo);
    long long at = 0;
    for (int k = 0; r && k < r->n_out; k++) {
        t->out[k] = (char *)out + (size_t)(batch * at) * elem;
        at += grid_sig_shape(&r->out[k], s, NULL);
    }
}

/* every output's elements per state of row algo */
static inline long long test_width_total(int algo, const grid_sizes *s)
{
    const grid_signature_row *r = grid_sig_row(algo);
    long long w = 0;
    for (int k = 0; r && k < r->n_out; k++) w += grid_sig_shape(&r->out[k], s, NULL);
    return w;
}

/* state b of a buffer laid out as test_call_outputs lays it (batch B) into dst, its outputs one after another */
static inline void test_state_of(int algo, const grid_sizes *s, long long B, const void *buf, long long b, size_t elem,
                                 void *dst)
{
    const grid_signature_row *r = grid_sig_row(algo);
    long long at = 0;
    for (int k = 0; r && k < r->n_out; k++) {
        const long long w = grid_sig_shape(&r->out[k], s, NULL);
        memcpy((char *)dst + (size_t)at * elem, (const char *)buf + (size_t)(B * at + b * w) * elem, (size_t)w * elem);
        at += w;
    }
}

/* 1 when row algo reads the input filled from slot name ("qd", "qdd", "u", "f_ext") */
static inline int test_row_has(int algo, const char *name)
{
    const grid_signature_row *r = grid_sig_row(algo);
    for (int k = 0; r && k < r->n_in; k++)
        if (!strcmp(r->in[k].name, name)) return 1;
    return 0;
}

#endif
