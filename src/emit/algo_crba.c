/* Composite-rigid-body mass matrix: local frames and rigid-inertia composites (unrolled), the world frame (rolled). */
#include <stdlib.h>
#include "algos.h"

/* The rolled form, in the world frame (Pinocchio's WORLD convention): composites add without a transform, body i
   leaves F = Yc_i Jw_i in its own columns of one 6 x nv matrix, and row i of M over the descendants' columns is
   Jw_i^T F, a loop over contiguous columns (vectorized) with Jw_i in registers; both triangles are written. */
static int crba_world_program(ep_prog *p, int nv)
{
    const int OM = ep_buffer(p, "oM", 12, 1), JW = ep_buffer(p, "Jw", 36, 1), YC = ep_buffer(p, "Yc", 13, 1);
    const int F = ep_buffer(p, "F", 6 * nv, 0);
    ep_zero_output(p);
    /* world placements, motion subspaces and inertias (this pass also stores every liMi) */
    for (ep_bodies(p, 0); ep_next(p);) {
        sym_graph *g = ep_graph(p);
        const ek_body *b = ep_body(p, EP_I);
        /* world axes, origin at the root: M's entries do not lose digits with the base's distance */
        const sxf oM = ep_world_placement(p, OM, 1);
        sci Y, Yw;
        for (int c = 0; c < b->nv; c++) {
            sv s[6], jw[6];
            for (int r = 0; r < 6; r++) s[r] = b->S[b->nv * r + c];
            sp_motion_act(g, &oM, s, jw);
            for (int r = 0; r < 6; r++) ep_set(p, JW, EP_I, EP_SELF, 6 * c + r, jw[r]);
        }
        sp_body_inertia_sci(g, b, &Y);
        sp_sci_to_parent(g, &oM, &Y, &Yw);
        ep_set_sci(p, YC, EP_I, EP_SELF, &Yw);
    }
    for (ep_bodies(p, 1); ep_next(p);) {
        sym_graph *g = ep_graph(p);
        const int n = ep_nv(p, EP_I);
        sci Y;
        sv J[36], Fc[36];
        ep_comment(p, "composite inertia (world frame), F = Yc Jw in the body's columns, the diagonal block");
        ep_get_sci(p, YC, EP_I, EP_SELF, &Y);
        if (!ep_is_root(p, EP_I)) ep_sci_add_to_parent(p, YC, &Y);
        for (int e = 0; e < 6 * n; e++) J[e] = ep_get(p, JW, EP_I, EP_SELF, e);
        for (int c = 0; c < n; c++) {
            sp_sci_apply(g, &Y, J + 6 * c, Fc + 6 * c);
            for (int r = 0; r < 6; r++) ep_set_col(p, F, EP_I, c, r, Fc[6 * c + r]);
        }
        for (int c = 0; c < n; c++)
            for (int r = 0; r <= c; r++) {
                const sv x = sym_dot(g, J + 6 * r, Fc + 6 * c, 6);
                ep_out(p, x, ep_coord(EP_I, EP_SELF, r), ep_coord(EP_I, EP_SELF, c));
                if (r != c) ep_out(p, x, ep_coord(EP_I, EP_SELF, c), ep_coord(EP_I, EP_SELF, r));
            }
        /* M[i, k] = M[k, i] = Jw_i^T F[:, k] over the descendants' columns */
        for (ep_columns(p, EP_COLS_BELOW); ep_next(p);) {
            sym_graph *gk = ep_graph(p);
            sv f[6], ja[6];
            for (int e = 0; e < 6; e++) f[e] = ep_getk(p, F, EP_I, EP_SELF, e);
            for (int r = 0; r < n; r++) {
                for (int e = 0; e < 6; e++) ja[e] = ep_get(p, JW, EP_I, EP_SELF, 6 * r + e);
                const sv x = sym_dot(gk, ja, f, 6);
                ep_out(p, x, ep_coord(EP_I, EP_SELF, r), ep_col(0));
                ep_out(p, x, ep_col(0), ep_coord(EP_I, EP_SELF, r));
            }
        }
    }
    return 0;
}

int ea_crba_program(ep_prog *p, int nv)
{
    if (ep_rolled(p)) return crba_world_program(p, nv);
    const int YC = ep_buffer(p, "Yc", 13, 1), F = ep_buffer(p, "F", 36, 0);
    ep_zero_output(p);
    /* composites start as the bodies' own inertias (rolled: this pass also stores every liMi) */
    for (ep_bodies(p, 0); ep_next(p);) {
        sci Y;
        sp_body_inertia_sci(ep_graph(p), ep_body(p, EP_I), &Y);
        ep_set_sci(p, YC, EP_I, EP_SELF, &Y);
    }
    for (ep_bodies(p, 1); ep_next(p);) {
        sym_graph *g = ep_graph(p);
        const ek_body *b = ep_body(p, EP_I);
        sci Y;
        ep_comment(p, "composite inertia");
        ep_get_sci(p, YC, EP_I, EP_SELF, &Y);
        /* F = Yc_i S_i; M_ii = S_i^T F */
        for (int c = 0; c < b->nv; c++) {
            sv s[6], Fc[6], col[6];
            for (int r = 0; r < 6; r++) s[r] = b->S[b->nv * r + c];
            sp_sci_apply(g, &Y, s, Fc);
            ek_joint_project(g, b, Fc, col);
            for (int r = 0; r < b->nv; r++) ep_out(p, col[r], ep_coord(EP_I, EP_SELF, r), ep_coord(EP_I, EP_SELF, c));
            for (int r = 0; r < 6; r++) ep_set(p, F, EP_I, EP_SELF, 6 * c + r, Fc[r]);
        }
        /* carry F up the tree: M_ai = S_a^T (X F) for every ancestor a */
        const int ni = ep_nv(p, EP_I);
        for (ep_ancestors(p, 0); ep_next(p);) {
            sym_graph *ga = ep_graph(p);
            const ek_body *ba = ep_body(p, EP_J);
            const sxf *Xc = ep_X_child(p);
            for (int c = 0; c < ni; c++) {
                sv Fc[6], col[6];
                for (int r = 0; r < 6; r++) Fc[r] = ep_get(p, F, EP_I, EP_SELF, 6 * c + r);
                sp_force_act(ga, Xc, Fc, Fc);
                ek_joint_project(ga, ba, Fc, col);
                for (int r = 0; r < ba->nv; r++) {
                    ep_out(p, col[r], ep_coord(EP_J, EP_SELF, r), ep_coord(EP_I, EP_SELF, c));
                    ep_out(p, col[r], ep_coord(EP_I, EP_SELF, c), ep_coord(EP_J, EP_SELF, r));
                }
                for (int r = 0; r < 6; r++) ep_set(p, F, EP_I, EP_SELF, 6 * c + r, Fc[r]);
            }
        }
        /* the parent's composite takes this one */
        if (!ep_is_root(p, EP_I)) {
            sci t;
            ep_get_sci(p, YC, EP_I, EP_SELF, &Y);
            ep_sci_to_parent(p, EP_I, &Y, &t);
            ep_sci_add_to_parent(p, YC, &t);
        }
    }
    return 0;
}
