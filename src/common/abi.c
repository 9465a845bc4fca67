/* The algorithm table of the batch ABI: names and per-state output widths. */
#include <string.h>
#include "grid/abi.h"

static const char *const algo_names[GRID_ALGO_COUNT] = {
    "rnea", "nle", "gravity", "crba", "minv", "fd", "aba", "fk", "ee_pose", "frame_jacobian",
};

const char *grid_algo_name(int algo)
{
    return (algo >= 0 && algo < GRID_ALGO_COUNT) ? algo_names[algo] : NULL;
}

int grid_algo_from_name(const char *name)
{
    for (int i = 0; name && i < GRID_ALGO_COUNT; i++)
        if (strcmp(name, algo_names[i]) == 0) return i;
    return -1;
}

long long grid_algo_output_width(int algo, int nq, int nv, int nb, int nee)
{
    (void)nq;
    switch (algo) {
    case GRID_ALGO_RNEA: case GRID_ALGO_NLE: case GRID_ALGO_GRAVITY:
    case GRID_ALGO_FD: case GRID_ALGO_ABA:
        return nv;
    case GRID_ALGO_CRBA: case GRID_ALGO_MINV:
        return (long long)nv * nv;
    case GRID_ALGO_FK:
        return 16LL * nb;
    case GRID_ALGO_EE_POSE:
        return 6LL * nee;
    case GRID_ALGO_FRAME_JACOBIAN:
        return 6LL * nv;
    default:
        return -1;
    }
}
