"""Per-state CPU time of the generated libraries of two commits, interleaved in one run (unrolled code before and
after a restructuring): python bench/compare_commits.py OLD_COMMIT [robot[:floating] ...]. Builds gridc and
grid_bench of OLD_COMMIT in a temporary git worktree, the current tree's from build/, compiles each robot's
library with the build driver's flags, and prints new/old per algorithm (best of interleaved rounds)."""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# COMPARE_SCHEDULE=rolled (or unrolled): both commits' libraries in that schedule (default: gridc's, auto)
SCHEDULE = ["--schedule", os.environ["COMPARE_SCHEDULE"]] if os.environ.get("COMPARE_SCHEDULE") else []
FLAGS = ("-O2 -march=native -ffp-contract=fast -fno-math-errno -fPIC -fopenmp -fno-schedule-insns2 "
         "--param=max-combine-insns=2 -fno-tree-pre -fno-dse -fno-tree-dse -shared").split()


def sh(*cmd, cwd=None):
    subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL)


def tools(tree, tmp, tag):
    """gridc and grid_bench of a source tree"""
    sh("make", "-s", "build/gridc", "build/libgrid.a", cwd=tree)
    bench = tmp / f"{tag}_grid_bench"
    sh("cc", "-std=c11", "-D_GNU_SOURCE", "-O2", f"-I{tree}/include", f"{tree}/bench/grid_bench.c",
       f"{tree}/build/libgrid.a", "-lexpat", "-ldl", "-lm", "-o", str(bench))
    return tree / "build" / "gridc", bench


def main():
    old = sys.argv[1]
    robots = sys.argv[2:] or ["iiwa", "go2:floating", "g1_29dof:floating"]
    rounds = 5
    with tempfile.TemporaryDirectory(prefix="grid-compare-") as t:
        tmp = Path(t)
        sh("git", "worktree", "add", "-q", str(tmp / "old"), old, cwd=ROOT)
        try:
            versions = {"old": tools(tmp / "old", tmp, "old"), "new": tools(ROOT, tmp, "new")}
            for spec in robots:
                name, _, fb = spec.partition(":")
                urdf = ROOT.parent / "shared" / "robots" / f"{name}.urdf"
                libs = {}
                for v, (gridc, _) in versions.items():
                    src = tmp / f"{v}_{name}.c"
                    sh(str(gridc), str(urdf), *(["--floating-base"] if fb else []), *SCHEDULE, "-o", str(src))
                    libs[v] = tmp / f"{v}_{name}.so"
                    sh("cc", *FLAGS, str(src), "-o", str(libs[v]), "-lm")
                best = {"old": {}, "new": {}}
                for _ in range(rounds):
                    for v, (_, bench) in versions.items():
                        out = subprocess.run([str(bench), str(libs[v]), "--runs", "5", "--min-ms", "20"],
                                             capture_output=True, text=True, check=True).stdout
                        for a, x in json.loads(out)["results"].items():
                            b = best[v].setdefault(a, [1e9, 1e9])
                            b[0] = min(b[0], x["batch_per_state_min_us"])
                            b[1] = min(b[1], x["per_call_min_us"])
                print(f"{spec}: new/old, best of {rounds} interleaved rounds (us per state at B=256; us per call at B=1)")
                for a, o in best["old"].items():
                    n = best["new"][a]
                    print(f"  {a:15s} {o[0]:.4f} -> {n[0]:.4f} ({n[0] / o[0]:.3f})   {o[1]:.4f} -> {n[1]:.4f} ({n[1] / o[1]:.3f})")
        finally:
            sh("git", "worktree", "remove", "--force", str(tmp / "old"), cwd=ROOT)


if __name__ == "__main__":
    main()
