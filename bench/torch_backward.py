"""The torch backward of inverse dynamics on the CPU: forward, forward + backward in (q, qd), and the share of q's
pullback onto the nq-wide q, with the library's q_pullback row (one call) against QMap's torch operations (what the
backward ran before the row), float32, median of per-call wall clocks, same run.

    taskset -c 1 .venv/bin/python bench/torch_backward.py [--robots iiwa,go2,g1_29dof] [--batches 1,1024]
"""
import argparse
from pathlib import Path

import numpy as np
import torch

import grid_rbd
from gpu_frameworks import median_wall  # (bench/: the same median of per-call wall clocks)

ROBOTS = {"iiwa": False, "go2": True, "g1_29dof": True}
SHARED = Path(__file__).resolve().parents[2] / "shared" / "robots"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--robots", default="iiwa,go2,g1_29dof")
    ap.add_argument("--batches", default="1,1024")
    ap.add_argument("--reps", type=int, default=400)
    a = ap.parse_args()
    torch.set_num_threads(1)
    print("| robot | B | forward (µs) | forward + backward, q_pullback row (µs) | with QMap's torch ops (µs) | row / ops |")
    print("|---|---|---|---|---|---|")
    for robot in a.robots.split(","):
        t = grid_rbd.register_robot(f"{robot}_tbw", urdf_path=str(SHARED / f"{robot}.urdf"), floating_base=ROBOTS[robot],
                                    dtype="float32", backend="torch", verbose=False, cache_dir="build/bench/grid-cache-tbw")
        for B in (int(b) for b in a.batches.split(",")):
            rng = np.random.default_rng(0)
            q = torch.from_numpy(rng.standard_normal((B, t.nq)).astype(np.float32)).requires_grad_()
            qd = torch.from_numpy(rng.standard_normal((B, t.nv)).astype(np.float32)).requires_grad_()
            g = torch.ones(B, t.nv)
            fwd = median_wall(lambda: t.inverse_dynamics(q, qd), a.reps)
            both = lambda: torch.autograd.grad(t.inverse_dynamics(q, qd), (q, qd), g)
            row_id = t._q_row
            with_row = median_wall(both, a.reps)
            # the same backward with QMap's operations (the path without the row)
            t._q_row = None
            with_ops = median_wall(both, a.reps)
            t._q_row = row_id
            # both give the same gradient (float32: within 1e-5 of its largest entry)
            got_row = both()
            t._q_row = None
            got_ops = both()
            t._q_row = row_id
            for x, y in zip(got_row, got_ops):
                assert (x - y).abs().max() <= 1e-5 * y.abs().max(), (robot, B, float((x - y).abs().max()))
            print(f"| {robot} | {B} | {fwd:.1f} | {with_row:.1f} | {with_ops:.1f} | {with_row / with_ops:.2f} |",
                  flush=True)


if __name__ == "__main__":
    main()
