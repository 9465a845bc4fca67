/* Inertia helpers for merging welded links: URDF inertial to body axes, change of frame, exact sum. */
#ifndef GRID_INERTIA_MERGE_H
#define GRID_INERTIA_MERGE_H

#include "grid/model.h"

/* inertia of a URDF <inertial> (com, rpy axes, six moments) written in body axes */
grid_inertia mb_inertia_from_urdf(double mass, const double com[3], const double rpy[3],
                                  const double moments[6]);

/* the same inertia seen from a frame where the inertia's frame sits at X */
grid_inertia mb_inertia_transform(const grid_transform *X, const grid_inertia *in);

/* a + b (both in one frame): total mass, combined com, parallel-axis theorem */
grid_inertia mb_inertia_add(const grid_inertia *a, const grid_inertia *b);

#endif
