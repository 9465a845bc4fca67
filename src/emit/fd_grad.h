/* The body of the forward-dynamics gradient and VJP (one per-state function over qdd = FD, the RNEA gradient or VJP at qdd, and M^-1), written verbatim into generated code. */
/*
 * algo_fd_grad.c writes the function's signature in the calling convention (target.h), defines the macros below
 * for this robot and row, embeds this file (.incbin) as the body, and undefines them:
 *   GRID_FDG_NV_, GRID_FDG_NQ_, GRID_FDG_NB_  the user's nv, nq, the bodies
 *   GRID_FDG_WORK_                            where its arrays start in ws (past the callees' workspace)
 *   GRID_FDG_VJP_                             1: [-h^T dtau/dq | -h^T dtau/dqd | h] with h = M^-1 g; 0: -M^-1 dtau
 *   GRID_FDG_LANES_                           1: the lane form (grid_vec arrays, the C target's lane functions)
 *   GRID_FDG_FD_(o), GRID_FDG_MINV_(o)        qdd and M^-1 into o (the callees, in the calling convention)
 *   GRID_FDG_DTAU_(a, g, o)                   the RNEA gradient (or VJP for the cotangent g) at acceleration a
 * the scalar form also:
 *   GRID_FDG_FEXT_                            1: the row reads f_ext (copied beside q, qd, u)
 *   GRID_FDG_X_                               its arrays' index scale: "* GRID_IL_" interleaved over a warp, or empty
 *   GRID_FDG_K0_, GRID_FDG_KSTEP_             a split loop's start and step (a group's lane, GRID_G_; or 0, 1)
 *   GRID_FDG_SYNC_                            the group's barrier after a step others read (or empty)
 *   GRID_EL_(p, k)                            element k of a state array of the convention (the target's stride)
 * and the lane form's product skips dtau's structural zeros through grid_dtau_off_ / grid_dtau_rows_ of the
 * function (GRID_FDG_OFF_, GRID_FDG_ROWS_).
 *
 * d qdd / dx = -M^-1 d tau / dx at qdd = FD(q, v, u, fext) (differentiate M qdd + c = u): the same values as
 * Pinocchio's computeABADerivatives. The VJP: g^T dqdd/dx = -(M^-1 g)^T dtau/dx, so with h = M^-1 g (M symmetric)
 * it is the RNEA VJP at qdd for the cotangent h, negated, and h itself is the u block.
 */
#if GRID_FDG_LANES_
    grid_vec *qdd = ws + GRID_FDG_WORK_, *Mi = qdd + GRID_FDG_NV_, *dt = Mi + GRID_FDG_NV_ * GRID_FDG_NV_;
    GRID_FDG_FD_(qdd);
    GRID_FDG_MINV_(Mi);
#if GRID_FDG_VJP_
    grid_vec *h = dt + 2 * GRID_FDG_NV_;
    for (int r = 0; r < GRID_FDG_NV_; r++) {
        grid_vec s = grid_splat_(0);
        for (int k = 0; k < GRID_FDG_NV_; k++) s += Mi[r * GRID_FDG_NV_ + k] * g[k];
        h[r] = s;
    }
    GRID_FDG_DTAU_(qdd, h, dt);
    for (int k = 0; k < 2 * GRID_FDG_NV_; k++) out[k] = -dt[k];
    for (int k = 0; k < GRID_FDG_NV_; k++) out[2 * GRID_FDG_NV_ + k] = h[k];
#else
    GRID_FDG_DTAU_(qdd, g, dt);
    grid_vneg_matmul_(GRID_FDG_NV_, GRID_FDG_NV_, 2 * GRID_FDG_NV_, Mi, dt, out, GRID_FDG_OFF_, GRID_FDG_ROWS_);
#endif
#else
    /* the state's inputs copied to contiguous arrays (the callees run with an element stride of 1 on them, or the
       interleave), everything in the workspace after the callees' own; a group's lanes split the copies and the
       product (lane k mod GRID_G_ owns element k, each summed in the one-thread order) and meet at a barrier after
       every step that writes what others read */
    grid_real *cq = ws + GRID_FDG_WORK_, *cv = cq + GRID_FDG_NQ_ GRID_FDG_X_, *ca = cv + GRID_FDG_NV_ GRID_FDG_X_;
    grid_real *cf = ca + GRID_FDG_NV_ GRID_FDG_X_, *qdd = cf + 6 * GRID_FDG_NB_ GRID_FDG_X_;
    grid_real *Mi = qdd + GRID_FDG_NV_ GRID_FDG_X_, *dt = Mi + GRID_FDG_NV_ * GRID_FDG_NV_ GRID_FDG_X_;
    for (int k = GRID_FDG_K0_; k < GRID_FDG_NQ_; GRID_FDG_KSTEP_) cq[k GRID_FDG_X_] = GRID_EL_(q, k);
    for (int k = GRID_FDG_K0_; k < GRID_FDG_NV_; GRID_FDG_KSTEP_) cv[k GRID_FDG_X_] = GRID_EL_(v, k);
    for (int k = GRID_FDG_K0_; k < GRID_FDG_NV_; GRID_FDG_KSTEP_) ca[k GRID_FDG_X_] = GRID_EL_(a, k);
#if GRID_FDG_FEXT_
    for (int k = GRID_FDG_K0_; k < 6 * GRID_FDG_NB_; GRID_FDG_KSTEP_) cf[k GRID_FDG_X_] = GRID_EL_(fext, k);
#endif
    GRID_FDG_SYNC_
    GRID_FDG_FD_(qdd);
    GRID_FDG_SYNC_
    GRID_FDG_MINV_(Mi);
    GRID_FDG_SYNC_
#if GRID_FDG_VJP_
    grid_real *cg = dt + 2 * GRID_FDG_NV_ GRID_FDG_X_, *h = cg + GRID_FDG_NV_ GRID_FDG_X_;
    for (int k = GRID_FDG_K0_; k < GRID_FDG_NV_; GRID_FDG_KSTEP_) cg[k GRID_FDG_X_] = GRID_EL_(g, k);
    GRID_FDG_SYNC_
    for (int k = GRID_FDG_K0_; k < GRID_FDG_NV_; GRID_FDG_KSTEP_) {
        grid_real s = 0;
        for (int j = 0; j < GRID_FDG_NV_; j++) s += Mi[(k * GRID_FDG_NV_ + j) GRID_FDG_X_] * cg[j GRID_FDG_X_];
        h[k GRID_FDG_X_] = s;
    }
    GRID_FDG_SYNC_
    GRID_FDG_DTAU_(qdd, h, dt);
    GRID_FDG_SYNC_
    for (int k = GRID_FDG_K0_; k < 3 * GRID_FDG_NV_; GRID_FDG_KSTEP_)
        GRID_EL_(out, k) = k < 2 * GRID_FDG_NV_ ? -dt[k GRID_FDG_X_] : h[(k - 2 * GRID_FDG_NV_) GRID_FDG_X_];
#else
    GRID_FDG_DTAU_(qdd, 0, dt);
    GRID_FDG_SYNC_
    for (int k = GRID_FDG_K0_; k < GRID_FDG_NV_ * 2 * GRID_FDG_NV_; GRID_FDG_KSTEP_) {
        const int r = k / (2 * GRID_FDG_NV_), c = k % (2 * GRID_FDG_NV_);
        grid_real s = 0;
        for (int j = 0; j < GRID_FDG_NV_; j++)
            s -= Mi[(r * GRID_FDG_NV_ + j) GRID_FDG_X_] * dt[(j * 2 * GRID_FDG_NV_ + c) GRID_FDG_X_];
        GRID_EL_(out, k) = s;
    }
#endif
    /* the lanes leave together: the caller's next use of the workspace follows every lane's last read */
    GRID_FDG_SYNC_
#endif
