/* Symbolic kinematics shared by every algorithm: joint transforms, liMi, oMi, subspaces, frame changes. */
#ifndef GRID_EMIT_KINEMATICS_H
#define GRID_EMIT_KINEMATICS_H

#include "spatial.h"

typedef struct {
    sym_graph *g;
    const em_model *em;
    sxf *XJ;   /* joint transform M_J(q) per body */
    sxf *X;    /* liMi = placement * M_J(q) per body */
    sxf *oM;   /* oMi per body, after ek_world */
    ek_body *view; /* the literal view of every body (the model accessor of the unrolled schedule) */
} ek_kin;

/* joint transforms and liMi of every body from the nq symbolic coordinates q (q NULL: the views only);
   -1 when out of memory */
int ek_kin_init(ek_kin *k, sym_graph *g, const em_model *em, const sv *q);
/* oMi of every body; -1 when out of memory */
int ek_world(ek_kin *k);
void ek_kin_free(ek_kin *k);

/* the rotation of body b's revolute joint from s = sin(q), c = cos(q), as the joint transform builds it */
void ek_axis_rotation(sym_graph *g, const ek_body *b, sv s, sv c, sv R[9]);
/* the joint transform M_J(q) of body b from its coordinates q (b's nq entries) */
void ek_joint_transform(sym_graph *g, const ek_body *b, const sv *q, sxf *X);

/* S x (x has the body's nv entries) and S^T f */
void ek_joint_motion(sym_graph *g, const ek_body *b, const sv *x, sv out[6]);
void ek_joint_project(sym_graph *g, const ek_body *b, const sv f[6], sv *out);

/* a 6x6 inertia-like matrix and a rigid inertia from body i's frame to its parent's:
   through the joint transform first, then the constant placement, so both fold separately */
void ek_mat6_to_parent(ek_kin *k, int i, const sv M[36], sv out[36]);
void ek_sci_to_parent(ek_kin *k, int i, const sci *Y, sci *out);

/* the readable block label of body i ("body 3: link 'x' (joint 'y'), <what>") */
void ek_body_comment(sym_graph *g, const em_model *em, int i, const char *what);

/* allocation helper for the builders: zeroed n * size bytes (n may be 0), NULL on failure */
void *ek_calloc(size_t n, size_t size);

#endif
