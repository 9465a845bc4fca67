/* The parsed robot description: appending links and joints with their defaults, and freeing it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "robot_desc.h"

/* grow an array of elem-sized items to hold one more; 0 on failure */
static int grow(void **items, int count, int *cap, size_t elem)
{
    if (count < *cap) return 1;
    int ncap = *cap ? *cap * 2 : 16;
    void *p = realloc(*items, (size_t)ncap * elem);
    if (!p) return 0;
    *items = p;
    *cap = ncap;
    return 1;
}

grid_link_desc *grid_robot_desc_add_link(grid_robot_desc *r)
{
    if (!grow((void **)&r->links, r->nlinks, &r->links_cap, sizeof *r->links)) return NULL;
    grid_link_desc *l = &r->links[r->nlinks++];
    memset(l, 0, sizeof *l);
    return l;
}

grid_joint_desc *grid_robot_desc_add_joint(grid_robot_desc *r)
{
    if (!grow((void **)&r->joints, r->njoints, &r->joints_cap, sizeof *r->joints)) return NULL;
    grid_joint_desc *j = &r->joints[r->njoints++];
    memset(j, 0, sizeof *j);
    // urdf defaults: axis along x, no limits, no dynamics
    j->axis[0] = 1.0;
    j->lower = j->upper = j->effort = j->velocity = NAN;
    j->mimic_multiplier = 1.0;
    return j;
}

void grid_robot_desc_free(grid_robot_desc *r)
{
    if (!r) return;
    for (int i = 0; i < r->nlinks; i++) free(r->links[i].name);
    for (int i = 0; i < r->njoints; i++) {
        grid_joint_desc *j = &r->joints[i];
        free(j->name);
        free(j->parent);
        free(j->child);
        free(j->mimic_joint);
    }
    free(r->links);
    free(r->joints);
    free(r->name);
    memset(r, 0, sizeof *r);
}
