/* The body of the end-effector pose gradient, VJP and Hessian (one per-state function over the poses and each end effector's frame Jacobian), written verbatim into generated code. */
/*
 * algo_ee_pose_grad.c writes the function's signature in the calling convention (target.h), defines the macros below
 * for this robot and row, embeds this file (.incbin) as the body, and undefines them:
 *   GRID_EEG_NV_, GRID_EEG_NQ_, GRID_EEG_NEE_  the user's nv (at least 1), nq, the end effectors
 *   GRID_EEG_WORK_                             where its arrays start in ws (past the callees' workspace)
 *   GRID_EEG_VJP_                              1: the VJP g^T d(pose)/dq; 0: the gradient
 *   GRID_EEG_HESS_                             1: the Hessian d2(pose)/dq dq (then grid_eeg_vend_[j] is the last
 *                                              coordinate of column j's joint)
 *   GRID_EEG_POSE_(q, out)                     the poses of every end effector (the ee_pose per-state function)
 *   GRID_EEG_JAC_(q, out, frame)               a frame's LOCAL_WORLD_ALIGNED Jacobian (the frame_jacobian one)
 *   GRID_EL_(p, k)                             element k of a state array of the convention (the target's stride)
 *   GRID_SIN_, GRID_COS_                       the real type's sine and cosine
 * and grid_eeg_frames_[] holds each end effector's frame id.
 *
 * d[xyz, rpy]/dq along the local tangent: d xyz is the frame origin's velocity in world axes, the linear rows of the
 * LOCAL_WORLD_ALIGNED Jacobian; with R = Rz(y) Ry(p) Rx(r) the world angular velocity is
 * omega = [cy cp dr - sy dp, sy cp dr + cy dp, -sp dr + dy], so
 * dr = (cy wx + sy wy) / cp, dp = -sy wx + cy wy, dy = wz + sp dr (infinite at cp = 0: pitch = +-pi/2).
 * The VJP contracts each column with the cotangent as it is formed: out[c] = sum_e,r g[6 e + r] d_er(c), O(nee nv)
 * after the Jacobians, with no 6 nee x nv array.
 *
 * The Hessian [r][j][k] = d/dq_k of the gradient's [r][j]: with p_f the frame origin and c_j = [J_lin_j + p_f x w_j;
 * w_j] column j's world motion about the world origin (zero for a joint that does not move the frame), d c_j / dq_k =
 * c_k x c_j when joint k moves joint j, else 0; then d J_lin_j = d v_j - J_lin_k x w_j - p_f x d w_j, and the rpy
 * rows' derivatives by the chain rule through (r, p, y) (their rates along q_k: the gradient's rows).
 */
    enum { NV_ = GRID_EEG_NV_ };
    grid_real *cq = ws + GRID_EEG_WORK_, *pose = cq + GRID_EEG_NQ_, *J = pose + 6 * GRID_EEG_NEE_;
    for (int k = 0; k < GRID_EEG_NQ_; k++) cq[k] = GRID_EL_(q, k);
#if GRID_EEG_HESS_
    grid_real *C = J + 6 * NV_;
    GRID_EEG_POSE_(cq, pose);
    for (int e = 0; e < GRID_EEG_NEE_; e++) {
        GRID_EEG_JAC_(cq, J, grid_eeg_frames_[e]);
        const grid_real *pf = pose + 6 * e, p = pose[6 * e + 4], y = pose[6 * e + 5];
        const grid_real sp = GRID_SIN_(p), cp = GRID_COS_(p), sy = GRID_SIN_(y), cy = GRID_COS_(y);
        for (int j = 0; j < NV_; j++) {
            const grid_real wx = J[3 * NV_ + j], wy = J[4 * NV_ + j], wz = J[5 * NV_ + j];
            C[6 * j] = J[j] + pf[1] * wz - pf[2] * wy;
            C[6 * j + 1] = J[NV_ + j] + pf[2] * wx - pf[0] * wz;
            C[6 * j + 2] = J[2 * NV_ + j] + pf[0] * wy - pf[1] * wx;
            C[6 * j + 3] = wx;
            C[6 * j + 4] = wy;
            C[6 * j + 5] = wz;
        }
        for (int j = 0; j < NV_; j++) {
            const grid_real *cj = C + 6 * j, *w = cj + 3, wx = w[0], wy = w[1];
            const grid_real drj = (cy * wx + sy * wy) / cp;
            for (int k = 0; k < NV_; k++) {
                const grid_real *ck = C + 6 * k;
                /* d c_j / d q_k = c_k x c_j (motion cross product) when joint k moves joint j */
                grid_real dc[6] = {0, 0, 0, 0, 0, 0};
                if (k <= grid_eeg_vend_[j]) {
                    dc[0] = ck[4] * cj[2] - ck[5] * cj[1] + ck[1] * cj[5] - ck[2] * cj[4];
                    dc[1] = ck[5] * cj[0] - ck[3] * cj[2] + ck[2] * cj[3] - ck[0] * cj[5];
                    dc[2] = ck[3] * cj[1] - ck[4] * cj[0] + ck[0] * cj[4] - ck[1] * cj[3];
                    dc[3] = ck[4] * cj[5] - ck[5] * cj[4];
                    dc[4] = ck[5] * cj[3] - ck[3] * cj[5];
                    dc[5] = ck[3] * cj[4] - ck[4] * cj[3];
                }
                const grid_real dp[3] = {J[k], J[NV_ + k], J[2 * NV_ + k]}, *dw = dc + 3;
                const grid_real wkx = J[3 * NV_ + k], wky = J[4 * NV_ + k], wkz = J[5 * NV_ + k];
                const grid_real drk = (cy * wkx + sy * wky) / cp, dpk = -sy * wkx + cy * wky, dyk = wkz + sp * drk;
                const grid_real ddr = ((-sy * wx + cy * wy) * dyk + (cy * wx + sy * wy) * sp * dpk / cp +
                                       cy * dw[0] + sy * dw[1]) / cp;
                const grid_real d[6] = {
                    dc[0] - (dp[1] * w[2] - dp[2] * w[1]) - (pf[1] * dw[2] - pf[2] * dw[1]),
                    dc[1] - (dp[2] * w[0] - dp[0] * w[2]) - (pf[2] * dw[0] - pf[0] * dw[2]),
                    dc[2] - (dp[0] * w[1] - dp[1] * w[0]) - (pf[0] * dw[1] - pf[1] * dw[0]),
                    ddr, (-cy * wx - sy * wy) * dyk - sy * dw[0] + cy * dw[1], dw[2] + cp * dpk * drj + sp * ddr};
                for (int r = 0; r < 6; r++) GRID_EL_(out, ((6 * e + r) * NV_ + j) * NV_ + k) = d[r];
            }
        }
    }
#else
#if GRID_EEG_VJP_
    for (int c = 0; c < NV_; c++) GRID_EL_(out, c) = 0;
#endif
    GRID_EEG_POSE_(cq, pose);
    for (int e = 0; e < GRID_EEG_NEE_; e++) {
        GRID_EEG_JAC_(cq, J, grid_eeg_frames_[e]);
        const grid_real p = pose[6 * e + 4], y = pose[6 * e + 5];
        const grid_real sp = GRID_SIN_(p), cp = GRID_COS_(p), sy = GRID_SIN_(y), cy = GRID_COS_(y);
        for (int c = 0; c < NV_; c++) {
            const grid_real wx = J[3 * NV_ + c], wy = J[4 * NV_ + c], wz = J[5 * NV_ + c];
            const grid_real dr = (cy * wx + sy * wy) / cp;
            const grid_real d[6] = {J[c], J[NV_ + c], J[2 * NV_ + c], dr, -sy * wx + cy * wy, wz + sp * dr};
#if GRID_EEG_VJP_
            for (int r = 0; r < 6; r++) GRID_EL_(out, c) += GRID_EL_(g, 6 * e + r) * d[r];
#else
            for (int r = 0; r < 6; r++) GRID_EL_(out, (6 * e + r) * NV_ + c) = d[r];
#endif
        }
    }
#endif
