"""What coupled mimic joints cost: h1_2 (12 mimic joints in its hands) per state, float64, one thread, B = 256,
coupled (the default) against the same robot with its mimic joints removed (welded: fixed joints) and with them
independent (ignore_mimic=True, the full coordinates the coupled code runs on). Writes bench/RESULTS-joints.md.

    python bench/mimic.py [--robot PATH] [--repeats N] [--out FILE]
"""

import argparse
import os
import re
import sys
import time
from pathlib import Path

import numpy as np

import grid_rbd

HERE = Path(__file__).resolve().parent
METHODS = [("rnea", lambda h, s, o: h.inverse_dynamics(s[0], s[1], s[2], out=o)),
           ("crba", lambda h, s, o: h.crba(s[0], out=o)),
           ("minv", lambda h, s, o: h.minv(s[0], out=o)),
           ("fd", lambda h, s, o: h.forward_dynamics(s[0], s[1], s[2], out=o)),
           ("aba", lambda h, s, o: h.aba(s[0], s[1], s[2], out=o)),
           ("jacobian", lambda h, s, o: h.frame_jacobian(s[0], h.ee_frame_ids[0], "WORLD", out=o))]


def weld_mimics(text):
    """the URDF with every joint that has a <mimic> made fixed (its <mimic> dropped)"""
    def weld(m):
        j = m.group(0)
        if "<mimic" not in j:
            return j
        j = re.sub(r'type="[a-z]+"', 'type="fixed"', j, count=1)
        return re.sub(r"<mimic[^>]*/>", "", j)
    return re.sub(r"<joint\b.*?</joint>", weld, text, flags=re.S)


def per_state_ns(h, method, B, repeats):
    rng = np.random.default_rng(0)
    q = rng.uniform(-1, 1, (B, h.nq))
    if h.floating_base:
        q[:, 3:7] /= np.linalg.norm(q[:, 3:7], axis=1, keepdims=True)
    s = (q, rng.uniform(-1, 1, (B, h.nv)), rng.uniform(-1, 1, (B, h.nv)))
    o = method(h, s, None).copy()
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(5):
            method(h, s, o)
        best = min(best, (time.perf_counter() - t) / 5)
    return 1e9 * best / B


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robot", default=str(HERE.parents[1] / "shared" / "robots" / "h1_2.urdf"))
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--out", default=str(HERE / "RESULTS-joints.md"))
    a = ap.parse_args()
    text = Path(a.robot).read_text()
    rows = []
    for fb in (False, True):
        common = dict(floating_base=fb, dtype="float64", verbose=False, num_threads=1,
                      algorithm_list=["rnea", "crba", "minv", "fd", "aba", "frame_jacobian"])
        variants = {"coupled": grid_rbd.register_robot("h1c", urdf_string=text, **common),
                    "welded": grid_rbd.register_robot("h1w", urdf_string=weld_mimics(text), **common),
                    "independent": grid_rbd.register_robot("h1i", urdf_string=text, ignore_mimic=True, **common)}
        assert variants["coupled"].nv == variants["welded"].nv
        for name, m in METHODS:
            t = {k: per_state_ns(h, m, a.batch, a.repeats) for k, h in variants.items()}
            rows.append((fb, name, t))
            print(f"{'floating' if fb else 'fixed':8s} {name:9s} " +
                  " ".join(f"{k} {v:8.0f} ns" for k, v in t.items()), flush=True)
    load = os.getloadavg()[0]
    with open(a.out, "w") as f:
        f.write("# Joints and couplings: what coupled mimic joints cost (bench/mimic.py)\n\n")
        f.write(f"`python bench/mimic.py` on this machine ({os.cpu_count()} cores, load average {load:.1f} at the end), "
                f"h1_2 (51 moving joints, 12 of them mimic joints in the hands), float64, one thread, B = {a.batch}, "
                "per state, best of "
                f"{a.repeats} x 5 calls. *coupled*: the default (39 / 45 coordinates, the code runs on the full 51 / 57 "
                "and projects; FD, ABA and M^-1 run the articulated-body recursion with the couplings); *welded*: the mimic joints made fixed "
                "(the same coordinates, 12 fewer bodies); *independent*: ignore_mimic=True (51 / 57 coordinates).\n\n")
        f.write("| base | method | coupled ns | welded ns | independent ns | coupled / welded | coupled / independent |\n")
        f.write("|---|---|---|---|---|---|---|\n")
        for fb, name, t in rows:
            f.write(f"| {'floating' if fb else 'fixed'} | {name} | {t['coupled']:.0f} | {t['welded']:.0f} | "
                    f"{t['independent']:.0f} | {t['coupled'] / t['welded']:.2f} | {t['coupled'] / t['independent']:.2f} |\n")
    print("wrote", a.out)


if __name__ == "__main__":
    sys.exit(main())
