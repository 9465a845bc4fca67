/* The CUDA target's batch wrappers and host runtime: staged one-thread-per-state kernels, launchers and host round trips. */
#include <assert.h>
#include <stdio.h>
#include <string.h>
#include "grid/abi.h"
#include "grid/emit.h"
#include "target_cuda.h"

/* ---- the prologue: configuration, staging helpers, host runtime ---- */

static const char cuda_config[] =
    "#include <pthread.h>\n"
    "#include <stdio.h>\n"
    "#include <string.h>\n"
    "#include <time.h>\n\n"
    "/* ---- CUDA configuration; each may be set with -D at nvcc time (GRID_RBD_NVCC_FLAGS, docs/cuda.md) ---- */\n"
    "#ifndef GRID_CUDA_BLOCK\n"
    "#define GRID_CUDA_BLOCK 128 /* threads per block, one state per thread */\n"
    "#endif\n"
    "#ifndef GRID_CUDA_MIN_BLOCKS\n"
    "#define GRID_CUDA_MIN_BLOCKS 1 /* __launch_bounds__ minimum blocks per SM (1: ptxas may use 255 registers) */\n"
    "#endif\n"
    "#ifndef GRID_CUDA_SMEM_MAX\n"
    "#define GRID_CUDA_SMEM_MAX 49152 /* shared-memory bytes per block the staging tiles may take */\n"
    "#endif\n"
    "#ifndef GRID_CUDA_OUT_STAGE_MAX\n"
    "#define GRID_CUDA_OUT_STAGE_MAX 64 /* outputs of at most this many elements per state are staged too */\n"
    "#endif\n"
    "#ifndef GRID_CUDA_SMEM_MAX_WIDE\n"
    "#define GRID_CUDA_SMEM_MAX_WIDE 200000 /* a wider (matrix) output is staged when the block's tiles fit this:\n"
    "   measured on an H200, go2 CRBA/Minv at 1M states 6.4 ms -> 0.64/0.84 ms (bench/gpu_run1) */\n"
    "#endif\n"
    "#ifndef GRID_CUDA_PACK_INPUTS\n"
    "#define GRID_CUDA_PACK_INPUTS 0 /* host round trip: 1 gathers the inputs in pinned memory for one copy;\n"
    "   0 (measured faster on an H200: iiwa RNEA B=1024 36.8 -> 32.8 us) copies each input array directly */\n"
    "#endif\n"
    "#ifndef GRID_CUDA_ZERO_COPY_MAX\n"
    "#define GRID_CUDA_ZERO_COPY_MAX 0 /* host round trip: a call moving at most this many bytes (in + out) makes no\n"
    "   copies: the kernel reads its inputs from and writes its outputs to mapped pinned memory (0: never) */\n"
    "#endif\n"
    "#ifndef GRID_CUDA_CHUNK_BYTES\n"
    "#define GRID_CUDA_CHUNK_BYTES (64LL << 20) /* host round trip: input (or output) bytes per chunk */\n"
    "#endif\n"
    "#define GRID_CUDA_WARPS (GRID_CUDA_BLOCK / 32)\n"
    "static_assert(GRID_CUDA_BLOCK > 0 && GRID_CUDA_BLOCK <= 1024 && GRID_CUDA_BLOCK % 32 == 0,\n"
    "              \"GRID_CUDA_BLOCK must be a multiple of 32 up to 1024\");\n\n"
    "/* a staged array takes, per warp, a tile of 32 states x (w | 1) elements: the odd row stride puts\n"
    "   the 32 lanes' reads of one element in 32 different banks */\n"
    "#define GRID_TILE_(w) (GRID_CUDA_WARPS * 32 * ((w) | 1) * (int)sizeof(grid_real))\n"
    "#define GRID_FITS_(used, w) ((used) + GRID_TILE_(w) <= GRID_CUDA_SMEM_MAX)\n"
    "#define GRID_FITS_WIDE_(used, w) ((used) + GRID_TILE_(w) <= GRID_CUDA_SMEM_MAX_WIDE)\n\n"
    "/* the rows of a warp's m states (consecutive in global memory) into its tile, coalesced */\n"
    "template <int W>\n"
    "static __device__ __forceinline__ void grid_tile_in_(grid_real *__restrict__ t, const grid_real *__restrict__ g,\n"
    "                                                     const int m, const int lane)\n{\n"
    "#pragma unroll 4\n"
    "    for (int e = lane; e < m * W; e += 32) t[(e / W) * (W | 1) + e % W] = __ldg(g + e);\n"
    "}\n\n"
    "/* a tile of zeros (an absent optional input) */\n"
    "template <int W>\n"
    "static __device__ __forceinline__ void grid_tile_zero_(grid_real *__restrict__ t, const int lane)\n{\n"
    "    for (int e = lane; e < 32 * (W | 1); e += 32) t[e] = 0;\n"
    "}\n\n"
    "/* the tile's m rows back to global memory, coalesced */\n"
    "template <int W>\n"
    "static __device__ __forceinline__ void grid_tile_out_(grid_real *__restrict__ g, const grid_real *__restrict__ t,\n"
    "                                                      const int m, const int lane)\n{\n"
    "#pragma unroll 4\n"
    "    for (int e = lane; e < m * W; e += 32) g[e] = t[(e / W) * (W | 1) + e % W];\n"
    "}\n\n"
    "/* what a host round trip moves: the launcher, and elements per state of each input (0: absent, not moved)\n"
    "   and output of the method's row */\n"
    "typedef struct {\n"
    "    int (*launch)(const grid_call *);\n"
    "    int n_in, n_out;\n"
    "    long long win[GRID_MAX_IN], wout[GRID_MAX_OUT];\n"
    "} grid_io_;\n\n"
    "/* the runtime below (in part 1 of a split build) */\n"
    "extern \"C\" __attribute__((visibility(\"hidden\"))) int grid_cuda_round_trip_(const grid_call *c, const grid_io_ *io);\n"
    "extern \"C\" __attribute__((visibility(\"hidden\"))) int grid_cuda_fail_(cudaError_t e, const char *what);\n"
    "extern \"C\" __attribute__((visibility(\"default\"))) const grid_robot_meta_t *grid_robot_meta(void);\n\n";

/* the host runtime: compiled once (part 1 of a split build) */
static const char cuda_runtime[] =
    "#if !defined(GRID_PART) || GRID_PART == 1\n"
    "/* ---- host runtime: one context per loaded library (stream, device buffers, pinned staging) behind a mutex ---- */\n\n"
    "/* the last CUDA failure of this thread, for grid_cuda_last_error */\n"
    "static thread_local char grid_cuda_msg_[256];\n\n"
    "extern \"C\" __attribute__((visibility(\"hidden\"))) int grid_cuda_fail_(cudaError_t e, const char *what)\n{\n"
    "    snprintf(grid_cuda_msg_, sizeof grid_cuda_msg_, \"%s failed: %s (%s)\", what, cudaGetErrorString(e),\n"
    "             cudaGetErrorName(e));\n"
    "    return 11; /* GRID_ERR_CUDA */\n"
    "}\n\n"
    "/* the message of this thread's last failed CUDA call, NUL-terminated in buf */\n"
    "extern \"C\" __attribute__((visibility(\"default\"))) int grid_cuda_last_error(char *buf, size_t cap)\n{\n"
    "    if (!buf || cap == 0) return 7;\n"
    "    snprintf(buf, cap, \"%s\", grid_cuda_msg_[0] ? grid_cuda_msg_ : \"no CUDA failure recorded on this thread\");\n"
    "    return 0;\n"
    "}\n\n"
    "typedef struct {\n"
    "    pthread_mutex_t lock;\n"
    "    int ready;              /* stream and events exist */\n"
    "    int device;             /* the device they belong to */\n"
    "    cudaStream_t stream;    /* non-blocking: never waits on the legacy default stream */\n"
    "    cudaEvent_t staged[2];  /* recorded after the copy that read each half of the pinned staging */\n"
    "    char *din, *dout;       /* device buffers: a chunk's inputs (in the row's order) and outputs */\n"
    "    size_t din_bytes, dout_bytes;\n"
    "    char *hin;              /* pinned staging of inputs, two halves of hin_bytes / 2 */\n"
    "    size_t hin_bytes;\n"
    "    char *hz, *hz_dev;      /* zero-copy calls: mapped pinned inputs then outputs, and its device address */\n"
    "    size_t hz_bytes;\n"
    "} grid_cuda_ctx_;\n\n"
    "static grid_cuda_ctx_ grid_ctx_ = {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, {0, 0}, 0, 0, 0, 0, 0, 0, 0, 0, 0};\n\n"
    "/* the context's stream and events, created on the current device at first use (lock held) */\n"
    "static int grid_ctx_ready_(void)\n{\n"
    "    cudaError_t e;\n"
    "    if (grid_ctx_.ready) {\n"
    "        e = cudaSetDevice(grid_ctx_.device);\n"
    "        return e == cudaSuccess ? 0 : grid_cuda_fail_(e, \"cudaSetDevice\");\n"
    "    }\n"
    "    if ((e = cudaGetDevice(&grid_ctx_.device)) != cudaSuccess) return grid_cuda_fail_(e, \"cudaGetDevice\");\n"
    "    if ((e = cudaStreamCreateWithFlags(&grid_ctx_.stream, cudaStreamNonBlocking)) != cudaSuccess)\n"
    "        return grid_cuda_fail_(e, \"cudaStreamCreateWithFlags\");\n"
    "    for (int h = 0; h < 2; h++)\n"
    "        if ((e = cudaEventCreateWithFlags(&grid_ctx_.staged[h], cudaEventDisableTiming)) != cudaSuccess) {\n"
    "            for (int j = 0; j < h; j++) cudaEventDestroy(grid_ctx_.staged[j]);\n"
    "            cudaStreamDestroy(grid_ctx_.stream);\n"
    "            return grid_cuda_fail_(e, \"cudaEventCreateWithFlags\");\n"
    "        }\n"
    "    grid_ctx_.ready = 1;\n"
    "    return 0;\n"
    "}\n\n"
    "/* a device buffer of at least need bytes (the old contents are not kept) */\n"
    "static int grid_dev_grow_(char **p, size_t *have, size_t need)\n{\n"
    "    if (*have >= need) return 0;\n"
    "    if (*p) cudaFree(*p);\n"
    "    *p = NULL;\n"
    "    *have = 0;\n"
    "    const cudaError_t e = cudaMalloc((void **)p, need);\n"
    "    if (e != cudaSuccess) {\n"
    "        char what[96];\n"
    "        *p = NULL;\n"
    "        (void)cudaGetLastError(); /* an allocation failure is not sticky: clear it */\n"
    "        snprintf(what, sizeof what, \"cudaMalloc of %zu bytes\", need);\n"
    "        return grid_cuda_fail_(e, what);\n"
    "    }\n"
    "    *have = need;\n"
    "    return 0;\n"
    "}\n\n"
    "/* a pinned host buffer of at least need bytes */\n"
    "static int grid_pinned_grow_(char **p, size_t *have, size_t need)\n{\n"
    "    if (*have >= need) return 0;\n"
    "    if (*p) cudaFreeHost(*p);\n"
    "    *p = NULL;\n"
    "    *have = 0;\n"
    "    const cudaError_t e = cudaHostAlloc((void **)p, need, cudaHostAllocPortable);\n"
    "    if (e != cudaSuccess) {\n"
    "        char what[96];\n"
    "        *p = NULL;\n"
    "        (void)cudaGetLastError();\n"
    "        snprintf(what, sizeof what, \"cudaHostAlloc of %zu bytes\", need);\n"
    "        return grid_cuda_fail_(e, what);\n"
    "    }\n"
    "    *have = need;\n"
    "    return 0;\n"
    "}\n\n"
    "/* mapped pinned memory of at least need bytes for zero-copy calls, with its device address */\n"
    "static int grid_mapped_grow_(size_t need)\n{\n"
    "    if (grid_ctx_.hz_bytes >= need) return 0;\n"
    "    if (grid_ctx_.hz) cudaFreeHost(grid_ctx_.hz);\n"
    "    grid_ctx_.hz = grid_ctx_.hz_dev = NULL;\n"
    "    grid_ctx_.hz_bytes = 0;\n"
    "    void *h = NULL, *d = NULL;\n"
    "    cudaError_t e = cudaHostAlloc(&h, need, cudaHostAllocPortable | cudaHostAllocMapped);\n"
    "    if (e == cudaSuccess && (e = cudaHostGetDevicePointer(&d, h, 0)) != cudaSuccess) cudaFreeHost(h);\n"
    "    if (e != cudaSuccess) {\n"
    "        (void)cudaGetLastError();\n"
    "        return grid_cuda_fail_(e, \"mapped cudaHostAlloc for a zero-copy call\");\n"
    "    }\n"
    "    grid_ctx_.hz = (char *)h;\n"
    "    grid_ctx_.hz_dev = (char *)d;\n"
    "    grid_ctx_.hz_bytes = need;\n"
    "    return 0;\n"
    "}\n\n"
    "/* A small call without copies (GRID_CUDA_ZERO_COPY_MAX): the inputs are gathered into mapped pinned memory,\n"
    "   the kernel reads them and writes its outputs there over the bus, and the outputs are copied into c->out\n"
    "   after the synchronisation (lock held, context ready). */\n"
    "static int grid_zero_copy_(const grid_call *c, const grid_io_ *io, const size_t *row, const size_t *orow,\n"
    "                           size_t in_b, size_t out_b)\n{\n"
    "    const size_t n = (size_t)c->batch;\n"
    "    int rc = grid_mapped_grow_(n * (in_b + out_b));\n"
    "    if (rc) return rc;\n"
    "    const void *din[GRID_MAX_IN] = {0};\n"
    "    void *dout[GRID_MAX_OUT] = {0};\n"
    "    size_t at = 0;\n"
    "    for (int j = 0; j < io->n_in; j++) {\n"
    "        din[j] = row[j] ? grid_ctx_.hz_dev + at : NULL;\n"
    "        if (row[j]) memcpy(grid_ctx_.hz + at, c->in[j], n * row[j]);\n"
    "        at += n * row[j];\n"
    "    }\n"
    "    const size_t out_at = at;\n"
    "    for (int j = 0; j < io->n_out; j++) {\n"
    "        dout[j] = grid_ctx_.hz_dev + at;\n"
    "        at += n * orow[j];\n"
    "    }\n"
    "    grid_call dc = *c;\n"
    "    dc.in = din;\n"
    "    dc.out = dout;\n"
    "    dc.work = NULL;\n"
    "    dc.work_bytes = 0;\n"
    "    dc.stream = (void *)grid_ctx_.stream;\n"
    "    if ((rc = io->launch(&dc))) return rc;\n"
    "    const cudaError_t e = cudaStreamSynchronize(grid_ctx_.stream);\n"
    "    if (e != cudaSuccess) return grid_cuda_fail_(e, \"cudaStreamSynchronize after a zero-copy kernel\");\n"
    "    at = out_at;\n"
    "    for (int j = 0; j < io->n_out; j++) {\n"
    "        memcpy(c->out[j], grid_ctx_.hz + at, n * orow[j]);\n"
    "        at += n * orow[j];\n"
    "    }\n"
    "    return 0;\n"
    "}\n\n"
    "/* states per chunk of a round trip moving in_b bytes in and out_b bytes out per state */\n"
    "static long long grid_chunk_(long long n, size_t in_b, size_t out_b)\n{\n"
    "    const size_t widest = in_b > out_b ? in_b : out_b;\n"
    "    long long chunk = GRID_CUDA_CHUNK_BYTES / (long long)(widest ? widest : 1);\n"
    "    if (chunk < 32) chunk = 32;\n"
    "    return chunk < n ? chunk : n;\n"
    "}\n\n"
    "/* One host round trip on the context's stream: per chunk, the inputs are copied in (gathered in pinned\n"
    "   memory, one copy, when GRID_CUDA_PACK_INPUTS), the kernel runs and the outputs are copied straight\n"
    "   into c->out; the stream is drained before the lock is released. Non-zero on any failure. */\n"
    "extern \"C\" __attribute__((visibility(\"hidden\"))) int grid_cuda_round_trip_(const grid_call *c, const grid_io_ *io)\n{\n"
    "    const size_t es = sizeof(grid_real);\n"
    "    size_t row[GRID_MAX_IN] = {0}, orow[GRID_MAX_OUT] = {0}, in_b = 0, out_b = 0;\n"
    "    for (int j = 0; j < io->n_in; j++) in_b += row[j] = (size_t)io->win[j] * es;\n"
    "    for (int j = 0; j < io->n_out; j++) out_b += orow[j] = (size_t)io->wout[j] * es;\n"
    "    const long long n = c->batch, chunk = grid_chunk_(n, in_b, out_b);\n"
    "    int rc, pack = GRID_CUDA_PACK_INPUTS;\n"
    "    cudaError_t e;\n"
    "    pthread_mutex_lock(&grid_ctx_.lock);\n"
    "    rc = grid_ctx_ready_();\n"
    "    if (!rc && GRID_CUDA_ZERO_COPY_MAX > 0 && (double)n * (double)(in_b + out_b) <= (double)GRID_CUDA_ZERO_COPY_MAX) {\n"
    "        rc = grid_zero_copy_(c, io, row, orow, in_b, out_b);\n"
    "        pthread_mutex_unlock(&grid_ctx_.lock);\n"
    "        return rc;\n"
    "    }\n"
    "    if (!rc) rc = grid_dev_grow_(&grid_ctx_.din, &grid_ctx_.din_bytes, (size_t)chunk * in_b);\n"
    "    if (!rc) rc = grid_dev_grow_(&grid_ctx_.dout, &grid_ctx_.dout_bytes, (size_t)chunk * out_b);\n"
    "    /* no pinned memory to be had: copy each array from where it is */\n"
    "    if (!rc && pack && grid_pinned_grow_(&grid_ctx_.hin, &grid_ctx_.hin_bytes, 2 * (size_t)chunk * in_b)) pack = 0;\n"
    "    const cudaStream_t s = grid_ctx_.stream;\n"
    "    for (long long off = 0, i = 0; !rc && off < n; off += chunk, i++) {\n"
    "        const long long k = n - off < chunk ? n - off : chunk;\n"
    "        /* this chunk's inputs on the device, in the row's order, each k rows; then its outputs */\n"
    "        char *d[GRID_MAX_IN], *od[GRID_MAX_OUT];\n"
    "        d[0] = grid_ctx_.din;\n"
    "        for (int j = 1; j < io->n_in; j++) d[j] = d[j - 1] + (size_t)k * row[j - 1];\n"
    "        od[0] = grid_ctx_.dout;\n"
    "        for (int j = 1; j < io->n_out; j++) od[j] = od[j - 1] + (size_t)k * orow[j - 1];\n"
    "        if (pack) {\n"
    "            const int h = (int)(i & 1);\n"
    "            char *hs = grid_ctx_.hin + (size_t)h * (grid_ctx_.hin_bytes / 2);\n"
    "            /* the copy that read this half two chunks ago must be done */\n"
    "            if (i >= 2 && (e = cudaEventSynchronize(grid_ctx_.staged[h])) != cudaSuccess) {\n"
    "                rc = grid_cuda_fail_(e, \"cudaEventSynchronize\");\n"
    "                break;\n"
    "            }\n"
    "            size_t at = 0;\n"
    "            for (int j = 0; j < io->n_in; j++) {\n"
    "                if (!row[j]) continue;\n"
    "                memcpy(hs + at, (const char *)c->in[j] + (size_t)off * row[j], (size_t)k * row[j]);\n"
    "                at += (size_t)k * row[j];\n"
    "            }\n"
    "            if ((e = cudaMemcpyAsync(d[0], hs, at, cudaMemcpyHostToDevice, s)) != cudaSuccess) {\n"
    "                rc = grid_cuda_fail_(e, \"cudaMemcpyAsync of the inputs\");\n"
    "                break;\n"
    "            }\n"
    "            /* (a batch of one chunk never reuses a half) */\n"
    "            if (chunk < n && (e = cudaEventRecord(grid_ctx_.staged[h], s)) != cudaSuccess) {\n"
    "                rc = grid_cuda_fail_(e, \"cudaEventRecord\");\n"
    "                break;\n"
    "            }\n"
    "        } else {\n"
    "            for (int j = 0; j < io->n_in && !rc; j++)\n"
    "                if (row[j] && (e = cudaMemcpyAsync(d[j], (const char *)c->in[j] + (size_t)off * row[j],\n"
    "                                                   (size_t)k * row[j], cudaMemcpyHostToDevice, s)) != cudaSuccess)\n"
    "                    rc = grid_cuda_fail_(e, \"cudaMemcpyAsync of an input\");\n"
    "            if (rc) break;\n"
    "        }\n"
    "        const void *din[GRID_MAX_IN] = {0};\n"
    "        void *dout[GRID_MAX_OUT] = {0};\n"
    "        for (int j = 0; j < io->n_in; j++) din[j] = row[j] ? d[j] : NULL;\n"
    "        for (int j = 0; j < io->n_out; j++) dout[j] = od[j];\n"
    "        grid_call dc = *c;\n"
    "        dc.in = din;\n"
    "        dc.out = dout;\n"
    "        dc.batch = k;\n"
    "        dc.work = NULL;\n"
    "        dc.work_bytes = 0;\n"
    "        dc.stream = (void *)s;\n"
    "        if ((rc = io->launch(&dc))) break;\n"
    "        for (int j = 0; j < io->n_out && !rc; j++)\n"
    "            if (orow[j] && (e = cudaMemcpyAsync((char *)c->out[j] + (size_t)off * orow[j], od[j], (size_t)k * orow[j],\n"
    "                                                cudaMemcpyDeviceToHost, s)) != cudaSuccess)\n"
    "                rc = grid_cuda_fail_(e, \"cudaMemcpyAsync of the outputs\");\n"
    "    }\n"
    "    /* always drain the stream: the next call reuses the buffers */\n"
    "    if (grid_ctx_.ready && (e = cudaStreamSynchronize(s)) != cudaSuccess && !rc)\n"
    "        rc = grid_cuda_fail_(e, \"cudaStreamSynchronize after the kernel and copies\");\n"
    "    pthread_mutex_unlock(&grid_ctx_.lock);\n"
    "    return rc;\n"
    "}\n\n"
    "/* Device buffers for host round trips of up to max_batch states of any method (and pinned staging\n"
    "   for one chunk), allocated now on the current device; a larger batch later still works (regrown or\n"
    "   chunked). 0, 7 (max_batch < 0) or 11 with grid_cuda_last_error saying what failed. */\n"
    "extern \"C\" __attribute__((visibility(\"default\"))) int grid_cuda_reserve(long long max_batch)\n{\n"
    "    if (max_batch < 0) return 7;\n"
    "    const grid_robot_meta_t *m = grid_robot_meta();\n"
    "    const long long es = (long long)sizeof(grid_real);\n"
    "    /* the widest row: its inputs and its outputs per state */\n"
    "    long long in_w = 0, out_w = 0;\n"
    "    for (int i = 0; i < m->n_methods; i++) {\n"
    "        long long wi = 0, wo = 0;\n"
    "        for (int j = 0; j < m->methods[i].n_in; j++) wi += m->methods[i].in[j].width;\n"
    "        for (int j = 0; j < m->methods[i].n_out; j++) wo += m->methods[i].out[j].width;\n"
    "        if (wi > in_w) in_w = wi;\n"
    "        if (wo > out_w) out_w = wo;\n"
    "    }\n"
    "    if ((double)max_batch * (double)((in_w + out_w) * es) > 9.0e18) {\n"
    "        snprintf(grid_cuda_msg_, sizeof grid_cuda_msg_, \"grid_cuda_reserve(%lld): the buffers would overflow size_t\",\n"
    "                 max_batch);\n"
    "        return 11;\n"
    "    }\n"
    "    pthread_mutex_lock(&grid_ctx_.lock);\n"
    "    int rc = grid_ctx_ready_();\n"
    "    if (!rc) rc = grid_dev_grow_(&grid_ctx_.din, &grid_ctx_.din_bytes, (size_t)(max_batch * in_w * es));\n"
    "    if (!rc) rc = grid_dev_grow_(&grid_ctx_.dout, &grid_ctx_.dout_bytes, (size_t)(max_batch * out_w * es));\n"
    "    if (!rc && GRID_CUDA_ZERO_COPY_MAX > 0) rc = grid_mapped_grow_((size_t)GRID_CUDA_ZERO_COPY_MAX);\n"
    "    if (!rc && GRID_CUDA_PACK_INPUTS) {\n"
    "        const long long chunk = grid_chunk_(max_batch, (size_t)(in_w * es), (size_t)(out_w * es));\n"
    "        rc = grid_pinned_grow_(&grid_ctx_.hin, &grid_ctx_.hin_bytes, 2 * (size_t)(chunk * in_w * es));\n"
    "    }\n"
    "    pthread_mutex_unlock(&grid_ctx_.lock);\n"
    "    return rc;\n"
    "}\n\n"
    "/* page-locked host memory (cudaHostAlloc, portable); NULL on failure (grid_cuda_last_error says why) */\n"
    "extern \"C\" __attribute__((visibility(\"default\"))) void *grid_cuda_host_alloc(size_t bytes)\n{\n"
    "    void *p = NULL;\n"
    "    const cudaError_t e = cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocPortable);\n"
    "    if (e != cudaSuccess) {\n"
    "        (void)cudaGetLastError();\n"
    "        grid_cuda_fail_(e, \"cudaHostAlloc\");\n"
    "        return NULL;\n"
    "    }\n"
    "    return p;\n"
    "}\n\n"
    "extern \"C\" __attribute__((visibility(\"default\"))) void grid_cuda_host_free(void *p)\n{\n"
    "    if (p) cudaFreeHost(p);\n"
    "}\n\n"
    "/* make dev the calling thread's device (the device pointers of the next grid_cuda_* call live there) */\n"
    "extern \"C\" __attribute__((visibility(\"default\"))) int grid_cuda_use_device(int dev)\n{\n"
    "    const cudaError_t e = cudaSetDevice(dev);\n"
    "    return e == cudaSuccess ? 0 : grid_cuda_fail_(e, \"cudaSetDevice\");\n"
    "}\n\n"
    "static __global__ void grid_k_noop_(void) {}\n\n"
    "/* an empty kernel launched on stream (no synchronisation): the launch overhead alone */\n"
    "extern \"C\" __attribute__((visibility(\"default\"))) int grid_cuda_noop(void *stream)\n{\n"
    "    grid_k_noop_<<<1, 32, 0, (cudaStream_t)stream>>>();\n"
    "    const cudaError_t e = cudaGetLastError();\n"
    "    return e == cudaSuccess ? 0 : grid_cuda_fail_(e, \"launching the empty kernel\");\n"
    "}\n\n"
    "/* the current device and the toolchain as one JSON object in buf */\n"
    "extern \"C\" __attribute__((visibility(\"default\"))) int grid_cuda_device_info(char *buf, size_t cap)\n{\n"
    "    int dev = 0, drv = 0, rt = 0;\n"
    "    cudaDeviceProp p;\n"
    "    cudaError_t e;\n"
    "    if (!buf || cap == 0) return 7;\n"
    "    buf[0] = '\\0';\n"
    "    if ((e = cudaGetDevice(&dev)) != cudaSuccess) return grid_cuda_fail_(e, \"cudaGetDevice\");\n"
    "    if ((e = cudaGetDeviceProperties(&p, dev)) != cudaSuccess) return grid_cuda_fail_(e, \"cudaGetDeviceProperties\");\n"
    "    if ((e = cudaDriverGetVersion(&drv)) != cudaSuccess) return grid_cuda_fail_(e, \"cudaDriverGetVersion\");\n"
    "    if ((e = cudaRuntimeGetVersion(&rt)) != cudaSuccess) return grid_cuda_fail_(e, \"cudaRuntimeGetVersion\");\n"
    "    for (char *c = p.name; *c; c++)\n"
    "        if (*c == '\"' || *c == '\\\\' || (unsigned char)*c < 32) *c = '?';\n"
    "    snprintf(buf, cap,\n"
    "             \"{\\\"device\\\":%d,\\\"name\\\":\\\"%s\\\",\\\"cc\\\":\\\"%d.%d\\\",\\\"sms\\\":%d,\\\"l2_bytes\\\":%d,\"\n"
    "             \"\\\"smem_per_sm\\\":%zu,\\\"smem_per_block_optin\\\":%zu,\\\"regs_per_sm\\\":%d,\\\"memory_bytes\\\":%zu,\"\n"
    "             \"\\\"driver\\\":%d,\\\"runtime\\\":%d,\\\"compiled_runtime\\\":%d,\\\"block\\\":%d,\\\"smem_max\\\":%d,\"\n"
    "             \"\\\"out_stage_max\\\":%d,\\\"pack_inputs\\\":%d,\\\"chunk_bytes\\\":%lld,\\\"real_bytes\\\":%d}\",\n"
    "             dev, p.name, p.major, p.minor, p.multiProcessorCount, p.l2CacheSize, p.sharedMemPerMultiprocessor,\n"
    "             p.sharedMemPerBlockOptin, p.regsPerMultiprocessor, p.totalGlobalMem, drv, rt, CUDART_VERSION,\n"
    "             GRID_CUDA_BLOCK, GRID_CUDA_SMEM_MAX, GRID_CUDA_OUT_STAGE_MAX, GRID_CUDA_PACK_INPUTS,\n"
    "             (long long)GRID_CUDA_CHUNK_BYTES, (int)sizeof(grid_real));\n"
    "    return 0;\n"
    "}\n\n"
    "static double grid_now_us_(void)\n{\n"
    "    struct timespec t;\n"
    "    clock_gettime(CLOCK_MONOTONIC, &t);\n"
    "    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;\n"
    "}\n\n"
    "/* Timing for benchmarks, without Python in the loop: warmup + reps calls of fn(c) (fn NULL: the empty\n"
    "   kernel on c->stream), each followed by cudaStreamSynchronize(c->stream). wall_us[r]: host clock from\n"
    "   before the call to after the synchronisation; event_us[r] (may be NULL: no events recorded): CUDA\n"
    "   events recorded on c->stream before the call and after it. */\n"
    "extern \"C\" __attribute__((visibility(\"default\"))) int grid_cuda_time(int (*fn)(const grid_call *), const grid_call *c,\n"
    "                                                                     int reps, int warmup, float *event_us,\n"
    "                                                                     double *wall_us)\n{\n"
    "    if (!c || reps < 0 || warmup < 0 || !wall_us) return 7;\n"
    "    const cudaStream_t s = (cudaStream_t)c->stream;\n"
    "    cudaEvent_t e0 = NULL, e1 = NULL;\n"
    "    cudaError_t e = cudaSuccess;\n"
    "    int rc = 0;\n"
    "    if (event_us && ((e = cudaEventCreate(&e0)) != cudaSuccess || (e = cudaEventCreate(&e1)) != cudaSuccess))\n"
    "        rc = grid_cuda_fail_(e, \"cudaEventCreate\");\n"
    "    for (int r = -warmup; r < reps && !rc; r++) {\n"
    "        const double t0 = grid_now_us_();\n"
    "        if (event_us && (e = cudaEventRecord(e0, s)) != cudaSuccess) rc = grid_cuda_fail_(e, \"cudaEventRecord\");\n"
    "        if (!rc) rc = fn ? fn(c) : grid_cuda_noop(c->stream);\n"
    "        if (!rc && event_us && (e = cudaEventRecord(e1, s)) != cudaSuccess) rc = grid_cuda_fail_(e, \"cudaEventRecord\");\n"
    "        if (!rc && (e = cudaStreamSynchronize(s)) != cudaSuccess) rc = grid_cuda_fail_(e, \"cudaStreamSynchronize\");\n"
    "        const double t1 = grid_now_us_();\n"
    "        if (rc || r < 0) continue;\n"
    "        wall_us[r] = t1 - t0;\n"
    "        if (event_us) {\n"
    "            float ms = 0;\n"
    "            if ((e = cudaEventElapsedTime(&ms, e0, e1)) != cudaSuccess) rc = grid_cuda_fail_(e, \"cudaEventElapsedTime\");\n"
    "            event_us[r] = ms * 1000.0f;\n"
    "        }\n"
    "    }\n"
    "    if (e0) cudaEventDestroy(e0);\n"
    "    if (e1) cudaEventDestroy(e1);\n"
    "    return rc;\n"
    "}\n"
    "#endif /* runtime */\n\n";

void emit_cuda_helpers(ew_writer *w, const emit_target *t)
{
    (void)t;
    ew_puts(w, cuda_config);
    ew_puts(w, cuda_runtime);
}

/* ---- per method ---- */

/* one staged array of a kernel: its pointer name, width, and whether the caller may pass NULL */
typedef struct {
    char key;           /* q o v a f: suffix of the plan enumerators */
    const char *arg;    /* kernel parameter */
    long long width;
    int optional;       /* NULL stands for zeros */
} stage_array;

/* the arrays a kernel of variant vr touches, in staging priority order: q, the output, v, a, fext */
static int stage_arrays(const emit_entry *e, const emit_variant *vr, stage_array out[1 + EP_COUNT])
{
    int n = 0;
    const long long nout = e->row->out[0].width;
    out[n++] = (stage_array){'q', "q", emit_param_width(e, EP_Q), 0};
    if (nout > 0) out[n++] = (stage_array){'o', "o", nout, 0};
    for (int p = EP_V; p < EP_COUNT; p++)
        if (vr->reads[p])
            out[n++] = (stage_array){emit_param_name(p)[0], emit_param_name(p), emit_param_width(e, p),
                                     emit_param_optional(e, p)};
    return n;
}

/* The shared-memory plan of a kernel, as enumerators the compiler folds: grid_p_<fn>_<k> is the byte offset
   of array k's tiles (-1: read or written in place), grid_p_<fn>_u<k> the bytes used after it, and
   grid_p_<fn>_smem the dynamic shared memory a block takes. Arrays are staged in priority order while they
   fit GRID_CUDA_SMEM_MAX; the output only when at most GRID_CUDA_OUT_STAGE_MAX wide. */
static void write_plan(ew_writer *w, const char *fn, const stage_array *arr, int n)
{
    ew_puts(w, "enum {\n");
    char prev[64] = "0";
    for (int i = 0; i < n; i++) {
        const stage_array *s = &arr[i];
        /* inputs and narrow outputs fit the normal budget; a wide output the wide one */
        const char *fits = "GRID_FITS_";
        char cond[96] = "";
        if (s->key == 'o') {
            snprintf(cond, sizeof cond, "%lld <= GRID_CUDA_OUT_STAGE_MAX ? GRID_FITS_(%s, %lld) : ", s->width, prev,
                     s->width);
            fits = "GRID_FITS_WIDE_";
        }
        ew_printf(w, "    grid_p_%s_%c = (%s%s(%s, %lld)) ? %s : -1,\n", fn, s->key, cond, fits, prev, s->width, prev);
        ew_printf(w, "    grid_p_%s_u%c = grid_p_%s_%c < 0 ? %s : %s + GRID_TILE_(%lld),\n", fn, s->key, fn, s->key, prev,
                  prev, s->width);
        snprintf(prev, sizeof prev, "grid_p_%s_u%c", fn, s->key);
    }
    ew_printf(w, "    grid_p_%s_smem = %s\n};\n", fn, prev);
}

/* the kernel of one per-state function: one thread per state, each warp staging its 32 states' rows */
static void write_kernel(ew_writer *w, const emit_entry *e, const emit_variant *vr)
{
    const char *fn = vr->fn;
    const long long nout = e->row->out[0].width;
    stage_array arr[1 + EP_COUNT];
    const int n = stage_arrays(e, vr, arr);
    ew_printf(w, "#ifndef GRID_KERNEL_%s\n#define GRID_KERNEL_%s\n", fn, fn);
    ew_printf(w, "/* %s: the plan of its shared-memory tiles, then the kernel */\n", fn);
    write_plan(w, fn, arr, n);
    ew_printf(w, "static __global__ void __launch_bounds__(GRID_CUDA_BLOCK, GRID_CUDA_MIN_BLOCKS)\n"
                 "grid_k_%s(const grid_real *__restrict__ q, const grid_real *__restrict__ v, const grid_real *__restrict__ a,\n"
                 "    const grid_real *__restrict__ f, grid_real *__restrict__ o, const long long n, const int fr, const int rf)\n{\n",
              fn);
    ew_puts(w, "    extern __shared__ __align__(16) unsigned char grid_smem_[];\n"
               "    const int lane = (int)(threadIdx.x & 31), warp = (int)(threadIdx.x >> 5);\n"
               "    const long long b0 = ((long long)blockIdx.x * GRID_CUDA_WARPS + warp) * 32; /* the warp's first state */\n"
               "    if (b0 >= n) return; /* the whole warp is past the batch */\n"
               "    const int m = n - b0 < 32 ? (int)(n - b0) : 32;\n"
               "    /* lanes past the batch compute a copy of the warp's last state (the warp stays converged) and store nothing */\n"
               "    const int l = lane < m ? lane : m - 1;\n"
               "    (void)v; (void)a; (void)f;\n");
    const char *ptr[EP_COUNT] = {"0", "0", "0", "0"}; /* q v a f arguments of the per-state call */
    static const char *const staged[EP_COUNT] = {"sq", "sv", "sa", "sf"};
    for (int i = 0; i < n; i++) {
        const stage_array *s = &arr[i];
        if (s->key == 'o') continue;
        const long long wd = s->width;
        char name[8];
        snprintf(name, sizeof name, "s%c", s->key);
        ew_printf(w, "    /* %s: staged when the plan has room, else read in place */\n", s->arg);
        if (s->optional)
            ew_printf(w, "    const grid_real *%s = %s ? %s + (b0 + l) * %lld : grid_zeros_; /* NULL: zeros */\n", name, s->arg,
                      s->arg, wd);
        else
            ew_printf(w, "    const grid_real *%s = %s + (b0 + l) * %lld;\n", name, s->arg, wd);
        ew_printf(w, "    if (grid_p_%s_%c >= 0) {\n"
                     "        grid_real *t = (grid_real *)(grid_smem_ + grid_p_%s_%c) + warp * 32 * (%lld | 1);\n",
                  fn, s->key, fn, s->key, wd);
        if (s->optional)
            ew_printf(w, "        if (%s) grid_tile_in_<%lld>(t, %s + b0 * %lld, m, lane);\n"
                         "        else grid_tile_zero_<%lld>(t, lane);\n",
                      s->arg, wd, s->arg, wd, wd);
        else
            ew_printf(w, "        grid_tile_in_<%lld>(t, %s + b0 * %lld, m, lane);\n", wd, s->arg, wd);
        ew_printf(w, "        %s = t + l * (%lld | 1);\n    }\n", name, wd);
        for (int p = 0; p < EP_COUNT; p++)
            if (emit_param_name(p)[0] == s->key) ptr[p] = staged[p];
    }
    if (nout > 0) {
        ew_printf(w, "    /* outputs: through a tile when the plan has room (every lane writes its own row), else in place */\n"
                     "    grid_real *so = o + (b0 + l) * %lld, *to = 0;\n"
                     "    if (grid_p_%s_o >= 0) {\n"
                     "        to = (grid_real *)(grid_smem_ + grid_p_%s_o) + warp * 32 * (%lld | 1);\n"
                     "        so = to + lane * (%lld | 1);\n"
                     "    }\n"
                     "    __syncwarp();\n"
                     "    if (grid_p_%s_o >= 0 || lane < m) grid_s_%s(%s, %s, %s, %s, so, fr, rf, 0, 1);\n"
                     "    if (grid_p_%s_o >= 0) {\n"
                     "        __syncwarp();\n"
                     "        grid_tile_out_<%lld>(o + b0 * %lld, to, m, lane);\n"
                     "    }\n",
                  nout, fn, fn, nout, nout, fn, fn, ptr[0], ptr[1], ptr[2], ptr[3], fn, nout, nout);
    } else {
        ew_printf(w, "    __syncwarp();\n    if (lane < m) grid_s_%s(%s, %s, %s, %s, o, fr, rf, 0, 1);\n", fn, ptr[0], ptr[1],
                  ptr[2], ptr[3]);
    }
    ew_printf(w, "}\n#endif /* GRID_KERNEL_%s */\n\n", fn);
}

/* the launch of one kernel on s, with the shared-memory opt-in when its plan needs more than 48 KB */
static void write_launch(ew_writer *w, const char *fn, const char *ind)
{
    ew_printf(w, "%sif (grid_p_%s_smem > 48 * 1024 &&\n"
                 "%s    (e = cudaFuncSetAttribute(grid_k_%s, cudaFuncAttributeMaxDynamicSharedMemorySize, grid_p_%s_smem)) != cudaSuccess)\n"
                 "%s    return grid_cuda_fail_(e, \"raising the shared memory of grid_k_%s\");\n"
                 "%sgrid_k_%s<<<(unsigned)blocks, GRID_CUDA_BLOCK, grid_p_%s_smem, s>>>(q, v, a, f, o, n, fr, rf);\n",
              ind, fn, ind, fn, fn, ind, fn, ind, fn, fn);
}

void emit_cuda_batch(ew_writer *w, const emit_target *t, const emit_entry *e)
{
    const grid_method_info *r = e->row;
    const int nvar = emit_variant_count(e);
    /* one thread per state is the only mapping the kernels implement so far */
    assert(r->gpu_map == GRID_GPU_THREAD && r->n_out == 1);
    /* one kernel per distinct per-state function (shared with other methods through the guard) */
    for (int k = 0; k < nvar; k++) {
        const emit_variant *vr = emit_variant_at(e, k);
        int dup = 0;
        for (int j = 0; j < k; j++) dup |= strcmp(emit_variant_at(e, j)->fn, vr->fn) == 0;
        if (!dup) write_kernel(w, e, vr);
    }

    /* device pointers, the caller's stream, no synchronisation */
    ew_printf(w, "/* %s on device arrays: launched on c->stream, not synchronised */\n", r->name);
    ew_printf(w, "%s int grid_cuda_%s(const grid_call *c)\n{\n", t->export_fn, r->name);
    emit_write_checks(w, e);
    emit_write_pointers(w, e);
    ew_puts(w, "    const long long n = c->batch, blocks = (n + GRID_CUDA_BLOCK - 1) / GRID_CUDA_BLOCK;\n"
               "    if (blocks > 2147483647LL) return 7;\n");
    emit_write_attrs(w, e);
    ew_puts(w, "    const cudaStream_t s = (cudaStream_t)c->stream;\n"
               "    cudaError_t e;\n");
    if (nvar > 1) {
        emit_write_selector(w, e);
        for (int k = 0; k < nvar; k++) {
            ew_printf(w, "    case %d:\n", k);
            write_launch(w, emit_variant_at(e, k)->fn, "        ");
            ew_puts(w, "        break;\n");
        }
        ew_puts(w, "    }\n");
    } else {
        write_launch(w, emit_variant_at(e, 0)->fn, "    ");
    }
    ew_printf(w, "    e = cudaGetLastError();\n"
                 "    return e == cudaSuccess ? 0 : grid_cuda_fail_(e, \"launching grid_cuda_%s\");\n}\n\n",
              r->name);

    /* host pointers: the round trip on the library's stream */
    ew_printf(w, "/* %s on host arrays: copied in, launched and copied out on the library's stream, synchronised */\n",
              r->name);
    ew_printf(w, "%s int grid_host_%s(const grid_call *c)\n{\n", t->export_fn, r->name);
    emit_write_checks(w, e);
    ew_printf(w, "    const grid_io_ io = {grid_cuda_%s, %d, %d, {", r->name, r->n_in, r->n_out);
    for (int k = 0; k < r->n_in; k++) {
        if (r->in[k].optional) ew_printf(w, "%sc->in[%d] ? %lldLL : 0LL", k ? ", " : "", k, r->in[k].width);
        else ew_printf(w, "%s%lldLL", k ? ", " : "", r->in[k].width);
    }
    ew_puts(w, "}, {");
    for (int k = 0; k < r->n_out; k++) ew_printf(w, "%s%lldLL", k ? ", " : "", r->out[k].width);
    ew_puts(w, "}};\n"
               "    return grid_cuda_round_trip_(c, &io);\n}\n\n");
    /* the ABI's host entry point (include/grid/abi.h) */
    ew_printf(w, "%s int grid_%s(const grid_call *c)\n{\n    return grid_host_%s(c);\n}\n\n", t->export_fn, r->name, r->name);
}
