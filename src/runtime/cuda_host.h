/* The interface between a generated CUDA robot library and the CUDA host runtime linked into it (cuda_runtime.cu), and the runtime's host-side plan (cuda_plan.c: plain C, tested without a GPU). */
#ifndef GRID_CUDA_HOST_H
#define GRID_CUDA_HOST_H

#include <stddef.h>
#include "grid/abi.h"

/* ---- CUDA configuration; each may be set with -D at nvcc time (GRID_RBD_NVCC_FLAGS, docs/cuda.md). A robot's
   kernels and the runtime object it links are compiled with the same flags (one runtime per toolchain). ---- */
#ifndef GRID_CUDA_BLOCK
#define GRID_CUDA_BLOCK 128 /* threads per block, one state per thread */
#endif
#ifndef GRID_CUDA_MIN_BLOCKS
#define GRID_CUDA_MIN_BLOCKS 1 /* __launch_bounds__ minimum blocks per SM (1: ptxas may use 255 registers) */
#endif
#ifndef GRID_CUDA_SMEM_MAX
#define GRID_CUDA_SMEM_MAX 49152 /* shared-memory bytes per block the staging tiles may take */
#endif
#ifndef GRID_CUDA_OUT_STAGE_MAX
#define GRID_CUDA_OUT_STAGE_MAX 64 /* outputs of at most this many elements per state are staged too */
#endif
#ifndef GRID_CUDA_SMEM_MAX_WIDE
#define GRID_CUDA_SMEM_MAX_WIDE 200000 /* a wider (matrix) output is staged when the block's tiles fit this:
   measured on an H200, go2 CRBA/Minv at 1M states 6.4 ms -> 0.64/0.84 ms (bench/gpu_run1) */
#endif
#ifndef GRID_CUDA_OUT_CHUNKED
#define GRID_CUDA_OUT_CHUNKED 1 /* a wide output of an unrolled function: 1 in chunks of 32 elements through a
   32 x 33 tile per warp when the whole output's tile does not fit, 2 always, 0 never (written in place) */
#endif
#ifndef GRID_CUDA_OUT_STREAM
#define GRID_CUDA_OUT_STREAM 1 /* 1: a chunked output's stores are streaming (__stcs, evict-first): g1 CRBA float32 at 1M
   states 4.56 -> 3.83 ms on an H200, the rest within 2% (bench/gpu_run7); 0: plain stores */
#endif
#ifndef GRID_CUDA_INLINE_BIG
#define GRID_CUDA_INLINE_BIG 0 /* 1: a rolled step too large to inline on the C target (EP_INLINE_MAX_NODES) is inlined
   here too; 0: its own __noinline__ function, compiled once for every kernel that runs it (the lane-group sizes'
   and a composite's): go2's idsva_so float32 for sm_90 compiles in 52 s instead of 100 (bench/RESULTS-gpu.md) */
#endif
#if GRID_CUDA_INLINE_BIG
#define GRID_BIG_FN_ static __device__ __forceinline__
#else
#define GRID_BIG_FN_ static __device__ __noinline__
#endif
#ifndef GRID_CUDA_PACK_INPUTS
#define GRID_CUDA_PACK_INPUTS 0 /* host round trip: 1 gathers the inputs in pinned memory for one copy;
   0 (measured faster on an H200: iiwa RNEA B=1024 36.8 -> 32.8 us) copies each input array directly */
#endif
#ifndef GRID_CUDA_ZERO_COPY_MAX
#define GRID_CUDA_ZERO_COPY_MAX 0 /* host round trip: a call moving at most this many bytes (in + out) makes no
   copies: the kernel reads its inputs from and writes its outputs to mapped pinned memory (0: never) */
#endif
#ifndef GRID_CUDA_CHUNK_BYTES
#define GRID_CUDA_CHUNK_BYTES (64LL << 20) /* host round trip: input (or output) bytes per chunk */
#endif
#ifndef GRID_CUDA_CHUNK_MIN_STATES
#define GRID_CUDA_CHUNK_MIN_STATES 256 /* host round trip: states per chunk at least (a wide output's 64 MiB holds
   few: g1's idsva_so 97 states, whose launches are latency-bound, 11 of them 42 ms against 9 ms for one of 1024);
   a call of several chunks copies each chunk's outputs out on a second stream while the next one computes */
#endif
#ifndef GRID_CUDA_GROUP
#define GRID_CUDA_GROUP 8 /* rolled functions with a wide output: lanes that share one state (a power of two up to
   32; the columns loops are split over them); 1: one thread per state. 8 (bench/RESULTS-gpu.md run 14): the rolled
   RNEA gradient of g1 at B = 1024 in 352 us against 1883 with one thread per state, 8.8 ms against 23.4 at 65536
   (32 lanes: 308 us, 12.4 ms) */
#endif
#ifndef GRID_CUDA_GROUP_MIN_OUT
#define GRID_CUDA_GROUP_MIN_OUT 33 /* the output width (elements per state) from which GRID_CUDA_GROUP applies: every
   output wider than a warp's 32 elements (the VJPs' 2 nv included) */
#endif
#ifndef GRID_CUDA_INTERLEAVE
#define GRID_CUDA_INTERLEAVE 1 /* unrolled composites (an FD gradient or VJP over callees without workspace): their
   per-thread arrays interleaved over the warp's 32 lanes, so that each access of a warp is one coalesced line
   (0: each thread's arrays contiguous, the layout before bench/RESULTS-gpu.md run 15) */
#endif
#ifndef GRID_CUDA_SPLIT_MAX
#define GRID_CUDA_SPLIT_MAX 4096 /* a function written in split pieces as well (grid_sx_<fn>, docs/cuda.md "Split
   pieces"): batches of at most this many states run a thread per piece and state (grid_kx_<fn>), so a state's
   work runs on several threads at once; larger batches, one thread per state. 0: never split */
#endif
#ifndef GRID_CUDA_SPLIT_MAX_ROLLED
#define GRID_CUDA_SPLIT_MAX_ROLLED (1LL << 62) /* the same for a function written rolled (its split pieces come from
   its unrolled graph): every batch, the pieces being faster than the rolled kernel at every size measured (go2's RNEA
   gradient at 65536: 800 us against 2354, bench/RESULTS-gpu.md run 16). 0: never split */
#endif
#ifndef GRID_CUDA_STAGED_MAX
#define GRID_CUDA_STAGED_MAX (1LL << 62) /* the FD gradient: batches of at most this many states run staged (docs/cuda.md
   "Staged FD gradient"): qdd = FD, M^-1 and the RNEA gradient by their own kernels (split pieces where they exist) into
   device arrays, then the product a thread per state and column; larger batches, the composite kernel (a thread or a
   group per state). 0: never staged */
#endif
#ifndef GRID_CUDA_FUSE_MAX
#define GRID_CUDA_FUSE_MAX 0 /* the staged FD gradient: batches of at most this many states run its FD and M^-1 in one
   launch (grid_ka_<fn>, in place): faster at B = 1 (go2 51.6 against 58.5 us, g1 189 against 230), slower at 256
   (in-place stores of M^-1: go2 106 against 86), bench/RESULTS-gpu.md run 17. Off by default: the in-place
   functions are not the forms the larger batches' kernels run (M^-1's chunked stores), so a batch of 1 could differ
   from a batch of 1000 in its last bits, which the GPU tests forbid and the device has not checked. 0: never */
#endif
#ifndef GRID_CUDA_STAGED_BYTES
#define GRID_CUDA_STAGED_BYTES (512LL << 20) /* the staged FD gradient's device arrays (qdd, M^-1, dtau) take at most
   this many bytes: a larger batch runs in slices that reuse them */
#endif
#ifndef GRID_CUDA_FILL_BLOCKS
#define GRID_CUDA_FILL_BLOCKS 66 /* a launch of the kernels without staging tiles (split pieces, rolled groups, the
   staged FD gradient's product and fused first stage) that would have fewer blocks than this (half the H200's 132
   SMs) takes smaller blocks, down to a warp, so that a small batch spreads over more SMs (grid_cuda_block_of):
   bench/RESULTS-gpu.md run 17, go2's RNEA gradient (split) at B = 256 in 30.5 us with 32 threads per block against
   43.5 with 128, at 1024 in 36.0 with 64 against 44.2; g1's (rolled groups) at 256 in 125 against 161. The one-thread
   kernels keep GRID_CUDA_BLOCK: iiwa's RNEA gradient took 22.0 us at B = 1024 in blocks of 32 against 19.6.
   0: always GRID_CUDA_BLOCK */
#endif
#ifndef GRID_CUDA_POOL_KEEP
#define GRID_CUDA_POOL_KEEP (1LL << 30) /* bytes of stream-ordered workspace the runtime's own pool keeps mapped
   between calls (its release threshold). The process's default pool (threshold 0) returns its memory at every
   synchronisation and maps it again on the next call: about 150 us of every call that needs workspace
   (bench/RESULTS-gpu.md run 15). 0: the default pool (cudaMallocAsync), as before */
#endif
#ifndef GRID_CUDA_WORK_MAX
#define GRID_CUDA_WORK_MAX (512LL << 20) /* rolled functions: device workspace bytes one launch may use; a larger
   batch is launched in slices that reuse it */
#endif

/* threads per block of a launch of `threads` threads: GRID_CUDA_BLOCK, halved (while it stays a multiple of a warp)
   as long as the launch would have fewer than GRID_CUDA_FILL_BLOCKS blocks; the kernels index by blockDim */
static inline int grid_cuda_block_of(long long threads)
{
    int bs = GRID_CUDA_BLOCK;
    while (bs % 64 == 0 && (threads + bs - 1) / bs < GRID_CUDA_FILL_BLOCKS) bs /= 2;
    return bs;
}

/* internal symbols of a robot library: shared by its translation units, never exported */
#define GRID_CUDA_HIDDEN __attribute__((visibility("hidden")))

#ifdef __cplusplus
extern "C" {
#endif

/* What a host round trip moves: the launcher (grid_cuda_<name>), elements per state of each input of the
   method's row (0: absent, not moved) and of each output, the real type's size, and the workspace bytes per
   state its per-state function needs (0: none). */
typedef struct {
    int (*launch)(const grid_call *);
    int n_in, n_out;
    long long win[GRID_MAX_IN], wout[GRID_MAX_OUT];
    int real_bytes;
    long long work;
} grid_io_;

/* ---- the runtime (cuda_runtime.cu), called by the generated entry points ---- */

/* one host round trip of c (host pointers) on the library's stream: copied in per chunk, launched, copied
   out, synchronised; 0 or a status (11 with grid_cuda_last_error set) */
GRID_CUDA_HIDDEN int grid_cuda_round_trip_(const grid_call *c, const grid_io_ *io);
/* record a failed CUDA call (a cudaError_t) for grid_cuda_last_error; returns 11 (GRID_ERR_CUDA) */
GRID_CUDA_HIDDEN int grid_cuda_fail_(int cuda_error, const char *what);
/* device workspace of bytes for launches on stream (a cudaStream_t), taken from the stream-ordered pool, and
   its return after the launches; 0 or 11 */
GRID_CUDA_HIDDEN int grid_cuda_scratch_(size_t bytes, void *stream, void **p);
GRID_CUDA_HIDDEN int grid_cuda_scratch_done_(void *p, void *stream);

/* the generated library's metadata (what grid_cuda_reserve sizes its buffers from) */
const grid_robot_meta_t *grid_robot_meta(void);

/* ---- the plan: the host-side arithmetic of round trips and reservations (cuda_plan.c) ---- */

/* the compile-time knobs the plan depends on (the runtime passes its GRID_CUDA_* values; tests any) */
typedef struct {
    long long chunk_bytes;     /* GRID_CUDA_CHUNK_BYTES */
    long long zero_copy_max;   /* GRID_CUDA_ZERO_COPY_MAX */
    long long work_max;        /* GRID_CUDA_WORK_MAX */
    int pack_inputs;           /* GRID_CUDA_PACK_INPUTS */
    long long chunk_min_states; /* GRID_CUDA_CHUNK_MIN_STATES */
} grid_cuda_knobs;

/* what one round trip (or a reservation) needs */
typedef struct {
    long long n;                 /* states */
    long long chunk;             /* states per chunk (each chunk: copies in, launch, copies out) */
    long long slice;             /* states per launch of a function with workspace (n when it has none) */
    size_t row[GRID_MAX_IN];     /* bytes per state of each input (0: absent) */
    size_t orow[GRID_MAX_OUT];   /* bytes per state of each output */
    size_t in_b, out_b, work_b;  /* bytes per state: all inputs, all outputs, the workspace */
    int n_in, n_out;
    int zero_copy;               /* 1: no copies, the call goes through mapped pinned memory */
    int pack;                    /* 1: a chunk's inputs are gathered into pinned staging for one copy */
    int out_halves;              /* 2: several chunks, outputs in two halves of dout (one copied out while the next
                                    chunk computes into the other); 1: one chunk */
    size_t din_bytes, dout_bytes, dws_bytes;  /* device buffers: a chunk's inputs, its outputs (out_halves of
                                                 them), the workspace */
    size_t hin_bytes;            /* pinned staging, two halves (pack) */
    size_t hz_bytes;             /* mapped pinned memory (zero copy) */
} grid_cuda_plan;

/* states a launch's workspace covers: n rounded up to whole warps (lanes past the batch have their own slice) */
GRID_CUDA_HIDDEN long long grid_cuda_in_flight(long long n);
/* states per launch for work_b bytes of workspace per state within work_max bytes (whole warps, at least
   one warp; n when work_b is 0) */
GRID_CUDA_HIDDEN long long grid_cuda_slice_states(long long n, size_t work_b, long long work_max);
/* states per chunk of n moving in_b bytes in and out_b bytes out per state: chunk_bytes on the wider side,
   at least min_states and 32, at most n */
GRID_CUDA_HIDDEN long long grid_cuda_chunk_states(long long n, size_t in_b, size_t out_b, long long chunk_bytes,
                                                  long long min_states);
/* the plan of a round trip of n states of io under knobs k */
GRID_CUDA_HIDDEN void grid_cuda_plan_call(const grid_io_ *io, long long n, const grid_cuda_knobs *k, grid_cuda_plan *p);
/* byte offsets of input j / output j in a block of k states laid out in the row's order (each k rows; absent
   inputs take no room): the device buffers of a chunk, and the mapped memory of a zero-copy call (inputs then
   outputs) */
GRID_CUDA_HIDDEN size_t grid_cuda_in_offset(const grid_cuda_plan *p, int j, long long k);
GRID_CUDA_HIDDEN size_t grid_cuda_out_offset(const grid_cuda_plan *p, int j, long long k);
/* buffers for round trips of up to max_batch states of any row of m (the widest inputs, outputs and workspace):
   0, or -1 when they would not fit a size_t */
GRID_CUDA_HIDDEN int grid_cuda_plan_reserve(const grid_robot_meta_t *m, long long max_batch, const grid_cuda_knobs *k,
                                            grid_cuda_plan *p);

#ifdef __cplusplus
}
#endif
#endif
