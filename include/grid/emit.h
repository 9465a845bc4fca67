/* The per-robot code emitter: a model plus options in, self-contained C or CUDA C source out. */
#ifndef GRID_EMIT_H
#define GRID_EMIT_H

#include <stddef.h>
#include "grid/error.h"
#include "grid/model.h"
#include "grid/abi.h"
#include "grid/signature.h"

#ifdef __cplusplus
extern "C" {
#endif

/* how an algorithm's per-state code is laid out (docs/emitter.md, "Schedules"):
   UNROLLED: straight-line code, model constants folded as literals (the fast path for small robots);
   ROLLED: loops over the tree in parents-first order, per-joint-type step functions reading flat model tables
   (code size independent of the robot's size); AUTO: unrolled unless the algorithm's unrolled code would
   exceed GRID_EMIT_UNROLL_BUDGET statements */
typedef enum { GRID_SCHEDULE_AUTO = 0, GRID_SCHEDULE_UNROLLED = 1, GRID_SCHEDULE_ROLLED = 2 } grid_schedule;

typedef struct {
    int dtype;              /* GRID_FLOAT32 or GRID_FLOAT64: the generated code's real type */
    int target;             /* a grid_target */
    const int *methods;     /* ids of the rows (grid/signature.h) to generate, each at most once, ... */
    int n_methods;          /* ... and how many; 0 = every row of the table but the opt-in ones
                               (grid_sig_opt_in: named only) */
    const char *model_hash; /* hex string baked into the metadata; NULL = "" */
    int schedule;           /* a grid_schedule (0 = AUTO) */
} grid_emit_options;

/* the defaults: float64, C target, every row of the signature table, no hash */
grid_emit_options grid_emit_options_default(void);

/* Generate the source of one robot library implementing include/grid/abi.h for the model: one entry point
   per selected row of the signature table, and the rows themselves (meta.methods, grid_method(i)) with this
   robot's shapes and workspace.
   On success *source is a malloc'd NUL-terminated string (caller frees) of *len bytes.
   Deterministic: the same model and options always give the same bytes.
   The source is self-contained: it includes only <math.h>, <stddef.h> (and <omp.h> under
   _OPENMP, <cuda_runtime.h> on the CUDA target), never a grid header.
   Parts: large robots split into N parts so a build can use N cores. The first line of the
   source starts with the comment text "grid-rbd parts: N". Compiling the file once
   (GRID_PART undefined) builds the whole library; compiling it N times with -DGRID_PART=1
   .. -DGRID_PART=N into N objects and linking them builds the same library in parallel.
   Link with -lm (docs/emitter.md lists the compiler flags).
   Errors: GRID_ERR_ARG (bad options, non-finite model constant), GRID_ERR_NOMEM. */
int grid_emit_source(const grid_model *m, const grid_emit_options *o, char **source, size_t *len,
                     grid_error *err);

/* Per-algorithm size of the generated code: statements emitted for each algorithm's
   per-state functions (all variants summed: loads, arithmetic, stores) and the arithmetic
   of its main variant (RNEA: with a, without fext; FD, ABA: without fext). */
typedef struct {
    long statements[GRID_ALGO_COUNT];     /* emitted statements, every variant (indexed by row id) */
    long flops[GRID_ALGO_COUNT];          /* + - * / in the main variant */
    long transcendental[GRID_ALGO_COUNT]; /* sqrt sin cos atan2 in the main variant (a sincos pair counts 2) */
    int parts;                            /* parts the source splits into (see grid_emit_source) */
    int rolled[GRID_ALGO_COUNT];          /* 1: the algorithm got the rolled schedule */
    long work[GRID_ALGO_COUNT];           /* reals of workspace per state (rolled schedule; 0 unrolled) */
} grid_emit_stats;

/* Same as grid_emit_source, also filling stats (may be NULL). */
int grid_emit_source_stats(const grid_model *m, const grid_emit_options *o, char **source, size_t *len,
                           grid_emit_stats *stats, grid_error *err);

#ifdef __cplusplus
}
#endif
#endif
