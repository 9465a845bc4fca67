// Appended to an emulated robot.cu of a floating-base robot (cuda_emu.h) and linked with libgrid.a: every row in MuJoCo's
// output convention through the runtime's grid_cuda_convention_call, on device arrays (grid_cuda_<row>: converted
// inputs in stream-ordered scratch, the output converted after the kernels) and on host arrays (grid_host_<row>: each
// chunk's device buffers converted in place), against the CPU passes (convention.c) around the C target's robot.so
// (argv[1]) of the URDF argv[2], at the batch sizes argv[3..]. The caller's inputs must come back untouched. Prints one
// line per mismatch and a summary; exit status 1 on any mismatch.
#include <dlfcn.h>
#include <random>
#include <string>
#undef GRID_CONV_TYPES_ONLY /* the runtime above took the types alone; the host API too */
#include "grid/convention.h"
#include "grid/urdf.h"
#include "cuda_emu_rows.h"

typedef int (*cpu_fn)(const grid_call *);
alignas(64) static char emu_cpu_work[16 << 20];
static cpu_fn emu_cpu[EMU_N_ALGO];

static int emu_cpu_run(void *user, int algo, const grid_call *c)
{
    (void)user;
    return emu_cpu[algo](c);
}

int main(int argc, char **argv)
{
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        printf("dlopen: %s\n", dlerror());
        return 2;
    }
    for (int k = 0; k < EMU_N_ALGO; k++) {
        char sym[64];
        snprintf(sym, sizeof sym, "grid_%s", emu_names[k]);
        emu_cpu[k] = (cpu_fn)dlsym(h, sym);
    }
    grid_model_options o = grid_model_options_default();
    o.floating_base = 1;
    grid_model *model = NULL;
    grid_error err;
    if (grid_urdf_load_file(argv[2], &o, &model, &err) != GRID_OK) {
        printf("URDF: %s\n", err.message);
        return 2;
    }
    grid_convention cv;
    if (grid_convention_init(&cv, model, GRID_CONVENTION_MUJOCO, &err) != GRID_OK || cv.n_free != 1) {
        printf("convention: %s\n", err.message);
        return 2;
    }
    const grid_robot_meta_t *m = grid_robot_meta();
    if (m->nq != model->nq || m->nv != model->nv) {
        printf("the URDF is not the library's robot\n");
        return 2;
    }
    grid_context ctx;
    grid_ctx_init(&ctx, NULL);
    const double tol = sizeof(grid_real) == 8 ? 1e-10 : 1e-4;
    int fails = 0, checks = 0;
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> U(-1.5, 1.5);
    for (int ni = 3; ni < argc; ni++) {
        const long long n = atoll(argv[ni]);
        for (int ri = 0; ri < m->n_methods; ri++) {
            const grid_method_info *r = &m->methods[ri];
            int al = -1;
            for (int k = 0; k < EMU_N_ALGO; k++)
                if (std::string(emu_names[k]) == r->name) al = k;
            if (al < 0 || !emu_cpu[al]) {
                printf("MISMATCH %s: no entry points for this row\n", r->name);
                fails++;
                continue;
            }
            std::vector<std::vector<grid_real>> in(r->n_in), keep(r->n_in);
            int opt[GRID_MAX_IN], n_opt = 0;
            for (int k = 0; k < r->n_in; k++) {
                in[k].resize(n * r->in[k].width + 1);
                for (auto &e : in[k]) e = (grid_real)(U(rng) * (k ? 5.0 : 1.0));
                if (std::string(r->in[k].name) == "target") /* [frame id, offset]: every frame in turn */
                    for (long long s = 0; s < n; s++) in[k][4 * s] = (grid_real)(m->nframes > 0 ? s % m->nframes : 0);
                keep[k] = in[k];
                if (r->in[k].optional) opt[n_opt++] = k;
            }
            int sweep = 1;
            for (int k = 0; k < r->n_attr; k++)
                if (std::string(r->attr_name[k]) != "frame") sweep *= r->attr_hi[k] - r->attr_lo[k];
            /* every output's elements per state; output k's batch block starts at n * off[k] */
            long long w = 0, off[GRID_MAX_OUT] = {0};
            for (int k = 0; k < r->n_out; k++) {
                off[k] = w;
                w += r->out[k].width;
            }
            for (int var = 0; var < (1 << n_opt) * sweep; var++) {
                const void *ip[GRID_MAX_IN] = {0};
                void *op[GRID_MAX_OUT] = {0};
                for (int k = 0; k < r->n_in; k++) ip[k] = in[k].data();
                for (int j = 0; j < n_opt; j++)
                    if (!((var >> j) & 1)) ip[opt[j]] = NULL;
                grid_call c;
                memset(&c, 0, sizeof c);
                c.in = ip;
                c.out = op;
                c.n_in = r->n_in;
                c.n_out = r->n_out;
                c.batch = n;
                c.num_threads = 1;
                c.work = emu_cpu_work; /* the C target's workspace (its rolled and lane functions need one) */
                c.work_bytes = sizeof emu_cpu_work;
                int rest = var >> n_opt;
                for (int k = 0; k < r->n_attr; k++) {
                    if (std::string(r->attr_name[k]) == "frame") {
                        c.attr[k] = r->attr_hi[k] - 1;
                    } else {
                        const int span = r->attr_hi[k] - r->attr_lo[k];
                        c.attr[k] = r->attr_lo[k] + rest % span;
                        rest /= span;
                    }
                }
                /* the CPU convention around the C target */
                std::vector<grid_real> oc(n * w + 1, NAN), od(n * w + 1, NAN), oh(n * w + 1, NAN);
                const auto outputs = [&](grid_real *base) {
                    for (int k = 0; k < r->n_out; k++) op[k] = base + n * off[k];
                };
                outputs(oc.data());
                const int rc_cpu = grid_convention_call(&cv, al, (int)sizeof(grid_real), &c, &ctx, emu_cpu_run, NULL, 0);
                /* the job's run row with the caller's arrays */
                grid_conv_job job;
                const int rc_job = grid_convention_job(&cv, al, ip, &job);
                if (rc_job == GRID_ERR_UNSUPPORTED && rc_cpu == rc_job) {
                    /* a row without a conversion (no quantity): refused on every path alike, nothing to run */
                    checks++;
                    continue;
                }
                const void *rp[GRID_MAX_IN] = {0}, *hp[GRID_MAX_IN] = {0};
                for (int k = 0; k < job.n_in; k++) rp[k] = hp[k] = job.src[k] >= 0 ? ip[job.src[k]] : NULL;
                if (job.a_zero) hp[job.slot_a] = hp[job.slot_v]; /* a buffer for the round trip to build it in */
                grid_call cr = c;
                cr.work = NULL; /* the CUDA entry points take their own device workspace */
                cr.work_bytes = 0;
                cr.in = rp;
                cr.n_in = job.n_in;
                outputs(od.data());
                grid_batch_fn fns[1 + GRID_CONV_MAX_AUX] = {emu_device[job.run_algo]};
                for (int x = 0; x < job.n_aux; x++) fns[1 + x] = emu_device[job.aux[x]];
                const int rc_dev = grid_cuda_convention_call(&job, fns, &cr, 0);
                cr.in = hp;
                outputs(oh.data());
                grid_batch_fn hfn = emu_host[job.run_algo];
                /* a derivative's chain rule (aux rows) is the device path's alone: the host round trip refuses it
                   (the Python runner converts those on the host around whole chunks) and the CPU's answer stands in */
                int rc_host = grid_cuda_convention_call(&job, &hfn, &cr, 1);
                if (job.n_aux > 0) {
                    rc_host = rc_host == 7 ? 0 : -rc_host - 1;
                    oh = oc;
                }
                double maxd = 0, maxh = 0, maxa = 0;
                long long nonfinite = 0, touched = 0;
                for (long long i = 0; i < n * w; i++) {
                    nonfinite += !std::isfinite((double)od[i]) + !std::isfinite((double)oh[i]);
                    maxd = std::max(maxd, (double)std::fabs(od[i] - oc[i]));
                    maxh = std::max(maxh, (double)std::fabs(oh[i] - oc[i]));
                    maxa = std::max(maxa, (double)std::fabs(oc[i]));
                }
                for (int k = 0; k < r->n_in; k++) touched += in[k] != keep[k];
                const bool canary = std::isnan((double)od[n * w]) && std::isnan((double)oh[n * w]);
                const double rd = maxd / std::max(maxa, 1e-30), rh = maxh / std::max(maxa, 1e-30);
                const bool bad = rc_cpu || rc_job || rc_dev || rc_host || nonfinite || touched || !canary ||
                                 !(rd <= tol) || !(rh <= tol);
                checks++;
                fails += bad;
                if (bad)
                    printf("MISMATCH %s variant %d B=%lld (runs %s): status cpu %d job %d device %d host %d, non-finite "
                           "%lld, inputs changed %lld, canary %d, relative difference device %.3e host %.3e\n",
                           r->name, var, n, emu_names[job.run_algo], rc_cpu, rc_job, rc_dev, rc_host, nonfinite,
                           touched, canary, rd, rh);
            }
        }
    }
    if (emu_async_live != 0) {
        printf("MISMATCH: %d stream-ordered allocations were not freed\n", emu_async_live);
        fails++;
    }
    grid_ctx_free(&ctx);
    grid_model_free(model);
    printf("%d checks, %d mismatches\n", checks, fails);
    return fails != 0;
}
