"""The JAX and PyTorch front ends' cost per call against the numpy handle on the same library (CPU, one process, same
run): a jitted JAX call on device-resident arrays and an eager torch call on CPU tensors vs the numpy call, for
forward rows, the reverse-mode gradient, each framework's own floor and an output written into a given buffer
(donated under jit, out= in torch). Prints a markdown table (bench/RESULTS.md, issue 28's section)."""

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

import jax
import jax.numpy as jnp
import torch

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


def cases(j, t, B, dtype):
    """(call, numpy, jax, torch) zero-argument callables of one robot and batch: j the JaxRobotHandle, t the
    TorchRobotHandle, on one numpy handle"""
    n = j.numpy_handle
    floating = n.floating_base
    rng = np.random.default_rng(0)
    q = rng.normal(size=(B, n.nq)).astype(dtype)
    if floating:
        q[:, 3:7] /= np.linalg.norm(q[:, 3:7], axis=1, keepdims=True)
    qd = rng.normal(size=(B, n.nv)).astype(dtype)
    u = rng.normal(size=(B, n.nv)).astype(dtype)
    jq, jqd, ju = jax.device_put(q), jax.device_put(qd), jax.device_put(u)
    tq, tqd, tu = torch.from_numpy(q), torch.from_numpy(qd), torch.from_numpy(u)
    out = np.empty((B, n.nv), dtype)
    mm, tmm = np.empty((B, n.nv, n.nv), dtype), torch.empty(B, n.nv, n.nv, dtype=t.dtype)
    jid, jfd, jcrba = (jax.jit(f) for f in (j.inverse_dynamics, j.forward_dynamics, j.crba))
    jgrad = jax.jit(jax.grad(lambda q, qd, g: jnp.vdot(j.inverse_dynamics(q, qd), g), argnums=(0, 1)))
    tqg, tqdg = tq.clone().requires_grad_(), tqd.clone().requires_grad_()
    donated = jax.jit(lambda q, out: j.crba(q, out=out), donate_argnums=1)
    buf = [jnp.zeros((B, n.nv, n.nv), dtype)]

    def run_donated():
        buf[0] = donated(jq, buf[0])
        return buf[0]

    ident = jax.jit(lambda q: q)
    block = jax.block_until_ready
    return [
        ("inverse_dynamics", lambda: n.inverse_dynamics(q, qd, out=out), lambda: block(jid(jq, jqd)),
         lambda: t.inverse_dynamics(tq, tqd)),
        ("forward_dynamics", lambda: n.forward_dynamics(q, qd, u, out=out), lambda: block(jfd(jq, jqd, ju)),
         lambda: t.forward_dynamics(tq, tqd, tu)),
        ("crba", lambda: n.crba(q), lambda: block(jcrba(jq)), lambda: t.crba(tq)),
        ("gradient of g . inverse_dynamics in q, qd (numpy: the rnea_vjp row)",
         lambda: n.inverse_dynamics_vjp(q, qd, u), lambda: block(jgrad(jq, jqd, ju)),
         lambda: torch.autograd.grad(t.inverse_dynamics(tqg, tqdg), (tqg, tqdg), tu)),
        ("the framework's floor (numpy: q.copy(); JAX: a jitted identity; torch: q.clone())", lambda: q.copy(),
         lambda: block(ident(jq)), lambda: tq.clone()),
        ("crba into a given buffer (numpy and torch out=, JAX donated)", lambda: n.crba(q, out=mm),
         lambda: block(run_donated()), lambda: t.crba(tq, out=tmm)),
    ]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--robots", default="iiwa,go2")
    ap.add_argument("--batches", default="1,256")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    if args.dtype == "float64":
        jax.config.update("jax_enable_x64", True)
    torch.set_num_threads(args.threads)  # (torch's idle pool threads spinning beside the call skew one-thread times)
    import grid_rbd
    from grid_rbd.jax import JaxRobotHandle
    from grid_rbd.torch import TorchRobotHandle
    rows = []
    for robot in args.robots.split(","):
        urdf = REPO / "examples" / "robots" / "iiwa.urdf" if robot == "iiwa" else \
            REPO.parent / "shared" / "robots" / f"{robot}.urdf"
        h = grid_rbd.register_robot(f"bench_{robot}", urdf_path=urdf, floating_base=robot != "iiwa", dtype=args.dtype,
                                    verbose=False, num_threads=args.threads)
        j, t = JaxRobotHandle(h), TorchRobotHandle(h)
        for B in map(int, args.batches.split(",")):
            for name, np_fn, jax_fn, torch_fn in cases(j, t, B, args.dtype):
                reps = max(20, int(2e4 / B))
                t_np, t_jax, t_torch = (per_call(f, reps) for f in (np_fn, jax_fn, torch_fn))
                rows.append((robot, B, name, t_np, t_jax, t_torch))
                print(f"{robot} B={B} {name}: numpy {t_np:.2f} us, jax {t_jax:.2f} us, torch {t_torch:.2f} us",
                      file=sys.stderr)
    print(f"jax {jax.__version__}, torch {torch.__version__}, {args.dtype}, {args.threads} thread(s), "
          f"CPU {os.cpu_count()} cores\n")
    print("| robot | B | call | numpy handle (µs) | jitted JAX (µs) | JAX / numpy | eager torch (µs) | "
          "torch / numpy |")
    print("|---|---|---|---|---|---|---|---|")
    for robot, B, name, a, b, c in rows:
        print(f"| {robot} | {B} | {name} | {a:.2f} | {b:.2f} | {b / a:.2f}x | {c:.2f} | {c / a:.2f}x |")


if __name__ == "__main__":
    main()
