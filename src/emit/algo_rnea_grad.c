/* First-order derivatives of inverse dynamics, [dtau/dq | dtau/dqd] (Pinocchio's computeRNEADerivatives) and its vector-Jacobian product, as programs for both schedules. */
#include "emit_ctx.h"
#include "rnea_world.h"

/* Everything is expressed in one frame with world axes and its origin at the root body's (ep_world_placement with
   root_origin: no lever arm grows with the base's distance). For body i with parent l, J_i = oMi S_i, and

     v_i = v_l + J_i qd_i,  a_i = a_l + J_i qdd_i + v_l x J_i qd_i   (a of the world: -gravity)
     Y_i the body's inertia in that frame, h_i = Y_i v_i, f_i = Y_i a_i + v_i x* h_i - oMi.act(fext_i)
     D_i m = v_i x* (Y_i m) - Y_i (v_i x m) + m x* h_i      (how f_i varies with the subtree's motion)
     per column of J_i:  dV = v_l x J,  dA = a_l x J + v_l x dV,  dAv = (v_l + v_i) x J

   A tangent step of joint k moves k's subtree rigidly; with Yc, Dc and F the sums of Y, D and f over a subtree:

     j in subtree(k):   dtau_j/dq_k  = J_j^T (Yc_j dA_k + Dc_j dV_k)        = P_j^T dA_k + Q_j^T dV_k
                        dtau_j/dqd_k = J_j^T (Yc_j dAv_k + Dc_j J_k)        = P_j^T dAv_k + Q_j^T J_k
     j above k:         dtau_j/dq_k  = J_j^T (Yc_k dA_k + Dc_k dV_k + J_k x* F_k) = J_j^T FQ_k
                        dtau_j/dqd_k = J_j^T (Yc_k dAv_k + Dc_k J_k)         = J_j^T FV_k

   with P = Yc J and Q = Dc^T J. The backward pass leaves P, Q, FQ and FV of each body in its own columns of four
   6 x nv matrices, so body k writes its rows and columns against its descendants' in one columns loop: the work is
   the pairs of a body and a descendant (O(nv depth)), as Pinocchio's. */

static void sci_get(ep_prog *p, int buf, int rel, sci *Y)
{
    Y->m = ep_get(p, buf, EP_I, rel, 0);
    for (int e = 0; e < 3; e++) Y->h[e] = ep_get(p, buf, EP_I, rel, 1 + e);
    for (int e = 0; e < 9; e++) Y->I[e] = ep_get(p, buf, EP_I, rel, 4 + e);
}

static void sci_set(ep_prog *p, int buf, int rel, const sci *Y)
{
    ep_set(p, buf, EP_I, rel, 0, Y->m);
    for (int e = 0; e < 3; e++) ep_set(p, buf, EP_I, rel, 1 + e, Y->h[e]);
    for (int e = 0; e < 9; e++) ep_set(p, buf, EP_I, rel, 4 + e, Y->I[e]);
}

void ea_world_col(ep_prog *p, int buf, int var, int c, sv x[6])
{
    for (int r = 0; r < 6; r++) x[r] = ep_get(p, buf, var, EP_SELF, 6 * c + r);
}

/* column c (6 reals at 6 c) of body i's slot */
static void col_get(ep_prog *p, int buf, int c, sv x[6]) { ea_world_col(p, buf, EP_I, c, x); }

static void col_set(ep_prog *p, int buf, int c, const sv x[6])
{
    for (int r = 0; r < 6; r++) ep_set(p, buf, EP_I, EP_SELF, 6 * c + r, x[r]);
}

static void add6(sym_graph *g, const sv a[6], const sv b[6], sv out[6])
{
    for (int r = 0; r < 6; r++) out[r] = sym_add(g, a[r], b[r]);
}

/* D m for a 6x6 row-major D */
static void mat6_apply(sym_graph *g, const sv D[36], const sv m[6], sv out[6]) { sp_mat6_vec(g, D, m, out); }

/* D^T m */
static void mat6_apply_t(sym_graph *g, const sv D[36], const sv m[6], sv out[6]) { sp_mat6_tvec(g, D, m, out); }

ea_world_bufs ea_world_buffers(ep_prog *p)
{
    ea_world_bufs B;
    B.OM = ep_buffer(p, "oM", 12, 1);
    B.VEL = ep_buffer(p, "vel", 6, 1);
    B.ACC = ep_buffer(p, "acc", 6, 1);
    B.F = ep_buffer(p, "f", 6, 1);
    B.Y = ep_buffer(p, "Y", EA_YW, 1);
    B.D = ep_buffer(p, "D", 36, 1);
    B.J = ep_buffer(p, "J", 36, 1);
    B.DV = ep_buffer(p, "dV", 36, 1);
    B.DA = ep_buffer(p, "dA", 36, 1);
    B.DAV = ep_buffer(p, "dAv", 36, 1);
    return B;
}

void ea_world_forward(ep_prog *p, const ea_world_bufs *B, int has_a, int has_fext, int UG, int SP, int SQ)
{
    const int OM = B->OM, VEL = B->VEL, ACC = B->ACC, F = B->F, Y = B->Y, D = B->D, J = B->J, DV = B->DV, DA = B->DA,
              DAV = B->DAV;
    for (ep_bodies(p, 0); ep_next(p);) {
        sym_graph *g = ep_graph(p);
        const ek_body *b = ep_body(p, EP_I);
        const int ni = b->nv, root = ep_is_root(p, EP_I);
        const sv zero = sym_const(g, 0.0);
        ep_comment(p, "derivatives: forward pass");
        const sxf oM = ep_world_placement(p, OM, 1);
        sv vl[6], al[6], Jq[6] = {zero, zero, zero, zero, zero, zero}, Jqdd[6], v[6], a[6], t[6];
        for (int r = 0; r < 6; r++) {
            vl[r] = root ? zero : ep_get(p, VEL, EP_I, EP_PARENT, r);
            al[r] = root ? zero : ep_get(p, ACC, EP_I, EP_PARENT, r);
            Jqdd[r] = zero;
        }
        if (root) al[2] = sym_const(g, -ep_gravity(p));
        /* J = oMi S, and J qd, J qdd */
        sv Jc[6][6];
        for (int c = 0; c < ni; c++) {
            sv s[6];
            for (int r = 0; r < 6; r++) s[r] = b->S[ni * r + c];
            sp_motion_act(g, &oM, s, Jc[c]);
            const sv qd = ep_in(p, EP_V, EP_I, c), qdd = has_a ? ep_in(p, EP_A, EP_I, c) : zero;
            for (int r = 0; r < 6; r++) {
                Jq[r] = sym_fma(g, Jc[c][r], qd, Jq[r]);
                Jqdd[r] = sym_fma(g, Jc[c][r], qdd, Jqdd[r]);
            }
            col_set(p, J, c, Jc[c]);
        }
        add6(g, vl, Jq, v);
        add6(g, al, Jqdd, a);
        if (!root) {
            sp_motion_cross(g, vl, Jq, t);
            add6(g, a, t, a);
        }
        /* the body's inertia in the frame, its momentum and force */
        sci Yb, Yw;
        sp_body_inertia_sci(g, b, &Yb);
        sp_sci_to_parent(g, &oM, &Yb, &Yw);
        sv h[6], f[6];
        sp_sci_apply(g, &Yw, v, h);
        sp_sci_apply(g, &Yw, a, f);
        sp_force_cross(g, v, h, t);
        add6(g, f, t, f);
        if (has_fext) {
            sv fl[6], fw[6];
            for (int r = 0; r < 6; r++) fl[r] = ep_in(p, EP_F, EP_I, r);
            sp_force_act(g, &oM, fl, fw);
            for (int r = 0; r < 6; r++) f[r] = sym_sub(g, f[r], fw[r]);
        }
        /* D = v x* Y - Y v x + (. x* h) = -(A + A^T) + H with A = Y (v x) (v x* = -(v x)^T, Y symmetric): the
           columns of A are Y (v x e_c), those of H are e_c x* h (entries of h, no arithmetic) */
        sv A[6][6], Dm[36];
        for (int c = 0; c < 6; c++) {
            sv e[6], vxe[6];
            for (int r = 0; r < 6; r++) e[r] = sym_const(g, r == c ? 1.0 : 0.0);
            sp_motion_cross(g, v, e, vxe);
            sp_sci_apply(g, &Yw, vxe, A[c]);   /* A[c][r] = A(r, c) */
        }
        for (int c = 0; c < 6; c++) {
            sv e[6], exh[6];
            for (int r = 0; r < 6; r++) e[r] = sym_const(g, r == c ? 1.0 : 0.0);
            sp_force_cross(g, e, h, exh);
            for (int r = 0; r < 6; r++) Dm[6 * r + c] = sym_sub(g, exh[r], sym_add(g, A[c][r], A[r][c]));
        }
        /* per column: dV = v_l x J, dA = a_l x J + v_l x dV, dAv = (v_l + v) x J */
        sv vv[6];
        add6(g, vl, v, vv);
        for (int c = 0; c < ni; c++) {
            sv dV[6], dA[6], dAv[6];
            if (root) {
                for (int r = 0; r < 6; r++) dV[r] = zero;
                sp_motion_cross(g, al, Jc[c], dA);
            } else {
                sp_motion_cross(g, vl, Jc[c], dV);
                sp_motion_cross(g, al, Jc[c], dA);
                sp_motion_cross(g, vl, dV, t);
                add6(g, dA, t, dA);
            }
            sp_motion_cross(g, vv, Jc[c], dAv);
            col_set(p, DV, c, dV);
            col_set(p, DA, c, dA);
            col_set(p, DAV, c, dAv);
        }
        for (int r = 0; r < 6; r++) {
            ep_set(p, VEL, EP_I, EP_SELF, r, v[r]);
            ep_set(p, ACC, EP_I, EP_SELF, r, a[r]);
            ep_set(p, F, EP_I, EP_SELF, r, f[r]);
        }
        for (int e = 0; e < 36; e++) ep_set(p, D, EP_I, EP_SELF, e, Dm[e]);
        sci_set(p, Y, EP_SELF, &Yw);
        if (UG >= 0) {
            sv u[6];
            for (int r = 0; r < 6; r++) u[r] = root ? zero : ep_get(p, UG, EP_I, EP_PARENT, r);
            for (int c = 0; c < ni; c++) {
                const sv gc = ep_in(p, EP_G, EP_I, c);
                for (int r = 0; r < 6; r++) u[r] = sym_fma(g, Jc[c][r], gc, u[r]);
            }
            for (int r = 0; r < 6; r++) {
                ep_set(p, UG, EP_I, EP_SELF, r, u[r]);
                ep_set(p, SP, EP_I, EP_SELF, r, zero);
                ep_set(p, SQ, EP_I, EP_SELF, r, zero);
            }
        }
    }
}

void ea_world_subtree_sums(ep_prog *p, const ea_world_bufs *B, sci *Yc, sv Dc[36], sv Fc[6])
{
    sci_get(p, B->Y, EP_SELF, Yc);
    for (int e = 0; e < 36; e++) Dc[e] = ep_get(p, B->D, EP_I, EP_SELF, e);
    for (int r = 0; r < 6; r++) Fc[r] = ep_get(p, B->F, EP_I, EP_SELF, r);
}

void ea_world_add_to_parent(ep_prog *p, const ea_world_bufs *B, const sci *Yc, const sv Dc[36], const sv Fc[6])
{
    if (ep_is_root(p, EP_I)) return;
    sym_graph *g = ep_graph(p);
    sci Yp;
    sci_get(p, B->Y, EP_PARENT, &Yp);
    sp_sci_add(g, &Yp, Yc);
    sci_set(p, B->Y, EP_PARENT, &Yp);
    for (int e = 0; e < 36; e++) ep_set(p, B->D, EP_I, EP_PARENT, e, sym_add(g, ep_get(p, B->D, EP_I, EP_PARENT, e), Dc[e]));
    for (int r = 0; r < 6; r++) ep_set(p, B->F, EP_I, EP_PARENT, r, sym_add(g, ep_get(p, B->F, EP_I, EP_PARENT, r), Fc[r]));
}

EMIT_PROGRAM(ea_rnea_grad_program)
{
    const int has_a = sp->reads_a, has_fext = sp->reads_fext, nv = cx->em->nv;
    const ea_world_bufs B = ea_world_buffers(p);
    const int J = B.J, DV = B.DV, DA = B.DA, DAV = B.DAV;
    const int PB = ep_buffer(p, "P", 6 * nv, 0), QB = ep_buffer(p, "Q", 6 * nv, 0);
    const int FQ = ep_buffer(p, "FQ", 6 * nv, 0), FV = ep_buffer(p, "FV", 6 * nv, 0);
    ep_zero_output(p);
    ea_world_forward(p, &B, has_a, has_fext, -1, -1, -1);

    for (ep_bodies(p, 1); ep_next(p);) {
        sym_graph *g = ep_graph(p);
        const int ni = ep_nv(p, EP_I);
        ep_comment(p, "derivatives: backward pass");
        sci Yc;
        sv Dc[36], Fc[6];
        ea_world_subtree_sums(p, &B, &Yc, Dc, Fc);
        sv Jc[6][6], dV[6][6], dA[6][6], dAv[6][6], P[6][6], Q[6][6];
        for (int c = 0; c < ni; c++) {
            sv t[6], u[6], fq[6], fv[6];
            col_get(p, J, c, Jc[c]);
            col_get(p, DV, c, dV[c]);
            col_get(p, DA, c, dA[c]);
            col_get(p, DAV, c, dAv[c]);
            sp_sci_apply(g, &Yc, Jc[c], P[c]);
            mat6_apply_t(g, Dc, Jc[c], Q[c]);
            /* FQ = Yc dA + Dc dV + J x* F, FV = Yc dAv + Dc J */
            sp_sci_apply(g, &Yc, dA[c], t);
            mat6_apply(g, Dc, dV[c], u);
            add6(g, t, u, fq);
            sp_force_cross(g, Jc[c], Fc, t);
            add6(g, fq, t, fq);
            sp_sci_apply(g, &Yc, dAv[c], t);
            mat6_apply(g, Dc, Jc[c], u);
            add6(g, t, u, fv);
            for (int r = 0; r < 6; r++) {
                ep_set_col(p, PB, EP_I, c, r, P[c][r]);
                ep_set_col(p, QB, EP_I, c, r, Q[c][r]);
                ep_set_col(p, FQ, EP_I, c, r, fq[r]);
                ep_set_col(p, FV, EP_I, c, r, fv[r]);
            }
        }
        /* the joint's own block */
        for (int r = 0; r < ni; r++)
            for (int c = 0; c < ni; c++) {
                ep_out(p, sym_add(g, sym_dot(g, P[r], dA[c], 6), sym_dot(g, Q[r], dV[c], 6)), ep_coord(EP_I, EP_SELF, r), ep_coord(EP_I, EP_SELF, c));
                ep_out(p, sym_add(g, sym_dot(g, P[r], dAv[c], 6), sym_dot(g, Q[r], Jc[c], 6)), ep_coord(EP_I, EP_SELF, r), ep_coord(EP_I, EP_SELF, nv + c));
            }
        ea_world_add_to_parent(p, &B, &Yc, Dc, Fc);
        /* rows and columns against every descendant's column k */
        for (ep_columns(p, EP_COLS_BELOW); ep_next(p);) {
            sym_graph *gk = ep_graph(p);
            sv fq[6], fv[6], pk[6], qk[6];
            for (int r = 0; r < 6; r++) {
                fq[r] = ep_getk(p, FQ, EP_I, EP_SELF, r);
                fv[r] = ep_getk(p, FV, EP_I, EP_SELF, r);
                pk[r] = ep_getk(p, PB, EP_I, EP_SELF, r);
                qk[r] = ep_getk(p, QB, EP_I, EP_SELF, r);
            }
            for (int c = 0; c < ni; c++) {
                sv jc[6], dvc[6], dac[6], davc[6];
                col_get(p, J, c, jc);
                col_get(p, DV, c, dvc);
                col_get(p, DA, c, dac);
                col_get(p, DAV, c, davc);
                ep_out(p, sym_dot(gk, jc, fq, 6), ep_coord(EP_I, EP_SELF, c), ep_col(0));
                ep_out(p, sym_dot(gk, jc, fv, 6), ep_coord(EP_I, EP_SELF, c), ep_col(nv));
                ep_out(p, sym_add(gk, sym_dot(gk, pk, dac, 6), sym_dot(gk, qk, dvc, 6)), ep_col(0), ep_coord(EP_I, EP_SELF, c));
                ep_out(p, sym_add(gk, sym_dot(gk, pk, davc, 6), sym_dot(gk, qk, jc, 6)), ep_col(0), ep_coord(EP_I, EP_SELF, nv + c));
            }
        }
    }
    return 0;
}

/* The VJP contracts those sums with the cotangent g before they are formed. With U_i = sum of J_j g_j over the
   bodies strictly above i, SP_i = sum over the subtree of i of Yc_m J_m g_m and SQ_i the same with Dc_m^T, the
   column k of body i gets

     g^T dtau/dq_k  = dA_k . (SP_i + Yc_i U_i) + dV_k . (SQ_i + Dc_i^T U_i) + U_i . (J_k x* F_i)
     g^T dtau/dqd_k = dAv_k . (SP_i + Yc_i U_i) + J_k . (SQ_i + Dc_i^T U_i)

   (the subtree terms are the j-in-subtree sums above, the U terms the j-above ones): one forward and one backward
   pass of 6-vectors, O(nv) work. */
EMIT_PROGRAM(ea_rnea_vjp_program)
{
    const int has_a = sp->reads_a, has_fext = sp->reads_fext, nv = cx->em->nv;
    const ea_world_bufs B = ea_world_buffers(p);
    const int J = B.J, DV = B.DV, DA = B.DA, DAV = B.DAV;
    const int UG = ep_buffer(p, "UG", 6, 1), SP = ep_buffer(p, "SP", 6, 1), SQ = ep_buffer(p, "SQ", 6, 1);
    (void)nv;
    ea_world_forward(p, &B, has_a, has_fext, UG, SP, SQ);

    for (ep_bodies(p, 1); ep_next(p);) {
        sym_graph *g = ep_graph(p);
        const int ni = ep_nv(p, EP_I), root = ep_is_root(p, EP_I);
        const sv zero = sym_const(g, 0.0);
        ep_comment(p, "vector-Jacobian product: backward pass");
        sci Yc;
        sv Dc[36], Fc[6], U[6], Jg[6], sp[6], sq[6], t[6], jc[6];
        ea_world_subtree_sums(p, &B, &Yc, Dc, Fc);
        for (int r = 0; r < 6; r++) {
            U[r] = root ? zero : ep_get(p, UG, EP_I, EP_PARENT, r);
            Jg[r] = zero;
        }
        /* this body's own J g */
        for (int c = 0; c < ni; c++) {
            const sv gc = ep_in(p, EP_G, EP_I, c);
            col_get(p, J, c, jc);
            for (int r = 0; r < 6; r++) Jg[r] = sym_fma(g, jc[r], gc, Jg[r]);
        }
        /* SP, SQ of the subtree: the children's (added into this slot) plus this body's own */
        sp_sci_apply(g, &Yc, Jg, t);
        for (int r = 0; r < 6; r++) sp[r] = sym_add(g, ep_get(p, SP, EP_I, EP_SELF, r), t[r]);
        mat6_apply_t(g, Dc, Jg, t);
        for (int r = 0; r < 6; r++) sq[r] = sym_add(g, ep_get(p, SQ, EP_I, EP_SELF, r), t[r]);
        /* Ptot = SP + Yc U, Qtot = SQ + Dc^T U */
        sv Pt[6], Qt[6];
        sp_sci_apply(g, &Yc, U, t);
        add6(g, sp, t, Pt);
        mat6_apply_t(g, Dc, U, t);
        add6(g, sq, t, Qt);
        for (int c = 0; c < ni; c++) {
            sv jc[6], dvc[6], dac[6], davc[6], jxf[6];
            col_get(p, J, c, jc);
            col_get(p, DV, c, dvc);
            col_get(p, DA, c, dac);
            col_get(p, DAV, c, davc);
            sp_force_cross(g, jc, Fc, jxf);
            ep_out(p, sym_add(g, sym_add(g, sym_dot(g, dac, Pt, 6), sym_dot(g, dvc, Qt, 6)), sym_dot(g, U, jxf, 6)), ep_coord(EP_I, EP_SELF, c));
            ep_out(p, sym_add(g, sym_dot(g, davc, Pt, 6), sym_dot(g, jc, Qt, 6)), ep_coord(EP_I, EP_SELF, nv + c));
        }
        /* the parent's sums */
        ea_world_add_to_parent(p, &B, &Yc, Dc, Fc);
        for (int r = 0; r < 6 && !root; r++) {
            ep_set(p, SP, EP_I, EP_PARENT, r, sym_add(g, ep_get(p, SP, EP_I, EP_PARENT, r), sp[r]));
            ep_set(p, SQ, EP_I, EP_PARENT, r, sym_add(g, ep_get(p, SQ, EP_I, EP_PARENT, r), sq[r]));
        }
    }
    return 0;
}
