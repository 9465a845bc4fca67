"""Registers every URDF of example-robot-data and ../shared/robots in float32 and float64, fixed and floating base,
with default options (every method, the post-build self-check), and writes a markdown table of what registered,
the self-check's worst error / bound ratio and its time (bench/RESULTS-sweep.md).

    .venv/bin/python bench/robot_sweep.py [--jobs N] [--erd DIR] [--shared DIR] [--only SUBSTR] > bench/RESULTS-sweep.md
"""
import argparse
import concurrent.futures
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CONFIGS = [("float32", False), ("float32", True), ("float64", False), ("float64", True)]


def find_urdfs(erd, shared):
    out = []
    if erd and Path(erd).is_dir():
        out += [("erd", p, p.relative_to(erd)) for p in sorted(Path(erd).rglob("*.urdf"))]
    if shared and Path(shared).is_dir():
        out += [("shared", p, p.relative_to(shared)) for p in sorted(Path(shared).glob("*.urdf"))]
    return out


def one(path, dtype, floating, cache):
    """register one configuration in a fresh process; what happened, as a dict"""
    import grid_rbd
    t = time.time()
    try:
        h = grid_rbd.register_robot("sweep", urdf_path=str(path), dtype=dtype, floating_base=floating,
                                    cache_dir=cache, verbose=False, device="cpu")
        with open(os.path.join(os.path.dirname(h.library_path), "selfcheck.json")) as f:
            rep = json.load(f)
        worst = max((m["worst_ratio"] for m in rep["methods"].values()), default=0.0)
        worst_m = max(rep["methods"], key=lambda k: rep["methods"][k]["worst_ratio"]) if rep["methods"] else ""
        nonfinite = sum(m["non_finite_reference_blocks"] for m in rep["methods"].values())
        return {"ok": True, "seconds": time.time() - t, "check_seconds": rep["seconds"], "worst_ratio": worst,
                "worst_method": worst_m, "non_finite": nonfinite, "nq": h.nq, "nv": h.nv, "nb": h.nb}
    except grid_rbd.URDFError as e:
        return {"ok": False, "invalid": True, "seconds": time.time() - t, "error": f"URDFError: {e}"}
    except Exception as e:  # noqa: BLE001 - the table records every failure
        return {"ok": False, "seconds": time.time() - t, "error": f"{type(e).__name__}: {e}"}


def one_in_child(path, dtype, floating, cache):
    """one() in a child process, so that a crash is recorded as one (a signal, the tail of its stderr)"""
    import subprocess
    r = subprocess.run([sys.executable, __file__, "--one", str(path), dtype, str(int(floating)), cache],
                       capture_output=True, text=True)
    if r.returncode == 0 and r.stdout.strip():
        return json.loads(r.stdout.strip().splitlines()[-1])
    tail = " / ".join(r.stderr.strip().splitlines()[-3:])
    return {"ok": False, "crash": True, "seconds": 0.0, "error": f"CRASH (exit {r.returncode}): {tail}"}


def main():
    if len(sys.argv) == 6 and sys.argv[1] == "--one":
        print(json.dumps(one(sys.argv[2], sys.argv[3], sys.argv[4] == "1", sys.argv[5])))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) // 2))
    ap.add_argument("--erd", default=None, help="example-robot-data's robots/ (default: the installed package's)")
    ap.add_argument("--shared", default=str(REPO.parent / "shared" / "robots"))
    ap.add_argument("--only", default=None, help="only URDF paths containing this")
    ap.add_argument("--json", default=None, help="also write the raw results here")
    args = ap.parse_args()
    erd = args.erd
    if erd is None:
        sys.path.insert(0, str(REPO / "tests" / "python"))
        import robot_cases
        erd = robot_cases.example_robot_data_dir()
    urdfs = [u for u in find_urdfs(erd, args.shared) if not args.only or args.only in str(u[2])]
    cache = tempfile.mkdtemp(prefix="grid-rbd-sweep-")
    os.environ["GRID_RBD_BUILD_JOBS"] = "1"  # the sweep runs builds side by side instead
    t0 = time.time()
    results = {}
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futs = {pool.submit(one_in_child, p, dt, fb, cache): (src, str(rel), dt, fb, str(p))
                for src, p, rel in urdfs for dt, fb in CONFIGS}
        for f in concurrent.futures.as_completed(futs):
            src, rel, dt, fb, path = futs[f]
            r = f.result()
            if "error" in r:  # messages name the URDF as the table does, not by this machine's path
                r["error"] = r["error"].replace(path, f"{src}/{rel}")
            results[futs[f][:4]] = r
            print(f"{'ok ' if r['ok'] else 'BAD'} {futs[f][:4]} {r.get('error', '')[:200]}", file=sys.stderr, flush=True)
    wall = time.time() - t0
    if args.json:
        with open(args.json, "w") as f:
            json.dump([{"source": k[0], "urdf": k[1], "dtype": k[2], "floating": k[3], **v} for k, v in results.items()],
                      f, indent=1)

    n_ok = sum(r["ok"] for r in results.values())
    n_invalid = sum(bool(r.get("invalid")) for r in results.values())
    print("# Every robot, both dtypes, fixed and floating base (bench/robot_sweep.py)\n")
    here = str(REPO.parent) + "/"
    print(f"`{' '.join(a.replace(here, '../') for a in sys.argv)}` on {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"{args.jobs} builds at a time, {wall:.0f} s in all.\n")
    print(f"{n_ok} of {len(results)} registrations passed; {n_invalid} refused as invalid URDFs; "
          f"{len(results) - n_ok - n_invalid} other failures.\n")
    print("Each cell: the self-check's worst error / bound over every method (<= 1 passes), the method it was, and "
          "the check's seconds; `nf` counts blocks skipped because the reference is not finite (a singular mass "
          "matrix).\n")
    print("| robot | nq / nv / nb (fixed) | " + " | ".join(f"{dt} {'floating' if fb else 'fixed'}" for dt, fb in CONFIGS)
          + " |")
    print("|---|---|" + "---|" * len(CONFIGS))
    for src, _, rel in urdfs:
        cells, sizes = [], ""
        for dt, fb in CONFIGS:
            r = results[(src, str(rel), dt, fb)]
            if r["ok"]:
                if not fb and dt == "float64":
                    sizes = f"{r['nq']} / {r['nv']} / {r['nb']}"
                nf = f", nf {r['non_finite']}" if r["non_finite"] else ""
                cells.append(f"ok {r['worst_ratio']:.2g} ({r['worst_method']}), {r['check_seconds']:.2f} s{nf}")
            else:
                cells.append(("invalid: " if r.get("invalid") else "**FAIL**: ") + r["error"].replace("|", "/")[:160])
        print(f"| {src}/{rel} | {sizes} | " + " | ".join(cells) + " |")
    failures = [k for k, r in results.items() if not r["ok"] and not r.get("invalid")]
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
