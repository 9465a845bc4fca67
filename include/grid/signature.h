/* The signature table: one row per batched method (inputs, outputs, attributes, shapes), the single source every layer reads. */
#ifndef GRID_SIGNATURE_H
#define GRID_SIGNATURE_H

#include <stddef.h>
#include "grid/abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The row ids, in the order of include/grid/signature_rows.h: index i of the table is row i (src/common/signature.c).
   A new method is one row there, its program in the emitter and its reference (docs/architecture.md). */
typedef enum {
#define GRID_ROW(ID, id, ref, ...) GRID_ALGO_##ID,
#include "grid/signature_rows.h"
#undef GRID_ROW
    GRID_ALGO_COUNT
} grid_algo;

/* the sizes a dimension may be written in */
typedef enum {
    GRID_SYM_ONE = 0,   /* a constant: the multiplier alone */
    GRID_SYM_NQ,        /* configuration width */
    GRID_SYM_NV,        /* tangent width */
    GRID_SYM_NB,        /* bodies */
    GRID_SYM_NEE,       /* end effectors */
    GRID_SYM_NFRAMES,   /* frames (attribute ranges) */
    GRID_SYM_COUNT
} grid_sym;

/* one extent: mul * size(sym), e.g. {GRID_SYM_NB, 6} = 6*nb, {GRID_SYM_ONE, 4} = 4 */
typedef struct {
    int sym;
    int mul;
} grid_dim;

/* the sizes of one model, for evaluating dimensions */
typedef struct {
    int nq, nv, nb, nee, nframes;
} grid_sizes;

/* one input or output of a row */
typedef struct {
    const char *name;        /* the argument name users see ("q", "qd", "qdd", "u", "f_ext", "tau") */
    const char *desc;        /* what the per-state extent is, for messages ("tangent width") */
    int optional;            /* GRID_REQUIRED, or how an absent input behaves (GRID_ABSENT_ZEROS) */
    int rank;                /* per-state rank (the batch axis not counted) */
    grid_dim dim[GRID_MAX_RANK];
} grid_sig_arg;

/* what a row's output is, for the output conventions (src/runtime/convention.c): a primal row states it; a
   derivative or VJP row leaves GRID_QTY_DERIVED and takes it from the row whose derivative / vjp link names it */
typedef enum {
    GRID_QTY_DERIVED = 0, /* (or unstated: the MuJoCo convention refuses a row that neither states nor derives one) */
    GRID_QTY_WORLD,       /* world-frame quantities, unchanged by a joint-space basis (placements, poses) */
    GRID_QTY_FORCE,       /* a generalised force (torques, bias, gravity) */
    GRID_QTY_ACCEL,       /* a generalised acceleration */
    GRID_QTY_INERTIA,     /* nv x nv, M or M^-1 */
    GRID_QTY_JACOBIAN,    /* rows x nv, maps a generalised velocity */
    GRID_QTY_CORIOLIS,    /* nv x nv, maps a generalised velocity to a generalised force beside M (C with C qd = c) */
    GRID_QTY_JACOBIAN_RATE /* rows x nv, the rate along qd of the Jacobian that output 0 of row `rate_of` is */
} grid_quantity;

/* the quantities of a row's outputs, 8 bits each */
#define GRID_QTYS2(q0, q1) ((q0) | (q1) << 8)
/* what output k is, from a row's quantity field */
static inline int grid_sig_quantity_of(int quantity, int k) { return quantity >> (8 * k) & 255; }

/* one integer attribute of a row: valid values lo <= x < hi */
typedef struct {
    const char *name;         /* "frame" */
    int lo;
    grid_dim hi;
    const char *range_error;  /* printf format of the out-of-range message, given (long value, int hi) */
} grid_sig_attr;

typedef struct {
    const char *name;         /* ABI name: grid_<name>, grid_cuda_<name>, _core.ALGO_<NAME> */
    const char *py_name;      /* the RobotHandle method */
    const char *py_aliases;   /* space-separated other names of that method ("" = none) */
    const char *doc;          /* one line: what the method computes */
    int n_in;
    grid_sig_arg in[GRID_MAX_IN];
    int n_out;
    grid_sig_arg out[GRID_MAX_OUT];
    int n_attr;
    grid_sig_attr attr[GRID_MAX_ATTR];
    int gpu_map;              /* GRID_GPU_THREAD / _WARP / _BLOCK: how one state maps onto the GPU */
    int derivative;           /* row id of this method's derivative, -1 = none (yet) */
    int vjp;                  /* row id of its vector-Jacobian product, -1 = none (yet) */
    int quantity;             /* what output 0 is (grid_quantity; GRID_QTY_DERIVED for derivatives and VJPs), or for a
                                 row of several outputs GRID_QTYS(what output 0 is, output 1, ...) */
    int rate_of;              /* GRID_QTY_JACOBIAN_RATE: the row whose output 0 this row's output is the rate of */
    int second_order;         /* 1: second derivatives (O(nv^3) or O(nee nv^2) outputs), built only when named
                                 (grid_sig_opt_in) */
    int user_coordinates;     /* 1: on a robot with coupled mimic joints it reads and writes the user's coordinates
                                 itself (no full-coordinate form to expand and project: the reference's coupled path
                                 calls its row function as it is) */
} grid_signature_row;

/* the table: GRID_ALGO_COUNT rows, row i has id i */
int grid_sig_count(void);
const grid_signature_row *grid_sig_row(int id);       /* NULL when out of range */
int grid_sig_find(const char *name);                  /* the id of the row named name, -1 if none */

/* 1 when row id is built only when named (a library's default method set leaves it out): the second-order derivatives
   (the row's second_order), whose code and outputs (nv^3 or nee nv^2 elements per state) few calls need */
int grid_sig_opt_in(int id);

/* evaluating shapes for one model */
grid_sizes grid_sizes_of(int nq, int nv, int nb, int nee, int nframes);
long long grid_sig_dim(grid_dim d, const grid_sizes *s);
/* per-state shape of a: fills shape[0 .. rank-1] (the rest 0), returns the width (product; 1 for rank 0) */
long long grid_sig_shape(const grid_sig_arg *a, const grid_sizes *s, int shape[GRID_MAX_RANK]);
/* "nv", "6*nb", "4": the dimension as text */
const char *grid_sig_dim_text(grid_dim d, char *buf, size_t cap);
const char *grid_sym_name(int sym);                   /* "1", "nq", "nv", "nb", "nee", "nframes" */

/* the concrete row of id for a model of these sizes, with work_bytes of workspace per thread */
void grid_sig_concrete(int id, const grid_sizes *s, size_t work_bytes, grid_method_info *out);
/* 0 when `have` (a library's row) matches row id for these sizes (names, shapes, optional flags,
   attributes; work_bytes and gpu_map are the library's own), else 1 with what differs in why */
int grid_sig_mismatch(int id, const grid_sizes *s, const grid_method_info *have, char *why, size_t cap);

/* conveniences over the table */
const char *grid_algo_name(int algo);                 /* the row's name, NULL when out of range */
int grid_algo_from_name(const char *name);            /* = grid_sig_find */
long long grid_algo_output_width(int algo, int nq, int nv, int nb, int nee); /* width of output 0, -1 if unknown */

#ifdef __cplusplus
}
#endif
#endif
