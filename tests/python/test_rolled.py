"""The rolled schedule (codegen_schedule="rolled": loops over the body tables, docs/emitter.md "Schedules") against
the float64 reference on every method, variant and Jacobian frame: float64 to 1e-12 per block, float32 to the
bounds of test_codegen; and the same robot's unrolled library gives the same numbers."""

import numpy as np
import pytest

import grid_rbd
from robot_cases import CASES, STATE_KINDS, case_path, make_states, synthetic_dir
from test_codegen import (FLOAT32_COND_RTOL, FLOAT32_GRAD_RTOL, FLOAT32_RTOL, RTOL64, float64_bounds, all_outputs, assert_independent_of_base_position,
                          errors64, lambda_cond, pose_as_matrices, relative)

# fixed and floating bases, revolute / continuous / prismatic joints, branching trees, a multi-root robot
ROLLED_CASES = ("iiwa", "hyq_ff", "go2", "g1_29dof_ff", "atlas_ff", "synthetic", "synthetic_ff", "talos_ff", "joints",
                "joints_ff")
N = 6
# float32 on a subset (fixed and floating, branching, every joint type, ill-conditioned, the largest): CI time
ROLLED_F32 = ("iiwa", "g1_29dof_ff", "atlas_ff", "synthetic_ff", "joints_ff")


def case_by_id(cid):
    return next(c for c in CASES if c.id == cid)


@pytest.fixture(scope="module", params=ROLLED_CASES)
def rolled(request):
    case = case_by_id(request.param)
    path = case_path(case, synthetic_dir())
    # the session cache: test_derivatives' rolled gradients of iiwa and joints_ff load the same libraries
    kw = dict(urdf_path=path, floating_base=case.floating_base, ignore_mimic=case.ignore_mimic, verbose=False)
    ref = grid_rbd.register_robot(case.id + "_rref", codegen=False, dtype="float64", **kw)
    r64 = grid_rbd.register_robot(case.id + "_r64", dtype="float64", codegen_schedule="rolled", **kw)
    r32 = (grid_rbd.register_robot(case.id + "_r32", dtype="float32", codegen_schedule="rolled", **kw)
           if case.id in ROLLED_F32 else None)
    return case, ref, r64, r32


def test_the_rolled_library_is_rolled(rolled):
    case, ref, r64, r32 = rolled
    src = open(r64.library_path[:-len("robot.so")] + "robot.c").read()
    # every per-state function is a loop nest over the tables, with workspace stated in the rows
    for fn in ("rnea_a", "crba", "minv", "fd_0", "aba_0", "fk", "frame_jacobian", "rnea_grad"):
        # (on the C target the dynamics run on lane vectors, FK and the Jacobian on scalars)
        assert f"/* {fn}, rolled schedule:" in src or f"/* {fn}, rolled schedule on lane vectors:" in src, fn
    for fn in ("rnea_a", "crba", "minv", "rnea_grad"):
        assert f"/* {fn}, rolled schedule on lane vectors:" in src, fn
    assert "grid_body_" in src and "switch (grid_kind_[i]" in src
    assert r64._library.meta["work_bytes"] > 0
    assert r64.build_info["codegen_schedule"] == "rolled"


@pytest.mark.parametrize("kind", STATE_KINDS)
def test_rolled_float64_matches_reference(rolled, kind):
    case, ref, r64, _ = rolled
    if kind == "nonunit_quaternion" and not case.floating_base:
        pytest.skip("non-unit quaternions need a floating base")
    s = make_states(ref, kind, N, seed=5)
    bounds = float64_bounds(ref, s)
    failures = []
    for (label, a), (_, b) in zip(all_outputs(r64, s), all_outputs(ref, s)):
        if label.startswith("end_effector_pose"):
            # an angle at exactly +-pi (the zero state of hyq's feet) is +pi or -pi depending on the last bit
            # of a rotation entry: compare the rotation itself ([xyz, R]), to the same 1e-12
            a, b = pose_as_matrices(a), pose_as_matrices(b)
        err = errors64(a, b)
        if not np.all(err <= bounds(label, b)):
            worst = int(np.argmax(err))
            failures.append(f"{label}: state {worst} relative error {err[worst]:.2e}")
    assert not failures, f"{case.id} [{kind}] rolled float64 differs from the reference:\n" + "\n".join(failures)


def test_rolled_float32_accuracy(rolled):
    case, ref, _, r32 = rolled
    if r32 is None:
        pytest.skip(f"{case.id}: the rolled float32 library is built for ROLLED_F32 only")
    failures = []
    s32 = {k: v.astype(np.float32) for k, v in make_states(ref, "random", N, seed=7).items()}
    s64 = {k: v.astype(np.float64) for k, v in s32.items()}
    cond = np.linalg.cond(ref.crba(s64["q"]))
    # the operational-space inertia's rank decision has a tolerance per dtype: its reference is the float32 rule's
    ref32 = grid_rbd.register_robot(case.id + "_rref32", urdf_path=case_path(case, synthetic_dir()), codegen=False,
                                    dtype="float32", floating_base=case.floating_base, ignore_mimic=case.ignore_mimic,
                                    verbose=False)
    for (label, a), (_, b), (_, b32) in zip(all_outputs(r32, s32), all_outputs(ref, s64), all_outputs(ref32, s32)):
        assert a.dtype == np.float32, label
        if label.startswith("osc_inertia"):
            b = b32
        if label.startswith("end_effector_pose"):
            a, b = pose_as_matrices(a), pose_as_matrices(b)
        err = relative(a, b)
        inverse = label.startswith(("minv", "forward_dynamics", "aba"))
        grad = label.startswith("inverse_dynamics_gradient")
        bound = FLOAT32_COND_RTOL * cond if inverse else np.full_like(err, FLOAT32_GRAD_RTOL if grad else FLOAT32_RTOL)
        if label.startswith("osc_inertia"):
            bound = FLOAT32_COND_RTOL * cond * lambda_cond(b)
        if not np.all(err <= bound):
            i = int(np.argmax(err / bound))
            failures.append(f"{label}: state {i} error {err[i]:.2e} > {bound[i]:.1e}")
    assert not failures, f"{case.id} rolled float32:\n" + "\n".join(failures)


def test_rolled_threads_and_single_states_agree(rolled):
    """the per-thread workspace slices: a threaded batch gives bitwise the single-thread result"""
    case, ref, r64, _ = rolled
    s = make_states(ref, "random", 4096, seed=9)  # large enough for a thread team
    r64.num_threads = 1
    one = [r64.minv(s["q"]), r64.aba(s["q"], s["qd"], s["u"]), r64.crba(s["q"])]
    r64.num_threads = 2
    two = [r64.minv(s["q"]), r64.aba(s["q"], s["qd"], s["u"]), r64.crba(s["q"])]
    for a, b in zip(one, two):
        assert np.array_equal(a, b)
    assert np.array_equal(r64.minv(s["q"][3:4]), one[0][3:4])


def test_rolled_dynamics_do_not_depend_on_the_base_position(rolled):
    """the world-frame CRBA and M^-1 of the rolled schedule put the frame's origin at each root (M is the same in
    any world-aligned frame): with the world origin itself, M's entries lost digits as the square of the base's
    distance (3e-8 absolute on g1 at 1 km, 0.5 in h1_2's M^-1)"""
    case, ref, r64, _ = rolled
    if not case.floating_base:
        pytest.skip("a fixed base does not move")
    failures = assert_independent_of_base_position(r64, ref, seed=13)
    assert not failures, f"{case.id}: the base's position changes the rolled dynamics:\n" + "\n".join(failures)
