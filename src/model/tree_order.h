/* The link tree of a parsed robot: name lookup, parent/child resolution, the root, and Pinocchio's visiting order. */
#ifndef GRID_TREE_ORDER_H
#define GRID_TREE_ORDER_H

#include "robot_desc.h"

typedef struct {
    grid_name_index links, joints;
    int *jparent, *jchild;  /* per joint: parent / child link index */
    int *parent_joint;      /* per link: the joint whose child it is, -1 for the root */
    int *child_start;       /* per link: its joints below are child_list[child_start[l] .. child_start[l+1]) */
    int *child_list;        /* joint indices grouped by parent link, each group in joint-name order */
    int *order;             /* every link in depth-first preorder from the root */
    int norder;
    int root;
} grid_tree_order;

/* check names (present, unique), references, single parent, one root, no cycles; fill t.
   Children are visited in joint-name order, as Pinocchio's URDF parser does (urdfdom keeps
   joints in a std::map keyed by name). On failure t is freed and err names the element. */
int grid_tree_order_build(grid_tree_order *t, const grid_robot_desc *r, grid_error *err);

void grid_tree_order_free(grid_tree_order *t);

#endif
