/* The CUDA parts of grid_rbd._core: GPU probing through the driver (no CUDA headers), CudaLibrary (device-pointer calls, timing) and PinnedBuffer (page-locked memory). */
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "_core.h"
#include "grid/runtime.h"

/* ---- cuda_probe(): is there a GPU, without CUDA headers or libraries at build time ---- */

/* the few driver API entry points the probe needs (CUresult 0 = CUDA_SUCCESS) */
typedef int (*cu_init_fn)(unsigned);
typedef int (*cu_count_fn)(int *);
typedef int (*cu_get_fn)(int *, int);
typedef int (*cu_name_fn)(char *, int, int);
typedef int (*cu_attr_fn)(int *, int, int);
typedef int (*cu_version_fn)(int *);
typedef int (*cu_errstr_fn)(int, const char **);

#define CU_ATTR_CC_MAJOR 75
#define CU_ATTR_CC_MINOR 76

/* the driver's name of a CUresult, or its number */
static void cu_error_text(void *lib, int rc, char *out, size_t cap)
{
    cu_errstr_fn name = (cu_errstr_fn)dlsym(lib, "cuGetErrorName");
    const char *s = NULL;
    if (name && name(rc, &s) == 0 && s) snprintf(out, cap, "%s (%d)", s, rc);
    else snprintf(out, cap, "CUresult %d", rc);
}

/* cuda_probe() -> {"ok", "reason", "devices": [(name, "major.minor"), ...], "driver": int} */
static PyObject *fn_cuda_probe(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    char reason[512] = "";
    int ndev = 0, driver = 0;
    PyObject *devices = PyList_New(0);
    if (!devices) return NULL;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *e = dlerror();
        snprintf(reason, sizeof reason, "no NVIDIA driver: %s", e ? e : "libcuda.so.1 not found");
        goto done;
    }
    {
        cu_init_fn init = (cu_init_fn)dlsym(lib, "cuInit");
        cu_count_fn count = (cu_count_fn)dlsym(lib, "cuDeviceGetCount");
        cu_get_fn get = (cu_get_fn)dlsym(lib, "cuDeviceGet");
        cu_name_fn name = (cu_name_fn)dlsym(lib, "cuDeviceGetName");
        cu_attr_fn attr = (cu_attr_fn)dlsym(lib, "cuDeviceGetAttribute");
        cu_version_fn version = (cu_version_fn)dlsym(lib, "cuDriverGetVersion");
        if (!init || !count || !get || !name || !attr) {
            snprintf(reason, sizeof reason, "libcuda.so.1 lacks the driver API (cuInit/cuDeviceGetCount)");
            goto done;
        }
        if (version) version(&driver);
        int rc;
        Py_BEGIN_ALLOW_THREADS
        rc = init(0);
        Py_END_ALLOW_THREADS
        if (rc != 0) {
            char t[128];
            cu_error_text(lib, rc, t, sizeof t);
            snprintf(reason, sizeof reason, "the NVIDIA driver is present but cuInit failed: %s", t);
            goto done;
        }
        if ((rc = count(&ndev)) != 0) {
            char t[128];
            cu_error_text(lib, rc, t, sizeof t);
            snprintf(reason, sizeof reason, "cuDeviceGetCount failed: %s", t);
            ndev = 0;
            goto done;
        }
        if (ndev == 0) snprintf(reason, sizeof reason, "the NVIDIA driver reports no GPU");
        for (int i = 0; i < ndev; i++) {
            int dev = 0, major = 0, minor = 0;
            char nm[256] = "?", cc[16];
            if (get(&dev, i) == 0) {
                if (name(nm, (int)sizeof nm, dev) != 0) snprintf(nm, sizeof nm, "?");
                attr(&major, CU_ATTR_CC_MAJOR, dev);
                attr(&minor, CU_ATTR_CC_MINOR, dev);
            }
            snprintf(cc, sizeof cc, "%d.%d", major, minor);
            PyObject *row = Py_BuildValue("(ss)", nm, cc);
            if (!row || PyList_Append(devices, row) < 0) {
                Py_XDECREF(row);
                Py_DECREF(devices);
                return NULL; /* the driver stays loaded: unloading it after cuInit is not safe */
            }
            Py_DECREF(row);
        }
    }
done:
    /* a loaded driver stays loaded (it is initialised for the process now) */
    {
        PyObject *r = Py_BuildValue("{s:O,s:s,s:O,s:i}", "ok", ndev > 0 ? Py_True : Py_False, "reason", reason,
                                    "devices", devices, "driver", driver);
        Py_DECREF(devices);
        return r;
    }
}

/* ---- CudaLibrary: a CUDA robot.so opened for device-pointer calls ---- */

typedef int (*reserve_fn)(long long);
typedef void *(*host_alloc_fn)(size_t);
typedef void (*host_free_fn)(void *);
typedef int (*noop_fn)(void *);
typedef int (*text_fn)(char *, size_t);
typedef int (*device_fn)(int);
typedef int (*time_fn)(grid_batch_fn, const grid_call *, int, int, float *, double *);

typedef struct {
    PyObject_HEAD
    grid_lib *lib;
    void *handle;              /* our own dlopen reference, for the runtime symbols */
    reserve_fn reserve;
    host_alloc_fn host_alloc;
    host_free_fn host_free;
    noop_fn noop;
    text_fn device_info, last_error;
    device_fn use_device;
    time_fn time;
    int nframes;
    grid_dispatch disp;                    /* the device entry points in the handle's output convention (identity:
                                              calls go straight through; else the runtime's device passes) */
} GridPyCudaLibrary;

/* PinnedBuffer: page-locked bytes from grid_cuda_host_alloc, exposed through the buffer protocol */
typedef struct {
    PyObject_HEAD
    GridPyCudaLibrary *owner;  /* keeps grid_cuda_host_free loaded */
    void *ptr;
    Py_ssize_t nbytes;
    Py_ssize_t exports;        /* live buffer views */
} GridPyPinnedBuffer;

static PyTypeObject GridPyPinnedBuffer_Type;

/* the library's message for its thread's last failure, as the CudaError detail */
static PyObject *raise_status(GridPyCudaLibrary *self, int status, const char *what)
{
    char msg[512], detail[300] = "";
    if (status == GRID_ERR_CUDA && self->last_error) self->last_error(detail, sizeof detail);
    if (status == GRID_ERR_ARG)
        snprintf(detail, sizeof detail, "an argument was rejected (batch too large for one launch, NULL input, bad frame)");
    snprintf(msg, sizeof msg, "%s failed with status %d: %s", what, status, detail);
    return grid_py_raise(status, 0, 0, msg, NULL);
}

static void *need_symbol(void *handle, const char *name, const char *path, int *missing)
{
    void *p = dlsym(handle, name);
    if (!p && !*missing) {
        *missing = 1;
        char msg[600];
        snprintf(msg, sizeof msg, "%s: the CUDA runtime symbol %s is missing; rebuild it (force_rebuild=True)", path, name);
        grid_py_raise(GRID_ERR_LOAD, 0, 0, msg, NULL);
    }
    return p;
}

static PyObject *cudalib_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"path", "model", "convention", NULL};
    PyObject *path_obj, *model = Py_None;
    int convention = GRID_CONVENTION_PINOCCHIO;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O&|Oi:CudaLibrary", kwlist, PyUnicode_FSConverter, &path_obj, &model,
                                     &convention))
        return NULL;
    if (model != Py_None && !PyObject_TypeCheck(model, &GridPyModel_Type)) {
        Py_DECREF(path_obj);
        return PyErr_Format(PyExc_TypeError, "model must be a _core.Model or None");
    }
    if (model == Py_None && convention != GRID_CONVENTION_PINOCCHIO) {
        Py_DECREF(path_obj);
        return PyErr_Format(PyExc_ValueError, "an output convention needs the model (model=)");
    }
    const char *path = PyBytes_AS_STRING(path_obj);
    GridPyCudaLibrary *self = (GridPyCudaLibrary *)type->tp_alloc(type, 0);
    if (!self) {
        Py_DECREF(path_obj);
        return NULL;
    }
    grid_lib_expect x = grid_lib_expect_any();
    x.target = 1;
    grid_error err;
    grid_error_clear(&err);
    int status;
    grid_lib *lib = NULL;
    Py_BEGIN_ALLOW_THREADS
    status = grid_lib_open(path, &x, &lib, &err);
    Py_END_ALLOW_THREADS
    if (status != GRID_OK) {
        Py_DECREF(path_obj);
        Py_DECREF(self);
        return grid_py_raise(status, 0, 0, err.message, NULL);
    }
    self->lib = lib;
    self->nframes = grid_lib_meta(lib)->nframes;
    /* the same mapping grid_lib_open made (dlopen of one path returns one handle), marked never to be unmapped:
       the library carries a static CUDA runtime and a stream/buffer context that live until the process ends */
    self->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!self->handle) {
        char msg[600];
        const char *e = dlerror();
        snprintf(msg, sizeof msg, "%s: dlopen failed: %s", path, e ? e : "?");
        Py_DECREF(path_obj);
        Py_DECREF(self);
        return grid_py_raise(GRID_ERR_LOAD, 0, 0, msg, NULL);
    }
    int missing = 0;
    self->reserve = (reserve_fn)need_symbol(self->handle, "grid_cuda_reserve", path, &missing);
    self->host_alloc = (host_alloc_fn)need_symbol(self->handle, "grid_cuda_host_alloc", path, &missing);
    self->host_free = (host_free_fn)need_symbol(self->handle, "grid_cuda_host_free", path, &missing);
    self->noop = (noop_fn)need_symbol(self->handle, "grid_cuda_noop", path, &missing);
    self->device_info = (text_fn)need_symbol(self->handle, "grid_cuda_device_info", path, &missing);
    self->last_error = (text_fn)need_symbol(self->handle, "grid_cuda_last_error", path, &missing);
    self->use_device = (device_fn)need_symbol(self->handle, "grid_cuda_use_device", path, &missing);
    self->time = (time_fn)need_symbol(self->handle, "grid_cuda_time", path, &missing);
    if (!missing) {
        grid_error cerr;
        grid_error_clear(&cerr);
        grid_provider p;
        int crc = grid_provider_of_lib(lib, 1, 0, "generated (CUDA, device arrays)", &p, &cerr);
        if (crc == GRID_OK)
            crc = grid_dispatch_init(&self->disp, model != Py_None ? ((GridPyModel *)model)->model : NULL,
                                     grid_lib_meta(lib)->dtype, &p, convention, &cerr);
        if (crc != GRID_OK) {
            Py_DECREF(path_obj);
            Py_DECREF(self);
            return grid_py_raise_error(crc, &cerr, NULL);
        }
        if (!grid_convention_identity(&self->disp.conv) && !p.cuda_convention)
            need_symbol(self->handle, "grid_cuda_convention_call", path, &missing);
    }
    Py_DECREF(path_obj);
    if (missing) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static void cudalib_dealloc(GridPyCudaLibrary *self)
{
    /* pinned buffers hold a reference to this object, so none is left to free */
    if (self->handle) dlclose(self->handle);
    grid_lib_close(self->lib);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* an int argument that is a pointer (0 = NULL) */
static int as_pointer(PyObject *o, void **p)
{
    if (o == Py_None) {
        *p = NULL;
        return 0;
    }
    void *v = PyLong_AsVoidPtr(o);
    if (!v && PyErr_Occurred()) return -1;
    *p = v;
    return 0;
}

/* a grid_call and the pointer arrays it points into */
typedef struct {
    const void *in[GRID_MAX_IN];
    void *out[GRID_MAX_OUT];
    grid_call c;
} call_args;

/* a tuple of at most cap ints that are pointers (0 / None = NULL) into p; the count, or -1 with an exception */
static int pointer_tuple(PyObject *t, const char *what, int cap, void **p)
{
    if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) > cap) {
        PyErr_Format(PyExc_TypeError, "%s must be a tuple of at most %d pointers (ints)", what, cap);
        return -1;
    }
    const int n = (int)PyTuple_GET_SIZE(t);
    for (int k = 0; k < n; k++)
        if (as_pointer(PyTuple_GET_ITEM(t, k), &p[k])) return -1;
    return n;
}

/* the call of (inputs, outputs, batch, attrs, stream) arguments starting at args[0]: pointer tuples in the
   row's order, attrs a tuple of ints */
static int parse_call(PyObject *const *args, call_args *ca)
{
    memset(ca, 0, sizeof *ca);
    grid_call *c = &ca->c;
    void *in[GRID_MAX_IN] = {0}, *stream;
    const int n_in = pointer_tuple(args[0], "inputs", GRID_MAX_IN, in);
    if (n_in < 0) return -1;
    const int n_out = pointer_tuple(args[1], "outputs", GRID_MAX_OUT, ca->out);
    if (n_out < 0) return -1;
    for (int k = 0; k < n_in; k++) ca->in[k] = in[k];
    c->in = ca->in;
    c->out = ca->out;
    c->n_in = n_in;
    c->n_out = n_out;
    c->batch = PyLong_AsLongLong(args[2]);
    if (c->batch == -1 && PyErr_Occurred()) return -1;
    if (!PyTuple_Check(args[3]) || PyTuple_GET_SIZE(args[3]) > GRID_MAX_ATTR) {
        PyErr_Format(PyExc_TypeError, "attrs must be a tuple of at most %d ints", GRID_MAX_ATTR);
        return -1;
    }
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(args[3]); k++) {
        long x = PyLong_AsLong(PyTuple_GET_ITEM(args[3], k));
        if (x == -1 && PyErr_Occurred()) return -1;
        c->attr[k] = (int)x;
    }
    if (as_pointer(args[4], &stream)) return -1;
    c->stream = stream;
    return 0;
}

static grid_batch_fn algo_fn(GridPyCudaLibrary *self, long algo, int device)
{
    if (algo < 0 || algo >= GRID_ALGO_COUNT) {
        PyErr_Format(PyExc_ValueError, "unknown algorithm id %ld", algo);
        return NULL;
    }
    grid_batch_fn fn = device ? grid_lib_cuda_fn(self->lib, (int)algo) : grid_lib_fn(self->lib, (int)algo);
    if (!fn) PyErr_Format(PyExc_ValueError, "this library has no %s", grid_algo_name((int)algo));
    return fn;
}

/* call(algo, inputs, outputs, batch, attrs, stream): grid_cuda_<algo> on device pointers (ints) */
static PyObject *cudalib_call(PyObject *s, PyObject *const *args, Py_ssize_t nargs)
{
    GridPyCudaLibrary *self = (GridPyCudaLibrary *)s;
    if (nargs != 6)
        return PyErr_Format(PyExc_TypeError, "call() takes 6 arguments (algo, inputs, outputs, batch, attrs, stream); "
                            "%zd given", nargs);
    long algo = PyLong_AsLong(args[0]);
    if (algo == -1 && PyErr_Occurred()) return NULL;
    grid_batch_fn fn = algo_fn(self, algo, 1);
    if (!fn) return NULL;
    call_args ca;
    if (parse_call(args + 1, &ca) < 0) return NULL;
    const grid_signature_row *row = grid_sig_row((int)algo);
    if (!grid_convention_identity(&self->disp.conv) && ca.c.n_in != row->n_in)
        return PyErr_Format(PyExc_ValueError, "%s takes %d inputs", row->name, row->n_in);
    grid_error err;
    grid_error_clear(&err);
    int status;
    /* in the output convention: the job's run row, converted on the device around its kernels (grid_dispatch_run) */
    Py_BEGIN_ALLOW_THREADS
    status = grid_dispatch_run(&self->disp, (int)algo, &ca.c, NULL, &err);
    Py_END_ALLOW_THREADS
    if (status == GRID_ERR_UNSUPPORTED) return grid_py_raise(status, 0, 0, err.message, NULL);
    if (status != GRID_OK) return raise_status(self, status, grid_algo_name((int)algo));
    Py_RETURN_NONE;
}

/* time(algo, mode, inputs, outputs, batch, attrs, stream, reps, warmup, events)
   mode 0: grid_cuda_<algo> (device pointers), 1: grid_<algo> (host round trip), 2: the empty kernel
   -> (event_us list or None, wall_us list) */
static PyObject *cudalib_time(PyObject *s, PyObject *const *args, Py_ssize_t nargs)
{
    GridPyCudaLibrary *self = (GridPyCudaLibrary *)s;
    if (nargs != 10)
        return PyErr_Format(PyExc_TypeError, "time() takes 10 arguments (algo, mode, inputs, outputs, batch, attrs, "
                            "stream, reps, warmup, events); %zd given", nargs);
    long algo = PyLong_AsLong(args[0]);
    long mode = PyLong_AsLong(args[1]);
    long reps = PyLong_AsLong(args[7]);
    long warmup = PyLong_AsLong(args[8]);
    int events = PyObject_IsTrue(args[9]);
    if (PyErr_Occurred() || events < 0) return NULL;
    if (reps < 1 || reps > 1000000 || warmup < 0 || warmup > 1000000)
        return PyErr_Format(PyExc_ValueError, "reps must be in 1..1e6 and warmup in 0..1e6");
    grid_batch_fn fn = NULL;
    if (mode == 0 || mode == 1) {
        if (!(fn = algo_fn(self, algo, mode == 0))) return NULL;
    } else if (mode != 2) {
        return PyErr_Format(PyExc_ValueError, "mode must be 0 (device), 1 (host) or 2 (empty kernel)");
    }
    call_args ca;
    if (parse_call(args + 2, &ca) < 0) return NULL;
    const grid_call *c = &ca.c;
    double *wall = PyMem_RawCalloc((size_t)reps, sizeof *wall);
    float *ev = events ? PyMem_RawCalloc((size_t)reps, sizeof *ev) : NULL;
    if (!wall || (events && !ev)) {
        PyMem_RawFree(wall);
        PyMem_RawFree(ev);
        return PyErr_NoMemory();
    }
    int status = GRID_OK;
    Py_BEGIN_ALLOW_THREADS
    if (mode == 1) {
        /* the host round trip synchronises itself: the host clock around each call, nothing else */
        for (long r = -warmup; r < reps && status == GRID_OK; r++) {
            struct timespec t0, t1;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            status = fn(c);
            clock_gettime(CLOCK_MONOTONIC, &t1);
            if (r >= 0) wall[r] = (double)(t1.tv_sec - t0.tv_sec) * 1e6 + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-3;
            if (r >= 0 && ev) ev[r] = 0.0f;
        }
    } else {
        status = self->time(fn, c, (int)reps, (int)warmup, ev, wall);
    }
    Py_END_ALLOW_THREADS
    PyObject *result = NULL, *wl = NULL, *el = NULL;
    if (status != GRID_OK) {
        raise_status(self, status, "timing");
        goto out;
    }
    wl = PyList_New(reps);
    if (events) {
        el = PyList_New(reps);
    } else {
        Py_INCREF(Py_None);
        el = Py_None;
    }
    if (!wl || !el) goto out;
    for (long i = 0; i < reps; i++) {
        PyObject *x = PyFloat_FromDouble(wall[i]);
        if (!x) goto out;
        PyList_SET_ITEM(wl, i, x);
        if (events) {
            PyObject *y = PyFloat_FromDouble(ev[i]);
            if (!y) goto out;
            PyList_SET_ITEM(el, i, y);
        }
    }
    result = PyTuple_Pack(2, el, wl);
out:
    Py_XDECREF(wl);
    Py_XDECREF(el);
    PyMem_RawFree(wall);
    PyMem_RawFree(ev);
    return result;
}

static PyObject *cudalib_reserve(PyObject *s, PyObject *arg)
{
    GridPyCudaLibrary *self = (GridPyCudaLibrary *)s;
    long long n = PyLong_AsLongLong(arg);
    if (n == -1 && PyErr_Occurred()) return NULL;
    if (n < 0) return PyErr_Format(PyExc_ValueError, "reserve() needs a batch size >= 0; got %lld", n);
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = self->reserve(n);
    Py_END_ALLOW_THREADS
    if (status != GRID_OK) return raise_status(self, status, "reserving device buffers");
    Py_RETURN_NONE;
}

static PyObject *cudalib_noop(PyObject *s, PyObject *arg)
{
    GridPyCudaLibrary *self = (GridPyCudaLibrary *)s;
    void *stream;
    if (as_pointer(arg, &stream)) return NULL;
    int status = self->noop(stream);
    if (status != GRID_OK) return raise_status(self, status, "the empty kernel");
    Py_RETURN_NONE;
}

static PyObject *cudalib_use_device(PyObject *s, PyObject *arg)
{
    GridPyCudaLibrary *self = (GridPyCudaLibrary *)s;
    long dev = PyLong_AsLong(arg);
    if (dev == -1 && PyErr_Occurred()) return NULL;
    int status = self->use_device((int)dev);
    if (status != GRID_OK) return raise_status(self, status, "selecting the device");
    Py_RETURN_NONE;
}

static PyObject *cudalib_device_info(PyObject *s, PyObject *unused)
{
    (void)unused;
    GridPyCudaLibrary *self = (GridPyCudaLibrary *)s;
    char buf[1024];
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = self->device_info(buf, sizeof buf);
    Py_END_ALLOW_THREADS
    if (status != GRID_OK) return raise_status(self, status, "reading the device properties");
    return PyUnicode_FromString(buf);
}

static PyObject *cudalib_last_error(PyObject *s, PyObject *unused)
{
    (void)unused;
    GridPyCudaLibrary *self = (GridPyCudaLibrary *)s;
    char buf[300];
    self->last_error(buf, sizeof buf);
    return PyUnicode_FromString(buf);
}

/* pinned(nbytes) -> PinnedBuffer */
static PyObject *cudalib_pinned(PyObject *s, PyObject *arg)
{
    GridPyCudaLibrary *self = (GridPyCudaLibrary *)s;
    Py_ssize_t n = PyLong_AsSsize_t(arg);
    if (n == -1 && PyErr_Occurred()) return NULL;
    if (n < 0) return PyErr_Format(PyExc_ValueError, "pinned() needs nbytes >= 0; got %zd", n);
    void *p;
    Py_BEGIN_ALLOW_THREADS
    p = self->host_alloc((size_t)n);
    Py_END_ALLOW_THREADS
    if (!p) return raise_status(self, GRID_ERR_CUDA, "allocating page-locked memory");
    GridPyPinnedBuffer *b = PyObject_New(GridPyPinnedBuffer, &GridPyPinnedBuffer_Type);
    if (!b) {
        self->host_free(p);
        return NULL;
    }
    Py_INCREF(self);
    b->owner = self;
    b->ptr = p;
    b->nbytes = n;
    b->exports = 0;
    return (PyObject *)b;
}

static PyMethodDef cudalib_methods[] = {
    {"call", (PyCFunction)(void (*)(void))cudalib_call, METH_FASTCALL,
     "call(algo, inputs, outputs, batch, attrs, stream)\n\n"
     "grid_cuda_<algo> on device pointers: inputs and outputs are tuples of ints (0 = NULL) in the order of the\n"
     "row (_core.signatures()), attrs a tuple of its attributes, stream an int cudaStream_t (0 = default).\n"
     "In the library's output convention (CudaLibrary(path, model, convention)): converted on the device.\n"
     "Asynchronous: nothing is synchronised. Raises CudaError when the launch fails."},
    {"time", (PyCFunction)(void (*)(void))cudalib_time, METH_FASTCALL,
     "time(algo, mode, inputs, outputs, batch, attrs, stream, reps, warmup, events)\n"
     "-> (event_us or None, wall_us): each call timed in C. mode 0: device pointers and 2: the empty kernel, each\n"
     "call followed by a synchronisation of stream (and CUDA events around it when events); mode 1: the host\n"
     "round trip (host pointers), which synchronises itself (event_us is zeros)."},
    {"reserve", cudalib_reserve, METH_O, "reserve(max_batch): device buffers for host round trips of max_batch states."},
    {"noop", cudalib_noop, METH_O, "noop(stream): launch the empty kernel on stream (no synchronisation)."},
    {"use_device", cudalib_use_device, METH_O, "use_device(index): cudaSetDevice for the calling thread."},
    {"device_info", cudalib_device_info, METH_NOARGS, "device_info() -> JSON text: the device, driver and runtime."},
    {"last_error", cudalib_last_error, METH_NOARGS, "last_error() -> this thread's last CUDA failure in the library."},
    {"pinned", cudalib_pinned, METH_O, "pinned(nbytes) -> PinnedBuffer of page-locked host memory."},
    {NULL, NULL, 0, NULL},
};

static PyObject *cudalib_get_meta(PyObject *s, void *c)
{
    (void)c;
    return grid_py_meta_dict(grid_lib_meta(((GridPyCudaLibrary *)s)->lib));
}

static PyObject *cudalib_get_path(PyObject *s, void *c)
{
    (void)c;
    return PyUnicode_DecodeFSDefault(grid_lib_path(((GridPyCudaLibrary *)s)->lib));
}

static PyGetSetDef cudalib_getset[] = {
    {"meta", cudalib_get_meta, NULL, "grid_robot_meta() of the library as a dict", NULL},
    {"path", cudalib_get_path, NULL, "the robot.so path", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject GridPyCudaLibrary_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "grid_rbd._core.CudaLibrary",
    .tp_basicsize = sizeof(GridPyCudaLibrary),
    .tp_dealloc = (destructor)cudalib_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "CudaLibrary(path, model=None, convention=0)\n\n"
              "A CUDA robot.so (target 1) opened for device-pointer calls, timing and pinned memory. Opening it\n"
              "needs no GPU; every method that runs CUDA does. convention (with the model): the output convention\n"
              "call() speaks, CONVENTION_PINOCCHIO (the kernels') or CONVENTION_MUJOCO (converted on the device).",
    .tp_methods = cudalib_methods,
    .tp_getset = cudalib_getset,
    .tp_new = cudalib_new,
};

/* ---- PinnedBuffer ---- */

static int pinned_getbuffer(PyObject *s, Py_buffer *view, int flags)
{
    GridPyPinnedBuffer *b = (GridPyPinnedBuffer *)s;
    if (!b->ptr) {
        PyErr_SetString(PyExc_ValueError, "this PinnedBuffer was freed");
        view->obj = NULL;
        return -1;
    }
    if (PyBuffer_FillInfo(view, s, b->ptr, b->nbytes, 0, flags) < 0) return -1;
    b->exports++;
    return 0;
}

static void pinned_releasebuffer(PyObject *s, Py_buffer *view)
{
    (void)view;
    ((GridPyPinnedBuffer *)s)->exports--;
}

static PyBufferProcs pinned_as_buffer = {pinned_getbuffer, pinned_releasebuffer};

static void pinned_dealloc(GridPyPinnedBuffer *b)
{
    /* views (numpy arrays) keep this object alive, so nothing points at the memory any more */
    if (b->ptr && b->owner) b->owner->host_free(b->ptr);
    Py_XDECREF(b->owner);
    PyObject_Free(b);
}

static PyObject *pinned_get_address(PyObject *s, void *c)
{
    (void)c;
    return PyLong_FromVoidPtr(((GridPyPinnedBuffer *)s)->ptr);
}

static PyObject *pinned_get_nbytes(PyObject *s, void *c)
{
    (void)c;
    return PyLong_FromSsize_t(((GridPyPinnedBuffer *)s)->nbytes);
}

static PyGetSetDef pinned_getset[] = {
    {"address", pinned_get_address, NULL, "the host address of the memory", NULL},
    {"nbytes", pinned_get_nbytes, NULL, "its size in bytes", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject GridPyPinnedBuffer_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "grid_rbd._core.PinnedBuffer",
    .tp_basicsize = sizeof(GridPyPinnedBuffer),
    .tp_dealloc = (destructor)pinned_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Page-locked host memory from a CUDA robot library (CudaLibrary.pinned); writable buffer protocol.\n"
              "Freed when the last view of it is gone.",
    .tp_as_buffer = &pinned_as_buffer,
    .tp_getset = pinned_getset,
};

int grid_py_cuda_library_info(PyObject *o, const grid_dispatch **disp, int (**use_device)(int))
{
    if (!PyObject_TypeCheck(o, &GridPyCudaLibrary_Type)) {
        PyErr_Format(PyExc_TypeError, "expected a CudaLibrary, got %s", Py_TYPE(o)->tp_name);
        return -1;
    }
    GridPyCudaLibrary *self = (GridPyCudaLibrary *)o;
    *disp = &self->disp;
    *use_device = self->use_device;
    return 0;
}

/* ---- registration in _core ---- */

static PyMethodDef cuda_functions[] = {
    {"cuda_probe", fn_cuda_probe, METH_NOARGS,
     "cuda_probe() -> {'ok', 'reason', 'devices': [(name, 'major.minor')], 'driver'}: GPUs the NVIDIA driver\n"
     "(libcuda.so.1, loaded with dlopen) reports; 'reason' says why there is none."},
    {NULL, NULL, 0, NULL},
};

int grid_py_cuda_add(PyObject *m)
{
    if (PyType_Ready(&GridPyCudaLibrary_Type) < 0 || PyType_Ready(&GridPyPinnedBuffer_Type) < 0) return -1;
    if (PyModule_AddFunctions(m, cuda_functions) < 0) return -1;
    Py_INCREF(&GridPyCudaLibrary_Type);
    if (PyModule_AddObject(m, "CudaLibrary", (PyObject *)&GridPyCudaLibrary_Type) < 0) {
        Py_DECREF(&GridPyCudaLibrary_Type);
        return -1;
    }
    Py_INCREF(&GridPyPinnedBuffer_Type);
    if (PyModule_AddObject(m, "PinnedBuffer", (PyObject *)&GridPyPinnedBuffer_Type) < 0) {
        Py_DECREF(&GridPyPinnedBuffer_Type);
        return -1;
    }
    return 0;
}
