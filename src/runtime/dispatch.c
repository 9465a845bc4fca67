/* grid_dispatch_run: one method of a provider (or the float64 reference) on given buffers, in an output convention. */
#include <assert.h>
#include <string.h>
#include "grid/dispatch.h"
#include "grid/ref.h"
#include "grid/signature.h"

int grid_provider_of_lib(const grid_lib *lib, int device, int work_threads, const char *name, grid_provider *p,
                         grid_error *err)
{
    const grid_robot_meta_t *meta = grid_lib_meta(lib);
    if (device && meta->target != GRID_TARGET_CUDA)
        return grid_error_set(err, GRID_ERR_ARG, 0, 0, "%s: a C library has no device entry points", grid_lib_path(lib));
    memset(p, 0, sizeof *p);
    p->abi_version = meta->abi_version;
    p->name = name;
    p->dtype = meta->dtype;
    p->nq = meta->nq;
    p->nv = meta->nv;
    p->nb = meta->nb;
    p->nee = meta->nee;
    p->device = device;
    /* grid_call.work holds meta.work_bytes per thread (a CUDA library brings its own device workspace: none is
       passed) */
    if (meta->work_bytes > 0 && meta->target != GRID_TARGET_CUDA && work_threads > 0) {
        p->work_bytes = meta->work_bytes * (size_t)work_threads;
        p->work_threads = work_threads;
    }
    for (int a = 0; a < GRID_ALGO_COUNT; a++) p->fns[a] = device ? grid_lib_cuda_fn(lib, a) : grid_lib_fn(lib, a);
    /* a CUDA library converts output conventions on the device, in its host round trips and device calls alike */
    p->cuda_convention = grid_lib_cuda_convention(lib);
    return GRID_OK;
}

int grid_dispatch_init(grid_dispatch *d, const grid_model *m, int dtype, const grid_provider *p, int convention,
                       grid_error *err)
{
    memset(d, 0, sizeof *d);
    /* without a model only a device provider's own entry points run, in their own convention */
    if (!m && !(p && p->device && convention == GRID_CONVENTION_PINOCCHIO))
        return grid_error_set(err, GRID_ERR_ARG, 0, 0, "grid_dispatch_init: a model is required (the reference and "
                                                       "every output convention but Pinocchio's need it)");
    if (dtype != GRID_FLOAT32 && dtype != GRID_FLOAT64)
        return grid_error_set(err, GRID_ERR_ARG, 0, 0, "dtype must be %d (float32) or %d (float64); got %d",
                              GRID_FLOAT32, GRID_FLOAT64, dtype);
    if (p && (p->abi_version != GRID_ABI_VERSION || p->dtype != dtype ||
              (m && (p->nq != m->nq || p->nv != m->nv || p->nb != m->nb || p->nee != m->nee))))
        return grid_error_set(err, GRID_ERR_LOAD, 0, 0,
                              "the provider does not match this model (ABI version, dtype or sizes differ)");
    d->model = m;
    d->dtype = dtype;
    if (p) {
        d->provider = *p;
        d->has_provider = 1;
    }
    return m ? grid_convention_init(&d->conv, m, convention, err) : GRID_OK; /* (zeros: the identity) */
}

grid_batch_fn grid_dispatch_entry(const grid_dispatch *d, int algo)
{
    return d->has_provider && algo >= 0 && algo < GRID_ALGO_COUNT ? d->provider.fns[algo] : NULL;
}

int grid_dispatch_needs_context(const grid_dispatch *d, int algo)
{
    const int convert = !grid_convention_identity(&d->conv);
    /* (a CUDA library converting on device arrays needs no host scratch) */
    const int device_convert = convert && d->has_provider && d->provider.cuda_convention && d->provider.device;
    return (grid_dispatch_entry(d, algo) && d->provider.work_bytes > 0) || (convert && !device_convert);
}

/* the provider's entry point of row algo, or the reference where it has none: what a convention's passes run */
static int run_row(void *user, int algo, const grid_call *c)
{
    const grid_dispatch *d = user;
    grid_batch_fn fn = grid_dispatch_entry(d, algo);
    return fn ? fn(c) : grid_ref_batch(d->model, algo, d->dtype, c);
}

/* states per chunk of a CUDA library's call whose conversion runs on the host (a derivative's chain rule on a free
   flyer: its aux rows and run row are host round trips on the chunk) */
#define CUDA_CONV_CHUNK 16384

/* A call in the output convention through a CUDA library, whose entry points convert each chunk on the device: the
   job's run row with the caller's arrays (an acceleration built from zero gets qd's array to be built in). On host
   arrays a job with aux rows converts on the host instead, around the library's round trips of whole chunks; on
   device arrays the aux rows run on the device too. */
static int run_cuda_convention(const grid_dispatch *d, int algo, const grid_call *c, grid_context *ctx)
{
    grid_conv_job job;
    int rc = grid_convention_job(&d->conv, algo, c->in, &job);
    if (rc != GRID_OK) return rc;
    const int host = !d->provider.device;
    if (host && job.n_aux > 0) {
        grid_call one = *c;
        one.num_threads = 1;
        return grid_convention_call(&d->conv, algo, d->dtype, &one, ctx, run_row, (void *)d, CUDA_CONV_CHUNK);
    }
    grid_batch_fn fns[1 + GRID_CONV_MAX_AUX];
    if (!(fns[0] = grid_dispatch_entry(d, job.run_algo))) return GRID_ERR_UNSUPPORTED;
    for (int x = 0; !host && x < job.n_aux; x++)
        if (!(fns[1 + x] = grid_dispatch_entry(d, job.aux[x]))) return GRID_ERR_UNSUPPORTED;
    const void *in[GRID_MAX_IN] = {0};
    for (int k = 0; k < job.n_in; k++) in[k] = job.src[k] >= 0 ? c->in[job.src[k]] : NULL;
    if (host && job.a_zero) in[job.slot_a] = in[job.slot_v];
    grid_call cc = *c;
    cc.in = in;
    cc.n_in = job.n_in;
    return d->provider.cuda_convention(&job, fns, &cc, host);
}

/* the message of a failed call */
static int failed(int status, int algo, int convert, grid_error *err)
{
    const grid_signature_row *row = grid_sig_row(algo);
    if (status == GRID_ERR_UNSUPPORTED && convert)
        /* a row the output convention has no conversion for (grid_convention_job): not available, never converted
           wrongly */
        return grid_error_set(err, status, 0, 0, "%s is not available in output_convention='mujoco' yet; register the "
                                                 "robot with output_convention='pinocchio' for it", row->py_name);
    if (status == GRID_ERR_NOMEM)
        return grid_error_set(err, status, 0, 0, "%s: out of memory for its workspace", row->name);
    return grid_error_set(err, status, 0, 0, "%s failed with status %d", row->name, status);
}

int grid_dispatch_run(const grid_dispatch *d, int algo, grid_call *c, grid_context *ctx, grid_error *err)
{
    assert(d && c);
    if (algo < 0 || algo >= GRID_ALGO_COUNT)
        return grid_error_set(err, GRID_ERR_ARG, 0, 0, "unknown method id %d (the table has %d rows)", algo,
                              GRID_ALGO_COUNT);
    c->work = NULL;
    c->work_bytes = 0;
    if (c->batch <= 0) return GRID_OK;
    grid_batch_fn fn = grid_dispatch_entry(d, algo);
    const int convert = !grid_convention_identity(&d->conv);
    if (d->has_provider && d->provider.device && !fn)
        /* device arrays: the reference cannot read them */
        return grid_error_set(err, GRID_ERR_UNSUPPORTED, 0, 0, "this library has no %s", grid_algo_name(algo));
    const int cuda_convert = convert && d->has_provider && d->provider.cuda_convention;
    const int needs_work = fn && d->provider.work_bytes > 0;
    if (!ctx && grid_dispatch_needs_context(d, algo))
        return grid_error_set(err, GRID_ERR_ARG, 0, 0, "%s: this call needs a context for its workspace",
                              grid_algo_name(algo));
    if (needs_work) {
        /* the workspace of the threads this call runs on, not of every thread the provider covers: a lane row's
           tile may live there (nv^2 lane vectors: 537 MB per thread on a 4096-link chain's CRBA) */
        const int wt = d->provider.work_threads;
        const size_t per = wt > 0 ? d->provider.work_bytes / (size_t)wt : d->provider.work_bytes;
        const int nwt = wt <= 0 ? 1 : c->num_threads < 1 ? 1 : c->num_threads > wt ? wt : c->num_threads;
        if (grid_ctx_work(ctx, (per + 63) / 64 * 64, nwt, &c->work, &c->work_bytes) != GRID_OK)
            return failed(GRID_ERR_NOMEM, algo, convert, err);
        if (wt > 0 && c->num_threads > wt) c->num_threads = wt; /* never more than the workspace covers */
    }
    if (!fn) c->num_threads = 1; /* the reference runs on one */
    int status;
    if (cuda_convert) status = run_cuda_convention(d, algo, c, ctx);
    else if (convert) status = grid_convention_call(&d->conv, algo, d->dtype, c, ctx, run_row, (void *)d, 0);
    else status = fn ? fn(c) : grid_ref_batch(d->model, algo, d->dtype, c);
    return status == GRID_OK ? GRID_OK : failed(status, algo, convert, err);
}
