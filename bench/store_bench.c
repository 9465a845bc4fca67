/* Times the store path of generated C (src/emit/lane_store.h) against the core's plain store bandwidth: a tile's lane vectors written to B rows of n reals, cached or streamed; prints JSON. */
/*
 * usage: store_bench [--n N] [--batch B] [--runs R]    (N one of STORE_SIZES: the emitted code's row length is a
 *                                                       constant, so is this one's)
 *   bandwidth_plain / bandwidth_stream: one core writing a B*n-double buffer with plain / streaming
 *   32-byte stores (the ceilings); scatter_plain / scatter_stream: the generated code's tile stores
 *   (grid_scatter_ / grid_stream_scatter_) writing the same buffer from one tile of lane vectors
 *   (the output of a lane function, kept in cache), GRID_LANES = 4 doubles. GB/s of output written, best of R.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef double grid_real;
#define GRID_LANES 4
#define GRID_REAL_BYTES_ 8
typedef grid_real grid_vec __attribute__((vector_size(GRID_LANES * sizeof(grid_real))));
#include "../src/emit/lane_store.h"

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* the ceiling: one core streaming a buffer front to back */
static void stream_fill(double *out, size_t total, grid_vec v)
{
#if GRID_CAN_STREAM_
    for (size_t i = 0; i + 4 <= total; i += 4) GRID_STREAM_STORE_(out + i, v);
    grid_stream_fence_();
#else
    (void)out, (void)total, (void)v;
#endif
}

/* row lengths timed, as compile-time constants the way generated code has them: g1_29dof's M (35 x 35),
   talos's M (38 x 38), g1's gradient rows (35 x 70) */
#define STORE_SIZES X(1225) X(1444) X(2450)

/* best seconds of each mode over runs; out holds batch rows of n */
#define X(N)                                                                                                  \
    static void time_##N(double *out, const grid_vec *to, long long batch, int runs, double *best)             \
    {                                                                                                         \
        const long long n = N;                                                                                \
        const size_t total = (size_t)n * (size_t)batch;                                                       \
        for (int r = 0; r < runs; r++)                                                                        \
            for (int mode = 0; mode < 4; mode++) {                                                            \
                const double t0 = now_seconds();                                                              \
                if (mode == 0) {                                                                              \
                    const grid_vec v = to[r % n];                                                             \
                    for (size_t i = 0; i + 4 <= total; i += 4) __builtin_memcpy(out + i, &v, sizeof v);       \
                } else if (mode == 1) {                                                                       \
                    stream_fill(out, total, to[r % n]);                                                       \
                } else if (mode == 2) {                                                                       \
                    for (long long b = 0; b < batch; b += 4) {                                                \
                        grid_real *rows[4] = {out + b * n, out + (b + 1) * n, out + (b + 2) * n, out + (b + 3) * n}; \
                        grid_scatter_(to, N, rows);                                                           \
                    }                                                                                         \
                } else {                                                                                      \
                    for (long long b = 0; b < batch; b += 4) grid_stream_scatter_(to, N, out + b * n);        \
                    grid_stream_fence_();                                                                     \
                }                                                                                             \
                const double dt = now_seconds() - t0;                                                         \
                if (dt < best[mode]) best[mode] = dt;                                                         \
            }                                                                                                 \
    }
STORE_SIZES
#undef X

int main(int argc, char **argv)
{
    long long n = 2450, batch = 4096;
    int runs = 9;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--n")) n = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--batch")) batch = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--runs")) runs = atoi(argv[i + 1]);
    }
    if (n < 1 || batch < 4 || runs < 1) {
        fprintf(stderr, "store_bench: --n >= 1, --batch >= 4, --runs >= 1\n");
        return 2;
    }
    batch -= batch % 4;
    const size_t total = (size_t)n * (size_t)batch;
    double *out = aligned_alloc(64, (total * sizeof(double) + 63) / 64 * 64);
    grid_vec *to = aligned_alloc(64, sizeof(grid_vec) * (size_t)GRID_STREAM_PAD_(n));
    if (!out || !to) return 3;
    for (long long k = 0; k < GRID_STREAM_PAD_(n); k++)
        for (int l = 0; l < 4; l++) to[k][l] = (double)(k * 4 + l);
    memset(out, 0, total * sizeof(double));
    const char *names[4] = {"bandwidth_plain", "bandwidth_stream", "scatter_plain", "scatter_stream"};
    double best[4] = {1e30, 1e30, 1e30, 1e30};
    int known = 0;
#define X(N) if (n == N) time_##N(out, to, batch, runs, best), known = 1;
    STORE_SIZES
#undef X
    if (!known) {
        fprintf(stderr, "store_bench: --n must be one of the compiled sizes (STORE_SIZES)\n");
        return 2;
    }
    /* every element written by the last (streamed) scatter: lane l of row b % 4 */
    long long bad = 0;
    for (long long b = 0; b < batch; b++)
        for (long long k = 0; k < n; k++) bad += out[b * n + k] != (double)(k * 4 + b % 4);
    printf("{\"n\": %lld, \"batch\": %lld, \"bytes\": %zu, \"can_stream\": %d, \"wrong_elements\": %lld", n, batch,
           total * sizeof(double), GRID_CAN_STREAM_, bad);
    for (int m = 0; m < 4; m++)
        printf(", \"%s_gbs\": %.2f", names[m], (m == 1 && !GRID_CAN_STREAM_) ? 0.0 : total * sizeof(double) / best[m] / 1e9);
    printf("}\n");
    free(out);
    free(to);
    return bad ? 1 : 0;
}
