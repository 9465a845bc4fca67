/* Test helper: the small arm of tests/data, fixed or floating base, loaded with the default options. */
#ifndef GRID_TEST_SMALL_ARM_H
#define GRID_TEST_SMALL_ARM_H

#include "check.h"
#include "grid/urdf.h"

static inline grid_model *test_small_arm(int floating)
{
    grid_model_options o = grid_model_options_default();
    o.floating_base = floating;
    grid_model *m = NULL;
    grid_error err;
    const int rc = grid_urdf_load_file("tests/data/small_arm.urdf", &o, &m, &err);
    CHECK_MSG(rc == GRID_OK, "%s", err.message);
    return m;
}

#endif
