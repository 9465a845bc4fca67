/* The kinematic-tree robot model: sizes, bodies in parents-first order, joints, inertias, frames. */
#ifndef GRID_MODEL_H
#define GRID_MODEL_H

#include <stddef.h>
#include "grid/error.h"
#include "grid/joints.h"

#ifdef __cplusplus
extern "C" {
#endif

/* a rigid transform; x_parent = R * x_child + p, R row-major 3x3 */
typedef struct {
    double R[9];
    double p[3];
} grid_transform;

/* spatial inertia of a body, expressed in the body (joint) frame */
typedef struct {
    double mass;
    double com[3];    /* centre of mass in the body frame */
    double I_com[9];  /* rotational inertia about the centre of mass, body axes, symmetric row-major */
} grid_inertia;


/* the joint that connects a body to its parent body */
typedef struct {
    char *name;                /* URDF joint name; "root_joint" for the free-flyer */
    grid_joint_type type;
    int continuous;            /* 1 for a URDF continuous joint */
    double axis[3];            /* unit axis in the joint frame: rotation, translation or plane normal (joints.h) */
    grid_transform placement;  /* joint frame in the parent body frame at q = 0 (fixed joints folded in) */
    int parent;                /* parent body index, -1 for the world */
    int iq, nq;                /* offset and width in the full q (every joint its own coordinates, body order) */
    int iv, nv;                /* offset and width in the full v */
    int uq, uv;                /* offset in the user's q and v (independent coordinates only); a mimic joint's
                                  are its leader's */
    int mimic;                 /* 1: a coupled <mimic> joint: q = mimic_multiplier * q[leader] + mimic_offset,
                                  v and a = mimic_multiplier * those of the leader; no coordinates of its own */
    int mimic_leader;          /* body of the independent joint it follows (chains resolved), -1 if not a mimic */
    double mimic_multiplier, mimic_offset;
    int has_limits;            /* <limit> lower/upper were given */
    double lower, upper, effort, velocity;
    double damping, friction;  /* from <dynamics>, 0 when absent (kept, not used by the algorithms) */
} grid_joint;

/* a body: the child link of a moving joint plus every link welded to it by fixed joints */
typedef struct {
    char *name;           /* the child link's name */
    grid_joint joint;     /* the joint into this body */
    grid_inertia inertia; /* merged inertia of every link welded to the body, in the body frame */
} grid_body;

/* a named frame: every URDF link is one */
typedef struct {
    char *name;                /* link name */
    char *joint;               /* name of the joint whose child this link is; NULL for the root link */
    int body;                  /* body the frame is attached to; -1 = the world (fixed-base root and links welded to it) */
    grid_transform placement;  /* the frame in the body frame (or world frame when body == -1) */
} grid_frame;

/* the whole model; immutable once built, freed with grid_model_free */
typedef struct {
    char *robot_name;
    int nq, nv, nb;            /* configuration and tangent widths the user passes (independent coordinates),
                                  bodies (base included on a floating base) */
    int nq_full, nv_full;      /* the widths with every joint its own coordinates (== nq, nv without mimic joints):
                                  what the tree algorithms run on (src/ref/coupling.c maps between the two) */
    int nmimic;                /* coupled joints */
    int floating_base;
    double gravity;            /* signed acceleration along world z (Pinocchio: -9.81) */
    grid_body *bodies;         /* nb bodies, every parent before its children */
    int nframes;
    grid_frame *frames;        /* one per URDF link, in file order of the links */
    int nee;
    int *ee_frames;            /* end-effector frame ids (indices into frames) */
} grid_model;

/* the largest |gravity| a model takes (about 1e5 g: past any physical use, far below where float32 products of
   robot-sized masses, lengths and accelerations overflow) */
#define GRID_GRAVITY_MAX 1e6

/* options for building a model out of a parsed URDF */
typedef struct {
    int floating_base;               /* add a free-flyer root joint named "root_joint" */
    double gravity;                  /* default -9.81 */
    int ignore_mimic;                /* 1: treat mimic joints as independent joints (Pinocchio's default);
                                        0: couple them (Pinocchio's mimic=True layout) */
    const char *const *ee_joint_names; /* NULL = every leaf body; else joint names whose child link frames are the EEs */
    int n_ee_joint_names;
} grid_model_options;

/* the defaults above: fixed base, gravity -9.81, mimic joints coupled, leaf end effectors */
grid_model_options grid_model_options_default(void);

void grid_model_free(grid_model *m);

/* index of the frame with this name, -1 if none */
int grid_model_frame_index(const grid_model *m, const char *name);

/* joint data in q order (LOWER, UPPER: position limits; +-inf where a coordinate is unbounded, e.g. continuous
   joints, and [-1, 1] for quaternion components) or v order (VELOCITY, EFFORT: +inf when the URDF gives none;
   DAMPING, FRICTION from <dynamics>, 0 when absent); out holds nq or nv doubles */
typedef enum {
    GRID_JOINT_DATA_LOWER, GRID_JOINT_DATA_UPPER, GRID_JOINT_DATA_VELOCITY, GRID_JOINT_DATA_EFFORT,
    GRID_JOINT_DATA_DAMPING, GRID_JOINT_DATA_FRICTION
} grid_joint_data_kind;
void grid_model_joint_data(const grid_model *m, grid_joint_data_kind kind, double *out);

/* the sum of the bodies' masses (links welded to the world on a fixed base are not in a body: Pinocchio's
   computeTotalMass) */
double grid_model_total_mass(const grid_model *m);

/* the elimination tree of the coupled mass matrix G^T M G over the user's nv velocity coordinates: lambda[k] < k
   (-1: none) such that every nonzero of row k below the diagonal, and the fill L^T D L adds, lies on k's
   ancestors; without mimic joints it is the tree's own (the previous coordinate of the joint, or the parent's
   last). GRID_ERR_NOMEM, else 0 */
int grid_model_coupled_tree(const grid_model *m, int *lambda);

/* number of moving joints including the free-flyer (== nb) */
static inline int grid_model_njoints(const grid_model *m) { return m->nb; }

#ifdef __cplusplus
}
#endif
#endif
