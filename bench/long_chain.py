"""Long revolute chains (up to 4095 joints, the URDF parser's 4096 links): build time and a call of each method from a thread with a 1 MiB stack, against the reference.

python bench/long_chain.py [N] [METHOD ...]   (default: 4095 crba minv inverse_dynamics_gradient)

Measured on the 2-core machine (float64, AUTO, cold cache; docs/emitter.md "Large tiles"): the emitter alone
(build/gridc --algo) takes 7.5 s for CRBA at 1000 links, 28 s at 2000, 112 s at 4095 (483 MB), and 547 s for the
FD gradient at 4095 (1.3 GB, 72 MB of C: its dtau row tables are O(nv^2)), so "every method" at 4095 does not fit
a test budget; tests/python/test_defects_large.py runs 140-700 links instead.
"""
import sys
import threading
import time

import numpy as np

import grid_rbd


def chain_urdf(n, mass=0.1, length=0.05):
    """n revolute joints with small inertias and short links (tests/python/test_defects_large.py's chain)"""
    s = ['<?xml version="1.0"?>', f'<robot name="chain{n}">']
    for i in range(n + 1):
        s.append(f'<link name="l{i}"><inertial><origin xyz="0.001 0.002 {length / 2}"/>'
                 f'<mass value="{mass * (1 + (i % 5) / 10)}"/>'
                 '<inertia ixx="1e-3" ixy="1e-5" ixz="2e-5" iyy="8e-4" iyz="3e-5" izz="6e-4"/></inertial></link>')
    for i in range(n):
        ax = ["0 0 1", "0 1 0", "1 0 0"][i % 3]
        s.append(f'<joint name="j{i}" type="revolute"><parent link="l{i}"/><child link="l{i + 1}"/>'
                 f'<origin xyz="0 0.002 {length}" rpy="0.1 0 0.05"/><axis xyz="{ax}"/>'
                 '<limit lower="-3" upper="3" effort="1" velocity="1"/></joint>')
    s.append('</robot>')
    return "\n".join(s)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 4095
    methods = sys.argv[2:] or ["crba", "minv", "inverse_dynamics_gradient"]
    urdf = chain_urdf(n)
    t = time.time()
    r = grid_rbd.register_robot(f"chain{n}", urdf_string=urdf, dtype="float64", algorithm_list=methods,
                                device="cpu", verbose=True)
    print(f"chain {n}: registered {methods} in {time.time() - t:.1f} s, workspace {r._library.meta['work_bytes']} "
          "bytes per thread", flush=True)
    ref = grid_rbd.register_robot(f"chain{n}_ref", urdf_string=urdf, dtype="float64", codegen=False, verbose=False)
    rng = np.random.default_rng(0)
    q, qd, x = (rng.uniform(-1, 1, (2, n)) for _ in range(3))
    res = {}

    def run():
        for m in methods:
            args = (q,) if m in ("crba", "minv") else (q, qd, x)
            t0 = time.time()
            res[m] = getattr(r, m)(*args), time.time() - t0

    threading.stack_size(1 << 20)
    th = threading.Thread(target=run)
    th.start()
    th.join()
    for m in methods:
        args = (q,) if m in ("crba", "minv") else (q, qd, x)
        want = getattr(ref, m)(*args)
        got, dt = res[m]
        print(f"  {m}: {dt * 1e3:.1f} ms for 2 states on a 1 MiB thread stack, relative error "
              f"{np.abs(got - want).max() / np.abs(want).max():.1e}")


if __name__ == "__main__":
    main()
