/* Running one method: a loaded library's entry points or the float64 reference, in an output convention, on a context. */
#ifndef GRID_DISPATCH_H
#define GRID_DISPATCH_H

#include <stddef.h>
#include "grid/abi.h"
#include "grid/context.h"
#include "grid/convention.h"
#include "grid/error.h"
#include "grid/model.h"
#include "grid/runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A compute provider: one batch entry point per row of the signature table, NULL where it lacks the method (the
   float64 reference answers those, on host arrays). */
typedef struct {
    int abi_version;                      /* GRID_ABI_VERSION the entry points were built for */
    const char *name;                     /* human-readable, shown in handle reprs */
    int dtype;                            /* grid_dtype the entry points take */
    int nq, nv, nb, nee;                  /* must equal the model's sizes */
    int device;                           /* 1: the entry points take device pointers (grid_cuda_<name>) */
    size_t work_bytes;                    /* workspace one call gets (grid_call.work_bytes; 0 = none) */
    int work_threads;                     /* threads work_bytes covers (evenly); a call gets the share of the
                                             threads it runs on (0: all of work_bytes) */
    grid_batch_fn fns[GRID_ALGO_COUNT];   /* indexed by row id (grid/signature.h) */
    grid_cuda_convention_fn cuda_convention; /* a CUDA library's output-convention passes on the device (its host
                                                round trips convert there); NULL: the CPU converts (convention.c) */
} grid_provider;

/* a loaded library's entry points: host ones (device = 0; a CUDA library's are its host round trips) or a CUDA
   library's device ones (device = 1), with workspace for work_threads threads (the library's per-thread bytes
   times that; a device provider needs none). Errors: GRID_ERR_ARG (device entry points of a C library) */
int grid_provider_of_lib(const grid_lib *lib, int device, int work_threads, const char *name, grid_provider *p,
                         grid_error *err);

/* what one call runs on: the model (the reference answers what the provider lacks), a provider or none, the output
   convention; immutable once made, shared by concurrent calls (each brings its own context) */
typedef struct {
    const grid_model *model;
    int dtype;
    int has_provider;
    grid_provider provider;
    grid_convention conv;
} grid_dispatch;

/* p may be NULL (the reference for every method, host arrays); convention a grid_convention_kind; m may be NULL
   only for a device provider in GRID_CONVENTION_PINOCCHIO (nothing else runs then). Errors:
   GRID_ERR_LOAD (a provider of another ABI, dtype or size), GRID_ERR_ARG, the convention's */
int grid_dispatch_init(grid_dispatch *d, const grid_model *m, int dtype, const grid_provider *p, int convention,
                       grid_error *err);

/* the provider's entry point of row algo; NULL where the reference answers (it runs on one thread) */
grid_batch_fn grid_dispatch_entry(const grid_dispatch *d, int algo);
/* 1 when a call of algo needs a context: the provider's workspace, or the CPU scratch of a conversion */
int grid_dispatch_needs_context(const grid_dispatch *d, int algo);

/* Runs row algo on c (its in, out, n_in, n_out, batch, attr, num_threads and, for a device provider, stream): the
   workspace comes from ctx (c->work and work_bytes are set here; ctx may be NULL when the call needs none), the
   output convention is applied around the entry point (on the CPU, or on the device by a CUDA library). Returns
   GRID_OK or a status with err naming the method: GRID_ERR_UNSUPPORTED for a method the provider lacks on device
   arrays or the convention cannot convert, GRID_ERR_NOMEM, a provider's status. Thread-safe for distinct ctx. */
int grid_dispatch_run(const grid_dispatch *d, int algo, grid_call *c, grid_context *ctx, grid_error *err);

#ifdef __cplusplus
}
#endif
#endif
