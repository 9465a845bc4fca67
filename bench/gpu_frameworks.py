"""The JAX and PyTorch front ends on the GPU against the C ABI, resident (device arrays in and out), one run: per call
(launch + synchronisation, median wall clock) of the C entry point (CudaLibrary.time, the C-ABI figure), an eager torch
call, a jitted JAX call and a replay of a captured CUDA graph (with its kernel time from CUDA events), and the
backward pass against its forward, for float32 iiwa and g1_29dof floating at B = 1, 1024, 65536. Values are checked
against the numpy handle's host round trip first. Prints a markdown table (bench/RESULTS-gpu.md)."""

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import jax
import jax.numpy as jnp
import torch

import grid_rbd
import grid_rbd.jax as gj
import grid_rbd.torch as gt
from grid_rbd import _signatures

REPO = Path(__file__).resolve().parents[1]


def median_wall(fn, reps):
    """median over reps of one call's wall clock (fn synchronises), microseconds"""
    for _ in range(3):
        fn()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts) * 1e6


def event_time(fn, reps):
    """median kernel time of fn (launches only) between CUDA events, microseconds"""
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ts = []
    for _ in range(reps):
        e0.record()
        fn()
        e1.record()
        e1.synchronize()
        ts.append(e0.elapsed_time(e1) * 1e3)
    return statistics.median(ts)


def register(robots_dir, robot, dtype):
    urdf = REPO / "examples" / "robots" / "iiwa.urdf" if robot == "iiwa" else Path(robots_dir) / f"{robot}.urdf"
    return grid_rbd.register_robot(f"fw_bench_{robot}", urdf_path=urdf, floating_base=robot != "iiwa", dtype=dtype,
                                   device="cuda", verbose=False,
                                   algorithm_list=["inverse_dynamics", "inverse_dynamics_vjp", "crba",
                                                   "forward_dynamics", "forward_dynamics_vjp"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--robots", default="iiwa,g1_29dof")
    ap.add_argument("--batches", default="1,1024,65536")
    ap.add_argument("--robots-dir", default=str(REPO.parent / "shared" / "robots"))
    ap.add_argument("--reps", type=int, default=200)
    args = ap.parse_args()
    dtype = "float32"
    gpu = jax.devices("gpu")[0]
    stream = torch.cuda.current_stream().cuda_stream
    rows, checks = [], []
    for robot in args.robots.split(","):
        h = register(args.robots_dir, robot, dtype)
        j, t = gj.JaxRobotHandle(h), gt.TorchRobotHandle(h)
        lib = h.cuda_library
        for B in map(int, args.batches.split(",")):
            rng = np.random.default_rng(0)
            q = rng.normal(size=(B, h.nq)).astype(dtype)
            if h.floating_base:
                q[:, 3:7] /= np.linalg.norm(q[:, 3:7], axis=1, keepdims=True)
            qd, u, g = (rng.normal(size=(B, h.nv)).astype(dtype) for _ in range(3))
            tq, tqd, tu, tg = (torch.from_numpy(x).cuda() for x in (q, qd, u, g))
            jq, jqd, ju = (jax.device_put(x, gpu) for x in (q, qd, u))
            reps = args.reps if B <= 1024 else max(20, args.reps // 10)
            for name, row, tin, jin in (("inverse_dynamics", "rnea", (tq, tqd), (jq, jqd)),
                                        ("crba", "crba", (tq,), (jq,)),
                                        ("forward_dynamics", "fd", (tq, tqd, tu), (jq, jqd, ju))):
                want = getattr(h, name)(*[x.cpu().numpy() for x in tin])
                tf = getattr(t, name)
                jf = jax.jit(getattr(j, name))
                got_t, got_j = tf(*tin), jf(*jin)
                err = max(float(np.abs(got_t.cpu().numpy() - want).max()), float(np.abs(np.asarray(got_j) - want).max()))
                checks.append((robot, B, name, err / max(1.0, float(np.abs(want).max()))))
                aid = _signatures.ID[row]
                out = torch.empty_like(got_t)
                ptrs = tuple(x.data_ptr() for x in tin) + (0,) * (len(_signatures.ROWS[aid]["inputs"]) - len(tin))
                c_abi = statistics.median(lib.time(aid, 0, ptrs, (out.data_ptr(),), B, (), stream, reps, 5, False)[1])

                def torch_call():
                    tf(*tin)
                    torch.cuda.synchronize()

                def jax_call():
                    jax.block_until_ready(jf(*jin))

                graph = t.capture(name, *tin)

                def replay():
                    graph.replay()
                    torch.cuda.synchronize()

                t_torch, t_jax, t_graph = (median_wall(f, reps) for f in (torch_call, jax_call, replay))
                t_kernel = event_time(graph.replay, reps)
                rows.append((robot, B, name, c_abi, t_torch, t_jax, t_graph, t_kernel))
                print(f"{robot} B={B} {name}: C {c_abi:.1f} torch {t_torch:.1f} jax {t_jax:.1f} graph {t_graph:.1f} "
                      f"kernel {t_kernel:.1f} us", file=sys.stderr)
            # each framework's own floor on the same array: a one-element update and a synchronisation
            jinc = jax.jit(lambda x: x + 1)
            floors = (median_wall(lambda: (tq.add(1), torch.cuda.synchronize()), reps),
                      median_wall(lambda: jax.block_until_ready(jinc(jq)), reps))
            rows.append((robot, B, "floor", *floors))
            # the backward pass against its forward: torch and JAX, inverse dynamics in q and qd
            tqg, tqdg = tq.clone().requires_grad_(), tqd.clone().requires_grad_()

            def t_fwd():
                t.inverse_dynamics(tqg, tqdg)
                torch.cuda.synchronize()

            def t_fwd_bwd():
                torch.autograd.grad(t.inverse_dynamics(tqg, tqdg), (tqg, tqdg), tg)
                torch.cuda.synchronize()

            jg = jax.jit(jax.grad(lambda q, qd, g: jnp.vdot(j.inverse_dynamics(q, qd), g), argnums=(0, 1)))
            jfwd = jax.jit(j.inverse_dynamics)
            jgg = jax.device_put(g, gpu)
            bw = [median_wall(f, reps) for f in (t_fwd, t_fwd_bwd, lambda: jax.block_until_ready(jfwd(jq, jqd)),
                                                 lambda: jax.block_until_ready(jg(jq, jqd, jgg)))]
            rows.append((robot, B, "backward", *bw))
            print(f"{robot} B={B} backward: torch fwd {bw[0]:.1f} fwd+bwd {bw[1]:.1f}, jax fwd {bw[2]:.1f} "
                  f"grad {bw[3]:.1f} us", file=sys.stderr)
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, jax {jax.__version__}, {dtype}, resident "
          f"(device arrays in and out), median of per-call wall clocks (launch + synchronisation)\n")
    print("| robot | B | call | C ABI (µs) | torch eager (µs) | torch / C | jitted JAX (µs) | JAX / C | "
          "graph replay (µs) | replay − kernel (µs) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    floor = {(r, b): v for r, b, name, *v in rows if name == "floor"}
    for robot, B, name, *v in rows:
        if name in ("backward", "floor"):
            continue
        c, tt, jj, gr, k = v
        print(f"| {robot} | {B} | {name} | {c:.1f} | {tt:.1f} | {tt / c:.2f}x | {jj:.1f} | {jj / c:.2f}x | "
              f"{gr:.1f} | {gr - k:.1f} |")
    print("\nEach framework's floor on the same device array (an elementwise x + 1 and a synchronisation, median µs):")
    print("\n| robot | B | torch | jitted JAX |\n|---|---|---|---|")
    for (robot, B), (a, b) in floor.items():
        print(f"| {robot} | {B} | {a:.1f} | {b:.1f} |")
    print("\n| robot | B | torch forward (µs) | torch forward + backward (µs) | backward / forward | JAX forward (µs) | "
          "JAX grad (µs) | backward / forward |")
    print("|---|---|---|---|---|---|---|---|")
    for robot, B, name, *v in rows:
        if name == "backward":
            f, fb, jf_, jg_ = v
            print(f"| {robot} | {B} | {f:.1f} | {fb:.1f} | {(fb - f) / f:.2f}x | {jf_:.1f} | {jg_:.1f} | "
                  f"{(jg_ - jf_) / jf_:.2f}x |")
    worst = max(checks, key=lambda c: c[3])
    print(f"\nValues: the largest relative difference of a torch or JAX result from the numpy handle's host round trip "
          f"on the same inputs: {worst[3]:.1e} ({worst[0]} B={worst[1]} {worst[2]}; float32, the same kernels)")


if __name__ == "__main__":
    main()
