#!/usr/bin/env python3
"""Wide outputs on the GPU (issue 7, item 5): g1_29dof floating CRBA and Minv (35x35 per state) at B = 65536 and
1M, float32 and float64: the unrolled chunked output path against the rolled schedule with 1..32 lanes per state
(GRID_CUDA_GROUP), each checked against the CPU float64 reference first. Markdown to --out/gpu_wide.md.

    python bench/gpu_wide.py --out DIR [--robots-dir .gpu-deps/robots] [--jobs 16]
"""
import argparse
import concurrent.futures
import multiprocessing
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gpu_bench as gb  # noqa: E402

# variant -> (nvcc flags, what, codegen schedule)
WIDE = {
    "chunked": ("-O3", "default: unrolled, 32-element chunks through a 32x33 tile per warp", "auto"),
    "rolled": ("-O3", "rolled, one thread per state", "rolled"),
    "group4": ("-O3 -DGRID_CUDA_GROUP=4", "rolled, 4 lanes per state (columns loops split)", "rolled"),
    "group8": ("-O3 -DGRID_CUDA_GROUP=8", "rolled, 8 lanes per state", "rolled"),
    "group16": ("-O3 -DGRID_CUDA_GROUP=16", "rolled, 16 lanes per state", "rolled"),
    "group32": ("-O3 -DGRID_CUDA_GROUP=32", "rolled, a warp per state", "rolled"),
}
for k, (flags, what, _) in WIDE.items():
    gb.VARIANTS["wide_" + k] = (flags, what, "resident")
DTYPES = ("float32", "float64")


def job(spec):
    robots_dir, dtype, k, arch = spec
    t0 = time.perf_counter()
    try:
        gb.register(robots_dir, "g1_29dof", dtype, variant="wide_" + k, precompile=True, cuda_arch=arch,
                    schedule=WIDE[k][2])
        return spec, time.perf_counter() - t0, None
    except Exception as e:
        return spec, time.perf_counter() - t0, f"{type(e).__name__}: {str(e)[:300]}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--robots-dir", default=None)
    ap.add_argument("--jobs", type=int, default=16)
    ap.add_argument("--budget-s", type=float, default=400)
    ap.add_argument("--variants", default="", help="comma-separated keys of WIDE (default: all)")
    ap.add_argument("--dtypes", default=",".join(DTYPES))
    args = ap.parse_args()
    deadline = time.time() + args.budget_s
    from grid_rbd import cuda
    p = cuda.probe()
    arch = cuda._arch_of(p["devices"][0][1])
    variants = args.variants.split(",") if args.variants else list(WIDE)
    dtypes = args.dtypes.split(",")
    specs = [(args.robots_dir, d, k, arch) for d in dtypes for k in variants]
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=args.jobs, mp_context=ctx) as pool:
        for fut in concurrent.futures.as_completed([pool.submit(job, sp) for sp in specs]):
            spec, secs, err = fut.result()
            gb.log(f"built {spec[1]} {spec[2]} in {secs:.1f} s {err or ''}")
    bench = gb.Bench(args)
    ref = gb.grid_rbd.register_robot("wide_ref", urdf_path=gb.urdf_path(args.robots_dir, "g1_29dof.urdf"),
                                     floating_base=True, dtype="float64", codegen=False, device="cpu", verbose=False)
    rows = []
    for dtype in dtypes:
        for k in variants:
            if time.time() > deadline:
                rows.append((dtype, k, None, "out of time"))
                continue
            try:
                h = gb.register(args.robots_dir, "g1_29dof", dtype, variant="wide_" + k, schedule=WIDE[k][2])
            except Exception as e:
                rows.append((dtype, k, None, f"{type(e).__name__}: {e}"))
                continue
            # accuracy: 999 states (a partial last warp) against the float64 reference
            q, _, _ = gb.random_states(h, 999, seed=7)
            err = {}
            for algo in ("crba", "minv"):
                got = gb.method(h, algo)(q).astype(np.float64)
                want = gb.method(ref, algo)(q.astype(np.float64))
                err[algo] = float(np.max(np.abs(got - want)) / np.max(np.abs(want)))
            times = {}
            for n in (65536, 1048576):
                arrays = gb.random_states(h, n, seed=n)
                sets = bench.device_sets(n, arrays)
                for algo in ("crba", "minv"):
                    r = bench.resident(h, algo, n, [gb.inputs_of(algo, *x) for x in sets])
                    times[(algo, n)] = (r["res_us"], r["finite"])
                del sets
                bench.torch.cuda.empty_cache()
            rows.append((dtype, k, (err, times), None))
            gb.log(dtype, k, err, {f"{a}@{n}": f"{t:.1f}" for (a, n), (t, _) in times.items()})
    L = ["# g1_29dof floating CRBA / Minv on the H200: wide-output variants", "",
         "res µs = launch + stream sync on device pointers (median, host clock), input sets rotated past the L2. "
         "% bound: states/s against ../shared/anchors.md's g1 CRBA bound 1.8e9 (fp32; halved for fp64; Minv "
         "moves the same bytes). rel err: max |x - ref| / max |ref| over 999 states against the CPU float64 "
         "reference.", "",
         "| dtype | variant | flags | CRBA rel err | Minv rel err | CRBA 64K µs | Minv 64K µs | CRBA 1M µs | "
         "Minv 1M µs | CRBA 1M % bound | Minv 1M % bound |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for dtype, k, res, note in rows:
        if res is None:
            L.append(f"| {dtype} | {k} | `{WIDE[k][0]}` {WIDE[k][2]} | {note} |||||||| ")
            continue
        err, times = res
        bound = 1.8e9 * (0.5 if dtype == "float64" else 1.0)
        pct = {a: 100 * 1048576 / (times[(a, 1048576)][0] * 1e-6) / bound for a in ("crba", "minv")}
        fin = all(f for _, f in times.values())
        L.append(f"| {dtype} | {k} | `{WIDE[k][0]}` {WIDE[k][2]} | {err['crba']:.2e} | {err['minv']:.2e} | "
                 f"{times[('crba', 65536)][0]:.1f} | {times[('minv', 65536)][0]:.1f} | "
                 f"{times[('crba', 1048576)][0]:.1f} | {times[('minv', 1048576)][0]:.1f} | {pct['crba']:.1f} | "
                 f"{pct['minv']:.1f} |" + ("" if fin else " (non-finite output!)"))
    L += ["", "Variants: " + "; ".join(f"{k}: {w}" for k, (_, w, _) in WIDE.items()), ""]
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "gpu_wide.md").write_text("\n".join(L))
    print("\n".join(L))
    return 0


if __name__ == "__main__":
    sys.exit(main())
