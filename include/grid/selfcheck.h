/* The post-build self-check: a freshly compiled CPU library against the float64 reference before its cache entry is published. */
#ifndef GRID_SELFCHECK_H
#define GRID_SELFCHECK_H

#include "grid/model.h"
#include "grid/runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* the largest relative error (max |x - ref| / max |ref| per output block) the check accepts: 1e-9 in float64,
   1e-3 in float32 (the generated code is within about 1e-13 and 1e-5 on such states; a miscompiled library,
   e.g. under -ffast-math, is off by O(1)) */
double grid_selfcheck_tolerance(int dtype);

/* Run every method of lib (a CPU library opened to run) on 4 fixed states (moderate angles, unit quaternions,
   each attribute at its lowest and highest value) and compare with grid_ref_batch in float64. GRID_OK, or
   GRID_ERR_BUILD naming the method, the attribute setting and the error. CUDA libraries pass unchecked (their
   code needs a GPU; the GPU tests cover it). */
int grid_lib_selfcheck(const grid_lib *lib, const grid_model *m, grid_error *err);

#ifdef __cplusplus
}
#endif
#endif
