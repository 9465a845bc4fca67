"""The CUDA side of a handle: device selection (device="cuda" | "auto" | "cpu"), the runner that sends numpy
arrays through the generated host round trip and device arrays (torch, or anything with
__cuda_array_interface__) straight to the grid_cuda_<algo> kernels, and page-locked output buffers."""

import json
import math
import threading

import numpy as np

from . import _core
from . import _signatures
from ._errors import BuildError, CudaError, GridArgumentError

__all__ = ["probe", "nvcc_status", "resolve_device", "CudaRunner", "available"]

_lock = threading.Lock()
_probe = None
_nvcc = None


def probe():
    """What the NVIDIA driver reports, asked once per process: {'ok', 'reason', 'devices': [(name, 'M.m')],
    'driver'} (libcuda.so.1 through dlopen: no CUDA headers or toolkit needed)."""
    global _probe
    with _lock:
        if _probe is None:
            _probe = _core.cuda_probe()
        return _probe


def nvcc_status():
    """(True, nvcc identity) when nvcc and its host C++ compiler are found (the build driver's own lookup:
    $GRID_RBD_NVCC, PATH, /usr/local/cuda/bin), else (False, the reason)."""
    global _nvcc
    with _lock:
        if _nvcc is None:
            try:
                ident = json.loads(_core.build_identity_json(1, "90"))
                _nvcc = (True, ident.get("compiler_version", ""))
            except BuildError as e:
                _nvcc = (False, str(e))
        return _nvcc


def available():
    """(True, '') when device="cuda" can be used here, else (False, what is missing)"""
    p = probe()
    if not p["ok"]:
        return False, p["reason"]
    ok, why = nvcc_status()
    return (True, "") if ok else (False, why)


def _arch_of(cc):
    """'9.0' -> '90'"""
    major, _, minor = cc.partition(".")
    return f"{int(major)}{int(minor or 0)}"


def resolve_device(device, codegen, cuda_arch=None, build_only=False):
    """(device, reason, cuda_arch) for a requested device.

    device="cpu": the CPU. device="cuda": CUDA, or CudaError (no GPU) / BuildError (no nvcc) saying what is
    missing; build_only=True (precompile) needs nvcc and an arch only, no GPU. device="auto": CUDA when a GPU
    and nvcc are both present (and codegen=True), else the CPU, with the reason."""
    if device == "cpu":
        return "cpu", "device='cpu' was requested", None
    if not codegen:
        if device == "cuda":
            raise ValueError("device='cuda' needs codegen=True: the float64 reference (codegen=False) runs on the CPU")
        return "cpu", "auto: codegen=False (the float64 reference runs on the CPU)", None
    if build_only and device == "cuda" and cuda_arch is not None:
        # a build for a named architecture needs nvcc only (no GPU, no driver)
        ok, why = nvcc_status()
        if not ok:
            raise BuildError(f"device='cuda' needs nvcc to compile the robot's CUDA library: {why}")
        return "cuda", "device='cuda' was requested", cuda_arch
    p = probe()
    if not p["ok"] and not (build_only and device == "cuda"):
        if device == "cuda":
            raise CudaError(f"device='cuda' needs an NVIDIA GPU, and none is usable: {p['reason']}")
        return "cpu", f"auto: no GPU ({p['reason']})", None
    ok, why = nvcc_status()
    if not ok:
        if device == "cuda":
            raise BuildError(f"device='cuda' needs nvcc to compile the robot's CUDA library: {why}")
        return "cpu", f"auto: a GPU is present but nvcc is not ({why})", None
    arch = cuda_arch
    if arch is None and p["ok"] and p["devices"]:
        arch = _arch_of(p["devices"][0][1])
    gpu = f"{p['devices'][0][0]} (compute capability {p['devices'][0][1]})" if p["ok"] and p["devices"] else "no GPU"
    reason = "device='cuda' was requested" if device == "cuda" else f"auto: found {gpu} and nvcc"
    return "cuda", reason, arch


# ---- per-call argument handling for device arrays (each check from the method's signature row) ----

def _is_device_array(x):
    """a CUDA tensor of torch, or any object exposing __cuda_array_interface__ (cupy, numba, jax ...)"""
    if type(x) is np.ndarray or x is None:
        return False
    if getattr(x, "is_cuda", False) is True:
        return True
    try:
        return hasattr(x, "__cuda_array_interface__")
    except Exception:
        return False


class _DeviceArray:
    """pointer, shape, element type and device of one device array argument"""

    __slots__ = ("ptr", "shape", "typestr", "device", "stream", "torch", "obj")

    def __init__(self, x, name):
        self.obj = x
        mod = type(x).__module__
        if mod.startswith("torch") and hasattr(x, "data_ptr"):
            import torch
            if not x.is_cuda:
                raise ValueError(f"{name} is a CPU torch tensor while q is on the GPU; pass all arrays on one device")
            self.typestr = {torch.float32: "<f4", torch.float64: "<f8"}.get(x.dtype, str(x.dtype))
            if not x.is_contiguous():
                raise ValueError(f"{name} must be C-contiguous (call .contiguous()); got strides {tuple(x.stride())}")
            self.ptr = x.data_ptr()
            self.shape = tuple(x.shape)
            self.device = x.device.index
            self.stream = None
            self.torch = True
            return
        try:
            cai = x.__cuda_array_interface__
        except AttributeError:
            raise ValueError(f"{name} is a {type(x).__name__}, not a device array, while q is on the GPU; pass all "
                             "arrays on one device") from None
        self.torch = False
        self.shape = tuple(int(s) for s in cai["shape"])
        self.typestr = cai["typestr"]
        itemsize = int(self.typestr[2:]) if self.typestr[2:].isdigit() else 0
        strides = cai.get("strides")
        if strides is not None:
            want, step = [], itemsize
            for s in reversed(self.shape):
                want.append(step)
                step *= s
            # strides of length-1 axes do not matter
            if any(s != w and n > 1 for s, w, n in zip(strides, reversed(want), self.shape)):
                raise ValueError(f"{name} must be C-contiguous; got strides {tuple(strides)} for shape {self.shape}")
        self.ptr = int(cai["data"][0])
        dev = getattr(x, "device", None)
        self.device = getattr(dev, "id", None) if dev is not None and not isinstance(dev, str) else None
        self.stream = cai.get("stream")


class CudaRunner:
    """Answers a CUDA handle's calls: numpy (host) arrays through the generated host round trip (the inner
    _core.Runner with the library's grid_<algo> entry points: validation, out= and the GIL release as on the
    CPU), device arrays straight to grid_cuda_<algo> on the caller's stream (no synchronisation). Calls are
    call(row, inputs, out, attrs) as on the Runner; the device path checks them against the row."""

    def __init__(self, runner, library, cuda_library, model):
        self._runner = runner
        self._library = library            # _core.Library: the build, and the provider the runner calls
        self._cuda = cuda_library          # _core.CudaLibrary: device-pointer calls, pinned memory, timing
        self._model = model
        self._dtype = np.dtype(runner.dtype)
        self._typestr = self._dtype.str
        sizes = _signatures.sizes_of(model)
        self._rows = tuple(_signatures.concrete(r, sizes) for r in _signatures.ROWS)  # this model's shapes
        self.call = self._make_call()

    # the attributes RobotHandle reads from a runner
    @property
    def dtype(self):
        return self._runner.dtype

    @property
    def provider(self):
        return self._runner.provider

    @property
    def model(self):
        return self._runner.model

    @property
    def num_threads(self):
        return self._runner.num_threads

    @num_threads.setter
    def num_threads(self, n):
        self._runner.num_threads = n

    @property
    def algorithm_sources(self):
        return self._runner.algorithm_sources

    @property
    def converts(self):
        """True when calls are converted into the handle's output convention (on the device)"""
        return self._runner.converts

    @property
    def cuda_library(self):
        return self._cuda

    @property
    def host_runner(self):
        """the _core.Runner of host arrays (the library's host round trips)"""
        return self._runner

    def _make_call(self):
        host_call = self._runner.call
        device_call = self._device_call
        cuda = self._cuda
        ndarray = np.ndarray

        def call(algo, inputs, out, attrs):
            q = inputs[0] if inputs else None
            if type(q) is ndarray or not _is_device_array(q):
                try:
                    return host_call(algo, inputs, out, attrs)
                except CudaError as e:
                    raise _with_detail(e, cuda) from None
            return device_call(algo, inputs, out, attrs)

        return call

    def _device_call(self, algo, inputs, out, attrs):
        if not 0 <= algo < len(self._rows):
            raise ValueError(f"unknown algorithm id {algo}")
        row = self._rows[algo]
        specs = row["inputs"]
        for k in range(len(specs), len(inputs)):
            if inputs[k] is not None:
                raise TypeError(f"{row['name']} takes no input at position {k} (its inputs: "
                                f"{', '.join(s[0] for s in specs)})")
        inputs = tuple(inputs[:len(specs)]) + (None,) * (len(specs) - len(inputs))
        for x, (name, _, optional, _, _) in zip(inputs, specs):
            if x is None and not optional:
                raise TypeError(f"{name} is required")
        if len(attrs) != len(row["attrs"]):
            raise TypeError(f"{row['name']} takes {len(row['attrs'])} attributes; {len(attrs)} given")
        for x, (_, lo, hi, range_error) in zip(attrs, row["attrs"]):
            if not lo <= x < hi:
                raise ValueError(_signatures.range_message(range_error, x, hi))
        first, shape0, _, desc0, dims0 = specs[0]
        dq = _DeviceArray(inputs[0], first)
        # one state without the batch axis: every input and the output have none
        one = len(dq.shape) == len(shape0)
        batch = self._check(dq, first, shape0, None, _signatures.describe(shape0, desc0, dims0), first, one)
        ptrs = [dq.ptr]
        for x, (name, shape, _, desc, dims) in zip(inputs[1:], specs[1:]):
            if x is None:
                ptrs.append(0)
                continue
            d = _DeviceArray(x, name)
            self._check(d, name, shape, batch, _signatures.describe(shape, desc, dims), first, one)
            if d.device is not None and dq.device is not None and d.device != dq.device:
                raise ValueError(f"{name} is on cuda:{d.device} and q on cuda:{dq.device}; pass all arrays on one device")
            ptrs.append(d.ptr)
        q = inputs[0]
        shapes = [(() if one else (batch,)) + o[1] for o in row["outputs"]]
        several = len(shapes) > 1

        def allocate(shape):
            if not dq.torch:
                return _allocate_like(q, shape, self._dtype)
            import torch
            return torch.empty(shape, dtype=q.dtype, device=q.device)

        if out is None:
            outs = [allocate(shape) for shape in shapes]
        elif several:
            if not isinstance(out, tuple) or len(out) != len(shapes):
                raise TypeError(f"out must be None or a tuple of {len(shapes)} device arrays for {row['name']}")
            outs = list(out)
        else:
            outs = [out]
        labels = [f"out[{k}] ({o[0]})" if several else "out" for k, o in enumerate(row["outputs"])]
        dos = [_DeviceArray(o, label) for o, label in zip(outs, labels)]
        for do, shape, label in zip(dos, shapes, labels):
            if do.typestr != self._typestr or do.shape != shape:
                raise ValueError(f"{label} must be a C-contiguous {self._dtype.name} device array of shape {shape}; "
                                 f"got {_type_name(do.typestr)} of shape {do.shape}")
        result = tuple(outs) if several else outs[0]
        if batch == 0:
            return result
        # the stream: torch's current stream for torch arrays, else the interface's (1 legacy, 2 per-thread)
        if dq.torch:
            import torch
            stream = torch.cuda.current_stream(q.device).cuda_stream
        else:
            stream = dq.stream or 0
        if dq.device is not None:
            self._cuda.use_device(dq.device)
        # an output sharing memory with an input (equal to it or overlapping it): computed into a temporary, then
        # copied (numpy's rule, as on the CPU: a kernel may write a state's output before it has read all its inputs)
        size = self._dtype.itemsize * batch
        targets = []
        for o, do, (_, oshape), shape in zip(outs, dos, row["outputs"], shapes):
            alias = any(p and _ranges_meet(p, size * math.prod(s[1]), do.ptr, size * math.prod(oshape))
                        for p, s in zip(ptrs, specs))
            if alias and not dq.torch and type(o).__module__.split(".")[0] != "cupy":
                raise ValueError("out shares memory with an input; pass a separate out= array (grid_rbd makes the "
                                 "temporary this needs only for torch and cupy arrays)")
            targets.append((torch.empty_like(o) if dq.torch else _allocate_like(q, shape, self._dtype)) if alias else o)
        self._cuda.call(algo, tuple(ptrs), tuple(_DeviceArray(t, "out").ptr for t in targets), batch,
                        tuple(int(x) for x in attrs), stream)
        for o, t in zip(outs, targets):
            if t is not o:
                if dq.torch:
                    o.copy_(t)
                else:
                    o[...] = t
        return result

    def _check(self, d, name, shape, batch, what, first, one=False):
        want = ", ".join(str(n) for n in shape)
        if d.typestr != self._typestr:
            raise ValueError(f"{name} must be {self._dtype.name} (the handle dtype) on the device; got "
                             f"{_type_name(d.typestr)} (device arrays are not converted)")
        if one:
            if d.shape != shape:
                raise ValueError(f"{name} must have shape {shape} (one state: {what}, as {first} has no batch axis); "
                                 f"got {d.shape}")
            return 1
        if len(d.shape) != len(shape) + 1 or d.shape[1:] != shape:
            raise ValueError(f"{name} must have shape (B, {want}) (B states x {what}); got {d.shape}")
        if batch is not None and d.shape[0] != batch:
            raise ValueError(f"{name} must have shape ({batch}, {want}) to match the batch of {first} ({batch} states "
                             f"on axis 0); got {d.shape}")
        return d.shape[0]

    def pinned_empty(self, shape):
        """a page-locked numpy array of the handle dtype (uninitialised)"""
        if isinstance(shape, (int, np.integer)):
            shape = (int(shape),)
        shape = tuple(int(s) for s in shape)
        if any(s < 0 for s in shape):
            raise ValueError(f"shape must not have negative sizes; got {shape}")
        count = math.prod(shape)
        buf = self._cuda.pinned(count * self._dtype.itemsize)
        return np.frombuffer(buf, dtype=self._dtype, count=count).reshape(shape)


def _ranges_meet(a, na, b, nb):
    """do the device byte ranges [a, a + na) and [b, b + nb) meet?"""
    return na > 0 and nb > 0 and a < b + nb and b < a + na


def _type_name(typestr):
    return {"<f4": "float32", "<f8": "float64"}.get(typestr, typestr)


def _allocate_like(x, shape, dtype):
    """a device array of shape on the framework of x (cupy), for out=None"""
    mod = type(x).__module__.split(".")[0]
    if mod == "cupy":
        import cupy
        return cupy.empty(shape, dtype=dtype)
    raise GridArgumentError(f"pass out= (a C-contiguous {dtype.name} device array of shape {shape}): grid_rbd "
                            f"allocates outputs only for torch and cupy inputs, not {type(x).__name__}")


def _with_detail(e, cuda):
    """the CudaError of a failed host round trip, with the library's message for this thread"""
    try:
        detail = cuda.last_error()
    except Exception:
        detail = ""
    new = CudaError(f"{e}: {detail}" if detail else str(e))
    for attr in ("code", "line", "column", "filename", "detail"):
        setattr(new, attr, getattr(e, attr, None))
    return new
