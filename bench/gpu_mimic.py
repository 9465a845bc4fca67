#!/usr/bin/env python3
"""What coupled mimic joints cost on the GPU (issue 9): h1_2 (12 mimic joints in its hands) on CUDA, float32, fixed and
floating base, coupled (the default: FD, ABA and M^-1 by the articulated-body recursion with the couplings) against
the same robot welded (mimic joints made fixed) and independent (ignore_mimic=True). Each coupled result is first
checked against the CPU float64 reference (its error at most 4x the CPU float32 library's, the GPU suite's rule);
then resident launch + sync times (bench/gpu_bench.py's C timer) at
B = 1024 and 65536. Markdown + JSON to --out; the libraries build in parallel first.

    python bench/gpu_mimic.py --out DIR [--robots-dir ../shared/robots] [--jobs 16] [--budget-s 400]
"""

import argparse
import concurrent.futures
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import grid_rbd  # noqa: E402
from gpu_bench import Bench, random_states  # noqa: E402
from mimic import weld_mimics  # noqa: E402

ALGOS = ["rnea", "crba", "minv", "fd", "aba"]
BATCHES = [1024, 65536]
CHECK_RATIO = 4.0   # float32 CUDA's error against the CPU float64 reference, at most this times the CPU float32 one's


def variants(text):
    return {"coupled": dict(urdf_string=text), "welded": dict(urdf_string=weld_mimics(text)),
            "independent": dict(urdf_string=text, ignore_mimic=True)}


def name_of(variant, floating):
    return f"gpu_mimic_{variant}_{'ff' if floating else 'fixed'}"


def _precompile(job):
    variant, floating, kw, arch = job
    t0 = time.time()
    if variant == "cpu32":   # the coupled robot's CPU float32 library: the accuracy yardstick
        grid_rbd.precompile(name_of(variant, floating), floating_base=floating, dtype="float32", device="cpu",
                            algorithm_list=ALGOS, verbose=False, **kw)
    else:
        grid_rbd.precompile(name_of(variant, floating), floating_base=floating, dtype="float32", device="cuda",
                            cuda_arch=arch, algorithm_list=ALGOS, verbose=False, **kw)
    return variant, floating, time.time() - t0


def check(h, ref, algo, n):
    """worst relative block error of the CUDA handle against the CPU float64 reference on n random states"""
    q, qd, u = random_states(ref, n, seed=7)
    call = {"rnea": lambda x, q, v, a: x.inverse_dynamics(q, v, a), "crba": lambda x, q, v, a: x.crba(q),
            "minv": lambda x, q, v, a: x.minv(q), "fd": lambda x, q, v, a: x.forward_dynamics(q, v, a),
            "aba": lambda x, q, v, a: x.aba(q, v, a)}[algo]
    got = np.asarray(call(h, *(x.astype(np.float32) for x in (q, qd, u))), dtype=np.float64).reshape(n, -1)
    want = np.asarray(call(ref, q, qd, u)).reshape(n, -1)
    return float((np.linalg.norm(got - want, axis=1) / np.maximum(np.linalg.norm(want, axis=1), 1e-6)).max())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--robots-dir", default=str(HERE.parents[1] / "shared" / "robots"))
    ap.add_argument("--jobs", type=int, default=os.cpu_count())
    ap.add_argument("--budget-s", type=float, default=400)
    ap.add_argument("--arch", default="90")
    a = ap.parse_args()
    t_start = time.time()
    deadline = t_start + a.budget_s
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    text = (Path(a.robots_dir) / "h1_2.urdf").read_text()
    jobs = [(v, fb, kw, a.arch) for fb in (False, True) for v, kw in variants(text).items()]
    jobs += [("cpu32", fb, dict(urdf_string=text), a.arch) for fb in (False, True)]
    builds = {}
    with concurrent.futures.ProcessPoolExecutor(max_workers=min(a.jobs, len(jobs))) as ex:
        for v, fb, s in ex.map(_precompile, jobs):
            builds[f"{v} {'floating' if fb else 'fixed'}"] = s
            print(f"built {v} {'floating' if fb else 'fixed'} in {s:.1f} s", flush=True)
    bench = Bench(argparse.Namespace())
    rows, checks, skipped = [], [], []
    for fb in (False, True):
        ref = grid_rbd.register_robot("gpu_mimic_ref", urdf_string=text, floating_base=fb, dtype="float64",
                                      codegen=False, verbose=False)
        handles = {v: grid_rbd.register_robot(name_of(v, fb), floating_base=fb, dtype="float32", device="cuda",
                                              algorithm_list=ALGOS, max_batch_size=1024, verbose=False, **kw)
                   for v, kw in variants(text).items()}
        cpu32 = grid_rbd.register_robot(name_of("cpu32", fb), urdf_string=text, floating_base=fb, dtype="float32",
                                        device="cpu", algorithm_list=ALGOS, verbose=False)
        for algo in ALGOS:
            err, err32 = check(handles["coupled"], ref, algo, 1000), check(cpu32, ref, algo, 1000)
            checks.append({"base": "floating" if fb else "fixed", "algo": algo, "worst_rel": err, "cpu32_rel": err32,
                           "ok": err <= CHECK_RATIO * max(err32, 1e-7)})
            print(f"check {'floating' if fb else 'fixed'} {algo}: worst {err:.2e} (CPU float32 {err32:.2e})", flush=True)
        for n in BATCHES:
            for v, h in handles.items():
                if time.time() > deadline - 10:
                    skipped.append(f"{v} {'floating' if fb else 'fixed'} B={n}: out of time")
                    continue
                arrays = random_states(h, n, seed=n)
                sets = bench.device_sets(n, arrays)
                for algo in ALGOS:
                    r = bench.run_point(h, "h1_2", "float32", algo, n, arrays, sets, host=False)
                    r.update(base="floating" if fb else "fixed", variant=v)
                    rows.append(r)
                    print(f"{v:11s} {'ff' if fb else 'fixed'} {algo:4s} B={n:<6d} {r.get('res_us', float('nan')):9.1f} us",
                          flush=True)
                del sets
    (out / "gpu_mimic.json").write_text(json.dumps({"rows": rows, "checks": checks, "builds_s": builds,
                                                    "skipped": skipped}, indent=1))
    with open(out / "gpu_mimic.md", "w") as f:
        f.write("# h1_2 on CUDA: coupled mimic joints against welded and independent (bench/gpu_mimic.py)\n\n")
        f.write(f"float32, resident launch + sync (median), cold parallel builds {json.dumps(builds)}\n\n")
        f.write("| check (coupled, 1000 states) | CUDA float32: worst relative error vs CPU float64 | CPU float32's | "
                f"ok (<= {CHECK_RATIO:g}x) |\n|---|---|---|---|\n")
        for c in checks:
            f.write(f"| {c['base']} {c['algo']} | {c['worst_rel']:.2e} | {c['cpu32_rel']:.2e} | {c['ok']} |\n")
        f.write("\n| base | method | B | coupled µs | welded µs | independent µs | coupled / welded | coupled / independent |\n")
        f.write("|---|---|---|---|---|---|---|---|\n")
        for fb in ("fixed", "floating"):
            for algo in ALGOS:
                for n in BATCHES:
                    t = {r["variant"]: r.get("res_us") for r in rows if r["base"] == fb and r["algo"] == algo and r["B"] == n}
                    if len(t) < 3 or None in t.values():
                        continue
                    f.write(f"| {fb} | {algo} | {n} | {t['coupled']:.1f} | {t['welded']:.1f} | {t['independent']:.1f} | "
                            f"{t['coupled'] / t['welded']:.2f} | {t['coupled'] / t['independent']:.2f} |\n")
        for s in skipped:
            f.write(f"\nskipped: {s}\n")
    print("wrote", out / "gpu_mimic.md", f"({time.time() - t_start:.0f} s)")
    return 0 if all(c["ok"] for c in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
