"""grid-rbd energies: a batch of passive KUKA iiwa motions (u = 0, RK4), whose mechanical energy must stay constant."""

from pathlib import Path

import numpy as np

import grid_rbd

URDF = Path(__file__).resolve().parent / "robots" / "iiwa.urdf"


def main():
    robot = grid_rbd.register_robot("iiwa14", urdf_path=URDF, dtype="float64")
    rng = np.random.default_rng(1)
    B, dt, steps = 64, 1e-3, 500
    q = rng.uniform(-1.0, 1.0, (B, robot.nq))
    qd = rng.uniform(-1.0, 1.0, (B, robot.nv))
    u = np.zeros((B, robot.nv))

    def f(q, qd):
        return qd, robot.forward_dynamics(q, qd, u)

    E0 = robot.energy(q, qd)  # (B, 3): kinetic, potential, mechanical [J]
    for _ in range(steps):
        k1 = f(q, qd)
        k2 = f(q + 0.5 * dt * k1[0], qd + 0.5 * dt * k1[1])
        k3 = f(q + 0.5 * dt * k2[0], qd + 0.5 * dt * k2[1])
        k4 = f(q + dt * k3[0], qd + dt * k3[1])
        q = q + dt / 6 * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0])
        qd = qd + dt / 6 * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1])
    E1 = robot.energy(q, qd)

    np.set_printoptions(precision=4, suppress=True)
    print(f"energy(q, qd) -> {E0.shape}: [kinetic, potential, mechanical] of state 0 at t = 0: {E0[0]}")
    print(f"                              and at t = {steps * dt:.1f} s: {E1[0]}")
    drift = np.abs(E1[:, 2] - E0[:, 2]) / np.abs(E0).max(axis=1)
    print(f"worst relative drift of the mechanical energy over {B} passive motions (RK4, dt = {dt}): {drift.max():.1e}")
    assert drift.max() < 1e-6, "a passive motion must conserve its energy"


if __name__ == "__main__":
    main()
