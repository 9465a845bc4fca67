"""RobotHandle: the batched algorithm methods of one registered robot (argument handling only; _core.Runner does the work,
checking every call against the method's row of the signature table)."""

import hashlib
import inspect
import numbers

import numpy as np

from . import _core
from ._signatures import ID as _ID
from ._errors import HandleClosedError, NotAvailableError

__all__ = ["RobotHandle", "REFERENCE_FRAMES"]

# Pinocchio's reference frames for Jacobians
REFERENCE_FRAMES = {
    "WORLD": _core.WORLD,
    "LOCAL": _core.LOCAL,
    "LOCAL_WORLD_ALIGNED": _core.LOCAL_WORLD_ALIGNED,
}

# the rows of the signature table each method calls: self._call(row, inputs in the row's order, out, attrs)
_RNEA, _NLE, _GRAVITY = _ID["rnea"], _ID["nle"], _ID["gravity"]
_CRBA, _MINV, _FD, _ABA = _ID["crba"], _ID["minv"], _ID["fd"], _ID["aba"]
_FK, _EE_POSE = _ID["fk"], _ID["ee_pose"]


class _Closed:
    """What a closed handle holds in place of its runner: every use raises HandleClosedError naming the handle."""

    __slots__ = ("_name",)

    def __init__(self, name):
        object.__setattr__(self, "_name", name)

    def _refuse(self, *args, **kwargs):
        raise HandleClosedError(f"RobotHandle {object.__getattribute__(self, '_name')!r} is closed: its runner and "
                                "library were released by close(); register the robot again to compute with it")

    def __getattr__(self, attr):
        self._refuse()

    def __setattr__(self, attr, value):
        self._refuse()

    call = _refuse


class RobotHandle:
    """Batched rigid-body dynamics of one robot. Every method takes arrays with the batch of B
    states on axis 0 (any array-like; copied only when not C-contiguous in the handle dtype) and an
    optional ``out`` (a C-contiguous array of the output shape and handle dtype, filled and returned; for a matrix
    output also a numpy array of its flat (B, width) block, returned as its view in the output's shape). An ``out``
    sharing memory with an input (equal to it or overlapping it) is computed into a temporary and then copied.

    Widths: q is (B, nq); qd, qdd and u are (B, nv) (the tangent width, also on a floating base);
    f_ext is (B, 6*nb), one body-local spatial force [f; tau] per body. Coordinates follow output_convention
    (Pinocchio's by default, or MuJoCo's: see the output_convention property)."""

    __slots__ = ("_name", "_model", "_runner", "_call", "_options", "_library", "_joint_names", "_mimic_joints",
                 "_frame_names",
                 "_ee_frames", "_frame_lookup", "_urdf", "__weakref__")

    def __init__(self, name, model, runner, options, library=None, urdf=None):
        self._name = name
        self._model = model
        self._runner = runner
        self._call = runner.call
        self._options = dict(options)
        self._library = library  # the _core.Library whose robot.so the runner calls (None: the reference)
        missing = missing_rows(self)
        if missing:
            # a library of some methods (register_robot(algorithm_list=...)): the others are refused, never answered by
            # the reference in their place (the Runner's fallback is for providers that lack a row)
            self._call = _subset_call(runner.call, missing)
        self._urdf = urdf        # the URDF bytes (register_robot), for pickling
        # the joints with coordinates of their own (coupled mimic joints have none), in q / v order
        self._joint_names = tuple(n for n, mm in zip(model.joint_names, model.joint_mimic) if mm is None)
        names = model.joint_names
        self._mimic_joints = tuple(
            {"name": names[i], "leader": names[mm[0]], "multiplier": mm[1], "offset": mm[2],
             "index_q": model.joint_idx_q[i], "index_v": model.joint_idx_v[i]}
            for i, mm in enumerate(model.joint_mimic) if mm is not None)
        self._frame_names = tuple(model.frame_names)
        self._ee_frames = tuple(model.ee_frames)
        # frame lookup: link names first, then the joint whose child link the frame is
        lookup = {}
        for i, joint in enumerate(model.frame_joints):
            if joint is not None:
                lookup.setdefault(joint, i)
        for i, link in enumerate(self._frame_names):
            lookup[link] = i
        self._frame_lookup = lookup

    # ---- lifetime ----
    def close(self):
        """Release this handle's runner and library references (a CUDA library's device buffers with them, once
        nothing else holds them) and unregister its name (when the registry still holds this handle; a later
        registration under the same name is left alone), so get_robot(name) raises RobotNotRegisteredError. Other
        handles of the same robot keep working. Idempotent; every method or runner attribute (dtype, num_threads,
        provider) of a closed handle raises HandleClosedError, while sizes, names and options stay readable. A
        call already running in another thread finishes first (it holds its own reference to the runner)."""
        if self.closed:
            return
        from .registry import _unregister
        _unregister(self._name, self)
        closed = _Closed(self._name)
        self._runner, self._call, self._library = closed, closed.call, closed

    @property
    def closed(self):
        """True after close()"""
        return type(self._runner) is _Closed

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()  # exceptions propagate

    # ---- sizes and names ----
    @property
    def name(self):
        """the name given to register_robot"""
        return self._name

    @property
    def nq(self):
        """configuration width: q is (B, nq); floating base: 7 + joints ([x y z qx qy qz qw, joints]; MuJoCo's
        convention: [x y z qw qx qy qz, joints])"""
        return self._model.nq

    @property
    def nv(self):
        """tangent width: qd, qdd, u and vector outputs are (B, nv); floating base: 6 + joints"""
        return self._model.nv

    @property
    def nb(self):
        """bodies (the floating base included): f_ext is (B, 6*nb), FK is (B, nb, 4, 4)"""
        return self._model.nb

    num_joints = nq
    num_vel = nv
    num_bodies = nb

    @property
    def dtype(self):
        """numpy dtype of inputs and outputs"""
        return self._runner.dtype

    @property
    def floating_base(self):
        return self._model.floating_base

    @property
    def output_convention(self):
        """the coordinates of every input and output: "pinocchio" (q = [x y z qx qy qz qw, joints], v = [v_lin local,
        omega local, joints]) or "mujoco" (q = [x y z qw qx qy qz, joints], v = [v_lin world, omega local, joints]:
        MuJoCo's free joint; tau, M, M^-1, accelerations and Jacobian columns in that basis, placements unchanged,
        f_ext body-local in both). On a fixed base with revolute and prismatic joints the two coincide."""
        return self._options.get("output_convention", "pinocchio")

    @property
    def gravity(self):
        """signed gravitational acceleration along world z"""
        return self._model.gravity

    @property
    def joint_names(self):
        """moving joints in q/v order; on a floating base the free-flyer "root_joint" comes first"""
        return self._joint_names

    @property
    def mimic_joints(self):
        """the coupled <mimic> joints: one dict each with name, leader (the independent joint it follows, chains
        of mimics resolved), multiplier and offset (q = multiplier * q[leader] + offset; v and qdd scale by the
        multiplier) and index_q / index_v (the leader's coordinate). Empty with ignore_mimic=True."""
        return self._mimic_joints

    @property
    def body_names(self):
        """the child link of each moving joint, in joint order (the rows of forward_kinematics)"""
        return self._model.body_names

    # ---- joint data the URDF carries (read-only float64 arrays; q order for positions, v order otherwise) ----
    def _joint_data(self, name):
        a = np.array(getattr(self._model, name), dtype=np.float64)
        a.flags.writeable = False
        return a

    @property
    def lower_position_limit(self):
        """(nq,) lower position limits: <limit lower> of revolute and prismatic joints, -inf where a coordinate is
        unbounded (continuous joints, translations, planar joints), -1 for quaternion components"""
        return self._joint_data("lower_position_limit")

    @property
    def upper_position_limit(self):
        """(nq,) upper position limits, +inf where unbounded, +1 for quaternion components"""
        return self._joint_data("upper_position_limit")

    @property
    def velocity_limit(self):
        """(nv,) <limit velocity> per tangent coordinate, +inf where the URDF gives none (and on multi-dof joints)"""
        return self._joint_data("velocity_limit")

    @property
    def effort_limit(self):
        """(nv,) <limit effort> per tangent coordinate, +inf where the URDF gives none"""
        return self._joint_data("effort_limit")

    @property
    def damping(self):
        """(nv,) <dynamics damping> per tangent coordinate (0 when absent; not used by the algorithms)"""
        return self._joint_data("damping")

    @property
    def friction(self):
        """(nv,) <dynamics friction> per tangent coordinate (0 when absent; not used by the algorithms)"""
        return self._joint_data("friction")

    @property
    def total_mass(self):
        """the sum of the bodies' masses in kg (as Pinocchio's computeTotalMass: links welded to the world on a
        fixed base are not part of any body)"""
        return self._model.total_mass

    @property
    def frame_names(self):
        """every URDF link, in file order; frame ids index this tuple"""
        return self._frame_names

    @property
    def ee_frame_ids(self):
        """frame ids of the end effectors, in end_effector_pose order"""
        return self._ee_frames

    @property
    def ee_names(self):
        """frame (link) names of the end effectors, in end_effector_pose order"""
        return tuple(self._frame_names[i] for i in self._ee_frames)

    @property
    def num_ees(self):
        return len(self._ee_frames)

    @property
    def max_batch_size(self):
        return self._options["max_batch_size"]

    @property
    def max_batch(self):
        """max_batch_size (the specification's other name for it)"""
        return self._options["max_batch_size"]

    @property
    def device(self):
        """where the calls run: "cuda" or "cpu" (register_robot's device="auto" picks one: see device_reason)"""
        return self._options["device"]

    @property
    def device_reason(self):
        """why device is what it is (e.g. "auto: no GPU: ...")"""
        return self._options.get("device_reason", "")

    @property
    def cuda_library(self):
        """the _core.CudaLibrary of a CUDA handle (device-pointer calls, timing), None on the CPU"""
        return getattr(self._runner, "cuda_library", None)

    def pinned_empty(self, shape):
        """An uninitialised array of the handle dtype in page-locked host memory, to reuse as out= (outputs are
        copied from the GPU straight into it) or as inputs. Allocate once: page-locked memory is scarce and slow
        to allocate. On a CPU handle it is an ordinary numpy array."""
        runner_pinned = getattr(self._runner, "pinned_empty", None)
        if runner_pinned is None:
            import numpy as np
            return np.empty(shape, dtype=self.dtype)
        return runner_pinned(shape)

    def reserve(self, max_batch):
        """CUDA: allocate the device buffers of host round trips for max_batch states now (CudaError when the
        GPU cannot hold them); larger batches still work later. A no-op on the CPU."""
        lib = self.cuda_library
        if lib is not None:
            lib.reserve(int(max_batch))

    @property
    def backend(self):
        return self._options["backend"]

    @property
    def provider(self):
        """what computes the results: 'generated' (this robot's compiled robot.so) or 'reference'
        (the float64 C reference, codegen=False); a Runner built by hand on another provider shows its name"""
        name = self._runner.provider  # (HandleClosedError after close())
        if self._library is not None:
            return "generated"
        return "reference" if name.startswith("reference") else name

    @property
    def library_path(self):
        """absolute path of the loaded robot.so in the cache, or None on the reference"""
        return None if self._library is None else self._library.path

    @property
    def cache_entry(self):
        """the cache entry directory (<root>/store/<content_key>) of the library, or None on the reference"""
        return None if self._library is None else self._library.entry_dir

    @property
    def build_info(self):
        """how registration got the library: {'cache_hit', 'compiled', 'seconds', 'seconds_generate',
        'seconds_compile', 'content_key', 'input_key', 'model_hash', 'codegen_schedule'}; None on the reference"""
        lib = self._library
        if lib is None:
            return None
        sec = lib.seconds
        return {"cache_hit": lib.cache_hit, "compiled": lib.compiled, "seconds": sec["total"],
                "seconds_generate": sec["generate"], "seconds_compile": sec["compile"],
                "content_key": lib.content_key, "input_key": lib.input_key, "model_hash": lib.model_hash,
                "codegen_schedule": self._options.get("codegen_schedule", "auto")}

    @property
    def num_threads(self):
        """threads one batched call may use (default os.cpu_count()); small batches run on one thread"""
        return self._runner.num_threads

    @num_threads.setter
    def num_threads(self, n):
        # 1..MAX_THREADS; a call runs on at most the CPUs of the affinity mask (<= the library's workspace threads)
        from .registry import check_num_threads
        self._runner.num_threads = check_num_threads(n)

    def __reduce__(self):
        """Pickling (multiprocessing's spawn and forkserver): the other process registers the robot again under the
        same name, from the URDF text and the same options and num_threads (a cache hit when it sees the same
        cache)."""
        if self.closed:
            self._runner.call()  # raises HandleClosedError
        if self._urdf is None:
            raise TypeError(f"cannot pickle RobotHandle {self._name!r}: only handles made by register_robot can be "
                            "pickled (they are registered again from their URDF in the other process)")
        from .registry import _pickle_args
        return _pickle_args(self, self._urdf)

    @property
    def options(self):
        """the register_robot options this handle was built with (a copy)"""
        return dict(self._options)

    def frame_id(self, frame):
        """Frame id of a link name, of the joint whose child link it is, or of an int id (checked)."""
        if isinstance(frame, str):
            try:
                return self._frame_lookup[frame]
            except KeyError:
                shown = ", ".join(repr(n) for n in self._frame_names[:12])
                more = "" if len(self._frame_names) <= 12 else f", ... ({len(self._frame_names)} frames)"
                raise ValueError(f"unknown frame {frame!r} on robot {self._name!r}; frames are URDF link "
                                 f"names (or the joint above the link): {shown}{more}") from None
        if isinstance(frame, numbers.Integral) and not isinstance(frame, bool):
            fid = int(frame)
            if 0 <= fid < len(self._frame_names):
                return fid
            raise ValueError(f"frame id {fid} is out of range: robot {self._name!r} has "
                             f"{len(self._frame_names)} frames")
        raise TypeError(f"target must be a frame name or an int frame id, not {type(frame).__name__}")

    def _device_note(self):
        """' (auto: ...)' when device="auto" picked the device, so the repr says which and why"""
        if self._options.get("device_requested") == "auto":
            return f" ({self.device_reason})"
        return ""

    def __repr__(self):
        if self.closed:
            return f"RobotHandle(name={self._name!r}, robot={self._model.robot_name!r}, closed)"
        return (f"RobotHandle(name={self._name!r}, robot={self._model.robot_name!r}, nq={self.nq}, "
                f"nv={self.nv}, nb={self.nb}, nee={self.num_ees}, floating_base={self.floating_base}, "
                f"dtype={self.dtype.name}, device={self.device!r}{self._device_note()}, backend={self.backend!r}, "
                f"provider={self.provider!r}{self._convention_note()})")

    def _convention_note(self):
        """', output_convention=...' when it is not the default"""
        conv = self.output_convention
        return "" if conv == "pinocchio" else f", output_convention={conv!r}"

    # ---- dynamics ----
    def inverse_dynamics(self, q, qd, qdd=None, f_ext=None, out=None):
        """RNEA: tau = M(q) qdd + c(q, qd) - J^T f_ext, (B, nv). qdd=None means zero acceleration."""
        return self._call(_RNEA, (q, qd, qdd, f_ext), out, ())

    rnea = inverse_dynamics

    def nonlinear_effects(self, q, qd, out=None):
        """Coriolis, centrifugal and gravity terms c(q, qd) = rnea(q, qd, 0), (B, nv)."""
        return self._call(_NLE, (q, qd), out, ())

    def generalized_gravity(self, q, out=None):
        """Gravity torques g(q) = rnea(q, 0, 0), (B, nv)."""
        return self._call(_GRAVITY, (q,), out, ())

    def crba(self, q, out=None):
        """Joint-space mass matrix M(q), full symmetric, (B, nv, nv)."""
        return self._call(_CRBA, (q,), out, ())

    def minv(self, q, out=None):
        """Inverse mass matrix M(q)^-1 by the direct algorithm, full symmetric, (B, nv, nv)."""
        return self._call(_MINV, (q,), out, ())

    def forward_dynamics(self, q, qd, u, f_ext=None, out=None):
        """qdd = M^-1 (u - c(q, qd) + J^T f_ext), (B, nv)."""
        return self._call(_FD, (q, qd, u, f_ext), out, ())

    fd = forward_dynamics

    def aba(self, q, qd, u, f_ext=None, out=None):
        """Forward dynamics by the articulated-body algorithm, (B, nv)."""
        return self._call(_ABA, (q, qd, u, f_ext), out, ())

    # ---- kinematics ----
    def forward_kinematics(self, q, out=None):
        """World placement oMi of every body (joint frame), (B, nb, 4, 4) homogeneous matrices."""
        return self._call(_FK, (q,), out, ())

    def end_effector_pose(self, q, out=None):
        """[x, y, z, roll, pitch, yaw] of each end effector (pinocchio.rpy.matrixToRpy), (B, 6*nee)."""
        return self._call(_EE_POSE, (q,), out, ())

    # ---- attributes with friendlier arguments than an int (every row that has them: _generic_method) ----
    def _frame_attr(self, target):
        """the frame attribute of a target argument: a frame name, the joint above it, a frame id, or None for the
        first end effector"""
        if target is None:
            if not self._ee_frames:
                raise ValueError(f"robot {self._name!r} has no end effectors; pass target=")
            return self._ee_frames[0]
        return self.frame_id(target)

    def _targets_table(self, ee_joint_names, ee_offsets):
        """the n targets of a call of a row with a target input, (n, 4) float64 [frame id, offset x y z]: the frames
        of ee_joint_names (joint names (the frame of the joint's child link), link names or frame ids; None: the
        registered end effectors) and the points at ee_offsets ((n, 3) or (3,), in each frame's axes; None: the
        frame origins)"""
        if ee_joint_names is None:
            frames = list(self._ee_frames)
        elif isinstance(ee_joint_names, (str, numbers.Integral)):
            frames = [self.frame_id(ee_joint_names)]
        else:
            frames = [self.frame_id(n) for n in ee_joint_names]
        if not frames:
            raise ValueError(f"robot {self._name!r} has no end effectors: pass ee_joint_names= (joint or link names)")
        table = np.zeros((len(frames), 4))
        table[:, 0] = frames
        if ee_offsets is not None:
            off = np.asarray(ee_offsets, dtype=np.float64)
            if off.shape not in ((3,), (len(frames), 3)):
                raise ValueError(f"ee_offsets must be ({len(frames)}, 3) (one [x, y, z] per target, in its frame's "
                                 f"axes) or (3,); got {off.shape}")
            table[:, 1:] = off
        return table

    @staticmethod
    def _reference_frame_attr(reference_frame):
        """the reference_frame attribute of "WORLD", "LOCAL", "LOCAL_WORLD_ALIGNED" (any case) or a
        pinocchio.ReferenceFrame"""
        rf_name = getattr(reference_frame, "name", reference_frame)
        rf = REFERENCE_FRAMES.get(rf_name.upper()) if isinstance(rf_name, str) else None
        if rf is None:
            raise ValueError(f"reference_frame must be one of 'WORLD', 'LOCAL', 'LOCAL_WORLD_ALIGNED'; "
                             f"got {reference_frame!r}")
        return rf


# A row's attribute with one of these names is a parameter after its inputs (positional too), under the name users
# know from Pinocchio, with a default and a converter: (parameter, default, RobotHandle method converting it)
_FRIENDLY_ATTRS = {
    "frame": ("target", None, "_frame_attr"),
    "reference_frame": ("reference_frame", "LOCAL_WORLD_ALIGNED", "_reference_frame_attr"),
}


def robot_key(handle):
    """the string naming the robot in a compiled program or a traced graph (a JAX static attribute, a torch op
    argument): the library's content key (or, on the reference, a digest of the URDF and the options that change
    results), with the output convention; never a pointer"""
    conv = handle.output_convention
    info = handle.build_info
    if info is not None:
        return f"{info['content_key']}:{conv}"
    opts = handle.options
    parts = [handle._urdf or b"", repr(sorted((k, repr(opts.get(k))) for k in
                                              ("floating_base", "ee_joint_names", "gravity", "ignore_mimic"))).encode(),
             str(handle.dtype).encode()]
    return "ref-" + hashlib.sha256(b"\0".join(parts)).hexdigest()[:40] + f":{conv}"


class FrameworkHandle:
    """What the JAX and PyTorch handles share: the numpy RobotHandle they wrap (its library; its sizes, names and
    properties through attribute lookup), the robot's key, the signature table's rows with this robot's shapes and
    the rows its library lacks. install_methods makes every row a method that parses its arguments as the numpy
    handle does and calls self.call(row, inputs, attrs, out); a subclass sets _dtype and defines call."""

    _repr_prefix = ""

    def __init__(self, handle):
        from ._signatures import ROWS, concrete, sizes_of
        self._np = handle
        self._key = robot_key(handle)
        sizes = sizes_of(handle._model)
        self._rows = [concrete(r, sizes) for r in ROWS]  # by row id, with this robot's shapes
        self._missing = missing_rows(handle)

    # _eager_method(rid, general), where a subclass defines it: the method of row rid (no attributes) that tries the
    # front end's eager path on positional inputs alone (no argument parsing, no frame in between) and calls
    # general(self, *args, **kwargs), the parsing method, for anything else
    _eager_method = None

    @property
    def numpy_handle(self):
        """the numpy RobotHandle this one shares its library with"""
        return self._np

    @property
    def robot_key(self):
        """the string a compiled program or traced graph carries to find this robot in the process (no pointer)"""
        return self._key

    @property
    def concrete_rows(self):
        """the signature table's rows with this robot's shapes, by row id (_signatures.concrete)"""
        return self._rows

    @property
    def dtype(self):
        return self._dtype

    def __getattr__(self, attr):
        # sizes, names and properties: the numpy handle's
        if attr.startswith("_"):
            raise AttributeError(attr)
        return getattr(self._np, attr)

    def __repr__(self):
        return self._repr_prefix + repr(self._np)

    @classmethod
    def install_methods(cls, doc_of):
        """every row of the signature table as a method of cls under its name and aliases (nothing per method);
        doc_of(row) is what the front end adds to the row's docstring"""
        from ._signatures import ROWS
        for row in ROWS:
            method = _framework_method(row, doc_of(row), cls._eager_method)
            for name in (row["py_name"], *row["aliases"]):
                setattr(cls, name, method)


def _framework_method(row, doc_suffix, eager_method):
    """a FrameworkHandle method for a row (row_binder's arguments), calling self.call (wrapped by the front end's
    eager_method for rows without attributes, where it has one)"""
    parse, signature, doc = row_binder(row)

    if target_index(row) is not None:
        def method(self, *args, **kwargs):
            inputs, attrs, out = parse(self._np, args, kwargs)
            return fan_out(lambda ins, o: self.call(row, ins, attrs, o), row, inputs, out, self._xp, self._table_like)
    else:
        def method(self, *args, **kwargs):
            inputs, attrs, out = parse(self._np, args, kwargs)  # frame names converted by the numpy handle
            return self.call(row, inputs, attrs, out)
        if eager_method is not None and not row["attrs"]:
            method = eager_method(row["id"], method)

    method.__signature__ = signature
    method.__name__ = method.__qualname__ = row["py_name"]
    method.__doc__ = doc + doc_suffix
    return method


def not_built_error(py_name):
    """the error of a method a library of some methods (register_robot(algorithm_list=...)) was built without"""
    return NotAvailableError(f"{py_name} was not built into this robot's library (register_robot(algorithm_list=...) "
                             f"left it out, or it is a second-order method, built only when named); register the robot "
                             f"again with '{py_name}' in algorithm_list")


def missing_rows(handle):
    """ids of the rows handle's library lacks: those an algorithm_list left out, or without one the opt-in rows (the
    second-order methods, built only when named); empty on the reference"""
    from ._signatures import ROWS, default_row_names
    built = handle._options.get("algorithm_list")
    if handle._library is None:
        return frozenset()
    built = built if built is not None else default_row_names()
    return frozenset(r["id"] for r in ROWS if r["name"] not in built)


def _subset_call(call, missing):
    """runner.call for a library that lacks the rows in missing"""
    from ._signatures import ROWS

    def checked(algo, inputs, out, attrs):
        if algo in missing:
            raise not_built_error(ROWS[algo]["py_name"])
        return call(algo, inputs, out, attrs)
    return checked


# A row's input named "target" is a target chosen per call ([frame id, tool offset] per state): users pass a call's n
# targets as these parameters in its place (RobotHandle._targets_table), and the front end runs the row on the B n
# (state, target) pairs (fan_out)
_TARGET_INPUT = "target"
_TARGET_PARAMS = ("ee_joint_names", "ee_offsets")


def target_index(row):
    """the position of row's per-call target input, or None"""
    names = [a["name"] for a in row["inputs"]]
    return names.index(_TARGET_INPUT) if _TARGET_INPUT in names else None


def _namespace_of(q, dtype):
    """(xp, table_like) for fan_out on the numpy handle: the array library of q (numpy, or for device arrays
    handed to a CUDA handle torch or CuPy, whose arrays stay on their device) and the target table as its array"""
    mod = type(q).__module__.split(".")[0]
    if mod == "torch":
        import torch
        return torch, lambda t, x: torch.as_tensor(np.asarray(t), dtype=x.dtype, device=x.device)
    if mod == "cupy":
        import cupy
        return cupy, lambda t, x: cupy.asarray(np.asarray(t), dtype=x.dtype)
    return np, lambda t, x: np.asarray(t, dtype=dtype)


def fan_out(call, row, inputs, out, xp, table_like):
    """row on every (state, target) pair of a call whose target input holds the call's n targets (n, 4): the other
    inputs (leading dimensions L) repeated per target, the cotangent (L, n w) split into the targets' (L n, w); the
    outputs (L n, d0, ...) as (L, n d0, ...) (out, when given, written through its reshaped view and returned), a
    VJP's summed over the targets as (L, ...). call(inputs, out) runs the row on flat inputs; xp is the array namespace
    (numpy, jax.numpy, torch) and table_like(table, x) the table as an array of x's kind, dtype and device."""
    kt = target_index(row)
    names = [a["name"] for a in row["inputs"]]
    table = inputs[kt]
    n = table.shape[0]
    xs = [x if x is None or k == kt or hasattr(x, "shape") else xp.asarray(x) for k, x in enumerate(inputs)]
    q = xs[0]
    lead = tuple(q.shape[:-1])
    B = 1
    for d in lead:
        B *= int(d)
    vjp = "cotangent" in names
    flat = []
    for k, (name, x) in enumerate(zip(names, xs)):
        if x is None:
            flat.append(None)
        elif k == kt:
            t = table_like(table, q)
            flat.append(xp.broadcast_to(t[None], (B, n, 4)).reshape(B * n, 4))
        elif name == "cotangent":
            w = row["inputs"][k]["dims"][0][1]
            if tuple(x.shape) != lead + (n * w,):
                raise ValueError(f"{row['py_name']}: cotangent must be {lead + (n * w,)} ({w} per target, {n} "
                                 f"targets); got {tuple(x.shape)}")
            flat.append(x.reshape(B * n, w))
        else:
            per = tuple(x.shape[len(lead):])
            flat.append(xp.broadcast_to(x.reshape((B, 1) + per), (B, n) + per).reshape((B * n,) + per))
    if vjp:
        if out is not None:
            raise ValueError(f"{row['py_name']}: out= is not taken with targets (the result sums over them)")
        res = call(flat, None)
        return res.reshape((B, n) + tuple(res.shape[1:])).sum(1).reshape(lead + tuple(res.shape[1:]))
    flat_out = None
    if out is not None:
        per = tuple(out.shape[len(lead):])
        flat_out = out.reshape((B * n, per[0] // n) + per[1:])
    res = call(flat, flat_out)
    per = tuple(res.shape[1:])
    shape = lead + (n * per[0],) + per[1:]
    if out is not None and tuple(out.shape) == shape:
        return out
    return res.reshape(shape)


def row_binder(row, with_out=True):
    """(parse, parameters, doc) of a row of the signature table as a front end's method: its inputs as parameters
    (optional ones default None; a per-call target input as ee_joint_names= and ee_offsets=, parsed into its (n, 4)
    table), then its frame and reference_frame attributes as target= and reference_frame= (names or ids:
    _FRIENDLY_ATTRS), its other attributes as int keywords (default: the lowest valid value), and out= when
    with_out. parse(handle, args, kwargs) -> (inputs in the row's order, attribute values, out), handle being the
    RobotHandle that converts frame names."""
    kt = target_index(row)
    row_inputs = [a["name"] for a in row["inputs"]]
    inputs = row_inputs if kt is None else row_inputs[:kt] + list(_TARGET_PARAMS) + row_inputs[kt + 1:]
    optional = [a["optional"] for a in row["inputs"]]
    if kt is not None:
        optional = optional[:kt] + [1, 1] + optional[kt + 1:]
    friendly = [(_FRIENDLY_ATTRS[a["name"]], k) for k, a in enumerate(row["attrs"]) if a["name"] in _FRIENDLY_ATTRS]
    plain = [(a["name"], a["lo"], k) for k, a in enumerate(row["attrs"]) if a["name"] not in _FRIENDLY_ATTRS]
    positional = inputs + [f[0] for f, _ in friendly]

    n_in, bare = len(inputs), not friendly and not plain and kt is None

    def parse(handle, args, kwargs):
        if bare and not kwargs and len(args) <= n_in:
            # the common call: inputs given positionally, no attributes, no out=
            return tuple(args) + (None,) * (n_in - len(args)), (), None
        out = kwargs.pop("out", None) if with_out else None
        if len(args) > len(positional):
            raise TypeError(f"{row['py_name']}() takes {len(positional)} positional arguments "
                            f"({', '.join(positional)}); {len(args)} given")
        values = list(args) + [None] * (len(positional) - len(args))
        given = [k < len(args) for k in range(len(positional))]
        for k, name in enumerate(positional):
            if name in kwargs:
                values[k], given[k] = kwargs.pop(name), True
        attr_values = [0] * len(row["attrs"])
        for n, ((param, default, convert), k) in enumerate(friendly):
            i = len(inputs) + n
            attr_values[k] = getattr(handle, convert)(values[i] if given[i] else default)
        for name, lo, k in plain:
            attr_values[k] = int(kwargs.pop(name, lo))
        if kwargs:
            raise TypeError(f"{row['py_name']}() got an unexpected keyword argument {next(iter(kwargs))!r}")
        ins = values[:len(inputs)]
        if kt is not None:
            ins[kt:kt + 2] = [handle._targets_table(ins[kt], ins[kt + 1])]
        return tuple(ins), tuple(attr_values), out

    P = inspect.Parameter
    params = [P("self", P.POSITIONAL_OR_KEYWORD)]
    params += [P(n, P.POSITIONAL_OR_KEYWORD, default=None if opt else P.empty) for n, opt in zip(inputs, optional)]
    params += [P(f[0], P.POSITIONAL_OR_KEYWORD, default=f[1]) for f, _ in friendly]
    params += [P(n, P.KEYWORD_ONLY, default=lo) for n, lo, _ in plain]
    if with_out:
        params.append(P("out", P.KEYWORD_ONLY, default=None))
    def shape_text(a, per_target):
        dims = [str(d) for d in a["shape"]]
        if per_target:  # stacked over the call's n targets
            dims[0] = f"n*{dims[0]}"
        return f"{a['name']} (B, {', '.join(dims)})"
    vjp = "cotangent" in row_inputs
    shapes = ", ".join([shape_text(a, kt is not None and a["name"] == "cotangent") for a in row["inputs"]
                        if a["name"] != _TARGET_INPUT] +
                       [shape_text(a, kt is not None and not vjp) for a in row["outputs"]])
    doc = f"{row['doc']}. Generated from the signature table: {shapes}."
    if kt is not None:
        doc += (" ee_joint_names: the targets, joint names (the frame of the joint's child link), link names or "
                "frame ids (default the registered end effectors); ee_offsets: (n, 3) points in those frames "
                "(default their origins). The n targets are chosen per call (no rebuild): the result stacks them "
                "along its first per-state axis.")
    if friendly:
        doc += (" target: a frame (link) name, the name of the joint above that link, or a frame id; "
                "default the first end effector. reference_frame: 'WORLD', 'LOCAL' or "
                "'LOCAL_WORLD_ALIGNED' (or a pinocchio.ReferenceFrame), the frame the rows are expressed in.")
    return parse, inspect.Signature(params), doc


def _generic_method(row):
    """A RobotHandle method for a row of the signature table that has no hand-written one (row_binder's arguments),
    calling the row like the methods above."""
    parse, signature, doc = row_binder(row)
    algo = row["id"]

    if target_index(row) is not None:
        def method(self, *args, **kwargs):
            inputs, attrs, out = parse(self, args, kwargs)
            xp, table_like = _namespace_of(inputs[0], self.dtype)
            return fan_out(lambda ins, o: self._call(algo, tuple(ins), o, attrs), row, inputs, out, xp, table_like)
    else:
        def method(self, *args, **kwargs):
            inputs, attrs, out = parse(self, args, kwargs)
            return self._call(algo, inputs, out, attrs)

    method.__signature__ = signature
    method.__name__ = method.__qualname__ = row["py_name"]
    method.__doc__ = doc
    return method


def _install_generic_methods():
    """every row of the signature table is a RobotHandle method (and its aliases): hand-written above, or generic"""
    from ._signatures import ROWS
    for row in ROWS:
        fn = getattr(RobotHandle, row["py_name"], None)
        if fn is None:
            fn = _generic_method(row)
            setattr(RobotHandle, row["py_name"], fn)
        for alias in row["aliases"]:
            if not hasattr(RobotHandle, alias):
                setattr(RobotHandle, alias, fn)


_install_generic_methods()
