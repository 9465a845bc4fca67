"""Coupled talos against ../shared/anchors.md: talos_full_v2 (example-robot-data) on a floating base with its 12 gripper
mimic joints coupled has nq 39 / nv 38, the anchors' "talos ff 39/38" row. Per state at B = 256, float64, one thread,
best of 30 x 5 calls (bench/mimic.py's harness), as ratios to Pinocchio 3.7's one-call times there.

    python bench/mimic_anchor.py
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "python"))
import grid_rbd  # noqa: E402
from mimic import METHODS, per_state_ns  # noqa: E402
from robot_cases import example_robot_data_dir  # noqa: E402

ANCHOR_TALOS_FF_US = {"rnea": 5.78, "crba": 3.10, "minv": 3.86, "fd": 10.7, "aba": 10.7}  # fd: the ABA row

erd = example_robot_data_dir()
if erd is None:
    sys.exit("example-robot-data is not installed")
h = grid_rbd.register_robot("talos_coupled", urdf_path=erd / "talos_data/robots/talos_full_v2.urdf", floating_base=True,
                            dtype="float64", verbose=False, num_threads=1)
assert (h.nq, h.nv, len(h.mimic_joints)) == (39, 38, 12), (h.nq, h.nv, len(h.mimic_joints))
print("| method | ours, ns per state | anchor talos ff, µs | ratio |\n|---|---|---|---|")
for name, call in METHODS:
    if name in ANCHOR_TALOS_FF_US:
        t = per_state_ns(h, call, 256, 30)
        print(f"| {name} | {t:.0f} | {ANCHOR_TALOS_FF_US[name]} | {t / 1000 / ANCHOR_TALOS_FF_US[name]:.2f} |", flush=True)
