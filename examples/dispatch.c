/* grid-rbd from C, no Python: a URDF to a compiled robot library through the cache, then batched calls through grid_dispatch_run, checked against the float64 reference. */
/*
 * make example-c   (builds build/examples/dispatch and runs it on examples/robots/iiwa.urdf)
 * build/examples/dispatch ROBOT.urdf [CACHE_DIR]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "grid/build.h"
#include "grid/dispatch.h"
#include "grid/emit.h"
#include "grid/runtime.h"
#include "grid/urdf.h"

static int fail(const char *what, const grid_error *err)
{
    fprintf(stderr, "%s: %s\n", what, err->message);
    return 1;
}

int main(int argc, char **argv)
{
    const char *urdf_path = argc > 1 ? argv[1] : "examples/robots/iiwa.urdf";
    const char *cache_dir = argc > 2 ? argv[2] : NULL; /* NULL: $GRID_RBD_CACHE_DIR or ~/.cache/grid-rbd */
    grid_error err;
    grid_error_clear(&err);

    /* the model */
    grid_model *m = NULL;
    if (grid_urdf_load_file(urdf_path, NULL, &m, &err) != GRID_OK) return fail(urdf_path, &err);
    printf("%s: nq %d, nv %d, bodies %d\n", urdf_path, m->nq, m->nv, m->nb);

    /* the library: float64 C code for two methods, compiled once into the cache */
    const int methods[] = {GRID_ALGO_RNEA, GRID_ALGO_CRBA};
    grid_emit_options o = grid_emit_options_default();
    o.methods = methods;
    o.n_methods = 2;
    char *source = NULL;
    size_t len = 0;
    if (grid_emit_source(m, &o, &source, &len, &err) != GRID_OK) return fail("emit", &err);
    FILE *f = fopen(urdf_path, "rb");
    static char urdf[1 << 20];
    const size_t urdf_len = f ? fread(urdf, 1, sizeof urdf, f) : 0;
    if (f) fclose(f);
    grid_build_request req = {0};
    req.cache_dir = cache_dir;
    req.name = "dispatch-example";
    req.urdf = urdf;
    req.urdf_len = urdf_len;
    req.options_json = "{\"example\": \"examples/dispatch.c\", \"methods\": [\"rnea\", \"crba\"]}";
    req.target = GRID_TARGET_C;
    req.source = source;
    req.source_len = len;
    grid_build_result res;
    const int brc = grid_build(&req, &res, &err);
    free(source);
    if (brc != GRID_OK) return fail("build", &err);
    printf("library %s (%s, %.2f s)\n", res.so_path, res.cache_hit ? "cache hit" : "compiled", res.seconds_total);
    grid_lib *lib = NULL;
    if (grid_lib_open(res.so_path, NULL, &lib, &err) != GRID_OK) return fail("load", &err);

    /* two dispatchers: the library (workspace for 2 threads) and the reference alone */
    grid_provider p;
    grid_dispatch gen, ref;
    if (grid_provider_of_lib(lib, 0, 2, "generated", &p, &err) != GRID_OK ||
        grid_dispatch_init(&gen, m, GRID_FLOAT64, &p, GRID_CONVENTION_PINOCCHIO, &err) != GRID_OK ||
        grid_dispatch_init(&ref, m, GRID_FLOAT64, NULL, GRID_CONVENTION_PINOCCHIO, &err) != GRID_OK)
        return fail("dispatch", &err);
    grid_context ctx;
    grid_ctx_init(&ctx, NULL);

    /* a batch of states; inverse dynamics without f_ext (an absent optional input is NULL), then the mass matrix */
    enum { B = 64 };
    const int nq = m->nq, nv = m->nv;
    double *q = malloc(sizeof(double) * B * nq), *qd = malloc(sizeof(double) * B * nv);
    double *qdd = malloc(sizeof(double) * B * nv), *x = malloc(sizeof(double) * B * nv * nv);
    double *y = malloc(sizeof(double) * B * nv * nv);
    unsigned seed = 1;
    for (int i = 0; i < B * nq; i++) q[i] = 2.0 * rand_r(&seed) / RAND_MAX - 1.0;
    for (int i = 0; i < B * nv; i++) qd[i] = 2.0 * rand_r(&seed) / RAND_MAX - 1.0;
    for (int i = 0; i < B * nv; i++) qdd[i] = 2.0 * rand_r(&seed) / RAND_MAX - 1.0;
    int status = 0;
    for (int which = 0; which < 2 && !status; which++) {
        const int algo = methods[which];
        const long long width = grid_algo_output_width(algo, nq, nv, m->nb, m->nee);
        const void *in[GRID_MAX_IN] = {q, qd, qdd, NULL};
        double worst = 0, scale = 0;
        for (int d = 0; d < 2; d++) {
            void *out[GRID_MAX_OUT] = {d ? y : x};
            grid_call c = {in, out, grid_sig_row(algo)->n_in, 1, B, {0}, 2, NULL, 0, NULL};
            if (grid_dispatch_run(d ? &ref : &gen, algo, &c, &ctx, &err) != GRID_OK) {
                status = fail(grid_algo_name(algo), &err);
                break;
            }
        }
        for (long long k = 0; !status && k < B * width; k++) {
            worst = fmax(worst, fabs(x[k] - y[k]));
            scale = fmax(scale, fabs(y[k]));
        }
        if (!status) {
            printf("%-5s %d states: max |generated - reference| = %.2e (values up to %.2e)\n", grid_algo_name(algo), B,
                   worst, scale);
            if (!(worst <= 1e-12 * (1.0 + scale))) status = 1;
        }
    }
    free(q);
    free(qd);
    free(qdd);
    free(x);
    free(y);
    grid_ctx_free(&ctx);
    grid_lib_close(lib);
    grid_model_free(m);
    if (!status) printf("ok\n");
    return status;
}
