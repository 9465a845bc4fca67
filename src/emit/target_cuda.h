/* The CUDA target's batch wrappers (staged kernels, launchers, host round trips) and the host runtime written into every .cu. */
#ifndef GRID_EMIT_TARGET_CUDA_H
#define GRID_EMIT_TARGET_CUDA_H

#include "target.h"

/* the batch entry points of one algorithm: one kernel per distinct per-state function (one thread
   per state, inputs staged through shared memory per warp), grid_cuda_<name> (device pointers,
   call->stream) and grid_host_<name> / grid_<name> (host pointers: copy in, launch, copy out) */
void emit_cuda_batch(ew_writer *w, const emit_target *t, const emit_entry *e);

/* written once, after the real type and before the parts: the launch configuration macros, the
   staging helpers and the host runtime (context, round trip, reserve, pinned memory, timing) */
void emit_cuda_helpers(ew_writer *w, const emit_target *t);

#endif
