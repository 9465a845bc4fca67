/* Math helpers written into generated files: an inlinable sincos, the lane vector type and its helpers. */
#include "emit_ctx.h"
#include "../common/incbin.h"

/* double: Cody-Waite reduction by pi/2 (fdlibm's 33+33+53-bit split) and fdlibm's kernels, < 1 ulp
   on |x| < 1e5; beyond that, and for inf/NaN, the C library */
static const char sincos_double[] =
    "/* sin and cos of x: reduction by pi/2 (three-part pi/2), fdlibm's kernel polynomials (< 1 ulp);\n"
    "   the C library beyond |x| < 1e5 and for inf/NaN */\n"
    "%s void grid_sincos_(const grid_real x, grid_real *s, grid_real *c)\n{\n"
    "    if (!(fabs(x) < 1.0e5)) {\n"
    "        *s = sin(x);\n"
    "        *c = cos(x);\n"
    "        return;\n"
    "    }\n"
    "    const grid_real k = rint(x * 6.36619772367581382433e-01);\n"
    "    const grid_real r = ((x - k * 1.57079632673412561417e+00) - k * 6.07710050630396597660e-11) -\n"
    "                        k * 2.02226624879595063154e-21;\n"
    "    const grid_real z = r * r;\n"
    "    const grid_real ps = -1.66666666666666324348e-01 + z * (8.33333333332248946124e-03 +\n"
    "        z * (-1.98412698298579493134e-04 + z * (2.75573137070700676789e-06 +\n"
    "        z * (-2.50507602534068634195e-08 + z * 1.58969099521155010221e-10))));\n"
    "    const grid_real pc = z * (4.16666666666666019037e-02 + z * (-1.38888888888741095749e-03 +\n"
    "        z * (2.48015872894767294178e-05 + z * (-2.75573143513906633035e-07 +\n"
    "        z * (2.08757232129817482790e-09 + z * -1.13596475577881948265e-11)))));\n"
    "    const grid_real hz = 0.5 * z, w = 1.0 - hz;\n"
    "    const grid_real sr = r + r * z * ps;\n"
    "    const grid_real cr = w + (((1.0 - w) - hz) + z * pc);\n"
    "    const int n = (int)k;\n"
    "    const grid_real a = (n & 1) ? cr : sr, b = (n & 1) ? sr : cr;\n"
    "    *s = (n & 2) ? -a : a;\n"
    "    *c = ((n + 1) & 2) ? -b : b;\n"
    "}\n\n";

/* float: cephes' three-part pi/2 and minimax polynomials on [-pi/4, pi/4] (about 1e-7) */
static const char sincos_float[] =
    "/* sin and cos of x: reduction by pi/2 (three-part pi/2), cephes' polynomials;\n"
    "   the C library beyond |x| < 1e4 and for inf/NaN */\n"
    "%s void grid_sincos_(const grid_real x, grid_real *s, grid_real *c)\n{\n"
    "    if (!(fabsf(x) < 1.0e4f)) {\n"
    "        *s = sinf(x);\n"
    "        *c = cosf(x);\n"
    "        return;\n"
    "    }\n"
    "    const grid_real k = rintf(x * 0.636619772f);\n"
    "    const grid_real r = ((x - k * 1.5703125f) - k * 4.837512969970703125e-4f) - k * 7.54978995489188216e-8f;\n"
    "    const grid_real z = r * r;\n"
    "    const grid_real sr = r + r * z * (-1.6666654611e-1f + z * (8.3321608736e-3f + z * -1.9515295891e-4f));\n"
    "    const grid_real cr = 1.0f - 0.5f * z +\n"
    "        z * z * (4.166664568298827e-2f + z * (-1.388731625493765e-3f + z * 2.443315711809948e-5f));\n"
    "    const int n = (int)k;\n"
    "    const grid_real a = (n & 1) ? cr : sr, b = (n & 1) ? sr : cr;\n"
    "    *s = (n & 2) ? -a : a;\n"
    "    *c = ((n + 1) & 2) ? -b : b;\n"
    "}\n\n";

void emit_math_helpers(const emit_ctx *cx)
{
    ew_printf(cx->w, cx->re->is_float ? sincos_float : sincos_double, cx->t->helper_fn);
}

/* lane vectors of the C target: GRID_LANES states per call of a vector per-state function */
static const char lanes_double[] =
    "/* vector per-state code runs GRID_LANES states at once (GCC/Clang vector extensions):\n"
    "   4 doubles fill AVX2, -DGRID_LANES=8 suits AVX-512, -DGRID_LANES=1 gives plain scalar code */\n"
    "#ifndef GRID_LANES\n#define GRID_LANES 4\n#endif\n"
    "/* vectors pass only between static functions of this file: no ABI to keep */\n"
    "#if defined(__clang__)\n#pragma clang diagnostic ignored \"-Wpsabi\"\n"
    "#elif defined(__GNUC__)\n#pragma GCC diagnostic ignored \"-Wpsabi\"\n#endif\n"
    "typedef grid_real grid_vec __attribute__((vector_size(GRID_LANES * sizeof(grid_real))));\n"
    "typedef long long grid_ivec __attribute__((vector_size(GRID_LANES * sizeof(grid_real))));\n\n"
    "static inline __attribute__((unused)) grid_vec grid_splat_(const grid_real x)\n{\n    const grid_vec z = {0};\n    return z + x;\n}\n\n"
    "/* grid_sincos_ on every lane: the quadrant comes from the bits of k + 1.5 * 2^52 */\n"
    "static inline __attribute__((unused)) void grid_vsincos_(const grid_vec x, grid_vec *s, grid_vec *c)\n{\n"
    "    const grid_vec km = x * 6.36619772367581382433e-01 + 6755399441055744.0;\n"
    "    const grid_vec k = km - 6755399441055744.0;\n"
    "    const grid_vec r = ((x - k * 1.57079632673412561417e+00) - k * 6.07710050630396597660e-11) -\n"
    "                       k * 2.02226624879595063154e-21;\n"
    "    const grid_vec z = r * r;\n"
    "    const grid_vec ps = -1.66666666666666324348e-01 + z * (8.33333333332248946124e-03 +\n"
    "        z * (-1.98412698298579493134e-04 + z * (2.75573137070700676789e-06 +\n"
    "        z * (-2.50507602534068634195e-08 + z * 1.58969099521155010221e-10))));\n"
    "    const grid_vec pc = z * (4.16666666666666019037e-02 + z * (-1.38888888888741095749e-03 +\n"
    "        z * (2.48015872894767294178e-05 + z * (-2.75573143513906633035e-07 +\n"
    "        z * (2.08757232129817482790e-09 + z * -1.13596475577881948265e-11)))));\n"
    "    const grid_vec hz = 0.5 * z, w = 1.0 - hz;\n"
    "    const grid_vec sr = r + r * z * ps;\n"
    "    const grid_vec cr = w + (((1.0 - w) - hz) + z * pc);\n"
    "    const grid_ivec n = (grid_ivec)km;\n"
    "    const grid_ivec odd = -(n & 1), sneg = (n & 2) << 62, cneg = ((n + 1) & 2) << 62;\n"
    "    *s = (grid_vec)((((grid_ivec)cr & odd) | ((grid_ivec)sr & ~odd)) ^ sneg);\n"
    "    *c = (grid_vec)((((grid_ivec)sr & odd) | ((grid_ivec)cr & ~odd)) ^ cneg);\n"
    "    for (int l = 0; l < GRID_LANES; l++)\n"
    "        if (!(fabs(x[l]) < 1.0e5)) {\n"
    "            (*s)[l] = sin(x[l]);\n"
    "            (*c)[l] = cos(x[l]);\n"
    "        }\n"
    "}\n\n";

static const char lanes_float[] =
    "/* vector per-state code runs GRID_LANES states at once (GCC/Clang vector extensions):\n"
    "   8 floats fill AVX2, -DGRID_LANES=16 suits AVX-512, -DGRID_LANES=1 gives plain scalar code */\n"
    "#ifndef GRID_LANES\n#define GRID_LANES 8\n#endif\n"
    "/* vectors pass only between static functions of this file: no ABI to keep */\n"
    "#if defined(__clang__)\n#pragma clang diagnostic ignored \"-Wpsabi\"\n"
    "#elif defined(__GNUC__)\n#pragma GCC diagnostic ignored \"-Wpsabi\"\n#endif\n"
    "typedef grid_real grid_vec __attribute__((vector_size(GRID_LANES * sizeof(grid_real))));\n"
    "typedef int grid_ivec __attribute__((vector_size(GRID_LANES * sizeof(grid_real))));\n\n"
    "static inline __attribute__((unused)) grid_vec grid_splat_(const grid_real x)\n{\n    const grid_vec z = {0};\n    return z + x;\n}\n\n"
    "/* grid_sincos_ on every lane: the quadrant comes from the bits of k + 1.5 * 2^23 */\n"
    "static inline __attribute__((unused)) void grid_vsincos_(const grid_vec x, grid_vec *s, grid_vec *c)\n{\n"
    "    const grid_vec km = x * 0.636619772f + 12582912.0f;\n"
    "    const grid_vec k = km - 12582912.0f;\n"
    "    const grid_vec r = ((x - k * 1.5703125f) - k * 4.837512969970703125e-4f) - k * 7.54978995489188216e-8f;\n"
    "    const grid_vec z = r * r;\n"
    "    const grid_vec sr = r + r * z * (-1.6666654611e-1f + z * (8.3321608736e-3f + z * -1.9515295891e-4f));\n"
    "    const grid_vec cr = 1.0f - 0.5f * z +\n"
    "        z * z * (4.166664568298827e-2f + z * (-1.388731625493765e-3f + z * 2.443315711809948e-5f));\n"
    "    const grid_ivec n = (grid_ivec)km;\n"
    "    const grid_ivec odd = -(n & 1), sneg = (n & 2) << 30, cneg = ((n + 1) & 2) << 30;\n"
    "    *s = (grid_vec)((((grid_ivec)cr & odd) | ((grid_ivec)sr & ~odd)) ^ sneg);\n"
    "    *c = (grid_vec)((((grid_ivec)sr & odd) | ((grid_ivec)cr & ~odd)) ^ cneg);\n"
    "    for (int l = 0; l < GRID_LANES; l++)\n"
    "        if (!(fabsf(x[l]) < 1.0e4f)) {\n"
    "            (*s)[l] = sinf(x[l]);\n"
    "            (*c)[l] = cosf(x[l]);\n"
    "        }\n"
    "}\n\n";

/* the stores of a tile into its lanes' rows (src/emit/lane_store.h, written verbatim) */
GRID_INCBIN(grid_lane_store_h, "src/emit/lane_store.h");

/* one-lane-at-a-time fallbacks for the operations the dynamics rarely need */
static const char lanes_common[] =
    "static inline __attribute__((unused)) grid_vec grid_vsin_(const grid_vec x)\n{\n    grid_vec s, c;\n    grid_vsincos_(x, &s, &c);\n    return s;\n}\n\n"
    "static inline __attribute__((unused)) grid_vec grid_vcos_(const grid_vec x)\n{\n    grid_vec s, c;\n    grid_vsincos_(x, &s, &c);\n    return c;\n}\n\n"
    "static inline __attribute__((unused)) grid_vec grid_vsqrt_(const grid_vec x)\n{\n    grid_vec r;\n"
    "    for (int l = 0; l < GRID_LANES; l++) r[l] = %s(x[l]);\n    return r;\n}\n\n"
    "static inline __attribute__((unused)) grid_vec grid_vatan2_(const grid_vec y, const grid_vec x)\n{\n    grid_vec r;\n"
    "    for (int l = 0; l < GRID_LANES; l++) r[l] = %s(y[l], x[l]);\n    return r;\n}\n\n"
    "static inline __attribute__((unused)) grid_vec grid_vabs_(const grid_vec x)\n{\n    grid_vec r;\n"
    "    for (int l = 0; l < GRID_LANES; l++) r[l] = %s(x[l]);\n    return r;\n}\n\n";

/* C = -A B on lane vectors (row-major, A n x k, B k x m) where B is sparse by columns, for the composites' dense
   products: the columns in blocks of 3, block b reading only the rows rows[off[b] .. off[b + 1]) of B (ascending;
   the others are structural zeros); per block of 4 rows, 12 sums stay in registers (12 multiply-adds per 7
   loads), the block's 3 columns of B stay in L1 while the rows pass. Every element is 0 - sum A_rt B_tc in order
   of t, the zero terms left out */
static const char lanes_matmul[] =
    "static inline __attribute__((unused)) void grid_vneg_matmul_(const int n, const int k, const int m, const grid_vec *A,\n"
    "                                                             const grid_vec *B, grid_vec *C, const int *off,\n"
    "                                                             const int *rows)\n"
    "{\n"
    "    /* (the edges' bounds named, so that the compiler sees their loops empty when the sizes divide) */\n"
    "    const int n4 = n / 4 * 4, m3 = m / 3 * 3;\n"
    "    for (int c = 0; c < m3; c += 3) {\n"
    "        const int *t0 = rows + off[c / 3], *t1 = rows + off[c / 3 + 1];\n"
    "        for (int r = 0; r < n4; r += 4) {\n"
    "            /* the block's sums in registers (written out: -O2 does not unroll a 4 x 3 loop) */\n"
    "            grid_vec s00 = grid_splat_(0), s01 = grid_splat_(0), s02 = grid_splat_(0);\n"
    "            grid_vec s10 = grid_splat_(0), s11 = grid_splat_(0), s12 = grid_splat_(0);\n"
    "            grid_vec s20 = grid_splat_(0), s21 = grid_splat_(0), s22 = grid_splat_(0);\n"
    "            grid_vec s30 = grid_splat_(0), s31 = grid_splat_(0), s32 = grid_splat_(0);\n"
    "            for (const int *t = t0; t < t1; t++) {\n"
    "                const grid_vec *b = B + (long)*t * m + c, b0 = b[0], b1 = b[1], b2 = b[2];\n"
    "                const grid_vec a0 = A[(long)(r + 0) * k + *t];\n"
    "                s00 -= a0 * b0;\n"
    "                s01 -= a0 * b1;\n"
    "                s02 -= a0 * b2;\n"
    "                const grid_vec a1 = A[(long)(r + 1) * k + *t];\n"
    "                s10 -= a1 * b0;\n"
    "                s11 -= a1 * b1;\n"
    "                s12 -= a1 * b2;\n"
    "                const grid_vec a2 = A[(long)(r + 2) * k + *t];\n"
    "                s20 -= a2 * b0;\n"
    "                s21 -= a2 * b1;\n"
    "                s22 -= a2 * b2;\n"
    "                const grid_vec a3 = A[(long)(r + 3) * k + *t];\n"
    "                s30 -= a3 * b0;\n"
    "                s31 -= a3 * b1;\n"
    "                s32 -= a3 * b2;\n"
    "            }\n"
    "            C[(long)(r + 0) * m + c] = s00;\n"
    "            C[(long)(r + 0) * m + c + 1] = s01;\n"
    "            C[(long)(r + 0) * m + c + 2] = s02;\n"
    "            C[(long)(r + 1) * m + c] = s10;\n"
    "            C[(long)(r + 1) * m + c + 1] = s11;\n"
    "            C[(long)(r + 1) * m + c + 2] = s12;\n"
    "            C[(long)(r + 2) * m + c] = s20;\n"
    "            C[(long)(r + 2) * m + c + 1] = s21;\n"
    "            C[(long)(r + 2) * m + c + 2] = s22;\n"
    "            C[(long)(r + 3) * m + c] = s30;\n"
    "            C[(long)(r + 3) * m + c + 1] = s31;\n"
    "            C[(long)(r + 3) * m + c + 2] = s32;\n"
    "        }\n"
    "        for (int r = n4; r < n; r++) {\n"
    "            grid_vec s0 = grid_splat_(0), s1 = grid_splat_(0), s2 = grid_splat_(0);\n"
    "            for (const int *t = t0; t < t1; t++) {\n"
    "                const grid_vec a = A[(long)r * k + *t], *b = B + (long)*t * m + c;\n"
    "                s0 -= a * b[0];\n"
    "                s1 -= a * b[1];\n"
    "                s2 -= a * b[2];\n"
    "            }\n"
    "            C[(long)r * m + c] = s0;\n"
    "            C[(long)r * m + c + 1] = s1;\n"
    "            C[(long)r * m + c + 2] = s2;\n"
    "        }\n"
    "    }\n"
    "    /* the last columns, one at a time */\n"
    "    for (int j = m3; j < m; j++)\n"
    "        for (int r = 0; r < n; r++) {\n"
    "            grid_vec s = grid_splat_(0);\n"
    "            for (const int *t = rows + off[m3 / 3]; t < rows + off[m3 / 3 + 1]; t++) s -= A[(long)r * k + *t] * B[(long)*t * m + j];\n"
    "            C[(long)r * m + j] = s;\n"
    "        }\n"
    "}\n"
    "\n";

void emit_lane_helpers(const emit_ctx *cx)
{
    ew_puts(cx->w, cx->re->is_float ? lanes_float : lanes_double);
    ew_puts(cx->w, lanes_matmul);
    ew_printf(cx->w, "#define GRID_REAL_BYTES_ %d\n", cx->re->is_float ? 4 : 8);
    ew_puts(cx->w, grid_lane_store_h_start);
    ew_puts(cx->w, "\n");
    ew_printf(cx->w, lanes_common, cx->re->fn_sqrt, cx->re->fn_atan2, cx->re->is_float ? "fabsf" : "fabs");
}
