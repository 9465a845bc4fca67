/* The batch ABI every compute provider implements: the float64 reference and each generated robot.so. */
#ifndef GRID_ABI_H
#define GRID_ABI_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GRID_ABI_VERSION 1

/* Algorithms, in a fixed order (bit i of an algorithm mask = algorithm i).
   Inputs/outputs per state (row-major, batch on the leading axis):
     RNEA            q(nq) v(nv) [a(nv)] [fext(6nb)]  -> tau(nv)      a NULL = zero acceleration
     NLE             q v                              -> (nv)         rnea(q, v, 0)
     GRAVITY         q                                -> (nv)         rnea(q, 0, 0)
     CRBA            q                                -> M(nv*nv)     full symmetric
     MINV            q                                -> Minv(nv*nv)  full symmetric
     FD              q v u(nv) [fext]                 -> qdd(nv)      M^-1 (u - rnea(q, v, 0, fext))
     ABA             q v u(nv) [fext]                 -> qdd(nv)
     FK              q                                -> (nb*16)      oMi of every body, 4x4 homogeneous row-major
     EE_POSE         q                                -> (6*nee)      [x y z roll pitch yaw] per end effector
     FRAME_JACOBIAN  q, frame, reference_frame        -> J(6*nv)      rows [lin; ang] */
typedef enum {
    GRID_ALGO_RNEA = 0,
    GRID_ALGO_NLE = 1,
    GRID_ALGO_GRAVITY = 2,
    GRID_ALGO_CRBA = 3,
    GRID_ALGO_MINV = 4,
    GRID_ALGO_FD = 5,
    GRID_ALGO_ABA = 6,
    GRID_ALGO_FK = 7,
    GRID_ALGO_EE_POSE = 8,
    GRID_ALGO_FRAME_JACOBIAN = 9,
    GRID_ALGO_COUNT = 10
} grid_algo;

/* reference frames for Jacobians, as Pinocchio defines them */
typedef enum {
    GRID_WORLD = 0,
    GRID_LOCAL = 1,
    GRID_LOCAL_WORLD_ALIGNED = 2
} grid_reference_frame;

/* element types */
typedef enum { GRID_FLOAT32 = 4, GRID_FLOAT64 = 8 } grid_dtype;

/* One batched call. Pointers are host pointers for CPU providers and device pointers
   for the CUDA entry points; arrays are dense and C-contiguous in the provider's dtype.
   Optional inputs (a, fext) may be NULL. */
typedef struct {
    const void *q;       /* (batch, nq) */
    const void *v;       /* (batch, nv) */
    const void *a;       /* (batch, nv): qdd for RNEA, u (torque) for FD/ABA */
    const void *fext;    /* (batch, 6*nb), body-local spatial forces [f; tau] */
    void *out;           /* (batch, output width) */
    long long batch;
    int frame;           /* FRAME_JACOBIAN: target frame id */
    int reference_frame; /* FRAME_JACOBIAN: a grid_reference_frame */
    int num_threads;     /* CPU: threads to use, <= 0 means the provider's default */
    void *work;          /* caller-owned workspace, meta.work_bytes * threads (may be NULL when that is 0) */
    void *stream;        /* CUDA entry points: the cudaStream_t to launch on (NULL = default stream) */
} grid_call;

/* status returned by every entry point: 0 ok, else a grid_status */
typedef int (*grid_batch_fn)(const grid_call *call);

/* metadata a generated robot.so exports through grid_robot_meta() */
typedef struct {
    int abi_version;          /* GRID_ABI_VERSION at generation */
    int nq, nv, nb, nframes, nee;
    int dtype;                /* a grid_dtype */
    int target;               /* 0 = CPU C, 1 = CUDA */
    unsigned algorithms;      /* bit mask of grid_algo present */
    size_t work_bytes;        /* workspace per thread the caller passes (0 = none) */
    const char *model_hash;   /* hex SHA-256 of the model the code was generated from */
} grid_robot_meta_t;

/* exported symbol names in a generated library:
     const grid_robot_meta_t *grid_robot_meta(void);
     int grid_<name>(const grid_call *)          for every algorithm in the mask (CPU, host pointers)
     int grid_cuda_<name>(const grid_call *)     CUDA target: device pointers, call->stream
   where <name> is grid_algo_name(algo). */
const char *grid_algo_name(int algo);   /* "rnea", "nle", "gravity", "crba", "minv", "fd", "aba", "fk", "ee_pose", "frame_jacobian" */
int grid_algo_from_name(const char *name); /* -1 if unknown */

/* per-state output width in elements for a model of these sizes */
long long grid_algo_output_width(int algo, int nq, int nv, int nb, int nee);

#ifdef __cplusplus
}
#endif
#endif
