"""Numerical defects: end-effector rpy against pinocchio.rpy.matrixToRpy at roll +-pi and gimbal lock (allegro hand),
and the float32 forward-dynamics gradient at large accelerations (iiwa)."""

import ctypes
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import grid_rbd
from robot_cases import PinMap, example_robot_data_dir

pin = pytest.importorskip("pinocchio")

ALLEGRO_ALGOS = ["end_effector_pose", "forward_kinematics", "ee_pose_grad"]


def _allegro_path():
    d = example_robot_data_dir()
    p = None if d is None else d / "allegro_hand_description/urdf/allegro_right_hand.urdf"
    if p is None or not p.is_file():
        pytest.skip("example-robot-data's allegro hand is not installed")
    return str(p)


@pytest.fixture(scope="module")
def allegro(tmp_path_factory):
    path = _allegro_path()
    cache = tmp_path_factory.mktemp("allegro-cache")
    gen = grid_rbd.register_robot("allegro_num", urdf_path=path, dtype="float64", algorithm_list=ALLEGRO_ALGOS,
                                  cache_dir=cache, verbose=False)
    ref = grid_rbd.register_robot("allegro_num_ref", urdf_path=path, dtype="float64", codegen=False, verbose=False)
    return gen, ref, PinMap(ref, path, False)


def _allegro_states(h):
    """random states, states whose angles are exact multiples (structural zeros, roll exactly +-pi after the pitch
    fold) and finger pitches summing to +-pi/2 (gimbal lock)"""
    names = list(h._model.joint_names)
    rng = np.random.default_rng(0)
    out = [rng.uniform(-1.0, 1.0, (60, h.nq)),
           rng.choice([0.0, 0.5, -0.5, 0.7, -0.7, np.pi / 2, -np.pi / 2, np.pi / 4, np.pi, 1.0], (200, h.nq))]
    for b in (0.6, -0.6, 0.7, np.pi / 6, -np.pi / 6, np.pi / 2 / 3):
        q = np.zeros(h.nq)
        for f in (1, 2, 3, 5, 6, 7, 9, 10, 11):
            q[names.index(f"joint_{f}.0")] = b
        out.append(q[None])
    return np.concatenate(out)


def _ee_rotations(P, h, Q):
    """Pinocchio's world rotation of every end effector, (B, nee, 3, 3)"""
    out = np.empty((len(Q), len(h.ee_names), 3, 3))
    for s, q in enumerate(Q):
        pin.forwardKinematics(P.model, P.data, P.q(q))
        pin.updateFramePlacements(P.model, P.data)
        for e, name in enumerate(h.ee_names):
            out[s, e] = P.data.oMf[P.frame_id(name)].rotation
    return out


def _pin_rpy(Rs):
    return np.array([pin.rpy.matrixToRpy(R) for R in Rs.reshape(-1, 3, 3)]).reshape(Rs.shape[:-1])


def _wrapped(d):
    return np.abs(np.remainder(d + np.pi, 2 * np.pi) - np.pi)


def _edge_rotations():
    """rotations at roll exactly +-pi, pitch +-pi/2 and yaw +-pi, from rpy and from exact sign matrices"""
    rng = np.random.default_rng(1)
    edges = [0.0, np.pi, -np.pi, np.pi / 2, -np.pi / 2, 0.3, -2.0]
    rpys = [(r, p, y) for r in edges for p in edges for y in edges]
    Rs = [pin.rpy.rpyToMatrix(*x) for x in rpys]
    Rs += [pin.rpy.rpyToMatrix(*x) for x in rng.uniform(-np.pi, np.pi, (300, 3))]
    for perm in ([0, 1, 2], [1, 0, 2], [2, 1, 0], [0, 2, 1]):
        for signs in np.array(np.meshgrid(*[[1.0, -1.0]] * 3)).T.reshape(-1, 3):
            R = np.eye(3)[perm] * signs[:, None]
            if np.linalg.det(R) > 0:
                Rs.append(R)
    return np.array(Rs)


def _build_rpy_helper(tmp_path, robot_c):
    """the generated grid_rpy_ helper (and what it calls), cut from robot.c and compiled with the library's default
    tuning flags (-march=native -ffp-contract=fast) into a one-function shared object"""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    text = robot_c.read_text()
    parts = []
    for fn in ("grid_rpy_mul_", "grid_rpy_"):
        m = re.search(r"^[^\n]*\b" + fn + r"\(const grid_real[^\n]*\n\{\n.*?^\}\n", text, re.S | re.M)
        if m is not None:
            parts.append(m.group(0))
    assert parts and "grid_rpy_(" in parts[-1], "robot.c has no grid_rpy_ helper"
    src = tmp_path / "rpy.c"
    src.write_text("#include <math.h>\ntypedef double grid_real;\n" + "\n".join(parts) +
                   "\nvoid rpy_many(const double *R, double *out, int n)\n"
                   "{\n    for (int i = 0; i < n; i++) grid_rpy_(R + 9 * i, out + 3 * i);\n}\n")
    so = tmp_path / "rpy.so"
    subprocess.run([cc, "-O2", "-march=native", "-ffp-contract=fast", "-fno-math-errno", "-std=gnu11", "-fPIC",
                    "-shared", "-o", str(so), str(src), "-lm"], check=True)
    lib = ctypes.CDLL(str(so))
    lib.rpy_many.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int]

    def rpy(Rs):
        Rs = np.ascontiguousarray(Rs, dtype=np.float64).reshape(-1, 9)
        out = np.empty((len(Rs), 3))
        lib.rpy_many(Rs.ctypes.data, out.ctypes.data, len(Rs))
        return out
    return rpy


def test_generated_rpy_helper_is_matrix_to_rpy_bit_for_bit(allegro, tmp_path):
    """the generated rpy, compiled as the library is (fma contraction on), returns pinocchio.rpy.matrixToRpy of the
    same rotation exactly, its sign at roll +-pi included: allegro's rotations, exact edge rotations, random ones"""
    gen, _, P = allegro
    rpy = _build_rpy_helper(tmp_path, Path(gen.cache_entry) / "robot.c")
    Rs = np.concatenate([_ee_rotations(P, gen, _allegro_states(gen)).reshape(-1, 3, 3), _edge_rotations()])
    ours, theirs = rpy(Rs), _pin_rpy(Rs)
    bad = np.flatnonzero(np.any(ours != theirs, axis=1))
    assert bad.size == 0, (f"{bad.size} of {len(Rs)} rotations differ from matrixToRpy; first: R={Rs[bad[0]].ravel()}"
                           f" ours={ours[bad[0]]} pinocchio={theirs[bad[0]]}")


def test_reference_rpy_is_matrix_to_rpy_of_its_rotation(allegro):
    """the reference's pose rpy is matrixToRpy of the rotation its forward kinematics returns, bit for bit"""
    gen, ref, _ = allegro
    Q = _allegro_states(gen)
    pose = ref.end_effector_pose(Q).reshape(len(Q), len(gen.ee_names), 6)
    names = list(gen._model.joint_names)
    bodies = [names.index("joint_" + n[len("link_"):]) for n in gen.ee_names]
    Rs = ref.forward_kinematics(Q)[:, bodies, :3, :3]
    np.testing.assert_array_equal(pose[..., 3:], _pin_rpy(Rs))


def test_ee_rpy_matches_pinocchio_at_pi_and_gimbal_lock(allegro):
    """generated and reference poses against matrixToRpy of Pinocchio's rotation: the same angles (roll +-pi are one
    angle: Pinocchio's representative follows a rounding residual of its own R), the same rotation at gimbal lock"""
    gen, ref, P = allegro
    Q = _allegro_states(gen)
    Rp = _ee_rotations(P, gen, Q)
    want = _pin_rpy(Rp)
    for h in (gen, ref):
        got = h.end_effector_pose(Q).reshape(len(Q), len(gen.ee_names), 6)[..., 3:]
        locked = np.abs(np.abs(want[..., 1]) - np.pi / 2) < 1e-6
        assert locked.any() and (np.abs(np.abs(want[..., 0]) - np.pi) < 1e-12).any()
        err = _wrapped(got - want)
        assert err[~locked].max() < 1e-12, (h.provider, err[~locked].max())
        # at gimbal lock roll and yaw are not separately defined: compare the rotations they rebuild
        rebuilt = np.array([pin.rpy.rpyToMatrix(*x) for x in got[locked]])
        assert np.abs(rebuilt - Rp[locked]).max() < 1e-12, h.provider
        np.testing.assert_allclose(got[locked][:, 1], want[locked][:, 1], atol=1e-7)


def test_ee_pose_grad_at_pi_and_gimbal_lock(allegro):
    """the pose gradient at roll +-pi equals the reference's and central differences (wrapped); at gimbal lock its
    xyz and pitch rows equal the reference's and so do the roll and yaw rows, to their magnitude's precision"""
    gen, ref, P = allegro
    Q = _allegro_states(gen)[-6:]
    Gg, Gr = gen.ee_pose_grad(Q), ref.ee_pose_grad(Q)
    want = _pin_rpy(_ee_rotations(P, gen, Q))
    locked = np.abs(np.abs(want[..., 1]) - np.pi / 2) < 1e-6          # (B, nee)
    rows_locked = np.repeat(locked, 6, axis=1)
    rpy_rows = np.tile([False] * 3 + [True] * 3, len(gen.ee_names))
    roll_yaw = np.tile([False, False, False, True, False, True], len(gen.ee_names))
    free = ~(rows_locked & roll_yaw[None])                              # rows defined everywhere
    scale = np.abs(Gr).max()
    assert np.abs(Gg - Gr)[free].max() < 1e-12 * scale
    # the roll and yaw rows at gimbal lock: turns about world z stay finite; those with a world x or y component
    # grow as 1/cos(pitch) (about 1e16 at the pitch pi/2 rounds to) in both, agreeing to their magnitude's precision
    lr, lg = Gr[rows_locked & roll_yaw[None]], Gg[rows_locked & roll_yaw[None]]
    assert np.all(np.abs(lg - lr) <= 1e-9 * np.maximum(np.abs(lr), 1.0))
    # central differences away from gimbal lock
    eps = 1e-6
    for s in np.flatnonzero(~locked.any(axis=1)):
        qp = Q[s] + eps * np.eye(gen.nq)
        qm = Q[s] - eps * np.eye(gen.nq)
        d = gen.end_effector_pose(qp) - gen.end_effector_pose(qm)
        d[:, rpy_rows] = np.remainder(d[:, rpy_rows] + np.pi, 2 * np.pi) - np.pi
        np.testing.assert_allclose(Gg[s], (d / (2 * eps)).T, atol=1e-7)



@pytest.fixture(scope="module")
def iiwa_fdg(tmp_path_factory):
    from robot_cases import BUNDLED_IIWA
    h32 = grid_rbd.register_robot("iiwa_fdg32", urdf_path=BUNDLED_IIWA, dtype="float32", algorithm_list=["fd_grad"],
                                  cache_dir=tmp_path_factory.mktemp("iiwa-fdg"), verbose=False)
    ref = grid_rbd.register_robot("iiwa_fdg_ref", urdf_path=BUNDLED_IIWA, dtype="float64", codegen=False,
                                  verbose=False)
    return h32, ref


@pytest.mark.parametrize("scale", [1, pytest.param(5, marks=pytest.mark.xfail(strict=True, reason=(
    "not reached: state 2 of the x5 torques (|qdd| up to 957) is 1.1e-2 off; the float32 dtau/dq carries it "
    "(7e-5 on entries of 90, through M^-1 of cond 1.2e3), float32 inputs and constants alone give 2e-5; Pinocchio's "
    "own float32 computeABADerivatives is 3.7e-2 off there and misses 5e-3 on 5 of the 8 states "
    "(bench/RESULTS-float32-fdgrad.md)")))])
def test_float32_fd_grad_at_large_accelerations(iiwa_fdg, scale):
    """iiwa, float32: dqdd/dq within the specification's 5e-3 of the float64 reference on the issue's draw of q, qd,
    u (default_rng(0), (4, 7) each) and with those torques x5 (|qdd_7| = 2211 on state 1)"""
    h32, ref = iiwa_fdg
    rng = np.random.default_rng(0)
    q, qd, u = (rng.standard_normal((4, 7)).astype(np.float32) for _ in range(3))
    u = (u * scale).astype(np.float32)
    got = np.asarray(h32.forward_dynamics_gradient(q, qd, u), dtype=np.float64)
    want = ref.forward_dynamics_gradient(*(np.asarray(x, dtype=np.float64) for x in (q, qd, u)))
    err = np.abs(got - want)[..., :7].max(axis=(1, 2))
    assert err.max() < 5e-3, err
