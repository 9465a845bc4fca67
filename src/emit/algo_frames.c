/* Kinematic outputs: forward kinematics, end-effector poses (rpy) and frame Jacobians with a runtime frame. */
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
    ew_puts(w, "};\n/* body -> parent body (-1 = world), first velocity index, velocity width */\n");
    const char *names[3] = {"grid_body_parent_", "grid_body_iv_", "grid_body_nv_"};
    for (int t = 0; t < 3; t++) {
        ew_printf(w, "%s int %s[%d] = {", q, names[t], em->nb > 0 ? em->nb : 1);
        for (int i = 0; i < em->nb; i++) {
            const em_body *b = &em->b[i];
            ew_printf(w, "%s%d", i ? ", " : "", t == 0 ? b->parent : t == 1 ? b->iv : b->nv);
        }
        if (em->nb == 0) ew_puts(w, "0");
        ew_puts(w, "};\n");
    }
    ew_puts(w, "\n");
}

int ea_frame_jacobian(const emit_ctx *cx, ek_kin *k)
{
    sym_graph *g = k->g;
    const em_model *em = cx->em;
    const int nb = em->nb, nv = em->nv;
    char buf[512], el[160], ix[96];
    if (ek_world(k) != 0) return -1;
    int aR = sym_local_array(g, "oR", 9 * nb), ap = sym_local_array(g, "op", 3 * nb), aJ = sym_local_array(g, "Jw", 6 * nv);
    /* unrolled: oMi of every body and every joint column S as a world-frame twist at the origin */
    for (int i = 0; i < nb; i++) {
        const em_body *b = &em->b[i];
        ek_body_comment(g, em, i, "oMi and world columns");
        for (int r = 0; r < 9; r++) sym_store(g, aR, 9 * i + r, k->oM[i].R[r]);
        for (int r = 0; r < 3; r++) sym_store(g, ap, 3 * i + r, k->oM[i].p[r]);
        for (int c = 0; c < b->nv; c++) {
            sv s[6], w[6];
            for (int r = 0; r < 6; r++) s[r] = sym_const(g, b->S[b->nv * r + c]);
            sp_motion_act(g, &k->oM[i], s, w);
            for (int r = 0; r < 6; r++) sym_store(g, aJ, 6 * (b->iv + c) + r, w[r]);
        }
    }
    /* runtime part: the frame's placement, then the columns of the joints that support it */
    emit_elem(cx, el, sizeof el, "out", "e");
    snprintf(buf, sizeof buf,
             "    /* runtime frame: zero, then the columns of every joint from the frame's body to the root */\n"
             "    for (int e = 0; e < %d; e++) %s = 0;\n"
             "    const int body = grid_frame_body_[frame];\n"
             "    if (body < 0) return;\n",
             6 * nv, el);
    sym_raw(g, buf);
    sym_raw(g, "    const grid_real *F = grid_frame_place_[frame];\n"
               "    const grid_real *bR = oR + 9 * body, *bp = op + 3 * body;\n"
               "    grid_real R[9], p[3];\n"
               "    for (int r = 0; r < 3; r++) {\n"
               "        for (int c = 0; c < 3; c++) R[3 * r + c] = bR[3 * r] * F[c] + bR[3 * r + 1] * F[3 + c] + bR[3 * r + 2] * F[6 + c];\n"
               "        p[r] = bp[r] + bR[3 * r] * F[9] + bR[3 * r + 1] * F[10] + bR[3 * r + 2] * F[11];\n"
               "    }\n"
               "    for (int j = body; j >= 0; j = grid_body_parent_[j]) {\n"
               "        for (int d = grid_body_iv_[j]; d < grid_body_iv_[j] + grid_body_nv_[j]; d++) {\n"
               "            const grid_real *w = Jw + 6 * d;\n"
               "            grid_real col[6];\n"
               "            if (rf == 0) {\n"
               "                for (int r = 0; r < 6; r++) col[r] = w[r];\n"
               "            } else {\n"
               "                /* velocity of the frame origin, world axes: v - p x w */\n"
               "                const grid_real l0 = w[0] - (p[1] * w[5] - p[2] * w[4]);\n"
               "                const grid_real l1 = w[1] - (p[2] * w[3] - p[0] * w[5]);\n"
               "                const grid_real l2 = w[2] - (p[0] * w[4] - p[1] * w[3]);\n"
               "                if (rf == 2) {\n"
               "                    col[0] = l0; col[1] = l1; col[2] = l2;\n"
               "                    col[3] = w[3]; col[4] = w[4]; col[5] = w[5];\n"
               "                } else {\n"
               "                    /* LOCAL: both parts in the frame's axes */\n"
               "                    for (int r = 0; r < 3; r++) {\n"
               "                        col[r] = R[r] * l0 + R[3 + r] * l1 + R[6 + r] * l2;\n"
               "                        col[3 + r] = R[r] * w[3] + R[3 + r] * w[4] + R[6 + r] * w[5];\n"
               "                    }\n"
               "                }\n"
               "            }\n");
    snprintf(ix, sizeof ix, "%d * r + d", nv);
    emit_elem(cx, el, sizeof el, "out", ix);
    snprintf(buf, sizeof buf, "            for (int r = 0; r < 6; r++) %s = col[r];\n        }\n    }\n", el);
    sym_raw(g, buf);
    return 0;
}
