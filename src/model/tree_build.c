/* Model assembly from the ordered link tree: bodies and joints, fixed-joint merging, q/v offsets, frames. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "robot_desc.h"
#include "inertia_merge.h"
#include "rigid_math.h"
#include "tree_order.h"

#define ROOT_JOINT_NAME "root_joint"

/* working state of one build */
typedef struct {
    const grid_robot_desc *r;
    const grid_model_options *o;
    grid_error *err;
    grid_tree_order t;
} builder;

static int nomem(builder *b)
{
    return grid_error_set(b->err, GRID_ERR_NOMEM, 0, 0, "out of memory while building the model");
}

static int is_moving(grid_joint_kind k)
{
    return k != GRID_JD_FIXED;
}

/* the joint type of a moving URDF joint kind */
static grid_joint_type joint_type_of(grid_joint_kind k)
{
    switch (k) {
    case GRID_JD_PRISMATIC: return GRID_JOINT_PRISMATIC;
    case GRID_JD_FLOATING: return GRID_JOINT_FREE;
    case GRID_JD_PLANAR: return GRID_JOINT_PLANAR;
    case GRID_JD_SPHERICAL: return GRID_JOINT_SPHERICAL;
    default: return GRID_JOINT_REVOLUTE;
    }
}

/* a body's joint from the URDF joint that creates it; widths from the joint-model table */
static void fill_joint(grid_joint *gj, const grid_joint_desc *jd)
{
    gj->type = joint_type_of(jd->kind);
    const grid_joint_model *jm = grid_joint_model_of(gj->type);
    gj->continuous = jd->kind == GRID_JD_CONTINUOUS;
    for (int i = 0; i < 3; i++) gj->axis[i] = jm->axis == GRID_AXIS_NONE ? 0.0 : jd->axis[i];
    gj->nq = jm->nq;
    gj->nv = jm->nv;
    gj->lower = gj->upper = NAN;
    gj->has_limits = 0;
    /* position limits mean something for one-coordinate joints only (URDF ignores them elsewhere) */
    if (jd->kind == GRID_JD_REVOLUTE || jd->kind == GRID_JD_PRISMATIC) {
        gj->lower = jd->lower;
        gj->upper = jd->upper;
        gj->has_limits = jd->has_lower && jd->has_upper;
    }
    gj->effort = jd->effort;
    gj->velocity = jd->velocity;
    gj->damping = jd->damping;
    gj->friction = jd->friction;
}

/* the free-flyer joint that floating_base inserts above the root link */
static void fill_root_joint(grid_joint *gj)
{
    gj->type = GRID_JOINT_FREE;
    gj->continuous = 0;
    gj->axis[0] = gj->axis[1] = gj->axis[2] = 0.0;
    gj->placement = mb_transform_identity();
    gj->parent = -1;
    gj->nq = grid_joint_model_of(GRID_JOINT_FREE)->nq;
    gj->nv = grid_joint_model_of(GRID_JOINT_FREE)->nv;
    gj->has_limits = 0;
    gj->lower = gj->upper = gj->effort = gj->velocity = NAN;
    gj->damping = gj->friction = 0.0;
}

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* bodies, joints, merged inertias and frames in preorder; link_body / link_X per link */
static int assemble(builder *b, grid_model *m, int *link_body, grid_transform *link_X, int *body_link)
{
    const grid_robot_desc *r = b->r;
    char n1[80];
    int has_floating = 0, nmoving = 0;
    for (int j = 0; j < r->njoints; j++) {
        if (r->joints[j].kind == GRID_JD_FLOATING) has_floating = 1;
        if (is_moving(r->joints[j].kind)) nmoving++;
    }
    int insert_root = b->o->floating_base && !has_floating;
    if (insert_root) {
        int j = grid_name_index_find(&b->t.joints, ROOT_JOINT_NAME);
        if (j >= 0)
            return grid_desc_error(b->err, GRID_ERR_URDF, r->joints[j].pos, "joint", r->joints[j].name,
                                   "floating_base adds a free-flyer joint named '" ROOT_JOINT_NAME
                                   "' but the robot already has a joint with that name");
    }

    int nb = nmoving + insert_root;
    m->bodies = calloc((size_t)(nb > 0 ? nb : 1), sizeof *m->bodies);
    m->frames = calloc((size_t)r->nlinks, sizeof *m->frames);
    if (!m->bodies || !m->frames) return nomem(b);
    m->nb = nb;
    m->nframes = r->nlinks;
    m->floating_base = insert_root || has_floating;

    // the root link: the world, or body 0 under the inserted free-flyer
    int nbody = 0;
    link_body[b->t.root] = -1;
    link_X[b->t.root] = mb_transform_identity();
    if (insert_root) {
        grid_body *body = &m->bodies[nbody];
        body->name = dup_str(r->links[b->t.root].name);
        body->joint.name = dup_str(ROOT_JOINT_NAME);
        if (!body->name || !body->joint.name) return nomem(b);
        fill_root_joint(&body->joint);
        body_link[nbody] = b->t.root;
        link_body[b->t.root] = nbody++;
    }

    // every other link in preorder: a moving joint starts a body, a fixed one welds to the parent's
    for (int i = 1; i < b->t.norder; i++) {
        int c = b->t.order[i];
        int j = b->t.parent_joint[c];
        int p = b->t.jparent[j];
        const grid_joint_desc *jd = &r->joints[j];
        grid_transform origin = mb_transform_from_xyz_rpy(jd->xyz, jd->rpy);
        grid_transform X = mb_transform_mul(&link_X[p], &origin);
        if (!is_moving(jd->kind)) {
            link_body[c] = link_body[p];
            link_X[c] = X;
            continue;
        }
        grid_body *body = &m->bodies[nbody];
        body->name = dup_str(r->links[c].name);
        body->joint.name = dup_str(jd->name);
        if (!body->name || !body->joint.name) return nomem(b);
        fill_joint(&body->joint, jd);
        body->joint.placement = X;
        body->joint.parent = link_body[p];
        body_link[nbody] = c;
        link_body[c] = nbody++;
        link_X[c] = mb_transform_identity();
    }

    // a floating joint from the file must be the single moving joint directly below the world
    for (int k = 0; k < nb; k++) {
        const grid_joint *gj = &m->bodies[k].joint;
        int misplaced = gj->type == GRID_JOINT_FREE && k != 0;
        int beside = has_floating && k != 0 && gj->parent == -1;
        if (misplaced || beside) {
            const grid_joint_desc *jd = NULL;
            for (int j = 0; j < r->njoints; j++)
                if (r->joints[j].kind == GRID_JD_FLOATING) { jd = &r->joints[j]; break; }
            if (misplaced) jd = &r->joints[b->t.parent_joint[body_link[k]]];
            return grid_desc_error(b->err, GRID_ERR_UNSUPPORTED, jd->pos, "joint", jd->name,
                                   "a floating joint is supported only as the one moving joint directly "
                                   "below the root link '%s' (every other moving joint must be below it)",
                                   grid_name_for_message(r->links[b->t.root].name, n1, sizeof n1));
        }
    }

    // q and v layouts, mimic joints coupled to their leaders (mimic.c)
    int rc = grid_model_couple_mimics(m, r, &b->t.joints, b->o->ignore_mimic, b->err);
    if (rc != GRID_OK) return rc;

    // merged inertias: every link with an <inertial> adds to its body, in preorder
    for (int i = 0; i < b->t.norder; i++) {
        int l = b->t.order[i];
        const grid_link_desc *ld = &r->links[l];
        if (link_body[l] < 0 || !ld->has_inertial) continue;
        grid_inertia own = mb_inertia_from_urdf(ld->mass, ld->com, ld->rpy, ld->inertia);
        grid_inertia in_body = mb_inertia_transform(&link_X[l], &own);
        grid_inertia *acc = &m->bodies[link_body[l]].inertia;
        *acc = mb_inertia_add(acc, &in_body);
    }

    // one frame per link, in file order
    for (int l = 0; l < r->nlinks; l++) {
        grid_frame *f = &m->frames[l];
        f->name = dup_str(r->links[l].name);
        if (!f->name) return nomem(b);
        int j = b->t.parent_joint[l];
        if (j >= 0 || insert_root) {
            f->joint = dup_str(j >= 0 ? r->joints[j].name : ROOT_JOINT_NAME);
            if (!f->joint) return nomem(b);
        }
        f->body = link_body[l];
        f->placement = link_X[l];
    }
    return GRID_OK;
}

int grid_model_build(const grid_robot_desc *r, const grid_model_options *opts,
                     grid_model **out, grid_error *err)
{
    grid_model_options defaults = grid_model_options_default();
    if (!opts) opts = &defaults;
    if (!out) return grid_error_set(err, GRID_ERR_ARG, 0, 0, "out (the model pointer) is NULL");
    *out = NULL;
    if (!isfinite(opts->gravity) || fabs(opts->gravity) > GRID_GRAVITY_MAX)
        return grid_error_set(err, GRID_ERR_ARG, 0, 0,
                              "gravity must be a finite number of at most %g m/s^2 in magnitude (got %g): larger "
                              "values overflow the dynamics' products of masses, lengths and accelerations",
                              GRID_GRAVITY_MAX, opts->gravity);
    if (opts->ee_joint_names && opts->n_ee_joint_names < 0)
        return grid_error_set(err, GRID_ERR_ARG, 0, 0, "n_ee_joint_names is negative (%d)", opts->n_ee_joint_names);
    if (r->nlinks == 0)
        return grid_desc_error(err, GRID_ERR_URDF, r->pos, "robot", r->name, "the robot has no <link> elements");

    builder b;
    memset(&b, 0, sizeof b);
    b.r = r;
    b.o = opts;
    b.err = err;
    int rc = grid_tree_order_build(&b.t, r, err);
    if (rc != GRID_OK) return rc;

    int nl = r->nlinks, nj = r->njoints;
    int *link_body = malloc((size_t)nl * sizeof *link_body);
    int *body_link = malloc((size_t)(nj + 1) * sizeof *body_link);
    grid_transform *link_X = malloc((size_t)nl * sizeof *link_X);
    grid_model *m = calloc(1, sizeof *m);
    if (!link_body || !body_link || !link_X || !m)
        rc = nomem(&b);
    else if ((rc = assemble(&b, m, link_body, link_X, body_link)) == GRID_OK) {
        m->gravity = opts->gravity;
        m->robot_name = dup_str(r->name ? r->name : "");
        if (!m->robot_name) rc = nomem(&b);
        else rc = grid_model_pick_end_effectors(m, r, &b.t.joints, body_link, b.t.root, opts, err);
    }

    grid_tree_order_free(&b.t);
    free(link_body);
    free(body_link);
    free(link_X);
    if (rc != GRID_OK) {
        grid_model_free(m);
        return rc;
    }
    *out = m;
    return GRID_OK;
}
