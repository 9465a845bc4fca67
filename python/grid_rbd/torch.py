"""The PyTorch front end: every row of the signature table as a torch.library op grid_rbd::<row> with a fake kernel
(torch.compile traces it), running the numpy handle's compiled library on the tensors' memory (no libtorch link),
differentiated through the analytic VJP rows (_torch_autograd)."""

import numpy as np
import torch

from . import _signatures
from ._errors import NotAvailableError
from ._torch_autograd import (FRONTS, DifferentiationError, Differentiable, ForwardOnly, QPullback,
                              q_is_tangent)
from .handle import REFERENCE_FRAMES, missing_rows, not_built_error, robot_key, row_binder

__all__ = ["register_robot", "TorchRobotHandle", "REFERENCE_FRAMES", "DifferentiationError", "op"]

_TORCH_DTYPES = {np.dtype(np.float32): torch.float32, np.dtype(np.float64): torch.float64}

# ---- the ops: one per row, defined from the table ----

_LIB = torch.library.Library("grid_rbd", "DEF")
_OPS = {}  # row id -> torch.ops.grid_rbd.<row>.default


def _schema(row):
    """'rnea(str robot, Tensor q, Tensor qd, Tensor? qdd, Tensor? f_ext, int[] attrs) -> Tensor': the row's inputs
    (optional ones may be None), the robot's key and the attribute values"""
    ins = "".join(f"Tensor{'?' if a['optional'] else ''} {a['name']}, " for a in row["inputs"])
    n = len(row["outputs"])
    return f"{row['name']}(str robot, {ins}int[] attrs) -> {'Tensor' if n == 1 else '(' + ', '.join(['Tensor'] * n) + ')'}"


def _define_ops():
    for row in _signatures.ROWS:
        rid = row["id"]
        _LIB.define(_schema(row))

        def kernel(robot, *args, _rid=rid):
            return FRONTS[robot].kernel(_rid, args[:-1], tuple(args[-1]))

        def fake(robot, *args, _rid=rid):
            return FRONTS[robot].fake(_rid, args[:-1])

        _LIB.impl(row["name"], kernel, "CPU")
        torch.library.register_fake(f"grid_rbd::{row['name']}", fake, lib=_LIB)
        _OPS[rid] = getattr(torch.ops.grid_rbd, row["name"]).default


_define_ops()


def op(name):
    """the torch op of a method or row name ("inverse_dynamics", "rnea"): op(robot_key, *inputs, attrs)"""
    return _OPS[_signatures.row(name)["id"]]


def register_robot(name, urdf_path=None, urdf_string=None, **options):
    """grid_rbd.register_robot(..., backend="torch"): a TorchRobotHandle on the same compiled library as the numpy
    backend (a cache hit when that one was built). Takes register_robot's arguments; the calls take CPU tensors in
    this version (device "auto" or "cpu")."""
    from .registry import register_robot as _register
    options["backend"] = "torch"
    return _register(name, urdf_path=urdf_path, urdf_string=urdf_string, **options)


class TorchRobotHandle:
    """Batched rigid-body dynamics of one robot on torch tensors: every method of the numpy RobotHandle (same names,
    arguments and shapes; out= takes tensors to write), each the op grid_rbd::<row> under torch.compile and a direct
    call of the compiled library in eager mode. Inputs must be CPU tensors of the handle's dtype; a single state (no
    batch axis) gives a result without one. inverse_dynamics (q, qd), forward_dynamics and aba (q, qd, u) and
    end_effector_pose (q) are differentiable through their analytic VJP rows; differentiating anything else raises
    DifferentiationError."""

    def __init__(self, handle):
        self._np = handle
        self._key = robot_key(handle)
        self._dtype = _TORCH_DTYPES[np.dtype(handle.dtype)]
        sizes = _signatures.sizes_of(handle._model)
        self._rows = [_signatures.concrete(r, sizes) for r in _signatures.ROWS]  # by row id, with this robot's shapes
        self._missing = missing_rows(handle)
        # what the backward needs (_torch_autograd): the q cotangent's map, None where it is the identity
        self.q_pullback = None if q_is_tangent(handle._model) else QPullback(handle._model, handle.output_convention)
        FRONTS[self._key] = self

    @property
    def numpy_handle(self):
        """the numpy RobotHandle this one shares its library with"""
        return self._np

    @property
    def robot_key(self):
        """the string the ops take to find this robot in the process (no pointer)"""
        return self._key

    @property
    def dtype(self):
        return self._dtype

    def __getattr__(self, attr):
        # sizes, names and properties: the numpy handle's
        if attr.startswith("_"):
            raise AttributeError(attr)
        return getattr(self._np, attr)

    def __repr__(self):
        return "Torch" + repr(self._np)

    # ---- the op's kernels ----
    def kernel(self, rid, inputs, attrs, out=None):
        """the CPU kernel of row rid: the compiled library on the tensors' memory -> fresh tensors (or out's)"""
        arrays = tuple([None if x is None else x.detach().numpy() if x.requires_grad else x.numpy() for x in inputs])
        if out is not None:
            self._np._call(rid, arrays, tuple(o.detach().numpy() for o in out) if isinstance(out, tuple)
                           else out.detach().numpy(), attrs)
            return out
        res = self._np._call(rid, arrays, None, attrs)
        return tuple(map(torch.from_numpy, res)) if isinstance(res, tuple) else torch.from_numpy(res)

    def fake(self, rid, inputs):
        """the fake kernel of row rid: empty outputs of the inputs' leading dimensions"""
        c = self._rows[rid]
        q = inputs[0]
        lead = tuple(q.shape[:q.ndim - len(c["inputs"][0][1])])
        outs = tuple(q.new_empty(lead + shape) for _, shape in c["outputs"])
        return outs[0] if len(outs) == 1 else outs

    def run(self, rid, inputs, attrs):
        """row rid on tensors: the op while torch.compile traces, else its kernel directly (the dispatcher's cost
        saved in eager mode)"""
        if torch.compiler.is_compiling():
            return _OPS[rid](self._key, *inputs, list(attrs))
        return self.kernel(rid, inputs, attrs)

    # ---- one call of a method ----
    def _check(self, R, inputs):
        """the tensors of a call's inputs (array-likes converted), checked: CPU tensors of the handle's dtype, the
        row's per-state shapes, one batch axis or none (as the numpy handle's)"""
        xs = tuple(x if x is None or isinstance(x, torch.Tensor) else torch.as_tensor(x, dtype=self._dtype)
                   for x in inputs)
        for (name, *_), x in zip(self._rows[R["id"]]["inputs"], xs):
            if x is not None and x.device.type != "cpu":
                raise NotAvailableError(f"{R['py_name']}: {name} is on {x.device}; the torch backend takes CPU "
                                        "tensors in this version (its CUDA kernels come next)")
        lead = _signatures.leading_dims(self._rows[R["id"]], R["py_name"], xs, self._dtype,
                                        lambda d: str(d).removeprefix("torch."))
        if len(lead) > 1:
            raise ValueError(f"{R['py_name']}: inputs take one batch axis (B, ...) or none; got leading dimensions "
                             f"{lead} (reshape them into one)")
        return xs

    def call(self, R, inputs, attrs, out=None):
        """row R on inputs (in its order, None for an absent optional one) with attribute values attrs: through an
        autograd.Function when a gradient may flow, the row's own otherwise"""
        rid = R["id"]
        if rid in self._missing:
            raise not_built_error(R["py_name"])
        if not torch.compiler.is_compiling():
            # eager, no gradient, CPU tensors of the dtype: the library on their memory, nothing in between
            dt, arrays = self._dtype, []
            for x in inputs if out is None else (*inputs, *(out if type(out) is tuple else (out,))):
                if x is None:
                    arrays.append(None)
                elif type(x) is torch.Tensor and x.dtype is dt and x.is_cpu and not x.requires_grad:
                    arrays.append(x.numpy())
                else:
                    break
            else:
                if out is not None:
                    n = len(inputs)
                    self._np._call(rid, tuple(arrays[:n]), arrays[n] if len(arrays) == n + 1 else
                                   tuple(arrays[n:]), attrs)
                    return out
                res = self._np._call(rid, tuple(arrays), None, attrs)
                return tuple(map(torch.from_numpy, res)) if type(res) is tuple else torch.from_numpy(res)
        xs = self._check(R, inputs)
        attrs = tuple(attrs)
        grad = torch.is_grad_enabled() and any(x is not None and x.requires_grad for x in xs)
        if out is not None:
            if grad:
                raise DifferentiationError(f"{R['py_name']}: out= is not differentiable; call it without out= to "
                                           "differentiate")
            if torch.compiler.is_compiling():
                res = _OPS[rid](self._key, *xs, list(attrs))
                for o, r in zip(out if isinstance(out, tuple) else (out,), res if isinstance(res, tuple) else (res,)):
                    o.copy_(r)
                return out
            return self.kernel(rid, xs, attrs, out)
        if grad:
            fn = Differentiable if R["vjp"] >= 0 else ForwardOnly
            return fn.apply(self._key, rid, attrs, *xs)
        return self.run(rid, xs, attrs)


def _torch_method(row):
    parse, signature, doc = row_binder(row)

    def method(self, *args, **kwargs):
        inputs, attrs, out = parse(self._np, args, kwargs)  # frame names converted by the numpy handle
        return self.call(row, inputs, attrs, out)

    method.__signature__ = signature
    method.__name__ = method.__qualname__ = row["py_name"]
    method.__doc__ = doc + (" (the torch op grid_rbd::" + row["name"] + "; out=: tensors of the outputs' shapes to "
                            "write, not differentiable)")
    return method


def _install_methods():
    """every row of the signature table is a TorchRobotHandle method under its name and aliases: nothing per method"""
    for row in _signatures.ROWS:
        fn = _torch_method(row)
        for name in (row["py_name"], *row["aliases"]):
            setattr(TorchRobotHandle, name, fn)


_install_methods()
