// Appended to an emulated robot.cu (cuda_emu.h): runs every algorithm variant through grid_cuda_<algo> (kernels) and
// grid_host_<algo> (the host round trip) on random inputs and compares with the C target's robot.so (argv[1]) at the
// batch sizes argv[2..]. Prints one line per mismatch and a summary; exit status 1 on any mismatch.
#include <algorithm>
#include <dlfcn.h>
#include <random>
#define EMU_N_ALGO 10
static const char *emu_names[EMU_N_ALGO] = {"rnea", "nle", "gravity", "crba", "minv", "fd", "aba", "fk", "ee_pose",
                                            "frame_jacobian"};
static int (*emu_device[EMU_N_ALGO])(const grid_call *) = {
    grid_cuda_rnea, grid_cuda_nle, grid_cuda_gravity, grid_cuda_crba, grid_cuda_minv,
    grid_cuda_fd, grid_cuda_aba, grid_cuda_fk, grid_cuda_ee_pose, grid_cuda_frame_jacobian};
static int (*emu_host[EMU_N_ALGO])(const grid_call *) = {
    grid_host_rnea, grid_host_nle, grid_host_gravity, grid_host_crba, grid_host_minv,
    grid_host_fd, grid_host_aba, grid_host_fk, grid_host_ee_pose, grid_host_frame_jacobian};

int main(int argc, char **argv)
{
    typedef int (*cpu_fn)(const grid_call *);
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        printf("dlopen: %s\n", dlerror());
        return 2;
    }
    const grid_robot_meta_t *m = grid_robot_meta();
    const int nq = m->nq, nv = m->nv, nb = m->nb, nee = m->nee;
    const double tol = sizeof(grid_real) == 8 ? 1e-10 : 1e-4;
    int fails = 0, checks = 0;
    std::mt19937_64 rng(42);
    std::uniform_real_distribution<double> U(-1.5, 1.5);
    for (int ni = 2; ni < argc; ni++) {
        const long long n = atoll(argv[ni]);
        std::vector<grid_real> q(n * nq), v(n * nv), a(n * nv), f(n * 6 * nb);
        for (auto *x : {&q, &v, &a, &f})
            for (auto &e : *x) e = (grid_real)U(rng);
        for (int al = 0; al < EMU_N_ALGO; al++) {
            const long long w = (al == 3 || al == 4) ? (long long)nv * nv : al == 7 ? 16LL * nb
                              : al == 8 ? 6LL * nee : al == 9 ? 6LL * nv : nv;
            char sym[64];
            snprintf(sym, sizeof sym, "grid_%s", emu_names[al]);
            cpu_fn cpu = (cpu_fn)dlsym(h, sym);
            /* RNEA: a and fext each given or not; FD/ABA: fext or not; Jacobian: the three reference frames */
            const int nvar = al == 0 ? 4 : (al == 5 || al == 6) ? 2 : al == 9 ? 3 : 1;
            for (int var = 0; var < nvar; var++) {
                grid_call c;
                memset(&c, 0, sizeof c);
                c.q = q.data();
                c.batch = n;
                c.num_threads = 1;
                if (al == 0 || al == 1 || al == 5 || al == 6) c.v = v.data();
                if (al == 0 && (var & 1)) c.a = a.data();
                if (al == 0 && (var & 2)) c.fext = f.data();
                if (al == 5 || al == 6) {
                    c.a = a.data();
                    if (var) c.fext = f.data();
                }
                if (al == 9) {
                    c.frame = m->nframes - 1;
                    c.reference_frame = var;
                }
                /* one element past the end stays NaN: nothing writes beyond the batch */
                std::vector<grid_real> oc(n * w + 1, NAN), od(n * w + 1, NAN), oh(n * w + 1, NAN);
                c.out = oc.data();
                const int rc_cpu = cpu(&c);
                c.out = od.data();
                const int rc_dev = emu_device[al](&c);
                c.out = oh.data();
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
                           emu_names[al], var, n, rc_cpu, rc_dev, rc_host, nonfinite, host_differs, canary, rel);
            }
        }
    }
    printf("%d checks, %d mismatches; largest dynamic shared memory %lld bytes\n", checks, fails, emu_smem_max);
    return fails != 0;
}
