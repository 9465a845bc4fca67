/* _core.Model: parses URDF bytes into an immutable grid_model and exposes its sizes, joints and frames as Python data. */
#include "_core.h"
#include <stdint.h>
#include "grid/urdf.h"

/* ---- construction ---- */

static PyObject *model_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"urdf", "filename", "floating_base", "gravity", "ignore_mimic",
                             "ee_joint_names", NULL};
    Py_buffer urdf = {0};
    PyObject *filename = NULL, *ee_names = Py_None, *ee_fast = NULL;
    const char **ee = NULL;
    int floating_base = 0, ignore_mimic = 0;
    double gravity = -9.81;
    GridPyModel *self = NULL;

    if (!PyArg_ParseTupleAndKeywords(args, kwds, "y*|UpdpO:Model", kwlist, &urdf, &filename,
                                     &floating_base, &gravity, &ignore_mimic, &ee_names))
        return NULL;

    grid_model_options opts = grid_model_options_default();
    opts.floating_base = floating_base;
    opts.gravity = gravity;
    opts.ignore_mimic = ignore_mimic;

    /* end-effector joint names: borrowed UTF-8 pointers, alive while ee_fast is */
    if (ee_names != Py_None) {
        ee_fast = PySequence_Fast(ee_names, "ee_joint_names must be a sequence of joint names");
        if (!ee_fast) goto fail;
        Py_ssize_t n = PySequence_Fast_GET_SIZE(ee_fast);
        ee = PyMem_Calloc(n ? (size_t)n : 1, sizeof *ee);
        if (!ee) { PyErr_NoMemory(); goto fail; }
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *item = PySequence_Fast_GET_ITEM(ee_fast, i);
            if (!PyUnicode_Check(item)) {
                PyErr_Format(PyExc_TypeError, "ee_joint_names[%zd] must be a str, not %.80s", i,
                             Py_TYPE(item)->tp_name);
                goto fail;
            }
            ee[i] = PyUnicode_AsUTF8(item);
            if (!ee[i]) goto fail;
        }
        opts.ee_joint_names = ee;
        opts.n_ee_joint_names = (int)n;
    }

    self = (GridPyModel *)type->tp_alloc(type, 0);
    if (!self) goto fail;
    if (filename) {
        Py_INCREF(filename);
        self->filename = filename;
    } else {
        self->filename = PyUnicode_FromString("<urdf_string>");
        if (!self->filename) goto fail;
    }

    /* parse without the GIL: the bytes are held by the buffer view */
    grid_error err;
    grid_error_clear(&err);
    grid_model *model = NULL;
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = grid_urdf_load(urdf.buf, (size_t)urdf.len, &opts, &model, &err);
    Py_END_ALLOW_THREADS
    if (status != GRID_OK || !model) {
        grid_py_raise_error(status != GRID_OK ? status : GRID_ERR_URDF, &err, self->filename);
        goto fail;
    }
    self->model = model;

    PyMem_Free(ee);
    Py_XDECREF(ee_fast);
    PyBuffer_Release(&urdf);
    return (PyObject *)self;
fail:
    PyMem_Free(ee);
    Py_XDECREF(ee_fast);
    Py_XDECREF(self);
    PyBuffer_Release(&urdf);
    return NULL;
}

static void model_dealloc(GridPyModel *self)
{
    if (self->model) grid_model_free(self->model);
    Py_XDECREF(self->filename);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* ---- tuple builders over bodies and frames ---- */

/* a str, or None for a NULL name */
static PyObject *str_or_none(const char *s)
{
    if (s) return PyUnicode_FromString(s);
    Py_RETURN_NONE;
}

/* one tuple entry per body/frame produced by item(model, index) */
typedef PyObject *(*item_fn)(const grid_model *m, int i);

static PyObject *tuple_of(const grid_model *m, int n, item_fn item)
{
    PyObject *t = PyTuple_New(n);
    if (!t) return NULL;
    for (int i = 0; i < n; i++) {
        PyObject *x = item(m, i);
        if (!x) { Py_DECREF(t); return NULL; }
        PyTuple_SET_ITEM(t, i, x);
    }
    return t;
}

static PyObject *joint_name(const grid_model *m, int i) { return str_or_none(m->bodies[i].joint.name); }
static PyObject *body_name(const grid_model *m, int i) { return str_or_none(m->bodies[i].name); }
static PyObject *joint_parent(const grid_model *m, int i) { return PyLong_FromLong(m->bodies[i].joint.parent); }
/* offsets and widths in the user's q and v (Pinocchio's mimic layout: a mimic joint has its leader's offsets
   and width 0) */
static PyObject *joint_iq(const grid_model *m, int i) { return PyLong_FromLong(m->bodies[i].joint.uq); }
static PyObject *joint_nq(const grid_model *m, int i)
{
    return PyLong_FromLong(m->bodies[i].joint.mimic ? 0 : m->bodies[i].joint.nq);
}
static PyObject *joint_iv(const grid_model *m, int i) { return PyLong_FromLong(m->bodies[i].joint.uv); }
static PyObject *joint_nv(const grid_model *m, int i)
{
    return PyLong_FromLong(m->bodies[i].joint.mimic ? 0 : m->bodies[i].joint.nv);
}
static PyObject *joint_mimic(const grid_model *m, int i)
{
    const grid_joint *j = &m->bodies[i].joint;
    if (!j->mimic) Py_RETURN_NONE;
    return Py_BuildValue("(idd)", j->mimic_leader, j->mimic_multiplier, j->mimic_offset);
}
static PyObject *body_mass(const grid_model *m, int i) { return PyFloat_FromDouble(m->bodies[i].inertia.mass); }
static PyObject *frame_name(const grid_model *m, int i) { return str_or_none(m->frames[i].name); }
static PyObject *frame_joint(const grid_model *m, int i) { return str_or_none(m->frames[i].joint); }
static PyObject *frame_body(const grid_model *m, int i) { return PyLong_FromLong(m->frames[i].body); }
static PyObject *ee_frame(const grid_model *m, int i) { return PyLong_FromLong(m->ee_frames[i]); }

static PyObject *joint_type(const grid_model *m, int i)
{
    const grid_joint *j = &m->bodies[i].joint;
    const grid_joint_model *jm = grid_joint_model_of(j->type);
    if (!jm) return PyUnicode_FromString("unknown");
    return PyUnicode_FromString(j->type == GRID_JOINT_REVOLUTE && j->continuous ? "continuous" : jm->name);
}

static PyObject *joint_axis(const grid_model *m, int i)
{
    const double *a = m->bodies[i].joint.axis;
    return Py_BuildValue("(ddd)", a[0], a[1], a[2]);
}

/* ---- getters ---- */

#define MODEL(self) (((GridPyModel *)(self))->model)

static PyObject *get_nq(PyObject *s, void *c) { (void)c; return PyLong_FromLong(MODEL(s)->nq); }
static PyObject *get_nv(PyObject *s, void *c) { (void)c; return PyLong_FromLong(MODEL(s)->nv); }
static PyObject *get_nb(PyObject *s, void *c) { (void)c; return PyLong_FromLong(MODEL(s)->nb); }
static PyObject *get_nframes(PyObject *s, void *c) { (void)c; return PyLong_FromLong(MODEL(s)->nframes); }
static PyObject *get_nee(PyObject *s, void *c) { (void)c; return PyLong_FromLong(MODEL(s)->nee); }
static PyObject *get_floating(PyObject *s, void *c) { (void)c; return PyBool_FromLong(MODEL(s)->floating_base); }
static PyObject *get_gravity(PyObject *s, void *c) { (void)c; return PyFloat_FromDouble(MODEL(s)->gravity); }
static PyObject *get_robot_name(PyObject *s, void *c) { (void)c; return str_or_none(MODEL(s)->robot_name); }

static PyObject *get_filename(PyObject *s, void *c)
{
    (void)c;
    PyObject *f = ((GridPyModel *)s)->filename;
    Py_INCREF(f);
    return f;
}

/* getters over bodies: the item function travels in the closure slot */
static PyObject *get_bodies(PyObject *s, void *closure)
{
    return tuple_of(MODEL(s), MODEL(s)->nb, (item_fn)closure);
}

static PyObject *get_frames(PyObject *s, void *closure)
{
    return tuple_of(MODEL(s), MODEL(s)->nframes, (item_fn)closure);
}

static PyObject *get_ee_frames(PyObject *s, void *c)
{
    (void)c;
    return tuple_of(MODEL(s), MODEL(s)->nee, ee_frame);
}

/* joint data in q or v order (grid_model_joint_data); the closure slot holds kind + 1 */
static PyObject *get_joint_data(PyObject *s, void *closure)
{
    const grid_model *m = MODEL(s);
    const grid_joint_data_kind kind = (grid_joint_data_kind)((intptr_t)closure - 1);
    const int n = kind == GRID_JOINT_DATA_LOWER || kind == GRID_JOINT_DATA_UPPER ? m->nq : m->nv;
    double *x = PyMem_Calloc((size_t)(n > 0 ? n : 1), sizeof *x);
    if (!x) return PyErr_NoMemory();
    grid_model_joint_data(m, kind, x);
    PyObject *t = PyTuple_New(n);
    for (int i = 0; t && i < n; i++) {
        PyObject *f = PyFloat_FromDouble(x[i]);
        if (!f) Py_CLEAR(t);
        else PyTuple_SET_ITEM(t, i, f);
    }
    PyMem_Free(x);
    return t;
}

static PyObject *get_total_mass(PyObject *s, void *c) { (void)c; return PyFloat_FromDouble(grid_model_total_mass(MODEL(s))); }

#define JD(kind) ((void *)(intptr_t)((kind) + 1))

/* function pointer <-> void* for the closure slot (POSIX guarantees the round trip) */
#define FN(f) ((void *)(f))

static PyGetSetDef model_getset[] = {
    {"nq", get_nq, NULL, "configuration width", NULL},
    {"nv", get_nv, NULL, "tangent (velocity) width", NULL},
    {"nb", get_nb, NULL, "number of bodies (the floating base included)", NULL},
    {"nframes", get_nframes, NULL, "number of frames (one per URDF link)", NULL},
    {"nee", get_nee, NULL, "number of end-effector frames", NULL},
    {"floating_base", get_floating, NULL, "whether a free-flyer root joint was added", NULL},
    {"gravity", get_gravity, NULL, "signed gravitational acceleration along world z", NULL},
    {"robot_name", get_robot_name, NULL, "the <robot name=...> attribute", NULL},
    {"filename", get_filename, NULL, "file name used in error messages", NULL},
    {"joint_names", get_bodies, NULL, "moving joint names in body (q/v) order", FN(joint_name)},
    {"joint_types", get_bodies, NULL, "'revolute', 'continuous', 'prismatic', 'free', 'planar' or 'spherical' per body", FN(joint_type)},
    {"joint_parents", get_bodies, NULL, "parent body index per body (-1 = world)", FN(joint_parent)},
    {"joint_idx_q", get_bodies, NULL, "offset of each joint in q (a mimic joint: its leader's)", FN(joint_iq)},
    {"joint_nq", get_bodies, NULL, "width of each joint in q (0 for a mimic joint)", FN(joint_nq)},
    {"joint_idx_v", get_bodies, NULL, "offset of each joint in v (a mimic joint: its leader's)", FN(joint_iv)},
    {"joint_nv", get_bodies, NULL, "width of each joint in v (0 for a mimic joint)", FN(joint_nv)},
    {"joint_axes", get_bodies, NULL, "joint axis in the joint frame per body", FN(joint_axis)},
    {"joint_mimic", get_bodies, NULL, "per body: None, or (leader body, multiplier, offset) of a coupled mimic joint "
     "(chains resolved: the leader is independent)", FN(joint_mimic)},
    {"body_names", get_bodies, NULL, "child link name per body", FN(body_name)},
    {"body_masses", get_bodies, NULL, "merged mass per body (kg)", FN(body_mass)},
    {"frame_names", get_frames, NULL, "frame (URDF link) names in file order", FN(frame_name)},
    {"frame_joints", get_frames, NULL, "name of the joint whose child each frame's link is (None for the root)", FN(frame_joint)},
    {"frame_bodies", get_frames, NULL, "body each frame is attached to (-1 = world)", FN(frame_body)},
    {"ee_frames", get_ee_frames, NULL, "frame ids of the end effectors", NULL},
    {"lower_position_limit", get_joint_data, NULL, "lower position limit per q entry (-inf: none)", JD(GRID_JOINT_DATA_LOWER)},
    {"upper_position_limit", get_joint_data, NULL, "upper position limit per q entry (inf: none)", JD(GRID_JOINT_DATA_UPPER)},
    {"velocity_limit", get_joint_data, NULL, "velocity limit per v entry (inf: none)", JD(GRID_JOINT_DATA_VELOCITY)},
    {"effort_limit", get_joint_data, NULL, "effort limit per v entry (inf: none)", JD(GRID_JOINT_DATA_EFFORT)},
    {"damping", get_joint_data, NULL, "viscous damping per v entry (<dynamics damping>)", JD(GRID_JOINT_DATA_DAMPING)},
    {"friction", get_joint_data, NULL, "Coulomb friction per v entry (<dynamics friction>)", JD(GRID_JOINT_DATA_FRICTION)},
    {"total_mass", get_total_mass, NULL, "sum of the bodies' masses (kg)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

/* Model.frame_index(name) -> int, -1 when no frame has that name */
static PyObject *model_frame_index(PyObject *s, PyObject *name)
{
    const char *n = PyUnicode_AsUTF8(name);
    if (!n) return NULL;
    return PyLong_FromLong(grid_model_frame_index(MODEL(s), n));
}

/* Model.convention_blocks(kind) -> ((kind, iq, iv), ...): the joints an output convention converts (grid/convention.h);
   raises when the convention cannot express this model */
static PyObject *model_convention_blocks(PyObject *s, PyObject *arg)
{
    const long kind = PyLong_AsLong(arg);
    if (kind == -1 && PyErr_Occurred()) return NULL;
    grid_convention cv;
    grid_error err;
    grid_error_clear(&err);
    const int rc = grid_convention_init(&cv, MODEL(s), (int)kind, &err);
    if (rc != GRID_OK) return grid_py_raise_error(rc, &err, NULL);
    PyObject *t = PyTuple_New(cv.n_blocks);
    for (int b = 0; t && b < cv.n_blocks; b++) {
        PyObject *x = Py_BuildValue("(iii)", cv.block[b].kind, cv.block[b].iq, cv.block[b].iv);
        if (!x) Py_CLEAR(t);
        else PyTuple_SET_ITEM(t, b, x);
    }
    return t;
}

static PyMethodDef model_methods[] = {
    {"frame_index", model_frame_index, METH_O, "frame_index(name) -> frame id, -1 if unknown"},
    {"convention_blocks", model_convention_blocks, METH_O,
     "convention_blocks(kind) -> ((block kind, iq, iv), ...): the joints output convention kind converts (1: free\n"
     "flyer, 2: ball); () when it is the identity. Raises GridArgumentError when it cannot express the model."},
    {NULL, NULL, 0, NULL},
};

static PyObject *model_repr(PyObject *s)
{
    const grid_model *m = MODEL(s);
    return PyUnicode_FromFormat("<grid_rbd._core.Model %s nq=%d nv=%d nb=%d nframes=%d nee=%d%s>",
                                m->robot_name ? m->robot_name : "?", m->nq, m->nv, m->nb, m->nframes,
                                m->nee, m->floating_base ? " floating" : "");
}

PyTypeObject GridPyModel_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "grid_rbd._core.Model",
    .tp_basicsize = sizeof(GridPyModel),
    .tp_dealloc = (destructor)model_dealloc,
    .tp_repr = model_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Model(urdf: bytes, filename='<urdf_string>', floating_base=False, gravity=-9.81,\n"
              "      ignore_mimic=False, ee_joint_names=None)\n\n"
              "A parsed, immutable robot model. Errors raise grid_rbd exceptions naming the file and line.",
    .tp_methods = model_methods,
    .tp_getset = model_getset,
    .tp_new = model_new,
};
