"""Large robots: nv^2-sized lane tiles on a small thread stack (long chains) and rolled builds with many end effectors
(a tree of short chains), against the float64 reference (codegen=False)."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import grid_rbd


def chain_urdf(n, mass=0.1, length=0.05):
    """n revolute joints (axes cycling z, y, x) with small inertias and short links"""
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


# the child: register (default options but float64), then call each method from a thread with a 1 MiB stack
# (or on the main thread); a stack overflow kills the child, not the test session
CHILD = textwrap.dedent("""
    import sys, threading, numpy as np, grid_rbd
    urdf, cache, out, methods, stack = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4].split(","), int(sys.argv[5])
    r = grid_rbd.register_robot("big", urdf_path=urdf, dtype="float64", cache_dir=cache, verbose=False,
                                algorithm_list=methods, device="cpu")
    s = np.load(out + ".in.npz")
    res = {}
    def run():
        for m in methods:
            args = (s["q"],) if m in ("crba", "minv") else (s["q"], s["qd"], s["x"])
            res[m] = getattr(r, m)(*args)
    if stack:
        threading.stack_size(stack)
        t = threading.Thread(target=run)
        t.start()
        t.join()
    else:
        run()
    np.savez(out, **res)
""")


def run_child(tmp_path, n, methods, stack):
    path = tmp_path / f"chain{n}.urdf"
    path.write_text(chain_urdf(n))
    rng = np.random.default_rng(n)
    states = dict(q=rng.uniform(-1, 1, (3, n)), qd=rng.uniform(-1, 1, (3, n)), x=rng.uniform(-1, 1, (3, n)))
    out = str(tmp_path / "out")
    np.savez(out + ".in.npz", **states)
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(grid_rbd.__file__)))
    p = subprocess.run([sys.executable, "-c", CHILD, str(path), str(tmp_path / "cache"), out, ",".join(methods),
                        str(stack)], env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, f"chain {n} {methods}: the child died with {p.returncode} (a stack overflow is -11)\n" \
                              f"{p.stderr[-2000:]}"
    got = np.load(out + ".npz")
    ref = grid_rbd.register_robot(f"chain{n}_ref", urdf_path=str(path), dtype="float64", codegen=False, verbose=False)
    for m in methods:
        args = (states["q"],) if m in ("crba", "minv") else (states["q"], states["qd"], states["x"])
        want = getattr(ref, m)(*args)
        assert got[m].shape == want.shape, m
        for b in range(want.shape[0]):
            err = np.abs(got[m][b] - want[b]).max() / np.abs(want[b]).max()
            # -M^-1 D against the reference's recursion: M of a long chain is ill-conditioned
            bound = 1e-7 if m == "forward_dynamics_gradient" else 1e-9
            assert err < bound, f"chain {n} {m} state {b}: relative error {err:.2e}"


@pytest.mark.parametrize("n, methods", [
    # nv^2 lane tiles: M, M^-1 1.3 MB, the RNEA gradient 2.6 MB at nv = 200 (4 doubles per lane vector)
    (200, ["crba", "minv", "inverse_dynamics_gradient"]),
    # the FD gradient's 1.3 MB (its self-check already fails at 200 links: conditioning, not the stack)
    (140, ["forward_dynamics_gradient"]),
])
def test_large_tiles_run_on_a_1mib_thread_stack(tmp_path, n, methods):
    """the lane tile of an nv^2 output lived on the C stack: a 1 MiB thread stack overflowed from nv ~ 130"""
    run_child(tmp_path, n, methods, 1 << 20)


def test_700_link_crba_registers_on_the_default_stack(tmp_path):
    """registration's self-check segfaulted: CRBA's tile is 15.7 MB at nv = 700, against an 8 MiB stack"""
    run_child(tmp_path, 700, ["crba"], 0)
