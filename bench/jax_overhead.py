"""The JAX front end's cost per call against the numpy handle on the same library (CPU, one process, same run):
a jitted call on device-resident jax arrays vs the numpy call, for forward rows, the reverse-mode gradient, JAX's
own dispatch floor (a jitted identity) and CRBA written into a donated out= buffer.
Prints a markdown table (bench/RESULTS.md, issue 28's section)."""

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

import jax
import jax.numpy as jnp

REPO = Path(__file__).resolve().parents[1]


def per_call(fn, reps, repeat=7):
    """the best of `repeat` means over `reps` calls, in microseconds"""
    fn()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        best = min(best, (time.perf_counter() - t0) / reps)
    return best * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--robots", default="iiwa,go2")
    ap.add_argument("--batches", default="1,256")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    if args.dtype == "float64":
        jax.config.update("jax_enable_x64", True)
    import grid_rbd
    rows = []
    for robot in args.robots.split(","):
        urdf = REPO / "examples" / "robots" / "iiwa.urdf" if robot == "iiwa" else \
            REPO.parent / "shared" / "robots" / f"{robot}.urdf"
        floating = robot != "iiwa"
        h = grid_rbd.register_robot(f"bench_{robot}", urdf_path=urdf, floating_base=floating, dtype=args.dtype,
                                    backend="jax", verbose=False, num_threads=args.threads)
        n = h.numpy_handle
        for B in map(int, args.batches.split(",")):
            rng = np.random.default_rng(0)
            q = rng.normal(size=(B, h.nq)).astype(args.dtype)
            if floating:
                q[:, 3:7] /= np.linalg.norm(q[:, 3:7], axis=1, keepdims=True)
            qd = rng.normal(size=(B, h.nv)).astype(args.dtype)
            u = rng.normal(size=(B, h.nv)).astype(args.dtype)
            jq, jqd, ju = jax.device_put(q), jax.device_put(qd), jax.device_put(u)
            out = np.empty((B, h.nv), args.dtype)
            cases = [
                ("inverse_dynamics", lambda: n.inverse_dynamics(q, qd, out=out),
                 jax.jit(lambda q, qd: h.inverse_dynamics(q, qd)), (jq, jqd)),
                ("forward_dynamics", lambda: n.forward_dynamics(q, qd, u, out=out),
                 jax.jit(lambda q, qd, u: h.forward_dynamics(q, qd, u)), (jq, jqd, ju)),
                ("crba", lambda: n.crba(q), jax.jit(h.crba), (jq,)),
                ("grad of sum(inverse_dynamics) in q, qd (vs rnea_vjp)",
                 lambda: n.inverse_dynamics_vjp(q, qd, u),
                 jax.jit(jax.grad(lambda q, qd, g: jnp.vdot(h.inverse_dynamics(q, qd), g), argnums=(0, 1))),
                 (jq, jqd, ju)),
            ]
            # JAX's own floor: a jitted identity on the same array (no FFI call)
            cases.append(("jitted identity on q (JAX's dispatch floor; numpy column: q.copy())", lambda: q.copy(),
                          jax.jit(lambda q: q), (jq,)))
            # donation: CRBA written into a donated out= buffer (input_output_aliases) against a fresh output
            mm = np.empty((B, h.nv, h.nv), args.dtype)
            donated = jax.jit(lambda q, out: h.crba(q, out=out), donate_argnums=1)
            buf = [jnp.zeros((B, h.nv, h.nv), args.dtype)]

            def run_donated():
                buf[0] = donated(jq, buf[0])
                return buf[0]
            cases.append(("crba into a donated out= (vs numpy out=)", lambda: n.crba(q, out=mm),
                          lambda: run_donated(), ()))
            for name, np_fn, jfn, jargs in cases:
                reps = max(20, int(2e4 / B))
                t_np = per_call(np_fn, reps)
                t_jax = per_call(lambda: jax.block_until_ready(jfn(*jargs)), reps)
                rows.append((robot, B, name, t_np, t_jax))
                print(f"{robot} B={B} {name}: numpy {t_np:.2f} us, jax {t_jax:.2f} us", file=sys.stderr)
    print(f"jax {jax.__version__}, {args.dtype}, {args.threads} thread(s), CPU {os.cpu_count()} cores\n")
    print("| robot | B | call | numpy handle (µs) | jitted JAX (µs) | JAX / numpy |")
    print("|---|---|---|---|---|---|")
    for robot, B, name, a, b in rows:
        print(f"| {robot} | {B} | {name} | {a:.2f} | {b:.2f} | {b / a:.2f}x |")


if __name__ == "__main__":
    main()
