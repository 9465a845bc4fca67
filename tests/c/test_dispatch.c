/* grid_dispatch_run: the reference, a provider table with the reference behind it, workspace from a context, thread caps, the MuJoCo convention and its refusals, device providers. */
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include "check.h"
#include "calls.h"
#include "grid/dispatch.h"
#include "grid/ref.h"
#include "grid/urdf.h"
#include "small_arm.h"


/* a fake provider's entry point: records what it was handed, answers with the reference times 2 */
static const grid_model *fake_model;
static int fake_calls, fake_threads;
static size_t fake_work_bytes;
static void *fake_work;
static int fake_rnea(const grid_call *c)
{
    fake_calls++;
    fake_threads = c->num_threads;
    fake_work = c->work;
    fake_work_bytes = c->work_bytes;
    const int rc = grid_ref_batch(fake_model, GRID_ALGO_RNEA, GRID_FLOAT64, c);
    double *o = c->out[0];
    for (long long k = 0; k < c->batch * fake_model->nv; k++) o[k] *= 2.0;
    return rc;
}
static int fake_fails(const grid_call *c)
{
    (void)c;
    return GRID_ERR_CUDA;
}

static grid_provider fake_provider(const grid_model *m, int device)
{
    grid_provider p;
    memset(&p, 0, sizeof p);
    p.abi_version = GRID_ABI_VERSION;
    p.name = "fake";
    p.dtype = GRID_FLOAT64;
    p.nq = m->nq;
    p.nv = m->nv;
    p.nb = m->nb;
    p.nee = m->nee;
    p.device = device;
    p.work_bytes = 4 * 1000;
    p.work_threads = 4;
    p.fns[GRID_ALGO_RNEA] = fake_rnea;
    p.fns[GRID_ALGO_CRBA] = fake_fails;
    return p;
}

enum { B = 3 };

static void random_states(const grid_model *m, double *q, double *v, double *a)
{
    unsigned seed = 7;
    for (int i = 0; i < B * m->nq; i++) q[i] = 2.0 * rand_r(&seed) / RAND_MAX - 1.0;
    for (int i = 0; i < B * m->nv; i++) v[i] = 2.0 * rand_r(&seed) / RAND_MAX - 1.0;
    for (int i = 0; i < B * m->nv; i++) a[i] = 2.0 * rand_r(&seed) / RAND_MAX - 1.0;
    if (m->floating_base)
        for (int b = 0; b < B; b++) { /* a unit quaternion */
            double *x = q + b * m->nq + 3, n = 0;
            for (int k = 0; k < 4; k++) n += x[k] * x[k];
            for (int k = 0; k < 4; k++) x[k] /= sqrt(n);
        }
}

/* the reference's own answer for row algo */
static void want(const grid_model *m, int algo, const double *q, const double *v, const double *a, double *out)
{
    test_call t;
    grid_call *c = test_call_init(&t, algo, q, v, a, NULL, out, B, 0, 0);
    CHECK(grid_ref_batch(m, algo, GRID_FLOAT64, c) == GRID_OK);
}

static double max_diff(const double *x, const double *y, long n, double scale)
{
    double e = 0;
    for (long k = 0; k < n; k++) e = fmax(e, fabs(x[k] - scale * y[k]));
    return e;
}

/* no provider: every row is the reference's */
static void test_reference_only(void)
{
    grid_model *m = test_small_arm(0);
    grid_dispatch d;
    grid_error err;
    CHECK(grid_dispatch_init(&d, m, GRID_FLOAT64, NULL, GRID_CONVENTION_PINOCCHIO, &err) == GRID_OK);
    double q[B * 16], v[B * 16], a[B * 16], got[B * 256], ref[B * 256];
    random_states(m, q, v, a);
    const int algos[] = {GRID_ALGO_RNEA, GRID_ALGO_CRBA, GRID_ALGO_FD, GRID_ALGO_RNEA_GRAD};
    for (size_t i = 0; i < sizeof algos / sizeof *algos; i++) {
        test_call t;
        grid_call *c = test_call_init(&t, algos[i], q, v, a, NULL, got, B, 0, 0);
        c->num_threads = 8;
        CHECK(grid_dispatch_run(&d, algos[i], c, NULL, &err) == GRID_OK);
        CHECK(c->num_threads == 1); /* the reference runs on one */
        want(m, algos[i], q, v, a, ref);
        const long n = B * grid_algo_output_width(algos[i], m->nq, m->nv, m->nb, m->nee);
        CHECK_MSG(max_diff(got, ref, n, 1.0) == 0.0, "%s", grid_algo_name(algos[i]));
    }
    CHECK(!grid_dispatch_entry(&d, GRID_ALGO_RNEA) && !grid_dispatch_needs_context(&d, GRID_ALGO_RNEA));
    /* an unknown row is an argument error naming the table */
    test_call t;
    CHECK(grid_dispatch_run(&d, GRID_ALGO_COUNT, test_call_init(&t, 0, q, v, a, NULL, got, B, 0, 0), NULL, &err) ==
          GRID_ERR_ARG);
    CHECK(strstr(err.message, "unknown method id") != NULL);
    grid_model_free(m);
}

/* a provider answers its rows (with workspace from the context, on at most the threads it covers), the reference
   the rest; a provider's failure is reported with the method's name */
static void test_provider_and_workspace(void)
{
    grid_model *m = test_small_arm(0);
    fake_model = m;
    const grid_provider p = fake_provider(m, 0);
    grid_dispatch d;
    grid_error err;
    CHECK(grid_dispatch_init(&d, m, GRID_FLOAT64, &p, GRID_CONVENTION_PINOCCHIO, &err) == GRID_OK);
    grid_context ctx;
    grid_ctx_init(&ctx, NULL);
    double q[B * 16], v[B * 16], a[B * 16], got[B * 256], ref[B * 256];
    random_states(m, q, v, a);
    test_call t;
    grid_call *c = test_call_init(&t, GRID_ALGO_RNEA, q, v, a, NULL, got, B, 0, 0);
    c->num_threads = 16;
    fake_calls = 0;
    /* a provider with workspace needs a context */
    CHECK(grid_dispatch_run(&d, GRID_ALGO_RNEA, c, NULL, &err) == GRID_ERR_ARG && fake_calls == 0);
    c = test_call_init(&t, GRID_ALGO_RNEA, q, v, a, NULL, got, B, 0, 0);
    c->num_threads = 16;
    CHECK(grid_dispatch_run(&d, GRID_ALGO_RNEA, c, &ctx, &err) == GRID_OK);
    CHECK(fake_calls == 1 && fake_threads == 4);                /* capped at the threads the workspace covers */
    CHECK(fake_work != NULL && fake_work_bytes >= 4 * 1000);    /* 1000 bytes for each of them */
    want(m, GRID_ALGO_RNEA, q, v, a, ref);
    CHECK(max_diff(got, ref, B * m->nv, 2.0) == 0.0);           /* the provider's answer, not the reference's */
    CHECK(grid_dispatch_entry(&d, GRID_ALGO_RNEA) == fake_rnea && !grid_dispatch_entry(&d, GRID_ALGO_MINV));
    CHECK(grid_dispatch_needs_context(&d, GRID_ALGO_RNEA) && !grid_dispatch_needs_context(&d, GRID_ALGO_MINV));
    /* two threads get two threads' workspace */
    c = test_call_init(&t, GRID_ALGO_RNEA, q, v, a, NULL, got, B, 0, 0);
    c->num_threads = 2;
    CHECK(grid_dispatch_run(&d, GRID_ALGO_RNEA, c, &ctx, &err) == GRID_OK && fake_threads == 2);
    CHECK(fake_work_bytes >= 2 * 1000 && fake_work_bytes < 4 * 1000);
    /* rows the provider lacks: the reference */
    c = test_call_init(&t, GRID_ALGO_MINV, q, v, a, NULL, got, B, 0, 0);
    CHECK(grid_dispatch_run(&d, GRID_ALGO_MINV, c, &ctx, &err) == GRID_OK);
    want(m, GRID_ALGO_MINV, q, v, a, ref);
    CHECK(max_diff(got, ref, B * m->nv * m->nv, 1.0) == 0.0);
    /* a failing entry point */
    c = test_call_init(&t, GRID_ALGO_CRBA, q, v, a, NULL, got, B, 0, 0);
    CHECK(grid_dispatch_run(&d, GRID_ALGO_CRBA, c, &ctx, &err) == GRID_ERR_CUDA);
    CHECK_MSG(strstr(err.message, "crba failed with status") != NULL, "%s", err.message);
    /* an empty batch runs nothing */
    fake_calls = 0;
    c = test_call_init(&t, GRID_ALGO_RNEA, q, v, a, NULL, got, 0, 0, 0);
    CHECK(grid_dispatch_run(&d, GRID_ALGO_RNEA, c, &ctx, &err) == GRID_OK && fake_calls == 0);
    grid_ctx_free(&ctx);
    /* a provider for other sizes or another dtype is refused */
    grid_provider bad = p;
    bad.nv++;
    CHECK(grid_dispatch_init(&d, m, GRID_FLOAT64, &bad, GRID_CONVENTION_PINOCCHIO, &err) == GRID_ERR_LOAD);
    CHECK(grid_dispatch_init(&d, m, GRID_FLOAT32, &p, GRID_CONVENTION_PINOCCHIO, &err) == GRID_ERR_LOAD);
    grid_model_free(m);
}

/* on a floating base the MuJoCo convention converts around the provider (the provider's RNEA in MuJoCo's basis is
   twice the reference's there too: the conversion is linear in tau); a row it cannot convert is refused by name */
static void test_convention(void)
{
    grid_model *m = test_small_arm(1);
    fake_model = m;
    const grid_provider p = fake_provider(m, 0);
    grid_dispatch dref, dp;
    grid_error err;
    CHECK(grid_dispatch_init(&dref, m, GRID_FLOAT64, NULL, GRID_CONVENTION_MUJOCO, &err) == GRID_OK);
    CHECK(grid_dispatch_init(&dp, m, GRID_FLOAT64, &p, GRID_CONVENTION_MUJOCO, &err) == GRID_OK);
    CHECK(!grid_convention_identity(&dp.conv));
    grid_context ctx;
    grid_ctx_init(&ctx, NULL);
    double q[B * 16], v[B * 16], a[B * 16], x[B * 16], y[B * 16], plain[B * 16];
    random_states(m, q, v, a);
    test_call t;
    grid_call *c = test_call_init(&t, GRID_ALGO_RNEA, q, v, a, NULL, x, B, 0, 0);
    CHECK(grid_dispatch_run(&dref, GRID_ALGO_RNEA, c, NULL, &err) == GRID_ERR_ARG); /* the conversion's scratch */
    CHECK(grid_dispatch_run(&dref, GRID_ALGO_RNEA, c, &ctx, &err) == GRID_OK);
    c = test_call_init(&t, GRID_ALGO_RNEA, q, v, a, NULL, y, B, 0, 0);
    CHECK(grid_dispatch_run(&dp, GRID_ALGO_RNEA, c, &ctx, &err) == GRID_OK);
    CHECK(max_diff(y, x, B * m->nv, 2.0) < 1e-12);
    want(m, GRID_ALGO_RNEA, q, v, a, plain);
    CHECK(max_diff(x, plain, B * m->nv, 1.0) > 1e-6); /* converted: not Pinocchio's numbers */
    grid_ctx_free(&ctx);
    grid_model_free(m);
}

/* device providers: no reference behind them (it cannot read device arrays), no model needed in Pinocchio's
   convention */
static void test_device_provider(void)
{
    grid_model *m = test_small_arm(0);
    fake_model = m;
    grid_provider p = fake_provider(m, 1);
    p.work_bytes = 0;
    p.work_threads = 0;
    grid_dispatch d;
    grid_error err;
    CHECK(grid_dispatch_init(&d, NULL, GRID_FLOAT64, &p, GRID_CONVENTION_PINOCCHIO, &err) == GRID_OK);
    CHECK(grid_dispatch_init(&d, NULL, GRID_FLOAT64, &p, GRID_CONVENTION_MUJOCO, &err) == GRID_ERR_ARG);
    CHECK(grid_dispatch_init(&d, NULL, GRID_FLOAT64, NULL, GRID_CONVENTION_PINOCCHIO, &err) == GRID_ERR_ARG);
    CHECK(grid_dispatch_init(&d, NULL, GRID_FLOAT64, &p, GRID_CONVENTION_PINOCCHIO, &err) == GRID_OK);
    double q[B * 16], v[B * 16], a[B * 16], got[B * 256];
    random_states(m, q, v, a);
    test_call t;
    fake_calls = 0;
    CHECK(grid_dispatch_run(&d, GRID_ALGO_RNEA, test_call_init(&t, GRID_ALGO_RNEA, q, v, a, NULL, got, B, 0, 0), NULL,
                            &err) == GRID_OK && fake_calls == 1);
    CHECK(grid_dispatch_run(&d, GRID_ALGO_MINV, test_call_init(&t, GRID_ALGO_MINV, q, v, a, NULL, got, B, 0, 0), NULL,
                            &err) == GRID_ERR_UNSUPPORTED);
    CHECK_MSG(strstr(err.message, "this library has no minv") != NULL, "%s", err.message);
    grid_model_free(m);
}

int main(void)
{
    RUN_TEST(test_reference_only);
    RUN_TEST(test_provider_and_workspace);
    RUN_TEST(test_convention);
    RUN_TEST(test_device_provider);
    return check_summary("dispatch");
}
