/* The reference function of every signature row that has its own: the row's arguments to a single-state algorithm. */
#include "ref_rows.h"

void ref_row_rnea(const grid_model *m, const double *const *in, double *const *out, const int *attr, double *work)
{
    (void)attr;
    grid_ref_rnea(m, in[0], in[1], in[2], in[3], out[0], work);
}

void ref_row_nle(const grid_model *m, const double *const *in, double *const *out, const int *attr, double *work)
{
    (void)attr;
    grid_ref_nonlinear_effects(m, in[0], in[1], out[0], work);
}

void ref_row_gravity(const grid_model *m, const double *const *in, double *const *out, const int *attr, double *work)
{
    (void)attr;
    grid_ref_gravity(m, in[0], out[0], work);
}

void ref_row_crba(const grid_model *m, const double *const *in, double *const *out, const int *attr, double *work)
{
    (void)attr;
    grid_ref_crba(m, in[0], out[0], work);
}

void ref_row_minv(const grid_model *m, const double *const *in, double *const *out, const int *attr, double *work)
{
    (void)attr;
    grid_ref_minv(m, in[0], out[0], work);
}

void ref_row_fd(const grid_model *m, const double *const *in, double *const *out, const int *attr, double *work)
{
    (void)attr;
    grid_ref_forward_dynamics(m, in[0], in[1], in[2], in[3], out[0], work);
}

void ref_row_aba(const grid_model *m, const double *const *in, double *const *out, const int *attr, double *work)
{
    (void)attr;
    grid_ref_aba(m, in[0], in[1], in[2], in[3], out[0], work);
}

void ref_row_fk(const grid_model *m, const double *const *in, double *const *out, const int *attr, double *work)
{
    (void)attr;
    grid_ref_forward_kinematics(m, in[0], out[0], work);
}

void ref_row_ee_pose(const grid_model *m, const double *const *in, double *const *out, const int *attr, double *work)
{
    (void)attr;
    grid_ref_end_effector_pose(m, in[0], out[0], work);
}

void ref_row_frame_jacobian(const grid_model *m, const double *const *in, double *const *out, const int *attr,
                               double *work)
{
    grid_ref_frame_jacobian(m, in[0], attr[0], attr[1], out[0], work);
}

void ref_row_rnea_grad(const grid_model *m, const double *const *in, double *const *out, const int *attr,
                          double *work)
{
    (void)attr;
    grid_ref_rnea_derivatives(m, in[0], in[1], in[2], in[3], out[0], work);
}

void ref_row_fd_grad(const grid_model *m, const double *const *in, double *const *out, const int *attr,
                        double *work)
{
    (void)attr;
    grid_ref_fd_derivatives(m, in[0], in[1], in[2], in[3], out[0], work);
}

void ref_row_ee_pose_grad(const grid_model *m, const double *const *in, double *const *out, const int *attr,
                             double *work)
{
    (void)attr;
    grid_ref_ee_pose_derivatives(m, in[0], out[0], work);
}

