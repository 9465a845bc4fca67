/* Reference kinematics: forward kinematics, frame placements, end-effector poses, frame Jacobians and their rates. */
#include <assert.h>
#include <math.h>
#include <string.h>
#include "ref_rows.h"
#include "spatial.h"

size_t grid_sp_work_kinematics(const grid_model *m)
{
    /* liMi and oMi of every body */
    return 24 * (size_t)m->nb;
}

size_t grid_sp_work_jacobian(const grid_model *m)
{
    /* the kinematics, and for the rate every body's local and world velocity */
    return grid_sp_work_kinematics(m) + 12 * (size_t)m->nb;
}

void grid_ref_forward_kinematics(const grid_model *m, const double *q, double *oMi, double *work)
{
    double *liMi = work, *oMx = work + 12 * (size_t)m->nb;
    grid_sp_placements(m, q, liMi, oMx);
    for (int i = 0; i < m->nb; i++) grid_sp_xform_to_homogeneous(oMx + 12 * i, oMi + 16 * i);
}

/* oMf of a valid frame from the body placements oMi */
static void frame_xform(const grid_model *m, const double *oMi, int frame, double oMf[12])
{
    const grid_frame *f = &m->frames[frame];
    double place[12];
    grid_sp_xform_load(&f->placement, place);
    if (f->body < 0)
        memcpy(oMf, place, sizeof place);
    else
        grid_sp_xform_compose(oMi + 12 * f->body, place, oMf);
}

void grid_ref_frame_placement(const grid_model *m, const double *q, int frame, double *oMf, double *work)
{
    /* an unknown frame gives zeros (grid_ref_batch refuses it before getting here) */
    if (frame < 0 || frame >= m->nframes) {
        memset(oMf, 0, 16 * sizeof(double));
        return;
    }
    double *liMi = work, *oMi = work + 12 * (size_t)m->nb, x[12];
    grid_sp_placements(m, q, liMi, oMi);
    frame_xform(m, oMi, frame, x);
    grid_sp_xform_to_homogeneous(x, oMf);
}

/* a * b rounded, never fused into an fma (a compiler may contract a * b - c * d where FMA is native) */
static double rounded_mul(double a, double b)
{
    volatile double p = a * b;
    return p;
}

/* roll, pitch, yaw with R = Rz(yaw) Ry(pitch) Rx(roll), exactly as pinocchio.rpy.matrixToRpy, bit for bit (every
   product rounded: at roll +-pi the sign comes from the rounding residual of s1 R02 - c1 R12):
   Eigen's eulerAngles(2, 1, 0) reversed, then pitch folded into [-pi/2, pi/2] */
static void matrix_to_rpy(const double R[9], double rpy[3])
{
    const double pi = 3.14159265358979323846;
#define RM(r, c) R[3 * (r) + (c)]
    /* Eigen's Graphics Gems IV branch for axes (2, 1, 0): first angle in [0, pi] */
    double a0 = atan2(RM(1, 0), RM(0, 0));
    const double c2 = sqrt(rounded_mul(RM(2, 2), RM(2, 2)) + rounded_mul(RM(2, 1), RM(2, 1)));
    double a1;
    if (a0 < 0.0) {
        a0 += pi;
        a1 = atan2(-RM(2, 0), -c2);
    } else {
        a1 = atan2(-RM(2, 0), c2);
    }
    const double s1 = sin(a0), c1 = cos(a0);
    const double a2 = atan2(rounded_mul(s1, RM(0, 2)) - rounded_mul(c1, RM(1, 2)),
                            rounded_mul(c1, RM(1, 1)) - rounded_mul(s1, RM(0, 1)));
#undef RM
    /* reversed: roll, pitch, yaw */
    double r = a2, p = a1, y = a0;
    /* pinocchio's fold of pitch into [-pi/2, pi/2] */
    if (p < -pi / 2) p += 2 * pi;
    if (p > pi / 2) {
        p = pi - p;
        if (r < 0.0) r += pi;
        else r -= pi;
        y -= pi;
    }
    rpy[0] = r;
    rpy[1] = p;
    rpy[2] = y;
}

void grid_ref_end_effector_pose(const grid_model *m, const double *q, double *pose, double *work)
{
    double *liMi = work, *oMi = work + 12 * (size_t)m->nb;
    grid_sp_placements(m, q, liMi, oMi);
    for (int k = 0; k < m->nee; k++) {
        double x[12];
        frame_xform(m, oMi, m->ee_frames[k], x);
        /* position, then roll pitch yaw */
        memcpy(pose + 6 * k, x + 9, 3 * sizeof(double));
        matrix_to_rpy(x, pose + 6 * k + 3);
    }
}

int grid_ref_target_pose(const grid_model *m, const double *q, const double target[4], double pose[6], double R[9],
                         double *work)
{
    const double f = target[0];
    if (!(f >= 0 && f < m->nframes && f == (double)(int)f)) {
        for (int k = 0; k < 6; k++) pose[k] = NAN;
        return -1;
    }
    double *liMi = work, *oMi = work + 12 * (size_t)m->nb, x[12];
    grid_sp_placements(m, q, liMi, oMi);
    frame_xform(m, oMi, (int)f, x);
    /* the point: the frame origin plus the offset in the frame's axes */
    for (int r = 0; r < 3; r++) pose[r] = x[9 + r] + x[3 * r] * target[1] + x[3 * r + 1] * target[2] + x[3 * r + 2] * target[3];
    matrix_to_rpy(x, pose + 3);
    memcpy(R, x, 9 * sizeof(double));
    return 0;
}

void ref_row_ee_pose_runtime(const grid_model *m, const double *const *in, double *const *out, const int *attr,
                             double *work)
{
    (void)attr;
    double R[9];
    grid_ref_target_pose(m, in[0], in[1], out[0], R, work);
}

/* [x y z qw qx qy qz] of the first end effector (identity without one): Eigen's Quaternion(Matrix3), qw made >= 0 */
void ref_row_fk_batched(const grid_model *m, const double *const *in, double *const *out, const int *attr, double *work)
{
    (void)attr;
    double x[12] = {1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0}, *pose = out[0], qt[4];
    if (m->nee > 0) {
        double *liMi = work, *oMi = work + 12 * (size_t)m->nb;
        grid_sp_placements(m, in[0], liMi, oMi);
        frame_xform(m, oMi, m->ee_frames[0], x);
    }
    const double *R = x, t = R[0] + R[4] + R[8];
    if (t > 0) {
        const double s = sqrt(t + 1.0);
        qt[0] = 0.5 * s;
        qt[1] = (R[7] - R[5]) * (0.5 / s);
        qt[2] = (R[2] - R[6]) * (0.5 / s);
        qt[3] = (R[3] - R[1]) * (0.5 / s);
    } else {
        int i = R[4] > R[0];
        if (R[8] > R[4 * i]) i = 2;
        const int j = (i + 1) % 3, k = (j + 1) % 3;
        const double s = sqrt(R[4 * i] - R[4 * j] - R[4 * k] + 1.0);
        qt[1 + i] = 0.5 * s;
        qt[0] = (R[3 * k + j] - R[3 * j + k]) * (0.5 / s);
        qt[1 + j] = (R[3 * j + i] + R[3 * i + j]) * (0.5 / s);
        qt[1 + k] = (R[3 * k + i] + R[3 * i + k]) * (0.5 / s);
    }
    const double sign = qt[0] < 0 ? -1.0 : 1.0;
    memcpy(pose, x + 9, 3 * sizeof(double));
    for (int c = 0; c < 4; c++) pose[3 + c] = sign * qt[c];
}

void grid_ref_frame_jacobian(const grid_model *m, const double *q, int frame, int reference_frame,
                             double *J, double *work)
{
    const int nv = m->nv_full;
    memset(J, 0, (size_t)(6 * nv) * sizeof(double));
    if (frame < 0 || frame >= m->nframes) return;
    if (reference_frame != GRID_WORLD && reference_frame != GRID_LOCAL &&
        reference_frame != GRID_LOCAL_WORLD_ALIGNED)
        return;
    /* a frame welded to the world does not move */
    const int body = m->frames[frame].body;
    if (body < 0) return;

    double *liMi = work, *oMi = work + 12 * (size_t)m->nb, oMf[12];
    grid_sp_placements(m, q, liMi, oMi);
    frame_xform(m, oMi, frame, oMf);

    /* walk from the frame's body to the root; each joint adds its columns */
    for (int k = body; k >= 0; k = m->bodies[k].joint.parent) {
        const grid_joint *j = &m->bodies[k].joint;
        double S[36];
        grid_sp_joint_subspace(j, S);
        for (int c = 0; c < j->nv; c++) {
            double s[6], w[6], col[6];
            for (int r = 0; r < 6; r++) s[r] = S[j->nv * r + c];
            /* the column as a spatial velocity at the world origin, world axes */
            grid_sp_motion_act(oMi + 12 * k, s, w);
            if (reference_frame == GRID_WORLD) {
                memcpy(col, w, sizeof col);
            } else if (reference_frame == GRID_LOCAL) {
                /* expressed in the frame */
                grid_sp_motion_act_inv(oMf, w, col);
            } else {
                /* velocity of the frame origin, world axes: v - p_f x w */
                const double *p = oMf + 9, *a = w + 3;
                col[0] = w[0] - (p[1] * a[2] - p[2] * a[1]);
                col[1] = w[1] - (p[2] * a[0] - p[0] * a[2]);
                col[2] = w[2] - (p[0] * a[1] - p[1] * a[0]);
                col[3] = a[0];
                col[4] = a[1];
                col[5] = a[2];
            }
            for (int r = 0; r < 6; r++) J[(size_t)nv * r + j->iv + c] = col[r];
        }
    }
}

/* dJ/dt along v of the frame Jacobian (getFrameJacobianTimeVariation): a world column c = oMi.act(S) of body i
   changes as ov_i x c, ov_i the body's world spatial velocity; LOCAL_WORLD_ALIGNED moves its lever arm with the
   frame origin (velocity pdot), LOCAL is fXo dJ_w - v_f x J_l with v_f = fXo ov of the frame's body */
void ref_row_frame_jacobian_dot(const grid_model *m, const double *const *in, double *const *out, const int *attr,
                                double *work)
{
    const int nv = m->nv_full, frame = attr[0], rf = attr[1];
    double *dJ = out[0];
    memset(dJ, 0, (size_t)(6 * nv) * sizeof(double));
    assert(frame >= 0 && frame < m->nframes && rf >= GRID_WORLD && rf <= GRID_LOCAL_WORLD_ALIGNED);
    const int body = m->frames[frame].body;
    if (body < 0) return;
    const size_t nb = (size_t)m->nb;
    double *liMi = work, *oMi = liMi + 12 * nb, *vel = oMi + 12 * nb, *ov = vel + 6 * nb, oMf[12];
    assert((size_t)(ov + 6 * nb - work) <= grid_ref_work_size(m));
    grid_sp_velocities(m, in[0], in[1], liMi, oMi, vel);
    for (int i = 0; i < m->nb; i++) grid_sp_motion_act(oMi + 12 * i, vel + 6 * i, ov + 6 * i);
    frame_xform(m, oMi, frame, oMf);
    const double *p = oMf + 9, *of = ov + 6 * body;
    /* the frame origin's velocity */
    double pdot[3] = {of[0] + of[4] * p[2] - of[5] * p[1], of[1] + of[5] * p[0] - of[3] * p[2],
                      of[2] + of[3] * p[1] - of[4] * p[0]};
    for (int k = body; k >= 0; k = m->bodies[k].joint.parent) {
        const grid_joint *j = &m->bodies[k].joint;
        double S[36];
        grid_sp_joint_subspace(j, S);
        for (int c = 0; c < j->nv; c++) {
            double s[6], w[6], dw[6], col[6];
            for (int r = 0; r < 6; r++) s[r] = S[j->nv * r + c];
            grid_sp_motion_act(oMi + 12 * k, s, w);
            grid_sp_motion_cross(ov + 6 * k, w, dw);
            if (rf == GRID_WORLD) {
                memcpy(col, dw, sizeof col);
            } else if (rf == GRID_LOCAL) {
                /* fXo (ov_k x w) - (fXo ov_f) x (fXo w) = fXo ((ov_k - ov_f) x w): exactly zero on the frame's body */
                double rel[6], x[6];
                for (int r = 0; r < 6; r++) rel[r] = ov[6 * k + r] - of[r];
                grid_sp_motion_cross(rel, w, x);
                grid_sp_motion_act_inv(oMf, x, col);
            } else {
                /* d/dt (v - p x w) = dv - p x dw - pdot x w */
                const double *a = w + 3, *da = dw + 3;
                col[0] = dw[0] - (p[1] * da[2] - p[2] * da[1]) - (pdot[1] * a[2] - pdot[2] * a[1]);
                col[1] = dw[1] - (p[2] * da[0] - p[0] * da[2]) - (pdot[2] * a[0] - pdot[0] * a[2]);
                col[2] = dw[2] - (p[0] * da[1] - p[1] * da[0]) - (pdot[0] * a[1] - pdot[1] * a[0]);
                memcpy(col + 3, da, 3 * sizeof(double));
            }
            for (int r = 0; r < 6; r++) dJ[(size_t)nv * r + j->iv + c] = col[r];
        }
    }
}
