"""The PyTorch front end: every row of the signature table as a torch.library op grid_rbd::<row> with a fake kernel
(torch.compile traces it), running the numpy handle's compiled library on the tensors' memory (no libtorch link),
differentiated through the analytic VJP and gradient rows (_torch_autograd)."""

import math

import numpy as np
import torch
import torch.autograd.forward_ad as _forward_ad

from . import _signatures
from ._core import tensor_call
from ._errors import DifferentiationError, NotAvailableError
from ._torch_autograd import (FRONTS, Differentiable, DifferentiableJvp, EagerDifferentiable, ForwardOnly,
                              ForwardOnlyJvp, QMap, SecondOrderVjp, _is_wrapped, q_is_tangent)
from .handle import REFERENCE_FRAMES, FrameworkHandle, missing_rows, not_built_error

__all__ = ["register_robot", "TorchRobotHandle", "GraphCallable", "REFERENCE_FRAMES", "DifferentiationError", "op",
           "pinned_host_like", "copy_to_host"]

_is_compiling = torch.compiler.is_compiling  # (the function itself: torch.compile folds calls of it while tracing)

_TORCH_DTYPES = {np.dtype(np.float32): torch.float32, np.dtype(np.float64): torch.float64}

def _arg(x):
    """what the numpy handle's runner takes for a tensor: a numpy view of a CPU tensor, a contiguous CUDA tensor"""
    if x is None:
        return None
    x = x.detach()
    return x.resolve_neg().numpy() if x.is_cpu else x.contiguous()


def _wrapped(x):
    """x is wrapped by torch.func, or may carry a forward-mode tangent (a dual level is open): the autograd Functions
    must see it"""
    return _forward_ad._current_level >= 0 or _is_wrapped(x)


def _tensors(res):
    """the runner's results as tensors (numpy arrays from the host path wrapped without a copy)"""
    if type(res) is tuple:
        return tuple(map(_tensors, res))
    return res if isinstance(res, torch.Tensor) else torch.from_numpy(res)


# ---- the ops: one per row, defined from the table ----

_LIB = torch.library.Library("grid_rbd", "DEF")
_OPS = {}  # row id -> torch.ops.grid_rbd.<row>.default


def _schema(row):
    """'rnea(str robot, Tensor q, Tensor qd, Tensor? qdd, Tensor? f_ext, int[] attrs) -> Tensor': the row's inputs
    (optional ones may be None), the robot's key and the attribute values"""
    ins = "".join(f"Tensor{'?' if a['optional'] else ''} {a['name']}, " for a in row["inputs"])
    n = len(row["outputs"])
    outs = "Tensor" if n == 1 else "(" + ", ".join(["Tensor"] * n) + ")"
    return f"{row['name']}(str robot, {ins}int[] attrs) -> {outs}"


def _define_ops():
    for row in _signatures.ROWS:
        rid = row["id"]
        _LIB.define(_schema(row))

        def kernel(robot, *args, _rid=rid):
            return FRONTS[robot].kernel(_rid, args[:-1], tuple(args[-1]))

        def fake(robot, *args, _rid=rid):
            return FRONTS[robot].fake(_rid, args[:-1])

        _LIB.impl(row["name"], kernel, "CPU")
        _LIB.impl(row["name"], kernel, "CUDA")
        torch.library.register_fake(f"grid_rbd::{row['name']}", fake, lib=_LIB)
        _OPS[rid] = getattr(torch.ops.grid_rbd, row["name"]).default


_define_ops()


def op(name):
    """the torch op of a method or row name ("inverse_dynamics", "rnea"): op(robot_key, *inputs, attrs)"""
    return _OPS[_signatures.row(name)["id"]]


def register_robot(name, urdf_path=None, urdf_string=None, **options):
    """grid_rbd.register_robot(..., backend="torch"): a TorchRobotHandle on the same compiled library as the numpy
    backend (a cache hit when that one was built). Takes register_robot's arguments; with device="cuda" (or "auto" on
    a machine with a GPU) CUDA tensors run on the CUDA library's kernels on torch's current stream."""
    from .registry import register_robot as _register
    options["backend"] = "torch"
    return _register(name, urdf_path=urdf_path, urdf_string=urdf_string, **options)


class TorchRobotHandle(FrameworkHandle):
    """Batched rigid-body dynamics of one robot on torch tensors: every method of the numpy RobotHandle (same names,
    arguments and shapes; out= takes tensors to write), each the op grid_rbd::<row> under torch.compile and a direct
    call of the compiled library in eager mode. Inputs are tensors of the handle's dtype, on the CPU or, for a CUDA
    robot, on a GPU; a single state (no batch axis) gives a result without one. The methods whose rows have VJP and
    gradient rows (grid_rbd._signatures.DIFFERENTIABLE names them and their inputs) are differentiable in both modes
    through those rows (torch.func and torch.vmap too); differentiating anything else raises DifferentiationError."""

    _repr_prefix = "Torch"

    def __init__(self, handle):
        super().__init__(handle)
        self._dtype = _TORCH_DTYPES[np.dtype(handle.dtype)]
        self._cuda = handle.device == "cuda"
        self._cuda_lib = handle.cuda_library
        self._devices = ("cpu", "cuda") if self._cuda else ("cpu",)
        # what _core.tensor_call takes plain CPU tensors of this handle to be (a CPU robot's eager path), and inside an
        # autograd.Function, where tensors asking for a gradient are read too
        self._plain = None if self._cuda else (torch.Tensor, self._dtype, torch.from_numpy, False)
        self._plain_in_function = None if self._cuda else (torch.Tensor, self._dtype, torch.from_numpy, True)
        # what the derivatives need (_torch_autograd): q's tangent map, None where it is the identity
        self.q_map = None if q_is_tangent(handle._model) else QMap(handle._model, handle.output_convention)
        # its transpose as the q_pullback row (one call, one launch on CUDA) where the handle has it: the Pinocchio
        # convention (MuJoCo's refuses it), a library built with it (the reference has every row)
        qp = _signatures.row("q_pullback")["id"]
        self._q_row = qp if self.q_map is not None and handle.output_convention == "pinocchio" and \
            qp not in missing_rows(handle) else None
        FRONTS[self._key] = self

    _xp = torch  # the array namespace of fan_out (targets chosen per call)

    def _table_like(self, table, x):
        """a call's targets table (handle.fan_out) as a tensor of the handle's dtype on x's device"""
        return torch.as_tensor(table, dtype=self._dtype, device=x.device)

    def capture(self, method, *example_inputs, **kwargs):
        """a GraphCallable of one method (a name or a bound method of this handle) on CUDA tensors of the example
        inputs' shapes (None for an absent optional input) and the keyword arguments given here (target=, ...). The
        call runs twice on a side stream first (warm-up outside the capture), then once under torch.cuda.graph."""
        fn = getattr(self, method) if isinstance(method, str) else method
        static_in = tuple(None if x is None else x.detach().clone() for x in example_inputs)
        if not all(x is None or x.is_cuda for x in static_in):
            raise ValueError("capture takes CUDA tensors (a CUDA graph replays device work)")
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(2):
                fn(*static_in, **kwargs)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_out = fn(*static_in, **kwargs)
        return GraphCallable(graph, static_in, static_out)

    # ---- the op's kernels ----
    def kernel(self, rid, inputs, attrs, out=None):
        """the kernel of row rid (CPU and CUDA): the compiled library on the tensors' memory -> fresh tensors (or
        out's). CPU tensors are read through numpy views (on a CUDA handle: its host round trip); CUDA tensors go
        to the CUDA library's kernels on torch's current stream."""
        if out is None and inputs[0].is_cuda:
            return self._device_run(rid, inputs, attrs)
        arrays = tuple([_arg(x) for x in inputs])
        if out is not None:
            self._np._call(rid, arrays, tuple(map(_arg, out)) if isinstance(out, tuple) else _arg(out), attrs)
            return out
        return _tensors(self._np._call(rid, arrays, None, attrs))

    def _device_run(self, rid, inputs, attrs):
        """row rid on CUDA tensors (no gradient taken): the shapes checked here against the row, fresh outputs from
        torch's allocator, the CUDA library's entry point on torch's current stream; what the numpy handle's device
        path does, without its generality (anything else goes there, for its checks and messages)"""
        c = self._rows[rid]
        q = inputs[0]
        one = q.dim() == len(c["inputs"][0][1])
        lead = () if one else (q.shape[0],)
        dev, dt = q.device, self._dtype
        ptrs, keep = [], []  # (keep: contiguous copies, alive until their kernels are launched)
        for (name, shape, *_), x in zip(c["inputs"], inputs):
            if x is None:
                ptrs.append(0)
                continue
            if type(x) is not torch.Tensor or x.dtype is not dt or x.device != dev or x.shape != lead + shape:
                return _tensors(self._np._call(rid, tuple(map(_arg, inputs)), None, attrs))
            if not x.is_contiguous():
                x = x.contiguous()
                keep.append(x)
            ptrs.append(x.data_ptr())
        outs = tuple(torch.empty(lead + shape, dtype=dt, device=dev) for _, shape in c["outputs"])
        lib = self._cuda_lib
        lib.use_device(dev.index)
        lib.call(rid, tuple(ptrs), tuple(o.data_ptr() for o in outs), 1 if one else lead[0], attrs,
                 torch.cuda.current_stream(dev).cuda_stream)
        return outs if len(outs) > 1 else outs[0]

    def fake(self, rid, inputs):
        """the fake kernel of row rid: empty outputs of the inputs' leading dimensions"""
        c = self._rows[rid]
        q = inputs[0]
        lead = tuple(q.shape[:q.ndim - len(c["inputs"][0][1])])
        outs = tuple(q.new_empty(lead + shape) for _, shape in c["outputs"])
        return outs[0] if len(outs) == 1 else outs

    def pull_q(self, q, ct):
        """q's cotangent (nq wide) of ct, a cotangent of the local tangent, inside a backward: the library's q_pullback
        row on plain tensors (no graph, no transform, no forward-mode level: nothing differentiates it), else QMap's
        torch operations (differentiable: torch.func.hessian and create_graph go through them)"""
        if self._q_row is not None and not torch.is_grad_enabled() and _forward_ad._current_level < 0 and \
                (_is_compiling() or not (_is_wrapped(ct) or _is_wrapped(q))):  # (torch.compile cannot trace _is_wrapped)
            return self.run(self._q_row, (q, ct.contiguous()), ())
        return self.q_map.pullback(q, ct)

    def run(self, rid, inputs, attrs):
        """row rid on tensors inside an autograd.Function (no graph recorded): the op while torch.compile traces,
        else the library on plain CPU tensors directly, else its kernel (the dispatcher's cost saved in eager mode)"""
        if _is_compiling():
            return _OPS[rid](self._key, *inputs, list(attrs))
        if self._plain_in_function is not None:
            res = tensor_call(self._np._runner, rid, tuple(inputs), tuple(attrs), self._plain_in_function)
            if res is not NotImplemented:
                return res
        return self.kernel(rid, inputs, attrs)

    # ---- one call of a method ----
    @staticmethod
    def _eager_method(rid, general):
        """FrameworkHandle._eager_method: plain CPU tensors of a CPU robot in eager mode, inputs positional and out=
        alone by keyword (no tangent can be present; _core.tensor_call checks each tensor, asks none for a gradient
        and declines a row the library lacks) straight to the library, in this one frame; general(self, *args,
        **kwargs) otherwise"""
        def method(self, *args, out=None, **kwargs):
            plain = self._plain
            if plain is not None and not kwargs and _forward_ad._current_level < 0 and \
                    not _is_compiling():
                res = tensor_call(self._np._runner, rid, args, (), plain, out)
                if res is not NotImplemented:
                    return res
            return general(self, *args, **kwargs) if out is None else general(self, *args, out=out, **kwargs)
        return method

    def _check(self, R, inputs):
        """the tensors of a call's inputs (DLPack arrays taken without a copy, other array-likes converted), checked:
        tensors of the handle's devices and dtype, the row's per-state shapes, one batch axis or none (as the numpy
        handle's)"""
        xs = tuple(x if x is None or isinstance(x, torch.Tensor) else
                   torch.from_dlpack(x) if hasattr(x, "__dlpack__") and not isinstance(x, np.ndarray) else
                   torch.as_tensor(x, dtype=self._dtype) for x in inputs)
        cuda = self._cuda
        for (name, *_), x in zip(self._rows[R["id"]]["inputs"], xs):
            if x is not None and not (x.is_cpu or cuda and x.is_cuda):
                hint = "" if self._cuda else " (register it with device='cuda' for CUDA tensors)"
                raise NotAvailableError(f"{R['py_name']}: {name} is on {x.device}; this robot takes "
                                        f"{' and '.join(self._devices).upper()} tensors{hint}")
        lead = _signatures.leading_dims(self._rows[R["id"]], R["py_name"], xs, self._dtype,
                                        lambda d: str(d).removeprefix("torch."))
        if len(lead) > 1:
            raise ValueError(f"{R['py_name']}: inputs take one batch axis (B, ...) or none; got leading dimensions "
                             f"{lead} (reshape them into one)")
        return xs

    def _block_views(self, R, q, block):
        """out= as one tensor for a row of several outputs (the numpy handle's rule): contiguous, of the handle's
        dtype, (B, W) or for one state (W,), W the outputs' widths summed, holding their blocks one after another;
        the outputs' views of it"""
        c = self._rows[R["id"]]
        q = torch.as_tensor(q) if not isinstance(q, torch.Tensor) else q
        lead = tuple(q.shape[:q.dim() - len(c["inputs"][0][1])])
        n = 1
        for d in lead:
            n *= d
        sizes = [n * math.prod(shape) for _, shape in c["outputs"]]
        want = lead + (sum(sizes) // max(n, 1),)
        if block.dtype != self._dtype or tuple(block.shape) != want or not block.is_contiguous():
            raise ValueError(f"{R['py_name']}: out must be a tuple of {len(sizes)} tensors, or one contiguous "
                             f"{str(self._dtype)[6:]} tensor of shape {want} holding their blocks one after another; "
                             f"got {str(block.dtype)[6:]} of shape {tuple(block.shape)}")
        flat, views, at = block.view(-1), [], 0
        for size, (_, shape) in zip(sizes, c["outputs"]):
            views.append(flat[at:at + size].view(lead + tuple(shape)))
            at += size
        return tuple(views)

    def call(self, R, inputs, attrs, out=None):
        """row R on inputs (in its order, None for an absent optional one) with attribute values attrs: through an
        autograd.Function when a gradient may flow, the row's own otherwise"""
        rid = R["id"]
        if rid in self._missing:
            raise not_built_error(R["py_name"])
        if isinstance(out, torch.Tensor) and len(R["outputs"]) > 1:
            out = self._block_views(R, inputs[0], out)
        if _forward_ad._current_level < 0 and not _is_compiling():
            # eager, no gradient or tangent, CPU tensors of the dtype: the library on their memory, nothing in between
            if self._plain is not None:
                res = tensor_call(self._np._runner, rid, inputs if type(inputs) is tuple else tuple(inputs),
                                  attrs if type(attrs) is tuple else tuple(attrs), self._plain, out)
                if res is not NotImplemented:
                    return res
            dt, cuda, arrays = self._dtype, self._cuda, []
            q = inputs[0]
            if out is None and cuda and type(q) is torch.Tensor and q.is_cuda and not any(
                    x is not None and (x.requires_grad and torch.is_grad_enabled() or _is_wrapped(x)) for x in inputs):
                return self._device_run(rid, inputs, attrs)
            for x in inputs if out is None else (*inputs, *(out if type(out) is tuple else (out,))):
                if x is None:
                    arrays.append(None)
                elif type(x) is torch.Tensor and x.dtype is dt and not x.requires_grad and \
                        (x.is_cpu or (cuda and x.is_cuda)) and not _is_wrapped(x) and not x.is_neg():
                    arrays.append(x.numpy() if x.is_cpu else x)
                else:
                    break
            else:
                if out is not None:
                    n = len(inputs)
                    self._np._call(rid, tuple(arrays[:n]), arrays[n] if len(arrays) == n + 1 else
                                   tuple(arrays[n:]), attrs)
                    return out
                return _tensors(self._np._call(rid, tuple(arrays), None, attrs))
        xs = self._check(R, inputs)
        attrs = tuple(attrs)
        # a gradient may flow, or torch.func wraps the tensors (vmap, grad; never while torch.compile traces): through
        # an autograd.Function, whose backward and vmap rules handle both
        compiling, enabled = _is_compiling(), torch.is_grad_enabled()
        wrapped = not compiling and any(x is not None and _wrapped(x) for x in xs)
        grad = wrapped or enabled and any(x is not None and x.requires_grad for x in xs)
        if out is not None:
            if grad:
                raise DifferentiationError(f"{R['py_name']}: out= is not differentiable; call it without out= to "
                                           "differentiate")
            if compiling:
                res = _OPS[rid](self._key, *xs, list(attrs))
                for o, r in zip(out if isinstance(out, tuple) else (out,), res if isinstance(res, tuple) else (res,)):
                    o.copy_(r)
                return out
            return self.kernel(rid, xs, attrs, out)
        if grad:
            if compiling:  # (the Functions without a forward-mode rule: torch.compile traces no custom jvp)
                fn = Differentiable if R["vjp"] >= 0 else ForwardOnly
            elif not wrapped and R["vjp"] >= 0:  # plain autograd: no torch.func transform, no tangent
                fn = EagerDifferentiable
            else:
                fn = DifferentiableJvp if R["vjp"] >= 0 else \
                    SecondOrderVjp if R["name"] in _signatures.SECOND_ORDER else ForwardOnlyJvp
            return fn.apply(self._key, rid, attrs, *xs)
        return self.run(rid, xs, attrs)


class GraphCallable:
    """One method call captured in a CUDA graph (TorchRobotHandle.capture): static_in are the tensors the graph
    reads, static_out the ones it writes (overwritten by the next replay: clone to keep a value). call(*inputs)
    copies inputs into static_in, replays and returns static_out; replay() replays on what static_in holds;
    replay_into(host) replays and copies static_out into host tensors (pinned_host_like) without waiting."""

    def __init__(self, graph, static_in, static_out):
        self.graph, self.static_in, self.static_out = graph, static_in, static_out

    def replay(self):
        self.graph.replay()
        return self.static_out

    def __call__(self, *inputs):
        for s, x in zip(self.static_in, inputs):
            if s is not None and x is not s:
                s.copy_(x)
        return self.replay()

    def replay_into(self, host):
        self.graph.replay()
        for h, o in zip(host if isinstance(host, tuple) else (host,),
                        self.static_out if isinstance(self.static_out, tuple) else (self.static_out,)):
            copy_to_host(h, o)
        return host


def pinned_host_like(x):
    """an uninitialised tensor of x's shape and dtype in page-locked host memory (allocate once, reuse)"""
    return torch.empty(x.shape, dtype=x.dtype, device="cpu", pin_memory=True)


def copy_to_host(host, x):
    """copy device tensor x into host (pinned_host_like) on torch's current stream, without waiting for it"""
    return host.copy_(x, non_blocking=True)


TorchRobotHandle.install_methods(lambda row: f" (the torch op grid_rbd::{row['name']}; out=: tensors of the outputs' "
                                 "shapes to write, not differentiable)")
