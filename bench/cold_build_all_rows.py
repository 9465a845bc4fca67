#!/usr/bin/env python3
"""Cold CPU build of one robot with every row of the signature table (the second-order ones included) but those named
to skip, float64 (or GRID_BENCH_DTYPE), a fresh cache: wall clock and the largest compiler process's peak RSS (issue
29's build targets).

    .venv/bin/python bench/cold_build_all_rows.py ROBOT FLOATING(0|1) [SKIP,ROWS]   # robots from ../shared/robots
    GRID_BENCH_DTYPE=float32 .venv/bin/python bench/cold_build_all_rows.py ...        # (fdsva_so's float64 part too)
"""
import os
import shutil
import resource
import sys
import time
from pathlib import Path

import grid_rbd
from grid_rbd import _signatures
robot, floating = sys.argv[1], sys.argv[2] == "1"
skip = sys.argv[3].split(",") if len(sys.argv) > 3 else []
rows = [r["name"] for r in _signatures.ROWS if r["name"] not in skip]
shutil.rmtree(f"/tmp/cpuall_{robot}", ignore_errors=True)
t = time.time()
grid_rbd.precompile(f"{robot}_cpuall", urdf_path=str(Path(__file__).resolve().parents[2] / "shared" / "robots" / f"{robot}.urdf"), floating_base=floating,
                    dtype=os.environ.get("GRID_BENCH_DTYPE", "float64"), cache_dir=f"/tmp/cpuall_{robot}", verbose=False, algorithm_list=rows)
print(robot, "floating" if floating else "fixed", os.environ.get("GRID_BENCH_DTYPE", "float64"), len(rows), "rows", "cold", round(time.time() - t, 1), "s, peak RSS",
      round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024), "MB (largest compiler process)")
