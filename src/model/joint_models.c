/* The joint-model table's rows and the per-type facts derived from them (motion subspace, plane basis, neutral q). */
#include <assert.h>
#include <math.h>
#include <string.h>
#include "grid/joints.h"

static const grid_joint_model ROWS[GRID_JOINT_NTYPES] = {
    [GRID_JOINT_REVOLUTE] = {"revolute", 1, 1, -1, 0, -1, GRID_AXIS_ROTATION, "[angle]", "[angular rate]"},
    [GRID_JOINT_PRISMATIC] = {"prismatic", 1, 1, -1, -1, -1, GRID_AXIS_TRANSLATION, "[displacement]", "[rate]"},
    [GRID_JOINT_FREE] = {"free", 7, 6, 0, -1, 3, GRID_AXIS_NONE, "[x, y, z, qx, qy, qz, qw]",
                         "[v_lin (3), omega (3)], both in the joint frame"},
    [GRID_JOINT_PLANAR] = {"planar", 3, 3, 0, 2, -1, GRID_AXIS_NORMAL, "[x, y, theta] (x, y along e1, e2)",
                           "[vx, vy, omega] in the joint frame"},
    [GRID_JOINT_SPHERICAL] = {"spherical", 4, 3, -1, -1, 0, GRID_AXIS_NONE, "[qx, qy, qz, qw]",
                              "[omega (3)] in the joint frame"},
};

const grid_joint_model *grid_joint_model_of(int type)
{
    return type >= 0 && type < GRID_JOINT_NTYPES ? &ROWS[type] : NULL;
}

void grid_plane_basis(const double n[3], double e1[3], double e2[3])
{
    const double sign = copysign(1.0, n[2]);
    const double a = -1.0 / (sign + n[2]);
    const double b = n[0] * n[1] * a;
    e1[0] = 1.0 + sign * n[0] * n[0] * a;
    e1[1] = sign * b;
    e1[2] = -sign * n[0];
    e2[0] = b;
    e2[1] = sign + n[1] * n[1] * a;
    e2[2] = -n[1];
}

void grid_joint_subspace(int type, const double axis[3], double *S)
{
    const grid_joint_model *jm = grid_joint_model_of(type);
    assert(jm);
    const int nv = jm->nv;
    memset(S, 0, (size_t)(6 * nv) * sizeof *S);
    switch ((grid_joint_type)type) {
    case GRID_JOINT_REVOLUTE:
        for (int k = 0; k < 3; k++) S[3 + k] = axis[k];
        break;
    case GRID_JOINT_PRISMATIC:
        for (int k = 0; k < 3; k++) S[k] = axis[k];
        break;
    case GRID_JOINT_FREE:
        for (int k = 0; k < 6; k++) S[6 * k + k] = 1.0;
        break;
    case GRID_JOINT_PLANAR: {
        double e1[3], e2[3];
        grid_plane_basis(axis, e1, e2);
        for (int k = 0; k < 3; k++) {
            S[nv * k + 0] = e1[k];
            S[nv * k + 1] = e2[k];
            S[nv * (3 + k) + 2] = axis[k];
        }
        break;
    }
    case GRID_JOINT_SPHERICAL:
        for (int k = 0; k < 3; k++) S[nv * (3 + k) + k] = 1.0;
        break;
    case GRID_JOINT_NTYPES:
        break;
    }
}

void grid_joint_neutral(int type, double *q)
{
    const grid_joint_model *jm = grid_joint_model_of(type);
    assert(jm);
    for (int i = 0; i < jm->nq; i++) q[i] = 0.0;
    if (jm->quat >= 0) q[jm->quat + 3] = 1.0;
}
