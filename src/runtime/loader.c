/* Loading a generated robot.so: dlopen, ABI and metadata checks, its method rows against the signature table, entry-point resolution. */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include "grid/abi.h"
#include "grid/runtime.h"

struct grid_lib {
    void *handle;
    const grid_robot_meta_t *meta;
    const grid_method_info *row[GRID_ALGO_COUNT];  /* the library's row of each package row, NULL = absent */
    grid_batch_fn host[GRID_ALGO_COUNT];
    grid_batch_fn device[GRID_ALGO_COUNT];
    char *path;
};

grid_lib_expect grid_lib_expect_any(void)
{
    grid_lib_expect e = {-1, -1, -1, 0, -1, NULL, NULL, 0, 0};
    return e;
}

static const char *dtype_name(int dtype)
{
    return dtype == GRID_FLOAT32 ? "float32" : dtype == GRID_FLOAT64 ? "float64" : "unknown";
}

/* resolve one symbol through dlsym (the function-pointer cast goes through memcpy, as ISO C wants) */
static grid_batch_fn lookup_fn(void *handle, const char *name)
{
    void *sym = dlsym(handle, name);
    grid_batch_fn fn = NULL;
    if (sym) memcpy(&fn, &sym, sizeof fn);
    return fn;
}

/* compare the metadata with the expectations; GRID_OK or GRID_ERR_LOAD naming the first mismatch */
static int check_meta(const grid_robot_meta_t *m, const grid_lib_expect *x, const char *path, grid_error *err)
{
    if (m->abi_version != GRID_ABI_VERSION)
        return grid_error_set(err, GRID_ERR_LOAD, 0, 0,
                              "%s: abi_version %d, this grid-rbd needs %d; rebuild it (force_rebuild=True)",
                              path, m->abi_version, GRID_ABI_VERSION);
    if (!x) return GRID_OK;
    const struct { const char *what; int want, have; } sizes[] = {
        {"nq", x->nq, m->nq}, {"nv", x->nv, m->nv}, {"nb", x->nb, m->nb},
    };
    for (int i = 0; i < 3; i++)
        if (sizes[i].want >= 0 && sizes[i].want != sizes[i].have)
            return grid_error_set(err, GRID_ERR_LOAD, 0, 0, "%s: %s is %d, the model has %d", path,
                                  sizes[i].what, sizes[i].have, sizes[i].want);
    if (x->dtype && x->dtype != m->dtype)
        return grid_error_set(err, GRID_ERR_LOAD, 0, 0, "%s: dtype is %s, expected %s", path,
                              dtype_name(m->dtype), dtype_name(x->dtype));
    if (x->target >= 0 && x->target != m->target)
        return grid_error_set(err, GRID_ERR_LOAD, 0, 0, "%s: target is %s, expected %s", path,
                              m->target ? "CUDA" : "C", x->target ? "CUDA" : "C");
    if (x->model_hash && (!m->model_hash || strcmp(x->model_hash, m->model_hash) != 0))
        return grid_error_set(err, GRID_ERR_LOAD, 0, 0, "%s: model_hash %.64s does not match the model %.64s",
                              path, m->model_hash ? m->model_hash : "(none)", x->model_hash);
    return GRID_OK;
}

/* match every row the library exports with the package's table (a row this grid-rbd does not know, a
   duplicate, or one whose shapes differ for the library's sizes is refused), then the expected rows */
static int check_rows(grid_lib *lib, const grid_lib_expect *x, const char *path, grid_error *err)
{
    const grid_robot_meta_t *m = lib->meta;
    if (m->n_methods < 0 || (m->n_methods > 0 && !m->methods))
        return grid_error_set(err, GRID_ERR_LOAD, 0, 0, "%s: its metadata lists %d methods without rows", path,
                              m->n_methods);
    const grid_sizes sz = grid_sizes_of(m->nq, m->nv, m->nb, m->nee, m->nframes);
    for (int i = 0; i < m->n_methods; i++) {
        const grid_method_info *r = &m->methods[i];
        int id = r->name ? grid_sig_find(r->name) : -1;
        if (id < 0)
            return grid_error_set(err, GRID_ERR_LOAD, 0, 0,
                                  "%s: method %.64s is not in this grid-rbd's signature table; rebuild it", path,
                                  r->name ? r->name : "(unnamed)");
        if (lib->row[id])
            return grid_error_set(err, GRID_ERR_LOAD, 0, 0, "%s: method %s is listed twice", path, r->name);
        char why[256];
        if (grid_sig_mismatch(id, &sz, r, why, sizeof why))
            return grid_error_set(err, GRID_ERR_LOAD, 0, 0,
                                  "%s: method %s does not match this grid-rbd's signature table: %s; rebuild it "
                                  "(force_rebuild=True)",
                                  path, r->name, why);
        if (r->work_bytes > m->work_bytes)
            return grid_error_set(err, GRID_ERR_LOAD, 0, 0, "%s: method %s needs %zu bytes of workspace per thread, "
                                  "its metadata says %zu", path, r->name, r->work_bytes, m->work_bytes);
        lib->row[id] = r;
    }
    for (int k = 0; x && k < x->n_methods; k++) {
        int id = x->methods ? x->methods[k] : -1;
        if (id < 0 || id >= GRID_ALGO_COUNT)
            return grid_error_set(err, GRID_ERR_ARG, 0, 0, "grid_lib_open: unknown method id %d expected", id);
        if (!lib->row[id])
            return grid_error_set(err, GRID_ERR_LOAD, 0, 0, "%s: algorithm %s was not built into this library",
                                  path, grid_algo_name(id));
    }
    return GRID_OK;
}

/* dl_name is what dlopen is given, so_path what messages and grid_lib_path name */
static int lib_open(const char *dl_name, const char *so_path, const grid_lib_expect *expect, grid_lib **out,
                    grid_error *err)
{
    *out = NULL;
    if (!so_path || !*so_path) return grid_error_set(err, GRID_ERR_ARG, 0, 0, "grid_lib_open: no library path");
    grid_lib *lib = calloc(1, sizeof *lib);
    if (!lib || !(lib->path = strdup(so_path))) {
        free(lib);
        return grid_error_set(err, GRID_ERR_NOMEM, 0, 0, "out of memory loading %s", so_path);
    }
    int rc;

    /* load with every symbol bound now, private to this library */
    dlerror();
    int keep = !(expect && expect->inspect_only);
    /* checked before it is kept: a library that fails a check is unloaded again (no code of it ran) */
    lib->handle = dlopen(dl_name, RTLD_NOW | RTLD_LOCAL);
    if (!lib->handle) {
        const char *why = dlerror();
        rc = grid_error_set(err, GRID_ERR_LOAD, 0, 0, "cannot load %s: %s", so_path, why ? why : "dlopen failed");
        goto fail;
    }

    /* the metadata */
    void *sym = dlsym(lib->handle, "grid_robot_meta");
    const grid_robot_meta_t *(*meta_fn)(void) = NULL;
    if (sym) memcpy(&meta_fn, &sym, sizeof meta_fn);
    if (!meta_fn) {
        rc = grid_error_set(err, GRID_ERR_LOAD, 0, 0, "%s is not a grid-rbd robot library: no grid_robot_meta symbol",
                            so_path);
        goto fail;
    }
    lib->meta = meta_fn();
    if (!lib->meta) {
        rc = grid_error_set(err, GRID_ERR_LOAD, 0, 0, "%s: grid_robot_meta() returned NULL", so_path);
        goto fail;
    }
    if ((rc = check_meta(lib->meta, expect, so_path, err))) goto fail;
    if (lib->meta->target != 0 && lib->meta->target != 1) {
        rc = grid_error_set(err, GRID_ERR_LOAD, 0, 0, "%s: unknown target %d in its metadata", so_path,
                            lib->meta->target);
        goto fail;
    }

    if ((rc = check_rows(lib, expect, so_path, err))) goto fail;

    /* every row: grid_<name>, and grid_cuda_<name> on a CUDA library */
    for (int a = 0; a < GRID_ALGO_COUNT; a++) {
        if (!lib->row[a]) continue;
        char name[96];
        snprintf(name, sizeof name, "grid_%s", grid_algo_name(a));
        if (!(lib->host[a] = lookup_fn(lib->handle, name))) {
            rc = grid_error_set(err, GRID_ERR_LOAD, 0, 0, "%s: its method table lists %s but the symbol %s is missing",
                                so_path, grid_algo_name(a), name);
            goto fail;
        }
        if (lib->meta->target != 1) continue;
        snprintf(name, sizeof name, "grid_cuda_%s", grid_algo_name(a));
        if (!(lib->device[a] = lookup_fn(lib->handle, name))) {
            rc = grid_error_set(err, GRID_ERR_LOAD, 0, 0, "%s: its method table lists %s but the symbol %s is missing",
                                so_path, grid_algo_name(a), name);
            goto fail;
        }
    }
    /* kept mapped for the life of the process: OpenMP worker threads must not outlive the libgomp the library
       pulled in (docs/cache.md, "Loader"); loading the same file again returns this mapping */
    if (keep) {
        void *pin = dlopen(dl_name, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD | RTLD_NODELETE);
        if (pin) dlclose(pin);
    }
    *out = lib;
    return GRID_OK;
fail:
    grid_lib_close(lib);
    return rc;
}

int grid_lib_pin_openmp(const grid_lib *lib)
{
    /* the runtime is whichever object defines omp_get_max_threads for the library (libgomp, libomp, ...) */
    void *sym = lib && lib->handle ? dlsym(lib->handle, "omp_get_max_threads") : NULL;
    Dl_info info;
    if (!sym || !dladdr(sym, &info) || !info.dli_fname) return 0;
    void *pin = dlopen(info.dli_fname, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD | RTLD_NODELETE);
    if (!pin) return 0;
    dlclose(pin);
    return 1;
}

int grid_lib_open(const char *so_path, const grid_lib_expect *expect, grid_lib **out, grid_error *err)
{
    return lib_open(so_path, so_path, expect, out, err);
}

int grid_lib_open_fd(int fd, const char *so_path, const grid_lib_expect *expect, grid_lib **out, grid_error *err)
{
    *out = NULL;
    if (fd < 0) return grid_lib_open(so_path, expect, out, err);
    if (!so_path) so_path = "(descriptor)";
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        return grid_error_set(err, GRID_ERR_LOAD, 0, 0, "cannot load %s: not an open regular file", so_path);
    /* dlopen matches a name it has loaded before without opening anything, and every library stays loaded, so
       "/proc/self/fd/N" would find whatever an earlier descriptor N held. Each call spells the path anew:
       "/proc/self/fd/" then one "./" (bit 1) or ".//" (bit 0) per bit of a process-wide serial, then N. The
       kernel resolves every spelling to the descriptor; dlopen then compares the file's device and inode with
       the loaded libraries, so the same file loaded again shares its one mapping. */
    static unsigned long long serial;
    unsigned long long s = __atomic_add_fetch(&serial, 1, __ATOMIC_RELAXED);
    char name[64 + 3 * 64 + 24];
    size_t n = (size_t)snprintf(name, sizeof name, "/proc/self/fd/");
    for (; s; s >>= 1) n += (size_t)snprintf(name + n, sizeof name - n, "%s", (s & 1) ? "./" : ".//");
    snprintf(name + n, sizeof name - n, "%d", fd);
    if (access(name, R_OK) != 0) return grid_lib_open(so_path, expect, out, err); /* no /proc: by path */
    return lib_open(name, so_path, expect, out, err);
}

grid_batch_fn grid_lib_fn(const grid_lib *lib, int algo)
{
    return lib && algo >= 0 && algo < GRID_ALGO_COUNT ? lib->host[algo] : NULL;
}

grid_batch_fn grid_lib_cuda_fn(const grid_lib *lib, int algo)
{
    return lib && algo >= 0 && algo < GRID_ALGO_COUNT ? lib->device[algo] : NULL;
}

grid_cuda_convention_fn grid_lib_cuda_convention(const grid_lib *lib)
{
    if (!lib || lib->meta->target != GRID_TARGET_CUDA) return NULL;
    void *sym = dlsym(lib->handle, "grid_cuda_convention_call");
    grid_cuda_convention_fn fn = NULL;
    if (sym) memcpy(&fn, &sym, sizeof fn);
    return fn;
}

const grid_method_info *grid_lib_method(const grid_lib *lib, int algo)
{
    return lib && algo >= 0 && algo < GRID_ALGO_COUNT ? lib->row[algo] : NULL;
}

const grid_robot_meta_t *grid_lib_meta(const grid_lib *lib)
{
    return lib ? lib->meta : NULL;
}

const char *grid_lib_path(const grid_lib *lib)
{
    return lib ? lib->path : NULL;
}

void grid_lib_close(grid_lib *lib)
{
    if (!lib) return;
    if (lib->handle) dlclose(lib->handle);
    free(lib->path);
    free(lib);
}
