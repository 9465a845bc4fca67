/* Private spatial-algebra helpers and shared passes of the float64 reference algorithms. */
#ifndef GRID_REF_SPATIAL_H
#define GRID_REF_SPATIAL_H

#include <stddef.h>
#include "grid/model.h"

/* Layouts used throughout src/ref:
     xform   double[12]: R (3x3 row-major) then p (3); x_parent = R * x_child + p
     motion  double[6]:  [linear; angular]
     force   double[6]:  [force; torque]
     mat6    double[36]: 6x6 row-major, acting on [linear; angular]
     cols    double[6*n]: 6 x n row-major (a motion subspace or a Jacobian block) */

/* ---- transforms ---- */

/* copy a model transform into xform layout */
void grid_sp_xform_load(const grid_transform *t, double x[12]);
/* identity transform */
void grid_sp_xform_identity(double x[12]);
/* out = a * b (apply b first); out may not alias a or b */
void grid_sp_xform_compose(const double a[12], const double b[12], double out[12]);
/* 4x4 homogeneous row-major matrix of x */
void grid_sp_xform_to_homogeneous(const double x[12], double h[16]);

/* motion and force transformation: act maps child-frame vectors to the parent frame,
   act_inv maps parent-frame vectors to the child frame; out may not alias the input */
void grid_sp_motion_act(const double x[12], const double m[6], double out[6]);
void grid_sp_motion_act_inv(const double x[12], const double m[6], double out[6]);
void grid_sp_force_act(const double x[12], const double f[6], double out[6]);
void grid_sp_force_act_inv(const double x[12], const double f[6], double out[6]);

/* 6x6 matrix of motion_act_inv: m_child = X * m_parent (forces go back with X^T) */
void grid_sp_motion_act_inv_matrix(const double x[12], double X[36]);

/* ---- cross products ---- */

/* out = v x m (motion on motion) */
void grid_sp_motion_cross(const double v[6], const double m[6], double out[6]);
/* out = v x* f (motion on force) */
void grid_sp_force_cross(const double v[6], const double f[6], double out[6]);

/* ---- inertias and small matrices ---- */

/* dY = v x* Y - Y (v x) (6x6 row-major): the rate of a spatial inertia Y moving at the spatial velocity v, both in
   one fixed frame */
void grid_sp_inertia_rate(const double Y[36], const double v[6], double dY[36]);

/* 6x6 spatial inertia about the body origin from mass, com and inertia about the com */
void grid_sp_inertia_matrix(const grid_inertia *in, double I[36]);
/* inertia expressed in the child frame of x, re-expressed in the parent frame: X^T I X
   with X = motion_act_inv_matrix(x) */
void grid_sp_inertia_to_parent(const double x[12], const double I_child[36], double I_parent[36]);
/* C = A B for 6x6 A, B (C may not alias them) */
void grid_sp_mat6_mul(const double A[36], const double B[36], double C[36]);
/* the matrices of m -> s x m ([[w]x, [v]x; 0, [w]x] for s = [v; w]) and of m -> m x* f (Pinocchio's
   ForceCrossMatrix: [0, -[f]x; -[f]x, -[n]x] for f = [f; n]) */
void grid_sp_motion_cross_matrix(const double s[6], double M[36]);
void grid_sp_force_cross_matrix(const double f[6], double M[36]);
/* out = A * b for a 6x6 A */
void grid_sp_mat6_vec(const double A[36], const double b[6], double out[6]);
/* inverse of a small square matrix (n <= 6) by Gauss-Jordan with partial pivoting;
   returns 0, or -1 when the matrix is singular (Ainv is then NaN, so an ill-posed model,
   e.g. a massless leaf body, shows up in the results instead of being hidden) */
int grid_sp_small_inverse(int n, const double *A, double *Ainv);

/* ---- joints ---- */

/* the joint motion M_J(q) (without its placement) for the joint's q slice */
void grid_sp_joint_transform(const grid_joint *j, const double *q, double x[12]);
/* the motion subspace S (6 x j->nv, row-major) in the joint frame */
void grid_sp_joint_subspace(const grid_joint *j, double *S);

/* ---- shared kinematic pass ---- */

/* liMi (body in parent) and oMi (body in world) of every body at q, each nb*12 wide */
void grid_sp_placements(const grid_model *m, const double *q, double *liMi, double *oMi);
/* the placements and every body's local spatial velocity at (q, v): vel is nb*6 wide, v_i = liMi^-1 v_parent + S qd */
void grid_sp_velocities(const grid_model *m, const double *q, const double *v, double *liMi, double *oMi, double *vel);
/* placements, body-local velocities and accelerations (6 per body; gravity as the world's upward acceleration) at
   (q, v, a), v and a NULL for zeros: RNEA's forward pass */
void grid_sp_accelerations(const grid_model *m, const double *q, const double *v, const double *a, double *liMi,
                           double *oMi, double *vel, double *acc);

/* 1 when body a is body b or one of its ancestors */
int grid_sp_ancestor_or_self(const grid_model *m, int a, int b);

/* RNEA's pass in world-frame quantities (the derivatives' forward pass), per tangent column c (6 wide, at 6 c): the
   motion subspace J = oMi.act(S), dVdq = v_parent x J, dAdq = a_parent x J + v_parent x dVdq, dAdv = (v_parent + v_i)
   x J; per body i: v, a (6), the force F = Y a + v x* Y v - oMi.act_force(fext) (6), the world inertia Y (6x6) and
   D = v x* Y - Y v x + (. x* Y v) (6x6). grid_sp_world_at lays them out in grid_sp_work_derivatives(m) doubles. */
typedef struct {
    double *liMi, *oMi, *J, *dVdq, *dAdq, *dAdv, *vel, *acc, *F, *Yc, *Dc;
} grid_sp_world;
void grid_sp_world_at(const grid_model *m, double *work, grid_sp_world *w);
void grid_sp_rnea_world_pass(const grid_model *m, const double *q, const double *v, const double *a,
                             const double *fext, const grid_sp_world *w);

/* doubles of work each algorithm family takes (the public work size is their maximum) */
size_t grid_sp_work_kinematics(const grid_model *m);
size_t grid_sp_work_rnea(const grid_model *m);
size_t grid_sp_work_crba(const grid_model *m);
size_t grid_sp_work_minv(const grid_model *m);
size_t grid_sp_work_aba(const grid_model *m);
size_t grid_sp_work_forward_dynamics(const grid_model *m);
size_t grid_sp_work_jacobian(const grid_model *m);
size_t grid_sp_work_derivatives(const grid_model *m);    /* RNEA derivatives */
size_t grid_sp_work_fd_derivatives(const grid_model *m); /* FD derivatives */
size_t grid_sp_work_ee_derivatives(const grid_model *m); /* end-effector pose derivatives */
size_t grid_sp_work_second_order(const grid_model *m);   /* second-order RNEA derivatives */
size_t grid_sp_work_fd_second_order(const grid_model *m); /* second-order FD derivatives */
size_t grid_sp_work_ee_second_order(const grid_model *m); /* end-effector pose Hessian */

#endif
