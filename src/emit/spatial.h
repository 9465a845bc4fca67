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
    sv m;     /* mass: a literal unrolled, a table load or a sum of them rolled */
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
void sp_force_act(sym_graph *g, const sxf *X, const sv f[6], sv out[6]);      /* parent <- child: X^T f */
void sp_force_act_inv(sym_graph *g, const sxf *X, const sv f[6], sv out[6]);  /* child <- parent: X^-T f */
void sp_motion_cross(sym_graph *g, const sv v[6], const sv m[6], sv out[6]);  /* v x m */
void sp_force_cross(sym_graph *g, const sv v[6], const sv f[6], sv out[6]);   /* v x* f */

/* One body as the builders see it (the model accessor): its joint's structure, fixed per generated
   function, and its constants as symbolic values, folded literals (unrolled schedule) or loads from the
   flat body table (rolled schedule; see EKT_*). */
typedef struct {
    int type, nv;        /* grid_joint_type and velocity dofs */
    int axis_k;          /* 0..2 when the axis is +-e_k (literal view only), else -1 */
    int s_basis;         /* 0..5 when nv == 1 and S is +-e_k (literal view only), else -1 */
    sv R[9], p[3];       /* joint placement in the parent frame */
    sv axis[3];          /* unit joint axis */
    sv S[36];            /* motion subspace, 6 x nv row-major */
    sv mass, com[3], Ic[9]; /* mass, centre of mass, rotational inertia about the centre of mass */
    sv h[3], Io[9];      /* m com, and the rotational inertia about the body origin */
    sv mult;             /* a mimic joint's multiplier (1 for every other joint) */
} ek_body;

/* the rolled schedule's body table: reals per body and the offset of each field */
enum { EKT_R = 0, EKT_P = 9, EKT_AXIS = 12, EKT_S = 15 /* 6 x nv, nv <= 3 where S depends on the axis */,
       EKT_MASS = 33, EKT_COM = 34, EKT_IC = 37, EKT_H = 46, EKT_IO = 49, EKT_MULT = 58, EKT_WIDTH = 59 };

/* the row of body b in that table (the same doubles the literal view folds) */
void sp_body_table_row(const em_body *b, double row[EKT_WIDTH]);
/* the literal view of b, and the view of a body of joint type `type` whose row is array `table` of g */
void sp_body_literal(sym_graph *g, const em_body *b, ek_body *out);
void sp_body_loaded(sym_graph *g, int table, int type, ek_body *out);

/* the inertia of a body applied to a motion, Pinocchio's form:
   f = m (v - c x w), n = Ic w + c x f */
void sp_body_inertia_apply(sym_graph *g, const ek_body *b, const sv m[6], sv out[6]);
/* the inertia of a body as a full symmetric 6x6 (row-major) */
void sp_body_inertia_matrix(sym_graph *g, const ek_body *b, sv M[36]);
void sp_body_inertia_sci(sym_graph *g, const ek_body *b, sci *out);

void sp_sci_apply(sym_graph *g, const sci *Y, const sv m[6], sv out[6]);
void sp_sci_add(sym_graph *g, sci *acc, const sci *y);
void sp_sci_to_parent(sym_graph *g, const sxf *X, const sci *Y, sci *out);   /* X.act(Y) */

/* 6x6 (row-major) helpers */
void sp_mat6_vec(sym_graph *g, const sv M[36], const sv x[6], sv out[6]);
/* M^T x */
void sp_mat6_tvec(sym_graph *g, const sv M[36], const sv x[6], sv out[6]);
/* a symmetric 6x6 inertia-like matrix (force = M motion) from the child to the parent frame */
void sp_mat6_to_parent(sym_graph *g, const sxf *X, const sv M[36], sv out[36]);

/* inverse of a symmetric positive-definite n x n matrix (n <= 6) by LDL^T, without pivoting */
void sp_spd_inverse(sym_graph *g, int n, const sv *A, sv *Ainv);

#endif
