/* The forward-dynamics gradient and VJP as per-state functions over three others: qdd = FD, the RNEA gradient or VJP at qdd, M^-1. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../common/incbin.h"
#include "emit_ctx.h"

/* the nonzero rows of [dtau/dq | dtau/dqd] per block of 3 columns (grid_vneg_matmul_'s tables), written before
   the function: dtau_t / dx_c vanishes unless t and c lie on one path of the tree (one is an ancestor of the other:
   the RNEA gradient's pairs), which the elimination tree of M (of G^T M G with couplings) covers */
static int write_dtau_rows(const emit_ctx *cx, const char *fn)
{
    const em_model *em = cx->em;
    const int nv = em->nv_user, n2 = 2 * nv, nblk = (n2 + 2) / 3;
    const int *lam = em->coupled_tree;
    ew_writer *w = cx->w;
    unsigned char *rel = calloc((size_t)nv * (size_t)(nv > 0 ? nv : 1), 1);
    int *rows = malloc((size_t)nblk * (size_t)(nv > 0 ? nv : 1) * sizeof *rows), *off = malloc((size_t)(nblk + 1) * sizeof *off);
    if (!rel || !rows || !off) {
        free(rel);
        free(rows);
        free(off);
        return -1;
    }
    /* rel[t * nv + c]: t an ancestor of c or c of t (each walk up the tree marks both) */
    for (int c = 0; c < nv; c++)
        for (int t = c; t >= 0; t = lam[t]) rel[(size_t)t * nv + c] = rel[(size_t)c * nv + t] = 1;
    int n = 0;
    off[0] = 0;
    for (int b = 0; b < nblk; b++) {
        for (int t = 0; t < nv; t++) {
            int any = 0;
            for (int c = 3 * b; c < 3 * b + 3 && c < n2; c++) any |= rel[(size_t)t * nv + c % nv];
            if (any) rows[n++] = t;
        }
        off[b + 1] = n;
    }
    ew_printf(w, "static const int grid_dtau_off_%s[%d] = {", fn, nblk + 1);
    for (int b = 0; b <= nblk; b++) ew_printf(w, "%s%d", b ? ", " : "", off[b]);
    ew_printf(w, "};\nstatic const int grid_dtau_rows_%s[%d] = {", fn, n > 0 ? n : 1);
    for (int k = 0; k < n; k++) ew_printf(w, "%s%d", k ? ", " : "", rows[k]);
    ew_puts(w, n ? "};\n\n" : "0};\n\n");
    free(rel);
    free(rows);
    free(off);
    return 0;
}

/* the function's body: src/emit/fd_grad.h, verbatim (its comment says what it computes and which macros it reads) */
GRID_INCBIN(grid_fd_grad_h, "src/emit/fd_grad.h");

/* "#define NAME(params) call" of callee fn in the calling convention (target.h): lanes, or the scalar form with its
   template argument tm, stride argument and trailing group arguments */
static void define_call(const emit_ctx *cx, const char *name, const char *params, const char *fn, int lanes,
                        const char *tm, const char *const arg[EP_NARGS], const char *stride, const char *extra)
{
    char full[128];
    snprintf(full, sizeof full, "grid_%s_%s%s", lanes ? "v" : "s", fn, tm);
    ew_printf(cx->w, "#define %s(%s) %s(", name, params, full);
    emit_state_arglist(cx->w, cx->t, lanes, arg, stride);
    ew_printf(cx->w, "%s)\n", extra);
}

/* d qdd / dx = -M^-1 d tau / dx at qdd = FD(q, v, u, fext), and its VJP (src/emit/fd_grad.h). M^-1 is dense; on lane
   vectors (C) the product skips dtau's structural zeros (nv multiply-adds per nonzero of dtau instead of 2 nv^3), the
   scalar form (CUDA) is the plain triple loop. */
int emit_fd_grad_function(const emit_ctx *cx, const state_spec *sp, const composite_inners *in, int vector,
                          sym_stats *stats)
{
    ew_writer *w = cx->w;
    const int nv = cx->em->nv_user, nq = cx->em->nq_user, nb = cx->em->nb, n2 = 2 * nv;
    const int vjp = sp->reads_g;
    /* the inner call's output: the gradient (nv x 2 nv) or the RNEA VJP (2 nv) */
    const int dn = vjp ? n2 : nv * n2;
    /* its own arrays in the workspace: qdd, M^-1, the inner output, h (the VJP); the scalar form also copies the
       state's inputs (cq, cv, ca, cf) and the cotangent */
    const long own = nv + (long)nv * nv + dn + (vjp ? nv : 0) + (vector ? 0 : (long)nq + 2L * nv + 6L * nb + (vjp ? nv : 0));
    stats->statements = 12;
    stats->flops = vjp ? 2L * nv * nv + n2 : 2L * nv * nv * n2;
    stats->transcendental = 0;
    stats->work = in->inner_work + own;
    const char *what = vjp ? "[-h^T dtau/dq | -h^T dtau/dqd | h], h = M^-1 g," : "d qdd/d(q, qd) = -M^-1 [dtau/dq | dtau/dqd]";
    /* scalar: grouped (in->group: a rolled composite on CUDA, whose callees are all rolled templates) or interleaved
       over the warp's lanes (CUDA, callees without workspace) */
    const int grp = !vector && in->group, il = !vector && in->interleave;
    assert(!(grp && il) && (!il || in->inner_work == 0));
    if (vector && !vjp && write_dtau_rows(cx, sp->fn) != 0) return -1;
    ew_printf(w, "/* %s: %s at qdd = FD(q, qd, u%s)%s */\n", sp->fn, what, sp->reads_fext ? ", f_ext" : "",
              grp ? "; GRID_G_ lanes share the state" : il ? "; its arrays interleaved over the warp's lanes" : "");
    /* the macros of the body */
    char el[64];
    emit_elem(cx, el, sizeof el, "p", "k");
    ew_printf(w, "#define GRID_FDG_NV_ %d\n#define GRID_FDG_NQ_ %d\n#define GRID_FDG_NB_ %d\n#define GRID_FDG_WORK_ %ld\n"
                 "#define GRID_FDG_VJP_ %d\n#define GRID_FDG_LANES_ %d\n#define GRID_FDG_FEXT_ %d\n#define GRID_FDG_X_%s\n"
                 "#define GRID_FDG_K0_ %s\n#define GRID_FDG_KSTEP_ %s\n#define GRID_FDG_SYNC_%s\n#define GRID_EL_(p, k) %s\n",
              nv, nq, nb, in->inner_work, vjp, vector, sp->reads_fext, il ? " * GRID_IL_" : "", grp ? "gl" : "0",
              grp ? "k += GRID_G_" : "k++", grp ? " GRID_GROUP_SYNC_();" : "", el);
    if (vector) {
        ew_printf(w, "#define GRID_FDG_OFF_ grid_dtau_off_%s\n#define GRID_FDG_ROWS_ grid_dtau_rows_%s\n", sp->fn, sp->fn);
        const char *own_in[EP_NARGS] = {[EP_OUT] = "o_"}, *at[EP_NARGS] = {[EP_A] = "a_", [EP_G] = "g_", [EP_OUT] = "o_"};
        define_call(cx, "GRID_FDG_FD_", "o_", in->fn[0], 1, "", own_in, NULL, "");
        define_call(cx, "GRID_FDG_MINV_", "o_", in->fn[2], 1, "", own_in, NULL, "");
        define_call(cx, "GRID_FDG_DTAU_", "a_, g_, o_", in->fn[1], 1, "", at, NULL, "");
        emit_lane_signature(cx, cx->t->state_fn, sp->fn);
    } else {
        /* the callees on the copies, with the element stride of their arrays (1, or the interleave) */
        const char *tm = grp ? "<GRID_G_>" : "", *stride = il ? "GRID_IL_" : "1", *ga = grp ? ", gl, gm" : "";
        const char *cin[EP_NARGS] = {"cq", "cv", "ca", "cf", "0", "o_", "0", "0"};
        const char *cat[EP_NARGS] = {"cq", "cv", "a_", "cf", "g_", "o_", "0", "0"};
        define_call(cx, "GRID_FDG_FD_", "o_", in->fn[0], 0, tm, cin, stride, ga);
        define_call(cx, "GRID_FDG_MINV_", "o_", in->fn[2], 0, tm, cin, stride, ga);
        define_call(cx, "GRID_FDG_DTAU_", "a_, g_, o_", in->fn[1], 0, tm, cat, stride, ga);
        ew_printf(w, "%s%s void grid_s_%s", grp ? cx->t->group_fn : "", cx->t->state_fn, sp->fn);
        if (grp) emit_rolled_state_params(w, cx->t);
        else emit_state_params(w, cx->t);
        ew_printf(w, "\n{\n    (void)fext; (void)g; (void)frame; (void)rf;%s\n", grp ? " (void)gm;" : "");
    }
    /* the file without its purpose line and the comment that documents these macros */
    const char *body = strstr(strchr(grid_fd_grad_h_start, '\n') + 1, "*/\n");
    assert(body);
    ew_puts(w, body + 3);
    ew_puts(w, "}\n#undef GRID_FDG_NV_\n#undef GRID_FDG_NQ_\n#undef GRID_FDG_NB_\n#undef GRID_FDG_WORK_\n#undef GRID_FDG_VJP_\n"
               "#undef GRID_FDG_LANES_\n#undef GRID_FDG_FEXT_\n#undef GRID_FDG_X_\n#undef GRID_FDG_K0_\n#undef GRID_FDG_KSTEP_\n"
               "#undef GRID_FDG_SYNC_\n#undef GRID_EL_\n#undef GRID_FDG_FD_\n#undef GRID_FDG_MINV_\n#undef GRID_FDG_DTAU_\n");
    if (vector) ew_puts(w, "#undef GRID_FDG_OFF_\n#undef GRID_FDG_ROWS_\n");
    ew_puts(w, "\n");
    return 0;
}
