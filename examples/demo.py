"""grid-rbd demo: register the bundled KUKA iiwa URDF and run a batch of 4 random states through the main algorithms."""

from pathlib import Path

import numpy as np

import grid_rbd

URDF = Path(__file__).resolve().parent / "robots" / "iiwa.urdf"


def main():
    robot = grid_rbd.register_robot("iiwa14", urdf_path=URDF, dtype="float64")
    print(robot)
    print("joints:", ", ".join(robot.joint_names))
    print("end effectors:", ", ".join(robot.ee_names))

    # a batch of B = 4 states: q is (B, nq), velocities and torques are (B, nv)
    rng = np.random.default_rng(0)
    B = 4
    q = rng.uniform(-1.0, 1.0, (B, robot.nq))
    qd = rng.uniform(-1.0, 1.0, (B, robot.nv))
    qdd = rng.uniform(-1.0, 1.0, (B, robot.nv))

    np.set_printoptions(precision=3, suppress=True, linewidth=110)
    tau = robot.inverse_dynamics(q, qd, qdd)
    print(f"\ninverse_dynamics(q, qd, qdd) -> {tau.shape}  joint torques [N m]\n{tau}")

    M = robot.crba(q)
    print(f"\ncrba(q) -> {M.shape}; mass matrix of state 0 [kg m^2]\n{M[0]}")

    qdd_back = robot.forward_dynamics(q, qd, tau)
    print(f"\nforward_dynamics(q, qd, tau) -> {qdd_back.shape}  recovers qdd "
          f"(max |difference| {np.abs(qdd_back - qdd).max():.1e})\n{qdd_back}")

    pose = robot.end_effector_pose(q)
    print(f"\nend_effector_pose(q) -> {pose.shape}  [x y z (m), roll pitch yaw (rad)] of {robot.ee_names[0]}\n{pose}")

    # first-order derivatives: [dtau/dq | dtau/dqd] per state; dtau/dq checked against a central difference
    dtau = robot.inverse_dynamics_gradient(q, qd, qdd)
    eps, k = 1e-6, 3
    step = np.zeros(robot.nv)
    step[k] = eps
    fd = (robot.inverse_dynamics(q + step, qd, qdd) - robot.inverse_dynamics(q - step, qd, qdd)) / (2 * eps)
    print(f"\ninverse_dynamics_gradient(q, qd, qdd) -> {dtau.shape}  [dtau/dq | dtau/dqd]; column dtau/dq_{k} of "
          f"state 0 (central difference agrees to {np.abs(fd - dtau[:, :, k]).max():.1e})\n{dtau[0, :, k]}")


if __name__ == "__main__":
    main()
