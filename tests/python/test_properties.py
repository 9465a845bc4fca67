"""Physical and algebraic identities every robot must satisfy, independent of Pinocchio, plus float32 vs float64 agreement."""

import numpy as np
import pytest

from robot_cases import block_errors, make_states

# identities hold to rounding times the conditioning of M; 1e-12 * cond(M) per block (relative Frobenius)
COND_RTOL = 1e-12

# float32 handle vs float64 handle (same provider) on the same float32-representable inputs, relative Frobenius
# per block: 1e-5 for everything that does not invert M, 1e-6 * cond(M) for minv, FD and ABA (float32 cannot do
# better on an ill-conditioned mass matrix). On the reference both run in float64 (results narrowed, ~6e-8).
FLOAT32_RTOL = 1e-5
FLOAT32_COND_RTOL = 1e-6
INVERTING = ("minv", "forward_dynamics", "aba")


def _states(robot, kind="random", n=8):
    return make_states(robot.handle, kind, n, seed=7)


def test_mass_matrix_symmetric_positive_definite(robot):
    h = robot.handle
    for kind in ("random", "zero"):
        M = h.crba(_states(robot, kind)["q"])
        asym = np.linalg.norm(M - M.transpose(0, 2, 1), axis=(1, 2)) / np.linalg.norm(M, axis=(1, 2))
        assert asym.max() <= 1e-14, f"M is not symmetric: {asym.max():.2e}"
        if robot.case.mass_matrix_pd:
            eig = np.linalg.eigvalsh(M)
            assert eig.min() > 0, f"M is not positive definite: smallest eigenvalue {eig.min():.3e}"


def test_mass_matrix_times_minv_is_identity(robot):
    h = robot.handle
    q = _states(robot)["q"]
    M, Minv = h.crba(q), h.minv(q)
    eye = np.broadcast_to(np.eye(h.nv), M.shape)
    for i in range(len(q)):
        cond = np.linalg.cond(M[i])
        err = np.linalg.norm(M[i] @ Minv[i] - eye[i]) / np.sqrt(h.nv)
        assert err <= COND_RTOL * cond, f"state {i}: ||M Minv - I|| = {err:.2e}, cond(M) = {cond:.1e}"
    asym = np.linalg.norm(Minv - Minv.transpose(0, 2, 1), axis=(1, 2)) / np.linalg.norm(Minv, axis=(1, 2))
    assert asym.max() <= 1e-12


@pytest.mark.parametrize("with_f_ext", [False, True], ids=["no_fext", "fext"])
def test_aba_inverts_rnea(robot, with_f_ext):
    h = robot.handle
    for kind in ("random", "high_velocity", "high_acceleration"):
        s = _states(robot, kind)
        f = s["f_ext"] if with_f_ext else None
        tau = h.inverse_dynamics(s["q"], s["qd"], s["qdd"], f_ext=f)
        qdd = h.aba(s["q"], s["qd"], tau, f_ext=f)
        cond = np.linalg.cond(h.crba(s["q"]))
        err = block_errors(qdd, s["qdd"])
        assert np.all(err <= COND_RTOL * cond), f"[{kind}] aba(rnea(qdd)) != qdd: {err.max():.2e}"


def test_forward_dynamics_equals_aba(robot):
    h = robot.handle
    for kind in ("random", "high_velocity", "high_acceleration"):
        s = _states(robot, kind)
        for f in (None, s["f_ext"]):
            fd = h.forward_dynamics(s["q"], s["qd"], s["u"], f_ext=f)
            aba = h.aba(s["q"], s["qd"], s["u"], f_ext=f)
            cond = np.linalg.cond(h.crba(s["q"]))
            assert np.all(block_errors(fd, aba) <= COND_RTOL * cond)


def test_rnea_decomposes_into_mass_matrix_and_bias(robot):
    """rnea(q, qd, qdd) = M qdd + nle(q, qd); nle(q, 0) = gravity(q)"""
    h = robot.handle
    s = _states(robot)
    tau = h.inverse_dynamics(s["q"], s["qd"], s["qdd"])
    M = h.crba(s["q"])
    nle = h.nonlinear_effects(s["q"], s["qd"])
    assert np.all(block_errors(tau, np.einsum("bij,bj->bi", M, s["qdd"]) + nle) <= 1e-12)
    g = h.generalized_gravity(s["q"])
    assert np.all(block_errors(h.nonlinear_effects(s["q"], np.zeros_like(s["qd"])), g) <= 1e-14)


METHODS_FOR_FLOAT32 = {
    "inverse_dynamics": lambda h, s: h.inverse_dynamics(s["q"], s["qd"], s["qdd"], f_ext=s["f_ext"]),
    "nonlinear_effects": lambda h, s: h.nonlinear_effects(s["q"], s["qd"]),
    "generalized_gravity": lambda h, s: h.generalized_gravity(s["q"]),
    "crba": lambda h, s: h.crba(s["q"]),
    "minv": lambda h, s: h.minv(s["q"]),
    "forward_dynamics": lambda h, s: h.forward_dynamics(s["q"], s["qd"], s["u"], f_ext=s["f_ext"]),
    "aba": lambda h, s: h.aba(s["q"], s["qd"], s["u"], f_ext=s["f_ext"]),
    "forward_kinematics": lambda h, s: h.forward_kinematics(s["q"]),
    "end_effector_pose": lambda h, s: h.end_effector_pose(s["q"]),
    "frame_jacobian": lambda h, s: h.frame_jacobian(s["q"], reference_frame="WORLD"),
}


def test_float32_handle_agrees_with_float64(robot):
    h64, h32 = robot.handle, robot.handle32
    assert h32.dtype == np.float32 and h64.dtype == np.float64
    assert h32.provider == h64.provider == robot.provider
    s32 = {k: v.astype(np.float32) for k, v in _states(robot).items()}
    s64 = {k: v.astype(np.float64) for k, v in s32.items()}  # the same, float32-representable, values
    cond = np.linalg.cond(h64.crba(s64["q"]))
    for name, fn in METHODS_FOR_FLOAT32.items():
        out32, out64 = fn(h32, s32), fn(h64, s64)
        assert out32.dtype == np.float32
        err = block_errors(out32, out64)
        bound = FLOAT32_COND_RTOL * cond if name in INVERTING else FLOAT32_RTOL
        assert np.all(err <= bound), (f"{name}: float32 vs float64 relative error {err.max():.2e} "
                                      f"(bound {np.max(bound):.1e})")
