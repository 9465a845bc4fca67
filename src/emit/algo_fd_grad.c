/* The forward-dynamics gradient and VJP as per-state functions over three others: qdd = FD, the RNEA gradient or VJP at qdd, M^-1. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include "../common/incbin.h"
#include "emit_ctx.h"
#include "template.h"

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
    emit_tpl tp;
    emit_tpl_begin(&tp, w);
    char el[64];
    emit_elem(cx, el, sizeof el, "p", "k");
    emit_tpl_define(&tp, "GRID_FDG_NV_", "%d", nv);
    emit_tpl_define(&tp, "GRID_FDG_NQ_", "%d", nq);
    emit_tpl_define(&tp, "GRID_FDG_NB_", "%d", nb);
    emit_tpl_define(&tp, "GRID_FDG_WORK_", "%ld", in->inner_work);
    emit_tpl_define(&tp, "GRID_FDG_VJP_", "%d", vjp);
    emit_tpl_define(&tp, "GRID_FDG_LANES_", "%d", vector);
    emit_tpl_define(&tp, "GRID_FDG_FEXT_", "%d", sp->reads_fext);
    emit_tpl_define(&tp, "GRID_FDG_X_", "%s", il ? "* GRID_IL_" : "");
    emit_tpl_define(&tp, "GRID_FDG_K0_", "%s", grp ? "gl" : "0");
    emit_tpl_define(&tp, "GRID_FDG_KSTEP_", "%s", grp ? "k += GRID_G_" : "k++");
    emit_tpl_define(&tp, "GRID_FDG_SYNC_", "%s", grp ? "GRID_GROUP_SYNC_();" : "");
    emit_tpl_define(&tp, "GRID_EL_(p, k)", "%s", el);
    /* the callees: the lane functions on the state's own parameters, or the scalar ones on the copies with the
       element stride of their arrays (1, or the interleave), a group's template argument and lanes */
    char fd[96], minv[96], dtau[96];
    const char *form = vector ? "v" : "s", *tm = grp ? "<GRID_G_>" : "";
    snprintf(fd, sizeof fd, "grid_%s_%s%s", form, in->fn[0], tm);
    snprintf(minv, sizeof minv, "grid_%s_%s%s", form, in->fn[2], tm);
    snprintf(dtau, sizeof dtau, "grid_%s_%s%s", form, in->fn[1], tm);
    const char *stride = il ? "GRID_IL_" : "1", *ga = grp ? ", gl, gm" : NULL;
    const char *lin[EP_NARGS] = {[EP_OUT] = "o_"}, *lat[EP_NARGS] = {[EP_A] = "a_", [EP_G] = "g_", [EP_OUT] = "o_"};
    const char *cin[EP_NARGS] = {"cq", "cv", "ca", "cf", "0", "o_", "0", "0"};
    const char *cat[EP_NARGS] = {"cq", "cv", "a_", "cf", "g_", "o_", "0", "0"};
    emit_tpl_define_call(&tp, cx->t, "GRID_FDG_FD_", "o_", fd, vector, vector ? lin : cin, stride, ga);
    emit_tpl_define_call(&tp, cx->t, "GRID_FDG_MINV_", "o_", minv, vector, vector ? lin : cin, stride, ga);
    emit_tpl_define_call(&tp, cx->t, "GRID_FDG_DTAU_", "a_, g_, o_", dtau, vector, vector ? lat : cat, stride, ga);
    if (vector) {
        emit_tpl_define(&tp, "GRID_FDG_OFF_", "grid_dtau_off_%s", sp->fn);
        emit_tpl_define(&tp, "GRID_FDG_ROWS_", "grid_dtau_rows_%s", sp->fn);
        emit_lane_signature(cx, cx->t->state_fn, sp->fn);
    } else {
        ew_printf(w, "%s%s void grid_s_%s", grp ? cx->t->group_fn : "", cx->t->state_fn, sp->fn);
        if (grp) emit_rolled_state_params(w, cx->t);
        else emit_state_params(w, cx->t);
        ew_printf(w, "\n{\n    (void)fext; (void)g; (void)frame; (void)rf;%s\n", grp ? " (void)gm;" : "");
    }
    emit_tpl_body(&tp, grid_fd_grad_h_start);
    ew_puts(w, "}\n");
    emit_tpl_end(&tp);
    ew_puts(w, "\n");
    return 0;
}
