/* The post-build self-check: a freshly compiled CPU library against the float64 reference before its cache entry is published. */
#ifndef GRID_SELFCHECK_H
#define GRID_SELFCHECK_H

#include <stddef.h>
#include "grid/model.h"
#include "grid/runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* what the check saw of one method */
typedef struct {
    const char *name;          /* the row's name */
    int checks;                /* library calls compared with the reference */
    int perturbed;             /* of those, how many needed the reference's round-off envelope */
    double worst_ratio;        /* the largest error / bound: <= 1 passes */
    double worst_relative;     /* the largest block error relative to the block's scale */
    int non_finite_reference;  /* blocks skipped: the reference is not finite there (a singular mass matrix) */
    int threaded;              /* 1: the threaded, streamed batch path ran; -1: skipped (time or memory) */
    double seconds;            /* the method's share of the check */
} grid_selfcheck_method;

typedef struct {
    int n_methods;
    double seconds;            /* the whole check */
    grid_selfcheck_method method[GRID_ALGO_COUNT];
} grid_selfcheck_report;

/* Run every method of lib (a CPU library opened to run) against grid_ref_batch in float64: every variant (each
   subset of the optional inputs absent), each attribute at its extremes and at every value (every frame), on 4
   fixed states, and the batch paths (one state, a tail, a threaded and streamed large batch) against the small
   batch. A block passes when its error is within a multiple of what rounding the problem in the library's
   dtype does to the reference at that state (src/runtime/selfcheck.c says how), so ill-conditioned robots are
   judged by what their dtype can deliver. GRID_OK, or GRID_ERR_BUILD naming the method, variant, attributes,
   the error, the round-off bound and the ways out. CUDA libraries pass unchecked (their code needs a GPU; the
   GPU tests cover it). report (may be NULL) receives what was seen. */
int grid_lib_selfcheck(const grid_lib *lib, const grid_model *m, grid_selfcheck_report *report, grid_error *err);

/* the report as one JSON object (written as selfcheck.json into the cache entry); its length, or -1 when cap
   is too small */
int grid_selfcheck_report_json(const grid_selfcheck_report *rep, int dtype, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
