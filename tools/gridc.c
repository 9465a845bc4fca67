/* gridc: URDF in, generated grid-rbd robot library source (C or CUDA C) out, for users without Python. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "grid/abi.h"
#include "grid/signature.h"
#include "grid/emit.h"
#include "grid/urdf.h"

#define MAX_EE 256

static void usage(FILE *f)
{
    fputs("usage: gridc ROBOT.urdf [--floating-base] [--dtype float32|float64] [--target c|cuda]\n"
          "             [--ee JOINT]... [--ignore-mimic] [--algo NAME]... [--gravity G] [--hash HEX]\n"
          "             [--schedule auto|unrolled|rolled] [--stats] [-o OUT]\n"
          "Writes the generated robot library source to OUT (default: stdout).\n"
          "Build (gcc; docs/emitter.md explains the flags):\n"
          "  cc -O2 -fno-schedule-insns2 --param=max-combine-insns=2 -fno-tree-pre -fno-dse -fno-tree-dse -march=native \\\n"
          "     -ffp-contract=fast -fno-math-errno -fPIC -shared -fopenmp robot.c -o robot.so -lm\n"
          "  nvcc -O3 -arch=sm_90 -shared -Xcompiler -fPIC -Isrc/runtime -Iinclude robot.cu \\\n"
          "     src/runtime/cuda_runtime.cu -o robot.so   (--target cuda: the host runtime from the repository)\n"
          "A source whose first line says 'grid-rbd parts: N' (N > 1) may be compiled as N objects\n"
          "with -DGRID_PART=1..N in parallel and linked.\n"
          "NAME is a row of the signature table (default: all):",
          f);
    for (int k = 0; k < grid_sig_count(); k++) fprintf(f, " %s", grid_sig_row(k)->name);
    fputs(".\n", f);
}

/* print an error and exit: the tool's only way out on failure */
static void die(const char *fmt, const char *arg)
{
    fputs("gridc: ", stderr);
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    exit(1);
}

/* the value after a flag, or a usage error */
static const char *value(int argc, char **argv, int *i)
{
    if (*i + 1 >= argc) die("%s needs a value", argv[*i]);
    return argv[++*i];
}

int main(int argc, char **argv)
{
    const char *path = NULL, *out_path = NULL, *hash = NULL;
    const char *ee[MAX_EE];
    int nee = 0, stats = 0, methods[GRID_ALGO_COUNT], n_methods = 0;
    grid_model_options mo = grid_model_options_default();
    grid_emit_options eo = grid_emit_options_default();

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--floating-base")) {
            mo.floating_base = 1;
        } else if (!strcmp(a, "--ignore-mimic")) {
            mo.ignore_mimic = 1;
        } else if (!strcmp(a, "--stats")) {
            stats = 1;
        } else if (!strcmp(a, "--dtype")) {
            const char *v = value(argc, argv, &i);
            if (!strcmp(v, "float32")) eo.dtype = GRID_FLOAT32;
            else if (!strcmp(v, "float64")) eo.dtype = GRID_FLOAT64;
            else die("unknown dtype '%s' (float32 or float64)", v);
        } else if (!strcmp(a, "--target")) {
            const char *v = value(argc, argv, &i);
            if (!strcmp(v, "c")) eo.target = GRID_TARGET_C;
            else if (!strcmp(v, "cuda")) eo.target = GRID_TARGET_CUDA;
            else die("unknown target '%s' (c or cuda)", v);
        } else if (!strcmp(a, "--ee")) {
            if (nee == MAX_EE) die("%s: too many end effectors", a);
            ee[nee++] = value(argc, argv, &i);
        } else if (!strcmp(a, "--algo")) {
            const char *v = value(argc, argv, &i);
            int k = grid_sig_find(v);
            if (k < 0) die("unknown algorithm '%s'", v);
            int dup = 0;
            for (int j = 0; j < n_methods; j++) dup |= methods[j] == k;
            if (!dup) methods[n_methods++] = k;
        } else if (!strcmp(a, "--gravity")) {
            const char *v = value(argc, argv, &i);
            char *end;
            mo.gravity = strtod(v, &end);
            if (end == v || *end) die("bad gravity '%s'", v);
        } else if (!strcmp(a, "--schedule")) {
            const char *v = value(argc, argv, &i);
            if (!strcmp(v, "auto")) eo.schedule = GRID_SCHEDULE_AUTO;
            else if (!strcmp(v, "unrolled")) eo.schedule = GRID_SCHEDULE_UNROLLED;
            else if (!strcmp(v, "rolled")) eo.schedule = GRID_SCHEDULE_ROLLED;
            else die("--schedule must be auto, unrolled or rolled, not %s", v);
        } else if (!strcmp(a, "--hash")) {
            hash = value(argc, argv, &i);
        } else if (!strcmp(a, "-o")) {
            out_path = value(argc, argv, &i);
        } else if (a[0] == '-' && a[1]) {
            usage(stderr);
            die("unknown option '%s'", a);
        } else if (!path) {
            path = a;
        } else {
            die("more than one URDF given ('%s')", a);
        }
    }
    if (!path) {
        usage(stderr);
        return 1;
    }
    if (nee) {
        mo.ee_joint_names = ee;
        mo.n_ee_joint_names = nee;
    }
    eo.model_hash = hash;
    eo.methods = methods;
    eo.n_methods = n_methods;

    grid_error err;
    grid_error_clear(&err);
    grid_model *m = NULL;
    if (grid_urdf_load_file(path, &mo, &m, &err) != GRID_OK) {
        /* the loader's messages usually start with path:line:column already */
        if (strncmp(err.message, path, strlen(path)) == 0) fprintf(stderr, "%s\n", err.message);
        else if (err.line > 0) fprintf(stderr, "%s:%d:%d: %s\n", path, err.line, err.column, err.message);
        else fprintf(stderr, "%s: %s\n", path, err.message);
        return 1;
    }
    char *src = NULL;
    size_t len = 0;
    grid_emit_stats st;
    if (grid_emit_source_stats(m, &eo, &src, &len, &st, &err) != GRID_OK) {
        fprintf(stderr, "%s: error: %s\n", path, err.message);
        grid_model_free(m);
        return 1;
    }
    if (stats) {
        fprintf(stderr, "%s: nq %d nv %d nb %d, %zu bytes\n", path, m->nq, m->nv, m->nb, len);
        for (int k = 0; k < GRID_ALGO_COUNT; k++)
            if (st.statements[k])
                fprintf(stderr, "  %-15s statements %7ld  flops %7ld  transcendental %3ld\n", grid_algo_name(k),
                        st.statements[k], st.flops[k], st.transcendental[k]);
    }
    grid_model_free(m);

    FILE *f = out_path ? fopen(out_path, "wb") : stdout;
    if (!f) {
        free(src);
        die("cannot open '%s' for writing", out_path);
    }
    int ok = fwrite(src, 1, len, f) == len;
    if (out_path) ok &= fclose(f) == 0;
    else ok &= fflush(f) == 0;
    free(src);
    if (!ok) die("writing '%s' failed", out_path ? out_path : "stdout");
    return 0;
}
