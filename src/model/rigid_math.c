/* Rigid-transform helpers for model building: rpy rotations, transform products, rotating a symmetric matrix. */
#include <math.h>
#include <string.h>
#include "rigid_math.h"

void mb_rpy_to_matrix(const double rpy[3], double R[9])
{
    double cr = cos(rpy[0]), sr = sin(rpy[0]);
    double cp = cos(rpy[1]), sp = sin(rpy[1]);
    double cy = cos(rpy[2]), sy = sin(rpy[2]);
    R[0] = cy * cp; R[1] = cy * sp * sr - sy * cr; R[2] = cy * sp * cr + sy * sr;
    R[3] = sy * cp; R[4] = sy * sp * sr + cy * cr; R[5] = sy * sp * cr - cy * sr;
    R[6] = -sp;     R[7] = cp * sr;                R[8] = cp * cr;
}

grid_transform mb_transform_identity(void)
{
    grid_transform X;
    memset(&X, 0, sizeof X);
    X.R[0] = X.R[4] = X.R[8] = 1.0;
    return X;
}

grid_transform mb_transform_from_xyz_rpy(const double xyz[3], const double rpy[3])
{
    grid_transform X;
    mb_rpy_to_matrix(rpy, X.R);
    for (int i = 0; i < 3; i++) X.p[i] = xyz[i];
    return X;
}

/* y = R x */
void mb_mat_vec(const double R[9], const double x[3], double y[3])
{
    for (int i = 0; i < 3; i++) y[i] = R[3 * i] * x[0] + R[3 * i + 1] * x[1] + R[3 * i + 2] * x[2];
}

/* C = A B (3x3) */
static void mat_mul(const double A[9], const double B[9], double C[9])
{
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            C[3 * i + j] = A[3 * i] * B[j] + A[3 * i + 1] * B[3 + j] + A[3 * i + 2] * B[6 + j];
}

/* out = R S R^T, symmetrised */
void mb_rotate_symmetric(const double R[9], const double S[9], double out[9])
{
    double RS[9], Rt[9], T[9];
    mat_mul(R, S, RS);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) Rt[3 * i + j] = R[3 * j + i];
    mat_mul(RS, Rt, T);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) out[3 * i + j] = 0.5 * (T[3 * i + j] + T[3 * j + i]);
}

grid_transform mb_transform_mul(const grid_transform *a, const grid_transform *b)
{
    grid_transform X;
    mat_mul(a->R, b->R, X.R);
    mb_mat_vec(a->R, b->p, X.p);
    for (int i = 0; i < 3; i++) X.p[i] += a->p[i];
    return X;
}
