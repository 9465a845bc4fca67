"""The generated robot.so against the float64 reference (the oracle): float64 to 1e-12 per output block, float32
to 1e-5 (dynamics without inversion, kinematics) or 1e-6 * cond(M) (minv, FD, ABA), on every robot case.

The float32 errors achieved and cond(M) per robot are printed (pytest -s) and written to
build/float32_accuracy.md at the end of the module."""

import time

import numpy as np
import pytest

from grid_rbd._signatures import ROWS
from robot_cases import REPO, STATE_KINDS, handle_for, make_states

# float64 generated vs reference, per state block: ||gen - ref||_F <= RTOL64 * max(||ref||_F, FLOOR * scale),
# scale = the largest block norm of that output over the batch (at least 1). The floor keeps a block whose
# reference is zero by symmetry (a gravity torque about a vertical axis) from being compared relative to
# its own rounding noise: such a block must be zero to 1e-12 of the output's scale.
RTOL64 = 1e-12
FLOOR = 1.0

# float32 generated vs float64 reference on the same (float32-representable) inputs
FLOAT32_RTOL = 1e-5          # RNEA, NLE, gravity, CRBA, FK, EE pose, Jacobian
FLOAT32_COND_RTOL = 1e-6     # minv, FD, ABA and the FD gradient: <= 1e-6 * cond(M) of the state; the
                             # operational-space inertia: <= 1e-6 * cond(M) * cond(Lambda)
# the RNEA gradient: sums of products of velocities, inertias and lever arms whose terms cancel more than RNEA's
# (measured worst 2.6e-6 on the test robots at |qd| <= 10, |qdd| <= 50); the bound does not depend on the state
FLOAT32_GRAD_RTOL = 2e-5

N = 8  # states per kind
REF_PATHS = {}  # case id -> URDF path (the handles fixture's)

# method -> call(handle, states)
METHODS = {
    "inverse_dynamics": lambda h, s: h.inverse_dynamics(s["q"], s["qd"], s["qdd"]),
    "inverse_dynamics_qdd_none": lambda h, s: h.inverse_dynamics(s["q"], s["qd"]),
    "inverse_dynamics_f_ext": lambda h, s: h.inverse_dynamics(s["q"], s["qd"], s["qdd"], f_ext=s["f_ext"]),
    "inverse_dynamics_f_ext_qdd_none": lambda h, s: h.inverse_dynamics(s["q"], s["qd"], f_ext=s["f_ext"]),
    "nonlinear_effects": lambda h, s: h.nonlinear_effects(s["q"], s["qd"]),
    "generalized_gravity": lambda h, s: h.generalized_gravity(s["q"]),
    "crba": lambda h, s: h.crba(s["q"]),
    "minv": lambda h, s: h.minv(s["q"]),
    "forward_dynamics": lambda h, s: h.forward_dynamics(s["q"], s["qd"], s["u"]),
    "forward_dynamics_f_ext": lambda h, s: h.forward_dynamics(s["q"], s["qd"], s["u"], f_ext=s["f_ext"]),
    "aba": lambda h, s: h.aba(s["q"], s["qd"], s["u"]),
    "aba_f_ext": lambda h, s: h.aba(s["q"], s["qd"], s["u"], f_ext=s["f_ext"]),
    "forward_kinematics": lambda h, s: h.forward_kinematics(s["q"]),
    "end_effector_pose": lambda h, s: h.end_effector_pose(s["q"]),
    "inverse_dynamics_gradient": lambda h, s: h.inverse_dynamics_gradient(s["q"], s["qd"], s["qdd"]),
    "inverse_dynamics_gradient_qdd_none": lambda h, s: h.inverse_dynamics_gradient(s["q"], s["qd"]),
    "inverse_dynamics_gradient_f_ext": lambda h, s: h.inverse_dynamics_gradient(s["q"], s["qd"], s["qdd"],
                                                                                f_ext=s["f_ext"]),
    "forward_dynamics_gradient": lambda h, s: h.forward_dynamics_gradient(s["q"], s["qd"], s["u"]),
    "forward_dynamics_gradient_f_ext": lambda h, s: h.forward_dynamics_gradient(s["q"], s["qd"], s["u"],
                                                                                f_ext=s["f_ext"]),
    "inverse_dynamics_vjp": lambda h, s: h.inverse_dynamics_vjp(s["q"], s["qd"], s["g"], s["qdd"], s["f_ext"]),
    "inverse_dynamics_vjp_qdd_none": lambda h, s: h.inverse_dynamics_vjp(s["q"], s["qd"], s["g"]),
    "forward_dynamics_vjp": lambda h, s: h.forward_dynamics_vjp(s["q"], s["qd"], s["u"], s["g"]),
    "forward_dynamics_vjp_f_ext": lambda h, s: h.forward_dynamics_vjp(s["q"], s["qd"], s["u"], s["g"], f_ext=s["f_ext"]),
    "energy": lambda h, s: h.energy(s["q"], s["qd"]),
    "kinetic_energy_regressor": lambda h, s: h.kinetic_energy_regressor(s["q"], s["qd"]),
    "potential_energy_regressor": lambda h, s: h.potential_energy_regressor(s["q"]),
    "coriolis_matrix": lambda h, s: h.coriolis_matrix(s["q"], s["qd"]),
    "com": lambda h, s: np.concatenate([x.reshape(len(s["q"]), -1) for x in h.com(s["q"])], axis=1),
    "ccrba": lambda h, s: np.concatenate([x.reshape(len(s["q"]), -1) for x in h.ccrba(s["q"], s["qd"])], axis=1),
    "cmm_time_variation": lambda h, s: h.cmm_time_variation(s["q"], s["qd"]),
    "dccrba": lambda h, s: h.dccrba(s["q"]),
    "fk_batched": lambda h, s: h.fk_batched(s["q"]),
    "inverse_dynamics_regressor": lambda h, s: h.inverse_dynamics_regressor(s["q"], s["qd"], s["qdd"]),
}
# (the end-effector pose gradient is not among them: its rpy rows are infinite at pitch = +-pi/2, where a state of
# some robots sits exactly; tests/python/test_derivatives.py checks it on states away from that)
JACOBIAN_FRAMES = ("WORLD", "LOCAL", "LOCAL_WORLD_ALIGNED")


def kinds(case):
    return [k for k in STATE_KINDS if k != "nonunit_quaternion" or case.floating_base]


def jacobian_frames(h):
    """every end effector, a frame half-way down the list, the root link"""
    return sorted(set(list(h.ee_frame_ids) + [len(h.frame_names) // 2, 0]))


def all_outputs(h, s):
    """(label, output) for every method and every Jacobian frame/reference frame"""
    for name, fn in METHODS.items():
        yield name, fn(h, s)
    for fid in jacobian_frames(h):
        for rf in JACOBIAN_FRAMES:
            yield f"frame_jacobian[{h.frame_names[fid]},{rf}]", h.frame_jacobian(s["q"], fid, rf)
            yield f"frame_jacobian_dot[{h.frame_names[fid]},{rf}]", h.frame_jacobian_dot(s["q"], s["qd"], fid, rf)
    for fid in jacobian_frames(h):
        for rf in JACOBIAN_FRAMES:
            yield f"osc_inertia[{h.frame_names[fid]},{rf}]", h.osc_inertia(s["q"], fid, rf)
    # the Jacobian frames as targets chosen per call, with tool offsets (the pose: its gradient's rpy rows are
    # infinite at pitch = +-pi/2, test_pinocchio_crosscheck checks it away from there)
    frames = jacobian_frames(h)
    offsets = np.linspace(-0.2, 0.3, 3 * len(frames)).reshape(-1, 3)
    yield "end_effector_pose_runtime", h.end_effector_pose_runtime(s["q"], frames, offsets)


def float64_bounds(ref, s):
    """(label, reference output) -> per-state float64 bound: RTOL64, except for the forward-dynamics gradient, -M^-1 D, whose two
    float64 implementations may differ by eps * cond(M) (the first-order bound of a product with M^-1): on atlas_ff
    (indefinite link inertias, cond(M) ~ 5e5) at |qd| <= 10 the generated code was 3.8e-13 from Pinocchio's
    computeABADerivatives and the reference 2.1e-12 from it (the reference is the less accurate one there); and the
    operational-space inertia, whose inverse of J M^-1 J^T adds cond(Lambda): eps * cond(M) * cond(Lambda)"""
    cond = np.linalg.cond(ref.crba(s["q"]))
    grad = np.maximum(RTOL64, np.finfo(np.float64).eps * cond)

    def bound(label, out):
        if label.startswith("osc_inertia"):
            # (J M^-1 J^T)^-1 from M^-1 here and a solve with M there: eps * cond(M) * cond(Lambda)
            return np.maximum(RTOL64, np.finfo(np.float64).eps * cond * lambda_cond(out))
        return grad if label.startswith(("forward_dynamics_gradient", "forward_dynamics_vjp")) else RTOL64
    return bound


def lambda_cond(out):
    """per state, the condition number of Lambda on its nonzero block (the directions the rule keeps; 1 for none)"""
    sv = np.linalg.svd(np.asarray(out, dtype=np.float64), compute_uv=False)
    kept = np.where(sv > 1e-9 * np.maximum(sv[:, :1], 1e-300), sv, np.inf).min(axis=1)
    return np.where(sv[:, 0] > 0, sv[:, 0] / kept, 1.0)


def errors64(gen, ref):
    gen = np.asarray(gen, dtype=np.float64).reshape(len(gen), -1)
    ref = np.asarray(ref, dtype=np.float64).reshape(len(ref), -1)
    norms = np.linalg.norm(ref, axis=1)
    scale = max(1.0, float(norms.max(initial=0.0)))
    return np.linalg.norm(gen - ref, axis=1) / np.maximum(norms, FLOOR * scale)


def rpy_to_matrix(rpy):
    """rotation matrices (..., 3, 3) of Pinocchio's rpy angles (R = Rz(yaw) Ry(pitch) Rx(roll))"""
    r, p, y = np.moveaxis(np.asarray(rpy, dtype=np.float64), -1, 0)
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    return np.stack([np.stack([cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr], -1),
                     np.stack([sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr], -1),
                     np.stack([-sp, cp * sr, cp * cr], -1)], -2)


def pose_as_matrices(pose):
    """(B, 6 nee) [xyz rpy] -> (B, nee * 12) [xyz, R]: angles near +-pi (or a pitch of +-pi/2) have several
    representations, and float32 rounding may pick another one of the same rotation"""
    pose = np.asarray(pose, dtype=np.float64).reshape(len(pose), -1, 6)
    R = rpy_to_matrix(pose[..., 3:]).reshape(len(pose), pose.shape[1], 9)
    return np.concatenate([pose[..., :3], R], axis=-1).reshape(len(pose), -1)


def relative(gen, ref):
    """relative Frobenius error per state block (a zero reference block is compared absolutely)"""
    gen = np.asarray(gen, dtype=np.float64).reshape(len(gen), -1)
    ref = np.asarray(ref, dtype=np.float64).reshape(len(ref), -1)
    return np.linalg.norm(gen - ref, axis=1) / np.maximum(np.linalg.norm(ref, axis=1), 1e-30)


@pytest.fixture(scope="module")
def handles(robot_case):
    case, path = robot_case
    REF_PATHS[case.id] = path
    return (case, handle_for(case, path, "generated", "float64"), handle_for(case, path, "reference", "float64"),
            handle_for(case, path, "generated", "float32") if case.float32 else None)


def test_handles_use_the_generated_library(handles):
    case, gen, ref, gen32 = handles
    assert gen.provider == "generated" and ref.provider == "reference"
    assert gen.library_path.endswith("/robot.so")
    if gen32 is not None:
        assert gen32.provider == "generated" and gen.library_path != gen32.library_path
    assert ref.library_path is None and ref.cache_entry is None and ref.build_info is None
    # every row from the library but the opt-in ones a default library leaves out (the handle refuses those)
    sources = gen._runner.algorithm_sources
    assert all(s == "provider" or ROWS[k]["opt_in"] for k, s in enumerate(sources)), sources


@pytest.mark.parametrize("kind", STATE_KINDS)
def test_generated_float64_matches_reference(handles, kind):
    case, gen, ref, _ = handles
    if kind not in kinds(case):
        pytest.skip("non-unit quaternions need a floating base")
    s = make_states(ref, kind, N, seed=11)
    bounds = float64_bounds(ref, s)
    failures = []
    for (label, a), (_, b) in zip(all_outputs(gen, s), all_outputs(ref, s)):
        assert a.dtype == np.float64 and a.shape == b.shape, label
        if label.startswith("end_effector_pose"):
            # at a pitch of +-pi/2 (atlas's zero state) roll and yaw are not separately defined: rounding picks the
            # split, so the rotation they make is compared (the xyz rows are compared as they are)
            a, b = pose_as_matrices(a), pose_as_matrices(b)
        err = errors64(a, b)
        if not np.all(err <= bounds(label, b)):
            worst = int(np.argmax(err))
            failures.append(f"{label}: state {worst} relative error {err[worst]:.2e}")
    assert not failures, f"{case.id} [{kind}] generated float64 differs from the reference:\n" + "\n".join(failures)


# ---- float32 ----
_accuracy = {}  # case id -> {"cond": (min, max), method: worst error, ...}


@pytest.fixture(scope="module", autouse=True)
def float32_report():
    """write what the float32 test measured, one row per robot, once the module is done"""
    yield
    if not _accuracy:
        return
    cols = ["inverse_dynamics", "nonlinear_effects", "generalized_gravity", "crba", "forward_kinematics",
            "end_effector_pose", "frame_jacobian", "inverse_dynamics_gradient", "inverse_dynamics_vjp", "minv",
            "forward_dynamics", "aba", "forward_dynamics_gradient", "forward_dynamics_vjp", "osc_inertia"]
    short = ["RNEA", "NLE", "gravity", "CRBA", "FK", "EE pose", "Jacobian", "RNEA grad", "RNEA VJP", "minv", "FD",
             "ABA", "FD grad", "FD VJP", "OSC inertia"]
    lines = [f"# float32 generated code vs the float64 reference ({time.strftime('%Y-%m-%d')})", "",
             f"Worst relative Frobenius error per state block over {N} states of each kind "
             f"({', '.join(STATE_KINDS)}), float32-representable inputs; every variant (f_ext, qdd=None) and Jacobian "
             "frame/reference frame of a method in one column; end-effector poses compared as [xyz, R(rpy)]. "
             f"Bounds: {FLOAT32_RTOL:g} for the first seven "
             f"columns, {FLOAT32_GRAD_RTOL:g} for the RNEA gradient; {FLOAT32_COND_RTOL:g} * cond(M) of the state for "
             "minv, FD, ABA and the FD gradient; that times cond(Lambda) for the operational-space inertia, against the "
             "float32 rule's reference (the last column is the worst "
             "error / (1e-6 cond(M)) ratio of those four, which must stay <= 1).", "",
             "| robot | cond(M) min..max | " + " | ".join(short) + " | minv/FD/ABA vs bound |",
             "|---" * (len(short) + 3) + "|"]
    for cid, row in _accuracy.items():
        lo, hi = row["cond"]
        cells = [f"{row.get(c, float('nan')):.1e}" for c in cols]
        lines.append(f"| {cid} | {lo:.1e}..{hi:.1e} | " + " | ".join(cells) + f" | {row['ratio']:.1e} |")
    out = REPO / "build" / "float32_accuracy.md"
    out.parent.mkdir(exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    print("\n" + "\n".join(lines) + f"\n(written to {out})")


def family(label):
    """the report column of an output: the f_ext / qdd=None variants and every Jacobian frame share one"""
    for name in ("inverse_dynamics_gradient", "forward_dynamics_gradient", "inverse_dynamics_vjp", "forward_dynamics_vjp",
                 "inverse_dynamics", "forward_dynamics", "aba", "frame_jacobian", "osc_inertia"):
        if label.startswith(name):
            return name
    return label


def test_generated_float32_accuracy(handles):
    case, _, ref, gen32 = handles
    if gen32 is None:
        pytest.skip(f"{case.id}: float32 is compiled for a subset of the robots (robot_cases.CASES)")
    row = {"cond": (np.inf, 0.0), "ratio": 0.0}
    failures = []
    for kind in kinds(case):
        s32 = {k: v.astype(np.float32) for k, v in make_states(ref, kind, N, seed=23).items()}
        s64 = {k: v.astype(np.float64) for k, v in s32.items()}
        cond = np.linalg.cond(ref.crba(s64["q"]))
        row["cond"] = (min(row["cond"][0], cond.min()), max(row["cond"][1], cond.max()))
        # the operational-space inertia's rank decision has a tolerance per dtype: its reference is the float32
        # rule's (the float64 reference provider asked for float32)
        ref32 = handle_for(case, REF_PATHS[case.id], "reference", "float32")
        for (label, a), (_, b), (_, b32) in zip(all_outputs(gen32, s32), all_outputs(ref, s64), all_outputs(ref32, s32)):
            assert a.dtype == np.float32, label
            if label.startswith("osc_inertia"):
                b = b32
            if label.startswith("end_effector_pose"):
                a, b = pose_as_matrices(a), pose_as_matrices(b)
            err = relative(a, b)
            key = family(label)
            row[key] = max(row.get(key, 0.0), float(err.max()))
            if key == "osc_inertia":
                bound = FLOAT32_COND_RTOL * cond * lambda_cond(b)
            elif key in ("minv", "forward_dynamics", "aba", "forward_dynamics_gradient", "forward_dynamics_vjp"):
                bound = FLOAT32_COND_RTOL * cond
                row["ratio"] = max(row["ratio"], float((err / bound).max()))
            else:
                grad = key in ("inverse_dynamics_gradient", "inverse_dynamics_vjp")
                bound = np.full_like(err, FLOAT32_GRAD_RTOL if grad else FLOAT32_RTOL)
            bad = np.flatnonzero(~(err <= bound))
            if bad.size:
                i = int(bad[np.argmax(err[bad] / bound[bad])])
                failures.append(f"{label} [{kind}]: state {i} error {err[i]:.2e} > bound {bound[i]:.1e} "
                                f"(cond(M) {cond[i]:.1e})")
    _accuracy[case.id] = row
    print(f"\n{case.id}: cond(M) {row['cond'][0]:.1e}..{row['cond'][1]:.1e}; worst float32 errors: " +
          ", ".join(f"{k} {v:.1e}" for k, v in row.items() if k not in ("cond", "ratio")))
    assert not failures, f"{case.id} float32 generated vs float64 reference:\n" + "\n".join(failures)


# ---- where the floating base is ----
# every dynamics output (Pinocchio's local free-flyer convention, uniform gravity) is the same wherever the base
# stands; kinematics are not (they are world placements, the centre of mass too), nor is the potential energy (it
# is the height)
DYNAMICS = [m for m in METHODS if m not in ("forward_kinematics", "end_effector_pose", "fk_batched", "energy",
                                           "potential_energy_regressor", "com")]
FAR = np.array([1000.0, -700.0, 300.0])


def assert_independent_of_base_position(h, ref, seed):
    """h's dynamics at the base moved 1.3 km from the origin equal those at the base near it, to RTOL64: a
    world-frame algorithm that lets the lever arm of the base's distance into its sums fails this"""
    s = make_states(ref, "random", N, seed=seed)
    far = dict(s, q=s["q"].copy())
    far["q"][:, :3] += FAR
    failures = []
    for name in DYNAMICS:
        a, b = METHODS[name](h, far), METHODS[name](h, s)
        err = errors64(a, b)
        if not np.all(err <= RTOL64):
            worst = int(np.argmax(err))
            failures.append(f"{name}: state {worst} relative change {err[worst]:.2e}")
    return failures


def test_dynamics_do_not_depend_on_the_base_position(handles):
    case, gen, ref, _ = handles
    if not case.floating_base:
        pytest.skip("a fixed base does not move")
    failures = assert_independent_of_base_position(gen, ref, seed=13)
    assert not failures, f"{case.id}: the base's position changes the dynamics:\n" + "\n".join(failures)
