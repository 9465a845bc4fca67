/* The CUDA target's batch wrappers: staged kernels, launchers, and the descriptions of host round trips the linked runtime (src/runtime/cuda_runtime.cu) runs. */
#ifndef GRID_EMIT_TARGET_CUDA_H
#define GRID_EMIT_TARGET_CUDA_H

#include "target.h"

/* the batch entry points of one algorithm: one kernel per distinct per-state function (one thread
   per state, inputs staged through shared memory per warp), grid_cuda_<name> (device pointers,
   call->stream) and grid_host_<name> / grid_<name> (host pointers: copy in, launch, copy out) */
void emit_cuda_batch(ew_writer *w, const emit_target *t, const emit_entry *e);
/* the CUDA target's entries of a row computed in float64 (emit_target.widened) */
void emit_cuda_widened(ew_writer *w, const emit_target *t, const grid_method_info *r);

/* written once, after the real type and before the parts: the tile macros and staging helpers (the knobs and
   the runtime's declarations come from cuda_host.h, which the CUDA includes name) */
void emit_cuda_helpers(ew_writer *w, const emit_target *t);

#endif
