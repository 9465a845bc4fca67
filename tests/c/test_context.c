/* The runtime context: arena marks and nesting, growth without moving live blocks, alignment, call workspace sizing, allocation failures. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "grid/context.h"
#include "grid/error.h"

/* an allocator that counts, and fails every allocation from the fail_at-th on (0: never) */
typedef struct {
    int calls, live, fail_at;
} counting;

static void *count_alloc(void *user, size_t bytes)
{
    counting *c = user;
    if (c->fail_at && ++c->calls >= c->fail_at) return NULL;
    if (!c->fail_at) c->calls++;
    void *p = malloc(bytes);
    if (p) c->live++;
    return p;
}

static void count_free(void *user, void *p)
{
    counting *c = user;
    c->live--;
    free(p);
}

static int aligned(const void *p, size_t a) { return ((uintptr_t)p & (a - 1)) == 0; }

static void test_mark_release_nesting(void)
{
    grid_context ctx;
    grid_ctx_init(&ctx, NULL);
    CHECK(grid_ctx_in_use(&ctx) == 0 && ctx.base == NULL && ctx.model_version == 0 && ctx.tables == NULL &&
          ctx.stream == NULL);
    const grid_ctx_mark_t m0 = grid_ctx_mark(&ctx);
    char *a = grid_ctx_alloc(&ctx, 100, 0);
    CHECK(a && ctx.status == GRID_OK);
    memset(a, 1, 100);
    const grid_ctx_mark_t m1 = grid_ctx_mark(&ctx);
    char *b = grid_ctx_alloc(&ctx, 200, 0);
    CHECK(b && b >= a + 100);
    memset(b, 2, 200);
    const grid_ctx_mark_t m2 = grid_ctx_mark(&ctx);
    char *c = grid_ctx_alloc(&ctx, 10, 0);
    CHECK(c && c >= b + 200);
    /* releasing the inner mark frees c only: the next allocation takes its place */
    grid_ctx_release(&ctx, m2);
    CHECK(grid_ctx_in_use(&ctx) == m2.used);
    char *c2 = grid_ctx_alloc(&ctx, 10, 0);
    CHECK(c2 == c);
    /* releasing the middle mark frees b and c2; a is untouched */
    grid_ctx_release(&ctx, m1);
    CHECK(grid_ctx_in_use(&ctx) == m1.used && a[0] == 1 && a[99] == 1);
    CHECK(grid_ctx_alloc(&ctx, 200, 0) == b);
    grid_ctx_release(&ctx, m0);
    CHECK(grid_ctx_in_use(&ctx) == 0);
    /* 0 bytes is a valid pointer, distinct from the next one */
    char *z = grid_ctx_alloc(&ctx, 0, 0), *z2 = grid_ctx_alloc(&ctx, 1, 0);
    CHECK(z && z2 && z != z2);
    grid_ctx_free(&ctx);
    CHECK(ctx.base == NULL && ctx.cap == 0 && grid_ctx_in_use(&ctx) == 0);
    grid_ctx_free(&ctx); /* twice is fine */
}

static void test_growth_keeps_live_blocks(void)
{
    counting cnt = {0, 0, 0};
    const grid_ctx_allocator al = {count_alloc, count_free, &cnt};
    grid_context ctx;
    grid_ctx_init(&ctx, &al);
    const grid_ctx_mark_t m0 = grid_ctx_mark(&ctx);
    unsigned char *a = grid_ctx_alloc(&ctx, 1000, 0);
    CHECK(a && ctx.cap >= 1000 && ctx.n_spills == 0);
    const size_t cap0 = ctx.cap;
    memset(a, 0x5a, 1000);
    /* larger than what is left while a is live: a block of its own, a does not move */
    unsigned char *big = grid_ctx_alloc(&ctx, 3 * cap0, 0);
    CHECK(big && ctx.n_spills == 1 && ctx.cap == cap0);
    memset(big, 0x33, 3 * cap0);
    unsigned char *more = grid_ctx_alloc(&ctx, 5 * cap0, 256);
    CHECK(more && aligned(more, 256) && ctx.n_spills == 2);
    memset(more, 0x44, 5 * cap0);
    CHECK(a[0] == 0x5a && a[999] == 0x5a && big[3 * cap0 - 1] == 0x33);
    const size_t peak = grid_ctx_in_use(&ctx);
    CHECK(ctx.peak == peak && peak >= 8 * cap0 + 1000);
    /* a release past the spills frees them */
    grid_ctx_release(&ctx, m0);
    CHECK(ctx.n_spills == 0 && ctx.spill_bytes == 0 && grid_ctx_in_use(&ctx) == 0);
    CHECK(cnt.live == 2); /* the arena and the spill table */
    /* empty again: the next request regrows the arena to the peak, in one allocation */
    unsigned char *a2 = grid_ctx_alloc(&ctx, 1000, 0);
    CHECK(a2 && ctx.cap >= peak && ctx.n_spills == 0);
    CHECK(grid_ctx_alloc(&ctx, 3 * cap0, 0) && grid_ctx_alloc(&ctx, 5 * cap0, 256) && ctx.n_spills == 0);
    /* steady state: the same pattern again allocates nothing */
    grid_ctx_release(&ctx, m0);
    const int calls = cnt.calls;
    for (int r = 0; r < 3; r++) {
        const grid_ctx_mark_t m = grid_ctx_mark(&ctx);
        CHECK(grid_ctx_alloc(&ctx, 1000, 0) && grid_ctx_alloc(&ctx, 3 * cap0, 0) && grid_ctx_alloc(&ctx, 5 * cap0, 256));
        grid_ctx_release(&ctx, m);
    }
    CHECK(cnt.calls == calls);
    /* it never shrinks: a smaller round keeps the capacity */
    const size_t cap1 = ctx.cap;
    CHECK(grid_ctx_alloc(&ctx, 8, 0) && ctx.cap == cap1);
    /* many spills: the table grows */
    grid_ctx_release(&ctx, m0);
    CHECK(grid_ctx_alloc(&ctx, cap1, 0));
    for (int i = 0; i < 40; i++) CHECK(grid_ctx_alloc(&ctx, 100 + (size_t)i, 0));
    CHECK(ctx.n_spills == 40);
    grid_ctx_free(&ctx);
    CHECK(cnt.live == 0);
}

static void test_alignment(void)
{
    grid_context ctx;
    grid_ctx_init(&ctx, NULL);
    static const size_t aligns[] = {1, 2, 8, 16, 64, 128, 4096, 65536};
    for (int r = 0; r < 2; r++)
        for (size_t i = 0; i < sizeof aligns / sizeof aligns[0]; i++) {
            char *p = grid_ctx_alloc(&ctx, 3 + i, aligns[i]);
            CHECK_MSG(p && aligned(p, aligns[i]) && aligned(p, GRID_CTX_ALIGN), "align %zu", aligns[i]);
            if (p) memset(p, 7, 3 + i);
        }
    /* not a power of two */
    CHECK(grid_ctx_alloc(&ctx, 8, 24) == NULL && ctx.status == GRID_ERR_ARG);
    CHECK(grid_ctx_alloc(&ctx, 8, 0) && ctx.status == GRID_OK);
    grid_ctx_free(&ctx);
}

static void test_call_workspace(void)
{
    grid_context ctx;
    grid_ctx_init(&ctx, NULL);
    void *w = (void *)1;
    size_t n = 99;
    /* none needed */
    CHECK(grid_ctx_work(&ctx, 0, 8, &w, &n) == GRID_OK && w == NULL && n == 0 && grid_ctx_in_use(&ctx) == 0);
    /* bytes per thread x threads, in one block, writable to the end */
    const grid_ctx_mark_t m = grid_ctx_mark(&ctx);
    CHECK(grid_ctx_work(&ctx, 1000, 6, &w, &n) == GRID_OK && w && n == 6000 && aligned(w, GRID_CTX_ALIGN));
    if (w) memset(w, 0, n);
    void *w1 = NULL;
    size_t n1 = 0;
    CHECK(grid_ctx_work(&ctx, 24, 0, &w1, &n1) == GRID_OK && w1 && n1 == 24); /* threads < 1 count as 1 */
    CHECK((char *)w1 >= (char *)w + 6000);
    grid_ctx_release(&ctx, m);
    /* the same call again reuses the memory */
    void *w2 = NULL;
    CHECK(grid_ctx_work(&ctx, 1000, 6, &w2, &n) == GRID_OK && w2 == w);
    grid_ctx_release(&ctx, m);
    /* an overflowing product is refused */
    CHECK(grid_ctx_work(&ctx, SIZE_MAX / 2, 3, &w, &n) == GRID_ERR_NOMEM && w == NULL && n == 0);
    CHECK(grid_ctx_work(NULL, 8, 1, &w, &n) == GRID_ERR_ARG && grid_ctx_work(&ctx, 8, 1, NULL, &n) == GRID_ERR_ARG);
    grid_ctx_free(&ctx);
}

static void test_allocation_failures(void)
{
    /* the allocator fails at once: NULL and GRID_ERR_NOMEM, nothing held */
    counting cnt = {0, 0, 1};
    grid_ctx_allocator al = {count_alloc, count_free, &cnt};
    grid_context ctx;
    grid_ctx_init(&ctx, &al);
    CHECK(grid_ctx_alloc(&ctx, 64, 0) == NULL && ctx.status == GRID_ERR_NOMEM && grid_ctx_in_use(&ctx) == 0);
    void *w = (void *)1;
    size_t n = 1;
    CHECK(grid_ctx_work(&ctx, 64, 4, &w, &n) == GRID_ERR_NOMEM && w == NULL && n == 0);
    grid_ctx_free(&ctx);
    CHECK(cnt.live == 0);

    /* the arena succeeds, the spill fails, then the spill table: the live block survives */
    for (int fail = 2; fail <= 3; fail++) {
        counting c2 = {0, 0, fail};
        grid_ctx_allocator a2 = {count_alloc, count_free, &c2};
        grid_ctx_init(&ctx, &a2);
        char *a = grid_ctx_alloc(&ctx, 100, 0);
        CHECK(a);
        if (a) memset(a, 9, 100);
        CHECK(grid_ctx_alloc(&ctx, 1 << 20, 0) == NULL && ctx.status == GRID_ERR_NOMEM);
        CHECK(a && a[99] == 9 && ctx.n_spills == 0 && grid_ctx_in_use(&ctx) == ctx.used);
        grid_ctx_free(&ctx);
        CHECK(c2.live == 0);
    }

    /* a limit: requests past it fail, smaller ones still work */
    grid_ctx_init(&ctx, NULL);
    ctx.limit = 64 * 1024;
    CHECK(grid_ctx_alloc(&ctx, 100 * 1024, 0) == NULL && ctx.status == GRID_ERR_NOMEM);
    char *p = grid_ctx_alloc(&ctx, 40 * 1024, 0);
    CHECK(p && ctx.cap <= ctx.limit);
    CHECK(grid_ctx_alloc(&ctx, 30 * 1024, 0) == NULL && ctx.status == GRID_ERR_NOMEM); /* 70 KB would be held */
    CHECK(grid_ctx_alloc(&ctx, 10 * 1024, 0) != NULL);
    /* sizes that cannot be had at all */
    CHECK(grid_ctx_alloc(&ctx, SIZE_MAX, 0) == NULL && ctx.status == GRID_ERR_NOMEM);
    CHECK(grid_ctx_work(&ctx, SIZE_MAX - 10, 1, (void **)&p, &n) == GRID_ERR_NOMEM);
    grid_ctx_free(&ctx);
}

int main(void)
{
    RUN_TEST(test_mark_release_nesting);
    RUN_TEST(test_growth_keeps_live_blocks);
    RUN_TEST(test_alignment);
    RUN_TEST(test_call_workspace);
    RUN_TEST(test_allocation_failures);
    return check_summary("context");
}
