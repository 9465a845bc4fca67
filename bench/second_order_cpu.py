"""idsva_so and fdsva_so on the CPU, one thread, float64, against Pinocchio's C++ ComputeRNEASecondOrderDerivatives in
the same run (build/bench/pinocchio_bench, bench/build_pinocchio_bench.sh; build/bench/grid_bench from bench/run.py):
per call (B = 1, a pool of states cycled) and per state at B = 256, with each library's cold build (idsva_so and
fdsva_so alone), and the floor of B = 256: writing idsva_so's 4 nv^3 doubles per state once (numpy fill of a
(256, 4 nv^3) array already mapped, same core), which no per-state time can go below. Prints one line per robot;
JSON to /tmp/so_bench.json.

    .venv/bin/python bench/second_order_cpu.py iiwa,go2,atlas,g1_29dof
"""
import json, subprocess, sys, time
sys.path.insert(0, "bench")
import grid_rbd
ROB = [(x, y) for x, y in [("iiwa", False), ("go2", True), ("atlas", False), ("g1_29dof", True)] if x in sys.argv[1].split(",")]
# microseconds per state to write n doubles per state into a (256, n) array (best of 5 fills, after one to map it)
FLOOR = """
import sys, time, numpy as np
a = np.empty((256, int(sys.argv[1])))
a.fill(0.0)
best = 1e9
for _ in range(5):
    t0 = time.perf_counter(); a.fill(1.0); best = min(best, time.perf_counter() - t0)
print(best / 256 * 1e6)
"""
rows = []
for name, fb in ROB:
    urdf = f"../shared/robots/{name}.urdf"
    cmd = ["build/bench/pinocchio_bench", urdf] + (["--floating-base"] if fb else []) + ["--runs", "5"]
    r = subprocess.run(["taskset", "-c", "1"] + cmd, capture_output=True, text=True, timeout=900)
    pin = json.loads(r.stdout)
    pin_so = pin["results"]["idsva_so"]["median_us"]
    t0 = time.perf_counter()
    h = grid_rbd.register_robot(f"sob_{name}", urdf_path=urdf, floating_base=fb, dtype="float64", device="cpu",
                                algorithm_list=["idsva_so", "fdsva_so"], verbose=False, cache_dir="build/bench/grid-cache-so")
    build = time.perf_counter() - t0
    g = subprocess.run(["taskset", "-c", "1", "build/bench/grid_bench", h.library_path, "--algos", "idsva_so,fdsva_so",
                        "--pool", "64", "--batch", "256", "--runs", "5"], capture_output=True, text=True, timeout=900)
    gj = json.loads(g.stdout)
    res = gj["results"]
    floor = subprocess.run(["taskset", "-c", "1", sys.executable, "-c", FLOOR, str(4 * h.nv ** 3)], capture_output=True,
                           text=True, timeout=300)
    floor_us = float(floor.stdout)
    print(name, "build", round(build, 1), "pin", pin_so, {a: (x["per_call_us"], x["batch_per_state_us"]) for a, x in res.items()},
          "write floor per state", round(floor_us, 1), flush=True)
    rows.append((name, fb, build, pin_so, res, floor_us))
json.dump(rows, open("/tmp/so_bench.json", "w"))
