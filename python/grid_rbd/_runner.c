/* _core.Runner: the per-call path — checks array arguments against the method's signature row (numpy C API, buffer protocol otherwise), allocates the outputs and hands them to grid_dispatch_run without the GIL. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include "_core.h"
#define NO_IMPORT_ARRAY
#include "_numpy.h"
#include "grid/context.h"
#include "grid/dispatch.h"

typedef struct {
    PyObject_HEAD
    GridPyModel *model_obj;          /* keeps the grid_model alive */
    const grid_model *model;
    int dtype;                       /* GRID_FLOAT32 or GRID_FLOAT64 */
    int type_num;                    /* the numpy type number of dtype */
    int nq, nv, nb, nee, nframes;
    int num_threads;                 /* requested, 1..GRID_PY_MAX_THREADS; <= 0 = every CPU */
    int cpus;                        /* CPUs of the affinity mask (at construction and each num_threads set) */
    grid_dispatch disp;              /* what calls run: the provider's table (fns[algo] NULL = the reference
                                        answers) and the output convention (grid/dispatch.h) */
    grid_method_info rows[GRID_ALGO_COUNT]; /* the signature table's rows with this model's shapes */
    PyObject *provider_name;         /* str */
    PyObject *provider_keep;         /* the capsule (or None) */
    PyObject *owner;                 /* whatever keeps the provider's code loaded (or None) */
    grid_context ctx;                /* the workspace of calls: its arena is reused by every call ... */
    int ctx_busy;                    /* ... except while another one uses it (set under the GIL) */
    PyObject *np_dtype;              /* numpy.dtype of the handle */
} GridPyRunner;

/* ---- construction ---- */

static PyObject *runner_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"model", "dtype", "provider", "owner", "num_threads", "convention", NULL};
    PyObject *model_arg, *provider = Py_None, *owner = Py_None, *numpy = NULL;
    int dtype, num_threads = 0, convention = GRID_CONVENTION_PINOCCHIO;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!i|OOii:Runner", kwlist, &GridPyModel_Type,
                                     &model_arg, &dtype, &provider, &owner, &num_threads, &convention))
        return NULL;
    if (dtype != GRID_FLOAT32 && dtype != GRID_FLOAT64)
        return PyErr_Format(PyExc_ValueError, "dtype must be %d (float32) or %d (float64); got %d",
                            GRID_FLOAT32, GRID_FLOAT64, dtype);
    if (num_threads < 0 || num_threads > GRID_PY_MAX_THREADS)
        return PyErr_Format(PyExc_ValueError, "num_threads must be an int in 1..%d (0: every CPU); got %d",
                            GRID_PY_MAX_THREADS, num_threads);

    GridPyRunner *self = (GridPyRunner *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    grid_ctx_init(&self->ctx, NULL);
    GridPyModel *mo = (GridPyModel *)model_arg;
    Py_INCREF(mo);
    self->model_obj = mo;
    self->model = mo->model;
    self->dtype = dtype;
    self->type_num = dtype == GRID_FLOAT32 ? NPY_FLOAT32 : NPY_FLOAT64;
    self->nq = mo->model->nq;
    self->nv = mo->model->nv;
    self->nb = mo->model->nb;
    self->nee = mo->model->nee;
    self->nframes = mo->model->nframes;
    self->num_threads = num_threads;
    self->cpus = grid_py_threads_cpus();
    const grid_sizes sizes = grid_sizes_of(self->nq, self->nv, self->nb, self->nee, self->nframes);
    for (int a = 0; a < GRID_ALGO_COUNT; a++) grid_sig_concrete(a, &sizes, 0, &self->rows[a]);
    Py_INCREF(owner);
    self->owner = owner;
    /* provider: None = the float64 reference for every algorithm; else a capsule table */
    const grid_provider *p = NULL;
    if (provider == Py_None) {
        self->provider_name = PyUnicode_FromString("reference (float64 C)");
    } else {
        if (!(p = PyCapsule_GetPointer(provider, GRID_PY_PROVIDER_CAPSULE))) goto fail;
        self->provider_name = PyUnicode_FromString(p->name ? p->name : "provider");
    }
    if (!self->provider_name) goto fail;
    grid_error derr;
    grid_error_clear(&derr);
    const int drc = grid_dispatch_init(&self->disp, self->model, dtype, p, convention, &derr);
    if (drc != GRID_OK) {
        grid_py_raise_error(drc, &derr, NULL);
        goto fail;
    }
    Py_INCREF(provider);
    self->provider_keep = provider;

    /* numpy entry points used per call */
    numpy = PyImport_ImportModule("numpy");
    if (!numpy) goto fail;
    PyObject *dtype_fn = PyObject_GetAttrString(numpy, "dtype");
    if (!dtype_fn) goto fail;
    self->np_dtype = PyObject_CallFunction(dtype_fn, "s", dtype == GRID_FLOAT32 ? "float32" : "float64");
    Py_DECREF(dtype_fn);
    if (!self->np_dtype) goto fail;
    Py_DECREF(numpy);
    return (PyObject *)self;
fail:
    Py_XDECREF(numpy);
    Py_DECREF(self);
    return NULL;
}

static void runner_dealloc(GridPyRunner *self)
{
    grid_ctx_free(&self->ctx);
    Py_XDECREF(self->np_dtype);
    Py_XDECREF(self->provider_name);
    Py_XDECREF(self->provider_keep);
    Py_XDECREF(self->owner);
    Py_XDECREF(self->model_obj);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* ---- argument buffers ---- */

/* one array argument of a call: its data, and how it is held (a numpy array taken directly,
   a buffer view, and/or the converted copy when one was needed) */
typedef struct {
    void *data;           /* NULL: argument absent */
    Py_buffer view;
    int held;             /* view is held */
    PyObject *converted;  /* owned reference: a converted copy, the fresh output, or the array itself */
} arg_buf;

static void arg_release(arg_buf *a)
{
    if (a->held) PyBuffer_Release(&a->view);
    a->held = 0;
    Py_CLEAR(a->converted);
}

/* the numpy fast path: an aligned, C-contiguous, native-order ndarray of the runner dtype and rank */
static inline int fast_array(PyObject *obj, int type_num, int ndim)
{
    if (!PyArray_CheckExact(obj)) return 0;
    PyArrayObject *a = (PyArrayObject *)obj;
    return PyArray_NDIM(a) == ndim && PyArray_TYPE(a) == type_num &&
           PyArray_ISCARRAY_RO(a) && PyArray_ISNOTSWAPPED(a);
}

/* is fmt the native-endian single float (dtype 4) or double (dtype 8) code? */
static int format_matches(const char *fmt, int dtype)
{
    if (!fmt) return 0; /* NULL means unsigned bytes */
#if PY_BIG_ENDIAN
    if (*fmt == '@' || *fmt == '=' || *fmt == '>' || *fmt == '!') fmt++;
#else
    if (*fmt == '@' || *fmt == '=' || *fmt == '<') fmt++;
#endif
    return fmt[0] == (dtype == GRID_FLOAT32 ? 'f' : 'd') && fmt[1] == '\0';
}

/* "(4, 19)" for a view's shape */
static void format_shape(char *s, size_t cap, const Py_buffer *v)
{
    size_t n = (size_t)snprintf(s, cap, "(");
    if (v->ndim == 0 || !v->shape) {
        snprintf(s + n, cap - n, "%s)", v->ndim == 0 ? "" : "?");
        return;
    }
    for (int i = 0; i < v->ndim && n < cap; i++)
        n += (size_t)snprintf(s + n, cap - n, "%zd%s", v->shape[i],
                              v->ndim == 1 ? ",)" : (i + 1 < v->ndim ? ", " : ")"));
}

/* "a" or "an" before a word */
static const char *article(const char *word) { return strchr("aeiou", word[0]) ? "an" : "a"; }

/* numpy's name of obj's element type ("int64", "uint8", "complex128"; the buffer format when numpy reads none), for
   messages */
static void dtype_name(PyObject *obj, const char *fmt, char *s, size_t cap)
{
    PyObject *arr = PyArray_Check(obj) ? (Py_INCREF(obj), obj) : PyArray_FromAny(obj, NULL, 0, 0, 0, NULL);
    PyObject *name = arr ? PyObject_Str((PyObject *)PyArray_DESCR((PyArrayObject *)arr)) : NULL;
    const char *u = name ? PyUnicode_AsUTF8(name) : NULL;
    if (!u) PyErr_Clear();
    snprintf(s, cap, "%s", u ? u : fmt ? fmt : "B");
    Py_XDECREF(name);
    Py_XDECREF(arr);
}

/* an input of a kind that numpy would convert to a float by dropping information or guessing: complex (the imaginary
   part), str/bytes (parsed), object (None becomes NaN), structured, datetime. Bools, ints and floats are converted. */
static int refuse_kind(PyArrayObject *arr, const char *name, const char *tname)
{
    const char kind = PyArray_DESCR(arr)->kind;
    if (kind == 'b' || kind == 'i' || kind == 'u' || kind == 'f') return 0;
    PyObject *d = PyObject_Str((PyObject *)PyArray_DESCR(arr));
    const char *u = d ? PyUnicode_AsUTF8(d) : NULL;
    if (!u) PyErr_Clear();
    PyErr_Format(PyExc_ValueError,
                 "%s must be a real numeric array (%s; bool, int and float arrays are converted to it); got %s %s array%s",
                 name, tname, article(u ? u : "non-numeric"), u ? u : "non-numeric",
                 kind == 'c' ? ": pass x.real to drop the imaginary part explicitly"
                 : kind == 'O' ? " (None or Python objects)" : kind == 'U' || kind == 'S' ? " (strings are not parsed)" : "");
    Py_XDECREF(d);
    return -1;
}

/* "(B, 7)", "(4, 7, 7)": a batch (or "B" when batch < 0) and a per-state shape */
static void format_arg_shape(char *s, size_t cap, Py_ssize_t batch, const grid_arg_info *a)
{
    if (batch == 0) {
        /* the per-state shape alone: "(7,)", "(7, 7)" */
        size_t n = (size_t)snprintf(s, cap, "(");
        for (int k = 0; k < a->rank && n < cap; k++) n += (size_t)snprintf(s + n, cap - n, "%s%d", k ? ", " : "", a->shape[k]);
        if (n < cap) snprintf(s + n, cap - n, a->rank == 1 ? ",)" : ")");
        return;
    }
    size_t n = batch < 0 ? (size_t)snprintf(s, cap, "(B") : (size_t)snprintf(s, cap, "(%zd", batch);
    for (int k = 0; k < a->rank && n < cap; k++) n += (size_t)snprintf(s + n, cap - n, ", %d", a->shape[k]);
    if (n < cap) snprintf(s + n, cap - n, ")");
}

/* what an input's per-state extent is, for messages: "nv=18 tangent width", "6*nb=42 body-local wrenches" */
static void describe_arg(char *s, size_t cap, const grid_sig_arg *sa, const grid_arg_info *a)
{
    char d[32];
    size_t n = 0;
    for (int k = 0; k < sa->rank && n < cap; k++)
        n += (size_t)snprintf(s + n, cap - n, "%s%s", k ? " x " : "", grid_sig_dim_text(sa->dim[k], d, sizeof d));
    for (int k = 0; k < a->rank && n < cap; k++) n += (size_t)snprintf(s + n, cap - n, "%s%d", k ? " x " : "=", a->shape[k]);
    if (n < cap) snprintf(s + n, cap - n, " %s", sa->desc);
}

/* Get a C-contiguous view of obj in the runner's dtype with shape (batch, *a->shape); converts a copy (numpy's
   cast, obj's shape kept) when obj is not already that. *batch < 0 means obj sets it (the first input,
   named first). sa is the row's symbolic argument (for the messages). */
static int get_input(GridPyRunner *r, PyObject *obj, const grid_sig_arg *sa, const grid_arg_info *ai,
                     const char *first, Py_ssize_t *batch, arg_buf *a, const int one)
{
    char got[96], want[96], what[128], hint[128];
    /* one: a single state without the batch axis (the first input has the per-state rank) */
    const int off = one ? 0 : 1, ndim = ai->rank + off;
    if (fast_array(obj, r->type_num, ndim)) {
        const npy_intp *dims = PyArray_DIMS((PyArrayObject *)obj);
        int same = one || *batch < 0 || dims[0] == *batch;
        for (int k = 0; same && k < ai->rank; k++) same = dims[k + off] == ai->shape[k];
        if (same) {
            *batch = one ? 1 : dims[0];
            Py_INCREF(obj);
            a->converted = obj;
            a->data = PyArray_DATA((PyArrayObject *)obj);
            return 0;
        }
    }
    if (PyObject_CheckBuffer(obj) &&
        PyObject_GetBuffer(obj, &a->view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) == 0) {
        a->held = 1;
        if (!format_matches(a->view.format, r->dtype) || a->view.itemsize != r->dtype) arg_release(a);
    } else {
        PyErr_Clear();
    }
    if (!a->held) {
        /* as numpy sees it first (lists too), to refuse what a cast to float would garble */
        PyObject *arr = PyArray_FromAny(obj, NULL, 0, 0, 0, NULL);
        if (!arr) return -1;
        if (refuse_kind((PyArrayObject *)arr, ai->name, r->dtype == GRID_FLOAT32 ? "float32" : "float64") < 0) {
            Py_DECREF(arr);
            return -1;
        }
        /* cast and made C-contiguous with its shape kept (numpy.ascontiguousarray would make a scalar (1,)) */
        a->converted = PyArray_FromArray((PyArrayObject *)arr, PyArray_DescrFromType(r->type_num),
                                         NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_FORCECAST);
        Py_DECREF(arr);
        if (!a->converted) return -1;
        if (PyObject_GetBuffer(a->converted, &a->view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return -1;
        a->held = 1;
    }

    /* shape (batch, per-state shape) */
    Py_buffer *v = &a->view;
    a->data = v->buf;
    int same = v->ndim == ndim;
    for (int k = 0; same && k < ai->rank; k++) same = v->shape[k + off] == ai->shape[k];
    if (!same && one) {
        format_shape(got, sizeof got, v);
        format_arg_shape(want, sizeof want, 0, ai);
        describe_arg(what, sizeof what, sa, ai);
        if (strcmp(ai->name, first) == 0) {
            /* the first input decides: name both forms */
            char batched[96];
            format_arg_shape(batched, sizeof batched, -1, ai);
            PyErr_Format(PyExc_ValueError, "%s must have shape %s (B states x %s) or %s (one state); got %s", ai->name,
                         batched, what, want, got);
        } else {
            PyErr_Format(PyExc_ValueError, "%s must have shape %s (one state: %s, as %s has no batch axis); got %s",
                         ai->name, want, what, first, got);
        }
        return -1;
    }
    if (!same) {
        format_shape(got, sizeof got, v);
        format_arg_shape(want, sizeof want, -1, ai);
        describe_arg(what, sizeof what, sa, ai);
        hint[0] = '\0';
        /* an nq-wide array where the tangent width is expected */
        if (sa->rank == 1 && sa->dim[0].sym == GRID_SYM_NV && sa->dim[0].mul == 1 && r->nq != r->nv && v->ndim == 2 &&
            v->shape[1] == r->nq)
            snprintf(hint, sizeof hint, "; velocity-space arrays are nv=%d wide on a floating base, not nq=%d",
                     r->nv, r->nq);
        PyErr_Format(PyExc_ValueError, "%s must have shape %s (B states x %s); got %s%s", ai->name, want, what, got,
                     hint);
        return -1;
    }
    if (one) {
        *batch = 1;
    } else if (*batch < 0) {
        *batch = v->shape[0];
    } else if (v->shape[0] != *batch) {
        format_shape(got, sizeof got, v);
        format_arg_shape(want, sizeof want, *batch, ai);
        PyErr_Format(PyExc_ValueError, "%s must have shape %s to match the batch of %s (%zd states on axis 0); got %s",
                     ai->name, want, first, *batch, got);
        return -1;
    }
    return 0;
}

/* output shape of row output a for a batch; returns the rank */
static int output_shape(const grid_arg_info *a, Py_ssize_t batch, Py_ssize_t shape[GRID_MAX_RANK + 1], const int one)
{
    if (one) {
        /* a single state without the batch axis */
        for (int k = 0; k < a->rank; k++) shape[k] = a->shape[k];
        return a->rank;
    }
    shape[0] = batch;
    for (int k = 0; k < a->rank; k++) shape[k + 1] = a->shape[k];
    return a->rank + 1;
}

/* "(4, 7, 7)" from explicit dims */
static void format_dims(char *s, size_t cap, const Py_ssize_t *shape, int ndim)
{
    Py_buffer v;
    memset(&v, 0, sizeof v);
    v.ndim = ndim;
    v.shape = (Py_ssize_t *)shape;
    format_shape(s, cap, &v);
}

/* a writable C-contiguous array for the output: out itself (checked to have exactly the output shape and dtype), its
   flat block, or a fresh array (large ones from the output pool, _outpool.c). axes: the batch axes of shape (1, or 0
   for one state). The flat block of a matrix output is a numpy array of shape (B, width) (or (width,) for one state;
   the specification's (B, 2 nv^2) for a gradient): the call fills it through its view in the output's shape, and
   *out becomes that view. */
static int get_output(GridPyRunner *r, PyObject **out, const char *name, int ndim, const Py_ssize_t *shape, int axes,
                      arg_buf *a)
{
    char want[160], got[128], kind[96];
    const char *tname = r->dtype == GRID_FLOAT32 ? "float32" : "float64";
    npy_intp dims[GRID_MAX_RANK + 1], flat[2];
    for (int i = 0; i < ndim; i++) dims[i] = (npy_intp)shape[i];
    const int has_flat = ndim - axes > 1, flat_ndim = axes + 1;
    flat[0] = dims[0];
    flat[axes] = 1;
    for (int i = axes; i < ndim; i++) flat[axes] *= dims[i];
    /* fast paths: a fresh array, or an out= that is exactly right */
    if (*out == Py_None) {
        PyObject *arr = grid_py_outpool_new(ndim, dims, r->type_num);
        if (!arr) return -1;
        a->converted = arr; /* owned here until returned */
        a->data = PyArray_DATA((PyArrayObject *)arr);
        *out = arr;
        return 0;
    }
    if (fast_array(*out, r->type_num, ndim) && PyArray_ISWRITEABLE((PyArrayObject *)*out)) {
        const npy_intp *d = PyArray_DIMS((PyArrayObject *)*out);
        int same = 1;
        for (int i = 0; i < ndim; i++) same &= d[i] == dims[i];
        if (same) {
            Py_INCREF(*out);
            a->converted = *out;
            a->data = PyArray_DATA((PyArrayObject *)*out);
            return 0;
        }
    }
    if (has_flat && PyArray_Check(*out) && PyArray_NDIM((PyArrayObject *)*out) == flat_ndim &&
        PyArray_TYPE((PyArrayObject *)*out) == r->type_num && PyArray_ISCARRAY((PyArrayObject *)*out) &&
        PyArray_ISNOTSWAPPED((PyArrayObject *)*out)) {
        const npy_intp *d = PyArray_DIMS((PyArrayObject *)*out);
        if (d[0] == flat[0] && d[flat_ndim - 1] == flat[flat_ndim - 1]) {
            PyArray_Dims newshape = {dims, ndim};
            PyObject *view = PyArray_Newshape((PyArrayObject *)*out, &newshape, NPY_CORDER);
            if (!view) return -1;
            a->converted = view; /* a view of the caller's array, returned in its place */
            a->data = PyArray_DATA((PyArrayObject *)view);
            *out = view;
            return 0;
        }
    }

    format_dims(want, sizeof want, shape, ndim);
    if (has_flat) {
        Py_ssize_t fs[2] = {(Py_ssize_t)flat[0], (Py_ssize_t)flat[axes]};
        char f[64];
        format_dims(f, sizeof f, fs, flat_ndim);
        const size_t n = strlen(want);
        snprintf(want + n, sizeof want - n, " (or its flat %s)", f);
    }
    if (!PyObject_CheckBuffer(*out) ||
        PyObject_GetBuffer(*out, &a->view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE) < 0) {
        /* describe what we were given */
        Py_buffer probe;
        PyErr_Clear();
        if (PyObject_CheckBuffer(*out) && PyObject_GetBuffer(*out, &probe, PyBUF_FULL_RO) == 0) {
            format_shape(got, sizeof got, &probe);
            char dt[64];
            dtype_name(*out, probe.format, dt, sizeof dt);
            snprintf(kind, sizeof kind, "%s%s%s", probe.readonly ? "read-only " : "",
                     PyBuffer_IsContiguous(&probe, 'C') ? "" : "non-contiguous ", dt);
            PyErr_Format(PyExc_ValueError, "%s must be a writable C-contiguous %s array of shape %s; got %s %s array of shape %s",
                         name, tname, want, article(kind), kind, got);
            PyBuffer_Release(&probe);
        } else {
            PyErr_Clear();
            PyErr_Format(PyExc_ValueError, "%s must be a writable C-contiguous %s array of shape %s; got %.80s",
                         name, tname, want, Py_TYPE(*out)->tp_name);
        }
        return -1;
    }
    a->held = 1;
    a->data = a->view.buf;
    int ok = format_matches(a->view.format, r->dtype) && a->view.itemsize == r->dtype && a->view.ndim == ndim;
    for (int i = 0; ok && i < ndim; i++) ok = a->view.shape[i] == shape[i];
    if (!ok) {
        format_shape(got, sizeof got, &a->view);
        dtype_name(*out, a->view.format, kind, sizeof kind);
        PyErr_Format(PyExc_ValueError, "%s must be a writable C-contiguous %s array of shape %s; got %s %s array of shape %s",
                     name, tname, want, article(kind), kind, got);
        return -1;
    }
    return 0;
}

/* ---- the call ---- */

/* "q, qd, qdd, f_ext": the input names of a row */
static void input_names(const grid_method_info *row, char *s, size_t cap)
{
    size_t n = 0;
    s[0] = '\0';
    for (int k = 0; k < row->n_in && n < cap; k++) n += (size_t)snprintf(s + n, cap - n, "%s%s", k ? ", " : "", row->in[k].name);
}

/* do the byte ranges [a, a + na) and [b, b + nb) meet? */
static int overlaps(const void *a, size_t na, const void *b, size_t nb)
{
    const char *x = a, *y = b;
    return na && nb && x < y + nb && y < x + na;
}

/* Must output k be computed into a temporary? When it shares memory with any input (numpy's rule: an out= equal to
   an input, or a view overlapping one) or with an earlier output. A provider may write a state's output before it has
   read all of that state's inputs (the pose VJP writes its vjp while it still reads the cotangent), so even an exact
   alias is not safe in place; the temporary is copied into out after the call. */
static int needs_temporary(const grid_method_info *row, const arg_buf *bin, const arg_buf *bout, int k, size_t batch,
                           size_t elem)
{
    const size_t nk = batch * (size_t)row->out[k].width * elem;
    for (int j = 0; j < row->n_in; j++)
        if (bin[j].data && overlaps(bin[j].data, batch * (size_t)row->in[j].width * elem, bout[k].data, nk)) return 1;
    for (int j = 0; j < k; j++)
        if (overlaps(bout[j].data, batch * (size_t)row->out[j].width * elem, bout[k].data, nk)) return 1;
    return 0;
}

/* out given as one array for a row of several outputs: a writable C-contiguous array of the runner dtype, (batch, W)
   or for one state (W,), W the outputs' widths summed, holding output k's (batch, shape_k) block after the blocks of
   the outputs before it; views[k] (new references) are those blocks in their shapes. 0, or -1 with ValueError. */
static int block_views(GridPyRunner *r, const grid_method_info *row, PyObject *block, Py_ssize_t batch, int one,
                       PyObject *views[GRID_MAX_OUT])
{
    long long width = 0;
    for (int k = 0; k < row->n_out; k++) width += row->out[k].width;
    PyArrayObject *b = (PyArrayObject *)block;
    const int ndim = one ? 1 : 2;
    const npy_intp *d = PyArray_DIMS(b);
    if (PyArray_TYPE(b) != r->type_num || !PyArray_ISCARRAY(b) || !PyArray_ISNOTSWAPPED(b) || PyArray_NDIM(b) != ndim ||
        d[ndim - 1] != width || (!one && d[0] != batch)) {
        char want[64], got[96];
        const Py_ssize_t ws[2] = {batch, (Py_ssize_t)width};
        format_dims(want, sizeof want, one ? ws + 1 : ws, ndim);
        Py_ssize_t gs[GRID_MAX_RANK + 1];
        const int gn = PyArray_NDIM(b) <= GRID_MAX_RANK + 1 ? PyArray_NDIM(b) : GRID_MAX_RANK + 1;
        for (int i = 0; i < gn; i++) gs[i] = (Py_ssize_t)d[i];
        format_dims(got, sizeof got, gs, gn);
        PyErr_Format(PyExc_ValueError, "out must be a tuple of %d arrays, or one writable C-contiguous %s array of shape %s "
                     "holding their blocks one after another; got a %s%s array of shape %s", row->n_out,
                     r->dtype == GRID_FLOAT32 ? "float32" : "float64", want,
                     PyArray_ISCARRAY(b) ? "" : "non-contiguous or read-only ", PyArray_DESCR(b)->typeobj->tp_name, got);
        return -1;
    }
    char *data = PyArray_BYTES(b);
    for (int k = 0; k < row->n_out; k++) {
        Py_ssize_t shape[GRID_MAX_RANK + 1];
        npy_intp dims[GRID_MAX_RANK + 1];
        const int nd = output_shape(&row->out[k], batch, shape, one);
        for (int i = 0; i < nd; i++) dims[i] = (npy_intp)shape[i];
        views[k] = PyArray_NewFromDescr(&PyArray_Type, PyArray_DescrFromType(r->type_num), nd, dims, NULL, data,
                                        NPY_ARRAY_CARRAY, NULL);
        if (!views[k]) return -1;
        Py_INCREF(block);
        if (PyArray_SetBaseObject((PyArrayObject *)views[k], block) < 0) return -1;
        data += (size_t)batch * (size_t)row->out[k].width * (size_t)r->dtype;
    }
    return 0;
}

/* the number of axes numpy sees in obj (-1 when it sees none: the shape check then reports it) */
static int input_rank(PyObject *obj)
{
    if (PyArray_Check(obj)) return PyArray_NDIM((PyArrayObject *)obj);
    PyObject *arr = PyArray_FromAny(obj, NULL, 0, 0, 0, NULL);
    if (!arr) {
        PyErr_Clear();
        return -1;
    }
    const int nd = PyArray_NDIM((PyArrayObject *)arr);
    Py_DECREF(arr);
    return nd;
}

/* Runs row algo on a batch of raw pointers without the GIL, on the runner's context (a fresh one while another
   Python thread uses it); dest[k], where not NULL, receives a copy of out[k] after the call (an output computed into a
   temporary). 0, or -1 with an exception. */
static int runner_run(GridPyRunner *r, int algo, const void *const *in, void *const *out, void *const *dest,
                      Py_ssize_t batch, const int *attr)
{
    const grid_dispatch *d = &r->disp;
    const grid_method_info *row = &r->rows[algo];
    grid_context *ctx = NULL, spare;   /* the context of this call: the runner's, or spare while that one is busy */
    grid_ctx_mark_t mark = {0, 0};
    if (grid_dispatch_needs_context(d, algo)) {
        if (!r->ctx_busy) {
            ctx = &r->ctx;
            r->ctx_busy = 1;
        } else {
            grid_ctx_init(&spare, NULL);
            ctx = &spare;
        }
        mark = grid_ctx_mark(ctx);
    }
    /* the threads this call runs on (noting a multi-threaded call for fork) */
    const int threads = grid_dispatch_entry(d, algo) ? grid_py_threads_for_call(r->num_threads, r->cpus) : 1;
    grid_call c = {(const void **)in, (void **)out, row->n_in, row->n_out, (long long)batch, {0}, threads, NULL, 0, NULL};
    memcpy(c.attr, attr, sizeof c.attr);
    grid_error derr;
    grid_error_clear(&derr);
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = grid_dispatch_run(d, algo, &c, ctx, &derr);
    for (int k = 0; status == GRID_OK && k < row->n_out; k++)
        if (dest && dest[k]) memcpy(dest[k], out[k], (size_t)batch * (size_t)row->out[k].width * (size_t)r->dtype);
    Py_END_ALLOW_THREADS
    if (ctx == &spare) {
        grid_ctx_free(&spare);
    } else if (ctx) {
        grid_ctx_release(ctx, mark);
        r->ctx_busy = 0;
    }
    if (status == GRID_OK) return 0;
    if (status == GRID_ERR_UNSUPPORTED && !grid_convention_identity(&d->conv)) {
        /* a row the output convention has no conversion for: not available, never converted wrongly */
        PyObject *mod = PyImport_ImportModule("grid_rbd._errors");
        PyObject *cls = mod ? PyObject_GetAttrString(mod, "NotAvailableError") : NULL;
        Py_XDECREF(mod);
        if (cls) {
            PyErr_SetString(cls, derr.message);
            Py_DECREF(cls);
        }
    } else if (status == GRID_ERR_NOMEM) {
        PyErr_NoMemory();
    } else {
        grid_py_raise(status, 0, 0, derr.message, NULL);
    }
    return -1;
}

/* Runner.call(algo, inputs, out, attrs) -> out: inputs and attrs in the order of the row */
static PyObject *runner_call(PyObject *self_obj, PyObject *const *args, Py_ssize_t nargs)
{
    GridPyRunner *r = (GridPyRunner *)self_obj;
    arg_buf bin[GRID_MAX_IN], bout[GRID_MAX_OUT];
    PyObject *outs[GRID_MAX_OUT], *result = NULL, *tmp[GRID_MAX_OUT] = {NULL}; /* tmp: overlapping outputs */
    PyObject *block = NULL, *views[GRID_MAX_OUT] = {NULL}; /* out as one array of the outputs' blocks, its views */
    int n_in = 0, n_out = 0; /* the buffers in use (only those are initialised and released) */

    if (nargs != 4) {
        PyErr_Format(PyExc_TypeError, "call() takes 4 arguments (algo, inputs, out, attrs); %zd given", nargs);
        return NULL;
    }
    long algo = PyLong_AsLong(args[0]);
    if (algo == -1 && PyErr_Occurred()) return NULL;
    if (algo < 0 || algo >= GRID_ALGO_COUNT)
        return PyErr_Format(PyExc_ValueError, "unknown algorithm id %ld", algo);
    const grid_signature_row *sig = grid_sig_row((int)algo);
    const grid_method_info *row = &r->rows[algo];
    PyObject *inputs = args[1], *out = args[2], *attrs = args[3];
    if (!PyTuple_Check(inputs)) return PyErr_Format(PyExc_TypeError, "inputs must be a tuple, not %.80s", Py_TYPE(inputs)->tp_name);
    if (!PyTuple_Check(attrs)) return PyErr_Format(PyExc_TypeError, "attrs must be a tuple, not %.80s", Py_TYPE(attrs)->tp_name);
    const Py_ssize_t n_given = PyTuple_GET_SIZE(inputs);

    /* presence of each input: a missing trailing input is None; an input past the row's is refused */
    for (Py_ssize_t k = row->n_in; k < n_given; k++)
        if (PyTuple_GET_ITEM(inputs, k) != Py_None) {
            char names[160];
            input_names(row, names, sizeof names);
            return PyErr_Format(PyExc_TypeError, "%s takes no input at position %zd (its inputs: %s)", row->name, k, names);
        }
    PyObject *in[GRID_MAX_IN];
    for (int k = 0; k < row->n_in; k++) {
        in[k] = k < n_given ? PyTuple_GET_ITEM(inputs, k) : Py_None;
        if (in[k] == Py_None && row->in[k].optional == GRID_REQUIRED)
            return PyErr_Format(PyExc_TypeError, "%s is required", row->in[k].name);
    }

    /* attributes, checked against the row's ranges */
    if (PyTuple_GET_SIZE(attrs) != row->n_attr)
        return PyErr_Format(PyExc_TypeError, "%s takes %d attributes; %zd given", row->name, row->n_attr,
                            PyTuple_GET_SIZE(attrs));
    int attr[GRID_MAX_ATTR] = {0};
    for (int k = 0; k < row->n_attr; k++) {
        long x = PyLong_AsLong(PyTuple_GET_ITEM(attrs, k));
        if (x == -1 && PyErr_Occurred()) return NULL;
        if (x < row->attr_lo[k] || x >= row->attr_hi[k])
            return PyErr_Format(PyExc_ValueError, sig->attr[k].range_error, x, row->attr_hi[k]);
        attr[k] = (int)x;
    }

    /* outputs given: one array (or None) for a single output, else a tuple */
    if (row->n_out == 1) {
        outs[0] = out;
    } else if (out == Py_None) {
        for (int k = 0; k < row->n_out; k++) outs[k] = Py_None;
    } else if (PyTuple_Check(out) && PyTuple_GET_SIZE(out) == row->n_out) {
        for (int k = 0; k < row->n_out; k++) outs[k] = PyTuple_GET_ITEM(out, k);
    } else if (PyArray_Check(out)) {
        block = out; /* one block holding every output: split into views once the batch is known */
    } else {
        return PyErr_Format(PyExc_TypeError, "out must be None, a tuple of %d arrays or one array of their blocks for %s",
                            row->n_out, row->name);
    }

    /* inputs: views of (B, per-state shape) arrays in the handle dtype, or of per-state arrays when the first input
       has no batch axis (one state; the outputs then have none either) */
    Py_ssize_t batch = -1;
    const int one = input_rank(in[0]) == row->in[0].rank;
    for (; n_in < row->n_in; n_in++) {
        arg_buf *b = &bin[n_in];
        b->data = NULL;
        b->held = 0;
        b->converted = NULL;
        if (in[n_in] != Py_None &&
            get_input(r, in[n_in], &sig->in[n_in], &row->in[n_in], row->in[0].name, &batch, b, one) < 0) {
            n_in++;
            goto fail;
        }
    }

    if (block && block_views(r, row, block, batch, one, views) < 0) goto fail;
    for (int k = 0; block && k < row->n_out; k++) outs[k] = views[k];

    /* outputs */
    for (; n_out < row->n_out; n_out++) {
        const int k = n_out;
        Py_ssize_t shape[GRID_MAX_RANK + 1];
        char name[64] = "out";
        if (row->n_out > 1) snprintf(name, sizeof name, "out[%d] (%s)", k, row->out[k].name);
        bout[k].data = NULL;
        bout[k].held = 0;
        bout[k].converted = NULL;
        int ndim = output_shape(&row->out[k], batch, shape, one);
        if (get_output(r, &outs[k], name, ndim, shape, one ? 0 : 1, &bout[k]) < 0) {
            n_out++;
            goto fail;
        }
    }

    /* run the batch without the GIL (outputs sharing memory with an input or an earlier output computed into
       temporaries, copied after) */
    if (batch > 0) {
        const void *in_ptr[GRID_MAX_IN];
        void *out_ptr[GRID_MAX_OUT], *dest[GRID_MAX_OUT] = {NULL};
        for (int k = 0; k < row->n_in; k++) in_ptr[k] = bin[k].data;
        for (int k = 0; k < row->n_out; k++) {
            out_ptr[k] = bout[k].data;
            if (!needs_temporary(row, bin, bout, k, (size_t)batch, (size_t)r->dtype)) continue;
            Py_ssize_t shape[GRID_MAX_RANK + 1];
            npy_intp dims[GRID_MAX_RANK + 1];
            const int ndim = output_shape(&row->out[k], batch, shape, one);
            for (int i = 0; i < ndim; i++) dims[i] = (npy_intp)shape[i];
            if (!(tmp[k] = grid_py_outpool_new(ndim, dims, r->type_num))) goto fail;
            out_ptr[k] = PyArray_DATA((PyArrayObject *)tmp[k]);
            dest[k] = bout[k].data;
        }
        if (runner_run(r, (int)algo, in_ptr, out_ptr, dest, batch, attr) < 0) goto fail;
    }

    if (row->n_out == 1) {
        result = outs[0];
        Py_INCREF(result);
    } else {
        result = PyTuple_New(row->n_out);
        for (int k = 0; result && k < row->n_out; k++) {
            Py_INCREF(outs[k]);
            PyTuple_SET_ITEM(result, k, outs[k]);
        }
    }
fail:
    for (int k = 0; k < n_in; k++) arg_release(&bin[k]);
    for (int k = 0; k < n_out; k++) arg_release(&bout[k]);
    for (int k = 0; k < GRID_MAX_OUT; k++) Py_XDECREF(tmp[k]);
    for (int k = 0; k < GRID_MAX_OUT; k++) Py_XDECREF(views[k]);
    return result;
}

static PyMethodDef runner_methods[] = {
    {"call", (PyCFunction)(void (*)(void))runner_call, METH_FASTCALL,
     "call(algo, inputs, out, attrs) -> out\n\n"
     "Runs one batched method: row algo of the signature table (_core.signatures()). inputs is a tuple in\n"
     "the row's order, arrays of (B, per-state shape) in the runner dtype (others are converted), None for\n"
     "an absent optional input; attrs a tuple of the row's integer attributes; out None (allocated) or a\n"
     "C-contiguous array of the output shape (a tuple of them for a row with several outputs, or one (B, W) numpy\n"
     "array holding their blocks one after another, W their widths summed: their views are returned), or a numpy\n"
     "array of a matrix output's flat (B, width) block (its view in the output's shape is returned). An out\n"
     "sharing memory with an input is computed into a temporary, then copied."},
    {NULL, NULL, 0, NULL},
};

/* ---- attributes ---- */

static PyObject *get_provider(PyObject *s, void *c)
{
    (void)c;
    PyObject *n = ((GridPyRunner *)s)->provider_name;
    Py_INCREF(n);
    return n;
}

static PyObject *get_dtype(PyObject *s, void *c)
{
    (void)c;
    PyObject *d = ((GridPyRunner *)s)->np_dtype;
    Py_INCREF(d);
    return d;
}

static PyObject *get_model(PyObject *s, void *c)
{
    (void)c;
    PyObject *m = (PyObject *)((GridPyRunner *)s)->model_obj;
    Py_INCREF(m);
    return m;
}

static PyObject *get_threads(PyObject *s, void *c)
{
    (void)c;
    return PyLong_FromLong(((GridPyRunner *)s)->num_threads);
}

static int set_threads(PyObject *s, PyObject *value, void *c)
{
    (void)c;
    if (!value) { PyErr_SetString(PyExc_AttributeError, "num_threads cannot be deleted"); return -1; }
    if (PyBool_Check(value) || !PyIndex_Check(value)) {
        PyErr_Format(PyExc_TypeError, "num_threads must be an int in 1..%d; got %.80s", GRID_PY_MAX_THREADS,
                     Py_TYPE(value)->tp_name);
        return -1;
    }
    int overflow = 0;
    PyObject *index = PyNumber_Index(value);
    long n = index ? PyLong_AsLongAndOverflow(index, &overflow) : -1;
    Py_XDECREF(index);
    if (n == -1 && PyErr_Occurred()) return -1;
    if (overflow || n < 1 || n > GRID_PY_MAX_THREADS) {
        PyErr_Format(PyExc_ValueError, "num_threads must be an int in 1..%d; got %R", GRID_PY_MAX_THREADS, value);
        return -1;
    }
    GridPyRunner *r = (GridPyRunner *)s;
    r->num_threads = (int)n;
    r->cpus = grid_py_threads_cpus();
    return 0;
}

static PyObject *get_threads_used(PyObject *s, void *c)
{
    (void)c;
    GridPyRunner *r = (GridPyRunner *)s;
    return PyLong_FromLong(grid_py_threads_used(r->num_threads, r->cpus));
}

static PyObject *get_algorithms(PyObject *s, void *c)
{
    (void)c;
    GridPyRunner *r = (GridPyRunner *)s;
    PyObject *t = PyTuple_New(GRID_ALGO_COUNT);
    if (!t) return NULL;
    for (int i = 0; i < GRID_ALGO_COUNT; i++) {
        const int generated = grid_dispatch_entry(&r->disp, i) != NULL;
        PyObject *x = PyUnicode_FromString(generated ? "provider" : "reference");
        if (!x) { Py_DECREF(t); return NULL; }
        PyTuple_SET_ITEM(t, i, x);
    }
    return t;
}

static PyObject *get_convention(PyObject *s, void *c)
{
    (void)c;
    return PyLong_FromLong(((GridPyRunner *)s)->disp.conv.kind);
}

static PyObject *get_converts(PyObject *s, void *c)
{
    (void)c;
    return PyBool_FromLong(!grid_convention_identity(&((GridPyRunner *)s)->disp.conv));
}

static PyGetSetDef runner_getset[] = {
    {"convention", get_convention, NULL, "the output convention: CONVENTION_PINOCCHIO (0) or CONVENTION_MUJOCO (1)", NULL},
    {"converts", get_converts, NULL,
     "True when calls are converted (the convention differs from the kernels' for this robot's joints)", NULL},
    {"provider", get_provider, NULL, "name of the compute provider", NULL},
    {"dtype", get_dtype, NULL, "numpy dtype of inputs and outputs", NULL},
    {"model", get_model, NULL, "the _core.Model", NULL},
    {"num_threads", get_threads, set_threads, "threads requested per batched call, 1..MAX_THREADS (0: every CPU)", NULL},
    {"threads_used", get_threads_used, NULL,
     "threads a large batch runs on now: num_threads clamped to the CPUs of the affinity mask, 1 in a process "
     "forked after a multi-threaded call", NULL},
    {"algorithm_sources", get_algorithms, NULL, "'provider' or 'reference' per algorithm id", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject GridPyRunner_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "grid_rbd._core.Runner",
    .tp_basicsize = sizeof(GridPyRunner),
    .tp_dealloc = (destructor)runner_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Runner(model, dtype, provider=None, owner=None, num_threads=0, convention=0)\n\n"
              "Runs batched algorithms on a Model. dtype is 4 (float32) or 8 (float64). provider None uses\n"
              "the float64 C reference; otherwise a PyCapsule named grid_rbd._core.provider holding a\n"
              "grid_provider table (grid/dispatch.h; owner keeps the code it points into alive). convention: the output\n"
              "convention of inputs and outputs, CONVENTION_PINOCCHIO (the kernels') or CONVENTION_MUJOCO.",
    .tp_methods = runner_methods,
    .tp_getset = runner_getset,
    .tp_new = runner_new,
};

int grid_py_runner_run(PyObject *o, int algo, const void *const *in, void *const *out, Py_ssize_t batch,
                       const int *attr)
{
    assert(PyObject_TypeCheck(o, &GridPyRunner_Type) && algo >= 0 && algo < GRID_ALGO_COUNT);
    return batch > 0 ? runner_run((GridPyRunner *)o, algo, in, out, NULL, batch, attr) : 0;
}

int grid_py_runner_info(PyObject *o, const grid_dispatch **disp, const grid_method_info **rows, int *dtype,
                        int *num_threads, int *cpus)
{
    if (!PyObject_TypeCheck(o, &GridPyRunner_Type)) {
        PyErr_SetString(PyExc_TypeError, "expected a grid_rbd._core.Runner");
        return -1;
    }
    const GridPyRunner *r = (const GridPyRunner *)o;
    *disp = &r->disp;
    *rows = r->rows;
    *dtype = r->dtype;
    *num_threads = r->num_threads;
    *cpus = r->cpus;
    return 0;
}
