/* _core.tensor_call: the PyTorch front end's eager path on plain CPU tensors — their memory read through data_ptr()
   (no libtorch link), fresh outputs as tensors over output-pool numpy arrays, one call of the runner. */
#include <assert.h>
#include "_core.h"
#define NO_IMPORT_ARRAY
#include "_numpy.h"

/* the tensor attributes and methods read per call */
enum { A_DTYPE, A_IS_CPU, A_REQUIRES_GRAD, A_IS_CONTIGUOUS, A_IS_NEG, A_SHAPE, A_DATA_PTR, A_COUNT };
static PyObject *attr_name[A_COUNT];
/* their descriptors on the tensor type of the last call, and which are data descriptors (read through their getter;
   the others are methods, called with the tensor): a plain tensor is of exactly that type, so attribute lookup would
   find these, and reading them directly saves the lookup and the bound method (21 reads a call of three inputs) */
static PyObject *desc_type, *desc[A_COUNT];
static int desc_is_data[A_COUNT];

int grid_py_tensors_init(void)
{
    const char *text[A_COUNT] = {"dtype", "is_cpu", "requires_grad", "is_contiguous", "is_neg", "shape", "data_ptr"};
    for (int k = 0; k < A_COUNT; k++)
        if (!attr_name[k] && !(attr_name[k] = PyUnicode_InternFromString(text[k]))) return -1;
    return 0;
}

/* the descriptors of type (looked up when it is not the last call's): 0, or -1 with an exception */
static int descriptors_of(PyObject *type)
{
    if (type == desc_type) return 0;
    PyObject *d[A_COUNT] = {NULL};
    for (int k = 0; k < A_COUNT; k++)
        if (!(d[k] = PyObject_GetAttr(type, attr_name[k])) ||
            (Py_TYPE(d[k])->tp_descr_set ? !Py_TYPE(d[k])->tp_descr_get : !PyCallable_Check(d[k]))) {
            if (d[k]) PyErr_Format(PyExc_TypeError, "tensor_call: %R.%U is neither an attribute nor a method", type,
                                   attr_name[k]);
            for (int j = 0; j <= k; j++) Py_XDECREF(d[j]);
            return -1;
        }
    for (int k = 0; k < A_COUNT; k++) {
        Py_XSETREF(desc[k], d[k]);
        desc_is_data[k] = Py_TYPE(d[k])->tp_descr_set != NULL;
    }
    Py_INCREF(type);
    Py_XSETREF(desc_type, type);
    return 0;
}

/* attribute k of x (a method's result for a method), x of type desc_type: a new reference, or NULL with an exception */
static PyObject *read_attr(PyObject *x, int k)
{
    assert((PyObject *)Py_TYPE(x) == desc_type);
    return desc_is_data[k] ? Py_TYPE(desc[k])->tp_descr_get(desc[k], x, desc_type)
                           : PyObject_Vectorcall(desc[k], &x, 1, NULL);
}

/* what a call's tensors must be: the exact tensor type and the runner's dtype object, and whether they may ask for a
   gradient; and the function wrapping an output array (torch.from_numpy) */
typedef struct {
    PyObject *type, *dtype, *from_numpy;
    int any_grad; /* tensors asking for a gradient are read too (inside an autograd.Function, no graph recorded) */
} tensor_kind;

/* attribute k of x is the object want: 1, or 0 (an exception, e.g. a sparse tensor's is_contiguous, cleared: the
   general path says what is wrong) */
static int attr_is(PyObject *x, int k, PyObject *want)
{
    PyObject *v = read_attr(x, k);
    if (!v) {
        PyErr_Clear();
        return 0;
    }
    const int is = v == want;
    Py_DECREF(v);
    return is;
}

/* Is x a plain tensor (tk's exact type and dtype, on the CPU, no gradient asked (unless tk allows), contiguous, no
   negative bit, with storage: a tensor wrapped by torch.func has none, so data_ptr() fails) of shape [batch,] + ai's
   shape? 1 with *data set (and *batch when it was < 0; *one, a single state without the batch axis, when it was < 0:
   the first input decides), else 0 (the general path then converts it or says what is wrong). */
static int plain_tensor(PyObject *x, const tensor_kind *tk, const grid_arg_info *ai, int *one_p, Py_ssize_t *batch,
                        void **data)
{
    if (Py_TYPE(x) != (PyTypeObject *)tk->type || !attr_is(x, A_DTYPE, tk->dtype) || !attr_is(x, A_IS_CPU, Py_True) ||
        (!tk->any_grad && !attr_is(x, A_REQUIRES_GRAD, Py_False)) || !attr_is(x, A_IS_CONTIGUOUS, Py_True) ||
        !attr_is(x, A_IS_NEG, Py_False))
        return 0;
    PyObject *shape = read_attr(x, A_SHAPE);
    if (!shape) {
        PyErr_Clear();
        return 0;
    }
    if (*one_p < 0) *one_p = PyTuple_Check(shape) && PyTuple_GET_SIZE(shape) == ai->rank;
    const int one = *one_p;
    int same = PyTuple_Check(shape) && PyTuple_GET_SIZE(shape) == ai->rank + !one;
    for (int k = 0; same && k < PyTuple_GET_SIZE(shape); k++) {
        const Py_ssize_t d = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, k));
        if (!one && k == 0) {
            same = d >= 0 && (*batch < 0 || d == *batch);
            *batch = d;
        } else {
            same = d == ai->shape[k - !one];
        }
    }
    Py_DECREF(shape);
    PyErr_Clear(); /* (a dimension that is no int: not the same) */
    if (!same) return 0;
    PyObject *p = read_attr(x, A_DATA_PTR);
    if (p) {
        *data = PyLong_AsVoidPtr(p);
        Py_DECREF(p);
    }
    if (!p || PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    return 1;
}

/* do the byte ranges [a, a + na) and [b, b + nb) meet? */
static int overlaps(const void *a, size_t na, const void *b, size_t nb)
{
    const char *x = a, *y = b;
    return na && nb && x < y + nb && y < x + na;
}

/* tensor_call(runner, algo, inputs, attrs, kind[, out]) -> the outputs (fresh tensors, a tuple for several; or out), or
   NotImplemented when the library lacks the row, an input or out is not a plain tensor of its row's shape, out shares
   memory with an input or another output, an attribute is out of its range or runner is not a Runner (a closed
   handle's): the caller's general path then converts, or raises naming what was expected. kind: (tensor type, dtype,
   from_numpy, any_grad: input tensors asking for a gradient are read too, inside an autograd.Function); out: None, a
   tensor, or a tuple of one per output (never one asking for a gradient). */
static PyObject *tensor_call(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 5 && nargs != 6)
        return PyErr_Format(PyExc_TypeError, "tensor_call() takes 5 or 6 arguments; %zd given", nargs);
    const grid_dispatch *disp;
    const grid_method_info *rows;
    int dtype, threads, cpus;
    if (!PyObject_TypeCheck(args[0], &GridPyRunner_Type)) Py_RETURN_NOTIMPLEMENTED;
    if (grid_py_runner_info(args[0], &disp, &rows, &dtype, &threads, &cpus) < 0) return NULL;
    const long algo = PyLong_AsLong(args[1]);
    if (algo == -1 && PyErr_Occurred()) return NULL;
    PyObject *inputs = args[2], *attrs = args[3], *kind = args[4];
    if (algo < 0 || algo >= GRID_ALGO_COUNT || !PyTuple_Check(inputs) || !PyTuple_Check(attrs) ||
        !PyTuple_Check(kind) || PyTuple_GET_SIZE(kind) != 4)
        return PyErr_Format(PyExc_TypeError, "tensor_call(runner, algo, inputs: tuple, attrs: tuple, kind: 4-tuple)");
    if (descriptors_of(PyTuple_GET_ITEM(kind, 0)) < 0) return NULL;
    const tensor_kind tk = {PyTuple_GET_ITEM(kind, 0), PyTuple_GET_ITEM(kind, 1), PyTuple_GET_ITEM(kind, 2),
                            PyObject_IsTrue(PyTuple_GET_ITEM(kind, 3)) == 1};
    /* (a row the library was built without: the general path names it) */
    if (disp->has_provider && !grid_dispatch_entry(disp, algo)) Py_RETURN_NOTIMPLEMENTED;
    const grid_method_info *row = &rows[algo];
    const Py_ssize_t n_given = PyTuple_GET_SIZE(inputs);
    if (n_given > row->n_in || PyTuple_GET_SIZE(attrs) != row->n_attr) Py_RETURN_NOTIMPLEMENTED;

    int attr[GRID_MAX_ATTR] = {0};
    for (int k = 0; k < row->n_attr; k++) {
        const long a = PyLong_AsLong(PyTuple_GET_ITEM(attrs, k));
        if (a == -1 && PyErr_Occurred()) return NULL;
        if (a < row->attr_lo[k] || a >= row->attr_hi[k]) Py_RETURN_NOTIMPLEMENTED;
        attr[k] = (int)a;
    }
    /* inputs: the first decides whether there is a batch axis */
    const void *in[GRID_MAX_IN] = {NULL};
    Py_ssize_t batch = -1;
    int one = -1;
    for (int k = 0; k < row->n_in; k++) {
        PyObject *x = k < n_given ? PyTuple_GET_ITEM(inputs, k) : Py_None;
        if (x == Py_None) {
            if (row->in[k].optional == GRID_REQUIRED) Py_RETURN_NOTIMPLEMENTED;
            continue;
        }
        void *data;
        if (!plain_tensor(x, &tk, &row->in[k], &one, &batch, &data)) Py_RETURN_NOTIMPLEMENTED;
        in[k] = data;
    }
    if (one < 0) Py_RETURN_NOTIMPLEMENTED; /* (q, required, is always present) */
    if (one) batch = 1;
    assert(batch >= 0);

    /* out given: each a plain tensor of its output's shape, sharing memory with no input and no other output */
    PyObject *given = nargs == 6 ? args[5] : Py_None;
    void *out[GRID_MAX_OUT];
    if (given != Py_None) {
        const int tuple = PyTuple_Check(given);
        if (tuple != (row->n_out > 1) || (tuple && PyTuple_GET_SIZE(given) != row->n_out)) Py_RETURN_NOTIMPLEMENTED;
        tensor_kind tko = tk;
        tko.any_grad = 0;
        for (int k = 0; k < row->n_out; k++) {
            Py_ssize_t b = batch;
            int o = one;
            if (!plain_tensor(tuple ? PyTuple_GET_ITEM(given, k) : given, &tko, &row->out[k], &o, &b, &out[k]))
                Py_RETURN_NOTIMPLEMENTED;
            const size_t nk = (size_t)batch * (size_t)row->out[k].width * (size_t)dtype;
            for (int j = 0; j < row->n_in; j++)
                if (in[j] && overlaps(in[j], (size_t)batch * (size_t)row->in[j].width * (size_t)dtype, out[k], nk))
                    Py_RETURN_NOTIMPLEMENTED;
            for (int j = 0; j < k; j++)
                if (overlaps(out[j], (size_t)batch * (size_t)row->out[j].width * (size_t)dtype, out[k], nk))
                    Py_RETURN_NOTIMPLEMENTED;
        }
        if (grid_py_runner_run(args[0], (int)algo, in, out, batch, attr) < 0) return NULL;
        Py_INCREF(given);
        return given;
    }

    /* fresh outputs, run, wrapped as tensors */
    const int type_num = dtype == GRID_FLOAT32 ? NPY_FLOAT32 : NPY_FLOAT64;
    PyObject *arr[GRID_MAX_OUT] = {NULL}, *result = NULL;
    for (int k = 0; k < row->n_out; k++) {
        npy_intp dims[GRID_MAX_RANK + 1];
        int nd = 0;
        if (!one) dims[nd++] = (npy_intp)batch;
        for (int i = 0; i < row->out[k].rank; i++) dims[nd++] = (npy_intp)row->out[k].shape[i];
        if (!(arr[k] = grid_py_outpool_new(nd, dims, type_num))) goto done;
        out[k] = PyArray_DATA((PyArrayObject *)arr[k]);
    }
    if (grid_py_runner_run(args[0], (int)algo, in, out, batch, attr) < 0) goto done;
    if (row->n_out == 1) {
        result = PyObject_CallOneArg(tk.from_numpy, arr[0]);
    } else if ((result = PyTuple_New(row->n_out))) {
        for (int k = 0; k < row->n_out; k++) {
            PyObject *t = PyObject_CallOneArg(tk.from_numpy, arr[k]);
            if (!t) {
                Py_CLEAR(result);
                break;
            }
            PyTuple_SET_ITEM(result, k, t);
        }
    }
done:
    for (int k = 0; k < row->n_out; k++) Py_XDECREF(arr[k]);
    return result;
}

PyMethodDef grid_py_tensor_functions[] = {
    {"tensor_call", (PyCFunction)(void (*)(void))tensor_call, METH_FASTCALL,
     "tensor_call(runner, algo, inputs, attrs, kind[, out]) -> outputs or NotImplemented\n\n"
     "Row algo of the runner on plain CPU tensors (kind: (tensor type, dtype, from_numpy, any_grad)): read through\n"
     "their data pointers, the outputs fresh tensors or out's; NotImplemented when an input or out is not a plain\n"
     "tensor of its row's shape, out overlaps, or an attribute is out of range (the caller's general path then\n"
     "converts or raises)."},
    {NULL, NULL, 0, NULL},
};
