// CPU emulation of the CUDA execution model for a generated robot.cu (test_cuda_compile.py): the lanes of a warp run as
// cooperative fibers (ucontext) on the calling thread, switched at every __syncwarp (the only synchronisation the
// generated kernels and the host runtime use), warps and blocks one after another; dynamic shared memory is a poisoned
// buffer per block, and the CUDA runtime calls the host runtime makes are served from host memory. The source is
// rewritten for it first (cuda_runtime.h -> this file, extern __shared__ -> the block's buffer, <<<...>>> -> emu_launch).
#pragma once
#include <sys/mman.h>
#include <ucontext.h>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <math.h>
#include <memory>
#include <thread>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline)) /* (after the standard headers, which spell it as an attribute) */
#define __constant__
#define __align__(x)
#define __launch_bounds__(...)
#define __grid_constant__

struct emu_dim {
    unsigned x, y, z;
};
inline thread_local emu_dim threadIdx, blockIdx, blockDim, gridDim;
inline thread_local unsigned char *emu_smem_ptr;
// the fibers of the warp being run: lane contexts, and the scheduler's context a lane yields to
struct emu_lane {
    ucontext_t ctx;
    bool done;
};
inline thread_local ucontext_t emu_sched_ctx;
inline thread_local emu_lane *emu_cur;
inline void __syncwarp(unsigned = 0xffffffffu) { swapcontext(&emu_cur->ctx, &emu_sched_ctx); }
template <class T> inline T __ldg(const T *p) { return *p; }
template <class T> inline void __stcs(T *p, T v) { *p = v; } /* a streaming store: a plain one here */

// ---- the runtime API, on host memory ----
typedef int cudaError_t;
enum { cudaSuccess = 0, cudaErrorMemoryAllocation = 2 };
typedef void *cudaStream_t;
typedef void *cudaEvent_t;
enum cudaMemcpyKind { cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2 };
enum { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };
#define cudaStreamNonBlocking 1
#define cudaEventDisableTiming 2
#define cudaHostAllocPortable 1
#define cudaHostAllocMapped 2
#define CUDART_VERSION 13000
struct cudaDeviceProp {
    char name[256];
    int major, minor, multiProcessorCount, l2CacheSize, regsPerMultiprocessor;
    size_t sharedMemPerMultiprocessor, sharedMemPerBlockOptin, totalGlobalMem;
};
inline size_t emu_alloc_limit = (size_t)1 << 40;  // cudaMalloc beyond this fails (out of memory)
inline cudaError_t emu_last = 0;
inline cudaError_t cudaMalloc(void **p, size_t n)
{
    if (n > emu_alloc_limit) {
        *p = 0;
        return emu_last = cudaErrorMemoryAllocation;
    }
    *p = malloc(n ? n : 1);
    return 0;
}
inline cudaError_t cudaFree(void *p) { free(p); return 0; }
inline int emu_async_live = 0;  // stream-ordered allocations not yet freed (the harness checks it returns to 0)
inline cudaError_t cudaMallocAsync(void **p, size_t n, cudaStream_t)
{
    cudaError_t e = cudaMalloc(p, n);
    if (!e) __atomic_add_fetch(&emu_async_live, 1, __ATOMIC_RELAXED);
    return e;
}
// the runtime's own pool (cudaMemPoolCreate): the same counted allocations
typedef void *cudaMemPool_t;
enum cudaMemAllocationType { cudaMemAllocationTypePinned = 1 };
enum cudaMemAllocationHandleType { cudaMemHandleTypeNone = 0 };
enum cudaMemLocationType { cudaMemLocationTypeDevice = 1 };
enum cudaMemPoolAttr { cudaMemPoolAttrReleaseThreshold = 4 };
struct cudaMemLocation { cudaMemLocationType type; int id; };
struct cudaMemPoolProps { cudaMemAllocationType allocType; cudaMemAllocationHandleType handleTypes; cudaMemLocation location; };
inline int emu_pools = 0;  // pools created (one per device at most)
inline cudaError_t cudaMemPoolCreate(cudaMemPool_t *p, const cudaMemPoolProps *props)
{
    if (props->location.type != cudaMemLocationTypeDevice || props->allocType != cudaMemAllocationTypePinned) return 1;
    *p = (void *)(0x100 + __atomic_add_fetch(&emu_pools, 1, __ATOMIC_RELAXED));
    return 0;
}
inline cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t, cudaMemPoolAttr a, void *v)
{
    return a == cudaMemPoolAttrReleaseThreshold && *(unsigned long long *)v > 0 ? 0 : 1;
}
inline cudaError_t cudaMemPoolDestroy(cudaMemPool_t) { return 0; }
inline cudaError_t cudaMallocFromPoolAsync(void **p, size_t n, cudaMemPool_t pool, cudaStream_t s)
{
    return pool ? cudaMallocAsync(p, n, s) : 1;
}
inline cudaError_t cudaFreeAsync(void *p, cudaStream_t)
{
    __atomic_sub_fetch(&emu_async_live, 1, __ATOMIC_RELAXED);
    free(p);
    return 0;
}
inline cudaError_t cudaHostAlloc(void **p, size_t n, unsigned) { *p = malloc(n ? n : 1); return 0; }
inline cudaError_t cudaFreeHost(void *p) { free(p); return 0; }
inline cudaError_t cudaHostGetDevicePointer(void **d, void *h, unsigned) { *d = h; return 0; }
inline cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, cudaMemcpyKind, cudaStream_t) { memcpy(d, s, n); return 0; }
inline cudaError_t cudaStreamSynchronize(cudaStream_t) { return 0; }
inline cudaError_t cudaEventSynchronize(cudaEvent_t) { return 0; }
inline cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t) { return 0; }
inline cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned) { return 0; }
inline cudaError_t cudaEventDestroy(cudaEvent_t) { return 0; }
inline cudaError_t cudaEventCreate(cudaEvent_t *e) { *e = (void *)0x9; return 0; }
inline cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t, cudaEvent_t) { *ms = 0.001f; return 0; }
inline cudaError_t cudaStreamDestroy(cudaStream_t) { return 0; }
inline cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned) { *s = (void *)0x5; return 0; }
inline cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned) { *e = (void *)0x7; return 0; }
inline cudaError_t cudaSetDevice(int) { return 0; }
inline cudaError_t cudaGetDevice(int *d) { *d = 0; return 0; }
inline cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int)
{
    memset(p, 0, sizeof *p);
    strcpy(p->name, "emulated \"GPU\"");
    p->major = 9;
    p->multiProcessorCount = 1;
    return 0;
}
inline cudaError_t cudaDriverGetVersion(int *v) { *v = 13000; return 0; }
inline cudaError_t cudaRuntimeGetVersion(int *v) { *v = 13000; return 0; }
inline cudaError_t cudaGetLastError()
{
    cudaError_t e = emu_last;
    emu_last = 0;
    return e;
}
template <class F> inline cudaError_t cudaFuncSetAttribute(F, int, int) { return 0; }
inline const char *cudaGetErrorString(cudaError_t e) { return e ? "out of memory" : "no error"; }
inline const char *cudaGetErrorName(cudaError_t e) { return e ? "cudaErrorMemoryAllocation" : "cudaSuccess"; }

// ---- kernel launches: blocks and warps one after another, the lanes of a warp as fibers ----
// A warp runs in rounds: each live lane runs until its next __syncwarp or its end, so a round is one phase of the
// warp barrier (a finished lane drops out of it, as arrive_and_drop). Lane stacks (8 MiB each, committed as touched,
// like a thread's) are kept per calling thread and reused.
inline long long emu_smem_max = 0;
inline thread_local void (*emu_body)(void *);
inline thread_local void *emu_body_arg;
inline void emu_lane_main()
{
    emu_body(emu_body_arg);
    emu_cur->done = true; // uc_link returns to the scheduler
}
inline unsigned char *emu_lane_stack(unsigned lane, size_t bytes)
{
    static thread_local unsigned char *stacks[32];
    if (!stacks[lane]) {
        void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED) {
            fprintf(stderr, "emu: no memory for a lane stack\n");
            abort();
        }
        stacks[lane] = (unsigned char *)p;
    }
    return stacks[lane];
}
template <class K, class... A>
void emu_launch(K kernel, unsigned blocks, unsigned threads, long long smem, cudaStream_t, A... args)
{
    const size_t stack_bytes = (size_t)8 << 20;
    if (smem > emu_smem_max) emu_smem_max = smem;
    auto body = [&]() { kernel(args...); };
    emu_body = [](void *f) { (*(decltype(body) *)f)(); };
    emu_body_arg = &body;
    for (unsigned b = 0; b < blocks; b++) {
        std::vector<unsigned char> sm(smem > 0 ? smem : 1, 0xAB); // poisoned: an unstaged read shows as garbage
        emu_smem_ptr = sm.data();
        for (unsigned w0 = 0; w0 < threads; w0 += 32) {
            const unsigned n = threads - w0 < 32 ? threads - w0 : 32;
            emu_lane lanes[32];
            for (unsigned l = 0; l < n; l++) {
                getcontext(&lanes[l].ctx);
                lanes[l].ctx.uc_stack.ss_sp = emu_lane_stack(l, stack_bytes);
                lanes[l].ctx.uc_stack.ss_size = stack_bytes;
                lanes[l].ctx.uc_link = &emu_sched_ctx;
                lanes[l].done = false;
                makecontext(&lanes[l].ctx, emu_lane_main, 0);
            }
            for (unsigned live = n; live > 0;) {
                live = 0;
                for (unsigned l = 0; l < n; l++) {
                    if (lanes[l].done) continue;
                    threadIdx = {w0 + l, 0, 0};
                    blockIdx = {b, 0, 0};
                    blockDim = {threads, 1, 1};
                    gridDim = {blocks, 1, 1};
                    emu_cur = &lanes[l];
                    swapcontext(&emu_sched_ctx, &lanes[l].ctx);
                    live += !lanes[l].done;
                }
            }
        }
    }
}
