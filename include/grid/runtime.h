/* Loading a generated robot.so: dlopen, metadata and ABI checks, entry-point lookup. */
#ifndef GRID_RUNTIME_H
#define GRID_RUNTIME_H

#include "grid/abi.h"
#include "grid/convention.h"
#include "grid/signature.h"
#include "grid/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* what the caller expects of the library; a field left at its "any" value is not checked */
typedef struct {
    int nq, nv, nb;            /* -1: any */
    int dtype;                 /* a grid_dtype, 0: any */
    int target;                /* 0 C, 1 CUDA, -1: any */
    const char *model_hash;    /* NULL: any */
    const int *methods;        /* ids of rows (grid/signature.h) that must be present ... */
    int n_methods;             /* ... and how many (0: none required) */
    int inspect_only;          /* 1: opened only to read metadata, no code runs; unloaded on close.
                                  0 (the default): opened to run, and never unloaded, because OpenMP
                                  worker threads must not outlive the libgomp the library pulled in */
} grid_lib_expect;

/* every field at "any" */
grid_lib_expect grid_lib_expect_any(void);

typedef struct grid_lib grid_lib;

/* dlopen(RTLD_NOW | RTLD_LOCAL) so_path, read grid_robot_meta(), check abi_version == GRID_ABI_VERSION and
   the expectations, check every row the library exports (meta.methods) against the package's signature
   table for the library's sizes (name, inputs, outputs, shapes, attributes: a row this grid-rbd does not
   know, or one that differs, is refused), and resolve grid_<name> for every row (and grid_cuda_<name> for a
   CUDA library). expect may be NULL (check the ABI and the rows only). Errors: GRID_ERR_LOAD naming the
   mismatch or the missing symbol, GRID_ERR_ARG, GRID_ERR_NOMEM. */
int grid_lib_open(const char *so_path, const grid_lib_expect *expect, grid_lib **lib, grid_error *err);
/* the same for the library open as fd (e.g. grid_build_result.so_fd, the robot.so it verified): loads exactly
   that file, through /proc/self/fd, whatever has happened to so_path since (so_path names it in messages and
   grid_lib_path). The same file loaded again reuses its mapping. fd stays the caller's; it may be closed once
   this returns. fd < 0 or no /proc: grid_lib_open(so_path, ...). */
int grid_lib_open_fd(int fd, const char *so_path, const grid_lib_expect *expect, grid_lib **lib, grid_error *err);

/* the host-pointer entry point of row algo, NULL when the library does not have it */
grid_batch_fn grid_lib_fn(const grid_lib *lib, int algo);
/* the device-pointer entry point of algo (CUDA libraries), NULL otherwise */
grid_batch_fn grid_lib_cuda_fn(const grid_lib *lib, int algo);
/* a CUDA library's grid_cuda_convention_call (its output-convention passes on the device), NULL otherwise */
grid_cuda_convention_fn grid_lib_cuda_convention(const grid_lib *lib);
/* the library's own row for package row algo (its concrete shapes and workspace), NULL when absent */
const grid_method_info *grid_lib_method(const grid_lib *lib, int algo);
const grid_robot_meta_t *grid_lib_meta(const grid_lib *lib);
const char *grid_lib_path(const grid_lib *lib);
/* dlclose and free (NULL is fine) */
void grid_lib_close(grid_lib *lib);

/* keep the OpenMP runtime lib runs its thread teams on loaded for the life of the process (RTLD_NODELETE), so a
   library that ran a team can be unloaded while the runtime's idle workers live on; 1 when pinned, 0 when the
   library has no OpenMP runtime */
int grid_lib_pin_openmp(const grid_lib *lib);

/* ---- the CUDA host runtime's sources (src/runtime/cuda_runtime.cu and what it includes), embedded in the
   library: a CUDA build writes them into the cache and compiles them once per toolchain (docs/cuda.md) ---- */
typedef struct {
    const char *path;   /* where the file goes, relative to the runtime's directory ("grid/abi.h", "cuda_runtime.cu") */
    const char *text;   /* its bytes (NUL-terminated) */
    size_t len;
} grid_source_file;

/* the files (static storage), their count returned; out may be NULL */
int grid_cuda_runtime_sources(const grid_source_file **out);
/* hex SHA-256 over the files' paths and bytes: part of the CUDA toolchain identity */
const char *grid_cuda_runtime_hash(void);

#ifdef __cplusplus
}
#endif
#endif
