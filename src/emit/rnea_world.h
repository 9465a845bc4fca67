/* The world-frame pass the RNEA derivatives share (algo_rnea_grad.c): per-body buffers, the forward pass and the subtree sums. */
#ifndef GRID_EMIT_RNEA_WORLD_H
#define GRID_EMIT_RNEA_WORLD_H

#include "program.h"
#include "spatial.h"

enum { EA_YW = 13 }; /* a rigid inertia in a buffer: m, h (3), I (9) */

/* the per-body buffers: oM, v, a, f, Y (13), D (36), and the columns (6 x nv, by column) J, dV, dA, dAv */
typedef struct {
    int OM, VEL, ACC, F, Y, D, J, DV, DA, DAV;
} ea_world_bufs;

ea_world_bufs ea_world_buffers(ep_prog *p);
/* the forward pass: per body oM, v, a, f, Y, D, and the columns J, dV = v_l x J, dA = a_l x J + v_l x dV,
   dAv = (v_l + v) x J, in world axes about the root; with UG >= 0 (the VJP) also UG_i = sum of J_j g_j over i and its
   ancestors j, and SP, SQ zeroed */
void ea_world_forward(ep_prog *p, const ea_world_bufs *B, int has_a, int has_fext, int UG, int SP, int SQ);
/* backward pass, at body i: the subtree sums Yc, Dc, F (the children have added theirs) ... */
void ea_world_subtree_sums(ep_prog *p, const ea_world_bufs *B, sci *Yc, sv Dc[36], sv Fc[6]);
/* ... and added into the parent's (a root has none) */
void ea_world_add_to_parent(ep_prog *p, const ea_world_bufs *B, const sci *Yc, const sv Dc[36], const sv Fc[6]);
/* column c of var's slot of a per-body buffer of 6 x nv columns */
void ea_world_col(ep_prog *p, int buf, int var, int c, sv x[6]);

#endif
