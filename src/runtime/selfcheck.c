/* The post-build self-check: every method of a freshly compiled CPU library run on a few fixed states and compared with the float64 reference. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "grid/emit.h"
#include "grid/ref.h"
#include "grid/runtime.h"
#include "grid/selfcheck.h"

#define CHECK_STATES 4

/* a reproducible number in [-1, 1) */
static double next_unit(unsigned long long *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(*s >> 11) / 4503599627370496.0 - 1.0;
}

/* q of state k from the joint-model table: unit quaternions, moderate angles and translations */
static void fill_q(const grid_model *m, double *q, unsigned long long *s)
{
    for (int b = 0; b < m->nb; b++) {
        const grid_joint *j = &m->bodies[b].joint;
        const grid_joint_model *jm = grid_joint_model_of(j->type);
        if (j->mimic) continue; /* no coordinates of its own */
        double *x = q + j->uq;
        for (int i = 0; i < j->nq; i++)
            x[i] = (i == jm->angle || j->type == GRID_JOINT_REVOLUTE ? 1.5 : 0.3) * next_unit(s);
        if (jm->quat >= 0) {
            double n = 0;
            for (int i = 0; i < 4; i++) {
                x[jm->quat + i] = next_unit(s) + (i == 3 ? 2.0 : 0.0);
                n += x[jm->quat + i] * x[jm->quat + i];
            }
            for (int i = 0; i < 4; i++) x[jm->quat + i] /= sqrt(n);
        }
    }
}

/* max |x - ref| / max(|ref|) over one output block, infinite where the library gave a NaN the reference
   did not (or the other way round) */
static double block_error(const void *x, int dtype, const double *ref, long long n)
{
    double num = 0, den = 0;
    for (long long i = 0; i < n; i++) {
        const double v = dtype == GRID_FLOAT32 ? (double)((const float *)x)[i] : ((const double *)x)[i];
        if (isnan(v) != isnan(ref[i])) return INFINITY;
        if (isnan(v)) continue;
        if (fabs(v - ref[i]) > num) num = fabs(v - ref[i]);
        if (fabs(ref[i]) > den) den = fabs(ref[i]);
    }
    return den > 0 ? num / den : num;
}

/* one method at one attribute setting: the worst block error over the states, or -1 (err set) */
static double check_method(const grid_lib *lib, const grid_model *m, int algo, const int *attr, grid_error *err)
{
    const grid_method_info *r = grid_lib_method(lib, algo);
    const grid_robot_meta_t *meta = grid_lib_meta(lib);
    const int dt = meta->dtype;
    const size_t esz = dt == GRID_FLOAT32 ? sizeof(float) : sizeof(double);
    double *in64[GRID_MAX_IN] = {0}, *out64[GRID_MAX_OUT] = {0};
    void *inl[GRID_MAX_IN] = {0}, *outl[GRID_MAX_OUT] = {0};
    void *work = NULL;
    double worst = -1;
    int oom = 0;
    unsigned long long s = 0x9E3779B97F4A7C15ull + (unsigned long long)algo;
    for (int k = 0; k < r->n_in; k++) {
        const long long w = r->in[k].width;
        oom |= !(in64[k] = malloc((size_t)(CHECK_STATES * w) * sizeof(double)));
        oom |= !(inl[k] = malloc((size_t)(CHECK_STATES * w) * esz));
        if (oom) goto done;
        for (int b = 0; b < CHECK_STATES; b++) {
            double *x = in64[k] + b * w;
            if (k == 0) fill_q(m, x, &s); /* every row's first input is q */
            else for (long long i = 0; i < w; i++) x[i] = next_unit(&s);
        }
        for (long long i = 0; i < CHECK_STATES * w; i++) {
            if (dt == GRID_FLOAT32) ((float *)inl[k])[i] = (float)in64[k][i];
            else ((double *)inl[k])[i] = in64[k][i];
        }
        if (dt == GRID_FLOAT32) /* the reference sees what the library sees */
            for (long long i = 0; i < CHECK_STATES * w; i++) in64[k][i] = ((float *)inl[k])[i];
    }
    for (int k = 0; k < r->n_out; k++) {
        const long long w = r->out[k].width;
        oom |= !(out64[k] = malloc((size_t)(CHECK_STATES * w) * sizeof(double)));
        oom |= !(outl[k] = malloc((size_t)(CHECK_STATES * w) * esz));
    }
    /* aligned as the ABI asks (lane vectors), a whole number of 64-byte blocks */
    if (meta->work_bytes) oom |= !(work = aligned_alloc(64, (meta->work_bytes + 63) / 64 * 64));
    if (oom) goto done;
    grid_call c, c64;
    memset(&c, 0, sizeof c);
    c.in = (const void *const *)inl;
    c.out = (void *const *)outl;
    c.n_in = r->n_in;
    c.n_out = r->n_out;
    c.batch = CHECK_STATES;
    for (int a = 0; a < r->n_attr; a++) c.attr[a] = attr[a];
    c.num_threads = 1; /* and 4 states, below any team threshold: no OpenMP thread starts, so the library may be unloaded */
    c.work = work;
    c.work_bytes = meta->work_bytes;
    c64 = c;
    c64.in = (const void *const *)in64;
    c64.out = (void *const *)out64;
    c64.work = NULL;
    c64.work_bytes = 0;
    int rc = grid_lib_fn(lib, algo)(&c);
    if (rc != GRID_OK) {
        grid_error_set(err, GRID_ERR_BUILD, 0, 0, "self-check: %s returned status %d on the check states", r->name, rc);
        goto done;
    }
    if ((rc = grid_ref_batch(m, algo, GRID_FLOAT64, &c64)) != GRID_OK) {
        grid_error_set(err, rc, 0, 0, "self-check: the reference refused %s (status %d)", r->name, rc);
        goto done;
    }
    worst = 0;
    for (int k = 0; k < r->n_out; k++)
        for (int b = 0; b < CHECK_STATES; b++) {
            const long long w = r->out[k].width;
            const double e = block_error((const char *)outl[k] + (size_t)(b * w) * esz, dt, out64[k] + b * w, w);
            if (!(e <= worst)) worst = e; /* NaN-safe: an infinite or NaN error wins */
        }
done:
    if (oom) grid_error_set(err, GRID_ERR_NOMEM, 0, 0, "self-check: out of memory");
    for (int k = 0; k < GRID_MAX_IN; k++) {
        free(in64[k]);
        free(inl[k]);
    }
    for (int k = 0; k < GRID_MAX_OUT; k++) {
        free(out64[k]);
        free(outl[k]);
    }
    free(work);
    return oom ? -1 : worst;
}

double grid_selfcheck_tolerance(int dtype)
{
    return dtype == GRID_FLOAT32 ? 1e-3 : 1e-9;
}

int grid_lib_selfcheck(const grid_lib *lib, const grid_model *m, grid_error *err)
{
    const grid_robot_meta_t *meta = grid_lib_meta(lib);
    if (meta->target != GRID_TARGET_C) return GRID_OK; /* CUDA code needs a GPU: checked by the GPU tests */
    const double tol = grid_selfcheck_tolerance(meta->dtype);
    for (int algo = 0; algo < GRID_ALGO_COUNT; algo++) {
        const grid_method_info *r = grid_lib_method(lib, algo);
        if (!r || !grid_lib_fn(lib, algo)) continue;
        /* each attribute at its lowest and highest value (frames 0 and nframes - 1, every reference frame) */
        const int combos = 1 << r->n_attr;
        for (int cmb = 0; cmb < combos; cmb++) {
            int attr[GRID_MAX_ATTR] = {0};
            for (int a = 0; a < r->n_attr; a++) attr[a] = (cmb >> a) & 1 ? r->attr_hi[a] - 1 : r->attr_lo[a];
            const double e = check_method(lib, m, algo, attr, err);
            if (e < 0) return err->code ? err->code : GRID_ERR_BUILD;
            if (!(e <= tol)) {
                char at[96] = "";
                for (int a = 0; a < r->n_attr; a++)
                    snprintf(at + strlen(at), sizeof at - strlen(at), "%s %s=%d", a ? "," : " at", r->attr_name[a],
                             attr[a]);
                return grid_error_set(err, GRID_ERR_BUILD, 0, 0,
                                      "self-check failed: the compiled %s disagrees with the float64 reference%s "
                                      "(relative error %.3g, tolerance %.0e, %s) on fixed states; the compiler or "
                                      "its flags (GRID_RBD_CFLAGS, GRID_RBD_CC) produced wrong code, and the entry "
                                      "was not published",
                                      r->name, at, e, tol, meta->dtype == GRID_FLOAT32 ? "float32" : "float64");
            }
        }
    }
    return GRID_OK;
}
