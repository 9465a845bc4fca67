/* A robot as its file states it (links, joints, source positions) and the builder that makes a grid_model of it. */
#ifndef GRID_ROBOT_DESC_H
#define GRID_ROBOT_DESC_H

#include <stddef.h>
#include "grid/error.h"
#include "grid/model.h"

/* where an element starts in the source text; 1-based, 0 when unknown */
typedef struct {
    int line;
    int column;
} grid_src_pos;

/* joint types as written (before fixed joints are merged away) */
typedef enum {
    GRID_JD_REVOLUTE = 0,
    GRID_JD_CONTINUOUS = 1,
    GRID_JD_PRISMATIC = 2,
    GRID_JD_FIXED = 3,
    GRID_JD_FLOATING = 4,
    GRID_JD_PLANAR = 5,
    GRID_JD_SPHERICAL = 6   /* type="spherical" or "ball" (Drake's extension) */
} grid_joint_kind;

/* one <link> */
typedef struct {
    char *name;
    grid_src_pos pos;
    int has_inertial;      /* an <inertial> was given; without it the link adds nothing */
    double mass;
    double com[3];         /* <inertial><origin xyz> in the link frame */
    double rpy[3];         /* <inertial><origin rpy>: axes the inertia tensor is written in */
    double inertia[6];     /* ixx ixy ixz iyy iyz izz about the com, in the rpy axes */
} grid_link_desc;

/* one <joint> */
typedef struct {
    char *name;
    grid_src_pos pos;
    grid_joint_kind kind;
    char *parent;          /* link names from <parent link> / <child link> */
    char *child;
    grid_src_pos parent_pos, child_pos;
    double xyz[3], rpy[3]; /* <origin>: child frame in the parent link frame */
    double axis[3];        /* unit axis (moving joints), default 1 0 0 */
    int has_lower, has_upper;
    double lower, upper, effort, velocity;  /* NAN when absent */
    double damping, friction;               /* 0 when absent */
    int has_mimic;
    char *mimic_joint;     /* leader joint name */
    double mimic_multiplier, mimic_offset;
    grid_src_pos mimic_pos;
} grid_joint_desc;

/* the whole description, in file order */
typedef struct {
    char *name;
    grid_src_pos pos;
    grid_link_desc *links;
    int nlinks, links_cap;
    grid_joint_desc *joints;
    int njoints, joints_cap;
} grid_robot_desc;

/* sorted name -> index lookup over an array of names */
typedef struct {
    const char **names; /* sorted */
    int *index;         /* original index of each sorted name */
    int n;
} grid_name_index;

/* build from n names taken from base + i*stride (a char* member of each element);
   on a duplicate name returns GRID_ERR_URDF after setting *dup_a < *dup_b to the two indices */
int grid_name_index_build(grid_name_index *ix, const void *base, size_t stride, size_t name_offset,
                          int n, int *dup_a, int *dup_b);
int grid_name_index_find(const grid_name_index *ix, const char *name);
void grid_name_index_free(grid_name_index *ix);

/* release everything the description owns (not the struct itself) */
void grid_robot_desc_free(grid_robot_desc *r);

/* append a zeroed link / joint with its defaults; NULL when out of memory */
grid_link_desc *grid_robot_desc_add_link(grid_robot_desc *r);
grid_joint_desc *grid_robot_desc_add_joint(grid_robot_desc *r);

/* validate the topology and build the model (bodies, joints, merged inertias, frames, end effectors) */
int grid_model_build(const grid_robot_desc *r, const grid_model_options *opts,
                     grid_model **out, grid_error *err);

/* fill m->nee / m->ee_frames from opts: leaf bodies when opts->ee_joint_names is NULL, else the
   child-link frames of the named joints; frames are indexed like r->links, body_link[k] is body k's link */
int grid_model_pick_end_effectors(grid_model *m, const grid_robot_desc *r, const grid_name_index *joints,
                                  const int *body_link, int root_link, const grid_model_options *opts,
                                  grid_error *err);

/* couple every <mimic> joint to its independent leader (unless ignore_mimic), checking the couplings (errors
   name the <mimic> element's line), and lay out the full and the user's q / v (grid_joint iq/iv, uq/uv) */
int grid_model_couple_mimics(grid_model *m, const grid_robot_desc *r, const grid_name_index *joints,
                             int ignore_mimic, grid_error *err);

/* copy s into buf for an error message: control bytes become '?', long names end in "..." */
const char *grid_name_for_message(const char *s, char *buf, size_t n);

/* set err to code at pos with the message "<tag name=\"name\"> line L: ..." (name NULL: "<tag> line L: ...") */
int grid_desc_error(grid_error *err, int code, grid_src_pos pos, const char *tag, const char *name,
                    const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 6, 7)))
#endif
    ;

#endif
