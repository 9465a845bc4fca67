#!/usr/bin/env python3
"""The second-order rows (idsva_so, fdsva_so) on CUDA: the cold build of a library holding them, each checked against
the CPU float64 reference (float64 to 1e-10, float32 per tensor as bench/second_order_accuracy.py measures it), B = 1
against B = 1000 slot by slot, then timed resident on torch device tensors (launch + sync, out= given) at B = 256 and
1024, against the specification system's figures (../shared/anchors.md). Markdown to --out/gpu_second_order.md.

    python bench/gpu_second_order.py --out DIR [--robots-dir .gpu-deps/robots] [--robots iiwa,go2,g1_29dof]
"""
import argparse
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "python"))
sys.path.insert(0, str(REPO / "bench"))
import grid_rbd  # noqa: E402
from gpu_bench import ROBOTS, log, median, random_states, urdf_path  # noqa: E402

# the spec system (RTX 5090, float32), idsva_so whole batch in us; fdsva_so per problem at B = 256 in us
SPEC_IDSVA = {"iiwa": {256: 39.7, 1024: 105.0}, "go2": {256: 476.0, 1024: 1167.0}, "g1_29dof": {256: 1518.0, 1024: 5214.0}}
SPEC_FDSVA_PER_PROBLEM = {"iiwa": 0.424, "go2": 5.78, "g1_29dof": 77.0}
METHODS = ("idsva_so", "fdsva_so")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--robots-dir", default=None)
    ap.add_argument("--robots", default="iiwa,go2")
    ap.add_argument("--budget-s", type=float, default=400)
    ap.add_argument("--dtypes", default="float64,float32")
    ap.add_argument("--device", default="cuda", help="cpu: the same run on the CPU library (a dry run of this script)")
    args = ap.parse_args()
    import torch
    deadline = time.time() + args.budget_s
    sync = torch.cuda.synchronize if args.device == "cuda" else (lambda: None)
    args.out.mkdir(parents=True, exist_ok=True)
    lines = ["| robot | dtype | method | build s | max rel. error vs float64 ref | slots equal | B=256 us | "
             "B=1024 us | spec system B=256 | spec B=1024 | ratio B=1024 |", "|---" * 11 + "|"]
    for robot in args.robots.split(","):
        file, floating = next((f, fb) for r, f, fb in ROBOTS if r == robot)
        path = urdf_path(args.robots_dir, file)
        ref = grid_rbd.register_robot(f"so_gpu_ref_{robot}", urdf_path=path, floating_base=floating, dtype="float64",
                                      codegen=False, device="cpu", verbose=False)
        for dtype in args.dtypes.split(","):
            if time.time() > deadline:
                lines.append(f"| {robot} | {dtype} | out of time |")
                continue
            t0 = time.perf_counter()
            try:
                h = grid_rbd.register_robot(f"so_gpu_{robot}_{dtype}", urdf_path=path, floating_base=floating,
                                            dtype=dtype, device=args.device, algorithm_list=list(METHODS) + ["forward_dynamics"],
                                            verbose=False)
            except Exception as e:
                lines.append(f"| {robot} | {dtype} | build failed: {type(e).__name__}: {str(e)[:300]} |")
                continue
            build = time.perf_counter() - t0
            log(robot, dtype, "built in", f"{build:.1f} s")
            q, qd, u = random_states(h, 64, seed=3)
            for m in METHODS:
                args3 = (q, qd, u)
                got = getattr(h, m)(*args3)
                want = getattr(ref, m)(*(x.astype(np.float64) for x in args3))
                err = max(float(np.abs(g.astype(np.float64) - w).max() / max(1.0, np.abs(w).max()))
                          for g, w in zip(got, want))
                one = [x[:1] for x in args3]
                many = [np.ascontiguousarray(np.repeat(x[:1], 1000, axis=0)) for x in args3]
                a1, am = getattr(h, m)(*one), getattr(h, m)(*many)
                same = all(np.array_equal(np.repeat(x, 1000, axis=0), y) for x, y in zip(a1, am))
                times = {}
                for B in (256, 1024):
                    qs, vs, us = random_states(h, B, seed=B)
                    tq, tv, tu = (torch.from_numpy(x).to(args.device) for x in (qs, vs, us))
                    outs = tuple(torch.empty((B,) + (h.nv,) * 3, dtype=tq.dtype, device=args.device) for _ in range(4))
                    if args.device == "cpu":
                        tq, tv, tu, outs = qs, vs, us, tuple(o.numpy() for o in outs)
                    fn = getattr(h, m)
                    fn(tq, tv, tu, out=outs)
                    sync()
                    t = []
                    for _ in range(30):
                        t1 = time.perf_counter()
                        fn(tq, tv, tu, out=outs)
                        sync()
                        t.append((time.perf_counter() - t1) * 1e6)
                    times[B] = median(t)
                    del outs
                spec = SPEC_IDSVA.get(robot, {}) if m == "idsva_so" else \
                    {B: SPEC_FDSVA_PER_PROBLEM[robot] * B for B in (256, 1024)} if robot in SPEC_FDSVA_PER_PROBLEM else {}
                ratio = times[1024] / spec[1024] if 1024 in spec else float("nan")
                lines.append(f"| {robot} | {dtype} | {m} | {build:.1f} | {err:.2e} | {same} | {times[256]:.1f} | "
                             f"{times[1024]:.1f} | {spec.get(256, float('nan')):.1f} | {spec.get(1024, float('nan')):.1f} "
                             f"| {ratio:.2f} |")
                log(lines[-1])
            del h
    text = "# The second-order rows on CUDA\n\n" + "\n".join(lines) + "\n"
    (args.out / "gpu_second_order.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
