/* Symbolic spatial algebra on sv values: transforms, motion/force actions, inertias, small matrices. */
#ifndef GRID_EMIT_SPATIAL_H
#define GRID_EMIT_SPATIAL_H

#include "sym.h"
#include "emit_model.h"

/* a rigid transform x_parent = R x_child + p, R row-major */
typedef struct {
    sv R[9];
    sv p[3];
} sxf;

/* a rigid-body inertia about the frame origin with constant mass: f = m v - h x w, n = I w + h x v */
typedef struct {
    double m;
    sv h[3];  /* m * com */
    sv I[9];  /* rotational inertia about the origin, symmetric */
} sci;

void sp_xf_const(sym_graph *g, const double R[9], const double p[3], sxf *out);
void sp_xf_compose(sym_graph *g, const sxf *a, const sxf *b, sxf *out);   /* out = a * b */

void sp_cross(sym_graph *g, const sv a[3], const sv b[3], sv out[3]);
void sp_rot(sym_graph *g, const sv R[9], const sv x[3], sv out[3]);      /* R x */
void sp_rot_t(sym_graph *g, const sv R[9], const sv x[3], sv out[3]);    /* R^T x */

/* spatial vectors are [linear; angular] (motion) and [force; torque] (force) */
void sp_motion_act(sym_graph *g, const sxf *X, const sv m[6], sv out[6]);
void sp_motion_act_inv(sym_graph *g, const sxf *X, const sv m[6], sv out[6]);
void sp_force_act(sym_graph *g, const sxf *X, const sv f[6], sv out[6]);
void sp_motion_cross(sym_graph *g, const sv v[6], const sv m[6], sv out[6]);  /* v x m */
void sp_force_cross(sym_graph *g, const sv v[6], const sv f[6], sv out[6]);   /* v x* f */

/* the constant inertia of a body applied to a motion, Pinocchio's form:
   f = m (v - c x w), n = Ic w + c x f */
void sp_body_inertia_apply(sym_graph *g, const em_body *b, const sv m[6], sv out[6]);
/* the constant inertia of a body as a full symmetric 6x6 (row-major) */
void sp_body_inertia_matrix(sym_graph *g, const em_body *b, sv M[36]);
void sp_body_inertia_sci(sym_graph *g, const em_body *b, sci *out);

void sp_sci_apply(sym_graph *g, const sci *Y, const sv m[6], sv out[6]);
void sp_sci_add(sym_graph *g, sci *acc, const sci *y);
void sp_sci_to_parent(sym_graph *g, const sxf *X, const sci *Y, sci *out);   /* X.act(Y) */

/* 6x6 (row-major) helpers */
void sp_mat6_vec(sym_graph *g, const sv M[36], const sv x[6], sv out[6]);
/* a symmetric 6x6 inertia-like matrix (force = M motion) from the child to the parent frame */
void sp_mat6_to_parent(sym_graph *g, const sxf *X, const sv M[36], sv out[36]);

/* inverse of a symmetric positive-definite n x n matrix (n <= 6) by LDL^T, without pivoting */
void sp_spd_inverse(sym_graph *g, int n, const sv *A, sv *Ainv);

#endif
