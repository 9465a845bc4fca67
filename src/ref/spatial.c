/* Spatial algebra for the reference algorithms: transforms, 6D cross products, inertias, joints. */
#include <assert.h>
#include <math.h>
#include <string.h>
#include "spatial.h"

/* ---- 3D helpers ---- */

static void cross3(const double a[3], const double b[3], double out[3])
{
    out[0] = a[1] * b[2] - a[2] * b[1];
    out[1] = a[2] * b[0] - a[0] * b[2];
    out[2] = a[0] * b[1] - a[1] * b[0];
}

/* out = R * v */
static void rot_mul(const double R[9], const double v[3], double out[3])
{
    for (int r = 0; r < 3; r++)
        out[r] = R[3 * r] * v[0] + R[3 * r + 1] * v[1] + R[3 * r + 2] * v[2];
}

/* out = R^T * v */
static void rot_tmul(const double R[9], const double v[3], double out[3])
{
    for (int c = 0; c < 3; c++)
        out[c] = R[c] * v[0] + R[3 + c] * v[1] + R[6 + c] * v[2];
}

/* ---- transforms ---- */

void grid_sp_xform_load(const grid_transform *t, double x[12])
{
    memcpy(x, t->R, 9 * sizeof(double));
    memcpy(x + 9, t->p, 3 * sizeof(double));
}

void grid_sp_xform_identity(double x[12])
{
    memset(x, 0, 12 * sizeof(double));
    x[0] = x[4] = x[8] = 1.0;
}

void grid_sp_xform_compose(const double a[12], const double b[12], double out[12])
{
    /* rotation: Ra * Rb */
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++)
            out[3 * r + c] = a[3 * r] * b[c] + a[3 * r + 1] * b[3 + c] + a[3 * r + 2] * b[6 + c];
    /* translation: Ra * pb + pa */
    rot_mul(a, b + 9, out + 9);
    for (int k = 0; k < 3; k++) out[9 + k] += a[9 + k];
}

void grid_sp_xform_to_homogeneous(const double x[12], double h[16])
{
    for (int r = 0; r < 3; r++) {
        for (int c = 0; c < 3; c++) h[4 * r + c] = x[3 * r + c];
        h[4 * r + 3] = x[9 + r];
    }
    h[12] = h[13] = h[14] = 0.0;
    h[15] = 1.0;
}

void grid_sp_motion_act(const double x[12], const double m[6], double out[6])
{
    /* angular: R w; linear: R v + p x (R w) */
    double pxw[3];
    rot_mul(x, m + 3, out + 3);
    rot_mul(x, m, out);
    cross3(x + 9, out + 3, pxw);
    for (int k = 0; k < 3; k++) out[k] += pxw[k];
}

void grid_sp_motion_act_inv(const double x[12], const double m[6], double out[6])
{
    /* angular: R^T w; linear: R^T (v - p x w) */
    double pxw[3], d[3];
    cross3(x + 9, m + 3, pxw);
    for (int k = 0; k < 3; k++) d[k] = m[k] - pxw[k];
    rot_tmul(x, d, out);
    rot_tmul(x, m + 3, out + 3);
}

void grid_sp_force_act(const double x[12], const double f[6], double out[6])
{
    /* force: R f; torque: R n + p x (R f) */
    double pxf[3];
    rot_mul(x, f, out);
    rot_mul(x, f + 3, out + 3);
    cross3(x + 9, out, pxf);
    for (int k = 0; k < 3; k++) out[3 + k] += pxf[k];
}

void grid_sp_force_act_inv(const double x[12], const double f[6], double out[6])
{
    /* force: R^T f; torque: R^T (n - p x f) */
    double pxf[3], d[3];
    cross3(x + 9, f, pxf);
    for (int k = 0; k < 3; k++) d[k] = f[3 + k] - pxf[k];
    rot_tmul(x, f, out);
    rot_tmul(x, d, out + 3);
}

void grid_sp_motion_act_inv_matrix(const double x[12], double X[36])
{
    const double *R = x, *p = x + 9;
    const double px[9] = {0, -p[2], p[1], p[2], 0, -p[0], -p[1], p[0], 0};
    memset(X, 0, 36 * sizeof(double));
    for (int r = 0; r < 3; r++) {
        for (int c = 0; c < 3; c++) {
            /* R^T on the diagonal blocks */
            X[6 * r + c] = R[3 * c + r];
            X[6 * (r + 3) + c + 3] = R[3 * c + r];
            /* -R^T [p]x in the upper right block */
            double s = 0.0;
            for (int k = 0; k < 3; k++) s += R[3 * k + r] * px[3 * k + c];
            X[6 * r + c + 3] = -s;
        }
    }
}

/* ---- cross products ---- */

void grid_sp_motion_cross(const double v[6], const double m[6], double out[6])
{
    /* linear: w x m_lin + v_lin x m_ang; angular: w x m_ang */
    double t[3];
    cross3(v + 3, m, out);
    cross3(v, m + 3, t);
    for (int k = 0; k < 3; k++) out[k] += t[k];
    cross3(v + 3, m + 3, out + 3);
}

void grid_sp_force_cross(const double v[6], const double f[6], double out[6])
{
    /* force: w x f; torque: w x n + v_lin x f */
    double t[3];
    cross3(v + 3, f, out);
    cross3(v + 3, f + 3, out + 3);
    cross3(v, f, t);
    for (int k = 0; k < 3; k++) out[3 + k] += t[k];
}

/* ---- inertias and small matrices ---- */

void grid_sp_inertia_rate(const double Y[36], const double v[6], double dY[36])
{
    for (int c = 0; c < 6; c++) {
        double e[6] = {0}, Ye[6], a[6], vxe[6], b[6];
        e[c] = 1.0;
        grid_sp_mat6_vec(Y, e, Ye);
        grid_sp_force_cross(v, Ye, a);
        grid_sp_motion_cross(v, e, vxe);
        grid_sp_mat6_vec(Y, vxe, b);
        for (int r = 0; r < 6; r++) dY[6 * r + c] = a[r] - b[r];
    }
}

void grid_sp_inertia_matrix(const grid_inertia *in, double I[36])
{
    const double m = in->mass, *c = in->com;
    const double cx[9] = {0, -c[2], c[1], c[2], 0, -c[0], -c[1], c[0], 0};
    memset(I, 0, 36 * sizeof(double));
    for (int r = 0; r < 3; r++) {
        I[6 * r + r] = m;
        for (int col = 0; col < 3; col++) {
            /* coupling blocks: -m [c]x upper right, m [c]x lower left */
            I[6 * r + col + 3] = -m * cx[3 * r + col];
            I[6 * (r + 3) + col] = m * cx[3 * r + col];
            /* rotational block about the origin: I_com + m [c]x [c]x^T */
            double s = 0.0;
            for (int k = 0; k < 3; k++) s += cx[3 * r + k] * cx[3 * col + k];
            I[6 * (r + 3) + col + 3] = in->I_com[3 * r + col] + m * s;
        }
    }
}

void grid_sp_mat6_mul(const double A[36], const double B[36], double C[36])
{
    for (int r = 0; r < 6; r++)
        for (int c = 0; c < 6; c++) {
            double s = 0.0;
            for (int k = 0; k < 6; k++) s += A[6 * r + k] * B[6 * k + c];
            C[6 * r + c] = s;
        }
}

/* M[r0.., c0..] = sign [a]x */
static void skew_into(const double a[3], double sign, double *M, int r0, int c0)
{
    const double s[9] = {0, -a[2], a[1], a[2], 0, -a[0], -a[1], a[0], 0};
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++) M[6 * (r0 + r) + c0 + c] = sign * s[3 * r + c];
}

void grid_sp_motion_cross_matrix(const double s[6], double M[36])
{
    memset(M, 0, 36 * sizeof *M);
    skew_into(s + 3, 1.0, M, 0, 0);
    skew_into(s, 1.0, M, 0, 3);
    skew_into(s + 3, 1.0, M, 3, 3);
}

void grid_sp_force_cross_matrix(const double f[6], double M[36])
{
    memset(M, 0, 36 * sizeof *M);
    skew_into(f, -1.0, M, 0, 3);
    skew_into(f, -1.0, M, 3, 0);
    skew_into(f + 3, -1.0, M, 3, 3);
}

void grid_sp_inertia_to_parent(const double x[12], const double I_child[36], double I_parent[36])
{
    double X[36], IX[36];
    grid_sp_motion_act_inv_matrix(x, X);
    grid_sp_mat6_mul(I_child, X, IX);
    /* X^T (I X) */
    for (int r = 0; r < 6; r++)
        for (int c = 0; c < 6; c++) {
            double s = 0.0;
            for (int k = 0; k < 6; k++) s += X[6 * k + r] * IX[6 * k + c];
            I_parent[6 * r + c] = s;
        }
}

void grid_sp_mat6_vec(const double A[36], const double b[6], double out[6])
{
    for (int r = 0; r < 6; r++) {
        double s = 0.0;
        for (int k = 0; k < 6; k++) s += A[6 * r + k] * b[k];
        out[r] = s;
    }
}

int grid_sp_small_inverse(int n, const double *A, double *Ainv)
{
    double a[36], inv[36];
    memcpy(a, A, (size_t)(n * n) * sizeof(double));
    memset(inv, 0, sizeof inv);
    for (int k = 0; k < n; k++) inv[n * k + k] = 1.0;
    for (int col = 0; col < n; col++) {
        /* pick the largest pivot in this column */
        int piv = col;
        for (int r = col + 1; r < n; r++)
            if (fabs(a[n * r + col]) > fabs(a[n * piv + col])) piv = r;
        if (!(fabs(a[n * piv + col]) > 0.0)) {
            for (int k = 0; k < n * n; k++) Ainv[k] = NAN;
            return -1;
        }
        /* swap rows piv and col */
        if (piv != col)
            for (int c = 0; c < n; c++) {
                double t = a[n * piv + c]; a[n * piv + c] = a[n * col + c]; a[n * col + c] = t;
                t = inv[n * piv + c]; inv[n * piv + c] = inv[n * col + c]; inv[n * col + c] = t;
            }
        /* scale the pivot row, eliminate the column elsewhere */
        double d = 1.0 / a[n * col + col];
        for (int c = 0; c < n; c++) { a[n * col + c] *= d; inv[n * col + c] *= d; }
        for (int r = 0; r < n; r++) {
            if (r == col) continue;
            double f = a[n * r + col];
            if (f == 0.0) continue;
            for (int c = 0; c < n; c++) {
                a[n * r + c] -= f * a[n * col + c];
                inv[n * r + c] -= f * inv[n * col + c];
            }
        }
    }
    memcpy(Ainv, inv, (size_t)(n * n) * sizeof(double));
    return 0;
}

/* ---- joints ---- */

/* rotation by angle t about the unit axis a (Rodrigues: R = I + sin(t) [a]x + (1 - cos(t)) [a]x^2) */
static void axis_rotation(const double a[3], double t, double x[12])
{
    const double s = sin(t), c = cos(t), u = 1.0 - c;
    x[0] = c + u * a[0] * a[0];
    x[1] = u * a[0] * a[1] - s * a[2];
    x[2] = u * a[0] * a[2] + s * a[1];
    x[3] = u * a[0] * a[1] + s * a[2];
    x[4] = c + u * a[1] * a[1];
    x[5] = u * a[1] * a[2] - s * a[0];
    x[6] = u * a[0] * a[2] - s * a[1];
    x[7] = u * a[1] * a[2] + s * a[0];
    x[8] = c + u * a[2] * a[2];
}

/* the quaternion (x, y, z, w) divided by its norm as a rotation, with Eigen's operation order
   (Quaternion::toRotationMatrix); scaled by its largest component first, so the norm neither overflows
   nor underflows */
static void quaternion_rotation(const double *q, double x[12])
{
    const double mx = fmax(fmax(fabs(q[0]), fabs(q[1])), fmax(fabs(q[2]), fabs(q[3])));
    const double sx = q[0] / mx, sy = q[1] / mx, sz = q[2] / mx, sw = q[3] / mx;
    const double n = sqrt(sx * sx + sy * sy + sz * sz + sw * sw);
    const double qx = sx / n, qy = sy / n, qz = sz / n, qw = sw / n;
    const double tx = 2.0 * qx, ty = 2.0 * qy, tz = 2.0 * qz;
    const double twx = tx * qw, twy = ty * qw, twz = tz * qw;
    const double txx = tx * qx, txy = ty * qx, txz = tz * qx;
    const double tyy = ty * qy, tyz = tz * qy, tzz = tz * qz;
    x[0] = 1.0 - (tyy + tzz);
    x[1] = txy - twz;
    x[2] = txz + twy;
    x[3] = txy + twz;
    x[4] = 1.0 - (txx + tzz);
    x[5] = tyz - twx;
    x[6] = txz - twy;
    x[7] = tyz + twx;
    x[8] = 1.0 - (txx + tyy);
}

void grid_sp_joint_transform(const grid_joint *j, const double *q, double x[12])
{
    grid_sp_xform_identity(x);
    const double *a = j->axis;
    switch (j->type) {
    case GRID_JOINT_REVOLUTE:
        axis_rotation(a, q[0], x);
        break;
    case GRID_JOINT_PRISMATIC:
        /* translation along the axis */
        for (int k = 0; k < 3; k++) x[9 + k] = q[0] * a[k];
        break;
    case GRID_JOINT_FREE:
        /* position, then the normalised quaternion */
        quaternion_rotation(q + 3, x);
        for (int k = 0; k < 3; k++) x[9 + k] = q[k];
        break;
    case GRID_JOINT_PLANAR: {
        /* q = [x, y, theta]: a turn by theta about the normal, a translation x e1 + y e2 in the plane */
        double e1[3], e2[3];
        grid_plane_basis(a, e1, e2);
        axis_rotation(a, q[2], x);
        for (int k = 0; k < 3; k++) x[9 + k] = q[0] * e1[k] + q[1] * e2[k];
        break;
    }
    case GRID_JOINT_SPHERICAL:
        quaternion_rotation(q, x);
        break;
    case GRID_JOINT_NTYPES:
        assert(0);
        break;
    }
}

void grid_sp_joint_subspace(const grid_joint *j, double *S)
{
    grid_joint_subspace(j->type, j->axis, S);
}

/* ---- shared kinematic pass ---- */

void grid_sp_placements(const grid_model *m, const double *q, double *liMi, double *oMi)
{
    for (int i = 0; i < m->nb; i++) {
        const grid_joint *j = &m->bodies[i].joint;
        double place[12], motion[12];
        /* liMi = placement * M_J(q) */
        grid_sp_xform_load(&j->placement, place);
        grid_sp_joint_transform(j, q + j->iq, motion);
        grid_sp_xform_compose(place, motion, liMi + 12 * i);
        /* oMi = oM_parent * liMi */
        if (j->parent < 0)
            memcpy(oMi + 12 * i, liMi + 12 * i, 12 * sizeof(double));
        else
            grid_sp_xform_compose(oMi + 12 * j->parent, liMi + 12 * i, oMi + 12 * i);
    }
}

void grid_sp_accelerations(const grid_model *m, const double *q, const double *v, const double *a, double *liMi,
                           double *oMi, double *vel, double *acc)
{
    grid_sp_placements(m, q, liMi, oMi);
    const double a_world[6] = {0.0, 0.0, -m->gravity, 0.0, 0.0, 0.0};
    const double v_world[6] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    for (int i = 0; i < m->nb; i++) {
        const grid_joint *j = &m->bodies[i].joint;
        double S[36], vJ[6] = {0}, aJ[6] = {0}, t[6];
        grid_sp_joint_subspace(j, S);
        for (int r = 0; r < 6; r++)
            for (int c = 0; c < j->nv; c++) {
                if (v) vJ[r] += S[j->nv * r + c] * v[j->iv + c];
                if (a) aJ[r] += S[j->nv * r + c] * a[j->iv + c];
            }
        const double *vp = j->parent < 0 ? v_world : vel + 6 * j->parent;
        const double *ap = j->parent < 0 ? a_world : acc + 6 * j->parent;
        double *vi = vel + 6 * i, *ai = acc + 6 * i;
        /* v_i = X v_parent + S qd; a_i = X a_parent + S qdd + v_i x (S qd) */
        grid_sp_motion_act_inv(liMi + 12 * i, vp, vi);
        for (int r = 0; r < 6; r++) vi[r] += vJ[r];
        grid_sp_motion_act_inv(liMi + 12 * i, ap, ai);
        grid_sp_motion_cross(vi, vJ, t);
        for (int r = 0; r < 6; r++) ai[r] += aJ[r] + t[r];
    }
}

void grid_sp_velocities(const grid_model *m, const double *q, const double *v, double *liMi, double *oMi, double *vel)
{
    grid_sp_placements(m, q, liMi, oMi);
    for (int i = 0; i < m->nb; i++) {
        const grid_joint *j = &m->bodies[i].joint;
        double S[36], vJ[6] = {0}, *vi = vel + 6 * i;
        grid_sp_joint_subspace(j, S);
        for (int r = 0; r < 6; r++)
            for (int c = 0; c < j->nv; c++) vJ[r] += S[j->nv * r + c] * v[j->iv + c];
        if (j->parent < 0) {
            memcpy(vi, vJ, sizeof vJ);
        } else {
            grid_sp_motion_act_inv(liMi + 12 * i, vel + 6 * j->parent, vi);
            for (int r = 0; r < 6; r++) vi[r] += vJ[r];
        }
    }
}
