/* The grid_rbd._core module: registers the Model, Runner and Library types, the ABI constants, the signature table (signatures()) and the C-status-to-exception bridge. */
#include <string.h>
#include "_core.h"
#include "_numpy.h"
#include "grid/convention.h"
#include "grid/emit.h"
#include "grid/urdf.h"

/* a str from C text (NULL or "" -> None); paths decode as the file system does */
static PyObject *field_or_none(const char *text, int is_path)
{
    if (!text || !*text) Py_RETURN_NONE;
    return is_path ? PyUnicode_DecodeFSDefault(text) : PyUnicode_DecodeUTF8(text, (Py_ssize_t)strlen(text), "replace");
}

/* build the exception through grid_rbd._errors.error_from_status so one Python table maps codes to classes;
   the fields of the C error (path, hint, where_len) are passed as keywords, not parsed out of the message */
static PyObject *raise_fields(int code, int line, int column, const char *message, PyObject *filename,
                              const char *path, const char *hint, int where_len)
{
    PyObject *mod = PyImport_ImportModule("grid_rbd._errors");
    if (!mod) return NULL;
    PyObject *fn = PyObject_GetAttrString(mod, "error_from_status");
    Py_DECREF(mod);
    if (!fn) return NULL;
    PyObject *exc = NULL, *kw = NULL;
    PyObject *args = Py_BuildValue("(iiisO)", code, line, column, message ? message : "", filename ? filename : Py_None);
    PyObject *path_obj = field_or_none(path, 1), *hint_obj = field_or_none(hint, 0);
    if (args && path_obj && hint_obj)
        kw = Py_BuildValue("{s:O,s:O,s:i}", "path", path_obj, "hint", hint_obj, "where_len", where_len);
    if (kw) exc = PyObject_Call(fn, args, kw);
    Py_DECREF(fn);
    Py_XDECREF(args);
    Py_XDECREF(kw);
    Py_XDECREF(path_obj);
    Py_XDECREF(hint_obj);
    if (!exc) return NULL;
    PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
    Py_DECREF(exc);
    return NULL;
}

PyObject *grid_py_raise(int code, int line, int column, const char *message, PyObject *filename)
{
    return raise_fields(code, line, column, message, filename, NULL, NULL, 0);
}

PyObject *grid_py_raise_error(int code, const grid_error *err, PyObject *filename)
{
    /* an exception already pending (e.g. KeyboardInterrupt from a cancelled build) wins */
    if (PyErr_Occurred()) return NULL;
    return raise_fields(code, err->line, err->column, err->message, filename, err->path, err->hint, err->where_len);
}

/* _core.algorithm_output_width(algo, nq, nv, nb, nee) */
static PyObject *core_output_width(PyObject *self, PyObject *args)
{
    (void)self;
    int algo, nq, nv, nb, nee;
    if (!PyArg_ParseTuple(args, "iiiii", &algo, &nq, &nv, &nb, &nee)) return NULL;
    long long w = grid_algo_output_width(algo, nq, nv, nb, nee);
    if (w < 0) return PyErr_Format(PyExc_ValueError, "unknown algorithm id %d", algo);
    return PyLong_FromLongLong(w);
}

/* one dimension as Python sees it: an int for a constant, else "nv" / "6*nb" */
static PyObject *dim_object(grid_dim d)
{
    char buf[32];
    if (d.sym == GRID_SYM_ONE) return PyLong_FromLong(d.mul);
    return PyUnicode_FromString(grid_sig_dim_text(d, buf, sizeof buf));
}

static PyObject *dims_tuple(const grid_dim *dim, int rank)
{
    PyObject *t = PyTuple_New(rank);
    for (int k = 0; t && k < rank; k++) {
        PyObject *x = dim_object(dim[k]);
        if (!x) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, k, x);
    }
    return t;
}

/* {"name", "desc", "shape": ("nv",) or (6, "nv"), "dims": ((sym, mul), ...), "optional", "absent"} */
static PyObject *arg_dict(const grid_sig_arg *a)
{
    PyObject *shape = dims_tuple(a->dim, a->rank), *dims = PyTuple_New(a->rank);
    for (int k = 0; dims && k < a->rank; k++) {
        PyObject *x = Py_BuildValue("(si)", grid_sym_name(a->dim[k].sym), a->dim[k].mul);
        if (!x) {
            Py_CLEAR(dims);
            break;
        }
        PyTuple_SET_ITEM(dims, k, x);
    }
    PyObject *d = NULL;
    if (shape && dims)
        d = Py_BuildValue("{s:s,s:s,s:O,s:O,s:O,s:z}", "name", a->name, "desc", a->desc, "shape", shape, "dims", dims,
                          "optional", a->optional != GRID_REQUIRED ? Py_True : Py_False, "absent",
                          a->optional == GRID_ABSENT_ZEROS ? "zeros" : NULL);
    Py_XDECREF(shape);
    Py_XDECREF(dims);
    return d;
}

static PyObject *args_tuple(const grid_sig_arg *a, int n)
{
    PyObject *t = PyTuple_New(n);
    for (int k = 0; t && k < n; k++) {
        PyObject *x = arg_dict(&a[k]);
        if (!x) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, k, x);
    }
    return t;
}

/* _core.signatures(): the signature table, one dict per row in id order */
static PyObject *core_signatures(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    static const char *const gpu_maps[] = {"thread", "warp", "block"};
    const int n = grid_sig_count();
    PyObject *rows = PyTuple_New(n);
    for (int i = 0; rows && i < n; i++) {
        const grid_signature_row *r = grid_sig_row(i);
        PyObject *in = args_tuple(r->in, r->n_in), *out = args_tuple(r->out, r->n_out), *attrs = PyTuple_New(r->n_attr);
        PyObject *aliases = PyUnicode_FromString(r->py_aliases), *alias_list = NULL, *row = NULL;
        for (int k = 0; attrs && k < r->n_attr; k++) {
            PyObject *hi = dim_object(r->attr[k].hi);
            PyObject *x = hi ? Py_BuildValue("{s:s,s:i,s:O,s:s}", "name", r->attr[k].name, "lo", r->attr[k].lo, "hi", hi,
                                             "range_error", r->attr[k].range_error)
                             : NULL;
            Py_XDECREF(hi);
            if (!x) {
                Py_CLEAR(attrs);
                break;
            }
            PyTuple_SET_ITEM(attrs, k, x);
        }
        if (aliases) alias_list = PyUnicode_Split(aliases, NULL, -1);
        int aux[GRID_CONV_MAX_AUX];
        const int n_aux = grid_convention_aux_rows(i, aux);
        PyObject *aux_t = PyTuple_New(n_aux);
        for (int k = 0; aux_t && k < n_aux; k++) PyTuple_SET_ITEM(aux_t, k, PyLong_FromLong(aux[k]));
        if (in && out && attrs && alias_list && aux_t) {
            PyObject *alias_t = PyList_AsTuple(alias_list);
            if (alias_t)
                row = Py_BuildValue("{s:i,s:s,s:s,s:O,s:s,s:O,s:O,s:O,s:s,s:i,s:i,s:O,s:O}", "id", i, "name", r->name,
                                    "py_name", r->py_name, "aliases", alias_t, "doc", r->doc, "inputs", in, "outputs",
                                    out, "attrs", attrs, "gpu_map", gpu_maps[r->gpu_map], "derivative", r->derivative,
                                    "vjp", r->vjp, "mujoco_aux", aux_t, "opt_in", grid_sig_opt_in(i) ? Py_True : Py_False);
            Py_XDECREF(alias_t);
        }
        Py_XDECREF(aux_t);
        Py_XDECREF(in);
        Py_XDECREF(out);
        Py_XDECREF(attrs);
        Py_XDECREF(aliases);
        Py_XDECREF(alias_list);
        if (!row) {
            Py_DECREF(rows);
            return NULL;
        }
        PyTuple_SET_ITEM(rows, i, row);
    }
    return rows;
}

/* (name, shape, optional) of one concrete argument */
static PyObject *arg_info_tuple(const grid_arg_info *a)
{
    PyObject *shape = PyTuple_New(a->rank);
    for (int k = 0; shape && k < a->rank; k++) {
        PyObject *x = PyLong_FromLong(a->shape[k]);
        if (!x) {
            Py_CLEAR(shape);
            break;
        }
        PyTuple_SET_ITEM(shape, k, x);
    }
    if (!shape) return NULL;
    PyObject *t = Py_BuildValue("(sOO)", a->name ? a->name : "", shape, a->optional ? Py_True : Py_False);
    Py_DECREF(shape);
    return t;
}

PyObject *grid_py_method_dict(const grid_method_info *r)
{
    PyObject *in = PyTuple_New(r->n_in), *out = PyTuple_New(r->n_out), *attrs = PyTuple_New(r->n_attr), *d = NULL;
    int ok = in && out && attrs;
    for (int k = 0; ok && k < r->n_in; k++) {
        PyObject *x = arg_info_tuple(&r->in[k]);
        ok = x != NULL;
        if (ok) PyTuple_SET_ITEM(in, k, x);
    }
    for (int k = 0; ok && k < r->n_out; k++) {
        PyObject *x = arg_info_tuple(&r->out[k]);
        ok = x != NULL;
        if (ok) PyTuple_SET_ITEM(out, k, x);
    }
    for (int k = 0; ok && k < r->n_attr; k++) {
        PyObject *x = Py_BuildValue("(sii)", r->attr_name[k] ? r->attr_name[k] : "", r->attr_lo[k], r->attr_hi[k]);
        ok = x != NULL;
        if (ok) PyTuple_SET_ITEM(attrs, k, x);
    }
    if (ok)
        d = Py_BuildValue("{s:s,s:O,s:O,s:O,s:n,s:i}", "name", r->name ? r->name : "", "inputs", in, "outputs", out, "attrs",
                          attrs, "work_bytes", (Py_ssize_t)r->work_bytes, "gpu_map", r->gpu_map);
    Py_XDECREF(in);
    Py_XDECREF(out);
    Py_XDECREF(attrs);
    return d;
}

PyObject *grid_py_meta_dict(const grid_robot_meta_t *m)
{
    PyObject *names = PyTuple_New(m->n_methods > 0 ? m->n_methods : 0);
    for (int i = 0; names && i < m->n_methods; i++) {
        PyObject *s = PyUnicode_FromString(m->methods[i].name ? m->methods[i].name : "");
        if (!s) {
            Py_CLEAR(names);
            break;
        }
        PyTuple_SET_ITEM(names, i, s);
    }
    if (!names) return NULL;
    PyObject *d = Py_BuildValue("{s:i,s:i,s:i,s:i,s:i,s:i,s:s,s:i,s:O,s:n,s:s}", "abi_version", m->abi_version, "nq", m->nq,
                                "nv", m->nv, "nb", m->nb, "nframes", m->nframes, "nee", m->nee, "dtype",
                                m->dtype == GRID_FLOAT32 ? "float32" : "float64", "target", m->target, "methods", names,
                                "work_bytes", (Py_ssize_t)m->work_bytes, "model_hash", m->model_hash ? m->model_hash : "");
    Py_DECREF(names);
    return d;
}

static PyMethodDef core_methods[] = {
    {"algorithm_output_width", core_output_width, METH_VARARGS,
     "algorithm_output_width(algo, nq, nv, nb, nee) -> per-state width of the row's (first) output in elements."},
    {"signatures", core_signatures, METH_NOARGS,
     "signatures() -> the signature table: per row (in id order) a dict with id, name (the ABI name), py_name and\n"
     "aliases (the RobotHandle methods), doc, inputs and outputs (each a dict: name, desc, shape with 'nv'/'6*nb'\n"
     "strings and int constants, dims as (symbol, multiplier) pairs, optional, absent: 'zeros' or None), attrs\n"
     "(name, lo, hi: valid lo <= x < hi, range_error), gpu_map, derivative and vjp (row ids, -1 = none), mujoco_aux\n"
     "(the row ids a derivative runs beside it in output_convention='mujoco' on a free flyer)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef core_module = {
    PyModuleDef_HEAD_INIT, "grid_rbd._core",
    "C core of grid_rbd: URDF parsing into Model, batched calls through Runner.", -1, core_methods,
    NULL, NULL, NULL, NULL,
};

/* add name -> int for every entry of a NULL-terminated table */
typedef struct { const char *name; int value; } int_const;

static int add_int_consts(PyObject *m, const int_const *table)
{
    for (; table->name; table++)
        if (PyModule_AddIntConstant(m, table->name, table->value) < 0) return -1;
    return 0;
}

PyMODINIT_FUNC PyInit__core(void)
{
    static const int_const consts[] = {
        {"ABI_VERSION", GRID_ABI_VERSION}, {"ALGO_COUNT", GRID_ALGO_COUNT},
        {"WORLD", GRID_WORLD}, {"LOCAL", GRID_LOCAL}, {"LOCAL_WORLD_ALIGNED", GRID_LOCAL_WORLD_ALIGNED},
        {"FLOAT32", GRID_FLOAT32}, {"FLOAT64", GRID_FLOAT64},
        {"OK", GRID_OK}, {"ERR_IO", GRID_ERR_IO}, {"ERR_XML", GRID_ERR_XML},
        {"ERR_URDF", GRID_ERR_URDF}, {"ERR_UNSUPPORTED", GRID_ERR_UNSUPPORTED},
        {"ERR_LIMIT", GRID_ERR_LIMIT}, {"ERR_NOMEM", GRID_ERR_NOMEM}, {"ERR_ARG", GRID_ERR_ARG},
        {"ERR_BUILD", GRID_ERR_BUILD}, {"ERR_CACHE", GRID_ERR_CACHE}, {"ERR_LOAD", GRID_ERR_LOAD},
        {"ERR_CUDA", GRID_ERR_CUDA}, {"ERR_CANCELLED", GRID_ERR_CANCELLED},
        {"SCHEDULE_AUTO", GRID_SCHEDULE_AUTO}, {"SCHEDULE_UNROLLED", GRID_SCHEDULE_UNROLLED},
        {"SCHEDULE_ROLLED", GRID_SCHEDULE_ROLLED}, {"MAX_THREADS", GRID_PY_MAX_THREADS},
        {"URDF_MAX_BYTES", (int)GRID_URDF_MAX_BYTES},
        {"CONVENTION_PINOCCHIO", GRID_CONVENTION_PINOCCHIO}, {"CONVENTION_MUJOCO", GRID_CONVENTION_MUJOCO},
        {NULL, 0},
    };
    import_array();
    if (grid_py_threads_init() < 0 || grid_py_outpool_init() < 0 || grid_py_tensors_init() < 0) return NULL;
    if (PyType_Ready(&GridPyModel_Type) < 0 || PyType_Ready(&GridPyRunner_Type) < 0 ||
        PyType_Ready(&GridPyLibrary_Type) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&core_module);
    if (!m) return NULL;
    if (PyModule_AddFunctions(m, grid_py_library_functions) < 0) goto fail;
    if (PyModule_AddFunctions(m, grid_py_outpool_functions) < 0) goto fail;
    if (PyModule_AddFunctions(m, grid_py_xla_functions) < 0) goto fail;
    if (PyModule_AddFunctions(m, grid_py_tensor_functions) < 0) goto fail;
    if (PyModule_AddIntConstant(m, "XLA_FFI", grid_py_xla_available) < 0) goto fail;
    if (grid_py_cuda_add(m) < 0) goto fail;

    /* the rows of the signature table: their names in id order, and ALGO_<NAME> = id */
    PyObject *names = PyTuple_New(GRID_ALGO_COUNT);
    if (!names) goto fail;
    for (int i = 0; i < GRID_ALGO_COUNT; i++) {
        PyObject *s = PyUnicode_FromString(grid_algo_name(i));
        if (!s) { Py_DECREF(names); goto fail; }
        PyTuple_SET_ITEM(names, i, s);
        char cname[80];
        size_t n = (size_t)snprintf(cname, sizeof cname, "ALGO_");
        for (const char *c = grid_algo_name(i); *c && n + 1 < sizeof cname; c++) cname[n++] = (char)(*c >= 'a' && *c <= 'z' ? *c - 32 : *c);
        cname[n] = '\0';
        if (PyModule_AddIntConstant(m, cname, i) < 0) { Py_DECREF(names); goto fail; }
    }
    if (PyModule_AddObject(m, "ALGORITHMS", names) < 0) { Py_DECREF(names); goto fail; }

    if (add_int_consts(m, consts) < 0) goto fail;
    {
        PyObject *g = PyFloat_FromDouble(GRID_GRAVITY_MAX);
        if (!g || PyModule_AddObject(m, "GRAVITY_MAX", g) < 0) { Py_XDECREF(g); goto fail; }
    }
    if (PyModule_AddStringConstant(m, "PROVIDER_CAPSULE", GRID_PY_PROVIDER_CAPSULE) < 0) goto fail;
    /* set by setup.py at build time: the package version and a SHA-256 over the generator's sources */
    if (PyModule_AddStringConstant(m, "PACKAGE_VERSION", GRID_PACKAGE_VERSION) < 0) goto fail;
    if (PyModule_AddStringConstant(m, "GENERATOR_HASH", GRID_GENERATOR_HASH) < 0) goto fail;
    Py_INCREF(&GridPyModel_Type);
    if (PyModule_AddObject(m, "Model", (PyObject *)&GridPyModel_Type) < 0) {
        Py_DECREF(&GridPyModel_Type);
        goto fail;
    }
    Py_INCREF(&GridPyRunner_Type);
    if (PyModule_AddObject(m, "Runner", (PyObject *)&GridPyRunner_Type) < 0) {
        Py_DECREF(&GridPyRunner_Type);
        goto fail;
    }
    Py_INCREF(&GridPyLibrary_Type);
    if (PyModule_AddObject(m, "Library", (PyObject *)&GridPyLibrary_Type) < 0) {
        Py_DECREF(&GridPyLibrary_Type);
        goto fail;
    }
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
