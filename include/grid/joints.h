/* The joint-model table: one row per joint type (widths, what q holds, how it is normalised, its motion subspace). */
#ifndef GRID_JOINTS_H
#define GRID_JOINTS_H

#ifdef __cplusplus
extern "C" {
#endif

/* joint types after parsing: continuous is a revolute joint without limits; fixed joints never appear
   (they are merged); FREE is the floating-base root. Adding a type is one row of grid_joint_models
   (src/model/joint_models.c) plus its transform in src/ref/spatial.c and src/emit/kinematics.c. */
typedef enum {
    GRID_JOINT_REVOLUTE = 0,
    GRID_JOINT_PRISMATIC = 1,
    GRID_JOINT_FREE = 2,
    GRID_JOINT_PLANAR = 3,
    GRID_JOINT_SPHERICAL = 4,
    GRID_JOINT_NTYPES
} grid_joint_type;

/* what a joint's (unit) axis means */
typedef enum {
    GRID_AXIS_NONE = 0,    /* ignored (free-flyer, spherical) */
    GRID_AXIS_ROTATION,    /* q is the angle about it (revolute) */
    GRID_AXIS_TRANSLATION, /* q is the displacement along it (prismatic) */
    GRID_AXIS_NORMAL       /* the normal of the joint's plane (planar) */
} grid_axis_role;

/* The motion of every type is X_J(q) = (R(q), p(q)) in the joint frame and v_J = S v with S constant in the
   joint (child) frame, so no type has a bias term S'(q) v. */
typedef struct {
    const char *name;     /* as RobotHandle.joint_types reports it ("continuous" for an unlimited revolute) */
    int nq, nv;           /* widths in q and v */
    int trans;            /* offset in the joint's q of a translation: 3 (free) or 2 (planar) entries; -1 none */
    int angle;            /* offset of an angle about the axis (revolute, planar theta); -1 none */
    int quat;             /* offset of a quaternion (x, y, z, w), divided by its norm before use; -1 none */
    grid_axis_role axis;
    const char *q_layout; /* the joint's q, for docs and messages */
    const char *v_layout; /* the joint's v */
} grid_joint_model;

/* the row of a type; NULL for a value outside the enum */
const grid_joint_model *grid_joint_model_of(int type);

/* the motion subspace S (6 x nv, row-major, rows [linear; angular]) of a joint of this type with this axis:
   revolute [0; a], prismatic [a; 0], free-flyer I6, spherical [0; I3],
   planar [e1 e2 0; 0 0 n] with (e1, e2) = grid_plane_basis(n) */
void grid_joint_subspace(int type, const double axis[3], double *S);

/* the in-plane axes of a planar joint with unit normal n: e1, e2 orthonormal, e1 x e2 = n, continuous
   except at n = -z, and e1 = x, e2 = y for n = z (Duff et al. 2017, "Building an orthonormal basis, revisited") */
void grid_plane_basis(const double n[3], double e1[3], double e2[3]);

/* the neutral configuration of one joint (zeros, the identity quaternion) into q[0 .. nq) */
void grid_joint_neutral(int type, double *q);

#ifdef __cplusplus
}
#endif
#endif
