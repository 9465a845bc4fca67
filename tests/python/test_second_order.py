"""The float64 reference of the second-order RNEA derivatives against Pinocchio's ComputeRNEASecondOrderDerivatives,
built here from the pin wheel's C++ headers and libraries (the Python bindings do not expose it): tests/oracle's two
programs print both on the same states, fixed and floating bases, random, zero-velocity and fast states."""

import os
import subprocess
import sys
import numpy as np
import pytest

from robot_cases import REPO, SHARED_ROBOTS

BUILD = REPO / "build" / "tests"
ROBOTS = [("iiwa", False), ("go2", True), ("g1_29dof", True), ("atlas", False)]
RTOL = 1e-9  # per tensor, relative to its largest entry (the two agree to ~1e-14 in practice)


@pytest.fixture(scope="module")
def programs():
    """(Pinocchio's oracle, grid-rbd's reference) executables; skipped with the reason when either cannot be built"""
    BUILD.mkdir(parents=True, exist_ok=True)
    pin_exe, grid_exe = BUILD / "pin_second_order", BUILD / "grid_second_order"
    lib = REPO / "build" / "libgrid.a"
    if not lib.exists():
        pytest.skip(f"{lib} is not built (make c-programs)")
    r = subprocess.run(["cc", "-std=c11", "-D_GNU_SOURCE", "-O1", f"-I{REPO / 'include'}",
                        str(REPO / "tests" / "oracle" / "grid_second_order.c"), str(lib), "-lexpat", "-lm", "-ldl",
                        "-lpthread", "-o", str(grid_exe)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    src = REPO / "tests" / "oracle" / "pin_second_order.cpp"
    if not pin_exe.exists() or pin_exe.stat().st_mtime < src.stat().st_mtime:  # (about 50 s of C++ templates)
        r = subprocess.run(["bash", str(REPO / "bench" / "build_pinocchio_bench.sh"), str(pin_exe), str(src)],
                           capture_output=True, text=True, env={**os.environ, "PY": sys.executable})
        if r.returncode != 0:
            pytest.skip("Pinocchio's C++ oracle did not build: " + r.stderr[-500:])
    return pin_exe, grid_exe


def states(nq, nv, floating, kind, B=3, seed=0):
    rng = np.random.default_rng(seed)
    q = rng.uniform(-1.2, 1.2, (B, nq))
    if floating:
        q[:, 3:7] /= np.linalg.norm(q[:, 3:7], axis=1, keepdims=True)
    scale = {"random": 2.0, "zero": 0.0, "fast": 10.0}[kind]
    return q, rng.uniform(-scale, scale, (B, nv)), rng.uniform(-5, 5, (B, nv))


def run(exe, path, floating, q, v, a):
    text = f"{len(q)} {q.shape[1]} {v.shape[1]}\n" + "\n".join(
        " ".join(f"{x:.17g}" for x in np.concatenate(s)) for s in zip(q, v, a))
    r = subprocess.run([str(exe), str(path), str(int(floating))], input=text, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, (exe.name, r.returncode, r.stderr[-1000:])
    nv = v.shape[1]
    return np.array(r.stdout.split(), dtype=np.float64).reshape(len(q), 4, nv, nv, nv)


@pytest.mark.parametrize("kind", ["random", "zero", "fast"])
@pytest.mark.parametrize("name,floating", ROBOTS, ids=[r[0] for r in ROBOTS])
def test_reference_matches_pinocchio(programs, name, floating, kind):
    import grid_rbd
    path = SHARED_ROBOTS / f"{name}.urdf"
    if not path.exists():
        pytest.skip(f"{path} is absent")
    h = grid_rbd.register_robot(f"so_{name}", urdf_path=path, floating_base=floating, codegen=False, verbose=False)
    q, v, a = states(h.nq, h.nv, floating, kind, seed=len(name))
    pin_exe, grid_exe = programs
    ours, theirs = run(grid_exe, path, floating, q, v, a), run(pin_exe, path, floating, q, v, a)
    for t, what in enumerate(("d2tau/dq dq", "d2tau/dqd dqd", "d2tau/dq dqd", "dM/dq")):
        ref = theirs[:, t]
        err = np.abs(ours[:, t] - ref).max() / max(1.0, np.abs(ref).max())
        assert err <= RTOL, f"{name} [{kind}] {what}: relative error {err:.2e}"
    if kind == "zero":
        # at zero velocity the velocity blocks are the constant -dC/dqd terms' second derivatives: d2tau/dqd dqd
        # does not depend on qd, so it is not zero, but d2tau/dq dqd is (every term carries a velocity)
        assert np.abs(ours[:, 2]).max() == pytest.approx(0.0, abs=1e-12)
