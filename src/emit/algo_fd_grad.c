/* The forward-dynamics gradient and VJP as per-state functions over three others: qdd = FD, the RNEA gradient or VJP at qdd, M^-1. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
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

/* d qdd / dx = -M^-1 d tau / dx at qdd = FD(q, v, u, fext) (differentiate M qdd + c = u): the same values as
   Pinocchio's computeABADerivatives. M^-1 is dense; on lane vectors (C) the product skips dtau's structural zeros
   (nv multiply-adds per nonzero of dtau instead of 2 nv^3), the scalar form (CUDA) is the plain triple loop.
   The VJP (sp->reads_g: the fd_vjp row): g^T dqdd/dx = -(M^-1 g)^T dtau/dx, so with h = M^-1 g (M symmetric) it is the
   RNEA VJP at qdd for the cotangent h, negated, and h itself is the u block: O(nv^2) for h, O(nv) for the rest. */
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
    if (vector) {
        /* its arrays in the workspace (vectors) after the inner functions' own */
        ew_printf(w, "/* %s: %s at qdd = FD(q, qd, u%s) */\n", sp->fn, what, sp->reads_fext ? ", f_ext" : "");
        emit_lane_signature(cx, cx->t->state_fn, sp->fn);
        ew_printf(w, "    grid_vec *qdd = ws + %ld, *Mi = qdd + %d, *dt = Mi + %d;\n"
                     "    grid_v_%s(q, v, a, fext, g, qdd, ws);\n"
                     "    grid_v_%s(q, v, a, fext, g, Mi, ws);\n",
                  in->inner_work, nv, nv * nv, in->fn[0], in->fn[2]);
        if (vjp) {
            ew_printf(w, "    grid_vec *h = dt + %d;\n"
                         "    for (int r = 0; r < %d; r++) {\n"
                         "        grid_vec s = grid_splat_(0);\n"
                         "        for (int k = 0; k < %d; k++) s += Mi[r * %d + k] * g[k];\n"
                         "        h[r] = s;\n"
                         "    }\n"
                         "    grid_v_%s(q, v, qdd, fext, h, dt, ws);\n"
                         "    for (int k = 0; k < %d; k++) out[k] = -dt[k];\n"
                         "    for (int k = 0; k < %d; k++) out[%d + k] = h[k];\n}\n\n",
                      dn, nv, nv, nv, in->fn[1], n2, nv, n2);
            return 0;
        }
        if (write_dtau_rows(cx, sp->fn) != 0) return -1;
        ew_printf(w, "    grid_v_%s(q, v, qdd, fext, g, dt, ws);\n"
                     "    grid_vneg_matmul_(%d, %d, %d, Mi, dt, out, grid_dtau_off_%s, grid_dtau_rows_%s);\n}\n\n",
                  in->fn[1], nv, nv, n2, sp->fn, sp->fn);
        return 0;
    }
    /* scalar: the state's inputs copied to contiguous arrays (the inner functions run with an element stride of
       1 on them), everything in the workspace after the inner functions' own. Grouped (in->group: a rolled
       composite on CUDA, whose callees are all rolled templates), the lanes of a group share the state: they call
       the callees together, split the copies and the product over the lanes (lane k mod GRID_G_ owns element k,
       each summed in the one-thread order) and meet at a sync after every step that writes what others read. */
    char qe[64], ve[64], ae[64], fe[64], ge[64], oe[64];
    emit_elem(cx, qe, sizeof qe, "q", "k");
    emit_elem(cx, ve, sizeof ve, "v", "k");
    emit_elem(cx, ae, sizeof ae, "a", "k");
    emit_elem(cx, fe, sizeof fe, "fext", "k");
    emit_elem(cx, ge, sizeof ge, "g", "k");
    emit_elem(cx, oe, sizeof oe, "out", "k");
    const int grp = in->group, il = in->interleave;
    assert(!(grp && il) && (!il || in->inner_work == 0));
    /* the callees' stride (the element stride of their arrays: 1, or the interleave), and the arrays' index scale */
    const char *st1 = !cx->t->stride_param[0] ? "" : il ? ", GRID_IL_" : ", 1", *x = il ? " * GRID_IL_" : "";
    /* a callee's template argument and trailing group arguments; the split loop's start and step; the sync */
    const char *tm = grp ? "<GRID_G_>" : "", *ga = grp ? ", gl, gm" : "", *k0 = grp ? "gl" : "0";
    const char *kst = grp ? "k += GRID_G_" : "k++", *sync = grp ? "    GRID_GROUP_SYNC_();\n" : "";
    ew_printf(w, "/* %s: %s at qdd = FD(q, qd, u%s)%s */\n"
                 "%s%s void grid_s_%s",
              sp->fn, what, sp->reads_fext ? ", f_ext" : "",
              grp ? "; GRID_G_ lanes share the state" : il ? "; its arrays interleaved over the warp's lanes" : "",
              grp ? cx->t->group_fn : "", cx->t->state_fn, sp->fn);
    if (grp) emit_rolled_state_params(w, cx->t);
    else emit_state_params(w, cx->t);
    ew_printf(w, "\n{\n    (void)fext; (void)g; (void)frame; (void)rf;%s\n"
                 "    grid_real *cq = ws + %ld, *cv = cq + %d%s, *ca = cv + %d%s, *cf = ca + %d%s;\n"
                 "    grid_real *qdd = cf + %d%s, *Mi = qdd + %d%s, *dt = Mi + %d%s;\n"
                 "    for (int k = %s; k < %d; %s) cq[k%s] = %s;\n"
                 "    for (int k = %s; k < %d; %s) cv[k%s] = %s;\n"
                 "    for (int k = %s; k < %d; %s) ca[k%s] = %s;\n",
              grp ? " (void)gm;" : "", in->inner_work, nq, x, nv, x, nv, x, 6 * nb, x, nv, x, nv * nv, x, k0, nq, kst,
              x, qe, k0, nv, kst, x, ve, k0, nv, kst, x, ae);
    if (sp->reads_fext) ew_printf(w, "    for (int k = %s; k < %d; %s) cf[k%s] = %s;\n", k0, 6 * nb, kst, x, fe);
    ew_printf(w, "%s"
                 "    grid_s_%s%s(cq, cv, ca, cf, 0, qdd, 0, 0, ws%s%s);\n%s"
                 "    grid_s_%s%s(cq, cv, ca, cf, 0, Mi, 0, 0, ws%s%s);\n%s",
              sync, in->fn[0], tm, st1, ga, sync, in->fn[2], tm, st1, ga, sync);
    if (vjp) {
        ew_printf(w, "    grid_real *cg = dt + %d%s, *h = cg + %d%s;\n"
                     "    for (int k = %s; k < %d; %s) cg[k%s] = %s;\n%s"
                     "    for (int k = %s; k < %d; %s) {\n"
                     "        grid_real s = 0;\n"
                     "        for (int j = 0; j < %d; j++) s += Mi[(k * %d + j)%s] * cg[j%s];\n"
                     "        h[k%s] = s;\n"
                     "    }\n%s"
                     "    grid_s_%s%s(cq, cv, qdd, cf, h, dt, 0, 0, ws%s%s);\n%s"
                     "    for (int k = %s; k < %d; %s) %s = k < %d ? -dt[k%s] : h[(k - %d)%s];\n",
                  dn, x, nv, x, k0, nv, kst, x, ge, sync, k0, nv, kst, nv, nv, x, x, x, sync, in->fn[1], tm, st1, ga,
                  sync, k0, n2 + nv, kst, oe, n2, x, n2, x);
    } else {
        ew_printf(w, "    grid_s_%s%s(cq, cv, qdd, cf, 0, dt, 0, 0, ws%s%s);\n%s"
                     "    for (int k = %s; k < %d; %s) {\n"
                     "        const int r = k / %d, c = k %% %d;\n"
                     "        grid_real s = 0;\n"
                     "        for (int j = 0; j < %d; j++) s -= Mi[(r * %d + j)%s] * dt[(j * %d + c)%s];\n"
                     "        %s = s;\n"
                     "    }\n",
                  in->fn[1], tm, st1, ga, sync, k0, nv * n2, kst, n2, n2, nv, nv, x, n2, x, oe);
    }
    /* the lanes leave together: the caller's next use of the workspace follows every lane's last read */
    ew_printf(w, "%s}\n\n", sync);
    return 0;
}
