/* grid-rbd's float64 reference of the second-order RNEA derivatives on states read from stdin, as pin_second_order.cpp prints Pinocchio's. */
/* usage: grid_second_order URDF FLOATING < "B nq nv" then B x (q, v, a) > per state the four nv^3 tensors
   (grid_ref_rnea_second_derivatives; tests/python/test_second_order.py) */
#include <stdio.h>
#include <stdlib.h>
#include "grid/urdf.h"
#include "grid/model.h"
#include "grid/ref.h"
#include "grid/error.h"
int main(int argc, char **argv)
{
    grid_model_options o = grid_model_options_default();
    if (argc < 3) return 2;
    o.floating_base = atoi(argv[2]);
    grid_model *m = NULL;
    grid_error err;
    if (argc < 3) return 2;
    if (grid_urdf_load_file(argv[1], &o, &m, &err) != 0) {
        fprintf(stderr, "%s\n", err.message);
        return 2;
    }
    long B, nq, nv;
    if (scanf("%ld %ld %ld", &B, &nq, &nv) != 3 || nq != m->nq || nv != m->nv) return 3;
    double *q = malloc(nq * 8), *v = malloc(nv * 8), *a = malloc(nv * 8);
    size_t n3 = (size_t)nv * nv * nv;
    double *out = malloc(4 * n3 * 8), *w = malloc(grid_ref_work_size(m) * 8);
    for (long b = 0; b < B; b++) {
        int got = 0;
        for (long k = 0; k < nq; k++) got += scanf("%lf", &q[k]);
        for (long k = 0; k < nv; k++) got += scanf("%lf", &v[k]);
        for (long k = 0; k < nv; k++) got += scanf("%lf", &a[k]);
        if (got != nq + 2 * nv) return 3;
        grid_ref_rnea_second_derivatives(m, q, v, a, NULL, out, w);
        for (size_t k = 0; k < 4 * n3; k++) printf("%.17g\n", out[k]);
    }
    free(q), free(v), free(a), free(out), free(w);
    grid_model_free(m);
    return 0;
}
