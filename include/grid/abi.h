/* The batch ABI every compute provider implements: the float64 reference and each generated robot.so. */
#ifndef GRID_ABI_H
#define GRID_ABI_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 2: calls pass arrays of inputs and outputs in the order of a method's signature row, and a library
   describes its methods with rows (grid_method_info) instead of a 32-bit mask */
#define GRID_ABI_VERSION 2

/* bounds of one signature row (include/grid/signature.h) */
#define GRID_MAX_IN 8     /* inputs of a method */
#define GRID_MAX_OUT 4    /* outputs of a method */
#define GRID_MAX_ATTR 4   /* integer attributes of a method (frame_jacobian: frame id, reference frame) */
#define GRID_MAX_RANK 4   /* per-state rank of one input or output (the batch axis not counted) */

/* reference frames for Jacobians, as Pinocchio defines them */
typedef enum {
    GRID_WORLD = 0,
    GRID_LOCAL = 1,
    GRID_LOCAL_WORLD_ALIGNED = 2
} grid_reference_frame;

/* element types */
typedef enum { GRID_FLOAT32 = 4, GRID_FLOAT64 = 8 } grid_dtype;

/* what a library is compiled for (grid_robot_meta_t.target): cc (C11, OpenMP batch loops) or nvcc (CUDA, one thread per
   state) */
typedef enum { GRID_TARGET_C = 0, GRID_TARGET_CUDA = 1 } grid_target;

/* how an absent optional input behaves (grid_arg_info.optional) */
enum { GRID_REQUIRED = 0, GRID_ABSENT_ZEROS = 1 };

/* how one state maps onto the GPU (grid_method_info.gpu_map); every method is THREAD today */
enum { GRID_GPU_THREAD = 0, GRID_GPU_WARP = 1, GRID_GPU_BLOCK = 2 };

/* One batched call of one method. Pointers are host pointers for CPU providers and device pointers
   for the CUDA entry points; arrays are dense and C-contiguous in the provider's dtype, batch on the
   leading axis, in the order of the method's row. in[k] is NULL for an absent optional input. */
typedef struct {
    const void *const *in;   /* n_in input arrays */
    void *const *out;        /* n_out output arrays */
    int n_in, n_out;         /* must equal the row's counts */
    long long batch;
    int attr[GRID_MAX_ATTR]; /* the row's attributes, in its order (unused slots 0) */
    int num_threads;         /* CPU: threads to use, <= 0 means the provider's default */
    void *work;              /* caller-owned workspace: work_bytes bytes, meta.work_bytes per thread used, aligned to
                                64 bytes (lane functions keep vectors there) */
    size_t work_bytes;       /* bytes at work (0 with work NULL when meta.work_bytes is 0) */
    void *stream;            /* CUDA entry points: the cudaStream_t to launch on (NULL = default stream) */
} grid_call;

/* status returned by every entry point: 0 ok, else a grid_status */
typedef int (*grid_batch_fn)(const grid_call *call);

/* one input or output of a method, concrete for one robot */
typedef struct {
    const char *name;             /* "q", "qd", "f_ext", "tau", ... */
    int rank;                     /* per-state rank */
    int shape[GRID_MAX_RANK];     /* per-state extents (unused slots 0) */
    long long width;              /* elements per state: the product of shape */
    int optional;                 /* GRID_REQUIRED, or how an absent input behaves (GRID_ABSENT_ZEROS) */
} grid_arg_info;

/* one method of one robot library: its signature row with concrete shapes and workspace */
typedef struct {
    const char *name;                        /* "rnea": entry points grid_<name>, grid_cuda_<name> */
    int n_in, n_out, n_attr;
    grid_arg_info in[GRID_MAX_IN];
    grid_arg_info out[GRID_MAX_OUT];
    const char *attr_name[GRID_MAX_ATTR];    /* "frame", "reference_frame" */
    int attr_lo[GRID_MAX_ATTR], attr_hi[GRID_MAX_ATTR];  /* valid values: lo <= attr < hi */
    size_t work_bytes;                       /* workspace per thread this method uses */
    int gpu_map;                             /* GRID_GPU_* */
} grid_method_info;

/* metadata a generated robot.so exports through grid_robot_meta() */
typedef struct {
    int abi_version;                  /* GRID_ABI_VERSION at generation */
    int nq, nv, nb, nframes, nee;
    int dtype;                        /* a grid_dtype */
    int target;                       /* a grid_target */
    int n_methods;                    /* the methods this library has, ... */
    const grid_method_info *methods;  /* ... one row each, in the package table's order */
    size_t work_bytes;                /* workspace per thread the caller passes (0 = none): the largest row's */
    const char *model_hash;           /* hex SHA-256 of the model the code was generated from */
} grid_robot_meta_t;

/* exported symbol names in a generated library:
     const grid_robot_meta_t *grid_robot_meta(void);
     int grid_n_methods(void);  const grid_method_info *grid_method(int i);   (the rows of meta, for any consumer)
     int grid_<name>(const grid_call *)          for every row (CPU, host pointers)
     int grid_cuda_<name>(const grid_call *)     CUDA target: device pointers, call->stream
   The package's own table of rows, and the ids GRID_ALGO_* of its rows, are in grid/signature.h. */

#ifdef __cplusplus
}
#endif
#endif
