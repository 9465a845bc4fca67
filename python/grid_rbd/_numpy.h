/* The numpy C API for the _core extension files: one shared API table (imported once, in _core.c's module init). */
#ifndef GRID_PY_NUMPY_H
#define GRID_PY_NUMPY_H

#define PY_ARRAY_UNIQUE_SYMBOL grid_rbd_core_ARRAY_API
#include <numpy/arrayobject.h>

#endif
