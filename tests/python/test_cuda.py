"""device="cuda" against the float64 reference on every robot case (pytest -m gpu; skipped with the reason when there
is no GPU or no nvcc): float64 to 1e-10 per output block, float32 no worse than 4x the CPU float32 generated path on
the same inputs, at B = 1, 7, 256, 1000 (and 65536 for a subset), outputs poisoned with NaN before every call, fresh
random inputs per test. Also: bitwise identical outputs in every batch slot, the torch device-array path equal to the
numpy path, pinned out=, and failures that raise.

Robots: robot_cases.CASES; GRID_RBD_ROBOTS_DIR / GRID_RBD_ERD_DIR point at copies of ../shared/robots and
example-robot-data's robots/ where those are not installed (the GPU machine). GRID_RBD_GPU_REPORT names a markdown file
that receives the error table."""

import json
import os
import threading
import time

import numpy as np
import pytest

import grid_rbd
from grid_rbd import cuda as gcuda
from robot_cases import CASES, make_states, robot_path

_ok, _why = gcuda.available()
pytestmark = [pytest.mark.gpu] + ([] if _ok else [pytest.mark.skip(reason=f"needs an NVIDIA GPU and nvcc: {_why}")])

RTOL64 = 1e-10       # float64 CUDA vs float64 reference, per block (relative, floor 1e-6 of the output's scale)
F32_FACTOR = 4.0     # float32 CUDA error <= 4x the CPU float32 generated path's error ...
F32_FLOOR = 1e-6     # ... or 4x this, whichever is larger (both are a few float32 ulps on easy outputs)
SCALE_FLOOR = 1e-6

BATCHES = (1, 7, 256, 1000)
BIG = 65536
BIG_CASES = ("iiwa", "go2_ff", "g1_29dof_ff", "atlas_ff")
BIG_METHODS = ("inverse_dynamics", "crba", "minv", "forward_dynamics", "aba", "inverse_dynamics_gradient",
               "forward_dynamics_gradient")
TORCH_CASES = ("iiwa", "go2_ff", "g1_29dof_ff", "synthetic_ff")


# ---- handles, once per (case, kind) ----
_handles = {}
_handles_lock = threading.Lock()


def handle(case, kind):
    """kind: 'cuda64', 'cuda32' (device="cuda"), 'cpu32' (the CPU float32 generated library), 'ref' (float64
    reference)"""
    key = (case.id, kind)
    with _handles_lock:
        if key in _handles:
            return _handles[key]
    path = robot_path(case)
    common = dict(urdf_path=path, floating_base=case.floating_base, ignore_mimic=case.ignore_mimic, verbose=False)
    if kind == "ref":
        h = grid_rbd.register_robot(f"{case.id}_gpu_ref", dtype="float64", codegen=False, device="cpu", **common)
    elif kind == "cpu32":
        h = grid_rbd.register_robot(f"{case.id}_gpu_cpu32", dtype="float32", device="cpu", **common)
    else:
        dtype = "float64" if kind == "cuda64" else "float32"
        h = grid_rbd.register_robot(f"{case.id}_gpu_{kind}", dtype=dtype, device="cuda", **common)
        assert h.device == "cuda", h
    with _handles_lock:
        return _handles.setdefault(key, h)


# ---- what is called ----
def _jac(rf):
    def call(h, s, out):
        fid = h.ee_frame_ids[0] if h.ee_frame_ids else len(h.frame_names) - 1
        return h.frame_jacobian(s["q"], fid, rf, out=out)
    return call


def _jacdot(rf):
    def call(h, s, out):
        fid = h.ee_frame_ids[0] if h.ee_frame_ids else len(h.frame_names) - 1
        return h.frame_jacobian_dot(s["q"], s["qd"], fid, rf, out=out)
    return call


def _osc(rf):
    def call(h, s, out):
        fid = h.ee_frame_ids[0] if h.ee_frame_ids else len(h.frame_names) - 1
        return h.osc_inertia(s["q"], fid, rf, out=out)
    return call


def _runtime(method):
    """a method at targets chosen per call: two end effectors and a frame half-way down the list, with tool offsets
    (the VJP with a fixed cotangent; its out= written after the call, as the sum over targets takes none)"""
    def call(h, s, out):
        frames = sorted(set(list(h.ee_frame_ids[:2]) + [len(h.frame_names) // 2]))
        offsets = np.linspace(-0.2, 0.3, 3 * len(frames)).reshape(-1, 3)
        if method.endswith("_vjp"):
            g = np.broadcast_to(np.cos(np.arange(6 * len(frames))), (len(s["q"]), 6 * len(frames)))
            if isinstance(s["q"], np.ndarray):
                g = np.ascontiguousarray(g, dtype=s["q"].dtype)
            else:  # a torch tensor: the cotangent on its device
                g = _torch().tensor(np.ascontiguousarray(g), dtype=s["q"].dtype, device=s["q"].device)
            res = getattr(h, method)(s["q"], g, frames, offsets)
            if out is None:
                return res
            out[...] = res
            return out
        return getattr(h, method)(s["q"], frames, offsets, out=out)
    return call


METHODS = {
    "inverse_dynamics": lambda h, s, out: h.inverse_dynamics(s["q"], s["qd"], s["qdd"], out=out),
    "inverse_dynamics_qdd_none": lambda h, s, out: h.inverse_dynamics(s["q"], s["qd"], out=out),
    "inverse_dynamics_f_ext": lambda h, s, out: h.inverse_dynamics(s["q"], s["qd"], s["qdd"], f_ext=s["f_ext"], out=out),
    "inverse_dynamics_f_ext_qdd_none": lambda h, s, out: h.inverse_dynamics(s["q"], s["qd"], f_ext=s["f_ext"], out=out),
    "nonlinear_effects": lambda h, s, out: h.nonlinear_effects(s["q"], s["qd"], out=out),
    "generalized_gravity": lambda h, s, out: h.generalized_gravity(s["q"], out=out),
    "crba": lambda h, s, out: h.crba(s["q"], out=out),
    "minv": lambda h, s, out: h.minv(s["q"], out=out),
    "forward_dynamics": lambda h, s, out: h.forward_dynamics(s["q"], s["qd"], s["u"], out=out),
    "forward_dynamics_f_ext": lambda h, s, out: h.forward_dynamics(s["q"], s["qd"], s["u"], f_ext=s["f_ext"], out=out),
    "aba": lambda h, s, out: h.aba(s["q"], s["qd"], s["u"], out=out),
    "aba_f_ext": lambda h, s, out: h.aba(s["q"], s["qd"], s["u"], f_ext=s["f_ext"], out=out),
    "forward_kinematics": lambda h, s, out: h.forward_kinematics(s["q"], out=out),
    "end_effector_pose": lambda h, s, out: h.end_effector_pose(s["q"], out=out),
    "frame_jacobian_world": _jac("WORLD"),
    "frame_jacobian_local": _jac("LOCAL"),
    "frame_jacobian_lwa": _jac("LOCAL_WORLD_ALIGNED"),
    "frame_jacobian_dot_world": _jacdot("WORLD"),
    "frame_jacobian_dot_local": _jacdot("LOCAL"),
    "frame_jacobian_dot_lwa": _jacdot("LOCAL_WORLD_ALIGNED"),
    "inverse_dynamics_gradient": lambda h, s, out: h.inverse_dynamics_gradient(s["q"], s["qd"], s["qdd"], out=out),
    "inverse_dynamics_gradient_f_ext": lambda h, s, out: h.inverse_dynamics_gradient(s["q"], s["qd"], s["qdd"],
                                                                                     f_ext=s["f_ext"], out=out),
    "forward_dynamics_gradient": lambda h, s, out: h.forward_dynamics_gradient(s["q"], s["qd"], s["u"], out=out),
    "forward_dynamics_gradient_f_ext": lambda h, s, out: h.forward_dynamics_gradient(s["q"], s["qd"], s["u"],
                                                                                     f_ext=s["f_ext"], out=out),
    "end_effector_pose_gradient": lambda h, s, out: h.end_effector_pose_gradient(s["q"], out=out),
    "inverse_dynamics_vjp": lambda h, s, out: h.inverse_dynamics_vjp(s["q"], s["qd"], s["g"], s["qdd"], s["f_ext"],
                                                                     out=out),
    "forward_dynamics_vjp": lambda h, s, out: h.forward_dynamics_vjp(s["q"], s["qd"], s["u"], s["g"], s["f_ext"],
                                                                     out=out),
    "end_effector_pose_vjp": lambda h, s, out: h.end_effector_pose_vjp(s["q"], s["g_pose"], out=out),
    "energy": lambda h, s, out: h.energy(s["q"], s["qd"], out=out),
    "kinetic_energy_regressor": lambda h, s, out: h.kinetic_energy_regressor(s["q"], s["qd"], out=out),
    "potential_energy_regressor": lambda h, s, out: h.potential_energy_regressor(s["q"], out=out),
    "coriolis_matrix": lambda h, s, out: h.coriolis_matrix(s["q"], s["qd"], out=out),
    "inverse_dynamics_regressor": lambda h, s, out: h.inverse_dynamics_regressor(s["q"], s["qd"], s["qdd"], out=out),
    "com": lambda h, s, out: _packed(h.com, (s["q"],), out),
    "ccrba": lambda h, s, out: _packed(h.ccrba, (s["q"], s["qd"]), out),
    "cmm_time_variation": lambda h, s, out: h.cmm_time_variation(s["q"], s["qd"], out=out),
    "dccrba": lambda h, s, out: h.dccrba(s["q"], out=out),
    "fk_batched": lambda h, s, out: h.fk_batched(s["q"], out=out),
    "osc_inertia_world": _osc("WORLD"),
    "osc_inertia_local": _osc("LOCAL"),
    "osc_inertia_lwa": _osc("LOCAL_WORLD_ALIGNED"),
    "end_effector_pose_runtime": _runtime("end_effector_pose_runtime"),
    "end_effector_pose_gradient_runtime": _runtime("end_effector_pose_gradient_runtime"),
    "end_effector_pose_runtime_vjp": _runtime("end_effector_pose_runtime_vjp"),
}


def _packed(method, args, out):
    """a method of several outputs as one (B, sum of widths) array: each output flattened per state, side by side;
    with out given, the method writes a tuple of poisoned arrays (the out= tuple path: numpy arrays, or tensors on
    out's device when out is a torch tensor) then copied into out"""
    n = len(args[0])
    if out is None:
        res = method(*args)
    else:
        shapes = [tuple(r.shape) for r in method(*(a[:1] for a in args))]
        if isinstance(out, np.ndarray):
            outs = tuple(np.full((n,) + sh[1:], np.nan, dtype=out.dtype) for sh in shapes)
        else:
            outs = tuple(out.new_full((n,) + sh[1:], float("nan")) for sh in shapes)
        res = method(*args, out=outs)
        assert all(r is o for r, o in zip(res, outs))
    flats = [r.reshape(n, -1) for r in res]
    if isinstance(flats[0], np.ndarray):
        flat = np.concatenate(flats, axis=1)
    else:
        import torch
        flat = torch.cat(flats, dim=1)
    if out is None:
        return flat
    out[...] = flat
    return out


def states(h, n, seed, dtype):
    """fresh random states in dtype (float32 inputs are what both float32 paths and the reference see)"""
    s = make_states(h, "random", n, seed=seed)
    return {k: np.ascontiguousarray(v, dtype=dtype) for k, v in s.items()}


def poisoned(shape, dtype, pinned_from=None):
    out = pinned_from.pinned_empty(shape) if pinned_from is not None else np.empty(shape, dtype=dtype)
    out[...] = np.nan
    return out


def block_errors(ours, ref):
    """per state ||ours - ref|| / max(||ref||, 1e-6 * the largest ||ref|| of the batch (at least 1))"""
    ours = np.asarray(ours, dtype=np.float64).reshape(len(ours), -1)
    ref = np.asarray(ref, dtype=np.float64).reshape(len(ref), -1)
    norms = np.linalg.norm(ref, axis=1)
    scale = max(1.0, float(norms.max(initial=0.0)))
    err = np.linalg.norm(ours - ref, axis=1) / np.maximum(norms, SCALE_FLOOR * scale)
    err[~np.isfinite(ours).all(axis=1)] = np.inf  # a NaN left in place (an unwritten output) never passes
    return err


@pytest.fixture(autouse=True)
def _deadline():
    """GRID_RBD_GPU_TEST_DEADLINE (unix seconds, set by bench/gpu_session.sh): later tests skip, so a session with a
    fixed time budget still ends with its report"""
    deadline = os.environ.get("GRID_RBD_GPU_TEST_DEADLINE")
    if deadline and time.time() > float(deadline):
        pytest.skip("past GRID_RBD_GPU_TEST_DEADLINE (the session's time budget)")


# ---- the report (GRID_RBD_GPU_REPORT) ----
_rows = []
_rows_lock = threading.Lock()


@pytest.fixture(scope="module", autouse=True)
def _report():
    yield
    path = os.environ.get("GRID_RBD_GPU_REPORT")
    if not path or not _rows:
        return
    lines = ["| robot | B | method | float64 CUDA max rel err | float32 CUDA max rel err | float32 CPU max rel err | "
             "ratio |", "|---|---|---|---|---|---|---|"]
    for r in sorted(_rows, key=lambda r: (r[0], r[1], r[2])):
        ratio = r[4] / max(r[5], 1e-30) if np.isfinite(r[4]) else float("inf")
        lines.append(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]:.2e} | {r[4]:.2e} | {r[5]:.2e} | {ratio:.2f} |")
    worst64 = max(r[3] for r in _rows)
    worst_ratio = max(r[4] / max(r[5], F32_FLOOR) for r in _rows)
    head = [f"# CUDA accuracy ({len(_rows)} rows): worst float64 relative block error {worst64:.2e} (limit {RTOL64:.0e}); "
            f"worst float32 CUDA / max(CPU float32, {F32_FLOOR:.0e}) ratio {worst_ratio:.2f} (limit {F32_FACTOR:g})", ""]
    with open(path, "w") as f:
        f.write("\n".join(head + lines) + "\n")


F32_SAMPLE = 256  # the CPU float32 error is taken over at least this many states (the tested ones first)


def lambda_cond(out):
    """per state, the condition number of Lambda on its nonzero block (the directions the rule keeps; 1 for none)"""
    sv = np.linalg.svd(np.asarray(out, dtype=np.float64), compute_uv=False)
    kept = np.where(sv > 1e-9 * np.maximum(sv[:, :1], 1e-300), sv, np.inf).min(axis=1)
    return np.where(sv[:, 0] > 0, sv[:, 0] / kept, 1.0)


def check_case(case, n, methods):
    """every method on fresh random states: float64 CUDA vs reference, float32 CUDA vs 4x the CPU float32 path.
    The CPU float32 error is the largest over max(B, 256) states that start with the B tested ones, so a small batch
    is judged against the model's typical float32 error, not against one lucky rounding."""
    ref, g64, g32, c32 = (handle(case, k) for k in ("ref", "cuda64", "cuda32", "cpu32"))
    seed = 7919 * n + len(case.id)
    s64 = states(ref, n, seed, np.float64)
    m = max(n, F32_SAMPLE)
    s32_all = states(ref, m, seed + 1, np.float32)
    s32 = {k: np.ascontiguousarray(v[:n]) for k, v in s32_all.items()}
    s32_as64 = {k: v.astype(np.float64) for k, v in s32_all.items()}
    failures = []
    for name in methods:
        call = METHODS[name]
        if name.startswith("end_effector") and ref.num_ees == 0:
            continue
        r64 = call(ref, s64, None)
        out = poisoned(r64.shape, np.float64)
        got = call(g64, s64, out)
        assert got is out
        e64 = float(block_errors(got, r64).max())
        # float32: the same float32 inputs on the GPU and on the CPU generated path; the reference sees them exactly
        r32 = call(ref, s32_as64, None)
        out32 = poisoned(r32[:n].shape, np.float32, pinned_from=g32 if n % 2 else None)  # odd B: pinned out=
        got32 = call(g32, s32, out32)
        assert got32 is out32
        cpu32 = call(c32, s32_all, poisoned(r32.shape, np.float32))
        e32 = float(block_errors(got32, r32[:n]).max())
        ec = float(block_errors(cpu32, r32).max())
        with _rows_lock:
            _rows.append((case.id, n, name, e64, e32, ec))
        bound64 = RTOL64
        if name.startswith("osc_inertia"):
            # (J M^-1 J^T)^-1 from M^-1 here and a solve with M in the reference: eps * cond(M) * cond(Lambda) per
            # state, as test_codegen bounds the CPU's generated code
            cond = np.linalg.cond(ref.crba(s64["q"])) * lambda_cond(r64)
            bound64 = np.maximum(RTOL64, np.finfo(np.float64).eps * cond)
        err64 = block_errors(got, r64)
        if not np.all(err64 <= bound64):
            i = int(np.argmax(err64 / bound64))
            limit = np.broadcast_to(bound64, err64.shape)[i]
            failures.append(f"{name}: float64 relative block error {err64[i]:.3e} > {limit:.1e} (state {i})")
        if not e32 <= F32_FACTOR * max(ec, F32_FLOOR):
            failures.append(f"{name}: float32 CUDA error {e32:.3e} > {F32_FACTOR:g} x max(CPU float32 {ec:.3e}, "
                            f"{F32_FLOOR:.0e})")
    assert not failures, f"{case.id} B={n}:\n" + "\n".join(failures)


def selected_methods():
    """METHODS, or those named in GRID_RBD_GPU_METHODS (comma-separated keys of METHODS: a session that checks new
    rows on every robot without the time of all the others)"""
    names = [m for m in os.environ.get("GRID_RBD_GPU_METHODS", "").split(",") if m]
    unknown = [m for m in names if m not in METHODS]
    assert not unknown, f"GRID_RBD_GPU_METHODS names no method of test_cuda.METHODS: {unknown}"
    return names or list(METHODS)


@pytest.mark.parametrize("n", BATCHES)
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_matches_reference(case, n):
    check_case(case, n, selected_methods())


@pytest.mark.parametrize("case", [c for c in CASES if c.id in BIG_CASES], ids=lambda c: c.id)
def test_matches_reference_large_batch(case):
    """65536 states: several host round-trip chunks for the wide outputs (minv, crba of the larger robots)"""
    check_case(case, BIG, BIG_METHODS)


@pytest.mark.parametrize("dtype", ("float32", "float64"))
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_every_slot_bitwise_identical(case, dtype):
    """one state copied into all 1000 slots (7 full warps and a partial one) gives bit-identical outputs"""
    h = handle(case, "cuda64" if dtype == "float64" else "cuda32")
    one = states(h, 1, 12345, np.dtype(dtype))
    many = {k: np.ascontiguousarray(np.repeat(v, 1000, axis=0)) for k, v in one.items()}
    for name, call in METHODS.items():
        if name.startswith("end_effector") and h.num_ees == 0:
            continue
        first = call(h, one, None)
        out = call(h, many, None)
        assert np.isfinite(out).all(), name
        flat = out.reshape(1000, -1).view(np.uint32 if dtype == "float32" else np.uint64)
        assert (flat == flat[0]).all(), f"{case.id} {name}: outputs differ between batch slots"
        assert np.array_equal(first.reshape(1, -1).view(flat.dtype)[0], flat[0]), \
            f"{case.id} {name}: B=1 and B=1000 differ"


def _torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA device")
    return torch


def _slot_diff(got, want):
    """where two batches differ: how many slots and elements, the first and last slot, the largest difference"""
    bad = ~((got == want) | (np.isnan(got) & np.isnan(want)))
    slots = np.flatnonzero(bad.reshape(len(got), -1).any(axis=1))
    big = np.nanmax(np.abs(got - want)) / max(np.nanmax(np.abs(want)), 1e-300)
    return (f"{len(slots)} of {len(got)} slots ({int(bad.sum())} elements) differ, slots {slots[:1]}..{slots[-1:]}, "
            f"largest difference {big:.2e} of the largest entry")


@pytest.mark.parametrize("dtype", ("float32", "float64"))
@pytest.mark.parametrize("case", [c for c in CASES if c.id in TORCH_CASES], ids=lambda c: c.id)
def test_torch_device_arrays_equal_numpy(case, dtype):
    """device tensors go straight to grid_cuda_<algo> on torch's current stream: bit-identical to the numpy path"""
    torch = _torch()
    h = handle(case, "cuda64" if dtype == "float64" else "cuda32")
    n = 1000
    s = states(h, n, 4242, np.dtype(dtype))
    ts = {k: torch.from_numpy(v).cuda() for k, v in s.items()}
    side = torch.cuda.Stream()
    for name, call in METHODS.items():
        if name.startswith("end_effector") and h.num_ees == 0:
            continue
        want = call(h, s, None)
        tout = torch.full(want.shape, float("nan"), dtype=ts["q"].dtype, device="cuda")
        side.wait_stream(torch.cuda.current_stream())  # tout was filled on the default stream
        with torch.cuda.stream(side):
            got = call(h, ts, tout)
        side.synchronize()
        assert got is tout
        assert np.array_equal(got.cpu().numpy(), want), \
            f"{case.id} {name}: torch path differs from numpy path: {_slot_diff(got.cpu().numpy(), want)}"
        fresh = call(h, ts, None)  # out=None: torch.empty on q's device
        torch.cuda.synchronize()
        assert fresh.is_cuda and fresh.dtype == ts["q"].dtype and tuple(fresh.shape) == want.shape
        assert np.array_equal(fresh.cpu().numpy(), want), \
            f"{case.id} {name}: allocated output differs: {_slot_diff(fresh.cpu().numpy(), want)}"


MUJOCO_CASES = ("go2_ff", "g1_29dof_ff", "synthetic_ff")


@pytest.mark.parametrize("case", [c for c in CASES if c.id in MUJOCO_CASES], ids=lambda c: c.id)
def test_mujoco_convention_on_cuda(case):
    """output_convention="mujoco" on CUDA: the host round trip (chunks converted on the device) and torch device arrays
    (converted inputs in stream-ordered scratch) against the CPU reference in the same convention, float64 to 1e-10 at
    B = 1, 7, 1000; the library is the Pinocchio handle's"""
    path = robot_path(case)
    common = dict(urdf_path=path, floating_base=True, verbose=False, output_convention="mujoco")
    h = grid_rbd.register_robot(f"{case.id}_gpu_mj64", dtype="float64", device="cuda", **common)
    ref = grid_rbd.register_robot(f"{case.id}_gpu_mj_ref", dtype="float64", codegen=False, device="cpu", **common)
    assert h.device == "cuda" and h.library_path == handle(case, "cuda64").library_path
    for n in (1, 7, 1000):
        s = states(h, n, 77 + n, np.float64)
        for name, call in METHODS.items():
            if name.startswith("end_effector") and h.num_ees == 0:
                continue
            want = call(ref, s, None)
            got = call(h, s, poisoned(want.shape, np.float64))
            err = block_errors(got, want)
            assert err.max() <= RTOL64, f"{case.id} {name} B={n}: {err.max():.2e}"
    try:
        torch = _torch()
    except pytest.skip.Exception:
        return
    s = states(h, 1000, 5, np.float64)
    ts = {k: torch.from_numpy(v).cuda() for k, v in s.items()}
    for name, call in METHODS.items():
        if name.startswith("end_effector") and h.num_ees == 0:
            continue
        want = call(h, s, None)
        got = call(h, ts, None)
        torch.cuda.synchronize()
        assert block_errors(got.cpu().numpy(), want).max() <= 1e-13, f"{case.id} {name}: device arrays differ"
        assert np.array_equal(ts["q"].cpu().numpy(), s["q"]) and np.array_equal(ts["qd"].cpu().numpy(), s["qd"])


@pytest.mark.parametrize("case", [c for c in CASES if c.id in ("iiwa", "go2_ff")], ids=lambda c: c.id)
def test_one_state_without_the_batch_axis(case):
    """one state of shape (nq,): host arrays and torch device tensors, outputs without the batch axis, bitwise the
    batched call's row"""
    h = handle(case, "cuda64")
    s = states(h, 3, 99, np.float64)
    one = {k: np.ascontiguousarray(v[1]) for k, v in s.items()}
    for name, call in METHODS.items():
        if name.startswith("end_effector") and h.num_ees == 0:
            continue
        want = call(h, s, None)[1]
        got = call(h, one, None)
        assert got.shape == want.shape and np.array_equal(got, want), f"{case.id} {name}: host one state"
    try:
        torch = _torch()
    except pytest.skip.Exception:
        return
    ts = {k: torch.from_numpy(v).cuda() for k, v in one.items()}
    for name, call in METHODS.items():
        if name.startswith("end_effector") and h.num_ees == 0:
            continue
        want = call(h, s, None)[1]
        got = call(h, ts, None)
        torch.cuda.synchronize()
        assert tuple(got.shape) == want.shape and np.array_equal(got.cpu().numpy(), want), f"{case.id} {name}: device"
    with pytest.raises(ValueError, match="one state"):
        h.inverse_dynamics(ts["q"], torch.zeros((1, h.nv), dtype=torch.float64, device="cuda"))


def test_device_array_errors():
    torch = _torch()
    case = next(c for c in CASES if c.id == "iiwa")
    h = handle(case, "cuda32")
    q = torch.zeros((4, h.nq), dtype=torch.float32, device="cuda")
    with pytest.raises(ValueError, match="float32"):
        h.inverse_dynamics(q.double(), q.double())
    with pytest.raises(ValueError, match="shape"):
        h.inverse_dynamics(q, torch.zeros((5, h.nv), dtype=torch.float32, device="cuda"))
    with pytest.raises(ValueError, match="contiguous"):
        h.crba(torch.zeros((h.nq, 4), dtype=torch.float32, device="cuda").t())
    with pytest.raises(ValueError, match="out must be"):
        h.crba(q, out=torch.zeros((4, h.nv), dtype=torch.float32, device="cuda"))
    with pytest.raises(TypeError, match="qd is required"):
        h.inverse_dynamics(q, None)


def test_failures_raise():
    """an allocation the GPU cannot satisfy raises CudaError (never zeros), and the handle works afterwards"""
    case = next(c for c in CASES if c.id == "iiwa")
    h = handle(case, "cuda32")
    with pytest.raises(grid_rbd.CudaError, match="cudaMalloc"):
        h.reserve(10 ** 13)
    s = states(h, 300, 1, np.float32)
    ref = handle(case, "ref").inverse_dynamics(s["q"].astype(np.float64), s["qd"].astype(np.float64))
    assert block_errors(h.inverse_dynamics(s["q"], s["qd"]), ref).max() < 1e-4
    # a batch too large for one launch is refused before anything runs
    lib = h.cuda_library
    with pytest.raises(grid_rbd.GridArgumentError):
        lib.call(grid_rbd._core.ALGO_CRBA, (256,), (256,), 2 ** 31 * 128, (), 0)


def test_runtime_entry_points():
    case = next(c for c in CASES if c.id == "iiwa")
    h = handle(case, "cuda32")
    info = json.loads(h.cuda_library.device_info())
    assert info["sms"] > 0 and info["cc"].count(".") == 1 and info["real_bytes"] == 4
    h.cuda_library.noop(0)
    ev, wall = h.cuda_library.time(0, 2, (), (), 0, (), 0, 5, 2, True)
    assert len(ev) == len(wall) == 5 and min(wall) > 0
    s = states(h, 64, 3, np.float32)
    out = h.pinned_empty((64, h.nv))
    out[...] = np.nan
    ev, wall = h.cuda_library.time(0, 1, (s["q"].ctypes.data, s["qd"].ctypes.data, 0, 0), (out.ctypes.data,), 64, (),
                                   0, 3, 1, False)
    assert ev is None and len(wall) == 3 and np.isfinite(out).all()


def test_auto_picks_cuda():
    case = next(c for c in CASES if c.id == "iiwa")
    h = grid_rbd.register_robot("iiwa_gpu_auto", urdf_path=robot_path(case), verbose=False)
    assert h.device == "cuda" and "auto: found" in repr(h), repr(h)
