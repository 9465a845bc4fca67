"""grid-rbd centre of mass and centroidal momentum: a batch of KUKA iiwa motions on a floating base.

com(q) gives the centre of mass and its Jacobian, ccrba(q, qd) the centroidal momentum matrix A and momentum h = A qd.
The script checks what a whole-body controller relies on: the centre of mass moves at J qd (against a central
difference along the motion), h's linear part is the total mass times that velocity, and with no external force
(no gravity) the momentum stays constant along a simulated motion.
"""

from pathlib import Path

import numpy as np

import grid_rbd

URDF = Path(__file__).resolve().parent / "robots" / "iiwa.urdf"


def integrate(q, qd, dt):
    """q advanced by qd dt on the free flyer (position in the world, quaternion xyzw rotated in the body) and joints"""
    q = q.copy()
    x, w = q[:, 3:7], qd[:, 3:6] * dt
    angle = np.linalg.norm(w, axis=1, keepdims=True)
    axis = np.divide(w, angle, out=np.zeros_like(w), where=angle > 0)
    dq = np.concatenate([axis * np.sin(angle / 2), np.cos(angle / 2)], axis=1)
    # q * dq (Hamilton product, xyzw)
    v1, s1, v2, s2 = x[:, :3], x[:, 3:], dq[:, :3], dq[:, 3:]
    x_new = np.concatenate([s1 * v2 + s2 * v1 + np.cross(v1, v2), s1 * s2 - np.sum(v1 * v2, axis=1, keepdims=True)], 1)
    R = quat_to_matrix(x)
    q[:, :3] += np.einsum("bij,bj->bi", R, qd[:, :3]) * dt
    q[:, 3:7] = x_new / np.linalg.norm(x_new, axis=1, keepdims=True)
    q[:, 7:] += qd[:, 6:] * dt
    return q


def quat_to_matrix(x):
    a, b, c, d = x[:, 3], x[:, 0], x[:, 1], x[:, 2]
    return np.stack([np.stack([a * a + b * b - c * c - d * d, 2 * (b * c - a * d), 2 * (b * d + a * c)], 1),
                     np.stack([2 * (b * c + a * d), a * a - b * b + c * c - d * d, 2 * (c * d - a * b)], 1),
                     np.stack([2 * (b * d - a * c), 2 * (c * d + a * b), a * a - b * b - c * c + d * d], 1)], 1)


def main():
    robot = grid_rbd.register_robot("iiwa_free", urdf_path=URDF, floating_base=True, dtype="float64", gravity=0.0,
                                    algorithm_list=["com", "ccrba", "forward_dynamics"])
    rng = np.random.default_rng(2)
    B = 32
    q = np.concatenate([rng.uniform(-1, 1, (B, 3)), np.tile([0.0, 0.0, 0.0, 1.0], (B, 1)),
                        rng.uniform(-1, 1, (B, robot.nv - 6))], axis=1)
    qd = rng.uniform(-1, 1, (B, robot.nv))

    c, J = robot.com(q)                # (B, 3), (B, 3, nv)
    A, h = robot.ccrba(q, qd)          # (B, 6, nv), (B, 6)
    eps = 1e-6
    dc = (robot.com(integrate(q, qd, eps))[0] - robot.com(integrate(q, qd, -eps))[0]) / (2 * eps)
    cdot = np.einsum("bij,bj->bi", J, qd)
    mass = robot.total_mass
    print(f"com(q) -> {c.shape}, {J.shape}; ccrba(q, qd) -> {A.shape}, {h.shape}; mass {mass:.3f} kg")
    print(f"|J qd - central difference of com|: {np.abs(cdot - dc).max():.1e} m/s")
    print(f"|h_linear - m J qd|: {np.abs(h[:, :3] - mass * cdot).max():.1e} kg m/s")
    assert np.abs(cdot - dc).max() < 1e-7 and np.abs(h[:, :3] - mass * cdot).max() < 1e-9

    # a free motion without gravity (u = 0, RK4): the centroidal momentum is conserved
    dt, steps, u = 1e-3, 200, np.zeros((B, robot.nv))
    h0 = h
    for _ in range(steps):
        def f(q, qd):
            return qd, robot.forward_dynamics(q, qd, u)
        k1 = f(q, qd)
        k2 = f(integrate(q, k1[0], dt / 2), qd + dt / 2 * k1[1])
        k3 = f(integrate(q, k2[0], dt / 2), qd + dt / 2 * k2[1])
        k4 = f(integrate(q, k3[0], dt), qd + dt * k3[1])
        q = integrate(q, (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0]) / 6, dt)
        qd = qd + dt / 6 * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1])
    drift = np.abs(robot.ccrba(q, qd)[1] - h0).max() / np.abs(h0).max()
    print(f"relative drift of h over {steps} steps of a free motion (no gravity): {drift:.1e}")
    assert drift < 1e-6


if __name__ == "__main__":
    main()
