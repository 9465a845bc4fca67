/* Output conventions: the per-state basis change between Pinocchio's coordinates, which every kernel computes in, and MuJoCo's, applied at the runtime boundary. */
#ifndef GRID_CONVENTION_H
#define GRID_CONVENTION_H

/* Pinocchio (the kernels): floating base q = [p, qx qy qz qw, ...], v = [v_lin body, omega body, ...].
   MuJoCo: q = [p, qw qx qy qz, ...], v = [v_lin world, omega body, ...]; ball joints q = [qw qx qy qz].
   With R the base rotation and T = blockdiag(R^T, I) (v_pin = T v_mj; T is orthogonal):
     tau_mj = T^T tau_pin                  (rnea, gravity; u_pin = T u_mj for fd / aba)
     qdd_pin = T qdd_mj + Tdot v_mj        (Tdot v_mj = [-omega x v_lin_body; 0])
     nle_mj = T^T rnea_pin(q, T v, Tdot v) (the bias of MuJoCo's coordinates, not T^T nle_pin)
     M_mj = T^T M_pin T,  Minv_mj = T^T Minv_pin T,  J_mj = J_pin T (every reference frame)
   Derivatives are taken along MuJoCo's tangent (mj_integratePos: p += dp in the world, the quaternion times
   exp(dtheta) in the body), which is Pinocchio's local tangent through T; the chain rule through T(q), the
   acceleration's Tdot v and the inputs' conversion adds terms that need the primal output (tau or qdd) and M or
   M^-1: the job runs those rows too (aux) and the post pass combines them (docs/conventions.md writes it out).
   Placements (fk, ee_pose) are world quantities and only need q converted. f_ext stays body-local wrenches.
   The CUDA runtime includes this header with GRID_CONV_TYPES_ONLY (the types, no host API). */

#include "grid/abi.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { GRID_CONVENTION_PINOCCHIO = 0, GRID_CONVENTION_MUJOCO = 1 } grid_convention_kind;

/* a joint whose coordinates differ between the conventions (every other joint is the identity) */
enum {
    GRID_CONV_FREE = 1, /* q[iq+3..6] xyzw <-> wxyz; v[iv..iv+2] body <-> world */
    GRID_CONV_BALL = 2  /* q[iq..iq+3] xyzw <-> wxyz; v local angular velocity in both */
};

/* the most non-identity joints one convention holds (passed by value to the CUDA kernels) */
#define GRID_CONV_MAX_BLOCKS 64

typedef struct {
    int kind;   /* GRID_CONV_FREE / GRID_CONV_BALL */
    int iq, iv; /* the joint's offsets in q and v */
} grid_conv_block;

/* a model's convention, from its per-joint data: immutable once built, shared by every call */
typedef struct {
    int kind;       /* grid_convention_kind */
    int nq, nv, nb, nee, nframes; /* the model's sizes (the rows' shapes) */
    int n_blocks;   /* 0: the identity (Pinocchio's, or a robot with only revolute and prismatic joints) */
    int n_free;     /* free-flyer blocks among them (they make Tdot nonzero) */
    grid_conv_block block[GRID_CONV_MAX_BLOCKS];
} grid_convention;

/* what an input of the row that runs is, for the conversion */
enum {
    GRID_CONV_IN_PASS = 0, /* passed through unchanged (f_ext: body-local wrenches) */
    GRID_CONV_IN_Q,        /* configuration */
    GRID_CONV_IN_V,        /* velocity: v_pin = T v */
    GRID_CONV_IN_A,        /* acceleration: a_pin = T a + Tdot v */
    GRID_CONV_IN_U,        /* generalised force: u_pin = T u */
    GRID_CONV_IN_G         /* a VJP's cotangent of a torque or an acceleration: g_pin = T g, as u */
};

/* what the output is (one output per row today) */
enum {
    GRID_CONV_OUT_NONE = 0, /* world quantities: unchanged */
    GRID_CONV_OUT_TAU,      /* generalised force: T^T tau */
    GRID_CONV_OUT_QDD,      /* acceleration: T^T (qdd_pin - Tdot v) */
    GRID_CONV_OUT_MAT,      /* nv x nv: T^T X T (M and Minv alike, T being orthogonal) */
    GRID_CONV_OUT_JAC,      /* rows x nv: X T */
    GRID_CONV_OUT_COR,      /* nv x nv Coriolis matrix: T^T (C T + M Tdot) (aux: M), so that C qd is MuJoCo's bias */
    GRID_CONV_OUT_JDOT,     /* rows x nv rate of a Jacobian along qd: Jdot T + J Tdot (aux: the row giving J) */
    /* the derivatives (last: the post pass tests >= GRID_CONV_OUT_DTAU) */
    GRID_CONV_OUT_DTAU,     /* nv x 2nv [dtau/dq | dtau/dv] (aux: tau, M) */
    GRID_CONV_OUT_DQDD,     /* nv x 2nv [dqdd/dq | dqdd/dv] (aux: qdd, Minv) */
    GRID_CONV_OUT_VJP_TAU,  /* 2nv g^T [dtau/dq | dtau/dv] (aux: tau, M) */
    GRID_CONV_OUT_VJP_QDD   /* 3nv g^T [dqdd/dq | dqdd/dv | dqdd/du] (aux: qdd) */
};

/* the most extra rows a job runs beside its own */
#define GRID_CONV_MAX_AUX 2

/* One call's conversion: the row that runs (NLE on a free flyer runs as RNEA with MuJoCo's zero acceleration),
   what each of its inputs is and where it comes from, and what its output is. */
typedef struct {
    grid_convention cv;
    int algo;                 /* the row the caller asked for */
    int run_algo;             /* the row that runs */
    int n_in;                 /* the run row's inputs */
    int role[GRID_MAX_IN];    /* GRID_CONV_IN_* of each */
    int src[GRID_MAX_IN];     /* the caller's input feeding it; -1: absent (NULL to the run row) */
    int slot_q, slot_v, slot_a, slot_u, slot_g; /* the run row's input of each role, -1: none */
    int a_zero;               /* the acceleration is built from zero in MuJoCo's basis (slot_a set, no source) */
    int out_kind;             /* GRID_CONV_OUT_* */
    int out_rows;             /* the output per state is out_rows x nv (vectors: 1; a generalised force nv x columns) */
    long long out_width;      /* elements of the output per state */
    int n_out;                /* the row's outputs: output k converts as part_kind[k], part_rows[k], part_width[k] (part
                                 0 is out_kind, out_rows, out_width; grid_conv_job_part gives output k's job) */
    int part_kind[GRID_MAX_OUT], part_rows[GRID_MAX_OUT];
    long long part_width[GRID_MAX_OUT];
    int n_aux;                        /* rows run beside it on the same converted inputs (0 without a free flyer) */
    int aux[GRID_CONV_MAX_AUX];       /* their rows: the primal output, then M or Minv */
    int aux_n_in[GRID_CONV_MAX_AUX];            /* their inputs */
    int aux_in[GRID_CONV_MAX_AUX][GRID_MAX_IN]; /* each aux input: the run row's input of the same name, -1 */
    long long aux_width[GRID_CONV_MAX_AUX];     /* their output 0's elements per state (what the post pass reads) */
    int aux_n_out[GRID_CONV_MAX_AUX];           /* their outputs (an aux row may have several: ccrba's A and h) */
    long long aux_part[GRID_CONV_MAX_AUX][GRID_MAX_OUT]; /* each output's elements per state */
    long long aux_total[GRID_CONV_MAX_AUX];     /* all of them: a chunk of k states takes k aux_total, output o's
                                                   block at k (aux_part[0] + ... + aux_part[o - 1]) */
    int aux_attr[GRID_CONV_MAX_AUX][GRID_MAX_ATTR]; /* each aux attribute: the run row's of the same name, -1: 0 */
} grid_conv_job;

/* the attributes of aux row x from the call's (a Jacobian's rate runs its Jacobian at the same frame) */
static inline void grid_conv_aux_attrs(const grid_conv_job *j, int x, const int *attr, int out[GRID_MAX_ATTR])
{
    for (int s = 0; s < GRID_MAX_ATTR; s++) out[s] = j->aux_attr[x][s] >= 0 ? attr[j->aux_attr[x][s]] : 0;
}

/* j for output k of its row (the post pass of that output): j with out_kind, out_rows, out_width of part k */
static inline void grid_conv_job_part(const grid_conv_job *j, int k, grid_conv_job *part)
{
    *part = *j;
    part->out_kind = j->part_kind[k];
    part->out_rows = j->part_rows[k];
    part->out_width = j->part_width[k];
}

/* a CUDA robot.so's grid_cuda_convention_call (cuda_runtime.cu): job's run row through fns[0], the host round trip
   grid_<row> (host != 0, a job without aux rows: the chunks' device buffers converted in place) or the kernels
   grid_cuda_<row> on device arrays (host == 0: fns[1 ..] the aux rows' grid_cuda_<row>; converted inputs and aux
   outputs in stream-ordered scratch, nothing synchronised); 0 or a status */
typedef int (*grid_cuda_convention_fn)(const grid_conv_job *j, const grid_batch_fn *fns, const grid_call *c, int host);

#ifdef __cplusplus
}
#endif
#endif

/* the host API (not in the CUDA runtime, which defines GRID_CONV_TYPES_ONLY; a later inclusion without it adds it) */
#if !defined(GRID_CONV_TYPES_ONLY) && !defined(GRID_CONVENTION_API_H)
#define GRID_CONVENTION_API_H
#include "grid/context.h"
#include "grid/error.h"
#include "grid/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The convention of kind for model m, from its per-joint data (joint type, iq, iv). GRID_OK, or GRID_ERR_ARG with
   the reason in err: an unknown kind, or a model the convention cannot express (coupled joints, more than
   GRID_CONV_MAX_BLOCKS free and ball joints). */
int grid_convention_init(grid_convention *cv, const grid_model *m, int kind, grid_error *err);

/* The rows row algo runs besides or instead of its own in MuJoCo's convention on a free flyer (a derivative's aux
   rows; RNEA for NLE) into aux; their count (0: none, or an unknown row). A library built for a subset of the
   methods needs them too. */
int grid_convention_aux_rows(int algo, int aux[GRID_CONV_MAX_AUX]);

/* 1 when calls need no conversion at all */
static inline int grid_convention_identity(const grid_convention *cv) { return cv->n_blocks == 0; }

/* The job of one call of row algo whose inputs are in[0 .. row inputs - 1] (NULL: absent): GRID_OK, GRID_ERR_ARG
   (unknown row), GRID_ERR_UNSUPPORTED (a row without a stated conversion). */
int grid_convention_job(const grid_convention *cv, int algo, const void *const *in, grid_conv_job *job);

/* the per-state passes (float64, float32). pre: the caller's q (and v, a, u: NULL where the job has no such input;
   a NULL with a_zero; g the cotangent) into Pinocchio's qp, vp, ap, up, gp (separate arrays, or the same ones: in
   place); post: the output in place, from the converted inputs of its state (ap, up, gp as the job has them) and
   its aux outputs (x[k] for aux row k). */
void grid_conv_pre_d(const grid_conv_job *j, const double *q, const double *v, const double *a, const double *u,
                     const double *g, double *qp, double *vp, double *ap, double *up, double *gp);
void grid_conv_post_d(const grid_conv_job *j, const double *qp, const double *vp, const double *ap, const double *up,
                      const double *gp, const double *const *x, double *out);
void grid_conv_pre_f(const grid_conv_job *j, const float *q, const float *v, const float *a, const float *u,
                     const float *g, float *qp, float *vp, float *ap, float *up, float *gp);
void grid_conv_post_f(const grid_conv_job *j, const float *qp, const float *vp, const float *ap, const float *up,
                      const float *gp, const float *const *x, float *out);

/* runs row algo of the provider (or the reference) on a batch: GRID_OK or a status */
typedef int (*grid_conv_run_fn)(void *user, int algo, const grid_call *c);

/* A whole call in the convention: on up to c->num_threads threads (each over a contiguous slice of the batch, the
   calling thread one of them), per chunk of states (chunk_states, or 0: sized to stay in cache) the inputs
   converted into scratch from ctx, run(user, row, chunk call on one thread with the thread's part of c->work) for
   the job's aux rows and then its run row, the output converted in place. c is
   the caller's call (its row's inputs, dtype elements); an output that is exactly an input is fine (every state is
   converted before it runs). Each state's result depends on that state alone: bitwise the same for any batch size,
   chunking or thread count. run must be safe to call from several threads at once. */
int grid_convention_call(const grid_convention *cv, int algo, int dtype, const grid_call *c, grid_context *ctx,
                         grid_conv_run_fn run, void *user, long long chunk_states);

#ifdef __cplusplus
}
#endif
#endif
