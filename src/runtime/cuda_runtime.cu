/* The CUDA host runtime linked into every CUDA robot.so: one context per library (stream, device buffers, pinned staging) behind a mutex, host round trips, reservations, the output conventions' device passes, pinned memory, timing and error messages. */
/* Compiled once per toolchain (nvcc, arch, flags) into the cache by src/driver/cuda_rt.c, never by the plain C
   build. The arithmetic of the round trips is cuda_plan.c, compiled here as part of this translation unit. */
#include <assert.h>
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "cuda_host.h"
#include "cuda_plan.c"
#define GRID_CONV_TYPES_ONLY
#include "grid/convention.h"

/* the last CUDA failure of this thread, for grid_cuda_last_error */
static thread_local char grid_cuda_msg_[256];

extern "C" GRID_CUDA_HIDDEN int grid_cuda_fail_(int e, const char *what)
{
    const cudaError_t ce = (cudaError_t)e;
    snprintf(grid_cuda_msg_, sizeof grid_cuda_msg_, "%s failed: %s (%s)", what, cudaGetErrorString(ce),
             cudaGetErrorName(ce));
    return 11; /* GRID_ERR_CUDA */
}

/* the message of this thread's last failed CUDA call, NUL-terminated in buf */
extern "C" __attribute__((visibility("default"))) int grid_cuda_last_error(char *buf, size_t cap)
{
    if (!buf || cap == 0) return 7;
    snprintf(buf, cap, "%s", grid_cuda_msg_[0] ? grid_cuda_msg_ : "no CUDA failure recorded on this thread");
    return 0;
}

/* the knobs this runtime was compiled with, for the plan */
static const grid_cuda_knobs grid_knobs_ = {(long long)GRID_CUDA_CHUNK_BYTES, (long long)GRID_CUDA_ZERO_COPY_MAX,
                                            (long long)GRID_CUDA_WORK_MAX, GRID_CUDA_PACK_INPUTS,
                                            (long long)GRID_CUDA_CHUNK_MIN_STATES};

typedef struct {
    pthread_mutex_t lock;
    int ready;              /* stream and events exist */
    int device;             /* the device they belong to */
    cudaStream_t stream;    /* non-blocking: never waits on the legacy default stream */
    cudaStream_t out_stream; /* a call of several chunks: the outputs' copies out, beside the next chunk's kernel */
    cudaEvent_t staged[2];  /* recorded after the copy that read each half of the pinned staging */
    cudaEvent_t computed[2], drained[2]; /* after the kernel that wrote each half of dout, the copy that read it */
    char *din, *dout;       /* device buffers: a chunk's inputs (in the row's order) and outputs */
    size_t din_bytes, dout_bytes;
    char *dws;              /* device workspace of rolled functions: a launch's states in flight x work bytes */
    size_t dws_bytes;
    char *hin;              /* pinned staging of inputs, two halves of hin_bytes / 2 */
    size_t hin_bytes;
    char *hz, *hz_dev;      /* zero-copy calls: mapped pinned inputs then outputs, and its device address */
    size_t hz_bytes;
} grid_cuda_ctx_;

static grid_cuda_ctx_ grid_ctx_ = {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, 0, {0, 0}, {0, 0}, {0, 0}, 0, 0, 0, 0, 0, 0,
                                    0, 0, 0, 0, 0};

/* the context's stream and events, created on the current device at first use (lock held) */
static int grid_ctx_ready_(void)
{
    cudaError_t e;
    if (grid_ctx_.ready) {
        e = cudaSetDevice(grid_ctx_.device);
        return e == cudaSuccess ? 0 : grid_cuda_fail_(e, "cudaSetDevice");
    }
    if ((e = cudaGetDevice(&grid_ctx_.device)) != cudaSuccess) return grid_cuda_fail_(e, "cudaGetDevice");
    if ((e = cudaStreamCreateWithFlags(&grid_ctx_.stream, cudaStreamNonBlocking)) != cudaSuccess)
        return grid_cuda_fail_(e, "cudaStreamCreateWithFlags");
    if ((e = cudaStreamCreateWithFlags(&grid_ctx_.out_stream, cudaStreamNonBlocking)) != cudaSuccess) {
        cudaStreamDestroy(grid_ctx_.stream);
        return grid_cuda_fail_(e, "cudaStreamCreateWithFlags");
    }
    cudaEvent_t *ev[6] = {&grid_ctx_.staged[0], &grid_ctx_.staged[1], &grid_ctx_.computed[0], &grid_ctx_.computed[1],
                          &grid_ctx_.drained[0], &grid_ctx_.drained[1]};
    for (int h = 0; h < 6; h++)
        if ((e = cudaEventCreateWithFlags(ev[h], cudaEventDisableTiming)) != cudaSuccess) {
            for (int j = 0; j < h; j++) cudaEventDestroy(*ev[j]);
            cudaStreamDestroy(grid_ctx_.out_stream);
            cudaStreamDestroy(grid_ctx_.stream);
            return grid_cuda_fail_(e, "cudaEventCreateWithFlags");
        }
    grid_ctx_.ready = 1;
    return 0;
}

/* a device buffer of at least need bytes (the old contents are not kept; grow-only) */
static int grid_dev_grow_(char **p, size_t *have, size_t need)
{
    if (*have >= need) return 0;
    if (*p) cudaFree(*p);
    *p = NULL;
    *have = 0;
    const cudaError_t e = cudaMalloc((void **)p, need);
    if (e != cudaSuccess) {
        char what[96];
        *p = NULL;
        (void)cudaGetLastError(); /* an allocation failure is not sticky: clear it */
        snprintf(what, sizeof what, "cudaMalloc of %zu bytes", need);
        return grid_cuda_fail_(e, what);
    }
    *have = need;
    return 0;
}

/* a pinned host buffer of at least need bytes */
static int grid_pinned_grow_(char **p, size_t *have, size_t need)
{
    if (*have >= need) return 0;
    if (*p) cudaFreeHost(*p);
    *p = NULL;
    *have = 0;
    const cudaError_t e = cudaHostAlloc((void **)p, need, cudaHostAllocPortable);
    if (e != cudaSuccess) {
        char what[96];
        *p = NULL;
        (void)cudaGetLastError();
        snprintf(what, sizeof what, "cudaHostAlloc of %zu bytes", need);
        return grid_cuda_fail_(e, what);
    }
    *have = need;
    return 0;
}

/* mapped pinned memory of at least need bytes for zero-copy calls, with its device address */
static int grid_mapped_grow_(size_t need)
{
    if (grid_ctx_.hz_bytes >= need) return 0;
    if (grid_ctx_.hz) cudaFreeHost(grid_ctx_.hz);
    grid_ctx_.hz = grid_ctx_.hz_dev = NULL;
    grid_ctx_.hz_bytes = 0;
    void *h = NULL, *d = NULL;
    cudaError_t e = cudaHostAlloc(&h, need, cudaHostAllocPortable | cudaHostAllocMapped);
    if (e == cudaSuccess && (e = cudaHostGetDevicePointer(&d, h, 0)) != cudaSuccess) cudaFreeHost(h);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return grid_cuda_fail_(e, "mapped cudaHostAlloc for a zero-copy call");
    }
    grid_ctx_.hz = (char *)h;
    grid_ctx_.hz_dev = (char *)d;
    grid_ctx_.hz_bytes = need;
    return 0;
}

/* ---- output conventions (grid/convention.h): the per-state passes of conv_state.h as kernels, one thread per
   state, before and after a method's kernels; the job (its per-joint blocks) is a kernel argument ---- */
#define GRID_CV_FN static __device__
#define GRID_CV_REAL double
#define GRID_CV_NAME(x) grid_cv_d_##x
#include "conv_state.h"
#undef GRID_CV_REAL
#undef GRID_CV_NAME
#define GRID_CV_REAL float
#define GRID_CV_NAME(x) grid_cv_f_##x
#include "conv_state.h"
#undef GRID_CV_REAL
#undef GRID_CV_NAME
#undef GRID_CV_FN

/* state s of an array of w elements per state, NULL when absent */
#define GRID_CV_AT(p, s, w) ((p) ? (p) + (s) * (w) : NULL)
/* the pre and post kernels of one real type; x0, x1: the aux rows' outputs (aux_width[k] per state) */
#define GRID_CV_KERNELS(sfx, real)                                                                                   \
    static __global__ void grid_k_conv_pre_##sfx##_(const __grid_constant__ grid_conv_job j, long long n,           \
                                                    const real *q, const real *v, const real *a, const real *u,    \
                                                    const real *g, real *qp, real *vp, real *ap, real *up,         \
                                                    real *gp)                                                      \
    {                                                                                                               \
        const long long s = (long long)blockIdx.x * blockDim.x + threadIdx.x, nq = j.cv.nq, nv = j.cv.nv;           \
        if (s >= n) return;                                                                                         \
        grid_cv_##sfx##_pre(&j, q + s * nq, GRID_CV_AT(v, s, nv), GRID_CV_AT(a, s, nv), GRID_CV_AT(u, s, nv),       \
                            GRID_CV_AT(g, s, nv), qp + s * nq, GRID_CV_AT(vp, s, nv), GRID_CV_AT(ap, s, nv),        \
                            GRID_CV_AT(up, s, nv), GRID_CV_AT(gp, s, nv));                                          \
    }                                                                                                               \
    static __global__ void grid_k_conv_post_##sfx##_(const __grid_constant__ grid_conv_job j, long long n,          \
                                                     const real *qp, const real *vp, const real *ap,               \
                                                     const real *up, const real *gp, const real *x0,               \
                                                     const real *x1, real *out)                                    \
    {                                                                                                               \
        const long long s = (long long)blockIdx.x * blockDim.x + threadIdx.x, nv = j.cv.nv;                        \
        if (s >= n) return;                                                                                         \
        const real *x[2] = {GRID_CV_AT(x0, s, j.aux_width[0]), GRID_CV_AT(x1, s, j.aux_width[1])};                  \
        grid_cv_##sfx##_post(&j, qp + s * j.cv.nq, GRID_CV_AT(vp, s, nv), GRID_CV_AT(ap, s, nv),                    \
                             GRID_CV_AT(up, s, nv), GRID_CV_AT(gp, s, nv), x, out + s * j.out_width);               \
    }
GRID_CV_KERNELS(d, double)
GRID_CV_KERNELS(f, float)

/* the job of the host round trip running on this thread (grid_cuda_convention_call sets it around the call) */
static thread_local const grid_conv_job *grid_conv_job_;

/* The input passes over n states on stream s: q, v, a, u, g (device, NULL where the job has none; a NULL with
   a_zero) into qp, vp, ap, up, gp (the same arrays: in place). real_bytes is the library's element size. */
static int grid_conv_pre_(const grid_conv_job *j, int real_bytes, long long n, const void *const in[5],
                          void *const cv[5], cudaStream_t s)
{
    if (n <= 0) return 0;
    const unsigned blocks = (unsigned)((n + GRID_CUDA_BLOCK - 1) / GRID_CUDA_BLOCK);
    if (real_bytes == 8)
        grid_k_conv_pre_d_<<<blocks, GRID_CUDA_BLOCK, 0, s>>>(
            *j, n, (const double *)in[0], (const double *)in[1], (const double *)in[2], (const double *)in[3],
            (const double *)in[4], (double *)cv[0], (double *)cv[1], (double *)cv[2], (double *)cv[3], (double *)cv[4]);
    else
        grid_k_conv_pre_f_<<<blocks, GRID_CUDA_BLOCK, 0, s>>>(
            *j, n, (const float *)in[0], (const float *)in[1], (const float *)in[2], (const float *)in[3],
            (const float *)in[4], (float *)cv[0], (float *)cv[1], (float *)cv[2], (float *)cv[3], (float *)cv[4]);
    const cudaError_t e = cudaGetLastError();
    return e == cudaSuccess ? 0 : grid_cuda_fail_(e, "launching the output convention's input pass");
}

/* the output pass over n states on stream s: out in place, from the converted inputs cv (q, v, a, u, g) and the
   aux rows' outputs x */
static int grid_conv_post_(const grid_conv_job *j, int real_bytes, long long n, void *const cv[5],
                           void *const x[GRID_CONV_MAX_AUX], void *out, cudaStream_t s)
{
    if (n <= 0 || j->out_kind == GRID_CONV_OUT_NONE) return 0;
    const unsigned blocks = (unsigned)((n + GRID_CUDA_BLOCK - 1) / GRID_CUDA_BLOCK);
    if (real_bytes == 8)
        grid_k_conv_post_d_<<<blocks, GRID_CUDA_BLOCK, 0, s>>>(*j, n, (const double *)cv[0], (const double *)cv[1],
                                                               (const double *)cv[2], (const double *)cv[3],
                                                               (const double *)cv[4], (const double *)x[0],
                                                               (const double *)x[1], (double *)out);
    else
        grid_k_conv_post_f_<<<blocks, GRID_CUDA_BLOCK, 0, s>>>(*j, n, (const float *)cv[0], (const float *)cv[1],
                                                               (const float *)cv[2], (const float *)cv[3],
                                                               (const float *)cv[4], (const float *)x[0],
                                                               (const float *)x[1], (float *)out);
    const cudaError_t e = cudaGetLastError();
    return e == cudaSuccess ? 0 : grid_cuda_fail_(e, "launching the output convention's output pass");
}

/* the output pass of every output of j's row (out[k]: output k's n states) */
static int grid_conv_post_all_(const grid_conv_job *j, int real_bytes, long long n, void *const cv[5],
                               void *const x[GRID_CONV_MAX_AUX], void *const *out, cudaStream_t s)
{
    if (j->n_out <= 1) return grid_conv_post_(j, real_bytes, n, cv, x, out[0], s);
    int rc = 0;
    for (int k = 0; !rc && k < j->n_out; k++) {
        grid_conv_job part;
        grid_conv_job_part(j, k, &part);
        rc = grid_conv_post_(&part, real_bytes, n, cv, x, out[k], s);
    }
    return rc;
}

/* input slot k of a call, NULL when k < 0 */
static const void *grid_conv_in_(const void *const *in, int k) { return k >= 0 ? in[k] : NULL; }

/* the launch of one chunk of k states: device inputs d[] (NULL where absent), outputs od[], the workspace */
static int grid_launch_(const grid_call *c, const grid_io_ *io, const grid_cuda_plan *p, char *const *d,
                        char *const *od, long long k)
{
    const void *din[GRID_MAX_IN] = {0};
    void *dout[GRID_MAX_OUT] = {0};
    for (int j = 0; j < io->n_in; j++) din[j] = p->row[j] ? d[j] : NULL;
    for (int j = 0; j < io->n_out; j++) dout[j] = od[j];
    grid_call dc = *c;
    dc.in = din;
    dc.out = dout;
    dc.batch = k;
    dc.work = p->work_b ? grid_ctx_.dws : NULL;
    dc.work_bytes = p->work_b ? grid_ctx_.dws_bytes : 0;
    dc.stream = (void *)grid_ctx_.stream;
    /* a convention's passes on this chunk's device buffers, in place: the inputs before, the output after */
    const grid_conv_job *j = grid_conv_job_;
    if (!j) return io->launch(&dc);
    assert(j->n_aux == 0); /* a job with aux rows runs through the device path (grid_cuda_convention_call) */
    const int slots[5] = {j->slot_q, j->slot_v, j->slot_a, j->slot_u, j->slot_g};
    void *cv[5];
    const void *src[5];
    for (int k2 = 0; k2 < 5; k2++) src[k2] = cv[k2] = slots[k2] >= 0 ? d[slots[k2]] : NULL;
    if (j->a_zero) src[2] = NULL;
    void *const none[GRID_CONV_MAX_AUX] = {NULL};
    int rc = grid_conv_pre_(j, io->real_bytes, k, src, cv, grid_ctx_.stream);
    if (!rc) rc = io->launch(&dc);
    if (!rc) rc = grid_conv_post_all_(j, io->real_bytes, k, cv, none, dout, grid_ctx_.stream);
    return rc;
}

/* A small call without copies (GRID_CUDA_ZERO_COPY_MAX): the inputs are gathered into mapped pinned memory,
   the kernel reads them and writes its outputs there over the bus, and the outputs are copied into c->out
   after the synchronisation (lock held, context ready). */
static int grid_zero_copy_(const grid_call *c, const grid_io_ *io, const grid_cuda_plan *p)
{
    const long long n = c->batch;
    int rc = grid_mapped_grow_(p->hz_bytes);
    if (!rc) rc = grid_dev_grow_(&grid_ctx_.dws, &grid_ctx_.dws_bytes, p->dws_bytes);
    if (rc) return rc;
    char *d[GRID_MAX_IN], *od[GRID_MAX_OUT];
    const size_t out_at = grid_cuda_in_offset(p, io->n_in, n);
    for (int j = 0; j < io->n_in; j++) {
        const size_t at = grid_cuda_in_offset(p, j, n);
        d[j] = grid_ctx_.hz_dev + at;
        if (p->row[j]) memcpy(grid_ctx_.hz + at, c->in[j], (size_t)n * p->row[j]);
    }
    for (int j = 0; j < io->n_out; j++) od[j] = grid_ctx_.hz_dev + out_at + grid_cuda_out_offset(p, j, n);
    if ((rc = grid_launch_(c, io, p, d, od, n))) return rc;
    const cudaError_t e = cudaStreamSynchronize(grid_ctx_.stream);
    if (e != cudaSuccess) return grid_cuda_fail_(e, "cudaStreamSynchronize after a zero-copy kernel");
    for (int j = 0; j < io->n_out; j++)
        memcpy(c->out[j], grid_ctx_.hz + out_at + grid_cuda_out_offset(p, j, n), (size_t)n * p->orow[j]);
    return 0;
}

/* One host round trip on the context's stream: per chunk, the inputs are copied in (gathered in pinned
   memory, one copy, when GRID_CUDA_PACK_INPUTS), the kernel runs and the outputs are copied straight
   into c->out; the streams are drained before the lock is released. A call of several chunks alternates
   between two halves of the device outputs and copies each chunk's out on out_stream, so that copy runs
   beside the next chunk's kernel (which waits for the copy of the half it overwrites). Non-zero on any
   failure. */
extern "C" GRID_CUDA_HIDDEN int grid_cuda_round_trip_(const grid_call *c, const grid_io_ *io)
{
    grid_cuda_plan p;
    grid_cuda_plan_call(io, c->batch, &grid_knobs_, &p);
    const long long n = c->batch, chunk = p.chunk;
    int rc, pack = p.pack;
    cudaError_t e;
    pthread_mutex_lock(&grid_ctx_.lock);
    rc = grid_ctx_ready_();
    if (!rc && p.zero_copy) {
        rc = grid_zero_copy_(c, io, &p);
        pthread_mutex_unlock(&grid_ctx_.lock);
        return rc;
    }
    if (!rc) rc = grid_dev_grow_(&grid_ctx_.din, &grid_ctx_.din_bytes, p.din_bytes);
    if (!rc) rc = grid_dev_grow_(&grid_ctx_.dout, &grid_ctx_.dout_bytes, p.dout_bytes);
    if (!rc) rc = grid_dev_grow_(&grid_ctx_.dws, &grid_ctx_.dws_bytes, p.dws_bytes);
    /* no pinned memory to be had: copy each array from where it is */
    if (!rc && pack && grid_pinned_grow_(&grid_ctx_.hin, &grid_ctx_.hin_bytes, p.hin_bytes)) pack = 0;
    const cudaStream_t s = grid_ctx_.stream;
    for (long long off = 0, i = 0; !rc && off < n; off += chunk, i++) {
        const long long k = n - off < chunk ? n - off : chunk;
        /* this chunk's inputs on the device, in the row's order, each k rows; then its outputs */
        char *d[GRID_MAX_IN], *od[GRID_MAX_OUT];
        const int half = p.out_halves == 2 ? (int)(i & 1) : 0;
        char *const dout = grid_ctx_.dout + (size_t)half * (size_t)chunk * p.out_b;
        for (int j = 0; j < io->n_in; j++) d[j] = grid_ctx_.din + grid_cuda_in_offset(&p, j, k);
        for (int j = 0; j < io->n_out; j++) od[j] = dout + grid_cuda_out_offset(&p, j, k);
        if (pack) {
            const int h = (int)(i & 1);
            char *hs = grid_ctx_.hin + (size_t)h * (grid_ctx_.hin_bytes / 2);
            /* the copy that read this half two chunks ago must be done */
            if (i >= 2 && (e = cudaEventSynchronize(grid_ctx_.staged[h])) != cudaSuccess) {
                rc = grid_cuda_fail_(e, "cudaEventSynchronize");
                break;
            }
            for (int j = 0; j < io->n_in; j++)
                if (p.row[j])
                    memcpy(hs + grid_cuda_in_offset(&p, j, k), (const char *)c->in[j] + (size_t)off * p.row[j],
                           (size_t)k * p.row[j]);
            if ((e = cudaMemcpyAsync(d[0], hs, (size_t)k * p.in_b, cudaMemcpyHostToDevice, s)) != cudaSuccess) {
                rc = grid_cuda_fail_(e, "cudaMemcpyAsync of the inputs");
                break;
            }
            /* (a batch of one chunk never reuses a half) */
            if (chunk < n && (e = cudaEventRecord(grid_ctx_.staged[h], s)) != cudaSuccess) {
                rc = grid_cuda_fail_(e, "cudaEventRecord");
                break;
            }
        } else {
            for (int j = 0; j < io->n_in && !rc; j++)
                if (p.row[j] && (e = cudaMemcpyAsync(d[j], (const char *)c->in[j] + (size_t)off * p.row[j],
                                                     (size_t)k * p.row[j], cudaMemcpyHostToDevice, s)) != cudaSuccess)
                    rc = grid_cuda_fail_(e, "cudaMemcpyAsync of an input");
            if (rc) break;
        }
        /* (the copy out of the chunk two before, from this half, must be done) */
        if (p.out_halves == 2 && i >= 2 && (e = cudaStreamWaitEvent(s, grid_ctx_.drained[half], 0)) != cudaSuccess) {
            rc = grid_cuda_fail_(e, "cudaStreamWaitEvent");
            break;
        }
        if ((rc = grid_launch_(c, io, &p, d, od, k))) break;
        cudaStream_t so = s;
        if (p.out_halves == 2) {
            so = grid_ctx_.out_stream;
            if ((e = cudaEventRecord(grid_ctx_.computed[half], s)) != cudaSuccess ||
                (e = cudaStreamWaitEvent(so, grid_ctx_.computed[half], 0)) != cudaSuccess) {
                rc = grid_cuda_fail_(e, "cudaEventRecord / cudaStreamWaitEvent");
                break;
            }
        }
        for (int j = 0; j < io->n_out && !rc; j++)
            if (p.orow[j] && (e = cudaMemcpyAsync((char *)c->out[j] + (size_t)off * p.orow[j], od[j],
                                                  (size_t)k * p.orow[j], cudaMemcpyDeviceToHost, so)) != cudaSuccess)
                rc = grid_cuda_fail_(e, "cudaMemcpyAsync of the outputs");
        if (!rc && p.out_halves == 2 && (e = cudaEventRecord(grid_ctx_.drained[half], so)) != cudaSuccess)
            rc = grid_cuda_fail_(e, "cudaEventRecord");
    }
    /* always drain the streams: the next call reuses the buffers */
    if (grid_ctx_.ready && (e = cudaStreamSynchronize(s)) != cudaSuccess && !rc)
        rc = grid_cuda_fail_(e, "cudaStreamSynchronize after the kernel and copies");
    if (grid_ctx_.ready && (e = cudaStreamSynchronize(grid_ctx_.out_stream)) != cudaSuccess && !rc)
        rc = grid_cuda_fail_(e, "cudaStreamSynchronize after the copies out");
    pthread_mutex_unlock(&grid_ctx_.lock);
    return rc;
}

/* Device buffers for host round trips of up to max_batch states of any method (and pinned staging
   for one chunk), allocated now on the current device; a larger batch later still works (regrown or
   chunked). 0, 7 (max_batch < 0) or 11 with grid_cuda_last_error saying what failed. */
extern "C" __attribute__((visibility("default"))) int grid_cuda_reserve(long long max_batch)
{
    if (max_batch < 0) return 7;
    grid_cuda_plan p;
    if (grid_cuda_plan_reserve(grid_robot_meta(), max_batch, &grid_knobs_, &p) != 0) {
        snprintf(grid_cuda_msg_, sizeof grid_cuda_msg_, "grid_cuda_reserve(%lld): the buffers would overflow size_t",
                 max_batch);
        return 11;
    }
    pthread_mutex_lock(&grid_ctx_.lock);
    int rc = grid_ctx_ready_();
    if (!rc) rc = grid_dev_grow_(&grid_ctx_.din, &grid_ctx_.din_bytes, p.din_bytes);
    if (!rc) rc = grid_dev_grow_(&grid_ctx_.dout, &grid_ctx_.dout_bytes, p.dout_bytes);
    if (!rc) rc = grid_dev_grow_(&grid_ctx_.dws, &grid_ctx_.dws_bytes, p.dws_bytes);
    if (!rc && p.hz_bytes) rc = grid_mapped_grow_(p.hz_bytes);
    if (!rc && p.pack) rc = grid_pinned_grow_(&grid_ctx_.hin, &grid_ctx_.hin_bytes, p.hin_bytes);
    pthread_mutex_unlock(&grid_ctx_.lock);
    return rc;
}

/* A call of the job's run row in an output convention (grid/convention.h). c is that row's call (inputs in its
   order; the acceleration's slot carries any array of its width when a_zero) and fns[0] its entry point: host != 0,
   fns[0] = grid_<row> on host arrays: the round trip converts each chunk's device buffers in place around the
   kernels (a job without aux rows only: the host side runs those with grid_convention_call); host == 0, fns[0] =
   grid_cuda_<row> on device arrays and fns[1 ..] the job's aux rows' grid_cuda_<row>: the converted inputs and the
   aux outputs go to stream-ordered scratch on c->stream, the output is converted in place after the kernels,
   nothing is synchronised. 0 or a status. */
extern "C" __attribute__((visibility("default"))) int grid_cuda_convention_call(const grid_conv_job *j,
                                                                                const grid_batch_fn *fns,
                                                                                const grid_call *c, int host)
{
    if (!j || !fns || !fns[0] || !c || !c->in || !c->out || c->n_in != j->n_in || c->n_out != j->n_out || c->batch < 0 ||
        j->slot_q != 0 || (j->slot_a >= 0 && j->slot_v < 0) || j->n_aux < 0 || j->n_aux > GRID_CONV_MAX_AUX ||
        (host && j->n_aux > 0))
        return 7;
    for (int x = 0; x < j->n_aux; x++)
        if (!fns[1 + x]) return 7;
    if (host) {
        if (j->a_zero && !c->in[j->slot_a]) return 7; /* the round trip needs a buffer to build it in */
        grid_conv_job_ = j;
        const int rc = fns[0](c);
        grid_conv_job_ = NULL;
        return rc;
    }
    const long long n = c->batch, nq = j->cv.nq, nv = j->cv.nv;
    if (n == 0) return fns[0](c);
    const int rb = grid_robot_meta()->dtype;
    const cudaStream_t s = (cudaStream_t)c->stream;
    /* scratch: q, then v, a, u, g where the job has them, then the aux outputs, n states each */
    const int slots[5] = {j->slot_q, j->slot_v, j->slot_a, j->slot_u, j->slot_g};
    size_t at[5 + GRID_CONV_MAX_AUX], bytes = 0;
    for (int k = 0; k < 5; k++) {
        at[k] = bytes;
        if (slots[k] >= 0) bytes += (size_t)n * (size_t)(k ? nv : nq) * (size_t)rb;
    }
    for (int x = 0; x < j->n_aux; x++) {
        at[5 + x] = bytes;
        bytes += (size_t)n * (size_t)j->aux_total[x] * (size_t)rb; /* every output of the aux row */
    }
    void *buf = NULL;
    int rc = grid_cuda_scratch_(bytes, c->stream, &buf);
    if (rc) return rc;
    void *cv[5], *xo[GRID_CONV_MAX_AUX] = {NULL};
    const void *src[5];
    for (int k = 0; k < 5; k++) {
        cv[k] = slots[k] >= 0 ? (char *)buf + at[k] : NULL;
        src[k] = grid_conv_in_(c->in, slots[k]);
    }
    if (j->a_zero) src[2] = NULL;
    for (int x = 0; x < j->n_aux; x++) xo[x] = (char *)buf + at[5 + x];
    rc = grid_conv_pre_(j, rb, n, src, cv, s);
    const void *in[GRID_MAX_IN];
    for (int k = 0; k < c->n_in; k++) in[k] = c->in[k];
    for (int k = 0; k < 5; k++)
        if (slots[k] >= 0) in[slots[k]] = cv[k];
    /* the aux rows on the converted inputs of their names, then the run row */
    for (int x = 0; !rc && x < j->n_aux; x++) {
        const void *ain[GRID_MAX_IN] = {0};
        void *aout[GRID_MAX_OUT] = {0};
        char *ob = (char *)xo[x];
        for (int o = 0; o < j->aux_n_out[x]; o++, ob += (size_t)n * (size_t)j->aux_part[x][o - 1] * (size_t)rb) aout[o] = ob;
        for (int k = 0; k < GRID_MAX_IN; k++) ain[k] = j->aux_in[x][k] >= 0 ? in[j->aux_in[x][k]] : NULL;
        grid_call ac = *c;
        ac.in = ain;
        ac.out = aout;
        ac.n_in = j->aux_n_in[x];
        ac.n_out = j->aux_n_out[x];
        grid_conv_aux_attrs(j, x, c->attr, ac.attr);
        rc = fns[1 + x](&ac);
    }
    if (!rc) {
        grid_call dc = *c;
        dc.in = in;
        rc = fns[0](&dc);
    }
    if (!rc) rc = grid_conv_post_all_(j, rb, n, cv, xo, c->out, s);
    const int rf = grid_cuda_scratch_done_(buf, c->stream);
    return rc ? rc : rf;
}

/* The runtime's stream-ordered pool of the current device, created at first use with GRID_CUDA_POOL_KEEP as its
   release threshold (the process's default pool, which other libraries share, is left as it is); NULL: use the
   default pool (GRID_CUDA_POOL_KEEP 0, a device past the table, or a device without memory pools). Kept for the
   process's life. */
#define GRID_CUDA_POOL_DEVICES 64
static cudaMemPool_t grid_pools_[GRID_CUDA_POOL_DEVICES];
static char grid_pool_tried_[GRID_CUDA_POOL_DEVICES];
static pthread_mutex_t grid_pool_lock_ = PTHREAD_MUTEX_INITIALIZER;

static cudaMemPool_t grid_pool_(void)
{
    int dev = -1;
    if (GRID_CUDA_POOL_KEEP <= 0 || cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= GRID_CUDA_POOL_DEVICES) {
        (void)cudaGetLastError();
        return NULL;
    }
    pthread_mutex_lock(&grid_pool_lock_);
    if (!grid_pool_tried_[dev]) {
        grid_pool_tried_[dev] = 1;
        cudaMemPoolProps props;
        memset(&props, 0, sizeof props);
        props.allocType = cudaMemAllocationTypePinned;
        props.handleTypes = cudaMemHandleTypeNone;
        props.location.type = cudaMemLocationTypeDevice;
        props.location.id = dev;
        cudaMemPool_t pool = NULL;
        unsigned long long keep = (unsigned long long)GRID_CUDA_POOL_KEEP;
        if (cudaMemPoolCreate(&pool, &props) == cudaSuccess) {
            if (cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep) == cudaSuccess)
                grid_pools_[dev] = pool;
            else
                cudaMemPoolDestroy(pool);
        }
        (void)cudaGetLastError(); /* a device without pools falls back to the default one */
    }
    cudaMemPool_t pool = grid_pools_[dev];
    pthread_mutex_unlock(&grid_pool_lock_);
    return pool;
}

/* workspace for launches on device arrays the caller gave none for: stream-ordered, so concurrent calls on other
   streams never share it */
extern "C" GRID_CUDA_HIDDEN int grid_cuda_scratch_(size_t bytes, void *stream, void **p)
{
    *p = NULL;
    cudaMemPool_t pool = grid_pool_();
    const cudaError_t e = pool ? cudaMallocFromPoolAsync(p, bytes ? bytes : 1, pool, (cudaStream_t)stream)
                               : cudaMallocAsync(p, bytes ? bytes : 1, (cudaStream_t)stream);
    if (e != cudaSuccess) {
        char what[96];
        *p = NULL;
        (void)cudaGetLastError();
        snprintf(what, sizeof what, "cudaMallocAsync of %zu bytes of workspace", bytes);
        return grid_cuda_fail_(e, what);
    }
    return 0;
}

extern "C" GRID_CUDA_HIDDEN int grid_cuda_scratch_done_(void *p, void *stream)
{
    const cudaError_t e = p ? cudaFreeAsync(p, (cudaStream_t)stream) : cudaSuccess;
    return e == cudaSuccess ? 0 : grid_cuda_fail_(e, "cudaFreeAsync of the workspace");
}

/* page-locked host memory (cudaHostAlloc, portable); NULL on failure (grid_cuda_last_error says why) */
extern "C" __attribute__((visibility("default"))) void *grid_cuda_host_alloc(size_t bytes)
{
    void *p = NULL;
    const cudaError_t e = cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocPortable);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        grid_cuda_fail_(e, "cudaHostAlloc");
        return NULL;
    }
    return p;
}

extern "C" __attribute__((visibility("default"))) void grid_cuda_host_free(void *p)
{
    if (p) cudaFreeHost(p);
}

/* make dev the calling thread's device (the device pointers of the next grid_cuda_* call live there) */
extern "C" __attribute__((visibility("default"))) int grid_cuda_use_device(int dev)
{
    const cudaError_t e = cudaSetDevice(dev);
    return e == cudaSuccess ? 0 : grid_cuda_fail_(e, "cudaSetDevice");
}

static __global__ void grid_k_noop_(void) {}

/* an empty kernel launched on stream (no synchronisation): the launch overhead alone */
extern "C" __attribute__((visibility("default"))) int grid_cuda_noop(void *stream)
{
    grid_k_noop_<<<1, 32, 0, (cudaStream_t)stream>>>();
    const cudaError_t e = cudaGetLastError();
    return e == cudaSuccess ? 0 : grid_cuda_fail_(e, "launching the empty kernel");
}

/* the current device and the toolchain as one JSON object in buf */
extern "C" __attribute__((visibility("default"))) int grid_cuda_device_info(char *buf, size_t cap)
{
    int dev = 0, drv = 0, rt = 0;
    cudaDeviceProp p;
    cudaError_t e;
    if (!buf || cap == 0) return 7;
    buf[0] = '\0';
    if ((e = cudaGetDevice(&dev)) != cudaSuccess) return grid_cuda_fail_(e, "cudaGetDevice");
    if ((e = cudaGetDeviceProperties(&p, dev)) != cudaSuccess) return grid_cuda_fail_(e, "cudaGetDeviceProperties");
    if ((e = cudaDriverGetVersion(&drv)) != cudaSuccess) return grid_cuda_fail_(e, "cudaDriverGetVersion");
    if ((e = cudaRuntimeGetVersion(&rt)) != cudaSuccess) return grid_cuda_fail_(e, "cudaRuntimeGetVersion");
    for (char *c = p.name; *c; c++)
        if (*c == '"' || *c == '\\' || (unsigned char)*c < 32) *c = '?';
    snprintf(buf, cap,
             "{\"device\":%d,\"name\":\"%s\",\"cc\":\"%d.%d\",\"sms\":%d,\"l2_bytes\":%d,"
             "\"smem_per_sm\":%zu,\"smem_per_block_optin\":%zu,\"regs_per_sm\":%d,\"memory_bytes\":%zu,"
             "\"driver\":%d,\"runtime\":%d,\"compiled_runtime\":%d,\"block\":%d,\"smem_max\":%d,"
             "\"out_stage_max\":%d,\"pack_inputs\":%d,\"chunk_bytes\":%lld,\"real_bytes\":%d}",
             dev, p.name, p.major, p.minor, p.multiProcessorCount, p.l2CacheSize, p.sharedMemPerMultiprocessor,
             p.sharedMemPerBlockOptin, p.regsPerMultiprocessor, p.totalGlobalMem, drv, rt, CUDART_VERSION,
             GRID_CUDA_BLOCK, GRID_CUDA_SMEM_MAX, GRID_CUDA_OUT_STAGE_MAX, GRID_CUDA_PACK_INPUTS,
             (long long)GRID_CUDA_CHUNK_BYTES, grid_robot_meta()->dtype);
    return 0;
}

static double grid_now_us_(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;
}

/* Timing for benchmarks, without Python in the loop: warmup + reps calls of fn(c) (fn NULL: the empty
   kernel on c->stream), each followed by cudaStreamSynchronize(c->stream). wall_us[r]: host clock from
   before the call to after the synchronisation; event_us[r] (may be NULL: no events recorded): CUDA
   events recorded on c->stream before the call and after it. */
extern "C" __attribute__((visibility("default"))) int grid_cuda_time(int (*fn)(const grid_call *), const grid_call *c,
                                                                     int reps, int warmup, float *event_us,
                                                                     double *wall_us)
{
    if (!c || reps < 0 || warmup < 0 || !wall_us) return 7;
    const cudaStream_t s = (cudaStream_t)c->stream;
    cudaEvent_t e0 = NULL, e1 = NULL;
    cudaError_t e = cudaSuccess;
    int rc = 0;
    if (event_us && ((e = cudaEventCreate(&e0)) != cudaSuccess || (e = cudaEventCreate(&e1)) != cudaSuccess))
        rc = grid_cuda_fail_(e, "cudaEventCreate");
    for (int r = -warmup; r < reps && !rc; r++) {
        const double t0 = grid_now_us_();
        if (event_us && (e = cudaEventRecord(e0, s)) != cudaSuccess) rc = grid_cuda_fail_(e, "cudaEventRecord");
        if (!rc) rc = fn ? fn(c) : grid_cuda_noop(c->stream);
        if (!rc && event_us && (e = cudaEventRecord(e1, s)) != cudaSuccess) rc = grid_cuda_fail_(e, "cudaEventRecord");
        if (!rc && (e = cudaStreamSynchronize(s)) != cudaSuccess) rc = grid_cuda_fail_(e, "cudaStreamSynchronize");
        const double t1 = grid_now_us_();
        if (rc || r < 0) continue;
        wall_us[r] = t1 - t0;
        if (event_us) {
            float ms = 0;
            if ((e = cudaEventElapsedTime(&ms, e0, e1)) != cudaSuccess) rc = grid_cuda_fail_(e, "cudaEventElapsedTime");
            event_us[r] = ms * 1000.0f;
        }
    }
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    return rc;
}
