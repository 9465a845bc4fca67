/* Math helpers written into every generated file: an inlinable sincos for joint angles. */
#include "emit_ctx.h"

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
    ew_printf(cx->w, cx->re->is_float ? sincos_float : sincos_double, cx->t->state_fn);
}
