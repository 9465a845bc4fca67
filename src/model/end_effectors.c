/* End-effector choice: every leaf body by default, or the child-link frames of joints the caller names. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "robot_desc.h"

/* a few joint names, for an error message */
static void list_joints(const grid_robot_desc *r, char *buf, size_t n)
{
    char nb[80];
    size_t len = 0;
    buf[0] = '\0';
    int shown = 0;
    for (int j = 0; j < r->njoints && shown < 6; j++) {
        int w = snprintf(buf + len, n - len, "%s'%s'", shown ? ", " : "",
                         grid_name_for_message(r->joints[j].name, nb, sizeof nb));
        if (w < 0 || (size_t)w >= n - len) break;
        len += (size_t)w;
        shown++;
    }
    if (r->njoints > shown && len + 5 < n) snprintf(buf + len, n - len, ", ...");
    if (r->njoints == 0) snprintf(buf, n, "(the robot has no joints)");
}

int grid_model_pick_end_effectors(grid_model *m, const grid_robot_desc *r, const grid_name_index *joints,
                                  const int *body_link, int root_link, const grid_model_options *opts,
                                  grid_error *err)
{
    // default: bodies without a child body, in body order, at the body's own link frame
    if (!opts->ee_joint_names) {
        int *has_child = calloc((size_t)(m->nb > 0 ? m->nb : 1), sizeof *has_child);
        m->ee_frames = malloc((size_t)(m->nb > 0 ? m->nb : 1) * sizeof *m->ee_frames);
        if (!has_child || !m->ee_frames) {
            free(has_child);
            return grid_error_set(err, GRID_ERR_NOMEM, 0, 0, "out of memory choosing end effectors");
        }
        for (int k = 0; k < m->nb; k++)
            if (m->bodies[k].joint.parent >= 0) has_child[m->bodies[k].joint.parent] = 1;
        m->nee = 0;
        for (int k = 0; k < m->nb; k++)
            if (!has_child[k]) m->ee_frames[m->nee++] = body_link[k];
        free(has_child);
        return GRID_OK;
    }

    // named joints: the frame of each joint's child link (frames are indexed like links)
    int n = opts->n_ee_joint_names;
    m->ee_frames = malloc((size_t)(n > 0 ? n : 1) * sizeof *m->ee_frames);
    if (!m->ee_frames) return grid_error_set(err, GRID_ERR_NOMEM, 0, 0, "out of memory choosing end effectors");
    m->nee = 0;
    for (int i = 0; i < n; i++) {
        const char *name = opts->ee_joint_names[i];
        if (!name) return grid_error_set(err, GRID_ERR_ARG, 0, 0, "ee_joint_names[%d] is NULL", i);
        int j = grid_name_index_find(joints, name);
        int frame = -1;
        if (j >= 0) {
            // the joint's child link
            const char *child = r->joints[j].child;
            for (int l = 0; l < r->nlinks && frame < 0; l++)
                if (strcmp(r->links[l].name, child) == 0) frame = l;
        } else if (m->nb > 0 && m->bodies[0].joint.type == GRID_JOINT_FREE &&
                   strcmp(name, m->bodies[0].joint.name) == 0) {
            frame = root_link;
        }
        if (frame < 0) {
            char nb[80], rb[80], list[600];
            list_joints(r, list, sizeof list);
            return grid_error_set(err, GRID_ERR_ARG, 0, 0,
                                  "ee_joint_names: '%s' is not a joint of robot '%s'; its joints include %s",
                                  grid_name_for_message(name, nb, sizeof nb),
                                  grid_name_for_message(m->robot_name, rb, sizeof rb), list);
        }
        m->ee_frames[m->nee++] = frame;
    }
    return GRID_OK;
}
