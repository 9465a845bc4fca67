/* XLA FFI handlers through the FFI C API (xla/ffi/api/c_api.h): one per row of the signature table and platform (CPU,
   CUDA), each looking up its robot by the "robot" string attribute in a process registry and running the row through
   grid_dispatch_run (on the CUDA platform: the CUDA library's device dispatch, on the stream XLA hands it). */
#include <assert.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "_core.h"
#include "grid/context.h"

#ifdef GRID_HAVE_XLA_FFI
#include "xla/ffi/api/c_api.h"

/* ---- the process registry: robot key -> a Runner's dispatch (the Runner is kept alive for the process) ---- */

#define XLA_KEY_MAX 160
typedef struct {
    char key[XLA_KEY_MAX];
    size_t key_len;
    PyObject *runner;                          /* strong reference: its dispatch outlives every compiled program */
    const grid_dispatch *disp;
    PyObject *cuda_lib;                        /* the CUDA library (strong reference) of a CUDA robot, else NULL */
    const grid_dispatch *cuda_disp;            /* its device dispatch: the CUDA platform's calls */
    int (*use_device)(int);                    /* selects the device its runtime launches on */
    const grid_method_info *rows;              /* the Runner's: the table's rows with this robot's shapes */
    int dtype, num_threads, cpus;
} xla_robot;

static xla_robot **robots;
static int n_robots, cap_robots;
static pthread_mutex_t robots_lock = PTHREAD_MUTEX_INITIALIZER;

static const xla_robot *find_robot(const char *key, size_t len)
{
    const xla_robot *found = NULL;
    pthread_mutex_lock(&robots_lock);
    for (int i = 0; i < n_robots && !found; i++)
        if (robots[i]->key_len == len && memcmp(robots[i]->key, key, len) == 0) found = robots[i];
    pthread_mutex_unlock(&robots_lock);
    return found;
}

/* each XLA thread runs calls on its own workspace (grown to the peak once, then reused) */
static _Thread_local grid_context tls_ctx;
static _Thread_local int tls_ctx_ready;

/* ---- the handler ---- */

static XLA_FFI_Error *fail(const XLA_FFI_CallFrame *f, XLA_FFI_Error_Code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static XLA_FFI_Error *fail(const XLA_FFI_CallFrame *f, XLA_FFI_Error_Code code, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    XLA_FFI_Error_Create_Args a = {XLA_FFI_Error_Create_Args_STRUCT_SIZE, NULL, msg, code};
    return f->api->XLA_FFI_Error_Create(&a);
}

static int attr_name_is(const XLA_FFI_ByteSpan *n, const char *s)
{
    return n->len == strlen(s) && memcmp(n->ptr, s, n->len) == 0;
}

static int scalar_int(const XLA_FFI_Scalar *s, long long *v)
{
    switch (s->dtype) {
    case XLA_FFI_DataType_S32: *v = *(const int32_t *)s->value; return 0;
    case XLA_FFI_DataType_S64: *v = *(const int64_t *)s->value; return 0;
    default: return -1;
    }
}

/* Operands: the row's present inputs in order (attribute "present": a bit per input; "aliased": n_out more operands,
   the outputs' buffers donated), each (L..., B, per-state
   shape), leading dimensions L either full or 1 (jax's vmap_method="expand_dims": an unbatched operand is never
   copied); outputs (L..., B, shape). The innermost leading dimensions every input has in full form one batched call;
   the outer ones are looped over, a size-1 operand read again each time. */
static XLA_FFI_Error *run_row(XLA_FFI_CallFrame *f, int algo, int cuda)
{
    if (f->extension_start && f->extension_start->type == XLA_FFI_Extension_Metadata) {
        XLA_FFI_Metadata_Extension *e = (XLA_FFI_Metadata_Extension *)f->extension_start;
        e->metadata->api_version = (XLA_FFI_Api_Version){XLA_FFI_Api_Version_STRUCT_SIZE, NULL, XLA_FFI_API_MAJOR,
                                                         XLA_FFI_API_MINOR};
        /* No synchronisation and no allocation: XLA may put a CPU call in a command buffer. Not a CUDA call: XLA's
           capture of jax.grad's VJP row failed ("Failed to create a child graph node", bench/RESULTS-gpu.md runs 27
           and 29), with the workspace XLA allocates (below) too; why is not yet known */
        if (!cuda) e->metadata->traits = XLA_FFI_HANDLER_TRAITS_COMMAND_BUFFER_COMPATIBLE;
        return NULL;
    }
    if (f->stage != XLA_FFI_ExecutionStage_EXECUTE) return NULL;
    assert(algo >= 0 && algo < GRID_ALGO_COUNT);
    const char *name = grid_algo_name(algo);

    /* attributes */
    const XLA_FFI_ByteSpan *key = NULL;
    long long present = -1, aliased = 0, attr[GRID_MAX_ATTR] = {0};
    for (int64_t i = 0; i < f->attrs.size; i++) {
        const XLA_FFI_ByteSpan *n = f->attrs.names[i];
        if (f->attrs.types[i] == XLA_FFI_AttrType_STRING && attr_name_is(n, "robot")) {
            key = (const XLA_FFI_ByteSpan *)f->attrs.attrs[i];
        } else if (f->attrs.types[i] == XLA_FFI_AttrType_SCALAR) {
            long long v;
            if (scalar_int((const XLA_FFI_Scalar *)f->attrs.attrs[i], &v) != 0)
                return fail(f, XLA_FFI_Error_Code_INVALID_ARGUMENT, "grid_rbd %s: attribute %.*s is not an integer",
                            name, (int)n->len, n->ptr);
            if (attr_name_is(n, "present")) present = v;
            else if (attr_name_is(n, "aliased")) aliased = v;
            else if (n->len == 2 && n->ptr[0] == 'a' && n->ptr[1] >= '0' && n->ptr[1] < '0' + GRID_MAX_ATTR)
                attr[n->ptr[1] - '0'] = v; /* the row's attributes: a0, a1, ... */
        }
    }
    if (!key || present < 0)
        return fail(f, XLA_FFI_Error_Code_INVALID_ARGUMENT, "grid_rbd %s: the call lacks its robot or present attribute",
                    name);
    const xla_robot *R = find_robot(key->ptr, key->len);
    if (!R)
        return fail(f, XLA_FFI_Error_Code_NOT_FOUND,
                    "grid_rbd %s: robot '%.*s' is not registered in this process (register_robot(..., backend='jax') "
                    "first: a compiled program refers to its robot by content key)", name, (int)key->len, key->ptr);
    const grid_method_info *row = &R->rows[algo];
    /* the CUDA platform: device pointers, run on XLA's stream and device */
    void *stream = NULL;
    if (cuda) {
        if (!R->cuda_disp)
            return fail(f, XLA_FFI_Error_Code_FAILED_PRECONDITION,
                        "grid_rbd %s: robot '%.*s' runs on the CPU; register it with device='cuda' for JAX arrays on "
                        "the GPU", name, (int)key->len, key->ptr);
        XLA_FFI_Stream_Get_Args sa = {XLA_FFI_Stream_Get_Args_STRUCT_SIZE, NULL, f->ctx, NULL};
        XLA_FFI_Error *e = f->api->XLA_FFI_Stream_Get(&sa);
        if (e) return e;
        stream = sa.stream;
        XLA_FFI_DeviceOrdinal_Get_Args da = {XLA_FFI_DeviceOrdinal_Get_Args_STRUCT_SIZE, NULL, f->ctx, 0};
        if ((e = f->api->XLA_FFI_DeviceOrdinal_Get(&da))) return e;
        if (R->use_device(da.device_ordinal) != GRID_OK)
            return fail(f, XLA_FFI_Error_Code_INTERNAL, "grid_rbd %s: selecting CUDA device %d failed", name,
                        (int)da.device_ordinal);
    }
    const XLA_FFI_DataType want = R->dtype == GRID_FLOAT32 ? XLA_FFI_DataType_F32 : XLA_FFI_DataType_F64;

    /* the operands against the row */
    const XLA_FFI_Buffer *in[GRID_MAX_IN] = {0};
    int n_args = 0;
    for (int k = 0; k < row->n_in; k++) {
        if (!(present >> k & 1)) {
            if (row->in[k].optional == GRID_REQUIRED)
                return fail(f, XLA_FFI_Error_Code_INVALID_ARGUMENT, "grid_rbd %s: input %s is required", name,
                            row->in[k].name);
            continue;
        }
        if (n_args >= f->args.size || f->args.types[n_args] != XLA_FFI_ArgType_BUFFER)
            return fail(f, XLA_FFI_Error_Code_INVALID_ARGUMENT, "grid_rbd %s: %lld operands, fewer than its present "
                        "inputs", name, (long long)f->args.size);
        in[k] = (const XLA_FFI_Buffer *)f->args.args[n_args++];
    }
    /* with "aliased", the last operands are the outputs' donated buffers (input_output_aliases: XLA hands the same
       memory back as the results), only written; on CUDA a result past the outputs is the kernels' workspace (bytes
       XLA allocated, so the call allocates nothing itself) */
    const XLA_FFI_Buffer *workspace = NULL;
    size_t workspace_bytes = 0;
    if (cuda && f->rets.size == row->n_out + 1) {
        workspace = (const XLA_FFI_Buffer *)f->rets.rets[row->n_out];
        if (workspace->dtype != XLA_FFI_DataType_U8)
            return fail(f, XLA_FFI_Error_Code_INVALID_ARGUMENT, "grid_rbd %s: the workspace result is not bytes", name);
        /* (vmap's expand_dims gives it leading dimensions too: all of it is one buffer, reused by each slice) */
        workspace_bytes = 1;
        for (int64_t i = 0; i < workspace->rank; i++) workspace_bytes *= (size_t)workspace->dims[i];
    }
    if ((aliased != 0 && aliased != row->n_out) || n_args + aliased != f->args.size ||
        f->rets.size != row->n_out + (workspace != NULL))
        return fail(f, XLA_FFI_Error_Code_INVALID_ARGUMENT, "grid_rbd %s: %lld operands and %lld results for %d present "
                    "inputs, %lld aliased buffers and %d outputs", name, (long long)f->args.size,
                    (long long)f->rets.size, n_args, aliased, row->n_out);
    const XLA_FFI_Buffer *out[GRID_MAX_OUT];
    for (int k = 0; k < row->n_out; k++) out[k] = (const XLA_FFI_Buffer *)f->rets.rets[k];

    /* the leading dimensions: the first output's, every operand's equal or 1 */
    const int lead = (int)out[0]->rank - row->out[0].rank;
    if (lead < 1)
        return fail(f, XLA_FFI_Error_Code_INVALID_ARGUMENT, "grid_rbd %s: the output has no batch axis", name);
    const int64_t *L = out[0]->dims;
    for (int k = 0; k < row->n_in + row->n_out; k++) {
        const int is_out = k >= row->n_in;
        const XLA_FFI_Buffer *b = is_out ? out[k - row->n_in] : in[k];
        const grid_arg_info *a = is_out ? &row->out[k - row->n_in] : &row->in[k];
        if (!b) continue;
        if (b->dtype != want)
            return fail(f, XLA_FFI_Error_Code_INVALID_ARGUMENT, "grid_rbd %s: %s has XLA dtype %d; the robot is %s",
                        name, a->name, (int)b->dtype, R->dtype == GRID_FLOAT32 ? "float32" : "float64");
        int ok = b->rank == lead + a->rank;
        for (int i = 0; ok && i < lead; i++) ok = b->dims[i] == L[i] || (!is_out && b->dims[i] == 1);
        for (int i = 0; ok && i < a->rank; i++) ok = b->dims[lead + i] == a->shape[i];
        if (!ok)
            return fail(f, XLA_FFI_Error_Code_INVALID_ARGUMENT, "grid_rbd %s: %s has the wrong shape for this robot "
                        "(per state %lld elements, rank %d)", name, a->name, a->width, a->rank);
    }
    /* the batched call covers the innermost leading dimensions every input has in full */
    int inner = 0; /* leading dimensions 0 .. inner-1 are looped over */
    for (int k = 0; k < row->n_in; k++)
        for (int i = lead - 1; in[k] && i >= inner; i--)
            if (in[k]->dims[i] != L[i]) {
                inner = i + 1;
                break;
            }
    long long batch = 1, outer = 1;
    for (int i = inner; i < lead; i++) batch *= L[i];
    for (int i = 0; i < inner; i++) outer *= L[i];
    if (batch * outer == 0) return NULL;

    const grid_dispatch *d = cuda ? R->cuda_disp : R->disp;
    if (!cuda && !tls_ctx_ready) {
        grid_ctx_init(&tls_ctx, NULL);
        tls_ctx_ready = 1;
    }
    const int threads = cuda ? 0 : grid_dispatch_entry(d, algo) ? grid_py_threads_used(R->num_threads, R->cpus) : 1;
    const size_t el = (size_t)R->dtype;
    for (long long o = 0; o < outer; o++) {
        const void *in_ptr[GRID_MAX_IN] = {0};
        void *out_ptr[GRID_MAX_OUT];
        for (int k = 0; k < row->n_in; k++) {
            if (!in[k]) continue;
            /* the operand's offset at outer index o (size-1 dimensions broadcast) */
            long long rem = o, off = 0, stride = batch;
            for (int i = inner - 1; i >= 0; i--) {
                const long long idx = rem % L[i];
                rem /= L[i];
                if (in[k]->dims[i] != 1) off += idx * stride;
                stride *= in[k]->dims[i];
            }
            in_ptr[k] = (const char *)in[k]->data + (size_t)off * (size_t)row->in[k].width * el;
        }
        for (int k = 0; k < row->n_out; k++)
            out_ptr[k] = (char *)out[k]->data + (size_t)(o * batch) * (size_t)row->out[k].width * el;
        grid_call c = {in_ptr, out_ptr, row->n_in, row->n_out, batch, {0}, threads,
                       workspace ? workspace->data : NULL, workspace_bytes, stream};
        for (int k = 0; k < GRID_MAX_ATTR; k++) c.attr[k] = (int)attr[k];
        for (int k = 0; k < row->n_attr; k++)
            if (c.attr[k] < row->attr_lo[k] || c.attr[k] >= row->attr_hi[k])
                return fail(f, XLA_FFI_Error_Code_INVALID_ARGUMENT, "grid_rbd %s: %s = %d is outside [%d, %d)", name,
                            row->attr_name[k], c.attr[k], row->attr_lo[k], row->attr_hi[k]);
        grid_error err;
        grid_error_clear(&err);
        int rc;
        if (cuda) {
            rc = grid_dispatch_run(d, algo, &c, NULL, &err); /* (a device provider needs no workspace) */
        } else {
            const grid_ctx_mark_t mark = grid_ctx_mark(&tls_ctx);
            rc = grid_dispatch_run(d, algo, &c, &tls_ctx, &err);
            grid_ctx_release(&tls_ctx, mark);
        }
        if (rc != GRID_OK)
            return fail(f, rc == GRID_ERR_NOMEM ? XLA_FFI_Error_Code_RESOURCE_EXHAUSTED : XLA_FFI_Error_Code_INTERNAL,
                        "grid_rbd %s: %s", name, err.message);
    }
    return NULL;
}

/* one handler per row and platform: XLA knows a target by its function, the row by the handler's name */
#define XLA_ROWS_MAX 48
_Static_assert(GRID_ALGO_COUNT <= XLA_ROWS_MAX, "more rows than XLA handlers: raise XLA_ROWS_MAX and the list below");
#define H(b, k)                                                                                                      \
    static XLA_FFI_Error *xla_row_##b##_##k(XLA_FFI_CallFrame *f) { return run_row(f, (b) * 8 + (k), 0); }          \
    static XLA_FFI_Error *xla_cuda_row_##b##_##k(XLA_FFI_CallFrame *f) { return run_row(f, (b) * 8 + (k), 1); }
#define H8(b) H(b, 0) H(b, 1) H(b, 2) H(b, 3) H(b, 4) H(b, 5) H(b, 6) H(b, 7)
H8(0) H8(1) H8(2) H8(3) H8(4) H8(5)
#define P(b, k) xla_row_##b##_##k
#define P8(b) P(b, 0), P(b, 1), P(b, 2), P(b, 3), P(b, 4), P(b, 5), P(b, 6), P(b, 7)
static XLA_FFI_Handler *const xla_rows[XLA_ROWS_MAX] = {P8(0), P8(1), P8(2), P8(3), P8(4), P8(5)};
#undef P
#define P(b, k) xla_cuda_row_##b##_##k
static XLA_FFI_Handler *const xla_cuda_rows[XLA_ROWS_MAX] = {P8(0), P8(1), P8(2), P8(3), P8(4), P8(5)};
#undef H
#undef H8
#undef P
#undef P8

/* _core.xla_handlers(platform) -> ((row name, PyCapsule of its XLA_FFI_Handler), ...) in the table's order, for
   platform "cpu" or "cuda" */
static PyObject *py_xla_handlers(PyObject *self, PyObject *arg)
{
    (void)self;
    const char *platform = PyUnicode_Check(arg) ? PyUnicode_AsUTF8(arg) : NULL;
    if (!platform || (strcmp(platform, "cpu") != 0 && strcmp(platform, "cuda") != 0))
        return PyErr_Occurred() ? NULL : PyErr_Format(PyExc_ValueError, "platform must be 'cpu' or 'cuda'");
    XLA_FFI_Handler *const *handlers = platform[1] == 'p' ? xla_rows : xla_cuda_rows;
    PyObject *t = PyTuple_New(GRID_ALGO_COUNT);
    for (int a = 0; t && a < GRID_ALGO_COUNT; a++) {
        PyObject *cap = PyCapsule_New((void *)handlers[a], NULL, NULL);
        PyObject *item = cap ? Py_BuildValue("(sN)", grid_algo_name(a), cap) : NULL;
        if (!item) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, a, item);
    }
    return t;
}

/* _core.xla_register(key, runner, cuda_library=None): the robot XLA calls carrying this key run on: the Runner's
   dispatch on the CPU, the CUDA library's device dispatch on the GPU (re-registering a key is a no-op) */
static PyObject *py_xla_register(PyObject *self, PyObject *args)
{
    (void)self;
    const char *key;
    Py_ssize_t len;
    PyObject *runner, *cuda_lib = Py_None;
    if (!PyArg_ParseTuple(args, "s#O!|O:xla_register", &key, &len, &GridPyRunner_Type, &runner, &cuda_lib))
        return NULL;
    if (len <= 0 || len >= XLA_KEY_MAX) return PyErr_Format(PyExc_ValueError, "robot key of %zd bytes", len);
    if (find_robot(key, (size_t)len)) Py_RETURN_NONE;
    xla_robot *R = PyMem_RawCalloc(1, sizeof *R);
    if (!R) return PyErr_NoMemory();
    memcpy(R->key, key, (size_t)len);
    R->key_len = (size_t)len;
    if (grid_py_runner_info(runner, &R->disp, &R->rows, &R->dtype, &R->num_threads, &R->cpus) != 0 ||
        (cuda_lib != Py_None && grid_py_cuda_library_info(cuda_lib, &R->cuda_disp, &R->use_device) != 0)) {
        PyMem_RawFree(R);
        return NULL;
    }
    pthread_mutex_lock(&robots_lock);
    if (n_robots == cap_robots) {
        const int cap = cap_robots ? 2 * cap_robots : 16;
        xla_robot **grown = PyMem_RawRealloc(robots, (size_t)cap * sizeof *grown);
        if (!grown) {
            pthread_mutex_unlock(&robots_lock);
            PyMem_RawFree(R);
            return PyErr_NoMemory();
        }
        robots = grown;
        cap_robots = cap;
    }
    Py_INCREF(runner);
    R->runner = runner;
    if (cuda_lib != Py_None) {
        Py_INCREF(cuda_lib);
        R->cuda_lib = cuda_lib;
    }
    robots[n_robots++] = R;
    pthread_mutex_unlock(&robots_lock);
    Py_RETURN_NONE;
}

PyMethodDef grid_py_xla_functions[] = {
    {"xla_handlers", py_xla_handlers, METH_O,
     "xla_handlers(platform) -> ((row name, PyCapsule of its XLA FFI handler), ...) for platform 'cpu' or 'cuda':\n"
     "register each with jax.ffi.register_ffi_target"},
    {"xla_register", py_xla_register, METH_VARARGS,
     "xla_register(key, runner, cuda_library=None): XLA calls whose 'robot' attribute is key run on this Runner's\n"
     "dispatch on the CPU and on the CUDA library's device dispatch on the GPU"},
    {NULL, NULL, 0, NULL}};
int grid_py_xla_available = 1;

#else /* built without jaxlib's FFI headers */

PyMethodDef grid_py_xla_functions[] = {{NULL, NULL, 0, NULL}};
int grid_py_xla_available = 0;

#endif
