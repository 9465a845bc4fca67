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
    # the FD gradient's 1.3 MB tile (2 nv^2 lane vectors) already at 140 links, past a 1 MiB stack
    (140, ["forward_dynamics_gradient"]),
])
def test_large_tiles_run_on_a_1mib_thread_stack(tmp_path, n, methods):
    """the lane tile of an nv^2 output lived on the C stack: a 1 MiB thread stack overflowed from nv ~ 130"""
    run_child(tmp_path, n, methods, 1 << 20)


def test_700_link_crba_registers_on_the_default_stack(tmp_path):
    """registration's self-check segfaulted: CRBA's tile is 15.7 MB at nv = 700, against an 8 MiB stack"""
    run_child(tmp_path, 700, ["crba"], 0)


def star_urdf(legs, depth):
    """`legs` chains of `depth` revolute joints on one base link: `legs` leaf bodies, so as many end effectors"""
    s = ['<?xml version="1.0"?>', f'<robot name="star{legs}">',
         '<link name="base"><inertial><mass value="2"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/>'
         '</inertial></link>']
    for leg in range(legs):
        parent = "base"
        for d in range(depth):
            name = f"l{leg}_{d}"
            s.append(f'<link name="{name}"><inertial><origin xyz="0.01 0 0.02"/><mass value="0.{1 + (leg + d) % 9}"/>'
                     '<inertia ixx="1e-3" ixy="1e-5" ixz="0" iyy="8e-4" iyz="0" izz="6e-4"/></inertial></link>')
            ax = ["0 0 1", "0 1 0", "1 0 0"][(leg + d) % 3]
            xyz = f"{0.1 * (leg % 7)} {0.05 * (leg % 5)} 0.03" if d == 0 else "0 0.01 0.05"
            s.append(f'<joint name="j{leg}_{d}" type="revolute"><parent link="{parent}"/><child link="{name}"/>'
                     f'<origin xyz="{xyz}" rpy="0.1 {0.01 * leg} 0.05"/><axis xyz="{ax}"/>'
                     '<limit lower="-3" upper="3" effort="1" velocity="1"/></joint>')
            parent = name
    s.append('</robot>')
    return "\n".join(s)


def check_star(tmp_path, legs, depth, schedule, methods):
    urdf = star_urdf(legs, depth)
    kw = dict(urdf_string=urdf, dtype="float64", verbose=False)
    lib = grid_rbd.register_robot(f"star{legs}_{schedule}", cache_dir=str(tmp_path), codegen_schedule=schedule,
                                  algorithm_list=methods, device="cpu", **kw)
    ref = grid_rbd.register_robot(f"star{legs}_ref", codegen=False, **kw)
    pose = ref.end_effector_pose(np.zeros((1, ref.nq)))
    assert pose.size == 6 * legs
    src = open(lib.library_path[:-len("robot.so")] + "robot.c").read()
    assert "/* ee_pose, rolled schedule:" in src  # the function that hit the limit
    rng = np.random.default_rng(legs)
    q = rng.uniform(-1, 1, (3, lib.nq))
    g = rng.uniform(-1, 1, (3,) + pose.shape[1:])
    for m in methods:
        args = (q, g) if m.endswith("_vjp") else (q,)
        got, want = getattr(lib, m)(*args), getattr(ref, m)(*args)
        assert got.shape == want.shape, m
        err = np.abs(got - want).max() / np.abs(want).max()
        assert err < 1e-12, f"star {legs} {schedule} {m}: relative error {err:.2e}"


def test_47_end_effectors_build_rolled(tmp_path):
    """a rolled step declared one array per fixed body it read, at most 48 (SYM_MAX_ARRAYS): the end-effector pose
    of 47 leaves failed with 'out of memory emitting ee_pose'"""
    check_star(tmp_path, 48, 2, "rolled", ["end_effector_pose", "end_effector_pose_gradient", "end_effector_pose_vjp"])


def test_210_end_effectors_build_under_auto(tmp_path):
    """under auto, the pose of 201-300 leaves passes the unroll budget, rolls and hit the same limit"""
    check_star(tmp_path, 210, 3, "auto", ["end_effector_pose"])
