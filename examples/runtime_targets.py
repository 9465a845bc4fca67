"""grid-rbd targets chosen per call: a tool tip on the KUKA iiwa's flange, then a point on its elbow, steered by
Gauss-Newton steps with end_effector_pose_gradient_runtime, no rebuild between the two."""

from pathlib import Path

import numpy as np

import grid_rbd

URDF = Path(__file__).resolve().parent / "robots" / "iiwa.urdf"


def reach(robot, q, target, offset, goal, steps=20):
    """damped Gauss-Newton on the position rows of the target's pose, for a batch of starting configurations"""
    for _ in range(steps):
        err = goal - robot.end_effector_pose_runtime(q, target, offset)[:, :3]
        J = robot.end_effector_pose_gradient_runtime(q, target, offset)[:, :3, :]    # (B, 3, nv)
        JJt = J @ J.transpose(0, 2, 1) + 1e-6 * np.eye(3)
        q = q + (J.transpose(0, 2, 1) @ np.linalg.solve(JJt, err[..., None]))[..., 0]
    return q, np.linalg.norm(goal - robot.end_effector_pose_runtime(q, target, offset)[:, :3], axis=1)


def main():
    robot = grid_rbd.register_robot("iiwa14", urdf_path=URDF, dtype="float64")
    rng = np.random.default_rng(2)
    B = 32
    q0 = rng.uniform(-0.5, 0.5, (B, robot.nq))

    # two targets in one call: the flange with a 12 cm tool along its z axis, and the elbow link's origin
    pose = robot.end_effector_pose_runtime(q0, ["iiwa_joint_7", "iiwa_link_4"], [[0, 0, 0.12], [0, 0, 0]])
    print(f"end_effector_pose_runtime(q, 2 targets) -> {pose.shape}: [x y z roll pitch yaw] per target")

    goal = np.array([0.5, 0.2, 0.6])
    q, miss = reach(robot, q0, "iiwa_joint_7", [0, 0, 0.12], goal)
    print(f"tool tip to {goal}: worst miss over {B} starts {miss.max():.1e} m")
    assert miss.max() < 1e-6, "the tool tip reaches a point well inside the workspace"

    # the elbow's reach is a sphere about the shoulder: its goal is where another configuration puts it
    goal = robot.end_effector_pose_runtime(np.array([0.3, 0.8, 0.0, -0.4, 0, 0, 0]), "iiwa_link_4")[:3]
    q, miss = reach(robot, q0, "iiwa_link_4", None, goal)
    print(f"elbow to {np.round(goal, 3)} (another target, same library): worst miss {miss.max():.1e} m")
    assert miss.max() < 1e-6, "the elbow reaches a point on its sphere of reach"


if __name__ == "__main__":
    main()
