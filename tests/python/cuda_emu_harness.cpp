// Appended to an emulated robot.cu (cuda_emu.h): runs every row of the library (meta.methods) through grid_cuda_<name>
// (kernels) and grid_host_<name> (the host round trip) on random inputs, every combination of its optional inputs and
// every value of its attributes (a "frame" attribute: the last frame), and compares with the C target's robot.so
// (argv[1]) at the batch sizes argv[2..]. Prints one line per mismatch and a summary; exit status 1 on any mismatch.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <dlfcn.h>
#include <random>
#include <string>
#include "cuda_emu_rows.h"

int main(int argc, char **argv)
{
    typedef int (*cpu_fn)(const grid_call *);
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        printf("dlopen: %s\n", dlerror());
        return 2;
    }
    const grid_robot_meta_t *m = grid_robot_meta();
    typedef const grid_robot_meta_t *(*meta_fn)(void);
    meta_fn cpu_meta = (meta_fn)dlsym(h, "grid_robot_meta");
    const size_t cpu_work = cpu_meta ? cpu_meta()->work_bytes : 0;
    const double tol = sizeof(grid_real) == 8 ? 1e-10 : 1e-4;
    int fails = 0, checks = 0;
    std::mt19937_64 rng(42);
    std::uniform_real_distribution<double> U(-1.5, 1.5);
    for (int ni = 2; ni < argc; ni++) {
        const long long n = atoll(argv[ni]);
        for (int ri = 0; ri < m->n_methods; ri++) {
            const grid_method_info *r = &m->methods[ri];
            /* EMU_SKIP_GRADIENTS=1: the runtime-knob variants leave the derivatives (row names ending in _grad or _vjp)
               to the default configurations, which run them (their kernels are the same code under every knob) */
            const std::string rn(r->name);
            const auto ends = [&rn](const char *sfx) {
                const size_t k = strlen(sfx);
                return rn.size() > k && rn.compare(rn.size() - k, k, sfx) == 0;
            };
            if (getenv("EMU_SKIP_GRADIENTS") && (ends("_grad") || ends("_vjp"))) continue;
            int al = -1;
            for (int k = 0; k < EMU_N_ALGO; k++)
                if (std::string(emu_names[k]) == r->name) al = k;
            if (al < 0) {
                printf("MISMATCH %s: the harness has no entry points of this row\n", r->name);
                fails++;
                continue;
            }
            /* one random array per input; the optional ones toggled by the low bits of the variant */
            std::vector<std::vector<grid_real>> in(r->n_in);
            int opt[GRID_MAX_IN], n_opt = 0;
            for (int k = 0; k < r->n_in; k++) {
                in[k].resize(n * r->in[k].width + 1);
                for (auto &e : in[k]) e = (grid_real)U(rng);
                if (std::string(r->in[k].name) == "target") /* [frame id, offset]: every frame in turn */
                    for (long long s = 0; s < n; s++) in[k][4 * s] = (grid_real)(m->nframes > 0 ? s % m->nframes : 0);
                if (r->in[k].optional) opt[n_opt++] = k;
            }
            /* attributes: "frame" is the last frame, any other is swept over its range */
            int sweep = 1;
            for (int k = 0; k < r->n_attr; k++)
                if (std::string(r->attr_name[k]) != "frame") sweep *= r->attr_hi[k] - r->attr_lo[k];
            /* every output's elements per state; output k's batch block starts at n * off[k] */
            long long w = 0, off[GRID_MAX_OUT] = {0};
            for (int k = 0; k < r->n_out; k++) {
                off[k] = w;
                w += r->out[k].width;
            }
            char sym[64];
            snprintf(sym, sizeof sym, "grid_%s", r->name);
            cpu_fn cpu = (cpu_fn)dlsym(h, sym);
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
                /* one element past the end stays NaN: nothing writes beyond the batch */
                std::vector<grid_real> oc(n * w + 1, NAN), od(n * w + 1, NAN), oh(n * w + 1, NAN);
                const auto outputs = [&](grid_real *base) {
                    for (int k = 0; k < r->n_out; k++) op[k] = base + n * off[k];
                };
                outputs(oc.data());
                /* the C library's own workspace (its rows state it: composites and rolled functions take one) */
                std::vector<unsigned char> cws(cpu_work + 64);
                /* aligned to 64 bytes, as the ABI asks (lane functions keep vectors there) */
                unsigned char *cw = cws.data() + ((64 - (reinterpret_cast<uintptr_t>(cws.data()) & 63)) & 63);
                c.work = cpu_work ? cw : NULL;
                c.work_bytes = cpu_work;
                const int rc_cpu = cpu ? cpu(&c) : -1;
                c.work = NULL;
                c.work_bytes = 0;
                outputs(od.data());
                const int rc_dev = emu_device[al](&c);
                outputs(oh.data());
                const int rc_host = emu_host[al](&c);
                double maxd = 0, maxa = 0;
                long long nonfinite = 0, host_differs = 0;
                for (long long i = 0; i < n * w; i++) {
                    nonfinite += !std::isfinite((double)od[i]);
                    host_differs += memcmp(&od[i], &oh[i], sizeof(grid_real)) != 0;
                    maxd = std::max(maxd, (double)std::fabs(od[i] - oc[i]));
                    maxa = std::max(maxa, (double)std::fabs(oc[i]));
                }
                const bool canary = std::isnan((double)od[n * w]) && std::isnan((double)oh[n * w]);
                const double rel = maxd / std::max(maxa, 1e-30);
                const bool bad = rc_cpu || rc_dev || rc_host || nonfinite || host_differs || !canary || !(rel <= tol);
                checks++;
                fails += bad;
                if (bad)
                    printf("MISMATCH %s variant %d B=%lld: status cpu %d kernel %d host %d, non-finite %lld, host round trip "
                           "differs in %lld, canary %d, relative difference %.3e\n",
                           r->name, var, n, rc_cpu, rc_dev, rc_host, nonfinite, host_differs, canary, rel);
            }
        }
    }
    if (emu_async_live != 0) {
        printf("MISMATCH: %d stream-ordered workspace allocations were not freed\n", emu_async_live);
        fails++;
    }
    printf("%d checks, %d mismatches; largest dynamic shared memory %lld bytes\n", checks, fails, emu_smem_max);
    return fails != 0;
}
