/* The per-target and per-dtype tables: what differs between the C and CUDA outputs, as data. */
#ifndef GRID_EMIT_TARGET_H
#define GRID_EMIT_TARGET_H

#include "writer.h"

/* how one real type is spelled */
typedef struct {
    int dtype;               /* GRID_FLOAT32 or GRID_FLOAT64 */
    const char *c_type;      /* "float" / "double" */
    const char *fn_sqrt, *fn_sin, *fn_cos, *fn_atan2;
    int is_float;            /* literals rounded to float, 9 significant digits and an 'f' suffix */
} emit_real;

/* one per-state function the batch wrapper can call, and which optional inputs it reads */
typedef struct {
    const char *fn;    /* per-state function name (NULL: unused slot) */
    int reads_a;       /* 1: pass a (zeros when the caller's a is NULL) */
    int reads_fext;    /* 1: pass fext (zeros when NULL) */
} emit_variant;

/* one exported algorithm: inputs, widths and the variant for each combination of optional inputs */
typedef struct {
    const char *name;          /* grid_algo_name(algo) */
    int needs_v, needs_a;      /* required inputs besides q */
    int opt_a, opt_fext;       /* optional inputs: the variant is chosen by (a != NULL) | (fext != NULL) << 1 */
    int frame_check;           /* FRAME_JACOBIAN: validate call->frame < nframes and call->reference_frame */
    emit_variant variant[4];   /* slot 0 always set; NULL slots fall back to slot 0 */
    long long nq, nv, nfext, nout;
    long long min_parallel;    /* smallest batch for which a thread team is used */
    int nframes;
    int vector;                /* 1: the variants are lane functions grid_v_<fn>, fed GRID_LANES states per tile */
    long long work;            /* reals of workspace one state's function needs (its thread's slice of c->work) */
} emit_entry;

/* how one target is spelled */
typedef struct emit_target {
    int id;                    /* a grid_target */
    const char *name;          /* "c" / "cuda" */
    const char *state_fn;      /* qualifiers of per-state functions */
    const char *helper_fn;     /* qualifiers of helpers a part may leave unused */
    const char *restrict_kw;   /* restrict qualifier of pointer parameters */
    const char *table;         /* qualifiers of constant tables read by per-state code */
    const char *stride_param;  /* extra trailing parameter of per-state functions */
    const char *elem_scale;    /* state array element k is p[k<elem_scale>] */
    const char *includes;      /* the #include lines */
    const char *export_fn;     /* qualifiers of exported functions */
    int lanes;                 /* 1: per-state dynamics as lane-vector functions (grid_vec, GRID_LANES states) */
    /* the batch entry point of one algorithm (and any kernels it launches) */
    void (*batch)(ew_writer *w, const struct emit_target *t, const emit_entry *e);
} emit_target;

const emit_target *emit_target_get(int target);   /* NULL when unknown */
const emit_real *emit_real_get(int dtype);        /* NULL when unknown */

/* the parameter list shared by every per-state function, e.g. "(const grid_real *restrict q, ...)" */
void emit_state_params(ew_writer *w, const emit_target *t);

/* the helpers every batch wrapper uses (thread count), written once after the tables */
void emit_batch_helpers(ew_writer *w, const emit_target *t);

/* the argument checks every batch entry point starts with, for either target */
void emit_write_checks(ew_writer *w, const emit_entry *e);

#endif
