/* Forward dynamics M^-1 (u - c): the RNEA bias, then Carpentier's factor applied to one vector, as one program. */
#include <stdlib.h>
#include "algos.h"

int ea_fd_program(ep_prog *p, int has_fext)
{
    const int TAU = ep_buffer(p, "tau", 6, 1), U = ep_buffer(p, "U", 36, 1), DINV = ep_buffer(p, "Dinv", 36, 1);
    const int PA = ep_buffer(p, "pA", 6, 1), Y = ep_buffer(p, "y", 6, 1), ACC = ep_buffer(p, "acc", 6, 1);
    /* c = rnea(q, v, 0, fext), per body; then the factor */
    if (ea_rnea_program(p, 1, 0, has_fext, TAU) != 0) return -1;
    if (ea_factor_program(p, U, DINV, -1, -1) != 0) return -1;
    /* the children's shares accumulate into pA: it starts at zero (rolled workspace is uninitialised) */
    for (ep_bodies(p, 0); ep_next(p);)
        for (int e = 0; e < 6; e++) ep_set(p, PA, EP_I, EP_SELF, e, sym_const(ep_graph(p), 0.0));
    /* backward: y_i = Dinv_i (u_i - c_i - S_i^T pA_i); the parent takes liMi (pA_i + U_i y_i) */
    for (ep_bodies(p, 1); ep_next(p);) {
        sym_graph *g = ep_graph(p);
        const ek_body *b = ep_body(p, EP_I);
        const int n = b->nv;
        const sv zero = sym_const(g, 0.0);
        sv s[6], w[6], pA[6], y[6];
        ep_comment(p, "backward substitution");
        for (int e = 0; e < 6; e++) pA[e] = ep_get(p, PA, EP_I, EP_SELF, e);
        ek_joint_project(g, b, pA, s);
        for (int m = 0; m < n; m++)
            s[m] = sym_sub(g, sym_sub(g, ep_in(p, EP_A, EP_I, m), ep_get(p, TAU, EP_I, EP_SELF, m)), s[m]);
        for (int m = 0; m < n; m++) {
            sv t = zero;
            for (int j = 0; j < n; j++) t = sym_add(g, t, sym_mul(g, ep_get(p, DINV, EP_I, EP_SELF, n * m + j), s[j]));
            y[m] = t;
            ep_set(p, Y, EP_I, EP_SELF, m, t);
        }
        if (!ep_is_root(p, EP_I)) {
            for (int e = 0; e < 6; e++) {
                w[e] = pA[e];
                for (int m = 0; m < n; m++) w[e] = sym_add(g, w[e], sym_mul(g, ep_get(p, U, EP_I, EP_SELF, 6 * m + e), y[m]));
            }
            sp_force_act(g, ep_X(p, EP_I), w, w);
            for (int e = 0; e < 6; e++)
                ep_set(p, PA, EP_I, EP_PARENT, e, sym_add(g, ep_get(p, PA, EP_I, EP_PARENT, e), w[e]));
        }
    }
    /* forward: a_i = liMi^-1 a_p; qdd_i = y_i - Dinv_i U_i^T a_i; a_i += S_i qdd_i */
    for (ep_bodies(p, 0); ep_next(p);) {
        sym_graph *g = ep_graph(p);
        const ek_body *b = ep_body(p, EP_I);
        const int n = b->nv;
        const sv zero = sym_const(g, 0.0);
        sv a[6], ua[6], sq[6], qdd[6], U_[36];
        ep_comment(p, "forward substitution");
        if (!ep_is_root(p, EP_I)) {
            sv ap[6];
            for (int e = 0; e < 6; e++) ap[e] = ep_get(p, ACC, EP_I, EP_PARENT, e);
            sp_motion_act_inv(g, ep_X(p, EP_I), ap, a);
        } else {
            for (int e = 0; e < 6; e++) a[e] = zero;
        }
        for (int e = 0; e < 6 * n; e++) U_[e] = ep_get(p, U, EP_I, EP_SELF, e);
        for (int m = 0; m < n; m++) ua[m] = sym_dot(g, U_ + 6 * m, a, 6);
        for (int m = 0; m < n; m++) {
            sv t = zero;
            for (int j = 0; j < n; j++) t = sym_add(g, t, sym_mul(g, ep_get(p, DINV, EP_I, EP_SELF, n * m + j), ua[j]));
            qdd[m] = sym_sub(g, ep_get(p, Y, EP_I, EP_SELF, m), t);
            ep_out(p, qdd[m], ep_coord(EP_I, EP_SELF, m));
        }
        ek_joint_motion(g, b, qdd, sq);
        for (int e = 0; e < 6; e++) ep_set(p, ACC, EP_I, EP_SELF, e, sym_add(g, a[e], sq[e]));
    }
    return 0;
}
