"""The cost of output_convention="mujoco" for the derivative rows on the CPU: the same float64 generated library
called in both conventions (one thread, B = 256, best of 7 x 5 calls), microseconds per state, as a markdown table.

    .venv/bin/python bench/mujoco_convention_cost.py
"""
import sys, time, numpy as np
sys.path.insert(0, "tests/python")  # robot_cases: the shared robots
import grid_rbd
from robot_cases import SHARED_ROBOTS
rows = []
for robot in ("go2", "atlas", "g1_29dof"):
    hs = {c: grid_rbd.register_robot(f"mjb_{robot}_{c}", urdf_path=SHARED_ROBOTS / f"{robot}.urdf", floating_base=True,
                                     dtype="float64", output_convention=c, verbose=False, num_threads=1)
          for c in ("pinocchio", "mujoco")}
    h = hs["pinocchio"]
    B = 256
    rng = np.random.default_rng(0)
    q = rng.uniform(-1, 1, (B, h.nq)); q[:, 3:7] /= np.linalg.norm(q[:, 3:7], axis=1, keepdims=True)
    qd = rng.uniform(-1, 1, (B, h.nv)); u = rng.uniform(-1, 1, (B, h.nv)); g = rng.normal(size=(B, h.nv))
    calls = {"rnea_grad": lambda h: h.inverse_dynamics_gradient(q, qd, u), "fd_grad": lambda h: h.forward_dynamics_gradient(q, qd, u),
             "rnea_vjp": lambda h: h.inverse_dynamics_vjp(q, qd, g, u), "fd_vjp": lambda h: h.forward_dynamics_vjp(q, qd, u, g)}
    for name, f in calls.items():
        t = {}
        for c, hh in hs.items():
            f(hh)
            best = 1e9
            for _ in range(7):
                t0 = time.perf_counter(); [f(hh) for _ in range(5)]; best = min(best, (time.perf_counter() - t0) / 5)
            t[c] = best / B * 1e6
        rows.append((robot, name, t["pinocchio"], t["mujoco"]))
        print(f"| {robot} floating | {name} | {t['pinocchio']:.2f} | {t['mujoco']:.2f} | {t['mujoco']/t['pinocchio']:.2f} |", flush=True)
