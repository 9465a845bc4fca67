/* The second-order derivatives of forward dynamics from FD, the first- and second-order RNEA derivatives at its qdd and M^-1: a composite's body. */
/*
 * The generic composite writer (template.c, emit_template_composite) defines its standard macros (methods.h); the
 * callees run on the whole state through GRID_CALL_<ROW>_S_(q, v, a, f, o): FD (qdd from u), RNEA_GRAD ([D_q | D_v],
 * nv x 2 nv), IDSVA_SO (T1 .. T4, four nv^3 tensors [i][j][k]) at that qdd, and GRID_CALL_MINV_(q, o). Its arrays
 * past GRID_WORK_ (the row's template_work): q, qd, u, f_ext (6 nb), qdd, D, T, M^-1 and r (nv).
 *
 * rnea(q, v, qdd(q, v, u)) = u differentiated twice, with a_q = -M^-1 D_q, a_v = -M^-1 D_v and dM_j = T4[:, :, j]:
 *   d2qdd/dq_j dq_k = -M^-1 (T1[:, j, k] + dM_j a_q[:, k] + dM_k a_q[:, j])
 *   d2qdd/dv_j dv_k = -M^-1 T2[:, j, k]
 *   d2qdd/dq_j dv_k = -M^-1 (T3[:, j, k] + dM_j a_v[:, k])
 *   d2qdd_i/du_j dq_k = dMinv_ij/dq_k = -(M^-1 dM_k M^-1)_ij
 * O(nv^4): nv^2 products with M^-1 per tensor (the reference's, src/ref/second_order.c).
 */
    enum { NV_ = GRID_NV_ };
    if (GRID_NV_OUT_ == 0) return; /* (a robot without joints: no element; NV_ is at least 1 for the arrays) */
    const long n3 = (long)NV_ * NV_ * NV_;
    grid_real *cq = ws + GRID_WORK_, *cv = cq + GRID_NQ_, *cu = cv + NV_, *cf = cu + NV_, *qdd = cf + 6 * GRID_NB_;
    grid_real *D = qdd + NV_, *T = D + 2 * NV_ * NV_, *Mi = T + 4 * n3, *r = Mi + NV_ * NV_;
    for (int k = 0; k < GRID_NQ_; k++) cq[k] = GRID_EL_(q, k);
    for (int k = 0; k < NV_; k++) {
        cv[k] = GRID_EL_(v, k);
        cu[k] = GRID_EL_(a, k);
    }
    for (int k = 0; k < 6 * GRID_NB_; k++) cf[k] = GRID_EL_(fext, k);
    GRID_CALL_FD_S_(cq, cv, cu, cf, qdd);
    GRID_CALL_RNEA_GRAD_S_(cq, cv, qdd, cf, D);
    GRID_CALL_IDSVA_SO_S_(cq, cv, qdd, cf, T);
    GRID_CALL_MINV_(cq, Mi);
#define GRID_T_(t, i, j, k) T[(t) * n3 + ((long)(i) * NV_ + (j)) * NV_ + (k)]
/* DST (an expression of i_) = -(M^-1 r)_i_ for every i_ (the reference's minv_neg) */
#define GRID_NEG_MINV_R_(DST)                                                                                          \
    for (int i_ = 0; i_ < NV_; i_++) {                                                                                 \
        grid_real s_ = 0;                                                                                              \
        for (int l_ = 0; l_ < NV_; l_++) s_ += Mi[i_ * NV_ + l_] * r[l_];                                              \
        DST = -s_;                                                                                                     \
    }
    /* a_q, a_v = -M^-1 D in place, column by column */
    for (int c = 0; c < 2 * NV_; c++) {
        for (int i = 0; i < NV_; i++) r[i] = D[i * 2 * NV_ + c];
        GRID_NEG_MINV_R_(D[i_ * 2 * NV_ + c]);
    }
    for (int t = 0; t < 3; t++)
        for (int j = 0; j < NV_; j++)
            for (int k = 0; k < NV_; k++) {
                for (int i = 0; i < NV_; i++) {
                    grid_real s = GRID_T_(t, i, j, k);
                    if (t == 0)
                        for (int l = 0; l < NV_; l++)
                            s += GRID_T_(3, i, l, j) * D[l * 2 * NV_ + k] + GRID_T_(3, i, l, k) * D[l * 2 * NV_ + j];
                    else if (t == 2)
                        for (int l = 0; l < NV_; l++) s += GRID_T_(3, i, l, j) * D[l * 2 * NV_ + NV_ + k];
                    r[i] = s;
                }
                GRID_NEG_MINV_R_(GRID_EL_(out, t * n3 + ((long)i_ * NV_ + j) * NV_ + k));
            }
    /* dMinv/dq_k: r = dM_k M^-1[:, j], then -M^-1 r */
    for (int k = 0; k < NV_; k++)
        for (int j = 0; j < NV_; j++) {
            for (int i = 0; i < NV_; i++) {
                grid_real s = 0;
                for (int l = 0; l < NV_; l++) s += GRID_T_(3, i, l, k) * Mi[l * NV_ + j];
                r[i] = s;
            }
            GRID_NEG_MINV_R_(GRID_EL_(out, 3 * n3 + ((long)i_ * NV_ + j) * NV_ + k));
        }
#undef GRID_NEG_MINV_R_
#undef GRID_T_
