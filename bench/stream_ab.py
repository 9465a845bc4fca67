"""Streamed against cached output stores, same robot, same run: CRBA and M^-1 per state at several batch sizes, one
thread, float64, for two builds of each robot that differ only in GRID_STREAM_MIN_BYTES (1: every call streams; 2^62:
none does), runs alternated; the evidence for the per-CPU threshold (src/emit/lane_store.h). Prints a Markdown table.

    python bench/stream_ab.py [--robots g1,talos,atlas,go2] [--batches 64,256,1024,4096] [--reps 4]
"""
import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as R  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robots", default="g1,talos,atlas,go2")
    ap.add_argument("--batches", default="64,256,1024,4096")
    ap.add_argument("--reps", type=int, default=4)
    a = ap.parse_args()
    grid_rbd, why = R.import_grid()
    if grid_rbd is None:
        sys.exit(why)
    R.build_programs(False, True)
    flags = " ".join(f for f in R.cpu_build_flags() if not f.startswith("-DGRID_STREAM_MIN_BYTES="))
    table = R.robot_table()
    batches = [int(b) for b in a.batches.split(",")]
    print(R.lanes_line(R.cpu_identity(), R.cpu_build_flags()))
    print()
    print("| robot | method | B | output MiB | cached us/state | streamed us/state | streamed / cached |")
    print("|---|---|---|---|---|---|---|")
    for name in a.robots.split(","):
        urdf, floating, _ = table[name]
        sos = {}
        for variant, macro in (("cached", 1 << 62), ("streamed", 1)):
            os.environ["GRID_RBD_CFLAGS"] = f"{flags} -DGRID_STREAM_MIN_BYTES={macro}"
            h, so, err = R.grid_library(grid_rbd, f"{name}_{variant}", urdf, floating)
            if err:
                sys.exit(f"{name} {variant}: {err}")
            sos[variant] = so
        os.environ.pop("GRID_RBD_CFLAGS", None)
        best = {}
        for _ in range(a.reps):
            for B in batches:
                for variant, so in sos.items():
                    cmd = [str(R.GRID_BENCH), so, "--algos", "crba,minv", "--pool", "256", "--batch", str(B),
                           "--runs", "3", "--min-ms", "20"]
                    r = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
                    for algo, x in r["results"].items():
                        k = (algo, B, variant)
                        best[k] = min(best.get(k, 1e30), x["batch_per_state_us"])
        for algo in ("crba", "minv"):
            for B in batches:
                c, s = best[(algo, B, "cached")], best[(algo, B, "streamed")]
                mib = B * h.nv * h.nv * 8 / 2**20
                print(f"| {name} | {algo} | {B} | {mib:.1f} | {c:.3f} | {s:.3f} | {s / c:.2f} |", flush=True)


if __name__ == "__main__":
    main()
