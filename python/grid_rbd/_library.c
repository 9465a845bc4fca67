/* _core.Library: emit -> grid_build (the cache) -> grid_lib_open for one robot, without the GIL, and the provider capsule a Runner calls. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "_core.h"
#include "grid/build.h"
#include "grid/emit.h"
#include "grid/runtime.h"
#include "grid/selfcheck.h"

/* threads a provider workspace is sized for when the library needs per-thread scratch */
#define GRID_PY_WORK_THREADS_MIN 64

typedef struct {
    PyObject_HEAD
    GridPyModel *model_obj;       /* keeps the grid_model alive */
    grid_lib *lib;                /* NULL when built with load=False */
    grid_provider provider;       /* filled from the library's entry points (grid/dispatch.h) */
    char provider_name[96];
    int work_threads;             /* threads provider.work_bytes covers (0 when no scratch is needed) */
    grid_build_result res;
    char model_hash[65];
    int dtype;
    int schedule;                 /* the grid_schedule the source was generated with */
} GridPyLibrary;

/* ---- hashing ---- */

/* a length-prefixed field: no two field lists hash the same bytes */
static void hash_field(grid_sha256_ctx *c, const void *data, size_t len)
{
    unsigned char prefix[8];
    for (int i = 0; i < 8; i++) prefix[i] = (unsigned char)((unsigned long long)len >> (8 * i));
    grid_sha256_update(c, prefix, 8);
    grid_sha256_update(c, data, len);
}

/* the model hash baked into generated code: SHA-256 over the URDF bytes and the canonical options JSON */
static void model_hash_hex(const void *urdf, size_t urdf_len, const char *options, size_t options_len, char hex[65])
{
    static const char tag[] = "grid-rbd model hash v1";
    grid_sha256_ctx c;
    unsigned char d[32];
    grid_sha256_init(&c);
    hash_field(&c, tag, sizeof tag - 1);
    hash_field(&c, urdf, urdf_len);
    hash_field(&c, options, options_len);
    grid_sha256_final(&c, d);
    grid_sha256_hex(d, hex);
}

/* ---- the generate callback: runs only on a stage-1 miss ---- */

typedef struct {
    const grid_model *model;
    grid_emit_options opts;
} generate_ctx;

static int generate_source(void *ctx, char **source, size_t *len, grid_error *err)
{
    const generate_ctx *g = ctx;
    return grid_emit_source(g->model, &g->opts, source, len, err);
}

/* the build's cancel check (called without the GIL about every 0.1 s while it waits): a pending signal whose
   handler raises (Ctrl-C: KeyboardInterrupt) stops the build; the exception stays set for the caller */
static int check_signals(void *ctx)
{
    (void)ctx;
    PyGILState_STATE st = PyGILState_Ensure();
    int stop = PyErr_Occurred() != NULL || PyErr_CheckSignals() < 0;
    PyGILState_Release(st);
    return stop;
}

/* ---- construction ---- */

static int fill_provider(GridPyLibrary *self)
{
    const grid_robot_meta_t *meta = grid_lib_meta(self->lib);
    snprintf(self->provider_name, sizeof self->provider_name, "generated (%s %s, robot.so)",
             meta->dtype == GRID_FLOAT32 ? "float32" : "float64", meta->target == GRID_TARGET_CUDA ? "CUDA" : "C");
    /* the workspace covers every CPU (at least GRID_PY_WORK_THREADS_MIN threads) of a C library that needs one */
    self->work_threads = 0;
    if (meta->work_bytes > 0 && meta->target != GRID_TARGET_CUDA) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        self->work_threads = n > GRID_PY_WORK_THREADS_MIN ? (int)n : GRID_PY_WORK_THREADS_MIN;
    }
    grid_error err;
    grid_error_clear(&err);
    const int rc = grid_provider_of_lib(self->lib, 0, self->work_threads, self->provider_name, &self->provider, &err);
    if (rc != GRID_OK) grid_py_raise_error(rc, &err, NULL);
    return rc == GRID_OK ? 0 : -1;
}

/* the post-build self-check (grid_build_request.check): the fresh library loads as the model expects and, on the
   CPU, agrees with the float64 reference (grid/selfcheck.h) */
typedef struct {
    const grid_model *model;
    const grid_lib_expect *expect;
} self_check_ctx;

/* selfcheck.json beside robot.so: what the check saw, published with the entry */
static int write_report(const grid_selfcheck_report *rep, int dtype, const char *so_path, grid_error *err)
{
    char json[8192], path[4096];
    const char *slash = strrchr(so_path, '/');
    const int dir = slash ? (int)(slash - so_path) : 1;
    if (grid_selfcheck_report_json(rep, dtype, json, sizeof json) < 0 ||
        snprintf(path, sizeof path, "%.*s/selfcheck.json", dir, slash ? so_path : ".") >= (int)sizeof path)
        return grid_error_set(err, GRID_ERR_BUILD, 0, 0, "self-check: its report does not fit");
    FILE *f = fopen(path, "w");
    const size_t len = strlen(json);
    const int ok = f && fwrite(json, 1, len, f) == len;
    if (f && fclose(f) != 0) return grid_error_set(err, GRID_ERR_CACHE, 0, 0, "cannot write %s", path);
    return ok ? GRID_OK : grid_error_set(err, GRID_ERR_CACHE, 0, 0, "cannot write %s", path);
}

static int self_check(void *ctx, const char *so_path, grid_error *err)
{
    const self_check_ctx *sc = ctx;
    if (sc->expect->target == GRID_TARGET_CUDA) return GRID_OK; /* not opened: a build machine may lack the GPU
                                                                  runtime (precompile); the GPU tests cover it */
    grid_lib *lib = NULL;
    grid_error le;
    grid_error_clear(&le);
    /* unloaded again after the check (so precompile leaves nothing mapped, and a later change to the file cannot
       fault this process); the check pins the OpenMP runtime its large batches ran their teams on */
    grid_lib_expect x = *sc->expect;
    x.inspect_only = 1;
    int rc = grid_lib_open(so_path, &x, &lib, &le);
    if (rc == GRID_OK) {
        grid_selfcheck_report rep;
        rc = grid_lib_selfcheck(lib, sc->model, &rep, err);
        if (rc == GRID_OK) rc = write_report(&rep, grid_lib_meta(lib)->dtype, so_path, err);
    } else /* a library that does not load as this model's (another robot's, say) is refused, not published */
        rc = grid_error_set(err, GRID_ERR_BUILD, 0, 0, "self-check failed: the compiled library does not load as "
                            "this model's (%s); the compiler (GRID_RBD_CC) did not build this source, and the entry "
                            "was not published", le.message);
    grid_lib_close(lib);
    return rc;
}

/* "O&" converter of a path argument: None -> NULL, else str / bytes / os.PathLike -> bytes (PyUnicode_FSConverter: no
   NUL, undecodable names kept); the caller releases the bytes */
static int fs_path(PyObject *obj, void *out)
{
    if (obj == Py_None) {
        *(PyObject **)out = NULL;
        return 1;
    }
    return PyUnicode_FSConverter(obj, out);
}

#define FS_STR(o) ((o) ? PyBytes_AS_STRING(o) : NULL)

static PyObject *library_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"model", "urdf", "options_json", "name", "dtype", "cache_dir", "force_rebuild",
                             "verbose", "generator_hash", "load", "target", "cuda_arch", "schedule", "methods", NULL};
    PyObject *model_arg;
    Py_buffer urdf = {0};
    const char *options = NULL, *name = NULL, *gen_hash = GRID_GENERATOR_HASH;
    PyObject *cache_obj = NULL; /* bytes (fs_path) or NULL */
    Py_ssize_t options_len = 0;
    int dtype, force_rebuild = 0, verbose = 0, load = 1;
    int target = GRID_TARGET_C, schedule = GRID_SCHEDULE_AUTO;
    const char *cuda_arch = NULL;
    PyObject *methods_obj = NULL; /* a sequence of row ids, empty or absent: every row */
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!y*s#si|O&ppzpiziO:Library", kwlist, &GridPyModel_Type, &model_arg,
                                     &urdf, &options, &options_len, &name, &dtype, fs_path, &cache_obj, &force_rebuild,
                                     &verbose, &gen_hash, &load, &target, &cuda_arch, &schedule, &methods_obj))
        return NULL;
    /* the rows to build: each id once, in table order */
    int methods[GRID_ALGO_COUNT], n_methods = 0;
    if (methods_obj && methods_obj != Py_None) {
        int chosen[GRID_ALGO_COUNT] = {0};
        PyObject *seq = PySequence_Fast(methods_obj, "methods must be a sequence of method ids");
        if (!seq) {
            PyBuffer_Release(&urdf);
            Py_XDECREF(cache_obj);
            return NULL;
        }
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
            const long id = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
            if (id < 0 || id >= GRID_ALGO_COUNT) {
                Py_DECREF(seq);
                PyBuffer_Release(&urdf);
                Py_XDECREF(cache_obj);
                if (!PyErr_Occurred())
                    PyErr_Format(PyExc_ValueError, "methods: id %ld is not a row of the table (0..%d)", id,
                                 GRID_ALGO_COUNT - 1);
                return NULL;
            }
            chosen[id] = 1;
        }
        Py_DECREF(seq);
        for (int a = 0; a < GRID_ALGO_COUNT; a++)
            if (chosen[a]) methods[n_methods++] = a;
    }
    if (!gen_hash) gen_hash = GRID_GENERATOR_HASH;
    if (target != GRID_TARGET_C && target != GRID_TARGET_CUDA) {
        PyBuffer_Release(&urdf);
        Py_XDECREF(cache_obj);
        return PyErr_Format(PyExc_ValueError, "target must be %d (C) or %d (CUDA); got %d", GRID_TARGET_C,
                            GRID_TARGET_CUDA, target);
    }
    if (dtype != GRID_FLOAT32 && dtype != GRID_FLOAT64) {
        PyBuffer_Release(&urdf);
        Py_XDECREF(cache_obj);
        return PyErr_Format(PyExc_ValueError, "dtype must be %d (float32) or %d (float64); got %d", GRID_FLOAT32,
                            GRID_FLOAT64, dtype);
    }
    if (schedule < GRID_SCHEDULE_AUTO || schedule > GRID_SCHEDULE_ROLLED) {
        PyBuffer_Release(&urdf);
        Py_XDECREF(cache_obj);
        return PyErr_Format(PyExc_ValueError, "schedule must be %d (auto), %d (unrolled) or %d (rolled); got %d",
                            GRID_SCHEDULE_AUTO, GRID_SCHEDULE_UNROLLED, GRID_SCHEDULE_ROLLED, schedule);
    }

    GridPyLibrary *self = (GridPyLibrary *)type->tp_alloc(type, 0);
    if (!self) {
        PyBuffer_Release(&urdf);
        Py_XDECREF(cache_obj);
        return NULL;
    }
    GridPyModel *mo = (GridPyModel *)model_arg;
    Py_INCREF(mo);
    self->model_obj = mo;
    self->dtype = dtype;
    self->schedule = schedule;
    model_hash_hex(urdf.buf, (size_t)urdf.len, options, (size_t)options_len, self->model_hash);

    generate_ctx g;
    g.model = mo->model;
    g.opts = grid_emit_options_default();
    g.opts.dtype = dtype;
    g.opts.target = target;
    g.opts.methods = n_methods ? methods : NULL; /* the chosen rows, or every row of the signature table */
    g.opts.n_methods = n_methods;
    g.opts.model_hash = self->model_hash;
    g.opts.schedule = schedule;

    grid_build_request req;
    memset(&req, 0, sizeof req);
    req.cache_dir = FS_STR(cache_obj);
    req.name = name;
    req.urdf = urdf.buf;
    req.urdf_len = (size_t)urdf.len;
    req.options_json = options;
    req.package_version = GRID_PACKAGE_VERSION;
    req.generator_hash = gen_hash;
    req.target = target;
    req.cuda_arch = cuda_arch;
    req.force_rebuild = force_rebuild;
    req.verbose = verbose;
    req.generate = generate_source;
    req.generate_ctx = &g;
    req.cancel = check_signals;
    self_check_ctx sc = {mo->model, NULL};
    req.check = self_check;
    req.check_ctx = &sc;

    grid_lib_expect x = grid_lib_expect_any();
    x.nq = mo->model->nq;
    x.nv = mo->model->nv;
    x.nb = mo->model->nb;
    x.dtype = dtype;
    x.target = target;
    x.model_hash = self->model_hash;
    int every[GRID_ALGO_COUNT], n_every = 0; /* the default set: every row but the opt-in ones */
    for (int a = 0; a < GRID_ALGO_COUNT; a++)
        if (!grid_sig_opt_in(a)) every[n_every++] = a;
    x.methods = n_methods ? methods : every;
    x.n_methods = n_methods ? n_methods : n_every;
    sc.expect = &x;

    /* emit, build (or hit), load: all without the GIL; the buffers and the model are held by this call */
    grid_error err;
    grid_error_clear(&err);
    int status;
    grid_lib *lib = NULL;
    /* the verified robot.so is loaded through its open descriptor, so a concurrent `cache clear` cannot remove
       it between the check and the load; an entry that loads but does not match this model (another robot's
       entry behind the pointer, files swapped in the store) is a miss: rebuilt once, which replaces the entry
       and the pointer */
    req.keep_so_fd = load;
    Py_BEGIN_ALLOW_THREADS
    for (int attempt = 0; attempt < 2; attempt++) {
        status = grid_build(&req, &self->res, &err);
        if (status == GRID_OK && load) {
            status = grid_lib_open_fd(self->res.so_fd, self->res.so_path, &x, &lib, &err);
            close(self->res.so_fd);
            self->res.so_fd = -1;
        }
        if (status != GRID_ERR_LOAD || req.force_rebuild) break;
        req.force_rebuild = 1;
        if (verbose) {
            fprintf(stderr, "grid-rbd: %s: the cached entry does not match this model (%s): rebuilding it\n",
                    name, err.message);
            fflush(stderr);
        }
        grid_error_clear(&err);
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&urdf);
    Py_XDECREF(cache_obj);
    if (status != GRID_OK || PyErr_Occurred()) {
        grid_lib_close(lib);
        Py_DECREF(self);
        return grid_py_raise_error(status != GRID_OK ? status : GRID_ERR_CANCELLED, &err, NULL);
    }
    self->lib = lib;
    if (lib && fill_provider(self) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static void library_dealloc(GridPyLibrary *self)
{
    /* the Runner holding this object as owner is gone, so no call can be running in the code */
    grid_lib_close(self->lib);
    Py_XDECREF(self->model_obj);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* ---- attributes ---- */

#define LIB(s) ((GridPyLibrary *)(s))

static PyObject *get_provider(PyObject *s, void *c)
{
    (void)c;
    if (!LIB(s)->lib) {
        PyErr_SetString(PyExc_AttributeError, "this Library was built with load=False and has no provider");
        return NULL;
    }
    /* the capsule points into this object; whoever uses it keeps the Library alive (Runner owner=) */
    return PyCapsule_New(&LIB(s)->provider, GRID_PY_PROVIDER_CAPSULE, NULL);
}

static PyObject *get_loaded(PyObject *s, void *c) { (void)c; return PyBool_FromLong(LIB(s)->lib != NULL); }
static PyObject *get_path(PyObject *s, void *c) { (void)c; return PyUnicode_DecodeFSDefault(LIB(s)->res.so_path); }
static PyObject *get_entry(PyObject *s, void *c) { (void)c; return PyUnicode_DecodeFSDefault(LIB(s)->res.entry_dir); }
static PyObject *get_ckey(PyObject *s, void *c) { (void)c; return PyUnicode_FromString(LIB(s)->res.content_key); }
static PyObject *get_ikey(PyObject *s, void *c) { (void)c; return PyUnicode_FromString(LIB(s)->res.input_key); }
static PyObject *get_hit(PyObject *s, void *c) { (void)c; return PyBool_FromLong(LIB(s)->res.cache_hit); }
static PyObject *get_compiled(PyObject *s, void *c) { (void)c; return PyBool_FromLong(LIB(s)->res.compiled); }
static PyObject *get_hash(PyObject *s, void *c) { (void)c; return PyUnicode_FromString(LIB(s)->model_hash); }
static PyObject *get_threads(PyObject *s, void *c) { (void)c; return PyLong_FromLong(LIB(s)->work_threads); }
static PyObject *get_schedule(PyObject *s, void *c) { (void)c; return PyLong_FromLong(LIB(s)->schedule); }

static PyObject *get_seconds(PyObject *s, void *c)
{
    (void)c;
    const grid_build_result *r = &LIB(s)->res;
    return Py_BuildValue("{s:d,s:d,s:d}", "total", r->seconds_total, "generate", r->seconds_generate, "compile",
                         r->seconds_compile);
}

/* what the loaded library reports through grid_robot_meta() */
static PyObject *get_meta(PyObject *s, void *c)
{
    (void)c;
    if (!LIB(s)->lib) Py_RETURN_NONE;
    return grid_py_meta_dict(grid_lib_meta(LIB(s)->lib));
}

/* the rows the library exports (meta.methods): this robot's shapes and workspace, in the library's order */
static PyObject *get_methods(PyObject *s, void *c)
{
    (void)c;
    if (!LIB(s)->lib) Py_RETURN_NONE;
    const grid_robot_meta_t *m = grid_lib_meta(LIB(s)->lib);
    PyObject *t = PyTuple_New(m->n_methods);
    for (int i = 0; t && i < m->n_methods; i++) {
        PyObject *d = grid_py_method_dict(&m->methods[i]);
        if (!d) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, d);
    }
    return t;
}

static PyGetSetDef library_getset[] = {
    {"provider", get_provider, NULL, "a new PyCapsule over the grid_provider table (Runner(provider=, owner=self))", NULL},
    {"loaded", get_loaded, NULL, "whether robot.so is loaded in this process", NULL},
    {"path", get_path, NULL, "absolute path of robot.so in the cache", NULL},
    {"entry_dir", get_entry, NULL, "the cache entry directory <root>/store/<content_key>", NULL},
    {"content_key", get_ckey, NULL, "stage-2 key: SHA-256 of the compiled source, flags and toolchain", NULL},
    {"input_key", get_ikey, NULL, "stage-1 key: SHA-256 of URDF, options, versions and build identity", NULL},
    {"cache_hit", get_hit, NULL, "True when the stage-1 lookup hit (nothing generated or compiled)", NULL},
    {"compiled", get_compiled, NULL, "True when this call ran the compiler", NULL},
    {"seconds", get_seconds, NULL, "{'total', 'generate', 'compile'} seconds grid_build took", NULL},
    {"model_hash", get_hash, NULL, "hex SHA-256 baked into the library's metadata", NULL},
    {"work_threads", get_threads, NULL, "threads the provider workspace covers (0: the library needs none)", NULL},
    {"schedule", get_schedule, NULL, "the grid_schedule requested for generation (SCHEDULE_AUTO/_UNROLLED/_ROLLED)", NULL},
    {"meta", get_meta, NULL, "grid_robot_meta() of the loaded library as a dict (None when not loaded)", NULL},
    {"methods", get_methods, NULL, "the library's own signature rows (concrete shapes, workspace) as dicts (None when not loaded)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject GridPyLibrary_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "grid_rbd._core.Library",
    .tp_basicsize = sizeof(GridPyLibrary),
    .tp_dealloc = (destructor)library_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Library(model, urdf, options_json, name, dtype, cache_dir=None, force_rebuild=False, verbose=False,\n"
              "        generator_hash=None, load=True, target=0, cuda_arch=None, schedule=SCHEDULE_AUTO)\n\n"
              "Generates the robot's C source (only on a cache miss), builds it through the cache into robot.so\n"
              "and loads it, checking nq/nv/nb, dtype, target and the model hash, all without the GIL.\n"
              "urdf and options_json are the bytes the cache keys are computed from (options_json must name the\n"
              "schedule: it is not keyed separately). load=False only builds. A signal whose handler raises (Ctrl-C)\n"
              "stops a build within about 0.1 s: the compilers are killed and the exception propagates.",
    .tp_getset = library_getset,
    .tp_new = library_new,
};

/* ---- module functions: hashing, cache administration, the environment-knob table ---- */

/* a malloc'd JSON string from the build library as a str (freed here) */
static PyObject *json_result(int status, char *json, grid_error *err)
{
    if (status != GRID_OK) {
        grid_build_free(json);
        return grid_py_raise_error(status, err, NULL);
    }
    PyObject *s = PyUnicode_FromString(json ? json : "null");
    grid_build_free(json);
    return s;
}

static PyObject *fn_sha256(PyObject *self, PyObject *arg)
{
    (void)self;
    Py_buffer b;
    if (PyObject_GetBuffer(arg, &b, PyBUF_SIMPLE) < 0) return NULL;
    unsigned char d[32];
    char hex[65];
    grid_sha256(b.buf, (size_t)b.len, d);
    PyBuffer_Release(&b);
    grid_sha256_hex(d, hex);
    return PyUnicode_FromString(hex);
}

static PyObject *fn_model_hash(PyObject *self, PyObject *args)
{
    (void)self;
    Py_buffer urdf;
    const char *options;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "y*s#:model_hash", &urdf, &options, &n)) return NULL;
    char hex[65];
    model_hash_hex(urdf.buf, (size_t)urdf.len, options, (size_t)n, hex);
    PyBuffer_Release(&urdf);
    return PyUnicode_FromString(hex);
}

static PyObject *fn_cache_root(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *dir_obj = NULL;
    if (!PyArg_ParseTuple(args, "|O&:cache_root", fs_path, &dir_obj)) return NULL;
    char out[4096];
    grid_error err;
    grid_error_clear(&err);
    int status = grid_cache_root(FS_STR(dir_obj), out, sizeof out, &err);
    Py_XDECREF(dir_obj);
    if (status != GRID_OK) return grid_py_raise_error(status, &err, NULL);
    return PyUnicode_DecodeFSDefault(out);
}

static PyObject *fn_cache_list(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *dir_obj = NULL;
    if (!PyArg_ParseTuple(args, "|O&:cache_list_json", fs_path, &dir_obj)) return NULL;
    char *json = NULL;
    grid_error err;
    grid_error_clear(&err);
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = grid_cache_list_json(FS_STR(dir_obj), &json, &err);
    Py_END_ALLOW_THREADS
    Py_XDECREF(dir_obj);
    return json_result(status, json, &err);
}

static PyObject *fn_cache_info(PyObject *self, PyObject *args)
{
    (void)self;
    const char *name = NULL;
    PyObject *dir_obj = NULL;
    if (!PyArg_ParseTuple(args, "O&s:cache_info_json", fs_path, &dir_obj, &name)) return NULL;
    char *json = NULL;
    grid_error err;
    grid_error_clear(&err);
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = grid_cache_info_json(FS_STR(dir_obj), name, &json, &err);
    Py_END_ALLOW_THREADS
    Py_XDECREF(dir_obj);
    return json_result(status, json, &err);
}

static PyObject *fn_cache_clear(PyObject *self, PyObject *args)
{
    (void)self;
    const char *name = NULL;
    PyObject *dir_obj = NULL;
    if (!PyArg_ParseTuple(args, "|O&z:cache_clear", fs_path, &dir_obj, &name)) return NULL;
    int removed = 0, status;
    grid_error err;
    grid_error_clear(&err);
    Py_BEGIN_ALLOW_THREADS
    status = grid_cache_clear(FS_STR(dir_obj), name, &removed, &err);
    Py_END_ALLOW_THREADS
    Py_XDECREF(dir_obj);
    if (status != GRID_OK) return grid_py_raise_error(status, &err, NULL);
    return PyLong_FromLong(removed);
}

static PyObject *fn_build_identity(PyObject *self, PyObject *args)
{
    (void)self;
    int target = GRID_TARGET_C;
    const char *arch = NULL;
    if (!PyArg_ParseTuple(args, "|iz:build_identity_json", &target, &arch)) return NULL;
    char *json = NULL;
    grid_error err;
    grid_error_clear(&err);
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = grid_build_identity_json(target, arch, &json, &err);
    Py_END_ALLOW_THREADS
    return json_result(status, json, &err);
}

/* the generated source of a model, as a build would write it (no compile, no cache), of the default rows or the row
   ids in methods: for tools and tests that need only the text (the CUDA emulation) */
static PyObject *fn_emit_source(PyObject *self, PyObject *args, PyObject *kwds)
{
    (void)self;
    static char *kwlist[] = {"model", "dtype", "target", "schedule", "methods", NULL};
    PyObject *model_arg, *methods = Py_None;
    int dtype, target = GRID_TARGET_C, schedule = GRID_SCHEDULE_AUTO;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!i|iiO:emit_source", kwlist, &GridPyModel_Type, &model_arg, &dtype,
                                     &target, &schedule, &methods))
        return NULL;
    grid_emit_options o = grid_emit_options_default();
    o.dtype = dtype;
    o.target = target;
    o.schedule = schedule;
    /* methods: row ids to generate (None: the default set) */
    int ids[GRID_ALGO_COUNT];
    if (methods != Py_None) {
        PyObject *seq = PySequence_Fast(methods, "emit_source: methods must be a sequence of row ids");
        if (!seq) return NULL;
        const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
        for (Py_ssize_t k = 0; k < n; k++) {
            const long id = k < GRID_ALGO_COUNT ? PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, k)) : -1;
            if (id < 0 || id >= GRID_ALGO_COUNT) {
                Py_DECREF(seq);
                if (!PyErr_Occurred()) PyErr_Format(PyExc_ValueError, "emit_source: methods must be at most %d row "
                                                    "ids in [0, %d)", GRID_ALGO_COUNT, GRID_ALGO_COUNT);
                return NULL;
            }
            ids[k] = (int)id;
        }
        Py_DECREF(seq);
        o.methods = ids;
        o.n_methods = (int)n;
    }
    char *src = NULL;
    size_t len = 0;
    grid_error err;
    grid_error_clear(&err);
    int status;
    const grid_model *m = ((GridPyModel *)model_arg)->model;
    Py_BEGIN_ALLOW_THREADS
    status = grid_emit_source(m, &o, &src, &len, &err);
    Py_END_ALLOW_THREADS
    if (status != GRID_OK) {
        free(src);
        return grid_py_raise_error(status, &err, NULL);
    }
    PyObject *r = PyUnicode_DecodeUTF8(src, (Py_ssize_t)len, "strict");
    free(src);
    return r;
}

/* ((name, kind, doc), ...) with kind one of 'build', 'generate', 'location', 'runtime' */
static PyObject *fn_env_knobs(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    static const char *kinds[] = {"build", "generate", "location", "runtime"};
    int n = grid_env_knob_count();
    PyObject *t = PyTuple_New(n);
    if (!t) return NULL;
    for (int i = 0; i < n; i++) {
        const grid_env_knob *k = grid_env_knob_at(i);
        const char *kind = k->kind >= 0 && k->kind < 4 ? kinds[k->kind] : "unknown";
        PyObject *row = Py_BuildValue("(sss)", k->name, kind, k->doc ? k->doc : "");
        if (!row) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, row);
    }
    return t;
}

PyMethodDef grid_py_library_functions[] = {
    {"sha256", fn_sha256, METH_O, "sha256(bytes) -> 64 lowercase hex digits (grid_sha256)."},
    {"model_hash", fn_model_hash, METH_VARARGS,
     "model_hash(urdf: bytes, options_json: str) -> the hex SHA-256 a Library bakes into robot.so."},
    {"cache_root", fn_cache_root, METH_VARARGS, "cache_root(cache_dir=None) -> the resolved cache root (nothing created)."},
    {"cache_list_json", fn_cache_list, METH_VARARGS, "cache_list_json(cache_dir=None) -> JSON array of store entries."},
    {"cache_info_json", fn_cache_info, METH_VARARGS,
     "cache_info_json(cache_dir, name_or_key) -> JSON object of one entry (GridArgumentError when none matches)."},
    {"cache_clear", fn_cache_clear, METH_VARARGS,
     "cache_clear(cache_dir=None, name=None) -> store entries removed (name None: everything)."},
    {"build_identity_json", fn_build_identity, METH_VARARGS,
     "build_identity_json(target=0, cuda_arch=None) -> the toolchain identity JSON (build_inputs.json)."},
    {"emit_source", (PyCFunction)(void (*)(void))fn_emit_source, METH_VARARGS | METH_KEYWORDS,
     "emit_source(model, dtype, target=0, schedule=0, methods=None) -> the generated source text (C, or CUDA for\n"
     "target 1) of the default methods or the row ids in methods, nothing compiled or cached."},
    {"env_knobs", fn_env_knobs, METH_NOARGS,
     "env_knobs() -> ((name, kind, doc), ...): every environment variable the C library reads."},
    {NULL, NULL, 0, NULL},
};
