/* Rigid-transform helpers for model building: rpy rotations, transform products, rotating a symmetric matrix. */
#ifndef GRID_RIGID_MATH_H
#define GRID_RIGID_MATH_H

#include "grid/model.h"

/* URDF rotation R = Rz(yaw) * Ry(pitch) * Rx(roll), row-major */
void mb_rpy_to_matrix(const double rpy[3], double R[9]);

/* y = R x */
void mb_mat_vec(const double R[9], const double x[3], double y[3]);

/* out = R S R^T for a symmetric S, symmetrised */
void mb_rotate_symmetric(const double R[9], const double S[9], double out[9]);

/* the identity transform */
grid_transform mb_transform_identity(void);

/* transform from URDF <origin xyz rpy> */
grid_transform mb_transform_from_xyz_rpy(const double xyz[3], const double rpy[3]);

/* a * b: first b, then a (x_a = a.R (b.R x + b.p) + a.p) */
grid_transform mb_transform_mul(const grid_transform *a, const grid_transform *b);

#endif
