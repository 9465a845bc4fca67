/* The pose, pose gradient and pose VJP at a target chosen per call (a frame id, a tool offset): a composite's body. */
/*
 * The generic composite writer (template.c, emit_template_composite) defines its standard macros (methods.h) and
 * GRID_METHOD_<ROW>_ for the row it writes (ee_pose_runtime, ee_pose_runtime_grad or ee_pose_runtime_vjp);
 * GRID_CALL_FK_(q, o) gives every body's placement oMi (nb x 4 x 4, row-major) and, in the derivative rows,
 * GRID_CALL_FRAME_JACOBIAN_AT_(q, o, frame, rf) a frame's 6 x nv Jacobian. The target is the per-state input
 * GRID_EL_(a, k) = [frame id, x, y, z]: the point at offset (x, y, z) in the frame's axes; grid_frame_body_ and
 * grid_frame_place_ are the frame tables. Its arrays q, oMi and J (6 x nv) are local (nq + 16 nb + 6 nv elements):
 * on CUDA the hardware interleaves local memory over a warp's threads, where a slice of the workspace per thread was
 * read and written a state's stride apart (run 32: 45x slower than fk_batched at 1 M states on iiwa).
 *
 * The pose is the point's position and the frame's roll, pitch, yaw (grid_rpy_, as ee_pose). Its derivative along
 * the local tangent: d xyz = J_lin + omega x r (r = R offset, the LOCAL_WORLD_ALIGNED Jacobian's origin velocity
 * plus the lever arm's), and with R = Rz(y) Ry(p) Rx(r) the angular rows
 * dr = (cy wx + sy wy) / cp, dp = -sy wx + cy wy, dy = wz + sp dr (infinite at cp = 0: pitch = +-pi/2).
 * The VJP contracts each column with the cotangent g (6) as it is formed. A target whose frame id is not an integer
 * in [0, nframes) gives NaN outputs (the front ends build targets from frame names and ids they checked).
 */
    enum { NV_ = GRID_NV_ };
    grid_real cq[GRID_NQ_ > 0 ? GRID_NQ_ : 1], oM[16 * (GRID_NB_ > 0 ? GRID_NB_ : 1)], J[6 * NV_];
    (void)J;
    const grid_real tf = GRID_EL_(a, 0), off[3] = {GRID_EL_(a, 1), GRID_EL_(a, 2), GRID_EL_(a, 3)};
    const int f = tf >= 0 && tf < GRID_NFRAMES_ ? (int)tf : -1;
    if (f < 0 || (grid_real)f != tf) {
#if defined(GRID_METHOD_EE_POSE_RUNTIME_)
        for (int k = 0; k < 6; k++) GRID_EL_(out, k) = NAN;
#elif defined(GRID_METHOD_EE_POSE_RUNTIME_GRAD_)
        for (int k = 0; k < 6 * GRID_NV_OUT_; k++) GRID_EL_(out, k) = NAN;
#else
        for (int k = 0; k < GRID_NV_OUT_; k++) GRID_EL_(out, k) = NAN;
#endif
        return;
    }
    for (int k = 0; k < GRID_NQ_; k++) cq[k] = GRID_EL_(q, k);
    GRID_CALL_FK_(cq, oM);
    /* oMf = oMi of the frame's body times the frame's placement (the placement alone on the world) */
    const int b = grid_frame_body_[f];
    const grid_real *P = grid_frame_place_[f];
    grid_real R[9], p[3], r[3], rpy[3];
    for (int i = 0; i < 3; i++) {
        const grid_real *X = oM + 16 * (b < 0 ? 0 : b) + 4 * i;
        for (int j = 0; j < 3; j++)
            R[3 * i + j] = b < 0 ? P[3 * i + j] : X[0] * P[j] + X[1] * P[3 + j] + X[2] * P[6 + j];
        p[i] = b < 0 ? P[9 + i] : X[0] * P[9] + X[1] * P[10] + X[2] * P[11] + X[3];
    }
    for (int i = 0; i < 3; i++) r[i] = R[3 * i] * off[0] + R[3 * i + 1] * off[1] + R[3 * i + 2] * off[2];
    grid_rpy_(R, rpy);
    (void)p; /* (the derivatives need the lever arm r, not the origin) */
#if defined(GRID_METHOD_EE_POSE_RUNTIME_)
    for (int i = 0; i < 3; i++) {
        GRID_EL_(out, i) = p[i] + r[i];
        GRID_EL_(out, 3 + i) = rpy[i];
    }
#else
    for (int k = 0; k < 6 * NV_; k++) J[k] = 0; /* (a frame on the world: no column) */
    GRID_CALL_FRAME_JACOBIAN_AT_(cq, J, f, 2);
    const grid_real sp = GRID_SIN_(rpy[1]), cp = GRID_COS_(rpy[1]), sy = GRID_SIN_(rpy[2]), cy = GRID_COS_(rpy[2]);
    for (int c = 0; c < GRID_NV_OUT_; c++) {
        const grid_real wx = J[3 * NV_ + c], wy = J[4 * NV_ + c], wz = J[5 * NV_ + c];
        const grid_real dr = (cy * wx + sy * wy) / cp;
        const grid_real d[6] = {J[c] + (wy * r[2] - wz * r[1]), J[NV_ + c] + (wz * r[0] - wx * r[2]),
                                J[2 * NV_ + c] + (wx * r[1] - wy * r[0]), dr, -sy * wx + cy * wy, wz + sp * dr};
#if defined(GRID_METHOD_EE_POSE_RUNTIME_GRAD_)
        for (int k = 0; k < 6; k++) GRID_EL_(out, k * NV_ + c) = d[k];
#else
        grid_real s = 0;
        for (int k = 0; k < 6; k++) s += GRID_EL_(g, k) * d[k];
        GRID_EL_(out, c) = s;
#endif
    }
#endif
