/* Inertia helpers for merging welded links: URDF inertial to body axes, change of frame, exact sum. */
#include <string.h>
#include "inertia_merge.h"
#include "rigid_math.h"

grid_inertia mb_inertia_from_urdf(double mass, const double com[3], const double rpy[3],
                                  const double moments[6])
{
    // moments are ixx ixy ixz iyy iyz izz
    double S[9] = {moments[0], moments[1], moments[2],
                   moments[1], moments[3], moments[4],
                   moments[2], moments[4], moments[5]};
    double R[9];
    mb_rpy_to_matrix(rpy, R);
    grid_inertia out;
    out.mass = mass;
    for (int i = 0; i < 3; i++) out.com[i] = com[i];
    mb_rotate_symmetric(R, S, out.I_com);
    return out;
}

grid_inertia mb_inertia_transform(const grid_transform *X, const grid_inertia *in)
{
    grid_inertia out;
    out.mass = in->mass;
    mb_mat_vec(X->R, in->com, out.com);
    for (int i = 0; i < 3; i++) out.com[i] += X->p[i];
    mb_rotate_symmetric(X->R, in->I_com, out.I_com);
    return out;
}

grid_inertia mb_inertia_add(const grid_inertia *a, const grid_inertia *b)
{
    grid_inertia out;
    double m = a->mass + b->mass;
    out.mass = m;

    // combined centre of mass; a massless side keeps the other's
    if (a->mass == 0.0) {
        memcpy(out.com, b->com, sizeof out.com);
    } else if (b->mass == 0.0) {
        memcpy(out.com, a->com, sizeof out.com);
    } else {
        for (int i = 0; i < 3; i++) out.com[i] = (a->mass * a->com[i] + b->mass * b->com[i]) / m;
    }

    // rotational inertias add, plus the parallel-axis term mu*(|d|^2 I - d d^T), mu = ma mb / m
    for (int k = 0; k < 9; k++) out.I_com[k] = a->I_com[k] + b->I_com[k];
    if (a->mass != 0.0 && b->mass != 0.0) {
        double d[3] = {a->com[0] - b->com[0], a->com[1] - b->com[1], a->com[2] - b->com[2]};
        double mu = a->mass * b->mass / m;
        double dd = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) out.I_com[3 * i + j] += mu * ((i == j ? dd : 0.0) - d[i] * d[j]);
    }
    return out;
}
