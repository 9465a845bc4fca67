"""Every handle method against Pinocchio at float64, per state block, for every robot, kind of state and provider
(the generated robot.so and the float64 reference; see conftest)."""

import re

import numpy as np
import pytest

import grid_rbd
from robot_cases import BUNDLED_IIWA, PROVIDERS, RTOL, PinMap, all_states, assert_blocks_close, block_errors, make_states
from test_codegen import pose_as_matrices

pin = pytest.importorskip("pinocchio")


def _sym(M):
    """Pinocchio fills the upper triangle of crba / computeMinverse"""
    M = np.asarray(M)
    return np.triu(M) + np.triu(M, 1).T


# ---- Pinocchio per state, returned in grid_rbd's order ----
def pin_rnea(P, q, v, a, f=None):
    args = (P.model, P.data, P.q(q), P.v(v), P.v(a))
    return P.vec(pin.rnea(*args, P.fext(f)) if f is not None else pin.rnea(*args))


def pin_aba(P, q, v, u, f=None):
    if P.mimic:
        # Pinocchio 4.1's ABA refuses mimic joints: the dense solve with its (coupled) M and bias
        bias = pin_rnea(P, q, v, np.zeros(len(v)), f)
        return np.linalg.solve(pin_crba(P, q), np.asarray(u) - bias)
    args = (P.model, P.data, P.q(q), P.v(v), P.v(u))
    return P.vec(pin.aba(*args, P.fext(f)) if f is not None else pin.aba(*args))


def pin_crba(P, q):
    return P.mat(_sym(pin.crba(P.model, P.data, P.q(q))))


def pin_minv(P, q):
    if P.mimic:  # computeMinverse refuses mimic joints too
        return np.linalg.inv(pin_crba(P, q))
    return P.mat(_sym(pin.computeMinverse(P.model, P.data, P.q(q))))


def _pin_gradient(P, algo, fields, q, v, x, f):
    """[d/dq | d/dqd] of one of Pinocchio's derivative algorithms, from its data fields (Pinocchio refuses the
    derivatives of mimic models: test_derivatives checks those against central differences)"""
    if P.mimic:
        pytest.skip("Pinocchio 4.1 has no derivatives of mimic joints (test_derivatives: central differences)")
    algo(P.model, P.data, P.q(q), P.v(v), P.v(x), *((P.fext(f),) if f is not None else ()))
    return np.hstack([P.mat(getattr(P.data, k)) for k in fields])


def pin_rnea_grad(P, q, v, a, f=None):
    return _pin_gradient(P, pin.computeRNEADerivatives, ("dtau_dq", "dtau_dv"), q, v, a, f)


def pin_fd_grad(P, q, v, u, f=None):
    return _pin_gradient(P, pin.computeABADerivatives, ("ddq_dq", "ddq_dv"), q, v, u, f)


def pin_fk(P, q, handle):
    pin.forwardKinematics(P.model, P.data, P.q(q))
    return np.stack([P.data.oMi[j].homogeneous for j in P.joint_ids])


def pin_ee_pose(P, q, handle):
    pin.forwardKinematics(P.model, P.data, P.q(q))
    pin.updateFramePlacements(P.model, P.data)
    out = []
    for name in handle.ee_names:
        oMf = P.data.oMf[P.frame_id(name)]
        out += [oMf.translation, pin.rpy.matrixToRpy(oMf.rotation)]
    return np.concatenate(out)


def pin_energy(P, q, v):
    if P.mimic:
        # Pinocchio 4.1's energies refuse mimic joints: 1/2 qd^T M qd with its (coupled) M, and -m g . c
        T = 0.5 * v @ pin_crba(P, q) @ v
        com = pin.centerOfMass(P.model, P.data, P.q(q))
        V = -P.data.mass[0] * P.model.gravity.linear @ com
        return np.array([T, V, T + V])
    qq, vv = P.q(q), P.v(v)
    return np.array([pin.computeKineticEnergy(P.model, P.data, qq, vv), pin.computePotentialEnergy(P.model, P.data, qq),
                     pin.computeMechanicalEnergy(P.model, P.data, qq, vv)])


def pin_kinetic_energy_regressor(P, q, v):
    """per body of ours (P.joint_ids), Pinocchio's 10 columns of its joint"""
    qq, vv = P.q(q), P.v(v)
    if P.mimic:
        # Pinocchio 4.1's regressors refuse mimic joints: the regressor's formula on its body velocities
        pin.forwardKinematics(P.model, P.data, qq, vv)
        y = []
        for j in range(1, P.model.njoints):
            lv, w = P.data.v[j].linear, P.data.v[j].angular
            y.append([0.5 * lv @ lv, *np.cross(lv, w), 0.5 * w[0] ** 2, w[0] * w[1], 0.5 * w[1] ** 2, w[0] * w[2],
                      w[1] * w[2], 0.5 * w[2] ** 2])
        y = np.concatenate(y)
    else:
        y = pin.computeKineticEnergyRegressor(P.model, P.data, qq, vv)
    return np.concatenate([y[10 * (j - 1):10 * j] for j in P.joint_ids])


def pin_potential_energy_regressor(P, q):
    qq = P.q(q)
    if P.mimic:
        # the regressor's formula on Pinocchio's placements (4.1 refuses mimic joints here too)
        pin.forwardKinematics(P.model, P.data, qq)
        g = P.model.gravity.linear
        y = np.concatenate([[-g @ P.data.oMi[j].translation, *(-(P.data.oMi[j].rotation.T @ g)), 0, 0, 0, 0, 0, 0]
                            for j in range(1, P.model.njoints)])
    else:
        y = pin.computePotentialEnergyRegressor(P.model, P.data, qq)
    return np.concatenate([y[10 * (j - 1):10 * j] for j in P.joint_ids])


def pin_torque_regressor(P, q, v, a):
    """Y (nv, 10 nb) in our order: rows our coordinates, columns our bodies' parameters"""
    qq, vv, aa = P.q(q), P.v(v), P.v(a)
    if P.mimic:
        # Pinocchio 4.1's regressor refuses mimic joints: its RNEA is linear in each body's parameters
        base = pin.rnea(P.model, P.data, qq, vv, aa).copy()
        cols = []
        for j in P.joint_ids:
            keep = P.model.inertias[j].copy()
            for k in range(10):
                pi = keep.toDynamicParameters()
                pi[k] += 1.0
                P.model.inertias[j] = pin.Inertia.FromDynamicParameters(pi)
                cols.append(pin.rnea(P.model, P.data, qq, vv, aa) - base)
            P.model.inertias[j] = keep
        return P.vec(np.stack(cols, axis=1))
    Y = np.asarray(pin.computeJointTorqueRegressor(P.model, P.data, qq, vv, aa))
    return P.vec(Y[:, np.concatenate([np.arange(10 * (j - 1), 10 * j) for j in P.joint_ids])])


def pin_ccrba(P, q, v):
    A = P.cols(pin.ccrba(P.model, P.data, P.q(q), P.v(v)))
    return np.concatenate([A.ravel(), P.data.hg.vector])


def pin_dccrba(P, q, v):
    if P.mimic:
        pytest.skip("Pinocchio 4.1's dccrba refuses mimic joints (test_cmm_time_variation_is_the_rate_of_ccrba)")
    pin.dccrba(P.model, P.data, P.q(q), P.v(v))
    return P.cols(P.data.dAg)


def pin_fk_batched(P, q, handle):
    """[x y z qw qx qy qz] of the first end effector, from Pinocchio's oMf (SE3ToXYZQUAT is [xyz, qx qy qz qw]), the
    quaternion's sign chosen with qw >= 0 as ours"""
    pin.forwardKinematics(P.model, P.data, P.q(q))
    pin.updateFramePlacements(P.model, P.data)
    x = pin.SE3ToXYZQUAT(P.data.oMf[P.frame_id(handle.ee_names[0])])
    quat = np.array([x[6], x[3], x[4], x[5]])
    return np.concatenate([x[:3], quat if quat[0] >= 0 else -quat])


def pin_coriolis(P, q, v):
    if P.mimic:
        pytest.skip("Pinocchio 4.1's computeCoriolisMatrix refuses mimic joints (test_coriolis_matrix_properties)")
    return P.mat(pin.computeCoriolisMatrix(P.model, P.data, P.q(q), P.v(v)))


def pin_params(P):
    """pi of every body of ours: Pinocchio's dynamic parameters of its joint's inertia"""
    return np.concatenate([P.model.inertias[j].toDynamicParameters() for j in P.joint_ids])


def per_state(fn, *arrays):
    return np.stack([fn(*row) for row in zip(*arrays)])


# method -> (ours(handle, states), pinocchio(PinMap, handle, states))
CHECKS = {
    "inverse_dynamics": (
        lambda h, s: h.inverse_dynamics(s["q"], s["qd"], s["qdd"]),
        lambda P, h, s: per_state(lambda q, v, a: pin_rnea(P, q, v, a), s["q"], s["qd"], s["qdd"])),
    "inverse_dynamics_qdd_none": (
        lambda h, s: h.inverse_dynamics(s["q"], s["qd"]),
        lambda P, h, s: per_state(lambda q, v: pin_rnea(P, q, v, np.zeros(h.nv)), s["q"], s["qd"])),
    "inverse_dynamics_f_ext": (
        lambda h, s: h.inverse_dynamics(s["q"], s["qd"], s["qdd"], f_ext=s["f_ext"]),
        lambda P, h, s: per_state(lambda q, v, a, f: pin_rnea(P, q, v, a, f), s["q"], s["qd"], s["qdd"], s["f_ext"])),
    "nonlinear_effects": (
        lambda h, s: h.nonlinear_effects(s["q"], s["qd"]),
        lambda P, h, s: per_state(lambda q, v: P.vec(pin.nonLinearEffects(P.model, P.data, P.q(q), P.v(v))),
                                  s["q"], s["qd"])),
    "generalized_gravity": (
        lambda h, s: h.generalized_gravity(s["q"]),
        lambda P, h, s: per_state(lambda q: P.vec(pin.computeGeneralizedGravity(P.model, P.data, P.q(q))), s["q"])),
    "crba": (
        lambda h, s: h.crba(s["q"]),
        lambda P, h, s: per_state(lambda q: P.mat(_sym(pin.crba(P.model, P.data, P.q(q)))), s["q"])),
    "minv": (
        lambda h, s: h.minv(s["q"]),
        lambda P, h, s: per_state(lambda q: pin_minv(P, q), s["q"])),
    "forward_dynamics": (
        lambda h, s: h.forward_dynamics(s["q"], s["qd"], s["u"]),
        lambda P, h, s: per_state(lambda q, v, u: pin_aba(P, q, v, u), s["q"], s["qd"], s["u"])),
    "forward_dynamics_f_ext": (
        lambda h, s: h.forward_dynamics(s["q"], s["qd"], s["u"], f_ext=s["f_ext"]),
        lambda P, h, s: per_state(lambda q, v, u, f: pin_aba(P, q, v, u, f), s["q"], s["qd"], s["u"], s["f_ext"])),
    "aba": (
        lambda h, s: h.aba(s["q"], s["qd"], s["u"]),
        lambda P, h, s: per_state(lambda q, v, u: pin_aba(P, q, v, u), s["q"], s["qd"], s["u"])),
    "aba_f_ext": (
        lambda h, s: h.aba(s["q"], s["qd"], s["u"], f_ext=s["f_ext"]),
        lambda P, h, s: per_state(lambda q, v, u, f: pin_aba(P, q, v, u, f), s["q"], s["qd"], s["u"], s["f_ext"])),
    "inverse_dynamics_gradient": (
        lambda h, s: h.inverse_dynamics_gradient(s["q"], s["qd"], s["qdd"]),
        lambda P, h, s: per_state(lambda q, v, a: pin_rnea_grad(P, q, v, a), s["q"], s["qd"], s["qdd"])),
    "inverse_dynamics_gradient_qdd_none": (
        lambda h, s: h.rnea_grad(s["q"], s["qd"]),
        lambda P, h, s: per_state(lambda q, v: pin_rnea_grad(P, q, v, np.zeros(h.nv)), s["q"], s["qd"])),
    "inverse_dynamics_gradient_f_ext": (
        lambda h, s: h.inverse_dynamics_gradient(s["q"], s["qd"], s["qdd"], f_ext=s["f_ext"]),
        lambda P, h, s: per_state(lambda q, v, a, f: pin_rnea_grad(P, q, v, a, f), s["q"], s["qd"], s["qdd"],
                                  s["f_ext"])),
    "forward_dynamics_gradient": (
        lambda h, s: h.forward_dynamics_gradient(s["q"], s["qd"], s["u"]),
        lambda P, h, s: per_state(lambda q, v, u: pin_fd_grad(P, q, v, u), s["q"], s["qd"], s["u"])),
    "forward_dynamics_gradient_f_ext": (
        lambda h, s: h.aba_gradient(s["q"], s["qd"], s["u"], f_ext=s["f_ext"]),
        lambda P, h, s: per_state(lambda q, v, u, f: pin_fd_grad(P, q, v, u, f), s["q"], s["qd"], s["u"],
                                  s["f_ext"])),
    "forward_kinematics": (
        lambda h, s: h.forward_kinematics(s["q"]),
        lambda P, h, s: per_state(lambda q: pin_fk(P, q, h), s["q"])),
    # (as [xyz, R]: at a pitch of +-pi/2, atlas's zero state, rounding picks how roll and yaw split the rotation)
    "end_effector_pose": (
        lambda h, s: pose_as_matrices(h.end_effector_pose(s["q"])),
        lambda P, h, s: pose_as_matrices(per_state(lambda q: pin_ee_pose(P, q, h), s["q"]))),
    "fk_batched": (
        lambda h, s: h.fk_batched(s["q"]),
        lambda P, h, s: per_state(lambda q: pin_fk_batched(P, q, h), s["q"])),
    "energy": (
        lambda h, s: h.energy(s["q"], s["qd"]),
        lambda P, h, s: per_state(lambda q, v: pin_energy(P, q, v), s["q"], s["qd"])),
    "kinetic_energy_regressor": (
        lambda h, s: h.kinetic_energy_regressor(s["q"], s["qd"]),
        lambda P, h, s: per_state(lambda q, v: pin_kinetic_energy_regressor(P, q, v), s["q"], s["qd"])),
    "potential_energy_regressor": (
        lambda h, s: h.potential_energy_regressor(s["q"]),
        lambda P, h, s: per_state(lambda q: pin_potential_energy_regressor(P, q), s["q"])),
    "coriolis_matrix": (
        lambda h, s: h.coriolis_matrix(s["q"], s["qd"]),
        lambda P, h, s: per_state(lambda q, v: pin_coriolis(P, q, v), s["q"], s["qd"])),
    "com": (
        lambda h, s: np.concatenate([x.reshape(len(s["q"]), -1) for x in h.com(s["q"])], axis=1),
        lambda P, h, s: per_state(lambda q: np.concatenate([pin.centerOfMass(P.model, P.data, P.q(q)),
                                                            P.cols(pin.jacobianCenterOfMass(P.model, P.data, P.q(q))).ravel()]),
                                  s["q"])),
    "ccrba": (
        lambda h, s: np.concatenate([x.reshape(len(s["q"]), -1) for x in h.ccrba(s["q"], s["qd"])], axis=1),
        lambda P, h, s: per_state(lambda q, v: pin_ccrba(P, q, v), s["q"], s["qd"])),
    "cmm_time_variation": (
        lambda h, s: h.cmm_time_variation(s["q"], s["qd"]),
        lambda P, h, s: per_state(lambda q, v: pin_dccrba(P, q, v), s["q"], s["qd"])),
    "inverse_dynamics_regressor": (
        lambda h, s: h.inverse_dynamics_regressor(s["q"], s["qd"], s["qdd"]),
        lambda P, h, s: per_state(lambda q, v, a: pin_torque_regressor(P, q, v, a), s["q"], s["qd"], s["qdd"])),
}


def test_coriolis_matrix_properties(robot):
    """on every robot, mimic ones too: C qd + g = nonlinear_effects, and dM/dt = C + C^T (M of Pinocchio's model,
    differentiated centrally along qd with pin.integrate)"""
    h, P = robot.handle, robot.pin
    s = make_states(h, "random", 4, seed=5)
    C = h.coriolis_matrix(s["q"], s["qd"])
    bias = np.einsum("bij,bj->bi", C, s["qd"]) + h.generalized_gravity(s["q"])
    assert_blocks_close(bias, h.nonlinear_effects(s["q"], s["qd"]), f"{robot.case.id} C qd + g")
    eps = 1e-6
    for b in range(len(C)):
        qp, vp = P.q(s["q"][b]), P.v(s["qd"][b])
        plus = _sym(pin.crba(P.model, P.data, pin.integrate(P.model, qp, eps * vp)))
        minus = _sym(pin.crba(P.model, P.data, pin.integrate(P.model, qp, -eps * vp)))
        Mdot = P.mat((plus - minus) / (2 * eps))
        sym = C[b] + C[b].T
        err = np.abs(sym - Mdot).max() / max(1.0, np.abs(Mdot).max())
        assert err < 1e-6, f"{robot.case.id} state {b}: |C + C^T - dM/dt| = {err:.1e}"


def test_cmm_time_variation_is_the_rate_of_ccrba(robot):
    """on every robot, mimic ones too: dA/dt is the central difference of Pinocchio's ccrba along qd (pin.integrate)"""
    h, P = robot.handle, robot.pin
    s = make_states(h, "random", 3, seed=6)
    dA = h.cmm_time_variation(s["q"], s["qd"])
    eps = 1e-6
    for b in range(len(dA)):
        qp, vp = P.q(s["q"][b]), P.v(s["qd"][b])
        plus = pin.ccrba(P.model, P.data, pin.integrate(P.model, qp, eps * vp), vp).copy()
        minus = pin.ccrba(P.model, P.data, pin.integrate(P.model, qp, -eps * vp), vp).copy()
        rate = P.cols((plus - minus) / (2 * eps))
        err = np.abs(dA[b] - rate).max() / max(1.0, np.abs(rate).max())
        assert err < 1e-6, f"{robot.case.id} state {b}: |dA/dt - central difference| = {err:.1e}"


def test_dccrba_is_the_derivative_of_ccrba(robot):
    """on every robot, mimic ones too: dA[:, :, k] is the central difference of Pinocchio's ccrba along the tangent
    e_k (pin.integrate)"""
    h, P = robot.handle, robot.pin
    s = make_states(h, "random", 3, seed=7)
    dA = h.dccrba(s["q"])
    assert dA.shape == (3, 6, h.nv, h.nv)
    eps, zero = 1e-6, np.zeros(h.nv)
    for b in range(len(dA)):
        qp = P.q(s["q"][b])
        fd = np.empty((6, h.nv, h.nv))
        for k in range(h.nv):
            e = P.v(np.eye(h.nv)[k])
            plus = pin.ccrba(P.model, P.data, pin.integrate(P.model, qp, eps * e), zero).copy()
            minus = pin.ccrba(P.model, P.data, pin.integrate(P.model, qp, -eps * e), zero).copy()
            fd[:, :, k] = P.cols((plus - minus) / (2 * eps))
        err = np.abs(dA[b] - fd).max() / max(1.0, np.abs(fd).max())
        assert err < 1e-6, f"{robot.case.id} state {b}: |dA/dq - central difference| = {err:.1e}"


def test_dccrba_contracted_with_qd(robot):
    """dA/dq contracted with qd over q's index is cmm_time_variation (dA/dt), and over A's column index Pinocchio's
    computeCentroidalDynamicsDerivatives dh_dq (h = A qd, so dh/dq_k = dA/dq_k qd; Pinocchio 4.1 refuses mimic joints
    there)"""
    h, P = robot.handle, robot.pin
    for kind, s in all_states(robot):
        dA = h.dccrba(s["q"])
        assert_blocks_close(np.einsum("brjk,bk->brj", dA, s["qd"]), h.cmm_time_variation(s["q"], s["qd"]),
                            f"{robot.case.id} dccrba . qd [{kind}]")
        if P.mimic:
            continue
        dh = per_state(lambda q, v: P.cols(pin.computeCentroidalDynamicsDerivatives(
            P.model, P.data, P.q(q), P.v(v), np.zeros(h.nv))[0]), s["q"], s["qd"])
        assert_blocks_close(np.einsum("brjk,bj->brk", dA, s["qd"]), dh, f"{robot.case.id} qd . dccrba = dh_dq [{kind}]")


def test_energy_regressors_give_the_energies(robot):
    """y . pi with the model's own parameters is the energy (Pinocchio's pi of the same bodies: the model's, as the
    energies match Pinocchio's)"""
    h, P = robot.handle, robot.pin
    pi = pin_params(P)
    for kind, s in all_states(robot):
        E = h.energy(s["q"], s["qd"])
        T = h.kinetic_energy_regressor(s["q"], s["qd"]) @ pi
        assert_blocks_close(T[:, None], E[:, :1], f"{robot.case.id} kinetic regressor . pi [{kind}]")
        V = h.potential_energy_regressor(s["q"]) @ pi
        assert_blocks_close(V[:, None], E[:, 1:2], f"{robot.case.id} potential regressor . pi [{kind}]")


def test_torque_regressor_gives_inverse_dynamics(robot):
    """Y . pi with the model's own parameters is inverse_dynamics, and with qdd absent nonlinear_effects (mimic robots
    too: Y of the coupled coordinates)"""
    h, P = robot.handle, robot.pin
    pi = pin_params(P)
    for kind, s in all_states(robot):
        tau = h.inverse_dynamics_regressor(s["q"], s["qd"], s["qdd"]) @ pi
        assert_blocks_close(tau, h.inverse_dynamics(s["q"], s["qd"], s["qdd"]), f"{robot.case.id} Y . pi [{kind}]")
        c = h.inverse_dynamics_regressor(s["q"], s["qd"]) @ pi
        assert_blocks_close(c, h.nonlinear_effects(s["q"], s["qd"]), f"{robot.case.id} Y(qdd = 0) . pi [{kind}]")


@pytest.mark.parametrize("method", list(CHECKS))
def test_matches_pinocchio(robot, method):
    ours_fn, pin_fn = CHECKS[method]
    h, P = robot.handle, robot.pin
    assert h.provider == robot.provider
    for kind, s in all_states(robot):
        ours = ours_fn(h, s)
        assert ours.dtype == np.float64
        assert_blocks_close(ours, pin_fn(P, h, s), f"{robot.case.id} {method} [{kind}]")


def jacobian_frames(handle):
    """the end effectors, a frame half-way down the frame list, and the root link's frame"""
    ids = list(handle.ee_frame_ids[:3]) + [len(handle.frame_names) // 2, 0]
    return sorted(set(ids))


@pytest.mark.parametrize("reference_frame", ["WORLD", "LOCAL", "LOCAL_WORLD_ALIGNED"])
def test_frame_jacobian_matches_pinocchio(robot, reference_frame):
    h, P = robot.handle, robot.pin
    rf = getattr(pin.ReferenceFrame, reference_frame)
    for fid in jacobian_frames(h):
        name = h.frame_names[fid]
        pfid = P.frame_id(name)
        for kind, s in all_states(robot):
            ours = h.frame_jacobian(s["q"], target=name, reference_frame=reference_frame)
            ref = per_state(lambda q: P.cols(pin.computeFrameJacobian(P.model, P.data, P.q(q), pfid, rf)), s["q"])
            assert_blocks_close(ours, ref, f"{robot.case.id} frame_jacobian {name} {reference_frame} [{kind}]")


def pin_frame_jacobian_dot(P, q, v, fid, rf):
    """Pinocchio's dJ/dt of a frame; on mimic models (where Pinocchio 4.1's getFrameJacobianTimeVariation is not the
    rate of its computeFrameJacobian on a mimic body's frames: panda_rightfinger LOCAL, 48%) the rate of
    computeFrameJacobian along pin.integrate, central differences at steps h and h/2 extrapolated (error O(h^4); h
    |qd| = 1e-4)"""
    if P.mimic:
        qp, vp = P.q(q), P.v(v)

        def central(h):
            Jp = pin.computeFrameJacobian(P.model, P.data, pin.integrate(P.model, qp, h * vp), fid, rf).copy()
            Jm = pin.computeFrameJacobian(P.model, P.data, pin.integrate(P.model, qp, -h * vp), fid, rf).copy()
            return (Jp - Jm) / (2 * h)
        h = 1e-4 / max(1.0, np.abs(vp).max())
        return P.cols((4 * central(h / 2) - central(h)) / 3)
    pin.computeJointJacobiansTimeVariation(P.model, P.data, P.q(q), P.v(v))
    pin.updateFramePlacements(P.model, P.data)
    return P.cols(pin.getFrameJacobianTimeVariation(P.model, P.data, fid, rf))


@pytest.mark.parametrize("reference_frame", ["WORLD", "LOCAL", "LOCAL_WORLD_ALIGNED"])
def test_frame_jacobian_dot_matches_pinocchio(robot, reference_frame):
    h, P = robot.handle, robot.pin
    rf = getattr(pin.ReferenceFrame, reference_frame)
    for fid in jacobian_frames(h):
        name = h.frame_names[fid]
        pfid = P.frame_id(name)
        for kind, s in all_states(robot):
            ours = h.frame_jacobian_dot(s["q"], s["qd"], target=name, reference_frame=reference_frame)
            ref = per_state(lambda q, v: pin_frame_jacobian_dot(P, q, v, pfid, rf), s["q"], s["qd"])
            label = f"{robot.case.id} frame_jacobian_dot {name} {reference_frame} [{kind}]"
            # a LOCAL rate zero by identity (a frame on a floating root: fXo ((ov_f - ov_f) x c)) is exactly zero in
            # ours; Pinocchio's fXo dJ_w - v_f x J_l leaves its rounding there (2e-15), above the zero floor
            zero = (~ours.reshape(len(ours), -1).any(axis=1)) if reference_frame == "LOCAL" else np.zeros(len(ours), bool)
            assert np.all(np.abs(ref[zero]) < 1e-12), f"{label}: zero in ours, not in Pinocchio's"
            if not zero.all():
                assert_blocks_close(ours[~zero], ref[~zero], label)


def test_frame_jacobian_dot_is_the_rate_of_frame_jacobian(robot):
    """dJ/dt is the central difference of our own frame_jacobian along qd (the local tangent, test_derivatives'
    integrate), in every reference frame"""
    from test_derivatives import integrate
    h = robot.handle
    s = make_states(h, "random", 3, seed=7)
    eps = 1e-6
    for fid in jacobian_frames(h):
        for rf in ("WORLD", "LOCAL", "LOCAL_WORLD_ALIGNED"):
            dJ = h.frame_jacobian_dot(s["q"], s["qd"], fid, rf)
            for b in range(len(dJ)):
                q, v = s["q"][b], s["qd"][b]
                qs = np.stack([integrate(h, q, eps * v), integrate(h, q, -eps * v)])
                Jp, Jm = h.frame_jacobian(qs, fid, rf)
                rate = (Jp - Jm) / (2 * eps)
                err = np.abs(dJ[b] - rate).max() / max(1.0, np.abs(rate).max())
                assert err < 1e-6, f"{robot.case.id} frame {fid} {rf} state {b}: |dJ/dt - central difference| = {err:.1e}"


def test_frame_jacobian_default_target_is_first_end_effector(robot):
    h = robot.handle
    q = make_states(h, "random", 3)["q"]
    np.testing.assert_array_equal(h.frame_jacobian(q), h.frame_jacobian(q, target=h.ee_names[0]))


# ---- the operational-space inertia: Lambda = (J M^-1 J^T)^-1 with numpy's dense inverse ----
def pin_phi(P, q, pfid, rf):
    """J M^-1 J^T of Pinocchio's frame Jacobian and M^-1 (mimic robots: the inverse of its coupled crba)"""
    J = P.cols(pin.computeFrameJacobian(P.model, P.data, P.q(q), pfid, rf))
    return J @ pin_minv(P, q) @ J.T, J


def osc_frames(h):
    """the first end effector and a frame half-way down the frame list"""
    return {"ee": h.ee_names[0], "mid": h.frame_names[len(h.frame_names) // 2]}


@pytest.mark.parametrize("reference_frame", ["WORLD", "LOCAL", "LOCAL_WORLD_ALIGNED"])
@pytest.mark.parametrize("which", ["ee", "mid"])
def test_osc_inertia_matches_pinocchio(robot, which, reference_frame):
    """states whose J M^-1 J^T has cond < 1e8 against numpy's inverse of it; a frame whose chain cannot move in 6
    independent directions has none (test_osc_inertia_singular_rule covers it)"""
    h, P = robot.handle, robot.pin
    rf = getattr(pin.ReferenceFrame, reference_frame)
    name = osc_frames(h)[which]
    pfid = P.frame_id(name)
    compared, conds = 0, []
    for kind, s in all_states(robot):
        ours = h.osc_inertia(s["q"], target=name, reference_frame=reference_frame)
        assert ours.shape == (len(s["q"]), 6, 6) and ours.dtype == np.float64
        phi = [pin_phi(P, q, pfid, rf)[0] for q in s["q"]]
        cond = np.array([np.linalg.cond(x) for x in phi])
        conds += list(cond)
        ok = cond < 1e8
        if ok.any():
            ref = np.stack([np.linalg.inv(x) for x, good in zip(phi, ok) if good])
            assert_blocks_close(ours[ok], ref, f"{robot.case.id} osc_inertia {name} {reference_frame} [{kind}]")
            compared += int(ok.sum())
    if not compared:
        pytest.skip(f"{robot.case.id} {name}: J M^-1 J^T is singular on every state (cond >= {min(conds):.1e})")


def test_osc_inertia_singular_rule(robot):
    """go2 on a fixed base: a foot's chain is 3 revolute joints, so J M^-1 J^T has rank 3 and Lambda is the documented
    [(J_lin M^-1 J_lin^T)^-1, 0; 0, 0] (the angular pivots dropped) in every reference frame, on the states whose
    linear block is well conditioned (cond < 1e8; the zero state stretches the leg); finite on every state"""
    if robot.case.id != "go2":
        pytest.skip("the singular case is go2 on a fixed base")
    h, P = robot.handle, robot.pin
    compared = 0
    for foot in h.ee_names:
        pfid = P.frame_id(foot)
        for reference_frame in ("WORLD", "LOCAL", "LOCAL_WORLD_ALIGNED"):
            rf = getattr(pin.ReferenceFrame, reference_frame)
            for kind, s in all_states(robot):
                ours = h.osc_inertia(s["q"], target=foot, reference_frame=reference_frame)
                assert np.all(np.isfinite(ours)), f"{foot} {reference_frame} [{kind}]"
                ref, ok = np.zeros_like(ours), np.zeros(len(ours), bool)
                for b, q in enumerate(s["q"]):
                    phi = pin_phi(P, q, pfid, rf)[0]
                    assert np.linalg.matrix_rank(phi, tol=1e-10 * np.abs(phi).max()) == 3
                    ok[b] = np.linalg.cond(phi[:3, :3]) < 1e8
                    if ok[b]:
                        ref[b, :3, :3] = np.linalg.inv(phi[:3, :3])
                if ok.any():
                    assert_blocks_close(ours[ok], ref[ok], f"go2 osc_inertia {foot} {reference_frame} [{kind}]")
                    # the other blocks exactly zero: the dropped pivots' inverses are 0
                    assert np.all(ours[ok, 3:, :] == 0) and np.all(ours[ok, :, 3:] == 0)
                    compared += int(ok.sum())
    assert compared > 0


# ---- the comparison can fail: a 1% change of one link's mass is caught ----
def _perturb_mass(urdf, link, factor):
    pattern = re.compile(r'(<link\s+name="%s"\s*>.*?<mass\s+value=")([^"]+)(")' % re.escape(link), re.S)
    new, count = pattern.subn(lambda m: m.group(1) + repr(float(m.group(2)) * factor) + m.group(3), urdf)
    assert count == 1
    return new


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("floating_base", [False, True], ids=["fixed", "floating"])
def test_perturbed_inertia_fails_the_comparison(floating_base, provider):
    urdf = BUNDLED_IIWA.read_text()
    codegen = provider == "generated"
    # the generated unperturbed iiwa is the session's robot case (every method); the perturbed one builds the five
    # methods checked below
    reference = grid_rbd.register_robot("iiwa_unperturbed", urdf_path=BUNDLED_IIWA, dtype="float64",
                                        floating_base=floating_base, codegen=codegen)
    subset = {"algorithm_list": ["rnea", "crba", "aba", "rnea_grad", "fd_grad"]} if codegen else {}
    perturbed = grid_rbd.register_robot("iiwa_perturbed", urdf_string=_perturb_mass(urdf, "iiwa_link_3", 1.01),
                                        dtype="float64", floating_base=floating_base, codegen=codegen, **subset)
    assert reference.provider == perturbed.provider == provider
    P = PinMap(reference, BUNDLED_IIWA, floating_base)  # Pinocchio on the ORIGINAL file
    s = make_states(reference, "random")
    checks = {
        "rnea": lambda h: (h.inverse_dynamics(s["q"], s["qd"], s["qdd"]),
                           per_state(lambda q, v, a: pin_rnea(P, q, v, a), s["q"], s["qd"], s["qdd"])),
        "crba": lambda h: (h.crba(s["q"]), per_state(lambda q: P.mat(_sym(pin.crba(P.model, P.data, P.q(q)))), s["q"])),
        "aba": lambda h: (h.aba(s["q"], s["qd"], s["u"]),
                          per_state(lambda q, v, u: pin_aba(P, q, v, u), s["q"], s["qd"], s["u"])),
        "rnea_grad": lambda h: (h.inverse_dynamics_gradient(s["q"], s["qd"], s["qdd"]),
                                per_state(lambda q, v, a: pin_rnea_grad(P, q, v, a), s["q"], s["qd"], s["qdd"])),
        "fd_grad": lambda h: (h.forward_dynamics_gradient(s["q"], s["qd"], s["u"]),
                              per_state(lambda q, v, u: pin_fd_grad(P, q, v, u), s["q"], s["qd"], s["u"])),
    }
    for name, check in checks.items():
        assert block_errors(*check(reference)).max() <= RTOL, f"{name}: the unperturbed model must pass"
        worst = block_errors(*check(perturbed)).max()
        assert worst > 1e3 * RTOL, f"{name}: a 1% mass change went unnoticed (error {worst:.2e})"


# ---- poses at targets chosen per call: Pinocchio's frame placement and frame Jacobian of a frame added at the offset ----
def runtime_targets(h, seed=3):
    """(target names, (n, 3) offsets): the Jacobian test's frames under their link names, random tool offsets"""
    names = [h.frame_names[f] for f in jacobian_frames(h)]
    return names, np.random.default_rng(seed).uniform(-0.3, 0.3, (len(names), 3))


def pin_offset_frames(P, names, offsets):
    """a copy of Pinocchio's model with a frame at each target's offset (its frame's placement times the offset): the
    model, its data and those frames' ids"""
    model = pin.Model(P.model)
    ids = []
    for k, (name, o) in enumerate(zip(names, offsets)):
        f = model.frames[P.frame_id(name)]
        placement = f.placement * pin.SE3(np.eye(3), np.asarray(o, dtype=np.float64))
        ids.append(model.addFrame(pin.Frame(f"grid_target_{k}_{name}", f.parentJoint, P.frame_id(name), placement,
                                            pin.FrameType.OP_FRAME)))
    return model, model.createData(), ids


def test_end_effector_pose_runtime_matches_pinocchio(robot):
    h, P = robot.handle, robot.pin
    names, offsets = runtime_targets(h)
    model, data, pids = pin_offset_frames(P, names, offsets)

    def pin_pose(q):
        pin.framesForwardKinematics(model, data, P.q(q))
        return np.concatenate([np.concatenate([data.oMf[f].translation, pin.rpy.matrixToRpy(data.oMf[f].rotation)])
                               for f in pids])
    for kind, s in all_states(robot):
        ours = h.end_effector_pose_runtime(s["q"], names, offsets)
        assert ours.shape == (len(s["q"]), 6 * len(names))
        assert_blocks_close(pose_as_matrices(ours), pose_as_matrices(per_state(pin_pose, s["q"])),
                            f"{robot.case.id} end_effector_pose_runtime [{kind}]")


def test_end_effector_pose_gradient_runtime_matches_pinocchio(robot):
    """d xyz: Pinocchio's LOCAL_WORLD_ALIGNED Jacobian of the frame at the offset; d rpy: computeRpyJacobianInverse
    (world) times its angular rows; states where a target's pitch is within 1e-3 of +-pi/2 (infinite rows) skipped"""
    h, P = robot.handle, robot.pin
    names, offsets = runtime_targets(h)
    model, data, pids = pin_offset_frames(P, names, offsets)
    lwa = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED

    def pin_grad(q):
        rows = []
        pin.framesForwardKinematics(model, data, P.q(q))
        for f in pids:
            J = P.cols(pin.computeFrameJacobian(model, data, P.q(q), f, lwa))
            rpy = pin.rpy.matrixToRpy(data.oMf[f].rotation)
            rows += [J[:3], pin.rpy.computeRpyJacobianInverse(rpy, pin.ReferenceFrame.WORLD) @ J[3:]]
        return np.concatenate(rows)
    for kind, s in all_states(robot):
        pose = h.end_effector_pose_runtime(s["q"], names, offsets).reshape(len(s["q"]), -1, 6)
        keep = np.all(np.abs(np.cos(pose[..., 4])) > 1e-3, axis=1)
        if not keep.any():
            continue
        q = s["q"][keep]
        ours = h.end_effector_pose_gradient_runtime(q, names, offsets)
        label = f"{robot.case.id} end_effector_pose_gradient_runtime [{kind}]"
        assert_blocks_close(ours, per_state(pin_grad, q), label)
        # the VJP row is the gradient contracted with the cotangent
        g = np.random.default_rng(5).standard_normal((len(q), 6 * len(names)))
        assert_blocks_close(h.end_effector_pose_runtime_vjp(q, g, names, offsets), np.einsum("bi,bij->bj", g, ours),
                            label + " vjp")


def test_end_effector_pose_runtime_defaults_are_the_registered_end_effectors(robot):
    """no targets: the registered end effectors, as end_effector_pose and its gradient compute them (bit for bit on
    the reference; the generated rows may order the sums differently)"""
    h = robot.handle
    s = make_states(h, "random", 4, seed=11)
    if not h.ee_frame_ids:
        with pytest.raises(ValueError, match="no end effectors"):
            h.end_effector_pose_runtime(s["q"])
        return
    np.testing.assert_allclose(h.end_effector_pose_runtime(s["q"]), h.end_effector_pose(s["q"]), rtol=0, atol=1e-12)
    a, b = h.end_effector_pose_gradient_runtime(s["q"]), h.end_effector_pose_gradient(s["q"])
    assert a.shape == b.shape
    finite = np.isfinite(b)
    np.testing.assert_allclose(a[finite], b[finite], rtol=1e-12, atol=1e-12)
