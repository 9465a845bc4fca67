/* Centre-of-mass and centroidal quantities as programs over the tree for both schedules. */
#include "emit_ctx.h"

/* the whole robot's mass (a model constant) and its reciprocal, 0 for a robot without mass */
static double inverse_mass(const em_model *em)
{
    double m = 0.0;
    for (int i = 0; i < em->nb; i++) m += em->b[i].mass;
    return m > 0.0 ? 1.0 / m : 0.0;
}

/* a one-slot buffer's first n elements set to zero (sums start there) */
static void zero_slot(ep_prog *p, int buf, int n)
{
    sym_graph *g = ep_graph(p);
    for (int k = 0; k < n; k++) ep_set(p, buf, EP_I, EP_SELF, k, sym_const(g, 0.0));
}

/* in a forward bodies loop: RT_i, the world translation of body i's root (a root's own), the origin its world-axes
   placement (ep_world_placement with root_origin) and composites are taken about */
static void store_root_translation(ep_prog *p, int RT)
{
    const sxf *X = ep_X(p, EP_I);
    for (int k = 0; k < 3; k++)
        ep_set(p, RT, EP_I, EP_SELF, k, ep_is_root(p, EP_I) ? X->p[k] : ep_get(p, RT, EP_I, EP_PARENT, k));
}

/* in a backward bodies loop: body i's composite from YC into Y and into its parent's; at a root, its first moment
   about the world origin (h + m p_root) added to TOT[0 .. 3) instead */
static void composite_step(ep_prog *p, int YC, int RT, int TOT, sci *Y)
{
    sym_graph *g = ep_graph(p);
    ep_get_sci(p, YC, EP_I, EP_SELF, Y);
    if (ep_is_root(p, EP_I)) {
        for (int k = 0; k < 3; k++) {
            const sv mc = sym_add(g, Y->h[k], sym_mul(g, Y->m, ep_get(p, RT, EP_I, EP_SELF, k)));
            ep_set(p, TOT, EP_I, EP_SELF, k, sym_add(g, ep_get(p, TOT, EP_I, EP_SELF, k), mc));
        }
    } else {
        ep_sci_add_to_parent(p, YC, Y);
    }
}

/* the centre of mass from body i's root: TOT[0 .. 3) / m - RT_i */
static void com_from_root(ep_prog *p, int TOT, int RT, double inv_m, sv cr[3])
{
    sym_graph *g = ep_graph(p);
    for (int k = 0; k < 3; k++)
        cr[k] = sym_sub(g, sym_mul(g, sym_const(g, inv_m), ep_get(p, TOT, EP_I, EP_SELF, k)), ep_get(p, RT, EP_I, EP_SELF, k));
}

/* com (3) and its Jacobian J (3 x nv), world frame (centerOfMass, jacobianCenterOfMass): per body its mass and first
   moment about the world origin, m_i and m_i c_i = R h_i + m_i p_i, summed over each subtree (MH); a column of joint i
   with world motion (v_o, w) moves the subtree's centres at m_i v_o + w x (m c)_i; both over the whole mass */
EMIT_PROGRAM(ea_com_program)
{
    const int OM = ep_buffer(p, "oM", 12, 1), MH = ep_buffer(p, "mh", 4, 1), TOT = ep_buffer(p, "tot", 3, 0);
    const double inv_m = inverse_mass(cx->em);
    ep_zero_output(p);
    zero_slot(p, TOT, 3);
    for (ep_bodies(p, 0); ep_next(p);) {
        sym_graph *g = ep_graph(p);
        const ek_body *b = ep_body(p, EP_I);
        ep_comment(p, "centre of mass: the body's first moment about the world origin");
        const sxf oM = ep_world_placement(p, OM, 0);
        sv Rh[3];
        sp_rot(g, oM.R, b->h, Rh);
        ep_set(p, MH, EP_I, EP_SELF, 0, b->mass);
        for (int k = 0; k < 3; k++) ep_set(p, MH, EP_I, EP_SELF, 1 + k, sym_add(g, Rh[k], sym_mul(g, b->mass, oM.p[k])));
    }
    for (ep_bodies(p, 1); ep_next(p);) {
        sym_graph *g = ep_graph(p);
        const ek_body *b = ep_body(p, EP_I);
        sv mh[4];
        sxf oM;
        ep_comment(p, "centre-of-mass Jacobian: the subtree's columns");
        for (int k = 0; k < 4; k++) mh[k] = ep_get(p, MH, EP_I, EP_SELF, k);
        if (ep_is_root(p, EP_I)) {
            for (int k = 0; k < 3; k++) ep_set(p, TOT, EP_I, EP_SELF, k, sym_add(g, ep_get(p, TOT, EP_I, EP_SELF, k), mh[1 + k]));
        } else {
            for (int k = 0; k < 4; k++) ep_set(p, MH, EP_I, EP_PARENT, k, sym_add(g, ep_get(p, MH, EP_I, EP_PARENT, k), mh[k]));
        }
        ep_get_xf(p, OM, EP_I, EP_SELF, &oM);
        emit_output_part(p, cx, sp, 1);
        for (int c = 0; c < b->nv; c++) {
            sv s[6], m[6], wxh[3];
            for (int r = 0; r < 6; r++) s[r] = b->S[b->nv * r + c];
            sp_motion_act(g, &oM, s, m);
            sp_cross(g, m + 3, mh + 1, wxh);
            for (int r = 0; r < 3; r++) {
                const sv x = sym_mul(g, sym_const(g, inv_m), sym_add(g, sym_mul(g, mh[0], m[r]), wxh[r]));
                ep_out(p, x, ep_at(r), ep_coord(EP_I, EP_SELF, c));
            }
        }
    }
    sym_graph *g = ep_graph(p);
    emit_output_part(p, cx, sp, 0);
    for (int k = 0; k < 3; k++) ep_out(p, sym_mul(g, sym_const(g, inv_m), ep_get(p, TOT, EP_I, EP_SELF, k)), ep_at(k));
    return 0;
}

/* The centroidal momentum matrix A (6 x nv) and momentum h = A qd (6) about the centre of mass, world axes (ccrba):
   world-axes composite inertias with the origin at each body's root (RT: that root's world translation, so a far base
   costs no digits); column c of body i is Yc_i S_i moved from the root's origin to the centre of mass,
   n_g = n - (c - p_root) x f */
EMIT_PROGRAM(ea_ccrba_program)
{
    const int OM = ep_buffer(p, "oM", 12, 1), YC = ep_buffer(p, "Yc", 13, 1), RT = ep_buffer(p, "rt", 3, 1);
    const int TOT = ep_buffer(p, "tot", 9, 0); /* sum over roots of m c_world (3), then h (6) */
    const double inv_m = inverse_mass(cx->em);
    ep_zero_output(p);
    zero_slot(p, TOT, 9);
    for (ep_bodies(p, 0); ep_next(p);) {
        sym_graph *g = ep_graph(p);
        ep_comment(p, "centroidal momentum matrix: world-axes inertias about the root");
        const sxf oM = ep_world_placement(p, OM, 1);
        sci Y, Yw;
        sp_body_inertia_sci(g, ep_body(p, EP_I), &Y);
        sp_sci_to_parent(g, &oM, &Y, &Yw);
        ep_set_sci(p, YC, EP_I, EP_SELF, &Yw);
        store_root_translation(p, RT);
    }
    for (ep_bodies(p, 1); ep_next(p);) {
        sci Y;
        ep_comment(p, "centroidal momentum matrix: composite inertias");
        composite_step(p, YC, RT, TOT, &Y);
    }
    for (ep_bodies(p, 0); ep_next(p);) {
        sym_graph *g = ep_graph(p);
        const ek_body *b = ep_body(p, EP_I);
        sci Y;
        sxf oM;
        sv cr[3];
        ep_comment(p, "centroidal momentum matrix: the body's columns at the centre of mass");
        ep_get_sci(p, YC, EP_I, EP_SELF, &Y);
        ep_get_xf(p, OM, EP_I, EP_SELF, &oM);
        com_from_root(p, TOT, RT, inv_m, cr);
        emit_output_part(p, cx, sp, 0);
        sv hsum[6];
        for (int r = 0; r < 6; r++) hsum[r] = ep_get(p, TOT, EP_I, EP_SELF, 3 + r);
        for (int c = 0; c < b->nv; c++) {
            sv s[6], sw[6], f[6], cxf[3];
            for (int r = 0; r < 6; r++) s[r] = b->S[b->nv * r + c];
            sp_motion_act(g, &oM, s, sw);
            sp_sci_apply(g, &Y, sw, f);
            sp_cross(g, cr, f, cxf);
            for (int r = 0; r < 3; r++) f[3 + r] = sym_sub(g, f[3 + r], cxf[r]);
            const sv qd = ep_in(p, EP_V, EP_I, c);
            for (int r = 0; r < 6; r++) {
                ep_out(p, f[r], ep_at(r), ep_coord(EP_I, EP_SELF, c));
                hsum[r] = sym_add(g, hsum[r], sym_mul(g, f[r], qd));
            }
        }
        for (int r = 0; r < 6; r++) ep_set(p, TOT, EP_I, EP_SELF, 3 + r, hsum[r]);
    }
    emit_output_part(p, cx, sp, 1);
    for (int r = 0; r < 6; r++) ep_out(p, ep_get(p, TOT, EP_I, EP_SELF, 3 + r), ep_at(r));
    return 0;
}

/* the rate of a world-axes rigid inertia Y = (m, h, I about the origin) moving at the twist (v, w) about that
   origin: dm = 0, dh = m v + w x h, dI = [w]x I - I [w]x - ([v]x [h]x + [h]x [v]x) = M + M^T - (h v^T + v h^T) +
   2 (v . h) E with M = [w]x I */
static void sci_rate(sym_graph *g, const sci *Y, const sv tw[6], sci *dY)
{
    const sv *v = tw, *w = tw + 3;
    sv wxh[3], M[9];
    sp_cross(g, w, Y->h, wxh);
    dY->m = sym_const(g, 0.0);
    for (int k = 0; k < 3; k++) dY->h[k] = sym_add(g, sym_mul(g, Y->m, v[k]), wxh[k]);
    for (int c = 0; c < 3; c++) {
        const sv col[3] = {Y->I[c], Y->I[3 + c], Y->I[6 + c]};
        sv t[3];
        sp_cross(g, w, col, t);
        for (int r = 0; r < 3; r++) M[3 * r + c] = t[r];
    }
    const sv vh2 = sym_mul(g, sym_const(g, 2.0), sym_dot(g, v, Y->h, 3));
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++) {
            sv x = sym_sub(g, sym_add(g, M[3 * r + c], M[3 * c + r]),
                           sym_add(g, sym_mul(g, Y->h[r], v[c]), sym_mul(g, v[r], Y->h[c])));
            dY->I[3 * r + c] = r == c ? sym_add(g, x, vh2) : x;
        }
}

/* dAg/dt (6 x nv, Pinocchio's dccrba): with each root's origin P held fixed at this instant, a column's rate is
   dYc S + Yc (v x S) (v the body's world-axes twist about P, dYc the composite of the bodies' inertia rates), and the
   move to the centre of mass adds -dc x f, m dc the linear momentum (summed over the bodies' momenta Y v) */
EMIT_PROGRAM(ea_cmm_time_variation_program)
{
    (void)sp;
    const int OM = ep_buffer(p, "oM", 12, 1), VEL = ep_buffer(p, "vel", 6, 1), TW = ep_buffer(p, "tw", 6, 1);
    const int YC = ep_buffer(p, "Yc", 13, 1), DYC = ep_buffer(p, "dYc", 13, 1), RT = ep_buffer(p, "rt", 3, 1);
    const int TOT = ep_buffer(p, "tot", 6, 0); /* sum over roots of m c_world (3), then the linear momentum (3) */
    const double inv_m = inverse_mass(cx->em);
    ep_zero_output(p);
    zero_slot(p, TOT, 6);
    for (ep_bodies(p, 0); ep_next(p);) {
        sym_graph *g = ep_graph(p);
        sv vel[6], tw[6], f[6];
        ep_comment(p, "centroidal momentum matrix rate: world-axes inertias and their rates about the root");
        const sxf oM = ep_world_placement(p, OM, 1);
        ep_body_velocity(p, VEL, vel);
        sp_motion_act(g, &oM, vel, tw);
        for (int r = 0; r < 6; r++) ep_set(p, TW, EP_I, EP_SELF, r, tw[r]);
        sci Y, Yw, dY;
        sp_body_inertia_sci(g, ep_body(p, EP_I), &Y);
        sp_sci_to_parent(g, &oM, &Y, &Yw);
        sci_rate(g, &Yw, tw, &dY);
        ep_set_sci(p, YC, EP_I, EP_SELF, &Yw);
        ep_set_sci(p, DYC, EP_I, EP_SELF, &dY);
        sp_sci_apply(g, &Yw, tw, f);
        store_root_translation(p, RT);
        for (int k = 0; k < 3; k++) ep_set(p, TOT, EP_I, EP_SELF, 3 + k, sym_add(g, ep_get(p, TOT, EP_I, EP_SELF, 3 + k), f[k]));
    }
    for (ep_bodies(p, 1); ep_next(p);) {
        sci Y, dY;
        ep_comment(p, "centroidal momentum matrix rate: composites");
        composite_step(p, YC, RT, TOT, &Y);
        ep_get_sci(p, DYC, EP_I, EP_SELF, &dY);
        if (!ep_is_root(p, EP_I)) ep_sci_add_to_parent(p, DYC, &dY);
    }
    for (ep_bodies(p, 0); ep_next(p);) {
        sym_graph *g = ep_graph(p);
        const ek_body *b = ep_body(p, EP_I);
        sci Y, dY;
        sxf oM;
        sv cr[3], dc[3], tw[6];
        ep_comment(p, "centroidal momentum matrix rate: the body's columns at the centre of mass");
        ep_get_sci(p, YC, EP_I, EP_SELF, &Y);
        ep_get_sci(p, DYC, EP_I, EP_SELF, &dY);
        ep_get_xf(p, OM, EP_I, EP_SELF, &oM);
        for (int r = 0; r < 6; r++) tw[r] = ep_get(p, TW, EP_I, EP_SELF, r);
        com_from_root(p, TOT, RT, inv_m, cr);
        for (int k = 0; k < 3; k++) dc[k] = sym_mul(g, sym_const(g, inv_m), ep_get(p, TOT, EP_I, EP_SELF, 3 + k));
        for (int c = 0; c < b->nv; c++) {
            sv s[6], sw[6], ds[6], f[6], df[6], t[6], a1[3], a2[3];
            for (int r = 0; r < 6; r++) s[r] = b->S[b->nv * r + c];
            sp_motion_act(g, &oM, s, sw);
            sp_motion_cross(g, tw, sw, ds);
            sp_sci_apply(g, &Y, sw, f);
            sp_sci_apply(g, &dY, sw, df);
            sp_sci_apply(g, &Y, ds, t);
            for (int r = 0; r < 6; r++) df[r] = sym_add(g, df[r], t[r]);
            sp_cross(g, cr, df, a1);
            sp_cross(g, dc, f, a2);
            for (int r = 0; r < 3; r++) df[3 + r] = sym_sub(g, df[3 + r], sym_add(g, a1[r], a2[r]));
            for (int r = 0; r < 6; r++) ep_out(p, df[r], ep_at(r), ep_coord(EP_I, EP_SELF, c));
        }
    }
    return 0;
}

/* in a columns loop over k: the angular rows' f_j x f_k / m of body i's coordinates j, f the linear rows of A_o (FK
   every column's, FB the body's own): along q_k the centre of mass moves at dc = f_k / m and -dc x f_j reaches every
   pair; transposed, pair (k, j) too (-f_j x f_k / m) */
static void momentum_pairs(ep_prog *p, int FB, int FK, double inv_m, int transposed)
{
    sym_graph *g = ep_graph(p);
    sv fk[3];
    for (int r = 0; r < 3; r++) fk[r] = sym_mul(g, sym_const(g, inv_m), ep_getk(p, FK, EP_I, EP_SELF, r));
    for (int c = 0; c < ep_nv(p, EP_I); c++) {
        sv fj[3], t[3];
        for (int r = 0; r < 3; r++) fj[r] = ep_get(p, FB, EP_I, EP_SELF, 6 * c + r);
        sp_cross(g, fj, fk, t);
        for (int r = 0; r < 3; r++) {
            ep_out(p, t[r], ep_at(3 + r), ep_coord(EP_I, EP_SELF, c), ep_col(0));
            if (transposed) ep_out(p, sym_neg(g, t[r]), ep_at(3 + r), ep_col(0), ep_coord(EP_I, EP_SELF, c));
        }
    }
}

/* pair (j, k) of related bodies, df = dF_j/dq_k about the root's origin P: the linear rows df_l, and the angular rows
   add df_n - (c - P) x df_l to the momentum term already there */
static void add_pair(ep_prog *p, const sv df[6], const sv cr[3], ep_ix j, ep_ix k)
{
    sym_graph *g = ep_graph(p);
    sv a[3];
    sp_cross(g, cr, df, a);
    for (int r = 0; r < 3; r++) {
        const sv n = ep_out_get(p, ep_at(3 + r), j, k);
        ep_out(p, df[r], ep_at(r), j, k);
        ep_out(p, sym_add(g, n, sym_sub(g, df[3 + r], a[r])), ep_at(3 + r), j, k);
    }
}

/* dA/dq (6 x nv x nv): out[r][j][k] = dA[r][j]/dq_k along the local tangent e_k. World axes about each root's origin
   P (RT); J_k the world column of coordinate k, F_j = Yc J_j A's column before the move to the centre of mass (Yc the
   composite of j's body). A motion along q_k moves the subtree of k's body at the twist J_k, so
     k's body is j's or an ancestor of it (J_j moves too):  dF_j/dq_k = J_k x* F_j
     j's body is a strict ancestor of k's:                  dF_j/dq_k = dY_k J_j, dY_k = J_k x* Yc - Yc J_k x (sci_rate)
   with Yc of k's body, and 0 otherwise. n_g = n - (c - P) x f then adds -(c - P) x df_l, and -dc x f_j with
   dc = f_k / m for every pair: the angular rows are dense, written first (momentum_pairs), and the related pairs add
   their df (add_pair). O(nv depth) 6-vector work besides the nv^2 cross products. */
EMIT_PROGRAM(ea_dccrba_program)
{
    (void)sp;
    const int nv = cx->em->nv;
    const int OM = ep_buffer(p, "oM", 12, 1), YC = ep_buffer(p, "Yc", 13, 1), RT = ep_buffer(p, "rt", 3, 1);
    const int JW = ep_buffer(p, "Jw", 36, 1), FB = ep_buffer(p, "F", 36, 1), DY = ep_buffer(p, "dY", 72, 1);
    const int FK = ep_buffer(p, "Fk", 6 * nv, 0), TOT = ep_buffer(p, "tot", 3, 0); /* TOT: sum over roots of m c_world */
    const double inv_m = inverse_mass(cx->em);
    ep_zero_output(p);
    zero_slot(p, TOT, 3);
    for (ep_bodies(p, 0); ep_next(p);) {
        sym_graph *g = ep_graph(p);
        const ek_body *b = ep_body(p, EP_I);
        ep_comment(p, "centroidal momentum matrix derivative: world-axes inertias and columns about the root");
        const sxf oM = ep_world_placement(p, OM, 1);
        sci Y, Yw;
        sp_body_inertia_sci(g, b, &Y);
        sp_sci_to_parent(g, &oM, &Y, &Yw);
        ep_set_sci(p, YC, EP_I, EP_SELF, &Yw);
        store_root_translation(p, RT);
        for (int c = 0; c < b->nv; c++) {
            sv s[6], jw[6];
            for (int r = 0; r < 6; r++) s[r] = b->S[b->nv * r + c];
            sp_motion_act(g, &oM, s, jw);
            for (int r = 0; r < 6; r++) ep_set(p, JW, EP_I, EP_SELF, 6 * c + r, jw[r]);
        }
    }
    for (ep_bodies(p, 1); ep_next(p);) {
        sym_graph *g = ep_graph(p);
        sci Y, dY;
        ep_comment(p, "centroidal momentum matrix derivative: composites, F = Yc J and dY along each column");
        composite_step(p, YC, RT, TOT, &Y);
        for (int c = 0; c < ep_nv(p, EP_I); c++) {
            sv jw[6], f[6];
            for (int r = 0; r < 6; r++) jw[r] = ep_get(p, JW, EP_I, EP_SELF, 6 * c + r);
            sp_sci_apply(g, &Y, jw, f);
            for (int r = 0; r < 6; r++) ep_set(p, FB, EP_I, EP_SELF, 6 * c + r, f[r]);
            for (int r = 0; r < 3; r++) ep_set_col(p, FK, EP_I, c, r, f[r]);
            /* the rate's h and I (its mass rate is zero) */
            sci_rate(g, &Y, jw, &dY);
            for (int e = 0; e < 3; e++) ep_set(p, DY, EP_I, EP_SELF, 12 * c + e, dY.h[e]);
            for (int e = 0; e < 9; e++) ep_set(p, DY, EP_I, EP_SELF, 12 * c + 3 + e, dY.I[e]);
        }
    }
    for (ep_bodies(p, 0); ep_next(p);) {
        for (ep_columns(p, EP_COLS_OWN); ep_next(p);) momentum_pairs(p, FB, FK, inv_m, 0);
        for (ep_columns(p, EP_COLS_LATER); ep_next(p);) momentum_pairs(p, FB, FK, inv_m, 1);
        sym_graph *g = ep_graph(p);
        const int n = ep_nv(p, EP_I);
        sv cr[3];
        ep_comment(p, "centroidal momentum matrix derivative: pairs of the body's own coordinates");
        com_from_root(p, TOT, RT, inv_m, cr);
        for (int c = 0; c < n; c++)
            for (int d = 0; d < n; d++) {
                sv f[6], jk[6], df[6];
                for (int r = 0; r < 6; r++) {
                    f[r] = ep_get(p, FB, EP_I, EP_SELF, 6 * c + r);
                    jk[r] = ep_get(p, JW, EP_I, EP_SELF, 6 * d + r);
                }
                sp_force_cross(g, jk, f, df);
                add_pair(p, df, cr, ep_coord(EP_I, EP_SELF, c), ep_coord(EP_I, EP_SELF, d));
            }
        for (ep_ancestors(p, 0); ep_next(p);) {
            sym_graph *ga = ep_graph(p);
            const int na = ep_nv(p, EP_J);
            ep_comment(p, "centroidal momentum matrix derivative: pairs of the body's coordinates and an ancestor's");
            com_from_root(p, TOT, RT, inv_m, cr);
            for (int c = 0; c < n; c++) {
                sv f[6];
                sci dY;
                for (int r = 0; r < 6; r++) f[r] = ep_get(p, FB, EP_I, EP_SELF, 6 * c + r);
                dY.m = sym_const(ga, 0.0);
                for (int e = 0; e < 3; e++) dY.h[e] = ep_get(p, DY, EP_I, EP_SELF, 12 * c + e);
                for (int e = 0; e < 9; e++) dY.I[e] = ep_get(p, DY, EP_I, EP_SELF, 12 * c + 3 + e);
                for (int d = 0; d < na; d++) {
                    sv ja[6], df[6];
                    for (int r = 0; r < 6; r++) ja[r] = ep_get(p, JW, EP_J, EP_SELF, 6 * d + r);
                    /* j of the body, k of the ancestor */
                    sp_force_cross(ga, ja, f, df);
                    add_pair(p, df, cr, ep_coord(EP_I, EP_SELF, c), ep_coord(EP_J, EP_SELF, d));
                    /* j of the ancestor, k of the body */
                    sp_sci_apply(ga, &dY, ja, df);
                    add_pair(p, df, cr, ep_coord(EP_J, EP_SELF, d), ep_coord(EP_I, EP_SELF, c));
                }
            }
        }
    }
    return 0;
}
