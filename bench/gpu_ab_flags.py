#!/usr/bin/env python3
"""A/B of CUDA compile-time knobs (nvcc -D macros through GRID_RBD_NVCC_FLAGS, docs/cuda.md "Knobs"): the libraries
of every (variant, robot) built at once in child processes (each one's cold build wall clock and its largest compiler
process's peak RSS), then each method timed resident on torch device tensors (launch + sync, out= given, median of
30) at the given batches, its values on 64 random states against the CPU float64 reference. The base variant is the
default flags. Markdown to --out/gpu_ab_flags.md.

    python bench/gpu_ab_flags.py --out DIR --robots go2,g1_29dof --methods rnea_grad,fd_grad,idsva_so \\
        --variant inline_big=-DGRID_CUDA_INLINE_BIG=1 [--robots-dir .gpu-deps/robots] [--build-timeout-s 300]
    python bench/gpu_ab_flags.py --out DIR --robots g1_29dof --methods all --build-only   # every row's cold build
"""
import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
import grid_rbd  # noqa: E402
from grid_rbd import _signatures  # noqa: E402
from gpu_bench import EXTRA_ROBOTS, ROBOTS, log, median, random_states, urdf_path  # noqa: E402

DEFAULT_TUNING = "-O3"  # src/driver/toolchain.c's cuda_tuning_default: a variant's flags are these plus its own


def handle(robots_dir, robot, dtype, methods, flags, precompile=False):
    """the robot's CUDA library of these methods under nvcc tuning flags (None: the defaults)"""
    file, floating = next((f, fb) for r, f, fb in ROBOTS + EXTRA_ROBOTS if r == robot)
    if flags is None:
        os.environ.pop("GRID_RBD_NVCC_FLAGS", None)
    else:
        os.environ["GRID_RBD_NVCC_FLAGS"] = flags
    kw = dict(urdf_path=urdf_path(robots_dir, file), floating_base=floating, dtype=dtype, device="cuda",
              algorithm_list=sorted(methods), verbose=False)
    name = f"ab_{robot}_{dtype}"
    return grid_rbd.precompile(name, **kw) if precompile else grid_rbd.register_robot(name, **kw)


def build_child(robots_dir, robot, dtype, methods, flags):
    t0 = time.perf_counter()
    handle(robots_dir, robot, dtype, methods.split(","), flags or None, precompile=True)
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"BUILT {time.perf_counter() - t0:.1f} {rss:.0f}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--robots-dir", default=os.environ.get("GRID_RBD_ROBOTS_DIR"))
    ap.add_argument("--robots", default="go2,g1_29dof")
    ap.add_argument("--methods", default="rnea_grad,fd_grad")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--variant", action="append", default=[], help="NAME=EXTRA_FLAGS (added to the default tuning)")
    ap.add_argument("--batches", default="1024,65536", help="batches of first-order rows")
    ap.add_argument("--so-batches", default="256,1024", help="batches of the second-order rows (O(nv^3) outputs)")
    ap.add_argument("--build-timeout-s", type=float, default=300)
    ap.add_argument("--build-only", action="store_true", help="the cold builds alone, nothing timed")
    ap.add_argument("--build-child", nargs=5, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.build_child:
        return build_child(*args.build_child)
    variants = [("base", None)] + [(v.split("=", 1)[0], f"{DEFAULT_TUNING} {v.split('=', 1)[1]}") for v in args.variant]
    robots = args.robots.split(",")
    methods = [r["name"] for r in _signatures.ROWS] if args.methods == "all" else args.methods.split(",")
    args.out.mkdir(parents=True, exist_ok=True)

    # the cold builds, all at once
    builds, procs = {}, {}
    for name, flags in variants:
        for robot in robots:
            procs[name, robot] = subprocess.Popen(
                [sys.executable, __file__, "--out", str(args.out), "--build-child", str(args.robots_dir), robot,
                 args.dtype, ",".join(methods), flags or ""], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                text=True)
    deadline = time.time() + args.build_timeout_s
    for key, p in procs.items():
        try:
            out, _ = p.communicate(timeout=max(1.0, deadline - time.time()))
            line = next((x for x in out.splitlines() if x.startswith("BUILT ")), None)
            builds[key] = tuple(map(float, line.split()[1:])) if line else f"failed: {out.strip()[-300:]}"
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            builds[key] = f"not built within {args.build_timeout_s:.0f} s"
        log(*key, "build:", builds[key])

    bl = ["| variant | flags | robot | cold build s | peak RSS MB (largest compiler process) |",
          "|---|---|---|---|---|"]
    for (name, robot), b in builds.items():
        flags = dict(variants)[name] or "(defaults)"
        bl.append(f"| {name} | `{flags}` | {robot} | " +
                  (f"{b[0]:.1f} | {b[1]:.0f} |" if isinstance(b, tuple) else f"{b} | |"))
    if args.build_only:
        text = f"# CUDA cold builds ({args.dtype}, {len(methods)} methods)\n\n" + "\n".join(bl) + "\n"
        (args.out / "gpu_ab_flags.md").write_text(text)
        print(text)
        return
    import torch
    lines = ["| robot | method | B | " + " | ".join(f"{n} (µs)" for n, _ in variants) + " | " +
             " | ".join(f"{n} / base" for n, _ in variants[1:]) + " |", "|---" * (3 + 2 * len(variants) - 1) + "|"]
    err_lines = []
    timing = {}
    for robot in robots:
        ref = None
        for name, flags in variants:
            if not isinstance(builds[name, robot], tuple):
                continue
            h = handle(args.robots_dir, robot, args.dtype, methods, flags)
            if ref is None:
                file, floating = next((f, fb) for r, f, fb in ROBOTS + EXTRA_ROBOTS if r == robot)
                ref = grid_rbd.register_robot(f"ab_ref_{robot}", urdf_path=urdf_path(args.robots_dir, file),
                                              floating_base=floating, dtype="float64", codegen=False, device="cpu",
                                              verbose=False)
            for m in methods:
                row = _signatures.row(m)
                k = len(row["inputs"])
                tup = lambda r: r if isinstance(r, tuple) else (r,)  # noqa: E731
                q, qd, u = random_states(h, 64, seed=3)
                ins = (q, qd, u)[:min(k, 3)]
                py = row["py_name"]
                got = tup(getattr(h, py)(*ins))
                want = tup(getattr(ref, py)(*(x.astype(np.float64) for x in ins)))
                err = max(float(np.abs(g.astype(np.float64) - w).max() / max(1.0, np.abs(w).max()))
                          for g, w in zip(got, want))
                err_lines.append(f"| {robot} | {m} | {name} | {err:.2e} |")
                for B in map(int, (args.so_batches if row["opt_in"] else args.batches).split(",")):
                    xs = tuple(torch.from_numpy(x).cuda() for x in random_states(h, B, seed=B)[:len(ins)])
                    outs = tuple(torch.empty((B,) + o.shape[1:], dtype=xs[0].dtype, device="cuda") for o in got)
                    outs = outs if len(outs) > 1 else outs[0]
                    fn = getattr(h, py)
                    fn(*xs, out=outs)
                    torch.cuda.synchronize()
                    t = []
                    for _ in range(30):
                        t1 = time.perf_counter()
                        fn(*xs, out=outs)
                        torch.cuda.synchronize()
                        t.append((time.perf_counter() - t1) * 1e6)
                    timing[robot, m, B, name] = median(t)
                    log(robot, m, B, name, f"{timing[robot, m, B, name]:.1f} us")
                    del outs, xs
            del h
    for robot in robots:
        for m in methods:
            for B in map(int, (args.so_batches if _signatures.row(m)["opt_in"] else args.batches).split(",")):
                ts = [timing.get((robot, m, B, n), float("nan")) for n, _ in variants]
                lines.append(f"| {robot} | {m} | {B} | " + " | ".join(f"{t:.1f}" for t in ts) + " | " +
                             " | ".join(f"{t / ts[0]:.2f}x" for t in ts[1:]) + " |")
    text = (f"# CUDA knob A/B ({args.dtype}; {torch.cuda.get_device_name()})\n\nMethods: {', '.join(methods)}.\n\n" +
            "\n".join(bl) + "\n\nResident, launch + sync, median of 30 (µs):\n\n" + "\n".join(lines) +
            "\n\nLargest relative error against the CPU float64 reference (64 random states):\n\n"
            "| robot | method | variant | error |\n|---|---|---|---|\n" + "\n".join(err_lines) + "\n")
    (args.out / "gpu_ab_flags.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
