/* The reference cotangent of q from a cotangent of the local tangent (the transpose of the gradients' q map), joint by joint. */
#include <math.h>
#include "ref_rows.h"

/* dquat's cotangent (xyzw) of the angular velocity 2 vec(conj(u) du), for u = quat / |quat| and inv = 1 / |quat|:
   (I - u u^T) A^T c inv with A^T c = 2 [w c + v x c; -v . c] */
static void quat_pullback(const double u[4], double inv, const double *c, double *out)
{
    const double g[4] = {2 * (u[3] * c[0] + u[1] * c[2] - u[2] * c[1]), 2 * (u[3] * c[1] + u[2] * c[0] - u[0] * c[2]),
                         2 * (u[3] * c[2] + u[0] * c[1] - u[1] * c[0]), -2 * (u[0] * c[0] + u[1] * c[1] + u[2] * c[2])};
    const double d = u[0] * g[0] + u[1] * g[1] + u[2] * g[2] + u[3] * g[3];
    for (int k = 0; k < 4; k++) out[k] = (g[k] - u[k] * d) * inv;
}

/* u = quat / |quat|; returns 1 / |quat| */
static double unit(const double *quat, double u[4])
{
    const double inv = 1 / sqrt(quat[0] * quat[0] + quat[1] * quat[1] + quat[2] * quat[2] + quat[3] * quat[3]);
    for (int k = 0; k < 4; k++) u[k] = quat[k] * inv;
    return inv;
}

/* in: q (nq), the tangent's cotangent (nv), both the user's; out: q's cotangent (nq). A free flyer's position
   cotangent is R c_lin (its tangent is R^T dp), a planar joint's R(theta) [c_x, c_y]. */
void ref_row_q_pullback(const grid_model *m, const double *const *in, double *const *out, const int *attr,
                        double *work)
{
    (void)attr;
    (void)work;
    const double *q = in[0], *c = in[1];
    double *o = out[0];
    for (int b = 0; b < m->nb; b++) {
        const grid_joint *j = &m->bodies[b].joint;
        if (j->mimic || j->nq == 0) continue;
        const double *qj = q + j->uq, *cj = c + j->uv;
        double *oj = o + j->uq;
        switch (j->type) {
        case GRID_JOINT_FREE: {
            double u[4];
            const double inv = unit(qj + 3, u);
            const double t[3] = {2 * (u[1] * cj[2] - u[2] * cj[1]), 2 * (u[2] * cj[0] - u[0] * cj[2]),
                                 2 * (u[0] * cj[1] - u[1] * cj[0])};
            oj[0] = cj[0] + u[3] * t[0] + (u[1] * t[2] - u[2] * t[1]);
            oj[1] = cj[1] + u[3] * t[1] + (u[2] * t[0] - u[0] * t[2]);
            oj[2] = cj[2] + u[3] * t[2] + (u[0] * t[1] - u[1] * t[0]);
            quat_pullback(u, inv, cj + 3, oj + 3);
            break;
        }
        case GRID_JOINT_SPHERICAL: {
            double u[4];
            const double inv = unit(qj, u);
            quat_pullback(u, inv, cj, oj);
            break;
        }
        case GRID_JOINT_PLANAR: {
            const double cs = cos(qj[2]), sn = sin(qj[2]);
            oj[0] = cs * cj[0] - sn * cj[1];
            oj[1] = sn * cj[0] + cs * cj[1];
            oj[2] = cj[2];
            break;
        }
        default:
            oj[0] = cj[0];
            break;
        }
    }
}
