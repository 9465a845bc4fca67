/* The end-effector pose gradient and VJP as per-state functions over two others: the poses and each end effector's frame Jacobian. */
#include <stdio.h>
#include "emit_ctx.h"

/* d[xyz, rpy]/dq along the local tangent: d xyz is the frame origin's velocity in world axes, the linear rows of the
   LOCAL_WORLD_ALIGNED Jacobian; with R = Rz(y) Ry(p) Rx(r) the world angular velocity is
   omega = [cy cp dr - sy dp, sy cp dr + cy dp, -sp dr + dy], so
   dr = (cy wx + sy wy) / cp, dp = -sy wx + cy wy, dy = wz + sp dr  (infinite at cp = 0: pitch = +-pi/2).
   The VJP (sp->reads_g: the ee_pose_vjp row) contracts each column with the cotangent as it is formed: out[c] =
   sum_e,r g[6 e + r] d_er(c), O(nee nv) after the Jacobians, with no 6 nee x nv array. */
int emit_ee_pose_grad_function(const emit_ctx *cx, const state_spec *sp, const composite_inners *in, int vector,
                               sym_stats *stats)
{
    (void)vector; /* (scalar only: no lane form) */
    ew_writer *w = cx->w;
    const em_model *em = cx->em;
    const int nv = em->nv_user, nq = em->nq_user, nee = em->nee;
    const int vjp = sp->reads_g;
    const long own = (long)nq + 6L * nee + 6L * nv;
    stats->statements = 20;
    stats->flops = 12L * nee * nv;
    stats->transcendental = 4L * nee;
    stats->work = in->inner_work + own;
    const char *T = cx->t->table, *st1 = cx->t->stride_param[0] ? ", 1" : "";
    const char *fsin = cx->re->fn_sin, *fcos = cx->re->fn_cos;
    char qe[64], oe[80], ge[64], oc[64];
    emit_elem(cx, qe, sizeof qe, "q", "k");
    emit_elem(cx, oe, sizeof oe, "out", "(6 * e + r) * NV_ + c");
    emit_elem(cx, ge, sizeof ge, "g", "6 * e + r");
    emit_elem(cx, oc, sizeof oc, "out", "c");
    ew_printf(w, "/* %s: %sd[xyz, rpy]/dq of the %d end effectors (their LOCAL_WORLD_ALIGNED Jacobians; rpy rows infinite "
                 "at pitch = +-pi/2) */\n",
              sp->fn, vjp ? "g^T " : "", nee);
    ew_printf(w, "#ifndef GRID_EEG_FRAMES_\n#define GRID_EEG_FRAMES_\n%s int grid_eeg_frames_[%d] = {", T, nee > 0 ? nee : 1);
    for (int e = 0; e < nee; e++) ew_printf(w, "%s%d", e ? ", " : "", em->ee[e]);
    ew_printf(w, "%s};\n#endif\n", nee ? "" : "0");
    char store[256];
    if (vjp) snprintf(store, sizeof store, "for (int r = 0; r < 6; r++) %s += %s * d[r]", oc, ge);
    else snprintf(store, sizeof store, "for (int r = 0; r < 6; r++) %s = d[r]", oe);
    ew_printf(w, "%s void grid_s_%s", cx->t->state_fn, sp->fn);
    emit_state_params(w, cx->t);
    ew_printf(w, "\n{\n    (void)v; (void)a; (void)fext; (void)g; (void)frame; (void)rf;\n"
                 "    enum { NV_ = %d };\n"
                 "    grid_real *cq = ws + %ld, *pose = cq + %d, *J = pose + %d;\n"
                 "    for (int k = 0; k < %d; k++) cq[k] = %s;\n", nv > 0 ? nv : 1, in->inner_work, nq, 6 * nee, nq, qe);
    if (vjp) ew_printf(w, "    for (int c = 0; c < NV_; c++) %s = 0;\n", oc);
    ew_printf(w, "    grid_s_%s(cq, 0, 0, 0, 0, pose, 0, 0, ws%s);\n"
                 "    for (int e = 0; e < %d; e++) {\n"
                 "        grid_s_%s(cq, 0, 0, 0, 0, J, grid_eeg_frames_[e], 2, ws%s);\n"
                 "        const grid_real p = pose[6 * e + 4], y = pose[6 * e + 5];\n"
                 "        const grid_real sp = %s(p), cp = %s(p), sy = %s(y), cy = %s(y);\n"
                 "        for (int c = 0; c < NV_; c++) {\n"
                 "            const grid_real wx = J[3 * NV_ + c], wy = J[4 * NV_ + c], wz = J[5 * NV_ + c];\n"
                 "            const grid_real dr = (cy * wx + sy * wy) / cp;\n"
                 "            const grid_real d[6] = {J[c], J[NV_ + c], J[2 * NV_ + c], dr, -sy * wx + cy * wy, wz + sp * dr};\n"
                 "            %s;\n"
                 "        }\n"
                 "    }\n}\n\n",
              in->fn[0], st1, nee, in->fn[1], st1, fsin, fcos, fsin, fcos, store);
    return 0;
}
