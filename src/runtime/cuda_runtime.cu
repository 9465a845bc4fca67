/* The CUDA host runtime linked into every CUDA robot.so: one context per library (stream, device buffers, pinned staging) behind a mutex, host round trips, reservations, pinned memory, timing and error messages. */
/* Compiled once per toolchain (nvcc, arch, flags) into the cache by src/build/cuda_rt.c, never by the plain C
   build. The arithmetic of the round trips is cuda_plan.c, compiled here as part of this translation unit. */
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "cuda_host.h"
#include "cuda_plan.c"

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
                                            (long long)GRID_CUDA_WORK_MAX, GRID_CUDA_PACK_INPUTS};

typedef struct {
    pthread_mutex_t lock;
    int ready;              /* stream and events exist */
    int device;             /* the device they belong to */
    cudaStream_t stream;    /* non-blocking: never waits on the legacy default stream */
    cudaEvent_t staged[2];  /* recorded after the copy that read each half of the pinned staging */
    char *din, *dout;       /* device buffers: a chunk's inputs (in the row's order) and outputs */
    size_t din_bytes, dout_bytes;
    char *dws;              /* device workspace of rolled functions: a launch's states in flight x work bytes */
    size_t dws_bytes;
    char *hin;              /* pinned staging of inputs, two halves of hin_bytes / 2 */
    size_t hin_bytes;
    char *hz, *hz_dev;      /* zero-copy calls: mapped pinned inputs then outputs, and its device address */
    size_t hz_bytes;
} grid_cuda_ctx_;

static grid_cuda_ctx_ grid_ctx_ = {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, {0, 0}, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};

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
    for (int h = 0; h < 2; h++)
        if ((e = cudaEventCreateWithFlags(&grid_ctx_.staged[h], cudaEventDisableTiming)) != cudaSuccess) {
            for (int j = 0; j < h; j++) cudaEventDestroy(grid_ctx_.staged[j]);
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
    return io->launch(&dc);
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
   into c->out; the stream is drained before the lock is released. Non-zero on any failure. */
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
        for (int j = 0; j < io->n_in; j++) d[j] = grid_ctx_.din + grid_cuda_in_offset(&p, j, k);
        for (int j = 0; j < io->n_out; j++) od[j] = grid_ctx_.dout + grid_cuda_out_offset(&p, j, k);
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
        if ((rc = grid_launch_(c, io, &p, d, od, k))) break;
        for (int j = 0; j < io->n_out && !rc; j++)
            if (p.orow[j] && (e = cudaMemcpyAsync((char *)c->out[j] + (size_t)off * p.orow[j], od[j],
                                                  (size_t)k * p.orow[j], cudaMemcpyDeviceToHost, s)) != cudaSuccess)
                rc = grid_cuda_fail_(e, "cudaMemcpyAsync of the outputs");
    }
    /* always drain the stream: the next call reuses the buffers */
    if (grid_ctx_.ready && (e = cudaStreamSynchronize(s)) != cudaSuccess && !rc)
        rc = grid_cuda_fail_(e, "cudaStreamSynchronize after the kernel and copies");
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

/* workspace for launches on device arrays the caller gave none for: stream-ordered, so concurrent calls on other
   streams never share it */
extern "C" GRID_CUDA_HIDDEN int grid_cuda_scratch_(size_t bytes, void *stream, void **p)
{
    *p = NULL;
    const cudaError_t e = cudaMallocAsync(p, bytes ? bytes : 1, (cudaStream_t)stream);
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
