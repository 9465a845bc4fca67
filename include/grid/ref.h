/* Float64 reference algorithms: generic loops over the model, written for readability; the oracle. */
#ifndef GRID_REF_H
#define GRID_REF_H

#include <stddef.h>
#include "grid/model.h"
#include "grid/abi.h"
#include "grid/signature.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Doubles of scratch one state needs; every function below takes `work` of this size. */
size_t grid_ref_work_size(const grid_model *m);

/* Single-state algorithms on the FULL coordinates (every joint its own, m->nq_full / m->nv_full wide: the user's
   own when the model has no coupled mimic joints). q: floating base quaternion [qx qy qz qw] at q[3..6],
   normalised internally; v/a/u tangent-wide, fext 6*nb body-local [force; torque] or NULL, a may be NULL
   (zero). Matrices are nv x nv row-major. grid_ref_batch maps the user's coordinates onto them. */
void grid_ref_rnea(const grid_model *m, const double *q, const double *v, const double *a,
                   const double *fext, double *tau, double *work);
void grid_ref_nonlinear_effects(const grid_model *m, const double *q, const double *v,
                                double *tau, double *work);
void grid_ref_gravity(const grid_model *m, const double *q, double *tau, double *work);
void grid_ref_crba(const grid_model *m, const double *q, double *M, double *work);
void grid_ref_minv(const grid_model *m, const double *q, double *Minv, double *work); /* Carpentier's direct algorithm */
void grid_ref_forward_dynamics(const grid_model *m, const double *q, const double *v, const double *u,
                               const double *fext, double *qdd, double *work); /* M^-1 (u - c) */
void grid_ref_aba(const grid_model *m, const double *q, const double *v, const double *u,
                  const double *fext, double *qdd, double *work);
void grid_ref_forward_kinematics(const grid_model *m, const double *q, double *oMi /* nb*16 */, double *work);
void grid_ref_frame_placement(const grid_model *m, const double *q, int frame, double *oMf /* 16 */, double *work);
void grid_ref_end_effector_pose(const grid_model *m, const double *q, double *pose /* 6*nee */, double *work);
/* [x y z roll pitch yaw] of a target [frame id, offset x y z]: the point at the offset in the frame's axes, and the
   frame's rotation R (row-major); -1 with NaN poses when target[0] is not a frame id (an integer below nframes) */
int grid_ref_target_pose(const grid_model *m, const double *q, const double target[4], double pose[6], double R[9],
                         double *work);
void grid_ref_frame_jacobian(const grid_model *m, const double *q, int frame, int reference_frame,
                             double *J /* 6*nv row-major */, double *work);
/* First-order derivatives, out nv x 2nv row-major [d/dq | d/dqd] with the q columns along each joint's local
   tangent (q (+) dq as pinocchio.integrate): of RNEA at (q, v, a, fext) (computeRNEADerivatives; a may be NULL),
   and of forward dynamics qdd(q, v, u, fext) (computeABADerivatives: -M^-1 [dtau/dq | dtau/dqd] at qdd) */
void grid_ref_rnea_derivatives(const grid_model *m, const double *q, const double *v, const double *a,
                               const double *fext, double *out, double *work);
/* d[xyz, rpy]/dq of every end effector (6*nee x nv row-major, local tangent): the LOCAL_WORLD_ALIGNED frame
   Jacobian's linear rows and E(rpy)^-1 times its angular rows (infinite at pitch = +-pi/2) */
void grid_ref_ee_pose_derivatives(const grid_model *m, const double *q, double *out, double *work);
void grid_ref_fd_derivatives(const grid_model *m, const double *q, const double *v, const double *u,
                             const double *fext, double *out, double *work);
/* Second-order derivatives of RNEA at (q, v, a, fext) (a, fext may be NULL): four (nv, nv, nv) row-major tensors one
   after another in out, [i][j][k] of d2tau_i/dq_j dq_k, d2tau_i/dv_j dv_k, d2tau_i/dq_j dv_k and dM_ij/dq_k, the q
   indices along each joint's local tangent: Pinocchio's ComputeRNEASecondOrderDerivatives (IDSVA), in its index
   order, on the full coordinates */
void grid_ref_rnea_second_derivatives(const grid_model *m, const double *q, const double *v, const double *a,
                                      const double *fext, double *out, double *work);
/* Second-order derivatives of forward dynamics qdd(q, v, u, fext): four (nv, nv, nv) tensors, [i][j][k] of
   d2qdd_i/dq_j dq_k, d2qdd_i/dv_j dv_k, d2qdd_i/dq_j dv_k and d2qdd_i/du_j dq_k = dMinv_ij/dq_k, by differentiating
   rnea(q, v, qdd(q, v, u)) = u twice (the second-order RNEA derivatives at qdd, M^-1 and its first-order ones) */
void grid_ref_fd_second_derivatives(const grid_model *m, const double *q, const double *v, const double *u,
                                    const double *fext, double *out, double *work);
/* Second derivatives of the end-effector poses (6 nee, nv, nv) row-major, [r][j][k] = d/dq_k of
   end_effector_pose_gradient's [r][j] (local tangent; rpy rows infinite at pitch = +-pi/2) */
void grid_ref_ee_pose_second_derivatives(const grid_model *m, const double *q, double *out, double *work);

/* Mimic couplings: the user's q / v (or a) into the full ones; an output in full coordinates back to the user's
   (each dimension d with tangent[d] != 0 is a tangent one: G^T x, G^T M G, J G), body_of_v the body of each full
   tangent coordinate (nv_full ints, filled once by grid_ref_body_of_v); and the solve of a symmetric positive-definite n x n A (overwritten by its L D L^T) for nrhs columns of
   B (n x nrhs, row-major, overwritten by A^-1 B) */
void grid_ref_expand_q(const grid_model *m, const double *q, double *qf);
void grid_ref_expand_v(const grid_model *m, const double *v, double *vf);
void grid_ref_body_of_v(const grid_model *m, int *body_of_v);
void grid_ref_project(const grid_model *m, int rank, const int *shape, const int *tangent, const double *xf,
                      double *x, const int *body_of_v);
void grid_ref_spd_solve(int n, double *A, double *B, int nrhs);

/* Batched entry point with the grid_call ABI: runs row `algo` of the signature table over call->batch
   states with inputs/outputs in `dtype` (float32 inputs are widened to float64 per state, results
   narrowed); the arguments are checked against the row (counts, required inputs, attribute ranges).
   Returns GRID_OK or GRID_ERR_ARG (unknown algo, bad frame). Allocates its own scratch. A row whose answer
   depends on the precision it stands for (a rank decision with a tolerance per dtype: osc_inertia) answers for
   `dtype`; grid_ref_batch_as answers for rule_dtype with arrays in dtype (the self-check: a float32 library against
   float64 arrays of the float32 rule). */
int grid_ref_batch(const grid_model *m, int algo, int dtype, const grid_call *call);
int grid_ref_batch_as(const grid_model *m, int algo, int dtype, int rule_dtype, const grid_call *call);

#ifdef __cplusplus
}
#endif
#endif
