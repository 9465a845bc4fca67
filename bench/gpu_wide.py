#!/usr/bin/env python3
"""Wide outputs on the GPU under compile-time variants: by default g1_29dof floating CRBA and Minv (35x35 per state)
at B = 65536 and 1M (issue 7, item 5); --robots / --algos / --sizes pick others (the gradients of issue 10). The
unrolled path against the rolled schedule with 1..32 lanes per state (GRID_CUDA_GROUP), each checked against the CPU
float64 reference first. Markdown to --out/gpu_wide<tag>.md.

    python bench/gpu_wide.py --out DIR [--robots-dir .gpu-deps/robots] [--jobs 16]
    python bench/gpu_wide.py --out DIR --robots go2,g1_29dof --algos rnea_grad,rnea_vjp,fd_grad --sizes 256,1024,65536
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
    "chunked": ("-O3", "the default schedule (AUTO; wide unrolled outputs in 32-element chunks through a 32x33 tile per warp)", "auto"),
    "rolled": ("-O3", "rolled, one thread per state", "rolled"),
    "group4": ("-O3 -DGRID_CUDA_GROUP=4", "rolled, 4 lanes per state (columns loops split)", "rolled"),
    "group8": ("-O3 -DGRID_CUDA_GROUP=8", "rolled, 8 lanes per state", "rolled"),
    "group16": ("-O3 -DGRID_CUDA_GROUP=16", "rolled, 16 lanes per state", "rolled"),
    "group32": ("-O3 -DGRID_CUDA_GROUP=32", "rolled, a warp per state", "rolled"),
    "defaultpool": ("-O3 -DGRID_CUDA_POOL_KEEP=0", "AUTO, workspace from the process's default pool (before run 15)",
                    "auto"),
    "nosplit": ("-O3 -DGRID_CUDA_SPLIT_MAX=0 -DGRID_CUDA_SPLIT_MAX_ROLLED=0",
                "AUTO, no split pieces: one thread (or a rolled group) per state at every batch size (before run 16)", "auto"),
    "split64k": ("-O3 -DGRID_CUDA_SPLIT_MAX=65536", "AUTO, split pieces up to 65536 states (default: 4096)", "auto"),
    "unstaged": ("-O3 -DGRID_CUDA_STAGED_MAX=0",
                 "AUTO, the FD gradient's composite kernel at every batch size, not its stages (before run 17)", "auto"),
    "staged8m": ("-O3 -DGRID_CUDA_STAGED_BYTES=8388608", "AUTO, the staged FD gradient in slices of 8 MB of arrays", "auto"),
    "staged32m": ("-O3 -DGRID_CUDA_STAGED_BYTES=33554432", "AUTO, the staged FD gradient in slices of 32 MB of arrays",
                  "auto"),
    "unfused": ("-O3 -DGRID_CUDA_SPLIT_MAX=0", "AUTO, the staged FD gradient's FD and M^-1 in two launches (and no split "
                "pieces beside unrolled kernels): before the fused first stage", "auto"),
    "block64": ("-O3 -DGRID_CUDA_BLOCK=64", "AUTO, 64 threads per block (default 128)", "auto"),
    "block32": ("-O3 -DGRID_CUDA_BLOCK=32", "AUTO, 32 threads per block", "auto"),
    "block128": ("-O3 -DGRID_CUDA_FILL_BLOCKS=0 -DGRID_CUDA_FUSE_MAX=0",
                 "AUTO, 128 threads per block at every batch size and the staged FD gradient's FD and M^-1 apart: before "
                 "grid_cuda_block_of and grid_ka_<fn>", "auto"),
    "contig": ("-O3 -DGRID_CUDA_INTERLEAVE=0", "AUTO, the unrolled composites' arrays contiguous per lane (before run 15)",
               "auto"),
}
for k, (flags, what, _) in WIDE.items():
    gb.VARIANTS["wide_" + k] = (flags, what, "resident")
DTYPES = ("float32", "float64")


def job(spec):
    robots_dir, robot, dtype, k, arch, extra = spec
    t0 = time.perf_counter()
    if extra:   # a spawned worker: the variant's flags as the parent has them
        gb.VARIANTS["wide_" + k] = (WIDE[k][0] + " " + extra,) + gb.VARIANTS["wide_" + k][1:]
    try:
        gb.register(robots_dir, robot, dtype, variant="wide_" + k, precompile=True, cuda_arch=arch,
                    schedule=WIDE[k][2])
        return spec, time.perf_counter() - t0, None
    except Exception as e:
        return spec, time.perf_counter() - t0, f"{type(e).__name__}: {str(e)[:300]}"


def inputs(h, algo, n, seed):
    """the positional inputs of a method on n random states (the FD VJP's cotangent is u, as gpu_bench.method)"""
    q, qd, u = gb.random_states(h, n, seed=seed)
    return [x for x in gb.inputs_of(algo, q, qd, u) if x is not None]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--robots-dir", default=None)
    ap.add_argument("--jobs", type=int, default=16)
    ap.add_argument("--budget-s", type=float, default=400)
    ap.add_argument("--variants", default="", help="comma-separated keys of WIDE (default: all)")
    ap.add_argument("--dtypes", default=",".join(DTYPES))
    ap.add_argument("--robots", default="g1_29dof", help="comma-separated robots of gpu_bench.ROBOTS")
    ap.add_argument("--algos", default="crba,minv", help="comma-separated rows of gpu_bench.ALGO_ID")
    ap.add_argument("--sizes", default="65536,1048576", help="batch sizes to time")
    ap.add_argument("--extra-flags", default="", help="nvcc flags added to every variant's (e.g. -DGRID_CUDA_GROUP_MIN_OUT=32)")
    ap.add_argument("--tag", default="", help="suffix of the report's name: gpu_wide<tag>.md")
    args = ap.parse_args()
    deadline = time.time() + args.budget_s
    from grid_rbd import cuda
    p = cuda.probe()
    arch = cuda._arch_of(p["devices"][0][1])
    if args.extra_flags:
        for k in WIDE:
            gb.VARIANTS["wide_" + k] = (WIDE[k][0] + " " + args.extra_flags,) + gb.VARIANTS["wide_" + k][1:]
    variants = args.variants.split(",") if args.variants else list(WIDE)
    dtypes = args.dtypes.split(",")
    robots = args.robots.split(",")
    algos = args.algos.split(",")
    sizes = [int(x) for x in args.sizes.split(",")]
    specs = [(args.robots_dir, r, d, k, arch, args.extra_flags) for r in robots for d in dtypes for k in variants]
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=args.jobs, mp_context=ctx) as pool:
        for fut in concurrent.futures.as_completed([pool.submit(job, sp) for sp in specs]):
            spec, secs, err = fut.result()
            gb.log(f"built {spec[1]} {spec[2]} {spec[3]} in {secs:.1f} s {err or ''}")
    bench = gb.Bench(args)
    rows = []
    for robot in robots:
        file, floating = next((f, fb) for r, f, fb in gb.ROBOTS + gb.EXTRA_ROBOTS if r == robot)
        ref = gb.grid_rbd.register_robot(f"wide_ref_{robot}", urdf_path=gb.urdf_path(args.robots_dir, file),
                                         floating_base=floating, dtype="float64", codegen=False, device="cpu",
                                         verbose=False)
        for dtype in dtypes:
            for k in variants:
                if time.time() > deadline:
                    rows.append((robot, dtype, k, None, "out of time"))
                    continue
                try:
                    h = gb.register(args.robots_dir, robot, dtype, variant="wide_" + k, schedule=WIDE[k][2])
                except Exception as e:
                    rows.append((robot, dtype, k, None, f"{type(e).__name__}: {e}"))
                    continue
                # accuracy: 999 states (a partial last warp) against the float64 reference
                err = {}
                for algo in algos:
                    xs = inputs(h, algo, 999, 7)
                    got = gb.method(h, algo)(*xs).astype(np.float64)
                    want = gb.method(ref, algo)(*[x.astype(np.float64) for x in xs])
                    err[algo] = float(np.max(np.abs(got - want)) / np.max(np.abs(want)))
                times = {}
                for n in sizes:
                    if time.time() > deadline:
                        break
                    arrays = gb.random_states(h, n, seed=n)
                    sets = bench.device_sets(n, arrays)
                    for algo in algos:
                        r = bench.resident(h, algo, n, [gb.inputs_of(algo, *x) for x in sets])
                        times[(algo, n)] = (r["res_us"], r["finite"])
                    del sets
                    bench.torch.cuda.empty_cache()
                rows.append((robot, dtype, k, (err, times), None))
                gb.log(robot, dtype, k, err, {f"{a}@{n}": f"{t:.1f}" for (a, n), (t, _) in times.items()})
    L = [f"# {', '.join(robots)}: {', '.join(algos)} on the H200 under compile-time variants", "",
         "res µs = launch + stream sync on device pointers (median, host clock), input sets rotated past the L2; "
         "states/s = B / res; % bound against ../shared/anchors.md where it has the row (fp32; halved for fp64). "
         "rel err: max |x - ref| / max |ref| over 999 states against the CPU float64 reference. "
         f"Extra nvcc flags on every variant: `{args.extra_flags or '(none)'}`.", "",
         "| robot | dtype | variant | flags | algo | rel err | " + " | ".join(f"B={n} µs" for n in sizes) +
         " | largest B states/s | % bound |", "|---|---|---|---|---|---|" + "---|" * len(sizes) + "---|---|"]
    for robot, dtype, k, res, note in rows:
        if res is None:
            L.append(f"| {robot} | {dtype} | {k} | `{WIDE[k][0]}` {WIDE[k][2]} | | {note} |" + " |" * (len(sizes) + 2))
            continue
        err, times = res
        for algo in algos:
            cells = [f"{times[(algo, n)][0]:.1f}" if (algo, n) in times else "—" for n in sizes]
            done = [n for n in sizes if (algo, n) in times]
            sps = done[-1] / (times[(algo, done[-1])][0] * 1e-6) if done else float("nan")
            bound = gb.BOUND_FP32.get((robot, "crba" if algo == "minv" else algo))
            pct = f"{100 * sps / (bound * (0.5 if dtype == 'float64' else 1.0)):.1f}" if bound and done else "—"
            fin = all(times[(algo, n)][1] for n in done)
            L.append(f"| {robot} | {dtype} | {k} | `{WIDE[k][0]}` {WIDE[k][2]} | {algo} | {err[algo]:.2e} | " +
                     " | ".join(cells) + f" | {sps:.3g} | {pct} |" + ("" if fin else " (non-finite output!)"))
    L += ["", "Variants: " + "; ".join(f"{k}: {w}" for k, (_, w, _) in WIDE.items()), ""]
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / f"gpu_wide{args.tag}.md").write_text("\n".join(L))
    print("\n".join(L))
    return 0


if __name__ == "__main__":
    sys.exit(main())
