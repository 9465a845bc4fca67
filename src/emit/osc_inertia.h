/* The body of the operational-space inertia of a frame, (J M^-1 J^T)^-1 over the frame Jacobian and M^-1, written verbatim into generated code. */
/*
 * The generic composite writer (template.c, emit_template_composite) defines its standard macros (methods.h):
 * GRID_NV_, GRID_NQ_, GRID_WORK_, GRID_FLOAT32_, GRID_SQRT_, GRID_EL_(p, k), GRID_CALL_FRAME_JACOBIAN_(q, o) (the
 * frame's 6 x nv Jacobian in the function's reference frame) and GRID_CALL_MINV_(q, o) (M^-1, nv x nv); its arrays
 * past GRID_WORK_ (the method row's template_work): q, J (6 x nv), M^-1, Y (nv x 6).
 *
 * Only J's nonzero columns S (the frame's chain, nc of them) count: (M^-1)_SS = R^T R (Cholesky, nc^3 / 6), Y = R J_S^T
 * (nc x 6, 3 nc^2), so Phi = J M^-1 J^T = Y^T Y; Y's Householder QR in the column order [linear x y z; angular x y z]
 * is Phi = L D L^T with d_k = the squared norm of column k's part not yet eliminated. A pivot
 * d_k <= tol * max(1, max_i Phi_ii) (tol 1e-10 in float64, 1e-5 in float32) marks a direction the chain cannot move
 * independently of the earlier ones: its column is not eliminated, its inverse is taken as 0 and its column of L as
 * e_k. The output L^-T D^+ L^-1 is the operational-space inertia of the independent directions, zero rows and
 * columns for the rest. (The QR of Y keeps a dependent direction's d_k at (u |Y|)^2 where forming Phi would leave
 * u |Phi|: float32 code decides as the float64 reference of the float32 rule does.)
 */
    enum { NV_ = GRID_NV_ };
    grid_real *cq = ws + GRID_WORK_, *J = cq + GRID_NQ_, *Mi = J + 6 * NV_, *Y = Mi + NV_ * NV_;
    for (int k = 0; k < GRID_NQ_; k++) cq[k] = GRID_EL_(q, k);
    for (int k = 0; k < 6 * NV_; k++) J[k] = 0; /* (a robot without joints: the Jacobian writes no column) */
    GRID_CALL_FRAME_JACOBIAN_(cq, J);
    GRID_CALL_MINV_(cq, Mi);
    /* the chain's columns */
    int cols[NV_], nc = 0;
    for (int c = 0; c < NV_; c++) {
        int any = 0;
        for (int r = 0; r < 6; r++) any |= J[r * NV_ + c] != 0;
        if (any) cols[nc++] = c;
    }
    /* (M^-1)_SS = R^T R, R upper in place of M^-1's entries (a non-positive pivot of rounding: a zero row) */
#define GRID_R_(a, b) Mi[cols[a] * NV_ + cols[b]]
    for (int a = 0; a < nc; a++) {
        grid_real s = GRID_R_(a, a);
        for (int k = 0; k < a; k++) s -= GRID_R_(k, a) * GRID_R_(k, a);
        const grid_real r = s <= 0 ? 0 : GRID_SQRT_(s); /* (a NaN goes on) */
        GRID_R_(a, a) = r;
        for (int b = a + 1; b < nc; b++) {
            grid_real t = GRID_R_(a, b);
            for (int k = 0; k < a; k++) t -= GRID_R_(k, a) * GRID_R_(k, b);
            GRID_R_(a, b) = r == 0 ? 0 : t / r;
        }
    }
    /* Y = R J_S^T, and Phi's largest diagonal entry */
    grid_real big = 1;
    for (int a = 0; a < nc; a++)
        for (int r = 0; r < 6; r++) {
            grid_real s = 0;
            for (int b = a; b < nc; b++) s += GRID_R_(a, b) * J[r * NV_ + cols[b]];
            Y[a * 6 + r] = s;
        }
#undef GRID_R_
    for (int r = 0; r < 6; r++) {
        grid_real s = 0;
        for (int a = 0; a < nc; a++) s += Y[a * 6 + r] * Y[a * 6 + r];
        big = s > big ? s : big;
    }
#if GRID_FLOAT32_
    const grid_real tol = 1e-5f * big;
#else
    const grid_real tol = 1e-10 * big;
#endif
    /* Householder QR of Y over rows p.. (p: the kept pivots so far): d_k, L's column k, or a dropped pivot */
    grid_real L[6][6] = {{0}}, dinv[6], hv[NV_];
    for (int k = 0, p = 0; k < 6; k++) {
        grid_real dk = 0;
        for (int a = p; a < nc; a++) dk += Y[a * 6 + k] * Y[a * 6 + k];
        dinv[k] = 0;
        if (dk <= tol) continue; /* (a NaN is kept: it reaches the output) */
        const grid_real x0 = Y[p * 6 + k], alpha = x0 > 0 ? -GRID_SQRT_(dk) : GRID_SQRT_(dk);
        grid_real vv = 0;
        for (int a = p; a < nc; a++) {
            hv[a] = Y[a * 6 + k] - (a == p ? alpha : 0);
            vv += hv[a] * hv[a];
        }
        for (int j = k + 1; j < 6; j++) {
            grid_real s = 0;
            for (int a = p; a < nc; a++) s += hv[a] * Y[a * 6 + j];
            s *= 2 / vv;
            for (int a = p; a < nc; a++) Y[a * 6 + j] -= s * hv[a];
            L[j][k] = Y[p * 6 + j] / alpha;
        }
        dinv[k] = 1 / dk;
        p++;
    }
    /* W = L^-1 (unit lower), then out = W^T D^+ W */
    grid_real W[6][6];
    for (int c = 0; c < 6; c++)
        for (int i = 0; i < 6; i++) {
            grid_real s = i == c;
            for (int j = c; j < i; j++) s -= L[i][j] * W[j][c];
            W[i][c] = i < c ? 0 : s;
        }
    for (int r = 0; r < 6; r++)
        for (int c = 0; c < 6; c++) {
            grid_real s = 0;
            for (int k = r > c ? r : c; k < 6; k++) s += W[k][r] * dinv[k] * W[k][c];
            GRID_EL_(out, 6 * r + c) = s;
        }
