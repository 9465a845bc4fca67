/* The joint data a URDF carries, laid out in q / v order: position, velocity and effort limits, damping, friction, mass. */
#include <math.h>
#include "grid/model.h"

void grid_model_joint_data(const grid_model *m, grid_joint_data_kind kind, double *out)
{
    for (int b = 0; b < m->nb; b++) {
        const grid_joint *j = &m->bodies[b].joint;
        const grid_joint_model *jm = grid_joint_model_of(j->type);
        if (j->mimic) continue; /* no coordinates of its own: its data is in the URDF, not in q / v */
        const int one = j->type == GRID_JOINT_REVOLUTE || j->type == GRID_JOINT_PRISMATIC;
        switch (kind) {
        case GRID_JOINT_DATA_LOWER:
        case GRID_JOINT_DATA_UPPER: {
            const double s = kind == GRID_JOINT_DATA_LOWER ? -1.0 : 1.0;
            for (int i = 0; i < j->nq; i++) out[j->uq + i] = s * INFINITY;
            /* a quaternion's components lie in [-1, 1] */
            if (jm->quat >= 0)
                for (int i = 0; i < 4; i++) out[j->uq + jm->quat + i] = s;
            if (one && j->has_limits && !j->continuous) out[j->uq] = kind == GRID_JOINT_DATA_LOWER ? j->lower : j->upper;
            break;
        }
        case GRID_JOINT_DATA_VELOCITY:
        case GRID_JOINT_DATA_EFFORT: {
            const double x = kind == GRID_JOINT_DATA_VELOCITY ? j->velocity : j->effort;
            for (int i = 0; i < j->nv; i++) out[j->uv + i] = one && isfinite(x) ? x : INFINITY;
            break;
        }
        case GRID_JOINT_DATA_DAMPING:
        case GRID_JOINT_DATA_FRICTION:
            /* a <dynamics> value holds for every coordinate of its joint (Pinocchio's reading) */
            for (int i = 0; i < j->nv; i++)
                out[j->uv + i] = j->type == GRID_JOINT_FREE ? 0.0 : kind == GRID_JOINT_DATA_DAMPING ? j->damping : j->friction;
            break;
        }
    }
}

double grid_model_total_mass(const grid_model *m)
{
    double s = 0.0;
    for (int b = 0; b < m->nb; b++) s += m->bodies[b].inertia.mass;
    return s;
}
