/* The grid_rbd._core module: registers the Model, Runner and Library types, the ABI constants and the C-status-to-exception bridge. */
#include <string.h>
#include "_core.h"
#include "_numpy.h"
#include "grid/emit.h"

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

static PyMethodDef core_methods[] = {
    {"algorithm_output_width", core_output_width, METH_VARARGS,
     "algorithm_output_width(algo, nq, nv, nb, nee) -> per-state output width in elements."},
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
        {"ABI_VERSION", GRID_ABI_VERSION},
        {"ALGO_RNEA", GRID_ALGO_RNEA}, {"ALGO_NLE", GRID_ALGO_NLE},
        {"ALGO_GRAVITY", GRID_ALGO_GRAVITY}, {"ALGO_CRBA", GRID_ALGO_CRBA},
        {"ALGO_MINV", GRID_ALGO_MINV}, {"ALGO_FD", GRID_ALGO_FD}, {"ALGO_ABA", GRID_ALGO_ABA},
        {"ALGO_FK", GRID_ALGO_FK}, {"ALGO_EE_POSE", GRID_ALGO_EE_POSE},
        {"ALGO_FRAME_JACOBIAN", GRID_ALGO_FRAME_JACOBIAN}, {"ALGO_COUNT", GRID_ALGO_COUNT},
        {"WORLD", GRID_WORLD}, {"LOCAL", GRID_LOCAL}, {"LOCAL_WORLD_ALIGNED", GRID_LOCAL_WORLD_ALIGNED},
        {"FLOAT32", GRID_FLOAT32}, {"FLOAT64", GRID_FLOAT64},
        {"OK", GRID_OK}, {"ERR_IO", GRID_ERR_IO}, {"ERR_XML", GRID_ERR_XML},
        {"ERR_URDF", GRID_ERR_URDF}, {"ERR_UNSUPPORTED", GRID_ERR_UNSUPPORTED},
        {"ERR_LIMIT", GRID_ERR_LIMIT}, {"ERR_NOMEM", GRID_ERR_NOMEM}, {"ERR_ARG", GRID_ERR_ARG},
        {"ERR_BUILD", GRID_ERR_BUILD}, {"ERR_CACHE", GRID_ERR_CACHE}, {"ERR_LOAD", GRID_ERR_LOAD},
        {"ERR_CUDA", GRID_ERR_CUDA}, {"ERR_CANCELLED", GRID_ERR_CANCELLED},
        {"SCHEDULE_AUTO", GRID_SCHEDULE_AUTO}, {"SCHEDULE_UNROLLED", GRID_SCHEDULE_UNROLLED},
        {"SCHEDULE_ROLLED", GRID_SCHEDULE_ROLLED},
        {NULL, 0},
    };
    import_array();
    if (PyType_Ready(&GridPyModel_Type) < 0 || PyType_Ready(&GridPyRunner_Type) < 0 ||
        PyType_Ready(&GridPyLibrary_Type) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&core_module);
    if (!m) return NULL;
    if (PyModule_AddFunctions(m, grid_py_library_functions) < 0) goto fail;
    if (grid_py_cuda_add(m) < 0) goto fail;

    /* algorithm names in grid_algo order */
    PyObject *names = PyTuple_New(GRID_ALGO_COUNT);
    if (!names) goto fail;
    for (int i = 0; i < GRID_ALGO_COUNT; i++) {
        PyObject *s = PyUnicode_FromString(grid_algo_name(i));
        if (!s) { Py_DECREF(names); goto fail; }
        PyTuple_SET_ITEM(names, i, s);
    }
    if (PyModule_AddObject(m, "ALGORITHMS", names) < 0) { Py_DECREF(names); goto fail; }

    if (add_int_consts(m, consts) < 0) goto fail;
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
