/* libFuzzer entry point: arbitrary bytes through grid_urdf_load with several option sets, freeing every result. */
#include <stddef.h>
#include <stdint.h>
#include "grid/urdf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const ee_names[] = {"j1", "root_joint", "fixed_tip"};
    grid_model_options opts = grid_model_options_default();

    // one byte of the input picks the options, so every path of the builder gets exercised
    unsigned pick = size > 0 ? data[size - 1] : 0;
    opts.floating_base = (int)(pick & 1u);
    opts.ignore_mimic = (int)((pick >> 1) & 1u);
    if (pick & 4u) {
        opts.ee_joint_names = ee_names;
        opts.n_ee_joint_names = (int)((pick >> 3) % 4u);
    }

    grid_model *model = NULL;
    grid_error err;
    int rc = grid_urdf_load((const char *)data, size, &opts, &model, &err);
    if (rc == GRID_OK) {
        // touch the model so a half-built one would be noticed by the sanitizers
        volatile double sink = 0.0;
        for (int k = 0; k < model->nb; k++) sink += model->bodies[k].inertia.mass;
        for (int f = 0; f < model->nframes; f++) sink += (double)grid_model_frame_index(model, model->frames[f].name);
        for (int e = 0; e < model->nee; e++) sink += model->ee_frames[e];
        (void)sink;
    } else if (model) {
        __builtin_trap(); /* a failed load must leave *out NULL */
    }
    grid_model_free(model);
    return 0;
}
