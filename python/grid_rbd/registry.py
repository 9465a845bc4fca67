"""register_robot / get_robot / precompile: option checking, URDF loading, provider selection (the generated
robot.so through the cache, or the float64 reference) and the name -> handle registry."""

import json
import math
import errno
import numbers
import os
import stat
import threading

import numpy as np

from . import _core
from . import _signatures
from . import cuda as _cuda_mod
from ._errors import GridIOError, NotAvailableError, RobotNotRegisteredError, UnsupportedURDFError, URDFError
from .handle import RobotHandle

__all__ = ["register_robot", "get_robot", "precompile"]

_DEVICES = ("auto", "cpu", "cuda")
# codegen_schedule -> grid_schedule (include/grid/emit.h)
_SCHEDULES = {"auto": _core.SCHEDULE_AUTO, "unrolled": _core.SCHEDULE_UNROLLED, "rolled": _core.SCHEDULE_ROLLED}
_BACKENDS = ("numpy", "jax", "torch")
# output_convention -> grid_convention_kind (include/grid/convention.h): the basis of every input and output
_CONVENTIONS = {"pinocchio": _core.CONVENTION_PINOCCHIO, "mujoco": _core.CONVENTION_MUJOCO}

# options the spec documents for later increments: default value -> accepted silently;
# anything else raises NotAvailableError (never ignored)
_LATER_OPTIONS = {
    "contact_frames": None,
    "enable_tool": False,
    "allow_fp64": False,
    "runtime_inertia": False,
    "runtime_transform": False,
    "runtime_joint_dynamics": False,
    "multi_target_batch": None,
    "integrator_type": None,
}
# options of the compiled path that change nothing here; accepted, checked and recorded. enable_mujoco_kernels:
# output_convention="mujoco" is a basis change at the runtime boundary around the one set of kernels (no MuJoCo
# twins exist to enable); False asks for no MuJoCo kernels, which contradicts output_convention="mujoco".
_BUILD_OPTIONS = {"enable_mujoco_kernels": True}

# the options that change the generated source: exactly these go into the canonical options JSON
# (and so into the stage-1 cache key and the model hash baked into robot.so)
_GENERATION_OPTIONS = ("floating_base", "ee_joint_names", "gravity", "ignore_mimic", "dtype", "codegen_schedule")
# (and the method set, algorithm_list, as the JSON's "algorithms")

_registry = {}
_registry_lock = threading.Lock()


def register_robot(name, urdf_path=None, urdf_string=None, floating_base=False, ee_joint_names=None,
                   max_batch_size=256, dtype="float32", device="auto", backend="numpy", gravity=-9.81,
                   ignore_mimic=False, codegen=True, cache_dir=None, force_rebuild=False, num_threads=None,
                   verbose=True, cuda_arch=None, codegen_schedule="auto", output_convention="pinocchio",
                   algorithm_list=None, **reserved):
    """Parse a URDF, prepare its batched algorithms and return a RobotHandle (also kept under `name`).

    Exactly one of urdf_path / urdf_string. floating_base adds a free-flyer "root_joint"
    (q = [x y z qx qy qz qw, joints], v = [v_lin, omega, joints], both local). ee_joint_names picks
    end effectors by joint name (default: every leaf body). dtype is "float32" or "float64".
    gravity is the signed acceleration along world z. <mimic> joints are couplings by default
    (q_m = multiplier * q_leader + offset, Pinocchio's mimic=True layout: q and v hold the independent
    coordinates only, handle.mimic_joints lists the coupled ones); ignore_mimic=True treats them as independent
    joints instead (Pinocchio's default).

    codegen=True (the default) generates C source specialised to this robot, compiles it once into
    robot.so in the cache (cache_dir=, else $GRID_RBD_CACHE_DIR, $XDG_CACHE_HOME/grid-rbd or
    ~/.cache/grid-rbd) and answers every call from it; later registrations of the same robot and options
    load it in milliseconds. force_rebuild=True regenerates and recompiles. codegen=False uses the float64
    C reference (the oracle the generated code is tested against). num_threads: threads one batched call
    may use (default os.cpu_count(); settable later as handle.num_threads). verbose: build progress on
    stderr. codegen_schedule: how the generated code is laid out, "unrolled" (straight-line code, model
    constants folded in), "rolled" (loops over the tree reading model tables; code size independent of the
    robot) or "auto" (the default: unrolled unless an algorithm's unrolled code would be too large); it is part
    of the cache key. A build stops on Ctrl-C (KeyboardInterrupt) and its compilers never outlive the process.

    device="auto" (the default) runs on CUDA when an NVIDIA GPU and nvcc are both present, else on the CPU
    (handle.device and the repr say which, and why); device="cuda" insists (CudaError without a GPU,
    BuildError without nvcc); device="cpu" never touches CUDA. cuda_arch ("sm_90", "90", "9.0") overrides
    the GPU's own. On CUDA, numpy arrays go through a host round trip on the library's stream (device
    buffers sized from max_batch_size, regrown for larger batches) and torch / __cuda_array_interface__
    arrays straight to the kernels on the caller's stream. backend="jax" returns a grid_rbd.jax.JaxRobotHandle on
    the same library (XLA FFI calls, on the GPU on XLA's stream; analytic derivatives: docs/frameworks.md); "torch" a
    grid_rbd.torch.TorchRobotHandle (torch.library ops, analytic derivatives through autograd; on CUDA, CUDA tensors
    straight to the kernels on torch's current stream).

    output_convention: the coordinates of every input and output. "pinocchio" (the default): q = [x y z qx qy qz
    qw, joints], v = [v_lin local, omega local, joints]. "mujoco": q = [x y z qw qx qy qz, joints], v = [v_lin world,
    omega local, joints], as MuJoCo's free joint (torques, M, M^-1, accelerations and Jacobian columns in that basis);
    a per-state basis change around the same compiled library (the cache entry is shared, nothing is rebuilt).
    enable_mujoco_kernels (True/False) is accepted: there are no separate MuJoCo kernels, so it changes nothing;
    False together with output_convention="mujoco" is a ValueError.

    algorithm_list: None (the default: every method but the second-order ones, idsva_so, fdsva_so and
    end_effector_pose_hessian, built only when named) or
    the methods to build, by any of their names
    (["inverse_dynamics", "fd_grad"]); the library holds only those (a gradient or VJP brings the functions it
    calls, not their methods), which cuts the build time, and is cached apart from other sets. A method left out
    raises NotAvailableError naming the fix. With codegen=False every method runs on the reference."""
    options = _check_options(name, urdf_path, urdf_string, floating_base, ee_joint_names, max_batch_size,
                             dtype, device, backend, gravity, ignore_mimic, codegen, cache_dir, force_rebuild,
                             num_threads, verbose, codegen_schedule,
                             dict(reserved, output_convention=output_convention, algorithm_list=algorithm_list))
    _resolve_device(options, cuda_arch)
    urdf_bytes, filename = _read_urdf(urdf_path, urdf_string)
    model = _load_model(urdf_bytes, filename, options)
    model.convention_blocks(_CONVENTIONS[options["output_convention"]])  # refused here, before any build
    library = _build_library(name, model, urdf_bytes, options, load=True) if options["codegen"] else None
    runner = _make_runner(model, options, library)
    handle = RobotHandle(name, model, runner, options, library, urdf=urdf_bytes)
    if options["backend"] == "jax":
        from .jax import JaxRobotHandle   # (imports jax)
        handle = JaxRobotHandle(handle)
    elif options["backend"] == "torch":
        from .torch import TorchRobotHandle   # (imports torch)
        handle = TorchRobotHandle(handle)
    with _registry_lock:
        _registry[name] = handle
    return handle


def precompile(name, urdf_path=None, urdf_string=None, floating_base=False, ee_joint_names=None,
               dtype="float32", gravity=-9.81, ignore_mimic=False, cache_dir=None, force_rebuild=False,
               verbose=True, cuda_arch=None, codegen_schedule="auto", **options):
    """Build the robot's library into the cache without loading it or creating a handle, e.g. ahead of
    time in a Docker image or CI step. Takes register_robot's arguments (those that do not change the
    build are checked and ignored) and returns the cache entry directory (<root>/store/<content_key>).
    A later register_robot with the same URDF and options is a cache hit."""
    options.pop("codegen", None)
    num_threads = options.pop("num_threads", None)  # checked (it does not change the build)
    opts = _check_options(name, urdf_path, urdf_string, floating_base, ee_joint_names,
                          options.pop("max_batch_size", 256), dtype, options.pop("device", "auto"),
                          options.pop("backend", "numpy"), gravity, ignore_mimic, True, cache_dir, force_rebuild,
                          num_threads, verbose, codegen_schedule, options)
    _resolve_device(opts, cuda_arch, build_only=True)
    urdf_bytes, filename = _read_urdf(urdf_path, urdf_string)
    model = _load_model(urdf_bytes, filename, opts)
    return _build_library(name, model, urdf_bytes, opts, load=False).entry_dir


def get_robot(name):
    """The handle registered under `name` (RobotNotRegisteredError, a KeyError, naming the registered robots
    otherwise)."""
    with _registry_lock:
        try:
            return _registry[name]
        except (KeyError, TypeError):
            known = ", ".join(repr(n) for n in sorted(_registry)) or "none"
            raise RobotNotRegisteredError(f"no robot registered as {name!r}; registered robots: {known} "
                                          "(register_robot(name=...) registers one)") from None


def _unregister(name, handle):
    """drop name from the registry when it still holds this handle (RobotHandle.close)"""
    with _registry_lock:
        if _registry.get(name) is handle:
            del _registry[name]


def list_registered():
    """The names register_robot registered in this process, sorted."""
    with _registry_lock:
        return sorted(_registry)


def _check_options(name, urdf_path, urdf_string, floating_base, ee_joint_names, max_batch_size, dtype,
                   device, backend, gravity, ignore_mimic, codegen, cache_dir, force_rebuild, num_threads, verbose,
                   codegen_schedule, reserved):
    """Validate every register_robot argument; return the canonical options dict."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a non-empty str; got {name!r}")
    floating_base, ignore_mimic, codegen, force_rebuild, verbose = (
        check_bool(k, v) for k, v in (("floating_base", floating_base), ("ignore_mimic", ignore_mimic),
                                      ("codegen", codegen), ("force_rebuild", force_rebuild), ("verbose", verbose)))
    if (urdf_path is None) == (urdf_string is None):
        raise ValueError("pass exactly one of urdf_path= or urdf_string=")
    if urdf_path is not None:
        urdf_path = _fs_path("urdf_path", urdf_path)

    if not isinstance(codegen_schedule, str) or codegen_schedule not in _SCHEDULES:
        raise ValueError(f"codegen_schedule must be one of {', '.join(map(repr, _SCHEDULES))}; "
                         f"got {codegen_schedule!r}")
    if device not in _DEVICES:
        raise ValueError(f"device must be one of {', '.join(map(repr, _DEVICES))}; got {device!r}")
    if backend not in _BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(map(repr, _BACKENDS))}; got {backend!r}")
    reserved = dict(reserved)
    output_convention = reserved.pop("output_convention", "pinocchio")
    algorithm_list = _check_algorithm_list(reserved.pop("algorithm_list", None))
    if not isinstance(output_convention, str) or output_convention not in _CONVENTIONS:
        raise ValueError(f"output_convention must be one of {', '.join(map(repr, _CONVENTIONS))}; "
                         f"got {output_convention!r}")
    if output_convention == "mujoco" and algorithm_list is not None:
        # a derivative's chain rule through MuJoCo's basis runs its aux rows (tau or qdd, M or Minv): build them too
        ids = {_signatures.ID[n] for n in algorithm_list}
        ids |= {a for i in list(ids) for a in _signatures.ROWS[i]["mujoco_aux"]}
        algorithm_list = [r["name"] for r in _signatures.ROWS if r["id"] in ids]
    mujoco_kernels = check_bool("enable_mujoco_kernels", reserved.get("enable_mujoco_kernels", True))
    if output_convention == "mujoco" and not mujoco_kernels:
        raise ValueError("enable_mujoco_kernels=False contradicts output_convention='mujoco' (the two are mutually "
                         "exclusive); drop enable_mujoco_kernels: the MuJoCo convention needs no separate kernels")

    try:
        np_dtype = np.dtype(dtype)
    except TypeError:
        np_dtype = None
    if np_dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise ValueError(f"dtype must be 'float32' or 'float64'; got {dtype!r}")

    if not isinstance(max_batch_size, numbers.Integral) or isinstance(max_batch_size, bool) or max_batch_size < 1:
        raise ValueError(f"max_batch_size must be a positive int; got {max_batch_size!r}")
    if not isinstance(gravity, numbers.Real) or isinstance(gravity, (bool, np.bool_)) or not math.isfinite(gravity) \
            or abs(gravity) > _core.GRAVITY_MAX:
        raise ValueError(f"gravity must be a finite number of at most {_core.GRAVITY_MAX:g} m/s^2 in magnitude (signed "
                         f"acceleration along world z; larger values overflow the dynamics); got {gravity!r}")

    if ee_joint_names is not None:
        if isinstance(ee_joint_names, str):
            ee_joint_names = [ee_joint_names]
        ee_joint_names = list(ee_joint_names)
        if not ee_joint_names or not all(isinstance(n, str) for n in ee_joint_names):
            raise ValueError(f"ee_joint_names must be None or a non-empty list of joint names; got {ee_joint_names!r}")

    if num_threads is not None:
        num_threads = check_num_threads(num_threads)
    if cache_dir is not None:
        cache_dir = _fs_path("cache_dir", cache_dir)

    extra = {}
    for key, value in reserved.items():
        if key in _BUILD_OPTIONS:
            extra[key] = check_bool(key, value)
        elif key in _LATER_OPTIONS:
            if value != _LATER_OPTIONS[key]:
                raise NotAvailableError(f"register_robot option {key}={value!r} comes in a later version "
                                        "of grid_rbd")
        else:
            raise TypeError(f"register_robot() got an unexpected keyword argument {key!r}")

    options = {
        "name": name,
        "urdf_path": urdf_path,
        "floating_base": bool(floating_base),
        "ee_joint_names": ee_joint_names,
        "max_batch_size": int(max_batch_size),
        "dtype": np_dtype.name,
        "device": device,
        "backend": backend,
        "gravity": float(gravity),
        "ignore_mimic": bool(ignore_mimic),
        "codegen": bool(codegen),
        "codegen_schedule": codegen_schedule,
        "cache_dir": cache_dir,
        "force_rebuild": bool(force_rebuild),
        "num_threads": num_threads,
        "verbose": bool(verbose),
        "output_convention": output_convention,
        "algorithm_list": algorithm_list,
    }
    options.update(extra)
    return options


def _check_algorithm_list(names):
    """None, or the ABI names (table order, each once) of the methods named by any of their names"""
    if names is None:
        return None
    if isinstance(names, str) or not all(isinstance(n, str) for n in names):
        raise TypeError(f"algorithm_list must be None or a list of method names; got {names!r}")
    ids = set()
    for n in names:
        try:
            ids.add(_signatures.row(n)["id"])
        except KeyError:
            known = ", ".join(r["py_name"] for r in _signatures.ROWS)
            raise ValueError(f"algorithm_list: no method {n!r}; the methods are {known} (or their aliases)") from None
    if not ids:
        raise ValueError("algorithm_list must name at least one method (None builds every method)")
    return [r["name"] for r in _signatures.ROWS if r["id"] in ids]


def check_bool(option, value):
    """a boolean option as a bool: True or False (numpy's too); anything else ("False", 0, None) is a ValueError naming
    the option, never read as truthy"""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{option} must be True or False; got {value!r}")
    return bool(value)


def check_num_threads(n):
    """an int number of threads in 1..MAX_THREADS (TypeError / ValueError otherwise); a call runs on at most as many
    threads as the process has CPUs whatever the setting"""
    bound = _core.MAX_THREADS
    if not isinstance(n, numbers.Integral) or isinstance(n, (bool, np.bool_)):
        raise TypeError(f"num_threads must be an int in 1..{bound}; got {n!r}")
    if not 1 <= n <= bound:
        raise ValueError(f"num_threads must be an int in 1..{bound} (a call uses at most the CPUs the process may run "
                         f"on); got {n!r}")
    return int(n)


def _fs_path(what, path):
    """str of a path given as str, bytes or os.PathLike (undecodable bytes kept through os.fsdecode)"""
    if not isinstance(path, (str, bytes, os.PathLike)):
        raise TypeError(f"{what} must be a path (str, bytes or os.PathLike); got {path!r}")
    path = os.fsdecode(os.fspath(path))
    if not path:
        raise ValueError(f"{what} must not be empty")
    return path


# register_robot's options a pickled handle is registered again with (the URDF text is pickled beside them)
_PICKLED_OPTIONS = ("floating_base", "ee_joint_names", "max_batch_size", "dtype", "device", "backend", "gravity",
                    "ignore_mimic", "codegen", "cache_dir", "codegen_schedule", "output_convention",
                    "algorithm_list") + tuple(_BUILD_OPTIONS)


def _pickle_args(handle, urdf):
    """(function, args) that register the handle's robot again in another process: a cache hit there when that
    process sees the same cache"""
    opts = {k: handle._options[k] for k in _PICKLED_OPTIONS if k in handle._options}
    if opts.get("device") == "cuda":
        opts["cuda_arch"] = handle._options.get("cuda_arch")
    return _unpickle_handle, (handle.name, urdf, opts, handle.num_threads)


def _unpickle_handle(name, urdf, options, num_threads):
    return register_robot(name, urdf_string=urdf, verbose=False, num_threads=num_threads, **options)


def options_json(options):
    """The canonical JSON of exactly the options that change generation (docs/cache.md):
    json.dumps(sort_keys=True, separators=(",", ":")), the target and the algorithm set included."""
    gen = {key: options[key] for key in _GENERATION_OPTIONS}
    gen["target"] = "cuda" if options.get("device") == "cuda" else "c"
    gen["algorithms"] = list(options.get("algorithm_list") or _signatures.default_row_names())
    return json.dumps(gen, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def _read_urdf(urdf_path, urdf_string):
    """(bytes, filename for messages) from a path or an in-memory string"""
    if urdf_path is not None:
        path = _fs_path("urdf_path", urdf_path)
        return _read_urdf_file(path), path
    if isinstance(urdf_string, str):
        return urdf_string.encode("utf-8"), "<urdf_string>"
    if isinstance(urdf_string, (bytes, bytearray, memoryview)):
        return bytes(urdf_string), "<urdf_string>"
    raise TypeError(f"urdf_string must be str or bytes, not {type(urdf_string).__name__}")


def _file_kind(mode):
    for test, kind in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory")):
        if test(mode):
            return kind
    return "not a regular file"


def _read_urdf_file(path):
    """The bytes of a URDF file: a regular file of at most _core.URDF_MAX_BYTES (64 MiB). Opened without
    blocking (a FIFO with no writer returns at once) and checked with fstat on the open descriptor, so a FIFO,
    a device (/dev/zero) or an oversized file (sparse or not) is refused before anything is read; at most the
    cap + 1 bytes are read. GridIOError or URDFError (the size cap) naming the file."""
    cap = _core.URDF_MAX_BYTES
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise GridIOError(e.errno, f"cannot read URDF file: {e.strerror}", path) from e
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise GridIOError(errno.EINVAL, f"cannot read URDF file: it is {_file_kind(st.st_mode)}; a URDF must be "
                              "a regular file", path)
        too_big = f"{path}: the URDF is larger than the {cap}-byte limit"
        if st.st_size > cap:
            raise _limit_error(f"{too_big} ({st.st_size} bytes)", path)
        os.set_blocking(fd, True)
        chunks, n = [], 0
        while n <= cap:
            chunk = os.read(fd, min(1 << 20, cap + 1 - n))
            if not chunk:
                break
            chunks.append(chunk)
            n += len(chunk)
        if n > cap:
            raise _limit_error(too_big, path)
        return b"".join(chunks)
    except OSError as e:
        if isinstance(e, GridIOError):
            raise
        raise GridIOError(e.errno, f"cannot read URDF file: {e.strerror}", path) from e
    finally:
        os.close(fd)


def _limit_error(message, path):
    e = URDFError(message)
    e.code, e.filename, e.detail = _core.ERR_LIMIT, path, message
    return e


def _load_model(urdf_bytes, filename, options):
    """_core.Model for the options; a mimic refusal gets the ignore_mimic hint"""
    try:
        return _core.Model(urdf_bytes, filename, floating_base=options["floating_base"],
                           gravity=options["gravity"], ignore_mimic=options["ignore_mimic"],
                           ee_joint_names=options["ee_joint_names"])
    except UnsupportedURDFError as e:
        text = str(e)
        if "mimic" in text.lower() and "ignore_mimic" not in text:
            hint = UnsupportedURDFError(text + " (pass ignore_mimic=True to treat mimic joints as independent "
                                        "joints, as Pinocchio does)")
            for attr in ("code", "line", "column", "filename", "detail"):
                setattr(hint, attr, getattr(e, attr))
            raise hint from None
        raise


def _build_library(name, model, urdf_bytes, options, load):
    """_core.Library: generate (only on a cache miss), compile through the cache, load (BuildError,
    CacheError or LoadError otherwise, see _errors)"""
    dtype = _core.FLOAT32 if options["dtype"] == "float32" else _core.FLOAT64
    cuda = options.get("device") == "cuda"
    return _core.Library(model, urdf_bytes, options_json(options), name, dtype, cache_dir=options["cache_dir"],
                         force_rebuild=options["force_rebuild"], verbose=options["verbose"], load=load,
                         target=1 if cuda else 0, cuda_arch=options.get("cuda_arch") if cuda else None,
                         schedule=_SCHEDULES[options["codegen_schedule"]],
                         methods=tuple(_signatures.ID[n] for n in options.get("algorithm_list") or ()))


def _make_runner(model, options, library):
    """The Runner that answers calls: the generated library's entry points when there is one,
    else the float64 C reference for every algorithm."""
    dtype = _core.FLOAT32 if options["dtype"] == "float32" else _core.FLOAT64
    threads = options["num_threads"] or min(os.cpu_count() or 1, _core.MAX_THREADS)
    # the output convention: a basis change around the provider's calls (the library is the same for every one)
    conv = _CONVENTIONS[options.get("output_convention", "pinocchio")]
    if library is None:
        return _core.Runner(model, dtype, num_threads=threads, convention=conv)
    runner = _core.Runner(model, dtype, provider=library.provider, owner=library, num_threads=threads,
                          convention=conv)
    if options.get("device") != "cuda":
        return runner
    # CUDA: numpy arrays through the host round trip (the runner), device arrays to the kernels
    cuda_library = _core.CudaLibrary(library.path, model, conv)
    cuda_library.reserve(options["max_batch_size"])
    return _cuda_mod.CudaRunner(runner, library, cuda_library, model)


def _resolve_device(options, cuda_arch, build_only=False):
    """options["device"] becomes "cpu" or "cuda" (device_requested, device_reason and cuda_arch say why and
    for which GPU architecture); CudaError / BuildError when device="cuda" cannot be had"""
    if cuda_arch is not None and not isinstance(cuda_arch, str):
        raise TypeError(f"cuda_arch must be a str such as 'sm_90' or None; got {cuda_arch!r}")
    requested = options["device"]
    device, reason, arch = _cuda_mod.resolve_device(requested, options["codegen"], cuda_arch, build_only)
    options.update(device=device, device_requested=requested, device_reason=reason, cuda_arch=arch)
