"""The JAX front end: every row of the signature table as an XLA FFI call (the C handlers of _core, one target per
row and dtype), jit- and vmap-able, on the same compiled library as the numpy handle."""

import numpy as np

import jax
import jax.numpy as jnp

from . import _core, _signatures
from . import _jax_autodiff as _autodiff
from ._errors import DifferentiationError
from .handle import REFERENCE_FRAMES, FrameworkHandle, not_built_error

__all__ = ["register_robot", "JaxRobotHandle", "REFERENCE_FRAMES", "DifferentiationError", "to_host"]

if not _core.XLA_FFI:
    raise ImportError("grid_rbd was built without jaxlib's XLA FFI headers: install jax, then reinstall grid_rbd "
                      "(pip install --no-build-isolation -e .) so its extension includes the JAX handlers")

_DTYPES = {"float32": "f32", "float64": "f64"}


def _target(row_name, dtype):
    """the FFI target of one row and dtype"""
    return f"grid_rbd.{row_name}.{_DTYPES[dtype]}"


def _register_targets():
    """one XLA FFI target per (row, dtype), with a handler for the CPU and one for CUDA: XLA picks the one of the
    platform a computation runs on"""
    for platform, xla_platform in (("cpu", "cpu"), ("cuda", "CUDA")):
        for name, capsule in _core.xla_handlers(platform):
            for dtype in _DTYPES:
                jax.ffi.register_ffi_target(_target(name, dtype), capsule, platform=xla_platform, api_version=1)


_register_targets()

# the most bytes of workspace a CUDA call asks XLA for (its kernels run the batch in slices that fit)
_CUDA_WORKSPACE_MAX = 64 << 20


def to_host(tree):
    """The arrays of a pytree on an accelerator copied to host memory through XLA's pinned host memory space (a
    device_put to memory_kind="pinned_host" of the array's own device: one DMA into page-locked memory, no pageable
    staging); asynchronous like any device_put, np.asarray of a result then costs no copy from the device. Arrays
    already on the CPU and leaves that are not jax arrays are returned as they are."""
    def one(x):
        if not isinstance(x, jax.Array):
            return x
        dev = next(iter(x.devices()))
        if dev.platform == "cpu":
            return x
        return jax.device_put(x, jax.sharding.SingleDeviceSharding(dev, memory_kind="pinned_host"))
    return jax.tree_util.tree_map(one, tree)


def register_robot(name, urdf_path=None, urdf_string=None, **options):
    """grid_rbd.register_robot(..., backend="jax"): a JaxRobotHandle on the same compiled library as the numpy
    backend (a cache hit when that one was built). Takes register_robot's arguments; with device="cuda" (or "auto"
    on a machine with a GPU) JAX arrays on the GPU run on the CUDA library's kernels on XLA's stream."""
    from .registry import register_robot as _register
    options["backend"] = "jax"
    return _register(name, urdf_path=urdf_path, urdf_string=urdf_string, **options)


class JaxRobotHandle(FrameworkHandle):
    """Batched rigid-body dynamics of one robot on JAX arrays: every method of the numpy RobotHandle (same names,
    arguments and shapes; out= takes buffers to write, donated under jit), each an XLA FFI call that jax.jit
    compiles and jax.vmap maps (any leading dimensions, flattened into the batch; an operand vmap leaves unbatched
    is read again, never copied), on the CPU or, for a CUDA robot's arrays on the GPU, on its CUDA kernels. Inputs
    must have the handle's dtype (float64 needs jax_enable_x64); a single state (no batch axis) gives a result
    without one."""

    _repr_prefix = "Jax"

    def __init__(self, handle):
        super().__init__(handle)
        self._dtype = np.dtype(handle.dtype)
        runner = handle._runner
        if handle.device == "cuda":  # CPU arrays through the host round trips, GPU arrays on the device dispatch
            _core.xla_register(self._key, runner.host_runner, runner.cuda_library)
        else:
            _core.xla_register(self._key, runner)
        # per-state workspace bytes of each row of a CUDA library (XLA allocates it for the CUDA handler)
        self._cuda_work = {m["name"]: m["work_bytes"] for m in handle._library.methods} \
            if handle.device == "cuda" and handle._library is not None else {}

    _xp = jnp  # the array namespace of fan_out (targets chosen per call)

    def _table_like(self, table, x):
        """a call's targets table (handle.fan_out) as a JAX array of the handle's dtype"""
        return jnp.asarray(table, dtype=self._dtype)

    def call(self, row, inputs, attrs, out=None):
        """run one row: inputs (arrays or None) in the row's order, attribute values in its order; out: the outputs'
        buffers to write in place of fresh ones (donate them to jit: XLA:CPU then allocates nothing)"""
        if row["id"] in self._missing:
            raise not_built_error(row["py_name"])
        if self._dtype == np.float64 and not jax.config.jax_enable_x64:
            raise ValueError("a float64 robot needs float64 JAX arrays: enable them with "
                             "jax.config.update('jax_enable_x64', True) (grid_rbd does not flip it for you)")
        c = self._rows[row["id"]]
        inputs = [x if x is None or isinstance(x, jax.Array) else jnp.asarray(x) for x in inputs]
        lead = _signatures.leading_dims(c, row["py_name"], inputs, self._dtype, lambda d: np.dtype(d).name)
        present, args = 0, []
        for k, ((_name, shape, *_), x) in enumerate(zip(c["inputs"], inputs)):
            if x is not None:
                args.append(x.reshape((-1,) + shape))
                present |= 1 << k
        for (name, lo, hi, fmt), v in zip(c["attrs"], attrs):
            if not lo <= v < hi:
                raise ValueError(_signatures.range_message(fmt, v, hi))
        if out is not None:
            outs = out if isinstance(out, tuple) else (out,)
            want = tuple(lead + shape for _, shape in c["outputs"])
            if len(outs) != len(want) or any(tuple(o.shape) != w or o.dtype != self._dtype
                                             for o, w in zip(outs, want)):
                raise ValueError(f"{row['py_name']}: out must be {' and '.join(map(str, want))} {self._dtype} arrays "
                                 f"(got {[(tuple(o.shape), str(o.dtype)) for o in outs]})")
            flat = [o.reshape((-1,) + shape) for o, (_, shape) in zip(outs, c["outputs"])]
            res = self._flat_call(row, args, present, attrs, aliased=flat)
        else:
            res = _autodiff.call(self, row, args, present, attrs)
        res = [y.reshape(lead + shape) for y, (_, shape) in zip(res, c["outputs"])]
        return res[0] if len(res) == 1 else tuple(res)

    def _flat_call(self, row, args, present, attrs, aliased=()):
        """the FFI call of a row on flat operands (B, per-state shape) of its present inputs -> list of outputs;
        aliased: buffers of the outputs' shapes the results are written into (input_output_aliases)"""
        batch = args[0].shape[0]
        outs = [jax.ShapeDtypeStruct((batch,) + shape, self._dtype) for _, shape in self._rows[row["id"]]["outputs"]]
        kw = {f"a{k}": np.int32(v) for k, v in enumerate(attrs)}
        if aliased:
            kw["aliased"] = np.int32(len(aliased))
        target = _target(row["name"], str(self._dtype))
        aliases = {len(args) + k: k for k in range(len(aliased))}
        kw.update(robot=self._key, present=np.int32(present))

        def on(results):
            return jax.ffi.ffi_call(target, results, vmap_method="expand_dims", input_output_aliases=aliases)(
                *args, *aliased, **kw)

        wb = self._cuda_work.get(row["name"], 0)
        if not wb:
            return list(on(outs))
        # a CUDA robot's row with workspace: on the GPU a workspace result (bytes XLA allocates, dropped after),
        # whole warps of states at a time up to _CUDA_WORKSPACE_MAX bytes; on the CPU none
        states = min(-(-batch // 32) * 32, max(32, _CUDA_WORKSPACE_MAX // wb // 32 * 32))
        ws = jax.ShapeDtypeStruct((states * wb,), np.uint8)
        return list(jax.lax.platform_dependent(cpu=lambda: tuple(on(outs)), cuda=lambda: tuple(on(outs + [ws]))[:-1]))


JaxRobotHandle.install_methods(lambda row: " (an XLA FFI call; out=: arrays of the outputs' shapes whose "
                               "buffers the results take, for jit with donate_argnums: no output allocation; not "
                               "differentiable)")
