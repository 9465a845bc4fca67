/* grid_model lifetime and lookups: default options, freeing a model, frame index by name. */
#include <stdlib.h>
#include <string.h>
#include "grid/model.h"

grid_model_options grid_model_options_default(void)
{
    grid_model_options o;
    memset(&o, 0, sizeof o);
    o.floating_base = 0;
    o.gravity = -9.81;
    o.ignore_mimic = 0;
    o.ee_joint_names = NULL;
    o.n_ee_joint_names = 0;
    return o;
}

void grid_model_free(grid_model *m)
{
    if (!m) return;
    if (m->bodies) {
        for (int i = 0; i < m->nb; i++) {
            free(m->bodies[i].name);
            free(m->bodies[i].joint.name);
        }
    }
    if (m->frames) {
        for (int i = 0; i < m->nframes; i++) {
            free(m->frames[i].name);
            free(m->frames[i].joint);
        }
    }
    free(m->bodies);
    free(m->frames);
    free(m->ee_frames);
    free(m->robot_name);
    free(m);
}

int grid_model_frame_index(const grid_model *m, const char *name)
{
    if (!m || !name) return -1;
    for (int i = 0; i < m->nframes; i++)
        if (m->frames[i].name && strcmp(m->frames[i].name, name) == 0) return i;
    return -1;
}
