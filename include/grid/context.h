/* The runtime context (the model/data split): the mutable state one caller runs a model with, next to the immutable grid_model. */
#ifndef GRID_CONTEXT_H
#define GRID_CONTEXT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The model is immutable and shared; a context is owned by one caller (one thread at a time) and holds
   what a call needs besides its arrays:
   - a workspace arena: one allocation, handed out stack-wise (grid_ctx_mark / grid_ctx_alloc /
     grid_ctx_release). A request that does not fit while other allocations are live gets a block of its
     own (live pointers never move); once the arena is empty again it is regrown, in one allocation, to
     the peak use seen, so steady-state calls allocate nothing. It never shrinks (grid_ctx_free frees it).
   - the per-thread workspace of a call (grid_ctx_work: grid_call.work / work_bytes). Generated code never
     allocates; it states its workspace in the signature rows (work_bytes per thread).
   - model_version and the mutable tables slot: reserved for the issues that make parts of the model
     mutable (e.g. inertias or limits changed without rebuilding). A generated library would read its
     tables from `tables` and caches keyed on a model compare `model_version`. Unused today.
   - stream: for CUDA, the cudaStream_t calls through this context launch on (NULL: the default stream).
   Failures are reported, never fatal: a failed allocation returns NULL (or its status) and records
   GRID_ERR_NOMEM in `status`. */

/* an allocator for the arena (tests inject failures through it); NULL fields mean malloc / free */
typedef struct {
    void *(*alloc)(void *user, size_t bytes);   /* NULL on failure */
    void (*release)(void *user, void *p);
    void *user;
} grid_ctx_allocator;

/* a request that did not fit the arena while it was in use: a block of its own until released */
typedef struct {
    void *mem;                  /* what the allocator returned */
    size_t bytes;               /* what it counts against the limit and the peak */
} grid_ctx_spill;

typedef struct {
    /* the arena */
    unsigned char *base;        /* one allocation of cap bytes (GRID_CTX_ALIGN-aligned), NULL before first use */
    void *base_mem;             /* what the allocator returned for base */
    size_t cap;                 /* bytes at base */
    size_t used;                /* bytes of base handed out (the top of the stack) */
    grid_ctx_spill *spills;     /* blocks beyond the arena, in allocation order */
    int n_spills, spill_cap;
    size_t spill_bytes;         /* bytes the live spills hold */
    size_t peak;                /* the most bytes in use at once (arena + spills): the next regrowth's size */
    size_t limit;               /* 0: none; else the most bytes arena + spills may hold (requests past it fail) */
    grid_ctx_allocator allocator;
    int status;                 /* the status of the last request (GRID_OK, GRID_ERR_NOMEM, GRID_ERR_ARG) */

    /* reserved for mutable model data (unused today, see above) */
    unsigned long long model_version;  /* bumped whenever `tables` change */
    void *tables;                      /* mutable model tables, owned by whoever sets them */
    size_t tables_bytes;

    /* CUDA: the cudaStream_t of calls made through this context (NULL = the default stream) */
    void *stream;
} grid_context;

/* a position of the arena's stack, to release back to */
typedef struct {
    size_t used;
    int n_spills;
} grid_ctx_mark_t;

/* every allocation is aligned at least to this many bytes (a cache line) */
#define GRID_CTX_ALIGN 64

/* an empty context (nothing allocated until the first request); allocator may be NULL (malloc / free) */
void grid_ctx_init(grid_context *ctx, const grid_ctx_allocator *allocator);
/* free everything the context holds (it can be initialised again) */
void grid_ctx_free(grid_context *ctx);

grid_ctx_mark_t grid_ctx_mark(const grid_context *ctx);
/* bytes at an address aligned to align (a power of two; 0 = GRID_CTX_ALIGN; smaller ones are raised to it),
   valid until released past; NULL with status GRID_ERR_NOMEM when memory (or the limit) runs out,
   GRID_ERR_ARG when align is not a power of two. bytes 0 returns a valid, unique-until-released pointer. */
void *grid_ctx_alloc(grid_context *ctx, size_t bytes, size_t align);
/* frees everything allocated after mark (marks nest like a stack) */
void grid_ctx_release(grid_context *ctx, grid_ctx_mark_t mark);
/* bytes in use (arena + spills) */
size_t grid_ctx_in_use(const grid_context *ctx);

/* The workspace of one call: bytes_per_thread for each of threads threads (threads < 1 counts as 1), one
   block from the arena, for grid_call.work / work_bytes. *work = NULL and *work_bytes = 0 when none is
   needed (bytes_per_thread 0). Release it with a mark taken before. Returns GRID_OK, GRID_ERR_NOMEM (out of
   memory or the product overflows), GRID_ERR_ARG (NULL pointers). */
int grid_ctx_work(grid_context *ctx, size_t bytes_per_thread, int threads, void **work, size_t *work_bytes);

#ifdef __cplusplus
}
#endif
#endif
