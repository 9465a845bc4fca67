/* Tests the tile stores of src/emit/lane_store.h (cached and streamed) on four lanes of doubles: every length, every alignment, nothing outside the rows touched. */
#include <stdint.h>
#include <stdlib.h>
#include "check.h"

typedef double grid_real;
#define GRID_LANES 4
#define GRID_REAL_BYTES_ 8
typedef grid_real grid_vec __attribute__((vector_size(GRID_LANES * sizeof(grid_real))));
#include "../../src/emit/lane_store.h"

#define MAXN 70
#define GUARD 8
static const double POISON = -12345.25;

/* a distinct value for element k of lane l */
static double value(int k, int l) { return 1000.0 * l + k + 0.5; }

static void fill_tile(grid_vec *to, int n)
{
    for (int k = 0; k < GRID_STREAM_PAD_(n); k++)
        for (int l = 0; l < 4; l++) to[k][l] = k < n ? value(k, l) : 7.0e300; /* the pad is never stored */
}

/* rows l at o + l*n hold lane l's elements; the guards around them are untouched */
static int rows_ok(const double *buf, int off, int n)
{
    for (int i = 0; i < GUARD + off; i++)
        if (buf[i] != POISON) return 0;
    const double *o = buf + GUARD + off;
    for (int l = 0; l < 4; l++)
        for (int k = 0; k < n; k++)
            if (o[l * n + k] != value(k, l)) return 0;
    for (int i = 0; i < GUARD; i++)
        if (o[4 * n + i] != POISON) return 0;
    return 1;
}

/* the two stores of a tile of n elements into rows at o, o + n, o + 2n, o + 3n */
static void store_streamed(const grid_vec *to, int n, double *o)
{
    grid_stream_scatter_(to, n, o);
    grid_stream_fence_();
}

static void store_cached(const grid_vec *to, int n, double *o)
{
    double *rows[4] = {o, o + n, o + 2 * n, o + 3 * n};
    grid_scatter_(to, n, rows);
}

/* every length up to MAXN, every offset from a 64-byte boundary: the rows hold the tile, the guards are untouched */
static void check_every_length_and_alignment(void (*store)(const grid_vec *, int, double *), const char *what)
{
    static grid_vec to[GRID_STREAM_PAD_(MAXN)];
    const int len = 4 * MAXN + 3 * GUARD + 16;
    double *buf = aligned_alloc(64, sizeof(double) * len);
    for (int n = 1; n <= MAXN; n++)
        for (int off = 0; off < 8; off++) {
            for (int i = 0; i < len; i++) buf[i] = POISON;
            fill_tile(to, n);
            store(to, n, buf + GUARD + off);
            CHECK_MSG(rows_ok(buf, off, n), "%s: n = %d, offset %d doubles from 64-byte alignment", what, n, off);
        }
    free(buf);
}

static void test_streamed_rows_every_length_and_alignment(void) { check_every_length_and_alignment(store_streamed, "streamed"); }

static void test_cached_rows_every_length(void) { check_every_length_and_alignment(store_cached, "cached"); }

/* this file is compiled with AVX (Makefile): the streamed path, not its fallback, is what ran */
static void test_streaming_is_compiled_in(void)
{
#ifdef __AVX__
    CHECK(GRID_CAN_STREAM_ == 1);
#else
    CHECK_MSG(0, "tests/c/test_lane_store.c must be compiled with -mavx (Makefile)");
#endif
}

int main(void)
{
    if (!__builtin_cpu_supports("avx")) {
        printf("test_lane_store: skipped (this CPU has no AVX)\n");
        return 0;
    }
    RUN_TEST(test_streaming_is_compiled_in);
    RUN_TEST(test_streamed_rows_every_length_and_alignment);
    RUN_TEST(test_cached_rows_every_length);
    return check_summary("test_lane_store");
}
