/* The energies of a state and their inertial-parameter regressors, as programs over the tree for both schedules. */
#include "emit_ctx.h"

/* in a forward bodies loop: the world z row of body i's placement (ZR, 4 per body: row 2 of oR, then the z of its
   origin; oR_i = oR_p R, z_i = oR_p row 2 . p + z_p), stored and returned */
static void world_height(ep_prog *p, int ZR, sv zr[4])
{
    sym_graph *g = ep_graph(p);
    const sxf *X = ep_X(p, EP_I);
    if (ep_is_root(p, EP_I)) {
        for (int k = 0; k < 3; k++) zr[k] = X->R[6 + k];
        zr[3] = X->p[2];
    } else {
        sv zp[4];
        for (int k = 0; k < 4; k++) zp[k] = ep_get(p, ZR, EP_I, EP_PARENT, k);
        for (int k = 0; k < 3; k++) {
            const sv col[3] = {X->R[k], X->R[3 + k], X->R[6 + k]};
            zr[k] = sym_dot(g, zp, col, 3);
        }
        zr[3] = sym_add(g, sym_dot(g, zp, X->p, 3), zp[3]);
    }
    for (int k = 0; k < 4; k++) ep_set(p, ZR, EP_I, EP_SELF, k, zr[k]);
}

/* [kinetic, potential, mechanical] at (q, qd): T = sum 1/2 v_i . I_i v_i, V = -g sum (oR_i row 2 . h_i + m_i z_i) */
EMIT_PROGRAM(ea_energy_program)
{
    (void)cx;
    (void)sp;
    const int VEL = ep_buffer(p, "vel", 6, 1), ZR = ep_buffer(p, "zr", 4, 1), E = ep_buffer(p, "E", 2, 0);
    {
        sym_graph *g = ep_graph(p);
        ep_set(p, E, EP_I, EP_SELF, 0, sym_const(g, 0.0));
        ep_set(p, E, EP_I, EP_SELF, 1, sym_const(g, 0.0));
    }
    for (ep_bodies(p, 0); ep_next(p);) {
        sym_graph *g = ep_graph(p);
        const ek_body *b = ep_body(p, EP_I);
        sv vel[6], zr[4], Iv[6];
        ep_comment(p, "energies");
        ep_body_velocity(p, VEL, vel);
        world_height(p, ZR, zr);
        sp_body_inertia_apply(g, b, vel, Iv);
        const sv T = sym_mul(g, sym_const(g, 0.5), sym_dot(g, vel, Iv, 6));
        const sv mz = sym_add(g, sym_dot(g, zr, b->h, 3), sym_mul(g, b->mass, zr[3]));
        const sv V = sym_mul(g, sym_const(g, -ep_gravity(p)), mz);
        ep_set(p, E, EP_I, EP_SELF, 0, sym_add(g, ep_get(p, E, EP_I, EP_SELF, 0), T));
        ep_set(p, E, EP_I, EP_SELF, 1, sym_add(g, ep_get(p, E, EP_I, EP_SELF, 1), V));
    }
    sym_graph *g = ep_graph(p);
    const sv T = ep_get(p, E, EP_I, EP_SELF, 0), V = ep_get(p, E, EP_I, EP_SELF, 1);
    ep_out(p, T, ep_at(0));
    ep_out(p, V, ep_at(1));
    ep_out(p, sym_add(g, T, V), ep_at(2));
    return 0;
}

/* the kinetic energy regressor y (nb x 10), T = y . pi (pi: Pinocchio's dynamic parameters per body, the inertia about
   the body origin): [1/2 v.v, v x w, 1/2 wx^2, wx wy, 1/2 wy^2, wx wz, wy wz, 1/2 wz^2] of body i's local velocity */
EMIT_PROGRAM(ea_kinetic_energy_regressor_program)
{
    (void)sp;
    const int VEL = ep_buffer(p, "vel", 6, 1);
    const int dims[2] = {cx->em->nb, 10};
    ep_out_shape(p, 2, dims);
    for (ep_bodies(p, 0); ep_next(p);) {
        sym_graph *g = ep_graph(p);
        sv vel[6], vxw[3];
        ep_comment(p, "kinetic energy regressor");
        ep_body_velocity(p, VEL, vel);
        const sv *v = vel, *w = vel + 3, half = sym_const(g, 0.5);
        sp_cross(g, v, w, vxw);
        const sv y[10] = {sym_mul(g, half, sym_dot(g, v, v, 3)), vxw[0], vxw[1], vxw[2],
                          sym_mul(g, half, sym_mul(g, w[0], w[0])), sym_mul(g, w[0], w[1]),
                          sym_mul(g, half, sym_mul(g, w[1], w[1])), sym_mul(g, w[0], w[2]), sym_mul(g, w[1], w[2]),
                          sym_mul(g, half, sym_mul(g, w[2], w[2]))};
        for (int k = 0; k < 10; k++) ep_out(p, y[k], ep_body_ix(EP_I), ep_at(k));
    }
    return 0;
}

/* the potential energy regressor y (nb x 10), V = y . pi: [-g z_i, -g (row 2 of oR_i), 0 x 6] (gravity along z) */
EMIT_PROGRAM(ea_potential_energy_regressor_program)
{
    (void)sp;
    const int ZR = ep_buffer(p, "zr", 4, 1);
    const int dims[2] = {cx->em->nb, 10};
    ep_out_shape(p, 2, dims);
    ep_zero_output(p);
    for (ep_bodies(p, 0); ep_next(p);) {
        sym_graph *g = ep_graph(p);
        sv zr[4];
        ep_comment(p, "potential energy regressor");
        world_height(p, ZR, zr);
        const sv mg = sym_const(g, -ep_gravity(p));
        ep_out(p, sym_mul(g, mg, zr[3]), ep_body_ix(EP_I), ep_at(0));
        for (int k = 0; k < 3; k++) ep_out(p, sym_mul(g, mg, zr[k]), ep_body_ix(EP_I), ep_at(1 + k));
    }
    return 0;
}
