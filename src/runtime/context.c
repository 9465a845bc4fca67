/* The runtime context: a stack-like workspace arena (one allocation in steady state, spill blocks while it grows) and the per-thread workspace of a call. */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "grid/context.h"
#include "grid/error.h"

static void *ctx_raw_alloc(grid_context *ctx, size_t bytes)
{
    return ctx->allocator.alloc ? ctx->allocator.alloc(ctx->allocator.user, bytes) : malloc(bytes);
}

static void ctx_raw_free(grid_context *ctx, void *p)
{
    if (!p) return;
    if (ctx->allocator.release) ctx->allocator.release(ctx->allocator.user, p);
    else free(p);
}

/* x rounded up to a multiple of a (a power of two); 0 when that overflows */
static size_t round_up(size_t x, size_t a)
{
    return x > SIZE_MAX - (a - 1) ? 0 : (x + a - 1) & ~(a - 1);
}

void grid_ctx_init(grid_context *ctx, const grid_ctx_allocator *allocator)
{
    assert(ctx);
    memset(ctx, 0, sizeof *ctx);
    if (allocator) ctx->allocator = *allocator;
}

void grid_ctx_free(grid_context *ctx)
{
    if (!ctx) return;
    grid_ctx_release(ctx, (grid_ctx_mark_t){0, 0});
    ctx_raw_free(ctx, ctx->base_mem);
    ctx_raw_free(ctx, ctx->spills);
    const grid_ctx_allocator a = ctx->allocator;
    memset(ctx, 0, sizeof *ctx);
    ctx->allocator = a;
}

grid_ctx_mark_t grid_ctx_mark(const grid_context *ctx)
{
    assert(ctx);
    return (grid_ctx_mark_t){ctx->used, ctx->n_spills};
}

size_t grid_ctx_in_use(const grid_context *ctx)
{
    return ctx->used + ctx->spill_bytes;
}

void grid_ctx_release(grid_context *ctx, grid_ctx_mark_t mark)
{
    assert(ctx && mark.used <= ctx->used && mark.n_spills >= 0 && mark.n_spills <= ctx->n_spills);
    while (ctx->n_spills > mark.n_spills) {
        grid_ctx_spill *s = &ctx->spills[--ctx->n_spills];
        ctx->spill_bytes -= s->bytes;
        ctx_raw_free(ctx, s->mem);
    }
    ctx->used = mark.used;
}

/* an aligned block of `bytes` from the allocator: *mem is what to free; NULL when it fails */
static unsigned char *aligned_block(grid_context *ctx, size_t bytes, size_t align, void **mem)
{
    const size_t total = bytes + (align - 1);
    *mem = total < bytes ? NULL : ctx_raw_alloc(ctx, total);
    if (!*mem) return NULL;
    return (unsigned char *)(((uintptr_t)*mem + (align - 1)) & ~(uintptr_t)(align - 1));
}

/* the empty arena regrown to hold at least need bytes (the peak use seen, when larger, within the limit); 0 or -1 */
static int regrow(grid_context *ctx, size_t need)
{
    assert(ctx->used == 0 && ctx->n_spills == 0);
    size_t want = round_up(ctx->peak > need ? ctx->peak : need, 4096);
    if (!want) want = need;
    if (ctx->limit && want > ctx->limit) want = ctx->limit;
    if (want < need) return -1;
    ctx_raw_free(ctx, ctx->base_mem);
    ctx->base = NULL;
    ctx->base_mem = NULL;
    ctx->cap = 0;
    void *mem;
    unsigned char *b = aligned_block(ctx, want, GRID_CTX_ALIGN, &mem);
    if (!b && want > need) b = aligned_block(ctx, want = need, GRID_CTX_ALIGN, &mem);
    if (!b) return -1;
    ctx->base = b;
    ctx->base_mem = mem;
    ctx->cap = want;
    return 0;
}

void *grid_ctx_alloc(grid_context *ctx, size_t bytes, size_t align)
{
    assert(ctx);
    if (align == 0) align = GRID_CTX_ALIGN;
    if (align & (align - 1)) {
        ctx->status = GRID_ERR_ARG;
        return NULL;
    }
    if (align < GRID_CTX_ALIGN) align = GRID_CTX_ALIGN;
    /* every block a whole number of cache lines: neighbours (threads' slices) never share one */
    const size_t size = round_up(bytes ? bytes : 1, GRID_CTX_ALIGN);
    ctx->status = GRID_ERR_NOMEM;
    if (!size || size > SIZE_MAX / 2 || align > SIZE_MAX / 4) return NULL;
    if (ctx->limit && size > ctx->limit) return NULL;

    /* empty and smaller than the request or the peak: one allocation of the peak (the request included);
       the limit counts the arena's capacity and the live spills */
    const size_t worst = size + (align > GRID_CTX_ALIGN ? align : 0);
    if (ctx->used == 0 && ctx->n_spills == 0 && (ctx->cap < worst || ctx->cap < ctx->peak) && regrow(ctx, worst) != 0)
        return NULL;
    unsigned char *p = NULL;
    if (ctx->base) {
        const uintptr_t at = ((uintptr_t)(ctx->base + ctx->used) + (align - 1)) & ~(uintptr_t)(align - 1);
        const size_t off = (size_t)(at - (uintptr_t)ctx->base);
        if (off <= ctx->cap && size <= ctx->cap - off) {
            p = ctx->base + off;
            ctx->used = off + size;
        }
    }
    if (!p) {
        /* in use and full: a block of its own, freed by the release that passes it */
        if (ctx->limit && (ctx->cap > ctx->limit || ctx->spill_bytes + size > ctx->limit - ctx->cap)) return NULL;
        if (ctx->n_spills == ctx->spill_cap) {
            const int ncap = ctx->spill_cap ? 2 * ctx->spill_cap : 8;
            grid_ctx_spill *s = ctx_raw_alloc(ctx, (size_t)ncap * sizeof *s);
            if (!s) return NULL;
            if (ctx->n_spills) memcpy(s, ctx->spills, (size_t)ctx->n_spills * sizeof *s);
            ctx_raw_free(ctx, ctx->spills);
            ctx->spills = s;
            ctx->spill_cap = ncap;
        }
        void *mem;
        p = aligned_block(ctx, size, align, &mem);
        if (!p) return NULL;
        ctx->spills[ctx->n_spills++] = (grid_ctx_spill){mem, size};
        ctx->spill_bytes += size;
    }
    if (grid_ctx_in_use(ctx) > ctx->peak) ctx->peak = grid_ctx_in_use(ctx);
    ctx->status = GRID_OK;
    return p;
}

int grid_ctx_work(grid_context *ctx, size_t bytes_per_thread, int threads, void **work, size_t *work_bytes)
{
    if (!ctx || !work || !work_bytes) return GRID_ERR_ARG;
    *work = NULL;
    *work_bytes = 0;
    if (bytes_per_thread == 0) return ctx->status = GRID_OK;
    const size_t n = threads < 1 ? 1 : (size_t)threads;
    if (bytes_per_thread > SIZE_MAX / n) return ctx->status = GRID_ERR_NOMEM;
    void *p = grid_ctx_alloc(ctx, bytes_per_thread * n, GRID_CTX_ALIGN);
    if (!p) return ctx->status;
    *work = p;
    *work_bytes = bytes_per_thread * n;
    return GRID_OK;
}
