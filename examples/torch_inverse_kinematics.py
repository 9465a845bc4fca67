"""grid-rbd in PyTorch: inverse kinematics for the KUKA iiwa by gradient descent, a batch of targets at once, through
end_effector_pose's analytic VJP (autograd), then the gravity torques holding each solution, in a compiled graph."""

from pathlib import Path

import torch

import grid_rbd

URDF = Path(__file__).resolve().parent / "robots" / "iiwa.urdf"


def main():
    robot = grid_rbd.register_robot("iiwa14_torch", urdf_path=URDF, dtype="float64", backend="torch")
    B = 8
    gen = torch.Generator().manual_seed(0)
    # targets the arm can reach: the end-effector positions of random configurations
    with torch.no_grad():
        target = robot.end_effector_pose(torch.rand(B, robot.nq, generator=gen, dtype=torch.float64) - 0.5)[:, :3]
    q = torch.zeros(B, robot.nq, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.Adam([q], lr=0.05)
    for it in range(300):
        opt.zero_grad()
        err = robot.end_effector_pose(q)[:, :3] - target   # (B, 3): an op of the compiled library
        loss = (err ** 2).sum(1).mean()
        loss.backward()                                    # end_effector_pose_vjp, no tracing of the algorithm
        opt.step()
    dist = (robot.end_effector_pose(q.detach())[:, :3] - target).norm(dim=1)
    print(f"inverse kinematics for {B} targets: position error after {it + 1} steps: max {dist.max():.2e} m")
    assert dist.max() < 1e-3, dist

    hold = torch.compile(lambda q: robot.generalized_gravity(q), fullgraph=True)
    tau = hold(q.detach())
    print("gravity torques holding solution 0 (N m):", " ".join(f"{x:+.2f}" for x in tau[0].tolist()))
    torch.testing.assert_close(tau, robot.generalized_gravity(q.detach()))


if __name__ == "__main__":
    main()
