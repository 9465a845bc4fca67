/* Stores of a tile's outputs (one lane vector per output element) into its lanes' rows of the batch output: cached, or streamed past the caches for large batches; written verbatim into generated C. */
/*
 * The emitter copies this file (embedded with .incbin, src/emit/math_helpers.c) after the lane vector type, so it
 * needs grid_real, grid_vec (GRID_LANES reals), GRID_LANES and GRID_REAL_BYTES_ (sizeof(grid_real));
 * tests/c/test_lane_store.c and bench/store_bench.c include it directly. Both stores write the same values: only the store instruction differs, so a batch's
 * results stay bitwise identical whichever is taken.
 */

#if GRID_LANES == 4 && (defined(__clang__) || __GNUC__ >= 12)
#define GRID_CAN_SHUFFLE_ 1
/* block m of the tile transposed: x[l] = elements 4m .. 4m+3 of lane l */
static inline __attribute__((always_inline, unused)) void grid_block_(const grid_vec *to, const int m, grid_vec *x)
{
    const grid_vec *b = to + 4 * m;
    const grid_vec t0 = __builtin_shufflevector(b[0], b[1], 0, 4, 2, 6);
    const grid_vec t1 = __builtin_shufflevector(b[0], b[1], 1, 5, 3, 7);
    const grid_vec t2 = __builtin_shufflevector(b[2], b[3], 0, 4, 2, 6);
    const grid_vec t3 = __builtin_shufflevector(b[2], b[3], 1, 5, 3, 7);
    x[0] = __builtin_shufflevector(t0, t2, 0, 1, 4, 5);
    x[1] = __builtin_shufflevector(t1, t3, 0, 1, 4, 5);
    x[2] = __builtin_shufflevector(t0, t2, 2, 3, 6, 7);
    x[3] = __builtin_shufflevector(t1, t3, 2, 3, 6, 7);
}
#else
#define GRID_CAN_SHUFFLE_ 0
#endif

/* output elements 0..n-1 of a tile to each lane's row: blocks of lanes x lanes transposed in registers
   and stored as vectors where the compiler offers shuffles, one element at a time otherwise */
static inline __attribute__((unused)) void grid_scatter_(const grid_vec *to, const int n, grid_real *const *rows)
{
    int k = 0;
#if GRID_CAN_SHUFFLE_
    for (; k + 4 <= n; k += 4) {
        grid_vec x[4];
        grid_block_(to, k / 4, x);
        /* written out: gcc -O2 keeps a loop over x in memory (go2's CRBA at B = 256: 0.37 against 0.14 us) */
        __builtin_memcpy(rows[0] + k, &x[0], sizeof x[0]);
        __builtin_memcpy(rows[1] + k, &x[1], sizeof x[1]);
        __builtin_memcpy(rows[2] + k, &x[2], sizeof x[2]);
        __builtin_memcpy(rows[3] + k, &x[3], sizeof x[3]);
    }
#endif
    for (; k < n; k++)
        for (int l = 0; l < GRID_LANES; l++) rows[l][k] = to[k][l];
}

/* Streaming stores (x86 non-temporal: no read for ownership, no cache pollution) need 32-byte aligned
   4-double vectors: four lanes of doubles with AVX. Elsewhere the streamed scatter is the cached one. */
#if GRID_CAN_SHUFFLE_ && GRID_REAL_BYTES_ == 8 && defined(__AVX__)
#define GRID_CAN_STREAM_ 1
#if defined(__clang__)
#define GRID_STREAM_STORE_(p, v) __builtin_nontemporal_store((v), (grid_vec *)(p))
#else
#define GRID_STREAM_STORE_(p, v) __builtin_ia32_movntpd256((p), (v))
#endif
#else
#define GRID_CAN_STREAM_ 0
#endif

#if GRID_CAN_STREAM_
_Static_assert(sizeof(grid_real) == 8, "GRID_REAL_BYTES_ says doubles");

/* elements d .. d+3 of the eight elements a, b (d a constant once inlined) */
static inline __attribute__((always_inline, unused)) grid_vec grid_shift_(const grid_vec a, const grid_vec b, const int d)
{
    switch (d) {
    case 1: return __builtin_shufflevector(a, b, 1, 2, 3, 4);
    case 2: return __builtin_shufflevector(a, b, 2, 3, 4, 5);
    case 3: return __builtin_shufflevector(a, b, 3, 4, 5, 6);
    default: return a;
    }
}

/* The four rows of a full tile, row l at o + l * n, row 0 d0 elements before a 64-byte boundary (row l is
   l * n elements further). Row l: the elements before its first boundary (d[l]) and after its last whole
   64-byte line are stored one by one; each line between is streamed as two vectors, back to back (a line
   completed at once leaves the write-combining buffer whole: twice the rate of interleaved halves, measured).
   Line j of row l holds elements d[l] + 8j .. d[l] + 8j + 7, made of transposed blocks 2j + q .. 2j + q + 2
   shifted by s, where d[l] = 4q + s. */
/* row l's head and tail, the elements outside its whole 64-byte lines, stored one by one */
static inline __attribute__((always_inline, unused)) void grid_row_ends_(const grid_vec *to, const int n, grid_real *const o,
                                                                         const int d0, const int l)
{
    const int d = (d0 - l * n) & 7, nl = n >= d ? (n - d) / 8 : 0;
    grid_real *const row = o + (long long)l * n;
    for (int k = 0; k < d && k < n; k++) row[k] = to[k][l];
    for (int k = d + 8 * nl; k < n; k++) row[k] = to[k][l];
}

/* line j of row l, from the transposed blocks 2j .. 2j + 3 (x0 .. x3) */
static inline __attribute__((always_inline, unused)) void grid_row_line_(const int n, grid_real *const o, const int d0,
                                                                         const int l, const int j, const grid_vec *x)
{
    const int d = (d0 - l * n) & 7, q = d >> 2, s = d & 3, nl = n >= d ? (n - d) / 8 : 0;
    if (j >= nl) return;
    grid_real *const p = o + (long long)l * n + d + 8 * j;
    GRID_STREAM_STORE_(p, grid_shift_(x[4 * q + l], x[4 * q + 4 + l], s));
    GRID_STREAM_STORE_(p + 4, grid_shift_(x[4 * q + 4 + l], x[4 * q + 8 + l], s));
}

static inline __attribute__((always_inline, unused)) void grid_stream_rows_(const grid_vec *to, const int n,
                                                                            grid_real *const o, const int d0)
{
    /* the lines of the longest row (each row has n / 8 or one fewer) */
    const int most = n / 8;
    grid_row_ends_(to, n, o, d0, 0);
    grid_row_ends_(to, n, o, d0, 1);
    grid_row_ends_(to, n, o, d0, 2);
    grid_row_ends_(to, n, o, d0, 3);
    grid_vec x[16]; /* transposed blocks 2j .. 2j + 3, four lanes each: x[4 * i + l] */
    grid_block_(to, 0, x);
    grid_block_(to, 1, x + 4);
    for (int j = 0; j < most; j++) {
        /* blocks up to 2j + 3: inside the padded tile (GRID_STREAM_PAD_) */
        grid_block_(to, 2 * j + 2, x + 8);
        grid_block_(to, 2 * j + 3, x + 12);
        grid_row_line_(n, o, d0, 0, j, x);
        grid_row_line_(n, o, d0, 1, j, x);
        grid_row_line_(n, o, d0, 2, j, x);
        grid_row_line_(n, o, d0, 3, j, x);
        /* written out, as in grid_scatter_ (go2's CRBA streamed at B = 4096: 0.18 against 0.13 us) */
        x[0] = x[8], x[1] = x[9], x[2] = x[10], x[3] = x[11];
        x[4] = x[12], x[5] = x[13], x[6] = x[14], x[7] = x[15];
    }
}
#endif

/* the tile's rows streamed: the four rows of a full tile lie at o, o + n, o + 2n, o + 3n; to holds at least
   GRID_STREAM_PAD_(n) vectors (the last ones any value); falls back to grid_scatter_ where it cannot stream */
#define GRID_STREAM_PAD_(n) ((((n) + 3) / 4) * 4 + 8)
static inline __attribute__((always_inline, unused)) void grid_stream_scatter_(const grid_vec *to, const int n,
                                                                               grid_real *const o)
{
#if GRID_CAN_STREAM_
    if (((__UINTPTR_TYPE__)o & (sizeof(grid_real) - 1)) != 0) {
        /* not even element-aligned: stored one by one */
        for (int k = 0; k < n; k++)
            for (int l = 0; l < 4; l++) o[(long long)l * n + k] = to[k][l];
        return;
    }
    switch ((int)((-(__UINTPTR_TYPE__)o / sizeof(grid_real)) & 7)) {
    case 0: grid_stream_rows_(to, n, o, 0); break;
    case 1: grid_stream_rows_(to, n, o, 1); break;
    case 2: grid_stream_rows_(to, n, o, 2); break;
    case 3: grid_stream_rows_(to, n, o, 3); break;
    case 4: grid_stream_rows_(to, n, o, 4); break;
    case 5: grid_stream_rows_(to, n, o, 5); break;
    case 6: grid_stream_rows_(to, n, o, 6); break;
    default: grid_stream_rows_(to, n, o, 7); break;
    }
#else
    grid_real *rows[GRID_LANES];
    for (int l = 0; l < GRID_LANES; l++) rows[l] = o + (long long)l * n;
    grid_scatter_(to, n, rows);
#endif
}

/* after a call's streamed stores: make them visible before the call returns (or its thread joins) */
static inline __attribute__((unused)) void grid_stream_fence_(void)
{
#if GRID_CAN_STREAM_
    __builtin_ia32_sfence();
#endif
}

/* a batch call streams its outputs when they are at least this many bytes (about the last-level cache a core
   can count on: below it the caller is likely to read them back from cache) */
#ifndef GRID_STREAM_MIN_BYTES
#define GRID_STREAM_MIN_BYTES (8LL << 20)
#endif
