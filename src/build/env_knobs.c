/* The one table of environment variables the library reads, with how each one affects the cache. */
#include <stdlib.h>
#include <string.h>
#include "grid/build.h"

/* Every getenv in the library goes through grid_env(), which only answers for names listed here;
   tests/c/test_build.c scans src/ for getenv and grid_env calls and checks each name is in this table. */
static const grid_env_knob env_knobs[] = {
    {"GRID_RBD_CC", GRID_KNOB_BUILD,
     "C compiler for CPU builds (a path or a name on PATH; default cc)"},
    {"GRID_RBD_CFLAGS", GRID_KNOB_BUILD,
     "replaces the tuning flags of CPU builds (the default ones are in the CPU build command that "
     "`python -m grid_rbd cache env` prints); whitespace-separated, no shell quoting"},
    {"GRID_RBD_NVCC", GRID_KNOB_BUILD, "nvcc for CUDA builds (default: nvcc on PATH, else /usr/local/cuda/bin/nvcc)"},
    {"GRID_RBD_NVCC_FLAGS", GRID_KNOB_BUILD,
     "replaces the tuning flags of CUDA builds (default: those of src/build/toolchain.c's table); whitespace-separated"},
    {"GRID_RBD_NVCC_CCBIN", GRID_KNOB_BUILD, "host C++ compiler nvcc uses (-ccbin; default: g++, c++ or clang++ on PATH)"},
    {"GRID_RBD_CUDA_ARCH", GRID_KNOB_BUILD,
     "CUDA architecture when cuda_arch= is not given, e.g. 90 or sm_90 (default: nvidia-smi compute_cap)"},
    {"PATH", GRID_KNOB_BUILD, "where cc, nvcc and nvidia-smi are looked up (the resolved paths are keyed)"},
    {"GRID_RBD_CACHE_DIR", GRID_KNOB_LOCATION, "cache root when cache_dir= is not given"},
    {"XDG_CACHE_HOME", GRID_KNOB_LOCATION, "cache root is $XDG_CACHE_HOME/grid-rbd when GRID_RBD_CACHE_DIR is unset"},
    {"HOME", GRID_KNOB_LOCATION, "cache root is ~/.cache/grid-rbd otherwise"},
    {"GRID_RBD_VERBOSE", GRID_KNOB_RUNTIME, "1: print build progress on stderr as if verbose=True"},
    {"GRID_RBD_BUILD_JOBS", GRID_KNOB_RUNTIME,
     "most compiler processes one build runs at once (default: min(parts, usable CPUs, available memory / 512 MiB))"},
};

int grid_env_knob_count(void)
{
    return (int)(sizeof env_knobs / sizeof env_knobs[0]);
}

const grid_env_knob *grid_env_knob_at(int i)
{
    return i >= 0 && i < grid_env_knob_count() ? &env_knobs[i] : NULL;
}

const char *grid_env(const char *name)
{
    for (int i = 0; name && i < grid_env_knob_count(); i++) {
        if (strcmp(env_knobs[i].name, name) != 0) continue;
        const char *v = getenv(name);
        return v && *v ? v : NULL;
    }
    return NULL;
}
