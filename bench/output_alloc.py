"""Fresh outputs against out= for the wide-output methods of g1_29dof (floating base): the per-state time of a call that
returns a new array with the output pool off (numpy's allocator: the state before the pool), with it on, and with a
preallocated out=, interleaved in one process; prints Markdown tables (wall and process CPU time per state).

    python bench/output_alloc.py [--batches 1,256,4096] [--threads 1,2] [--dtypes float64,float32] [--reps 15]
                                 [--methods crba,minv,...]

Each sample is one timed group of calls (enough for ~20 ms), after two untimed calls in the same mode; the loop keeps
the previous result alive while the next call runs (`M = h.crba(q)` in a loop), so the pool needs two blocks per
method. Medians over --reps samples, modes alternated within each repeat.
"""
import argparse
import os
import resource
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from grid_rbd import _signatures

ROOT = Path(__file__).resolve().parent.parent
URDF = ROOT.parent / "shared" / "robots" / "g1_29dof.urdf"

# the matrix outputs (the signature table's rows of rank 2 or more) -> the inputs of theirs the states hold
METHODS = {r["py_name"]: [i["name"] for i in r["inputs"] if i["name"] in ("q", "qd", "qdd", "u")]
           for r in _signatures.matrix_rows()}
MODES = ("before", "after", "out")


def states(h, B, dtype, rng):
    q = rng.standard_normal((B, h.nq))
    q[:, 3:7] /= np.linalg.norm(q[:, 3:7], axis=1, keepdims=True)
    s = {"q": q, "qd": rng.standard_normal((B, h.nv)), "qdd": rng.standard_normal((B, h.nv)),
         "u": rng.standard_normal((B, h.nv))}
    return {k: np.ascontiguousarray(v, dtype=dtype) for k, v in s.items()}


def sample(fn, args, out, calls):
    """(wall, cpu) seconds per call over one group of calls, the previous result alive during each call"""
    r = fn(*args, out=out)  # untimed: the mode's first two calls (the pool's two blocks of this method)
    r = fn(*args, out=out)
    w0, c0 = time.perf_counter(), time.process_time()
    for _ in range(calls):
        r = fn(*args, out=out)  # noqa: F841 (kept alive across the next call, as a user's loop does)
    return (time.perf_counter() - w0) / calls, (time.process_time() - c0) / calls


def faults(h, dtype, rng, _core, default_pool, calls=20):
    """where the time goes: minor faults, kernel and user CPU ms per call of crba at B = 4096, one thread, per mode"""
    h.num_threads = 1
    s = states(h, 4096, dtype, rng)
    out = h.crba(s["q"])
    rows = []
    for m in MODES:
        _core.output_pool(min_bytes=1 << 62 if m == "before" else default_pool["min_bytes"])
        r = h.crba(s["q"], out=out if m == "out" else None)
        r = h.crba(s["q"], out=out if m == "out" else None)
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        for _ in range(calls):
            r = h.crba(s["q"], out=out if m == "out" else None)  # noqa: F841
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        rows.append((m, (r1.ru_minflt - r0.ru_minflt) / calls, (r1.ru_stime - r0.ru_stime) / calls * 1e3,
                     (r1.ru_utime - r0.ru_utime) / calls * 1e3))
    _core.output_pool(min_bytes=default_pool["min_bytes"])
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", default="1,256,4096")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--dtypes", default="float64,float32")
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--reps", type=int, default=15)
    a = ap.parse_args()
    import grid_rbd
    from grid_rbd import _core
    default_pool = _core.output_pool()
    rng = np.random.default_rng(0)
    rows, fault_rows = [], []
    for dtype in a.dtypes.split(","):
        h = grid_rbd.register_robot(f"bench_g1_ff_{dtype}", urdf_path=URDF, floating_base=True, dtype=dtype)
        fault_rows += [(dtype,) + r for r in faults(h, dtype, rng, _core, default_pool)]
        for threads in (int(t) for t in a.threads.split(",")):
            h.num_threads = threads
            for B in (int(b) for b in a.batches.split(",")):
                s = states(h, B, dtype, rng)
                for name in a.methods.split(","):
                    fn = getattr(h, name)
                    args = [s[k] for k in METHODS[name]]
                    out = fn(*args)
                    t0 = time.perf_counter()
                    fn(*args, out=out)
                    calls = max(1, min(2000, int(0.02 / max(time.perf_counter() - t0, 1e-7))))
                    res = {m: [] for m in MODES}
                    for rep in range(a.reps):
                        order = MODES if rep % 2 == 0 else MODES[::-1]
                        for m in order:
                            # before: every output below min_bytes, i.e. numpy's allocator (the pool keeps its blocks)
                            _core.output_pool(min_bytes=1 << 62 if m == "before" else default_pool["min_bytes"])
                            res[m].append(sample(fn, args, out if m == "out" else None, calls))
                    med = {m: (statistics.median(x[0] for x in res[m]) / B * 1e6,
                               statistics.median(x[1] for x in res[m]) / B * 1e6) for m in MODES}
                    rows.append((dtype, threads, name, B, out.nbytes / 2**20, med))
                    print(f"# {dtype} t{threads} {name} B={B} done", file=sys.stderr, flush=True)
    _core.output_pool(min_bytes=default_pool["min_bytes"])
    print(f"python {' '.join(sys.argv)}; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end; "
          f"pool {default_pool['max_bytes'] >> 20} MiB, min {default_pool['min_bytes'] >> 10} KiB; "
          f"medians of {a.reps} samples")
    print("\ncrba at B = 4096, one thread, per call (getrusage): minor page faults, kernel and user CPU ms\n")
    print("| dtype | mode | minor faults | sys ms | user ms |")
    print("|---|---|---|---|---|")
    for dtype, m, flt, sys_ms, user_ms in fault_rows:
        print(f"| {dtype} | {m} | {flt:.0f} | {sys_ms:.2f} | {user_ms:.2f} |")
    for k, label in ((0, "wall"), (1, "process CPU")):
        print(f"\n{label} time, µs per state (before: pool off = numpy's allocator; after: pool on; out=: "
              "preallocated)\n")
        print("| dtype | threads | method | B | output MiB | before | after | out= | before / out= | after / out= |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for dtype, threads, name, B, mib, med in rows:
            b, f, o = med["before"][k], med["after"][k], med["out"][k]
            print(f"| {dtype} | {threads} | {name} | {B} | {mib:.2f} | {b:.3f} | {f:.3f} | {o:.3f} | {b / o:.2f} | "
                  f"{f / o:.2f} |")


if __name__ == "__main__":
    main()
