/* Frame Jacobians with a runtime frame: two straight-line functions per body over its chain only, a switch on the frame's body. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "emit_ctx.h"

/* The work of one call is O(depth of the frame's body): for every body that carries a frame, two
   functions read only the joints of the chain from the body to the root, with every model constant
   folded, and store the chain's nonzero column entries straight into out (the per-state function
   zeroes out first). The frame's placement F in its body is folded too when every frame of the body
   has the same one (the usual case: one link frame per body), else read at run time from
   grid_frame_place_.

   grid_fja_<b>  WORLD and LOCAL_WORLD_ALIGNED: column of joint j = oMj.act(S_j) with the translation
                 of oMj taken relative to lw * o_f, o_f = op_i + oR_i p_F the frame origin and lw = 0
                 (WORLD: twists at the world origin) or 1 (at the frame origin); so a NaN on the chain
                 reaches every WORLD column too (0 * NaN)
   grid_fjl_<b>  LOCAL: fX_j S_j from the frame down: A = F, then A <- liMi(j) A up the chain, column
                 = A^-1 . S_j; the root's own joint enters only as NaN carriers (a floating base's
                 LOCAL Jacobian does not need its quaternion)

   Its rate along v (frame_jacobian_dot) has the same two per body, grid_fjda_<b> and grid_fjdl_<b>, which
   read v too: the world columns c_j (about the point lw * o_f, or o_f for LOCAL, fixed at this instant)
   from the root down, each body's spatial velocity ov_j = ov_parent + sum c_j v_j accumulated on the way,
   and dc_j = ov_j x c_j; LOCAL_WORLD_ALIGNED takes lw (ov_f,lin x w_j) off, ov_f,lin the frame origin's
   velocity, and LOCAL is R_f^T ((ov_j - ov_f) x c_j), ov_f the velocity of the frame's body; a NaN in the
   chain's q or v reaches all of its columns. */

/* C target: the sines and cosines of a chain, JW angles per call of one inlined vector kernel
   (GCC/Clang vector extensions, independent of GRID_LANES): grid_sincos_'s reduction and kernels,
   the C library for lanes with |x| past the kernel's range; once per translation unit (the frame
   Jacobian and its rate may both write it) */
#define JW 8
/* at most JV vectors (sym arrays are few); longer chains keep the scalar grid_sincos_ */
#define JV 5
static const char jsincos_double[] =
    "#ifndef GRID_JSINCOS_\n#define GRID_JSINCOS_\n"
    "/* sin and cos of 8 angles at once (the frame Jacobian's chains): grid_sincos_'s reduction and kernels\n"
    "   on a vector, the quadrant from the bits of k + 1.5 * 2^52; the C library for |x| >= 1e5 and inf */\n"
    "typedef grid_real grid_jvec __attribute__((vector_size(8 * sizeof(grid_real))));\n"
    "typedef long long grid_jivec __attribute__((vector_size(8 * sizeof(grid_real))));\n"
    "static inline __attribute__((unused, always_inline)) void grid_jsincos_(const grid_jvec *xp, grid_jvec *sp, grid_jvec *cp)\n{\n"
    "    const grid_jvec x = *xp;\n"
    "    const grid_jvec km = x * 6.36619772367581382433e-01 + 6755399441055744.0;\n"
    "    const grid_jvec k = km - 6755399441055744.0;\n"
    "    const grid_jvec r = ((x - k * 1.57079632673412561417e+00) - k * 6.07710050630396597660e-11) -\n"
    "                        k * 2.02226624879595063154e-21;\n"
    "    const grid_jvec z = r * r;\n"
    "    const grid_jvec ps = -1.66666666666666324348e-01 + z * (8.33333333332248946124e-03 +\n"
    "        z * (-1.98412698298579493134e-04 + z * (2.75573137070700676789e-06 +\n"
    "        z * (-2.50507602534068634195e-08 + z * 1.58969099521155010221e-10))));\n"
    "    const grid_jvec pc = z * (4.16666666666666019037e-02 + z * (-1.38888888888741095749e-03 +\n"
    "        z * (2.48015872894767294178e-05 + z * (-2.75573143513906633035e-07 +\n"
    "        z * (2.08757232129817482790e-09 + z * -1.13596475577881948265e-11)))));\n"
    "    const grid_jvec hz = 0.5 * z, w = 1.0 - hz;\n"
    "    const grid_jvec sr = r + r * z * ps;\n"
    "    const grid_jvec cr = w + (((1.0 - w) - hz) + z * pc);\n"
    "    const grid_jivec n = (grid_jivec)km;\n"
    "    const grid_jivec odd = -(n & 1), sneg = (n & 2) << 62, cneg = ((n + 1) & 2) << 62;\n"
    "    grid_jvec s = (grid_jvec)((((grid_jivec)cr & odd) | ((grid_jivec)sr & ~odd)) ^ sneg);\n"
    "    grid_jvec c = (grid_jvec)((((grid_jivec)sr & odd) | ((grid_jivec)cr & ~odd)) ^ cneg);\n"
    "    /* NaN comes out NaN as it is; |x| >= 1e5 and inf go to the C library */\n"
    "    const grid_jivec big = (x >= 1.0e5) | (x <= -1.0e5);\n"
    "    long long any = 0;\n"
    "    for (int l = 0; l < 8; l++) any |= big[l];\n"
    "    if (any)\n"
    "        for (int l = 0; l < 8; l++)\n"
    "            if (big[l]) {\n"
    "                s[l] = sin(x[l]);\n"
    "                c[l] = cos(x[l]);\n"
    "            }\n"
    "    *sp = s;\n"
    "    *cp = c;\n"
    "}\n#endif\n\n";
static const char jsincos_float[] =
    "#ifndef GRID_JSINCOS_\n#define GRID_JSINCOS_\n"
    "/* sin and cos of 8 angles at once (the frame Jacobian's chains): grid_sincos_'s reduction and kernels\n"
    "   on a vector, the quadrant from the bits of k + 1.5 * 2^23; the C library for |x| >= 1e4 and inf */\n"
    "typedef grid_real grid_jvec __attribute__((vector_size(8 * sizeof(grid_real))));\n"
    "typedef int grid_jivec __attribute__((vector_size(8 * sizeof(grid_real))));\n"
    "static inline __attribute__((unused, always_inline)) void grid_jsincos_(const grid_jvec *xp, grid_jvec *sp, grid_jvec *cp)\n{\n"
    "    const grid_jvec x = *xp;\n"
    "    const grid_jvec km = x * 0.636619772f + 12582912.0f;\n"
    "    const grid_jvec k = km - 12582912.0f;\n"
    "    const grid_jvec r = ((x - k * 1.5703125f) - k * 4.837512969970703125e-4f) - k * 7.54978995489188216e-8f;\n"
    "    const grid_jvec z = r * r;\n"
    "    const grid_jvec sr = r + r * z * (-1.6666654611e-1f + z * (8.3321608736e-3f + z * -1.9515295891e-4f));\n"
    "    const grid_jvec cr = 1.0f - 0.5f * z +\n"
    "        z * z * (4.166664568298827e-2f + z * (-1.388731625493765e-3f + z * 2.443315711809948e-5f));\n"
    "    const grid_jivec n = (grid_jivec)km;\n"
    "    const grid_jivec odd = -(n & 1), sneg = (n & 2) << 30, cneg = ((n + 1) & 2) << 30;\n"
    "    grid_jvec s = (grid_jvec)((((grid_jivec)cr & odd) | ((grid_jivec)sr & ~odd)) ^ sneg);\n"
    "    grid_jvec c = (grid_jvec)((((grid_jivec)sr & odd) | ((grid_jivec)cr & ~odd)) ^ cneg);\n"
    "    /* NaN comes out NaN as it is; |x| >= 1e4 and inf go to the C library */\n"
    "    const grid_jivec big = (x >= 1.0e4f) | (x <= -1.0e4f);\n"
    "    int any = 0;\n"
    "    for (int l = 0; l < 8; l++) any |= big[l];\n"
    "    if (any)\n"
    "        for (int l = 0; l < 8; l++)\n"
    "            if (big[l]) {\n"
    "                s[l] = sinf(x[l]);\n"
    "                c[l] = cosf(x[l]);\n"
    "            }\n"
    "    *sp = s;\n"
    "    *cp = c;\n"
    "}\n#endif\n\n";

/* the bodies from b up to the root (b first); returns their count */
static int chain_of(const em_model *em, int b, int *chain)
{
    int n = 0;
    for (int j = b; j >= 0; j = em->b[j].parent) chain[n++] = j;
    return n;
}

/* the first frame on body b, -1 when none (only bodies with a frame get functions) */
static int first_frame(const em_model *em, int b)
{
    for (int f = 0; f < em->nframes; f++)
        if (em->f[f].body == b) return f;
    return -1;
}

/* 1 when every frame on body b has the placement of its first frame (then it folds as a constant) */
static int shared_placement(const em_model *em, int b)
{
    const em_frame *f0 = &em->f[first_frame(em, b)];
    for (int f = 0; f < em->nframes; f++) {
        const em_frame *fr = &em->f[f];
        if (fr->body == b && (memcmp(fr->R, f0->R, sizeof fr->R) != 0 || memcmp(fr->p, f0->p, sizeof fr->p) != 0))
            return 0;
    }
    return 1;
}

/* the columns of joint j (its motion subspace S, [linear; angular]) moved by X or X^-1 into out;
   *nan (when nan is not NULL) is added to every nonzero entry */
static void store_columns(sym_graph *g, const em_model *em, int j, const sxf *X, int inverse, const sv *nan, int aout)
{
    const em_body *bj = &em->b[j];
    for (int s = 0; s < bj->nv; s++) {
        sv S[6], c[6];
        for (int r = 0; r < 6; r++) S[r] = sym_const(g, bj->S[bj->nv * r + s]);
        if (inverse) sp_motion_act_inv(g, X, S, c);
        else sp_motion_act(g, X, S, c);
        /* out is zero already */
        for (int r = 0; r < 6; r++)
            if (!sym_is_zero(g, c[r])) sym_store(g, aout, em->nv * r + bj->iv + s, nan ? sym_add(g, c[r], *nan) : c[r]);
    }
}

/* oMj of the chain's bodies (chain[c], root last), root first; of the frame origin oMj(b) F.p; NULL when out of memory */
static sxf *chain_placements(sym_graph *g, const ek_kin *k, const int *chain, int n, const sxf *F, sv of[3])
{
    sxf *oM = ek_calloc((size_t)n, sizeof *oM);
    if (!oM) return NULL;
    for (int c = n - 1; c >= 0; c--) {
        const int j = chain[c];
        if (c == n - 1) oM[c] = k->X[j];
        else sp_xf_compose(g, &oM[c + 1], &k->X[j], &oM[c]);
    }
    sp_rot(g, oM[0].R, F->p, of);
    for (int r = 0; r < 3; r++) of[r] = sym_add(g, of[r], oM[0].p[r]);
    return oM;
}

/* the symbolic part of one function of body b (local: LOCAL, else WORLD / LOCAL_WORLD_ALIGNED); -1 when out of memory */
static int build_chain(sym_graph *g, const em_model *em, const ek_kin *k, const sv *q, int b, int local, const sxf *F,
                       sv lw, int aout, int *chain)
{
    const int n = chain_of(em, b, chain);
    if (local) {
        /* A = jMf, from the frame down to the root */
        sxf A = *F;
        for (int c = 0; c < n; c++) {
            const int j = chain[c];
            ek_body_comment(g, em, j, "LOCAL columns");
            /* the root's own coordinates do not enter; sum_k (q_k - q_k) (0, or NaN for an inf/NaN
               coordinate: x - x does not fold) makes them reach its columns, as in Pinocchio */
            sv nan = 0;
            const int root = c == n - 1 && em->b[j].nq > 0;
            if (root) {
                const em_body *br = &em->b[j];
                for (int i = 0; i < br->nq; i++) {
                    const sv d = sym_sub(g, q[br->iq + i], q[br->iq + i]);
                    nan = i ? sym_add(g, nan, d) : d;
                }
            }
            store_columns(g, em, j, &A, 1, root ? &nan : NULL, aout);
            if (c + 1 < n) sp_xf_compose(g, &k->X[j], &A, &A);
        }
        return 0;
    }
    sv of[3];
    sxf *oM = chain_placements(g, k, chain, n, F, of);
    if (!oM) return -1;
    for (int r = 0; r < 3; r++) of[r] = sym_mul(g, lw, of[r]);
    for (int c = n - 1; c >= 0; c--) {
        const int j = chain[c];
        sxf X = oM[c];
        ek_body_comment(g, em, j, "WORLD / LOCAL_WORLD_ALIGNED columns");
        for (int r = 0; r < 3; r++) X.p[r] = sym_sub(g, X.p[r], of[r]);
        store_columns(g, em, j, &X, 0, NULL, aout);
    }
    free(oM);
    return 0;
}

/* the rate of build_chain's columns along v (the header's grid_fjd*_<b>); -1 when out of memory */
static int build_chain_dot(sym_graph *g, const em_model *em, const ek_kin *k, const sv *q, const sv *v, int b,
                           int local, const sxf *F, sv lw, int aout, int *chain)
{
    const int n = chain_of(em, b, chain);
    int ncols = 0;
    for (int c = 0; c < n; c++) ncols += em->b[chain[c]].nv;
    sv of[3];
    sxf *oM = chain_placements(g, k, chain, n, F, of);
    sv (*col)[6] = ek_calloc((size_t)ncols + 1, sizeof *col), (*ov)[6] = ek_calloc((size_t)n, sizeof *ov);
    if (!oM || !col || !ov) {
        free(oM);
        free(col);
        free(ov);
        return -1;
    }
    /* the columns about the point o_f (LOCAL) or lw * o_f, world axes, and ov accumulated from the root */
    if (!local)
        for (int r = 0; r < 3; r++) of[r] = sym_mul(g, lw, of[r]);
    sv acc[6];
    for (int r = 0; r < 6; r++) acc[r] = sym_const(g, 0.0);
    for (int c = n - 1, x = 0; c >= 0; c--) {
        const em_body *bj = &em->b[chain[c]];
        sxf X = oM[c];
        ek_body_comment(g, em, chain[c], "columns and velocity");
        for (int r = 0; r < 3; r++) X.p[r] = sym_sub(g, X.p[r], of[r]);
        for (int s = 0; s < bj->nv; s++, x++) {
            sv S[6];
            for (int r = 0; r < 6; r++) S[r] = sym_const(g, bj->S[bj->nv * r + s]);
            sp_motion_act(g, &X, S, col[x]);
            for (int r = 0; r < 6; r++) acc[r] = sym_add(g, acc[r], sym_mul(g, col[x][r], v[bj->iv + s]));
        }
        for (int r = 0; r < 6; r++) ov[c][r] = acc[r];
    }
    /* sum (x - x) over the chain's q and v (0, or NaN for an inf/NaN one: x - x does not fold) goes into every
       entry of its columns: a rate that folds to zeros (a one-dof root's) still carries a NaN state, as Pinocchio's */
    sv nan = sym_const(g, 0.0);
    for (int c = 0; c < n; c++) {
        const em_body *bj = &em->b[chain[c]];
        for (int i = 0; i < bj->nq; i++) nan = sym_add(g, nan, sym_sub(g, q[bj->iq + i], q[bj->iq + i]));
        for (int i = 0; i < bj->nv; i++) nan = sym_add(g, nan, sym_sub(g, v[bj->iv + i], v[bj->iv + i]));
    }
    /* the rates, body by body from the root; ov[0] is the frame's body */
    sv Rf[9];
    if (local) {
        sxf f;
        sp_xf_compose(g, &oM[0], F, &f);
        memcpy(Rf, f.R, sizeof Rf);
    }
    for (int c = n - 1, x = 0; c >= 0; c--) {
        const em_body *bj = &em->b[chain[c]];
        ek_body_comment(g, em, chain[c], local ? "LOCAL rates" : "WORLD / LOCAL_WORLD_ALIGNED rates");
        sv rel[6];
        for (int r = 0; r < 6; r++) rel[r] = local ? sym_sub(g, ov[c][r], ov[0][r]) : ov[c][r];
        for (int s = 0; s < bj->nv; s++, x++) {
            sv d[6], out[6];
            sp_motion_cross(g, rel, col[x], d);
            if (local) {
                sp_rot_t(g, Rf, d, out);
                sp_rot_t(g, Rf, d + 3, out + 3);
            } else {
                sv pw[3];
                sp_cross(g, ov[0], col[x] + 3, pw);
                for (int r = 0; r < 3; r++) out[r] = sym_sub(g, d[r], sym_mul(g, lw, pw[r]));
                for (int r = 3; r < 6; r++) out[r] = d[r];
            }
            for (int r = 0; r < 6; r++) sym_store(g, aout, em->nv * r + bj->iv + s, sym_add(g, out[r], nan));
        }
    }
    free(oM);
    free(col);
    free(ov);
    return 0;
}

/* targets with vector extensions: the sines and cosines of the chain's revolute joints by
   grid_jsincos_ (raw code at the top of the function, into vectors snK, csK), and their liMi rebuilt
   from those; a single joint keeps the scalar grid_sincos_. Returns the number of angles. */
static int vector_trig(const emit_ctx *cx, sym_graph *g, ek_kin *k, int b, int local, int *chain)
{
    const em_model *em = cx->em;
    char buf[160], el[96], ix[32];
    int n = chain_of(em, b, chain), m = 0;
    /* LOCAL never uses the root's own joint */
    if (local) n--;
    for (int c = 0; c < n; c++) m += em->b[chain[c]].type == GRID_JOINT_REVOLUTE;
    if (m < 2 || m > JW * JV) return 0;
    /* JW angles per vector, root first (the order the forward pass needs them in) */
    int t = 0;
    for (int c = n - 1; c >= 0; c--) {
        const em_body *bj = &em->b[chain[c]];
        if (bj->type != GRID_JOINT_REVOLUTE) continue;
        if (t % JW == 0) {
            snprintf(buf, sizeof buf, "    grid_jvec sn%d, cs%d;\n    {\n        const grid_jvec x = {", t / JW, t / JW);
            sym_raw(g, buf);
        }
        snprintf(ix, sizeof ix, "%d", bj->iq);
        emit_elem(cx, el, sizeof el, "q", ix);
        snprintf(buf, sizeof buf, "%s%s", t % JW ? ", " : "", el);
        sym_raw(g, buf);
        if (++t % JW == 0 || t == m) {
            snprintf(buf, sizeof buf, "};\n        grid_jsincos_(&x, &sn%d, &cs%d);\n    }\n", (t - 1) / JW, (t - 1) / JW);
            sym_raw(g, buf);
        }
    }
    int asn[JV], acs[JV];
    for (int v = 0; v * JW < m; v++) {
        snprintf(buf, sizeof buf, "sn%d", v);
        asn[v] = sym_array(g, buf, 0);
        snprintf(buf, sizeof buf, "cs%d", v);
        acs[v] = sym_array(g, buf, 0);
    }
    t = 0;
    for (int c = n - 1; c >= 0; c--) {
        const int j = chain[c];
        const em_body *bj = &em->b[j];
        if (bj->type != GRID_JOINT_REVOLUTE) continue;
        sxf XJ, P;
        const sv zero = sym_const(g, 0.0);
        const sv s = sym_input(g, asn[t / JW], t % JW);
        const sv co = sym_input(g, acs[t / JW], t % JW);
        t++;
        ek_body view;
        sp_body_literal(g, bj, &view);
        ek_axis_rotation(g, &view, s, co, XJ.R);
        for (int r = 0; r < 3; r++) XJ.p[r] = zero;
        sp_xf_const(g, bj->R, bj->p, &P);
        sp_xf_compose(g, &P, &XJ, &k->X[j]);
    }
    return m;
}

/* grid_fjl_<b>(q, F, out) or grid_fja_<b>(q, F, lw, out): the nonzero columns of the Jacobian of a frame on body b;
   dot: grid_fjdl_<b>(q, v, F, out) or grid_fjda_<b>(q, v, F, lw, out), their rates along v */
static int emit_chain_function(const emit_ctx *cx, int b, int local, int dot, sym_stats *stats)
{
    const em_model *em = cx->em;
    int rc = -1;
    sym_graph *g = sym_new();
    sv *q = ek_calloc((size_t)em->nq, sizeof *q), *v = ek_calloc((size_t)em->nv + 1, sizeof *v);
    int *chain = ek_calloc((size_t)em->nb, sizeof *chain);
    ek_kin k = {0};
    if (!g || !q || !v || !chain) goto done;
    const int aq = sym_array(g, "q", 1), av = dot ? sym_array(g, "v", 1) : -1, af = sym_array(g, "F", 0);
    const int alw = sym_array(g, "lw", 0), aout = sym_array(g, "out", 1);
    for (int i = 0; i < em->nq; i++) q[i] = sym_input(g, aq, i);
    for (int i = 0; dot && i < em->nv; i++) v[i] = sym_input(g, av, i);
    if (ek_kin_init(&k, g, em, q) != 0) goto done;
    /* the frame placement: constant when shared by the body's frames, else F[0..11] = [R row-major, p] */
    sxf F;
    if (shared_placement(em, b)) {
        const em_frame *f0 = &em->f[first_frame(em, b)];
        sp_xf_const(g, f0->R, f0->p, &F);
    } else {
        for (int r = 0; r < 9; r++) F.R[r] = sym_input(g, af, r);
        for (int r = 0; r < 3; r++) F.p[r] = sym_input(g, af, 9 + r);
    }
    /* the rate's LOCAL columns come from the world ones: the root's joint enters */
    const int angles = cx->t->lanes ? vector_trig(cx, g, &k, b, local && !dot, chain) : 0;
    const sv lw = sym_input(g, alw, 0);
    if ((dot ? build_chain_dot(g, em, &k, q, v, b, local, &F, lw, aout, chain)
             : build_chain(g, em, &k, q, b, local, &F, lw, aout, chain)) != 0 ||
        sym_failed(g))
        goto done;
    const char *r = cx->t->restrict_kw;
    ew_printf(cx->w, "/* body %d: %s, %s Jacobian %s of its chain */\n", b, em->b[b].label,
              local ? "LOCAL" : "WORLD (lw = 0) or LOCAL_WORLD_ALIGNED (lw = 1)", dot ? "column rates" : "columns");
    char vp[64] = "";
    if (dot) snprintf(vp, sizeof vp, "const grid_real *%s v, ", r);
    ew_printf(cx->w, "%s void grid_fj%s%s_%d(const grid_real *%s q, %sconst grid_real *%s F, %sgrid_real *%s out%s)\n{\n",
              cx->t->state_fn, dot ? "d" : "", local ? "l" : "a", b, r, vp, r, local ? "" : "const grid_real *lw, ", r,
              cx->t->stride_param);
    ew_printf(cx->w, "    (void)q; (void)F;%s%s%s\n", dot ? " (void)v;" : "", local ? "" : " (void)lw;",
              cx->t->stride_param[0] ? " (void)st;" : "");
    if (sym_emit(g, &cx->st, cx->w, stats) != 0) goto done;
    ew_puts(cx->w, "}\n\n");
    /* the vector sines and cosines are raw code: count them as the scalar ones would be */
    stats->transcendental += 2 * angles;
    rc = 0;
done:
    ek_kin_free(&k);
    free(q);
    free(v);
    free(chain);
    sym_free(g);
    return rc;
}

/* the unrolled Jacobian (dot: its rate along v): the chain functions of every body with a frame, and the per-state
   function's switch on the frame's body */
static int frame_jacobian_graph(const emit_ctx *cx, ek_kin *k, sym_stats *extra, int dot)
{
    sym_graph *g = k->g;
    const em_model *em = cx->em;
    const char *st = cx->t->stride_param[0] ? ", st" : "", *d = dot ? "d" : "", *v = dot ? "v, " : "";
    char buf[512], el[160];
    if (cx->t->lanes) ew_puts(cx->w, cx->re->is_float ? jsincos_float : jsincos_double);
    /* per body, LOCAL and the other two: its chain, as its own functions (written ahead of the per-state function) */
    for (int b = 0; b < em->nb; b++) {
        if (first_frame(em, b) < 0) continue;
        for (int local = 0; local < 2; local++) {
            sym_stats s = {0};
            if (emit_chain_function(cx, b, local, dot, &s) != 0) return -1;
            extra->statements += s.statements;
            extra->loads += s.loads;
            extra->stores += s.stores;
            /* the work of one call: the most expensive function */
            if (s.flops + 20 * s.transcendental > extra->flops + 20 * extra->transcendental) {
                extra->flops = s.flops;
                extra->transcendental = s.transcendental;
            }
        }
    }
    /* runtime part: zero, then the chain of the frame's body in the requested reference frame */
    emit_elem(cx, el, sizeof el, "out", "e");
    snprintf(buf, sizeof buf,
             "    /* runtime frame: zero, then the columns of the joints from the frame's body to the root */\n"
             "    for (int e = 0; e < %d; e++) %s = 0;\n"
             "    const grid_real *F = grid_frame_place_[frame];\n"
             "    const grid_real lw = rf == 2;\n"
             "    (void)F; (void)lw;\n"
             "    switch (grid_frame_body_[frame]) {\n",
             6 * em->nv, el);
    sym_raw(g, buf);
    for (int b = 0; b < em->nb; b++) {
        if (first_frame(em, b) < 0) continue;
        snprintf(buf, sizeof buf,
                 "    case %d:\n"
                 "        if (rf == 1) grid_fj%sl_%d(q, %sF, out%s);\n"
                 "        else grid_fj%sa_%d(q, %sF, &lw, out%s);\n"
                 "        break;\n",
                 b, d, b, v, st, d, b, v, st);
        sym_raw(g, buf);
    }
    sym_raw(g, "    default: /* a frame welded to the world: zero */\n        break;\n    }\n");
    return 0;
}

int ea_frame_jacobian(const emit_ctx *cx, ek_kin *k, sym_stats *extra) { return frame_jacobian_graph(cx, k, extra, 0); }

int ea_frame_jacobian_dot(const emit_ctx *cx, ek_kin *k, sym_stats *extra) { return frame_jacobian_graph(cx, k, extra, 1); }


/* The rolled rate: oMi and every body's world velocity ov_i forward, then the frame's chain as ea_jacobian_program
   walks it, each world column w of body i moving as ov_i x w (the header's formulas, about the world origin) */
EMIT_PROGRAM(ea_frame_jacobian_dot_program)
{
    (void)cx;
    (void)sp;
    const int OM = ep_buffer(p, "oM", 12, 1), VEL = ep_buffer(p, "vel", 6, 1), OV = ep_buffer(p, "ov", 6, 1);
    const int FR = ep_buffer(p, "fr", 21, 0); /* oMf [R, p], the frame body's ov, the frame origin's velocity */
    for (ep_bodies(p, 0); ep_next(p);) {
        sym_graph *g = ep_graph(p);
        sv vel[6], ov[6];
        ep_comment(p, "oMi and the world velocity");
        const sxf o = ep_world_placement(p, OM, 0);
        ep_body_velocity(p, VEL, vel);
        sp_motion_act(g, &o, vel, ov);
        for (int r = 0; r < 6; r++) ep_set(p, OV, EP_I, EP_SELF, r, ov[r]);
    }
    ep_zero_output(p);
    /* a frame welded to the world has a zero rate */
    ep_raw(p, "if (grid_frame_body_[frame] >= 0) {\n");
    {
        sym_graph *g = ep_graph(p);
        sxf o, P, f;
        sv ov[6], pw[3];
        for (int k = 0; k < 9; k++) o.R[k] = ep_get_at(p, OM, EP_BODY_FRAME, k);
        for (int k = 0; k < 3; k++) o.p[k] = ep_get_at(p, OM, EP_BODY_FRAME, 9 + k);
        for (int k = 0; k < 6; k++) ov[k] = ep_get_at(p, OV, EP_BODY_FRAME, k);
        for (int k = 0; k < 9; k++) P.R[k] = ep_frame_place(p, k);
        for (int k = 0; k < 3; k++) P.p[k] = ep_frame_place(p, 9 + k);
        sp_xf_compose(g, &o, &P, &f);
        sp_cross(g, ov + 3, f.p, pw);
        for (int k = 0; k < 9; k++) ep_set(p, FR, EP_I, EP_SELF, k, f.R[k]);
        for (int k = 0; k < 3; k++) ep_set(p, FR, EP_I, EP_SELF, 9 + k, f.p[k]);
        for (int k = 0; k < 6; k++) ep_set(p, FR, EP_I, EP_SELF, 12 + k, ov[k]);
        for (int k = 0; k < 3; k++) ep_set(p, FR, EP_I, EP_SELF, 18 + k, sym_add(g, ov[k], pw[k]));
    }
    static const char *const branch[3] = {"if (rf == 0) {\n", "} else if (rf == 1) {\n", "} else {\n"};
    for (int rf = 0; rf < 3; rf++) {
        ep_raw(p, branch[rf]);
        for (ep_chain(p, "grid_frame_body_[frame]"); ep_next(p);) {
            sym_graph *g = ep_graph(p);
            const ek_body *b = ep_body(p, EP_I);
            sxf o, f;
            sv ov[6], ovf[6], pd[3];
            ep_comment(p, rf == 0 ? "WORLD rates" : rf == 1 ? "LOCAL rates" : "LOCAL_WORLD_ALIGNED rates");
            ep_get_xf(p, OM, EP_I, EP_SELF, &o);
            for (int k = 0; k < 6; k++) ov[k] = ep_get(p, OV, EP_I, EP_SELF, k);
            for (int k = 0; k < 9; k++) f.R[k] = ep_get(p, FR, EP_I, EP_SELF, k);
            for (int k = 0; k < 3; k++) f.p[k] = ep_get(p, FR, EP_I, EP_SELF, 9 + k);
            for (int k = 0; k < 6; k++) ovf[k] = ep_get(p, FR, EP_I, EP_SELF, 12 + k);
            for (int k = 0; k < 3; k++) pd[k] = ep_get(p, FR, EP_I, EP_SELF, 18 + k);
            for (int c = 0; c < b->nv; c++) {
                sv s[6], w[6], dw[6], col[6];
                for (int r = 0; r < 6; r++) s[r] = b->S[b->nv * r + c];
                sp_motion_act(g, &o, s, w);
                if (rf == GRID_LOCAL) {
                    /* fXo ((ov_i - ov_f) x w) */
                    sv rel[6];
                    for (int r = 0; r < 6; r++) rel[r] = sym_sub(g, ov[r], ovf[r]);
                    sp_motion_cross(g, rel, w, dw);
                    sp_motion_act_inv(g, &f, dw, col);
                } else {
                    sp_motion_cross(g, ov, w, dw);
                    for (int r = 0; r < 6; r++) col[r] = dw[r];
                    if (rf == GRID_LOCAL_WORLD_ALIGNED) {
                        /* dv - p_f x dw - pdot_f x w */
                        sv a[3], bb[3];
                        sp_cross(g, f.p, dw + 3, a);
                        sp_cross(g, pd, w + 3, bb);
                        for (int r = 0; r < 3; r++) col[r] = sym_sub(g, sym_sub(g, dw[r], a[r]), bb[r]);
                    }
                }
                for (int r = 0; r < 6; r++) ep_out(p, col[r], ep_at(r), ep_coord(EP_I, EP_SELF, c));
            }
        }
    }
    ep_raw(p, "}\n}\n");
    return 0;
}
