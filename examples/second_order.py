"""grid-rbd second-order derivatives: a Newton step on the KUKA iiwa's inverse dynamics, with the exact Hessian of a
torque cost from idsva_so, checked against the gradient's finite difference; forward dynamics' second derivatives in
float64 and float32; the end effector's position to second order with the pose Hessian."""

from pathlib import Path

import numpy as np

import grid_rbd

URDF = Path(__file__).resolve().parent / "robots" / "iiwa.urdf"


def main():
    # second-order methods are built only when named (their code and outputs grow with nv^3)
    robot = grid_rbd.register_robot("iiwa14_so", urdf_path=URDF, dtype="float64",
                                    algorithm_list=["inverse_dynamics", "inverse_dynamics_gradient", "minv",
                                                    "idsva_so", "fdsva_so", "end_effector_pose",
                                                    "end_effector_pose_gradient", "end_effector_pose_hessian"])
    rng = np.random.default_rng(3)
    B = 32
    q = rng.uniform(-1.0, 1.0, (B, robot.nq))
    qd = rng.uniform(-1.0, 1.0, (B, robot.nv))
    qdd = rng.uniform(-1.0, 1.0, (B, robot.nv))

    # cost c(q) = 1/2 |tau(q, qd, qdd)|^2: gradient J^T tau and Hessian J^T J + sum_i tau_i d2tau_i/dq2
    tau = robot.inverse_dynamics(q, qd, qdd)
    J = robot.inverse_dynamics_gradient(q, qd, qdd)[:, :, :robot.nv]
    d2tau_dq2, d2tau_dqd2, d2tau_dqdqd, dM_dq = robot.idsva_so(q, qd, qdd)   # each (B, nv, nv, nv), [i, j, k]
    grad = np.einsum("bij,bi->bj", J, tau)
    hess = np.einsum("bij,bik->bjk", J, J) + np.einsum("bi,bijk->bjk", tau, d2tau_dq2)

    # the Hessian's column k is the derivative of the gradient along q_k (central differences, as a check)
    h, k = 1e-6, 3
    e = np.zeros(robot.nv)
    e[k] = h

    def gradient_at(x):
        t = robot.inverse_dynamics(x, qd, qdd)
        return np.einsum("bij,bi->bj", robot.inverse_dynamics_gradient(x, qd, qdd)[:, :, :robot.nv], t)

    fd_col = (gradient_at(q + e) - gradient_at(q - e)) / (2 * h)
    err = np.abs(fd_col - hess[:, :, k]).max() / np.abs(hess[:, :, k]).max()
    print(f"{B} states: Hessian column {k} against central differences of the gradient: relative error {err:.1e}")
    assert err < 1e-6

    # one Newton step on q (a fixed base: q moves along its own coordinates), damped
    step = np.linalg.solve(hess + 1e-3 * np.eye(robot.nv), grad[..., None])[..., 0]
    before = 0.5 * np.sum(tau ** 2, axis=1)
    after = 0.5 * np.sum(robot.inverse_dynamics(q - step, qd, qdd) ** 2, axis=1)
    print(f"Newton step: mean torque cost {before.mean():.3f} -> {after.mean():.3f}")
    assert np.median(after) < np.median(before)

    # the mass matrix's derivative, dM[i, j, k] = dM_ij/dq_k, is symmetric in i, j
    assert np.abs(dM_dq - dM_dq.transpose(0, 2, 1, 3)).max() < 1e-12
    # and forward dynamics' second derivatives, the last one d2qdd/du dq = dMinv/dq = -M^-1 dM/dq M^-1
    *_, dMinv_dq = robot.fdsva_so(q, qd, tau)
    Minv = robot.minv(q)
    want = -np.einsum("bil,blmk,bmj->bijk", Minv, dM_dq, Minv)
    err = np.abs(dMinv_dq - want).max() / np.abs(want).max()
    print(f"dMinv/dq {dMinv_dq.shape} against -M^-1 dM/dq M^-1: relative error {err:.1e}")
    assert err < 1e-10

    # in a float32 library fdsva_so is computed in float64 and rounded once (its float32 chain amplified errors
    # through M^-1): every entry within float32 rounding of the float64 result
    robot32 = grid_rbd.register_robot("iiwa14_so32", urdf_path=URDF, dtype="float32", algorithm_list=["fdsva_so"])
    x32 = [np.asarray(x, np.float32) for x in (q, qd, tau)]
    got32, want64 = robot32.fdsva_so(*x32), robot.fdsva_so(*[x.astype(np.float64) for x in x32])
    err = max(float(np.abs(a - b).max() / np.abs(b).max()) for a, b in zip(got32, want64))
    print(f"float32 fdsva_so against float64: relative error {err:.1e}")
    assert got32[0].dtype == np.float32 and err < 1e-6

    # the end-effector pose to second order: p(q + d) = p(q) + J d + 1/2 d^T H d + O(|d|^3), with
    # end_effector_pose_hessian[:, r, j, k] = d/dq_k of end_effector_pose_gradient[:, r, j] (a fixed base: q + d moves
    # along the tangent)
    d = rng.normal(size=(B, robot.nv)) * 1e-2
    p0, p1 = robot.end_effector_pose(q)[:, :3], robot.end_effector_pose(q + d)[:, :3]
    Jp, Hp = robot.end_effector_pose_gradient(q)[:, :3], robot.end_effector_pose_hessian(q)[:, :3]
    first = p0 + np.einsum("brj,bj->br", Jp, d)
    second = first + 0.5 * np.einsum("brjk,bj,bk->br", Hp, d, d)
    e1, e2 = np.abs(p1 - first).max(), np.abs(p1 - second).max()
    print(f"pose Hessian {Hp.shape}: a step of 1e-2 rad predicted to {e1:.1e} m to first order, {e2:.1e} m to second")
    assert e2 < e1 / 20

if __name__ == "__main__":
    main()
