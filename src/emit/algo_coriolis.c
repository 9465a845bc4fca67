/* The Coriolis matrix C(q, qd) with C qd + g = nonlinear_effects and dM/dt = C + C^T, as one program for both schedules. */
#include "emit_ctx.h"

/* B m = 1/2 (v x* (Y m) - Y (v x m)) + 1/2 m x* h, h = Y v: the Coriolis inertia of a body moving at v, whose
   symmetric part is 1/2 dY/dt and whose product with v is v x* Y v */
static void coriolis_inertia(sym_graph *g, const sci *Y, const sv v[6], const sv h[6], sv B[36])
{
    const sv zero = sym_const(g, 0.0), one = sym_const(g, 1.0), half = sym_const(g, 0.5);
    for (int c = 0; c < 6; c++) {
        sv e[6], Ye[6], a[6], vxe[6], b[6], exh[6];
        for (int r = 0; r < 6; r++) e[r] = r == c ? one : zero;
        sp_sci_apply(g, Y, e, Ye);
        sp_force_cross(g, v, Ye, a);
        sp_motion_cross(g, v, e, vxe);
        sp_sci_apply(g, Y, vxe, b);
        sp_force_cross(g, e, h, exh);
        for (int r = 0; r < 6; r++) B[6 * r + c] = sym_mul(g, half, sym_add(g, sym_sub(g, a[r], b[r]), exh[r]));
    }
}

/* Pinocchio's computeCoriolisMatrix in the world frame (origin at the root): per body its joint's world columns J,
   their rates dJ = v x J, and the composites Yc (inertia) and Bc (Coriolis inertia) of its subtree; with
   dF = Yc dJ + Bc J, C[i, i] = J_i^T dF_i, and for every ancestor j: C[j, i] = J_j^T dF_i, C[i, j] = (Yc_i J_i)^T dJ_j
   + (Bc_i^T J_i)^T J_j. Columns are 6-wide per coordinate, column c of a body at 6 c. */
EMIT_PROGRAM(ea_coriolis_matrix_program)
{
    (void)cx;
    (void)sp;
    const int OM = ep_buffer(p, "oM", 12, 1), VEL = ep_buffer(p, "vel", 6, 1);
    const int J = ep_buffer(p, "J", 36, 1), DJ = ep_buffer(p, "dJ", 36, 1), YC = ep_buffer(p, "Yc", 13, 1),
              BC = ep_buffer(p, "Bc", 36, 1), DF = ep_buffer(p, "dF", 36, 1), AG = ep_buffer(p, "Ag", 36, 1),
              BJ = ep_buffer(p, "BtJ", 36, 1);
    ep_zero_output(p);
    for (ep_bodies(p, 0); ep_next(p);) {
        sym_graph *g = ep_graph(p);
        const ek_body *b = ep_body(p, EP_I);
        const int ni = ep_nv(p, EP_I);
        sv vel[6], ov[6], h[6], B[36];
        ep_comment(p, "Coriolis matrix: forward pass");
        const sxf o = ep_world_placement(p, OM, 1);
        ep_body_velocity(p, VEL, vel);
        sp_motion_act(g, &o, vel, ov);
        for (int c = 0; c < ni; c++) {
            sv s[6], Jc[6], dJc[6];
            for (int r = 0; r < 6; r++) s[r] = b->S[ni * r + c];
            sp_motion_act(g, &o, s, Jc);
            sp_motion_cross(g, ov, Jc, dJc);
            for (int r = 0; r < 6; r++) {
                ep_set(p, J, EP_I, EP_SELF, 6 * c + r, Jc[r]);
                ep_set(p, DJ, EP_I, EP_SELF, 6 * c + r, dJc[r]);
            }
        }
        sci Yl, Y;
        sp_body_inertia_sci(g, b, &Yl);
        sp_sci_to_parent(g, &o, &Yl, &Y);
        sp_sci_apply(g, &Y, ov, h);
        coriolis_inertia(g, &Y, ov, h, B);
        ep_set_sci(p, YC, EP_I, EP_SELF, &Y);
        for (int e = 0; e < 36; e++) ep_set(p, BC, EP_I, EP_SELF, e, B[e]);
    }
    for (ep_bodies(p, 1); ep_next(p);) {
        sym_graph *g = ep_graph(p);
        const int ni = ep_nv(p, EP_I);
        sci Y;
        sv B[36];
        ep_comment(p, "Coriolis matrix: backward pass");
        ep_get_sci(p, YC, EP_I, EP_SELF, &Y);
        for (int e = 0; e < 36; e++) B[e] = ep_get(p, BC, EP_I, EP_SELF, e);
        sv Jc[6][6], dF[6][6];
        for (int c = 0; c < ni; c++) {
            sv dJc[6], t[6], ag[6], bj[6];
            for (int r = 0; r < 6; r++) {
                Jc[c][r] = ep_get(p, J, EP_I, EP_SELF, 6 * c + r);
                dJc[r] = ep_get(p, DJ, EP_I, EP_SELF, 6 * c + r);
            }
            sp_sci_apply(g, &Y, dJc, dF[c]);
            sp_mat6_vec(g, B, Jc[c], t);
            sp_sci_apply(g, &Y, Jc[c], ag);
            for (int r = 0; r < 6; r++) {
                sv s = sym_const(g, 0.0);
                for (int k = 0; k < 6; k++) s = sym_add(g, s, sym_mul(g, B[6 * k + r], Jc[c][k]));
                bj[r] = s;
                dF[c][r] = sym_add(g, dF[c][r], t[r]);
                ep_set(p, DF, EP_I, EP_SELF, 6 * c + r, dF[c][r]);
                ep_set(p, AG, EP_I, EP_SELF, 6 * c + r, ag[r]);
                ep_set(p, BJ, EP_I, EP_SELF, 6 * c + r, bj[r]);
            }
        }
        for (int r = 0; r < ni; r++)
            for (int c = 0; c < ni; c++)
                ep_out(p, sym_dot(g, Jc[r], dF[c], 6), ep_coord(EP_I, EP_SELF, r), ep_coord(EP_I, EP_SELF, c));
        if (!ep_is_root(p, EP_I)) {
            /* the composites, world frame: plain sums into the parent's */
            ep_sci_add_to_parent(p, YC, &Y);
            for (int e = 0; e < 36; e++) ep_set(p, BC, EP_I, EP_PARENT, e, sym_add(g, ep_get(p, BC, EP_I, EP_PARENT, e), B[e]));
        }
        for (ep_ancestors(p, 0); ep_next(p);) {
            sym_graph *gj = ep_graph(p);
            const int nj = ep_nv(p, EP_J);
            for (int a = 0; a < nj; a++) {
                sv Jj[6], dJj[6];
                for (int r = 0; r < 6; r++) {
                    Jj[r] = ep_get(p, J, EP_J, EP_SELF, 6 * a + r);
                    dJj[r] = ep_get(p, DJ, EP_J, EP_SELF, 6 * a + r);
                }
                for (int c = 0; c < ni; c++) {
                    sv dFc[6], ag[6], bj[6];
                    for (int r = 0; r < 6; r++) {
                        dFc[r] = ep_get(p, DF, EP_I, EP_SELF, 6 * c + r);
                        ag[r] = ep_get(p, AG, EP_I, EP_SELF, 6 * c + r);
                        bj[r] = ep_get(p, BJ, EP_I, EP_SELF, 6 * c + r);
                    }
                    ep_out(p, sym_dot(gj, Jj, dFc, 6), ep_coord(EP_J, EP_SELF, a), ep_coord(EP_I, EP_SELF, c));
                    ep_out(p, sym_add(gj, sym_dot(gj, ag, dJj, 6), sym_dot(gj, bj, Jj, 6)), ep_coord(EP_I, EP_SELF, c),
                           ep_coord(EP_J, EP_SELF, a));
                }
            }
        }
    }
    return 0;
}
