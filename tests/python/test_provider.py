"""The Runner's provider slot (where compiled robot libraries plug in), exercised with a ctypes stand-in provider."""

import ctypes

import numpy as np
import pytest

import grid_rbd
from grid_rbd import _core
from robot_cases import BUNDLED_IIWA, make_states


class GridCall(ctypes.Structure):
    """grid_call of include/grid/abi.h (ABI 2: input and output arrays in the row's order)"""
    _fields_ = [("inputs", ctypes.POINTER(ctypes.c_void_p)), ("outputs", ctypes.POINTER(ctypes.c_void_p)),
                ("n_in", ctypes.c_int), ("n_out", ctypes.c_int), ("batch", ctypes.c_longlong),
                ("attr", ctypes.c_int * 4), ("num_threads", ctypes.c_int), ("work", ctypes.c_void_p),
                ("work_bytes", ctypes.c_size_t), ("stream", ctypes.c_void_p)]


BATCH_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(GridCall))


class Provider(ctypes.Structure):
    """grid_py_provider of python/grid_rbd/_core.h"""
    _fields_ = [("abi_version", ctypes.c_int), ("name", ctypes.c_char_p), ("dtype", ctypes.c_int),
                ("nq", ctypes.c_int), ("nv", ctypes.c_int), ("nb", ctypes.c_int), ("nee", ctypes.c_int),
                ("work_bytes", ctypes.c_size_t), ("work_threads", ctypes.c_int),
                ("fns", ctypes.c_void_p * _core.ALGO_COUNT),
                ("cuda_convention", ctypes.c_void_p)]


_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


class FakeLibrary:
    """owns a provider table whose RNEA writes 42 + the row index and records the calls it gets"""

    def __init__(self, model, dtype=_core.FLOAT64, work_bytes=64, nv=None):
        self.calls = []
        self.q_pointers = []
        self.fn = BATCH_FN(self._rnea)
        self.nv = model.nv
        self.table = Provider(_core.ABI_VERSION, b"fake provider", dtype, model.nq,
                              model.nv if nv is None else nv, model.nb, model.nee, work_bytes)
        self.table.fns[_core.ALGO_RNEA] = ctypes.cast(self.fn, ctypes.c_void_p).value
        self.capsule_name = _core.PROVIDER_CAPSULE.encode()  # the capsule keeps only a pointer to its name
        self.capsule = _capsule_new(ctypes.addressof(self.table), self.capsule_name, None)

    def _rnea(self, call_ptr):
        c = call_ptr.contents
        assert (c.n_in, c.n_out) == (4, 1)  # rnea's row: q, qd, qdd, f_ext -> tau
        self.calls.append((c.batch, bool(c.inputs[2]), bool(c.inputs[3]), bool(c.work), c.work_bytes))
        self.q_pointers.append(c.inputs[0])
        out = np.ctypeslib.as_array(ctypes.cast(c.outputs[0], ctypes.POINTER(ctypes.c_double)), (c.batch, self.nv))
        out[:] = 42.0 + np.arange(c.batch)[:, None]
        return 0


def test_provider_entry_points_are_called_and_others_fall_back_to_the_reference():
    ref = grid_rbd.register_robot("prov_ref", urdf_path=BUNDLED_IIWA, dtype="float64", codegen=False)
    model = ref._model
    lib = FakeLibrary(model)
    runner = _core.Runner(model, _core.FLOAT64, provider=lib.capsule, owner=lib)
    assert runner.provider == "fake provider"
    assert runner.algorithm_sources[_core.ALGO_RNEA] == "provider"
    assert runner.algorithm_sources[_core.ALGO_CRBA] == "reference"
    h = grid_rbd.RobotHandle("prov", model, runner, ref.options)
    s = make_states(h, "random", 3)
    tau = h.inverse_dynamics(s["q"], s["qd"], s["qdd"])
    np.testing.assert_array_equal(tau, 42.0 + np.arange(3)[:, None] * np.ones((1, 7)))
    assert lib.calls == [(3, True, False, True, 64)]
    np.testing.assert_array_equal(h.crba(s["q"]), ref.crba(s["q"]))  # no provider entry: the reference
    assert "fake provider" in repr(h)


def test_provider_that_does_not_match_the_model_is_refused():
    model = grid_rbd.register_robot("prov_ref2", urdf_path=BUNDLED_IIWA)._model
    with pytest.raises(grid_rbd.LoadError, match="does not match"):
        lib = FakeLibrary(model, nv=8)
        _core.Runner(model, _core.FLOAT64, provider=lib.capsule)
    with pytest.raises(grid_rbd.LoadError):
        lib = FakeLibrary(model, dtype=_core.FLOAT64)
        _core.Runner(model, _core.FLOAT32, provider=lib.capsule)
    with pytest.raises(ValueError):  # not a provider capsule
        _core.Runner(model, _core.FLOAT64, provider=object())


def test_inputs_in_the_handle_dtype_are_not_copied():
    model = grid_rbd.register_robot("prov_ref3", urdf_path=BUNDLED_IIWA)._model
    lib = FakeLibrary(model)
    runner = _core.Runner(model, _core.FLOAT64, provider=lib.capsule, owner=lib)
    q = np.zeros((2, 7))
    runner.call(_core.ALGO_RNEA, (q, q, None, None), None, ())
    assert lib.q_pointers[-1] == q.ctypes.data                  # used in place
    runner.call(_core.ALGO_RNEA, (q.astype(np.float32), q), None, ())
    assert lib.q_pointers[-1] != q.ctypes.data                  # converted
    wide = np.zeros((2, 14))[:, ::2]
    runner.call(_core.ALGO_RNEA, (wide, q), None, ())
    assert lib.q_pointers[-1] != wide.ctypes.data               # strided: converted
