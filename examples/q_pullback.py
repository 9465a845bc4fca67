"""grid-rbd q_pullback: the gradient of a torque objective over every component of q (a floating iiwa, its base
quaternion off the unit sphere), from the analytic gradient along the local tangent, checked by central differences."""

from pathlib import Path

import numpy as np

import grid_rbd

URDF = Path(__file__).resolve().parent / "robots" / "iiwa.urdf"


def main():
    robot = grid_rbd.register_robot("iiwa14_floating", urdf_path=URDF, floating_base=True, dtype="float64",
                                    algorithm_list=["inverse_dynamics", "inverse_dynamics_gradient", "q_pullback"])
    rng = np.random.default_rng(3)
    B = 8
    q = rng.uniform(-1.0, 1.0, (B, robot.nq))
    q[:, 3:7] *= 1.7 / np.linalg.norm(q[:, 3:7], axis=1, keepdims=True)  # a quaternion of norm 1.7: normalised inside
    qd, qdd = rng.uniform(-1.0, 1.0, (B, robot.nv)), rng.uniform(-1.0, 1.0, (B, robot.nv))
    w = rng.normal(size=(B, robot.nv))  # the objective s = w . tau(q, qd, qdd), per state

    # d s / d(local tangent) from the gradient row, then onto the nq = 14 components of q
    dtau_dq = robot.inverse_dynamics_gradient(q, qd, qdd)[:, :, :robot.nv]
    grad_q = robot.q_pullback(q, np.einsum("bi,bij->bj", w, dtau_dq))

    h, fd = 1e-6, np.zeros_like(q)
    for k in range(robot.nq):
        e = np.zeros(robot.nq)
        e[k] = h
        fd[:, k] = np.einsum("bi,bi->b", w, robot.inverse_dynamics(q + e, qd, qdd) - robot.inverse_dynamics(q - e, qd, qdd)) / (2 * h)
    err = np.abs(grad_q - fd).max() / np.abs(fd).max()
    print(f"nq = {robot.nq}, nv = {robot.nv}; d(w.tau)/dq of state 0: {np.array2string(grad_q[0], precision=3)}")
    print(f"largest difference from central differences over every q component: {err:.1e} of the largest entry")
    print(f"along the quaternion (unit-norm direction): {np.einsum('bi,bi->b', grad_q[:, 3:7], q[:, 3:7]).max():.1e}")
    assert err < 1e-6


if __name__ == "__main__":
    main()
