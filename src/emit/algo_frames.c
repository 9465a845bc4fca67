/* Kinematic outputs: forward kinematics, end-effector poses (rpy) and the constant frame tables of the frame Jacobian. */
#include <stdio.h>
#include <string.h>
#include "emit_ctx.h"

void emit_elem(const emit_ctx *cx, char *buf, size_t cap, const char *name, const char *expr)
{
    if (cx->st.elem_scale[0]) snprintf(buf, cap, "%s[(%s)%s]", name, expr, cx->st.elem_scale);
    else snprintf(buf, cap, "%s[%s]", name, expr);
}

/* oMf of frame f: the body placement times the frame's constant placement (or the constant alone) */
static void frame_placement(ek_kin *k, int f, sxf *out)
{
    const em_frame *fr = &k->em->f[f];
    sxf P;
    sp_xf_const(k->g, fr->R, fr->p, &P);
    if (fr->body < 0) *out = P;
    else sp_xf_compose(k->g, &k->oM[fr->body], &P, out);
}

int ea_fk(const emit_ctx *cx, ek_kin *k)
{
    sym_graph *g = k->g;
    if (ek_world(k) != 0) return -1;
    for (int i = 0; i < cx->em->nb; i++) {
        const sxf *X = &k->oM[i];
        ek_body_comment(g, cx->em, i, "oMi");
        for (int r = 0; r < 3; r++) {
            for (int c = 0; c < 3; c++) sym_store(g, ARR_OUT, 16 * i + 4 * r + c, X->R[3 * r + c]);
            sym_store(g, ARR_OUT, 16 * i + 4 * r + 3, X->p[r]);
        }
        for (int c = 0; c < 4; c++) sym_store(g, ARR_OUT, 16 * i + 12 + c, sym_const(g, c == 3 ? 1.0 : 0.0));
    }
    return 0;
}

void emit_rpy_helper(const emit_ctx *cx)
{
    const emit_real *re = cx->re;
    const char *f = re->is_float ? "f" : "";
    ew_printf(cx->w,
              "/* roll, pitch, yaw of R (row-major) exactly as pinocchio.rpy.matrixToRpy:\n"
              "   Eigen's eulerAngles(2, 1, 0) reversed, then the pitch folded into [-pi/2, pi/2] */\n"
              "%s void grid_rpy_(const grid_real *R, grid_real *rpy)\n{\n"
              "    const grid_real pi = 3.14159265358979323846%s;\n"
              "    grid_real a0 = %s(R[3], R[0]);\n"
              "    const grid_real c2 = %s(R[8] * R[8] + R[7] * R[7]);\n"
              "    grid_real a1;\n"
              "    if (a0 < 0) {\n"
              "        a0 += pi;\n"
              "        a1 = %s(-R[6], -c2);\n"
              "    } else {\n"
              "        a1 = %s(-R[6], c2);\n"
              "    }\n"
              "    const grid_real s1 = %s(a0), c1 = %s(a0);\n"
              "    grid_real r = %s(s1 * R[2] - c1 * R[5], c1 * R[4] - s1 * R[1]), p = a1, y = a0;\n"
              "    if (p < -pi / 2) p += 2 * pi;\n"
              "    if (p > pi / 2) {\n"
              "        p = pi - p;\n"
              "        if (r < 0) r += pi;\n"
              "        else r -= pi;\n"
              "        y -= pi;\n"
              "    }\n"
              "    rpy[0] = r;\n    rpy[1] = p;\n    rpy[2] = y;\n}\n\n",
              cx->t->helper_fn, f, re->fn_atan2, re->fn_sqrt, re->fn_atan2, re->fn_atan2, re->fn_sin, re->fn_cos,
              re->fn_atan2);
}

int ea_ee_pose(const emit_ctx *cx, ek_kin *k)
{
    sym_graph *g = k->g;
    const em_model *em = cx->em;
    char buf[160], el[96];
    if (em->nee == 0) return 0;
    if (ek_world(k) != 0) return -1;
    int re = sym_local_array(g, "Re", 9 * em->nee);
    for (int e = 0; e < em->nee; e++) {
        sxf X;
        sym_comment(g, "/* end effector %d: frame %d */", e, em->ee[e]);
        frame_placement(k, em->ee[e], &X);
        for (int r = 0; r < 3; r++) sym_store(g, ARR_OUT, 6 * e + r, X.p[r]);
        for (int r = 0; r < 9; r++) sym_store(g, re, 9 * e + r, X.R[r]);
    }
    /* roll, pitch, yaw of each rotation */
    sym_raw(g, "    {\n        grid_real r_[3];\n");
    for (int e = 0; e < em->nee; e++) {
        snprintf(buf, sizeof buf, "        grid_rpy_(Re + %d, r_);\n", 9 * e);
        sym_raw(g, buf);
        for (int r = 0; r < 3; r++) {
            char ix[32];
            snprintf(ix, sizeof ix, "%d", 6 * e + 3 + r);
            emit_elem(cx, el, sizeof el, "out", ix);
            snprintf(buf, sizeof buf, "        %s = r_[%d];\n", el, r);
            sym_raw(g, buf);
        }
    }
    sym_raw(g, "    }\n");
    return 0;
}

/* a table row of n reals */
static void write_reals(const emit_ctx *cx, const double *x, int n)
{
    for (int i = 0; i < n; i++) {
        if (i) ew_puts(cx->w, ", ");
        sym_write_literal(cx->w, &cx->st, x[i]);
    }
}

void emit_frame_tables(const emit_ctx *cx)
{
    const em_model *em = cx->em;
    const char *q = cx->t->table;
    ew_writer *w = cx->w;
    ew_puts(w, "/* frame -> body (-1 = world) and placement in the body frame [R row-major, p] */\n");
    ew_printf(w, "%s int grid_frame_body_[%d] = {", q, em->nframes > 0 ? em->nframes : 1);
    for (int f = 0; f < em->nframes; f++) ew_printf(w, "%s%d", f ? ", " : "", em->f[f].body);
    if (em->nframes == 0) ew_puts(w, "-1");
    ew_printf(w, "};\n%s grid_real grid_frame_place_[%d][12] = {\n", q, em->nframes > 0 ? em->nframes : 1);
    for (int f = 0; f < em->nframes; f++) {
        ew_puts(w, "    {");
        write_reals(cx, em->f[f].R, 9);
        ew_puts(w, ", ");
        write_reals(cx, em->f[f].p, 3);
        ew_puts(w, "},\n");
    }
    if (em->nframes == 0) ew_puts(w, "    {0},\n");
    ew_puts(w, "};\n");
    ew_puts(w, "\n");
}
