/* The one table of environment variables the library reads, with how each one affects the cache. */
#include <stdlib.h>
#include <string.h>
#include "grid/build.h"
#include "build_internal.h"

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
     "replaces the tuning flags of CUDA builds (default: those of src/driver/toolchain.c's table); whitespace-separated"},
    {"GRID_RBD_NVCC_CCBIN", GRID_KNOB_BUILD, "host C++ compiler nvcc uses (-ccbin; default: g++, c++ or clang++ on PATH)"},
    {"GRID_RBD_CUDA_ARCH", GRID_KNOB_BUILD,
     "CUDA architecture when cuda_arch= is not given, e.g. 90 or sm_90 (default: nvidia-smi compute_cap)"},
    {"PATH", GRID_KNOB_BUILD, "where cc, nvcc and nvidia-smi are looked up (the resolved paths are keyed)"},
    {"GRID_RBD_CACHE_DIR", GRID_KNOB_LOCATION, "cache root when cache_dir= is not given"},
    {"XDG_CACHE_HOME", GRID_KNOB_LOCATION, "cache root is $XDG_CACHE_HOME/grid-rbd when GRID_RBD_CACHE_DIR is unset"},
    {"HOME", GRID_KNOB_LOCATION, "cache root is ~/.cache/grid-rbd otherwise"},
    {"GRID_RBD_VERBOSE", GRID_KNOB_RUNTIME, "1: print build progress on stderr as if verbose=True"},
    {"GRID_RBD_BUILD_JOBS", GRID_KNOB_RUNTIME,
     "most compiler processes one build runs at once, a whole number from 1 to 1024 (default: min(parts, usable "
     "CPUs, available memory / 512 MiB))"},
    {"GRID_RBD_PROBE_TIMEOUT", GRID_KNOB_RUNTIME,
     "seconds a compiler's --version (or nvidia-smi) may take before the build gives up on it, more than 0 and at "
     "most 3600 (default 30)"},
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

/* digits, optionally one '.' and more digits (frac: allowed), between optional blanks; -1 when not that */
static int parse_number(const char *v, int frac, double *out)
{
    while (*v == ' ' || *v == '\t') v++;
    double x = 0, scale = 0;
    int digits = 0;
    for (; *v; v++) {
        if (*v >= '0' && *v <= '9') {
            if (scale) x += (*v - '0') * (scale /= 10);
            else x = x * 10 + (*v - '0');
            if (++digits > 12) return -1;
        } else if (*v == '.' && frac && !scale && digits) {
            scale = 1;
        } else {
            break;
        }
    }
    while (*v == ' ' || *v == '\t' || *v == '\n') v++;
    if (!digits || *v || scale == 1) return -1; /* "", "2x", "-3", "1." */
    *out = x;
    return 0;
}

int grid_env_number(const char *name, int whole, double lo, double hi, double dflt, const char *what, double *out,
                    grid_error *err)
{
    const char *v = grid_env(name);
    *out = dflt;
    if (!v) return GRID_OK;
    double x;
    if (parse_number(v, !whole, &x) == 0 && x >= lo && x <= hi) {
        *out = x;
        return GRID_OK;
    }
    return grid_error_set(err, GRID_ERR_ARG, 0, 0,
                          "%s is '%.100s': it must be %s from %g to %g (%s); set it to one, or unset it for the default",
                          name, v, whole ? "a whole number" : "a number of seconds", lo, hi, what);
}

int grid_env_build_jobs(int *jobs, grid_error *err)
{
    double v;
    int rc = grid_env_number("GRID_RBD_BUILD_JOBS", 1, 1, GRID_BUILD_JOBS_MAX, 0,
                             "the most compiler processes one build runs at once", &v, err);
    *jobs = rc ? 0 : (int)v;
    return rc;
}

int grid_env_probe_timeout_ms(long *ms, grid_error *err)
{
    double v;
    int rc = grid_env_number("GRID_RBD_PROBE_TIMEOUT", 0, 0.001, GRID_PROBE_TIMEOUT_MAX_S, GRID_PROBE_TIMEOUT_S,
                             "how long a compiler's --version may take", &v, err);
    *ms = rc ? GRID_PROBE_TIMEOUT_S * 1000L : (long)(v * 1000 + 0.5);
    return rc;
}
