/* The end-effector pose gradient, VJP and Hessian as per-state functions over two others: the poses and each end effector's frame Jacobian. */
#include <assert.h>
#include <stdio.h>
#include "../common/incbin.h"
#include "emit_ctx.h"
#include "template.h"

/* the function's body: src/emit/ee_pose_grad.h, verbatim (its comment says what it computes and which macros it reads) */
GRID_INCBIN(grid_ee_pose_grad_h, "src/emit/ee_pose_grad.h");

int emit_ee_pose_grad_function(const emit_ctx *cx, const state_spec *sp, const composite_inners *in, int vector,
                               sym_stats *stats)
{
    (void)vector; /* (scalar only: no lane form) */
    ew_writer *w = cx->w;
    const em_model *em = cx->em;
    const int vjp = sp->reads_g, hess = sp->m->row == GRID_ALGO_EE_POSE_HESSIAN;
    /* the Hessian relates the joints' world columns (which joint moves which), that a mimic group's user column sums:
       on a coupled model it runs on the full coordinates and is projected, G^T H G per pose row (the coupling is
       affine: no second-order term) */
    if (hess && emit_coupled(cx)) return emit_coupled_composite(cx, sp, in, stats, emit_ee_pose_grad_function);
    const int nv = cx->inner ? em->nv : em->nv_user, nq = cx->inner ? em->nq : em->nq_user, nee = em->nee;
    const long own = (long)nq + 6L * nee + 6L * nv + (hess ? 6L * nv : 0);
    stats->statements = hess ? 60 : 20;
    stats->flops = hess ? 90L * nee * nv * nv : 12L * nee * nv;
    stats->transcendental = 4L * nee;
    stats->work = in->inner_work + own;
    ew_printf(w, "/* %s: %s of the %d end effectors (their LOCAL_WORLD_ALIGNED Jacobians; rpy rows infinite "
                 "at pitch = +-pi/2) */\n",
              sp->fn, hess ? "d2[xyz, rpy]/dq dq" : vjp ? "g^T d[xyz, rpy]/dq" : "d[xyz, rpy]/dq", nee);
    ew_printf(w, "#ifndef GRID_EEG_FRAMES_\n#define GRID_EEG_FRAMES_\n%s int grid_eeg_frames_[%d] = {", cx->t->table,
              nee > 0 ? nee : 1);
    for (int e = 0; e < nee; e++) ew_printf(w, "%s%d", e ? ", " : "", em->ee[e]);
    ew_printf(w, "%s};\n#endif\n", nee ? "" : "0");
    if (hess) {
        /* the last coordinate of each column's joint: joint k moves column j's (its body an ancestor of j's, or j's
           own) exactly when k <= grid_eeg_vend_[j], for columns on one chain (the ancestors of an end effector), the
           coordinates being numbered parents first */
        ew_printf(w, "#ifndef GRID_EEG_VEND_\n#define GRID_EEG_VEND_\n%s int grid_eeg_vend_[%d] = {", cx->t->table,
                  nv > 0 ? nv : 1);
        for (int b = 0, n = 0; b < em->nb; b++) {
            assert(em->b[b].parent < b && (em->b[b].nv == 0 || em->b[b].iv == n));
            for (int k = 0; k < em->b[b].nv; k++) ew_printf(w, "%s%d", n++ ? ", " : "", em->b[b].iv + em->b[b].nv - 1);
        }
        ew_printf(w, "%s};\n#endif\n", nv ? "" : "0");
    }
    /* the macros of the body, the callees' calls in the calling convention */
    emit_tpl tp;
    emit_tpl_begin(&tp, w);
    char el[64], pose[96], jac[96];
    emit_elem(cx, el, sizeof el, "p", "k");
    snprintf(pose, sizeof pose, "grid_s_%s", in->fn[0]);
    snprintf(jac, sizeof jac, "grid_s_%s", in->fn[1]);
    emit_tpl_define(&tp, "GRID_EEG_NV_", "%d", nv > 0 ? nv : 1);
    emit_tpl_define(&tp, "GRID_EEG_NQ_", "%d", nq);
    emit_tpl_define(&tp, "GRID_EEG_NEE_", "%d", nee);
    emit_tpl_define(&tp, "GRID_EEG_WORK_", "%ld", in->inner_work);
    emit_tpl_define(&tp, "GRID_EEG_VJP_", "%d", vjp);
    emit_tpl_define(&tp, "GRID_EEG_HESS_", "%d", hess);
    emit_tpl_define(&tp, "GRID_EL_(p, k)", "%s", el);
    emit_tpl_define(&tp, "GRID_SIN_", "%s", cx->re->fn_sin);
    emit_tpl_define(&tp, "GRID_COS_", "%s", cx->re->fn_cos);
    const char *pa[EP_NARGS] = {"q_", "0", "0", "0", "0", "o_", "0", "0"};
    const char *ja[EP_NARGS] = {"q_", "0", "0", "0", "0", "o_", "f_", "2"};
    emit_tpl_define_call(&tp, cx->t, "GRID_EEG_POSE_", "q_, o_", pose, 0, pa, "1", NULL);
    emit_tpl_define_call(&tp, cx->t, "GRID_EEG_JAC_", "q_, o_, f_", jac, 0, ja, "1", NULL);
    ew_printf(w, "%s void grid_s_%s", cx->t->state_fn, sp->fn);
    emit_state_params(w, cx->t);
    ew_puts(w, "\n{\n");
    /* (q, out and ws are the body's; the attributes are not read) */
    emit_state_unused(w, cx->t, 0, 1u << EP_Q | 1u << EP_OUT | 1u << EP_WS, 1);
    ew_puts(w, "\n");
    emit_tpl_body(&tp, grid_ee_pose_grad_h_start);
    ew_puts(w, "}\n");
    emit_tpl_end(&tp);
    ew_puts(w, "\n");
    return 0;
}
