/* The body of the end-effector pose gradient and VJP (one per-state function over the poses and each end effector's frame Jacobian), written verbatim into generated code. */
/*
 * algo_ee_pose_grad.c writes the function's signature in the calling convention (target.h), defines the macros below
 * for this robot and row, embeds this file (.incbin) as the body, and undefines them:
 *   GRID_EEG_NV_, GRID_EEG_NQ_, GRID_EEG_NEE_  the user's nv (at least 1), nq, the end effectors
 *   GRID_EEG_WORK_                             where its arrays start in ws (past the callees' workspace)
 *   GRID_EEG_VJP_                              1: the VJP g^T d(pose)/dq; 0: the gradient
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
 */
    enum { NV_ = GRID_EEG_NV_ };
    grid_real *cq = ws + GRID_EEG_WORK_, *pose = cq + GRID_EEG_NQ_, *J = pose + 6 * GRID_EEG_NEE_;
    for (int k = 0; k < GRID_EEG_NQ_; k++) cq[k] = GRID_EL_(q, k);
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
