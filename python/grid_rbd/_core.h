/* Declarations shared by the files of the grid_rbd._core extension: the Model, Runner and Library types, the provider table and the error bridge. */
#ifndef GRID_PY_CORE_H
#define GRID_PY_CORE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "grid/abi.h"
#include "grid/signature.h"
#include "grid/error.h"
#include "grid/model.h"
#include "grid/convention.h"
#include "grid/dispatch.h"

/* setup.py defines both at build time: the package version and a SHA-256 over the generator's sources */
#ifndef GRID_GENERATOR_HASH
#define GRID_GENERATOR_HASH "unknown"
#endif
#ifndef GRID_PACKAGE_VERSION
#define GRID_PACKAGE_VERSION "0.0.0"
#endif

/* _core.Model: an immutable parsed robot (owns one grid_model) */
typedef struct {
    PyObject_HEAD
    grid_model *model;   /* never NULL once constructed */
    PyObject *filename;  /* str used in error messages */
} GridPyModel;

/* A compute provider a Runner dispatches to is a grid_provider (grid/dispatch.h): one batch entry point per row of
   the signature table, NULL where the provider lacks the method (the float64 reference answers those). A generated
   robot.so is wrapped by passing a PyCapsule named GRID_PY_PROVIDER_CAPSULE that points at one of these to
   _core.Runner(model, dtype, provider=capsule, owner=lib); the Runner copies the table and keeps the capsule and
   owner alive for its lifetime. */
#define GRID_PY_PROVIDER_CAPSULE "grid_rbd._core.provider"

/* _threads.c: num_threads is 1..GRID_PY_MAX_THREADS (_core.MAX_THREADS); a call runs on min(num_threads, the CPUs of
   the process's affinity mask) threads, on one in a child forked after a multi-threaded call */
#define GRID_PY_MAX_THREADS 1024
int grid_py_threads_init(void);                             /* registers the fork handler; 0 or -1 with an exception */
int grid_py_threads_cpus(void);                             /* CPUs this process may run on, >= 1 */
int grid_py_threads_used(int requested, int cpus);          /* threads a large batch runs on now */
int grid_py_threads_for_call(int requested, int cpus);      /* the same, noting a multi-threaded call for fork */

/* _outpool.c: the cache of freed output blocks (numpy's allocator handler around our outputs only): set-up at module
   init (0 or -1 with an exception) and _core.output_pool() */
int grid_py_outpool_init(void);
extern PyMethodDef grid_py_outpool_functions[];

extern PyTypeObject GridPyModel_Type;
extern PyTypeObject GridPyRunner_Type;
extern PyTypeObject GridPyLibrary_Type;

/* module-level functions of _library.c (hashing, cache administration, the environment-knob table) */
extern PyMethodDef grid_py_library_functions[];

/* _cuda.c: adds cuda_probe(), CudaLibrary and PinnedBuffer to the module; 0 or -1 with an exception */
int grid_py_cuda_add(PyObject *m);

/* _core.c: a library's concrete row as {"name", "inputs": ((name, shape, optional), ...), "outputs", "attrs":
   ((name, lo, hi), ...), "work_bytes", "gpu_map"}, and its metadata as a dict ("methods": the row names) */
PyObject *grid_py_method_dict(const grid_method_info *r);
PyObject *grid_py_meta_dict(const grid_robot_meta_t *m);

/* _runner.c: what a Runner (o) runs calls on: its dispatch, its rows (the table's, with its model's shapes; GRID_ALGO_COUNT
   of them), dtype and threads; valid while o lives (0, or -1 with TypeError) */
int grid_py_runner_info(PyObject *o, const grid_dispatch **disp, const grid_method_info **rows, int *dtype,
                        int *num_threads, int *cpus);

/* _runner.c: row algo of Runner o on a batch of raw pointers in its dtype, no GIL held during the call (batch 0 runs
   nothing); 0, or -1 with an exception */
int grid_py_runner_run(PyObject *o, int algo, const void *const *in, void *const *out, Py_ssize_t batch,
                       const int *attr);

/* _tensors.c: _core.tensor_call (the PyTorch front end's eager path on CPU tensors); 0 or -1 with an exception */
int grid_py_tensors_init(void);
extern PyMethodDef grid_py_tensor_functions[];

/* _cuda.c: what a CudaLibrary (o) runs device-pointer calls on: its device dispatch and the function selecting the
   device its runtime launches on; valid while o lives (0, or -1 with TypeError) */
int grid_py_cuda_library_info(PyObject *o, const grid_dispatch **disp, int (**use_device)(int));

/* _xla.c: _core.xla_handlers() and xla_register(key, runner) (empty without jaxlib's FFI headers at build time, with
   grid_py_xla_available 0) */
extern PyMethodDef grid_py_xla_functions[];
extern int grid_py_xla_available;

/* Raise the Python exception that grid_rbd._errors maps this status to
   (filename may be NULL); always returns NULL so callers can `return grid_py_raise(...)`. */
PyObject *grid_py_raise(int code, int line, int column, const char *message, PyObject *filename);
/* The same from a filled grid_error: its path, hint and where_len become exception attributes
   (e.path / e.log_path, e.hint, the position prefix dropped). code is the status to raise (usually err->code).
   When a Python exception is already set (a cancelled build's KeyboardInterrupt), that one is kept. */
PyObject *grid_py_raise_error(int code, const grid_error *err, PyObject *filename);

#endif
