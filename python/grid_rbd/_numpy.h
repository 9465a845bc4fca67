/* The numpy C API for the _core extension files: one shared API table (imported once, in _core.c's module init). */
#ifndef GRID_PY_NUMPY_H
#define GRID_PY_NUMPY_H

#define PY_ARRAY_UNIQUE_SYMBOL grid_rbd_core_ARRAY_API
#include <numpy/arrayobject.h>

/* _outpool.c: a fresh C-contiguous array for an output; large ones take their memory from the output pool */
PyObject *grid_py_outpool_new(int ndim, const npy_intp *dims, int type_num);

#endif
