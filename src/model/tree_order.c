/* The link tree of a parsed robot: names resolved, one root, no cycles, children in Pinocchio's order. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tree_order.h"

/* the tree being filled and where errors go */
typedef struct {
    grid_tree_order t;
    const grid_robot_desc *r;
    grid_error *err;
} tree_ctx;

static int nomem(tree_ctx *b)
{
    return grid_error_set(b->err, GRID_ERR_NOMEM, 0, 0, "out of memory while ordering the link tree");
}

/* link and joint names: unique, and indexed for lookup */
static int index_names(tree_ctx *b)
{
    const grid_robot_desc *r = b->r;
    char n1[80];
    int a, d;
    int rc = grid_name_index_build(&b->t.links, r->links, sizeof *r->links,
                                   offsetof(grid_link_desc, name), r->nlinks, &a, &d);
    if (rc == GRID_ERR_URDF)
        return grid_desc_error(b->err, rc, r->links[d].pos, "link", r->links[d].name,
                               "duplicate link name '%s'; the first <link> with it is at line %d",
                               grid_name_for_message(r->links[d].name, n1, sizeof n1), r->links[a].pos.line);
    if (rc) return nomem(b);
    rc = grid_name_index_build(&b->t.joints, r->joints, sizeof *r->joints,
                               offsetof(grid_joint_desc, name), r->njoints, &a, &d);
    if (rc == GRID_ERR_URDF)
        return grid_desc_error(b->err, rc, r->joints[d].pos, "joint", r->joints[d].name,
                               "duplicate joint name '%s'; the first <joint> with it is at line %d",
                               grid_name_for_message(r->joints[d].name, n1, sizeof n1), r->joints[a].pos.line);
    if (rc) return nomem(b);
    return GRID_OK;
}

/* every joint names existing, distinct parent and child links; no link is the child of two joints */
static int resolve_joints(tree_ctx *b)
{
    const grid_robot_desc *r = b->r;
    char n1[80], n2[80];
    for (int l = 0; l < r->nlinks; l++) b->t.parent_joint[l] = -1;
    for (int j = 0; j < r->njoints; j++) {
        const grid_joint_desc *jd = &r->joints[j];
        int p = grid_name_index_find(&b->t.links, jd->parent);
        if (p < 0)
            return grid_desc_error(b->err, GRID_ERR_URDF, jd->parent_pos, "joint", jd->name,
                                   "<parent link=\"%s\"> names a link that does not exist",
                                   grid_name_for_message(jd->parent, n1, sizeof n1));
        int c = grid_name_index_find(&b->t.links, jd->child);
        if (c < 0)
            return grid_desc_error(b->err, GRID_ERR_URDF, jd->child_pos, "joint", jd->name,
                                   "<child link=\"%s\"> names a link that does not exist",
                                   grid_name_for_message(jd->child, n1, sizeof n1));
        if (p == c)
            return grid_desc_error(b->err, GRID_ERR_URDF, jd->pos, "joint", jd->name,
                                   "parent and child are the same link '%s' (a cycle)",
                                   grid_name_for_message(jd->child, n1, sizeof n1));
        if (b->t.parent_joint[c] >= 0) {
            const grid_joint_desc *first = &r->joints[b->t.parent_joint[c]];
            return grid_desc_error(b->err, GRID_ERR_URDF, jd->pos, "joint", jd->name,
                                   "link '%s' is already the child of joint '%s' (line %d); "
                                   "a link can have only one parent joint",
                                   grid_name_for_message(jd->child, n1, sizeof n1),
                                   grid_name_for_message(first->name, n2, sizeof n2), first->pos.line);
        }
        b->t.jparent[j] = p;
        b->t.jchild[j] = c;
        b->t.parent_joint[c] = j;
    }
    return GRID_OK;
}

/* the cycle reached by walking up from link l, as an error */
static int report_cycle(tree_ctx *b, int l)
{
    const grid_robot_desc *r = b->r;
    int *seen = calloc((size_t)r->nlinks, sizeof *seen);
    if (!seen) return nomem(b);
    // walk parents until a link repeats; that link is on the cycle
    int step = 1;
    while (!seen[l]) {
        seen[l] = step++;
        l = b->t.jparent[b->t.parent_joint[l]];
    }
    free(seen);

    char path[600] = "", n1[80];
    size_t len = 0;
    int start = l, count = 0;
    do {
        int w = snprintf(path + len, sizeof path - len, "'%s' <- ",
                         grid_name_for_message(r->links[l].name, n1, sizeof n1));
        if (w < 0 || (size_t)w >= sizeof path - len || count >= 6) break;
        len += (size_t)w;
        count++;
        l = b->t.jparent[b->t.parent_joint[l]];
    } while (l != start);
    if (l == start) snprintf(path + len, sizeof path - len, "'%s'",
                             grid_name_for_message(r->links[start].name, n1, sizeof n1));
    else snprintf(path + len, sizeof path - len, "...");
    const grid_joint_desc *jd = &r->joints[b->t.parent_joint[start]];
    return grid_desc_error(b->err, GRID_ERR_URDF, jd->pos, "joint", jd->name,
                           "the joints form a cycle (child <- parent): %s", path);
}

/* exactly one link that is no joint's child */
static int find_root(tree_ctx *b)
{
    const grid_robot_desc *r = b->r;
    int nroots = 0, first = -1, second = -1;
    for (int l = 0; l < r->nlinks; l++) {
        if (b->t.parent_joint[l] >= 0) continue;
        if (nroots == 0) first = l;
        else if (nroots == 1) second = l;
        nroots++;
    }
    if (nroots == 1) {
        b->t.root = first;
        return GRID_OK;
    }
    if (nroots == 0) return report_cycle(b, 0);

    // name a few of the roots
    char list[600] = "", n1[80];
    size_t len = 0;
    int shown = 0;
    for (int l = 0; l < r->nlinks && shown < 5; l++) {
        if (b->t.parent_joint[l] >= 0) continue;
        int w = snprintf(list + len, sizeof list - len, "%s'%s' (line %d)", shown ? ", " : "",
                         grid_name_for_message(r->links[l].name, n1, sizeof n1), r->links[l].pos.line);
        if (w < 0 || (size_t)w >= sizeof list - len) break;
        len += (size_t)w;
        shown++;
    }
    return grid_desc_error(b->err, GRID_ERR_URDF, r->links[second].pos, "link", r->links[second].name,
                           "the robot has %d root links (links that are no joint's child): %s%s; "
                           "a URDF tree has exactly one",
                           nroots, list, nroots > shown ? ", ..." : "");
}

/* joints sorted by (parent link, name) */
typedef struct {
    int parent;
    const char *name;
    int joint;
} child_key;

static int child_key_cmp(const void *a, const void *b)
{
    const child_key *x = a, *y = b;
    if (x->parent != y->parent) return (x->parent > y->parent) - (x->parent < y->parent);
    return strcmp(x->name, y->name);
}

/* children of every link, each list in joint-name order (Pinocchio's URDF order, std::map by name) */
static int sort_children(tree_ctx *b)
{
    const grid_robot_desc *r = b->r;
    int nj = r->njoints;
    child_key *keys = malloc((size_t)(nj > 0 ? nj : 1) * sizeof *keys);
    if (!keys) return nomem(b);
    for (int j = 0; j < nj; j++) {
        keys[j].parent = b->t.jparent[j];
        keys[j].name = r->joints[j].name;
        keys[j].joint = j;
    }
    qsort(keys, (size_t)nj, sizeof *keys, child_key_cmp);
    memset(b->t.child_start, 0, (size_t)(r->nlinks + 1) * sizeof *b->t.child_start);
    for (int j = 0; j < nj; j++) b->t.child_start[keys[j].parent + 1]++;
    for (int l = 0; l < r->nlinks; l++) b->t.child_start[l + 1] += b->t.child_start[l];
    for (int j = 0; j < nj; j++) b->t.child_list[j] = keys[j].joint;
    free(keys);
    return GRID_OK;
}

/* depth-first preorder from the root; links it cannot reach sit on a cycle */
static int walk_tree(tree_ctx *b)
{
    const grid_robot_desc *r = b->r;
    int *stack = malloc((size_t)(r->njoints > 0 ? r->njoints : 1) * sizeof *stack);
    if (!stack) return nomem(b);
    int top = 0;
    b->t.norder = 0;
    b->t.order[b->t.norder++] = b->t.root;
    for (int k = b->t.child_start[b->t.root + 1] - 1; k >= b->t.child_start[b->t.root]; k--)
        stack[top++] = b->t.child_list[k];
    while (top > 0) {
        int j = stack[--top];
        int c = b->t.jchild[j];
        b->t.order[b->t.norder++] = c;
        for (int k = b->t.child_start[c + 1] - 1; k >= b->t.child_start[c]; k--) stack[top++] = b->t.child_list[k];
    }
    free(stack);
    if (b->t.norder == r->nlinks) return GRID_OK;

    int *reached = calloc((size_t)r->nlinks, sizeof *reached);
    if (!reached) return nomem(b);
    for (int i = 0; i < b->t.norder; i++) reached[b->t.order[i]] = 1;
    int l = 0;
    while (reached[l]) l++;
    free(reached);
    return report_cycle(b, l);
}

void grid_tree_order_free(grid_tree_order *t)
{
    grid_name_index_free(&t->links);
    grid_name_index_free(&t->joints);
    free(t->jparent);
    free(t->jchild);
    free(t->parent_joint);
    free(t->child_start);
    free(t->child_list);
    free(t->order);
    memset(t, 0, sizeof *t);
}

int grid_tree_order_build(grid_tree_order *t, const grid_robot_desc *r, grid_error *err)
{
    tree_ctx b;
    memset(&b, 0, sizeof b);
    b.r = r;
    b.err = err;
    int nl = r->nlinks > 0 ? r->nlinks : 1, nj = r->njoints > 0 ? r->njoints : 1;
    b.t.jparent = malloc((size_t)nj * sizeof *b.t.jparent);
    b.t.jchild = malloc((size_t)nj * sizeof *b.t.jchild);
    b.t.parent_joint = malloc((size_t)nl * sizeof *b.t.parent_joint);
    b.t.child_start = malloc((size_t)(nl + 1) * sizeof *b.t.child_start);
    b.t.child_list = malloc((size_t)nj * sizeof *b.t.child_list);
    b.t.order = malloc((size_t)nl * sizeof *b.t.order);
    int rc;
    if (!b.t.jparent || !b.t.jchild || !b.t.parent_joint || !b.t.child_start || !b.t.child_list || !b.t.order)
        rc = nomem(&b);
    else if ((rc = index_names(&b)) == GRID_OK && (rc = resolve_joints(&b)) == GRID_OK &&
             (rc = find_root(&b)) == GRID_OK && (rc = sort_children(&b)) == GRID_OK)
        rc = walk_tree(&b);
    if (rc != GRID_OK) {
        grid_tree_order_free(&b.t);
        return rc;
    }
    *t = b.t;
    return GRID_OK;
}
