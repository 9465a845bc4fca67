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
    if not pin_exe.exists() or pin_exe.stat().st_mtime < src.stat().st_mtime:  # (about 40 s of C++ templates at -O1)
        r = subprocess.run(["bash", str(REPO / "bench" / "build_pinocchio_bench.sh"), str(pin_exe), str(src)],
                           capture_output=True, text=True, env={**os.environ, "PY": sys.executable, "OPT": "-O1"})
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
    h = grid_rbd.register_robot(f"so_{name}", urdf_path=path, floating_base=floating, codegen=False, verbose=False,
                                dtype="float64")
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


# ---- the generated method (handle.idsva_so) ----

GEN_RTOL = 1e-10   # generated float64 against Pinocchio / the reference, per tensor relative to its largest entry
F32_RTOL = 2e-4    # generated float32 against the float64 reference, the same measure (the g1 target: 1e-4)
F32_CASES = ("iiwa", "panda")
_handles = {}


def handle(name, schedule="auto", dtype="float64", path=None, floating=None):
    """a library holding idsva_so alone (its build is the cost here), shared across the tests"""
    import grid_rbd
    from robot_cases import CASES, robot_path
    key = (name, schedule, dtype)
    if key not in _handles:
        if path is None:
            case = next(c for c in CASES if c.id == name)
            path, floating = robot_path(case), case.floating_base
        _handles[key] = grid_rbd.register_robot(f"so_gen_{name}_{schedule}_{dtype}", urdf_path=path,
                                                floating_base=floating, dtype=dtype, codegen_schedule=schedule,
                                                algorithm_list=["idsva_so"], verbose=False)
    return _handles[key]


def rel(a, b):
    return float(np.abs(np.asarray(a, np.float64) - b).max() / max(1.0, float(np.abs(b).max())))


@pytest.mark.parametrize("kind", ["random", "zero", "fast"])
@pytest.mark.parametrize("name,floating,schedule", [("iiwa", False, "rolled"), ("iiwa", False, "unrolled"),
                                                    ("go2", True, "auto")], ids=["iiwa-rolled", "iiwa-unrolled", "go2"])
def test_generated_matches_pinocchio(programs, name, floating, schedule, kind):
    path = SHARED_ROBOTS / f"{name}.urdf"
    if not path.exists():
        pytest.skip(f"{path} is absent")
    h = handle(name, schedule, path=path, floating=floating)
    q, v, a = states(h.nq, h.nv, floating, kind, seed=len(name) + 1)
    theirs = run(programs[0], path, floating, q, v, a)
    got = h.idsva_so(q, v, a)
    assert isinstance(got, tuple) and len(got) == 4
    for t, what in enumerate(("d2tau/dq dq", "d2tau/dqd dqd", "d2tau/dq dqd", "dM/dq")):
        assert got[t].shape == (len(q), h.nv, h.nv, h.nv)
        err = rel(got[t], theirs[:, t])
        assert err <= GEN_RTOL, f"{name} {schedule} [{kind}] {what}: relative error {err:.2e}"


@pytest.mark.parametrize("cid", ["iiwa", "go2_ff", "panda", "joints_ff"])
def test_generated_matches_reference(cid):
    """with f_ext and qdd absent and present, against the float64 reference provider (a coupled model's projected
    onto the user's coordinates), and float32 against it"""
    import grid_rbd
    from robot_cases import CASES, make_states, robot_path
    case = next(c for c in CASES if c.id == cid)
    ref = grid_rbd.register_robot(f"so_ref_{cid}", urdf_path=robot_path(case), floating_base=case.floating_base,
                                  codegen=False, verbose=False, dtype="float64")
    gen = handle(cid)
    gen32 = handle(cid, dtype="float32") if cid in F32_CASES else None  # (each library builds in 2-25 s here)
    for kind in ("random", "zero", "high_velocity", "high_acceleration"):
        s = make_states(ref, kind, 5, seed=4)
        for args in ((s["q"], s["qd"]), (s["q"], s["qd"], s["qdd"], s["f_ext"])):
            want = ref.idsva_so(*args)
            got = gen.idsva_so(*args)
            got32 = gen32.idsva_so(*[x.astype(np.float32) for x in args]) if gen32 else None
            for t in range(4):
                assert rel(got[t], want[t]) <= GEN_RTOL, f"{cid} [{kind}, {len(args)} inputs] tensor {t}"
                if got32 is None:
                    continue
                assert got32[t].dtype == np.float32
                assert rel(got32[t], want[t]) <= F32_RTOL, f"{cid} float32 [{kind}, {len(args)} inputs] tensor {t}"


def test_coupled_matches_central_differences():
    """a mimic robot (panda's coupled finger) in the user's coordinates: each tensor against central differences of
    the first-order outputs (the RNEA gradient's blocks in q and qd, the mass matrix)"""
    import grid_rbd
    from robot_cases import CASES, make_states, robot_path
    case = next(c for c in CASES if c.id == "panda")
    ref = grid_rbd.register_robot("so_cd_panda", urdf_path=robot_path(case), codegen=False, verbose=False,
                                  dtype="float64")
    assert ref.nv < ref._model.nv_full if hasattr(ref._model, "nv_full") else True
    gen, nv, h = handle("panda"), ref.nv, 1e-6
    s = make_states(ref, "random", 2, seed=9)
    q, v, a = s["q"], s["qd"], s["qdd"]
    T = gen.idsva_so(q, v, a)
    cd = np.zeros((4,) + T[0].shape)
    for k in range(nv):
        e = np.zeros(nv)
        e[k] = h
        dq = (ref.inverse_dynamics_gradient(q + e, v, a) - ref.inverse_dynamics_gradient(q - e, v, a)) / (2 * h)
        dv = (ref.inverse_dynamics_gradient(q, v + e, a) - ref.inverse_dynamics_gradient(q, v - e, a)) / (2 * h)
        cd[0][..., k] = dq[:, :, :nv]
        cd[1][..., k] = dv[:, :, nv:]
        cd[2][..., k] = dv[:, :, :nv]
        cd[3][..., k] = (ref.crba(q + e) - ref.crba(q - e)) / (2 * h)
    for t in range(4):
        err = rel(T[t], cd[t])
        assert err <= 1e-6, f"panda tensor {t}: {err:.2e} from central differences"


# ---- forward dynamics' second derivatives (handle.fdsva_so): a composite of FD, the RNEA derivatives and M^-1 ----

def tangent_steps(ref, path, q, k, h):
    """q moved by +-h along local tangent coordinate k (a floating base's by pin.integrate's retraction, the
    handle's own chart)"""
    import pinocchio as pin
    e = np.zeros(ref.nv)
    e[k] = h
    if not ref.floating_base:
        return q + e, q - e
    model = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer())
    return (np.stack([pin.integrate(model, x, e) for x in q]), np.stack([pin.integrate(model, x, -e) for x in q]))


def fd_central_differences(ref, path, q, v, u, h=1e-6):
    """the four fdsva_so tensors by central differences of the float64 first-order outputs: the FD gradient's blocks
    along q (local tangent: a floating base's q moved by pin.integrate's retraction, the handle's own) and qd, and
    M^-1 along q"""
    nv = ref.nv
    out = np.zeros((4, len(q), nv, nv, nv))
    for k in range(nv):
        e = np.zeros(nv)
        e[k] = h
        qp, qm = tangent_steps(ref, path, q, k, h)
        dq = (ref.forward_dynamics_gradient(qp, v, u) - ref.forward_dynamics_gradient(qm, v, u)) / (2 * h)
        dv = (ref.forward_dynamics_gradient(q, v + e, u) - ref.forward_dynamics_gradient(q, v - e, u)) / (2 * h)
        out[0][..., k] = dq[:, :, :nv]
        out[1][..., k] = dv[:, :, nv:]
        out[2][..., k] = dv[:, :, :nv]
        out[3][..., k] = (ref.minv(qp) - ref.minv(qm)) / (2 * h)
    return out


@pytest.mark.parametrize("cid", ["iiwa", "go2_ff"])
def test_fdsva_so(cid):
    """generated against the reference (with and without f_ext), both against central differences of the FD
    gradient and M^-1, and against the definition through idsva_so and minv (d2qdd/dqd dqd = -M^-1 d2tau/dqd dqd)"""
    import grid_rbd
    from robot_cases import CASES, make_states, robot_path
    case = next(c for c in CASES if c.id == cid)
    path = robot_path(case)
    ref = grid_rbd.register_robot(f"fso_ref_{cid}", urdf_path=path, floating_base=case.floating_base, codegen=False,
                                  verbose=False, dtype="float64")
    gen = grid_rbd.register_robot(f"fso_gen_{cid}", urdf_path=path, floating_base=case.floating_base, verbose=False,
                                  dtype="float64", algorithm_list=["fdsva_so", "idsva_so", "forward_dynamics"])
    s = make_states(ref, "random", 3, seed=5)
    q, v, u = s["q"], s["qd"], s["u"]
    want = ref.fdsva_so(q, v, u)
    got = gen.fdsva_so(q, v, u)
    for t in range(4):
        assert rel(got[t], want[t]) <= GEN_RTOL, f"{cid} tensor {t}"
    got_f, want_f = gen.fdsva_so(q, v, u, s["f_ext"]), ref.fdsva_so(q, v, u, s["f_ext"])
    for t in range(4):
        assert rel(got_f[t], want_f[t]) <= GEN_RTOL, f"{cid} with f_ext, tensor {t}"
    cd = fd_central_differences(ref, path, q, v, u)
    for t in range(4):
        err = rel(got[t], cd[t])
        assert err <= 1e-5, f"{cid} tensor {t}: {err:.2e} from central differences"
    # the velocity block by definition: -M^-1 d2tau/dqd dqd at qdd = FD
    T2 = gen.idsva_so(q, v, gen.forward_dynamics(q, v, u))[1]
    Mi = ref.minv(q)
    assert rel(got[1], -np.einsum("bil,bljk->bijk", Mi, T2)) <= GEN_RTOL


@pytest.mark.parametrize("cid", ["synthetic_ff", "panda"])
def test_fdsva_so_float32_is_computed_in_float64(cid):
    """a float32 library computes fdsva_so in float64 and rounds the outputs (emit_method.wide_real: its float32
    chain put go2's and g1's largest entries up to 50 % off, bench/RESULTS.md): every entry within float32 rounding
    of the float64 reference on random, fast and non-unit-quaternion states, with and without f_ext, floating and
    coupled"""
    import grid_rbd
    from robot_cases import CASES, make_states, robot_path
    case = next(c for c in CASES if c.id == cid)
    path = robot_path(case)
    ref = grid_rbd.register_robot(f"fso_ref_{cid}", urdf_path=path, floating_base=case.floating_base, codegen=False,
                                  verbose=False, dtype="float64")
    gen = grid_rbd.register_robot(f"fso_gen32_{cid}", urdf_path=path, floating_base=case.floating_base, verbose=False,
                                  dtype="float32", algorithm_list=["fdsva_so"])
    assert gen.dtype == np.float32
    for kind in ("random", "high_velocity", "high_acceleration", "nonunit_quaternion"):
        s = make_states(ref, kind, 5, seed=9)
        args = [np.asarray(s[k], np.float32) for k in ("q", "qd", "u", "f_ext")]
        for n_in in (3, 4):
            got = gen.fdsva_so(*args[:n_in])
            want = ref.fdsva_so(*[a.astype(np.float64) for a in args[:n_in]])
            for t in range(4):
                assert got[t].dtype == np.float32
                # per entry: a float64 value rounded once (2^-24 relative), up to the reference's own rounding
                err = np.abs(got[t] - want[t]) / np.maximum(np.abs(want[t]), 1e-3 * np.abs(want[t]).max())
                assert err.max() <= 1e-6, f"{cid} [{kind}, {n_in} inputs] tensor {t}: {err.max():.2e}"


def test_fdsva_so_coupled():
    """panda's coupled finger: generated against the reference (the coupled rows' algebra in the user's coordinates:
    FD solves the coupled system, so the full model's tensors do not project), both against central differences"""
    import grid_rbd
    from robot_cases import CASES, make_states, robot_path
    case = next(c for c in CASES if c.id == "panda")
    path = robot_path(case)
    ref = grid_rbd.register_robot("fso_panda_ref", urdf_path=path, dtype="float64", codegen=False, verbose=False)
    gen = grid_rbd.register_robot("fso_panda", urdf_path=path, dtype="float64", verbose=False,
                                  algorithm_list=["fdsva_so"])
    s = make_states(ref, "random", 2, seed=6)
    q, v, u = s["q"], s["qd"], s["u"]
    want, got = ref.fdsva_so(q, v, u), gen.fdsva_so(q, v, u)
    cd = fd_central_differences(ref, path, q, v, u)
    for t in range(4):
        assert rel(got[t], want[t]) <= GEN_RTOL, f"panda tensor {t}"
        err = rel(want[t], cd[t])
        assert err <= 1e-5, f"panda tensor {t}: {err:.2e} from central differences"


def test_large_coupled_robot():
    """h1_2's coupled hands (12 mimic joints; 51 coordinates in the full tree, 39 the user's): idsva_so generated, its
    full-coordinate tensors (4 x 51^3 elements a state) and their projection in the workspace, equals the reference
    in the user's coordinates on random and fast states"""
    import grid_rbd
    from robot_cases import CASES, make_states, robot_path
    case = next(c for c in CASES if c.id == "h1_2")
    kw = dict(urdf_path=robot_path(case), dtype="float64", verbose=False)
    ref = grid_rbd.register_robot("so_h1_2_ref", codegen=False, **kw)
    gen = grid_rbd.register_robot("so_h1_2", algorithm_list=["idsva_so"], **kw)
    assert len(gen.mimic_joints) == 12 and gen.nv == 39
    for kind in ("random", "high_velocity"):
        s = make_states(ref, kind, 2, seed=5)
        want = ref.idsva_so(s["q"], s["qd"], s["qdd"])
        got = gen.idsva_so(s["q"], s["qd"], s["qdd"])
        for t in range(4):
            assert rel(got[t], want[t]) <= GEN_RTOL, f"h1_2 [{kind}] tensor {t}"


# ---- the end-effector pose Hessian (handle.end_effector_pose_hessian): a composite of the poses and Jacobians ----

@pytest.mark.parametrize("cid", ["iiwa", "go2_ff", "joints_ff"])
def test_ee_pose_hessian(cid):
    """generated (float64, and float32 on iiwa) against the reference on random and extreme states, and the
    reference against central differences of end_effector_pose_gradient along the local tangent (every joint type:
    joints_ff's against the reference, whose C tests difference it)"""
    import grid_rbd
    from robot_cases import CASES, make_states, robot_path
    case = next(c for c in CASES if c.id == cid)
    path = robot_path(case)
    kw = dict(urdf_path=path, floating_base=case.floating_base, verbose=False)
    ref = grid_rbd.register_robot(f"eeh_ref_{cid}", codegen=False, dtype="float64", **kw)
    gen = grid_rbd.register_robot(f"eeh_gen_{cid}", dtype="float64", algorithm_list=["ee_pose_hessian"], **kw)
    gen32 = grid_rbd.register_robot(f"eeh_gen32_{cid}", dtype="float32", algorithm_list=["ee_pose_hessian"],
                                    **kw) if cid == "iiwa" else None
    for kind in ("random", "zero", "high_velocity"):
        q = make_states(ref, kind, 5, seed=11)["q"]
        want = ref.end_effector_pose_hessian(q)
        assert want.shape == (5, 6 * ref.num_ees, ref.nv, ref.nv)
        assert rel(gen.end_effector_pose_hessian(q), want) <= GEN_RTOL, f"{cid} [{kind}]"
        if gen32 is not None:
            got32 = gen32.end_effector_pose_hessian(q.astype(np.float32))
            assert got32.dtype == np.float32 and rel(got32, want) <= F32_RTOL, f"{cid} float32 [{kind}]"
    if cid == "joints_ff":
        return
    q = make_states(ref, "random", 3, seed=12)["q"]
    want, h = ref.end_effector_pose_hessian(q), 1e-6
    for k in range(ref.nv):
        qp, qm = tangent_steps(ref, path, q, k, h)
        cd = (ref.end_effector_pose_gradient(qp) - ref.end_effector_pose_gradient(qm)) / (2 * h)
        assert rel(want[..., k], cd) <= 1e-6, f"{cid} column {k} from central differences"


@pytest.mark.parametrize("cid", ["panda", "h1_2_ff"])
def test_ee_pose_hessian_coupled(cid):
    """coupled mimic joints (panda's finger; h1_2's hands, 12 of them, on a floating base): the reference in the user's
    coordinates (G^T H G per pose row) against central differences of the gradient; the generated composite, run on
    the full coordinates and projected (coupling.c, emit_coupled_composite), against the reference in float64 and
    float32, on random, fast and non-unit-quaternion states"""
    import grid_rbd
    from robot_cases import CASES, make_states, robot_path
    case = next(c for c in CASES if c.id == cid)
    path = robot_path(case)
    kw = dict(urdf_path=path, floating_base=case.floating_base, verbose=False)
    ref = grid_rbd.register_robot(f"eeh_{cid}_ref", dtype="float64", codegen=False, **kw)
    assert len(ref.mimic_joints) > 0
    q, h = make_states(ref, "random", 2, seed=13)["q"], 1e-6
    want = ref.end_effector_pose_hessian(q)
    for k in range(ref.nv if cid == "panda" else 0):  # (h1_2: its 39 columns' differences cost more than they add)
        qp, qm = tangent_steps(ref, path, q, k, h)
        cd = (ref.end_effector_pose_gradient(qp) - ref.end_effector_pose_gradient(qm)) / (2 * h)
        assert rel(want[..., k], cd) <= 1e-6, f"panda column {k} from central differences"
    gen = grid_rbd.register_robot(f"eeh_{cid}", dtype="float64", algorithm_list=["ee_pose_hessian"], **kw)
    gen32 = grid_rbd.register_robot(f"eeh32_{cid}", dtype="float32", algorithm_list=["ee_pose_hessian"], **kw)
    for kind in ("random", "high_velocity", "nonunit_quaternion"):
        q = make_states(ref, kind, 3, seed=14)["q"]
        want = ref.end_effector_pose_hessian(q)
        got = gen.end_effector_pose_hessian(q)
        assert got.shape == want.shape == (3, want.shape[1], ref.nv, ref.nv) and rel(got, want) <= GEN_RTOL, kind
        got32 = gen32.end_effector_pose_hessian(q.astype(np.float32))
        assert rel(got32, ref.end_effector_pose_hessian(q.astype(np.float32).astype(np.float64))) <= F32_RTOL, kind


def test_out_as_one_block():
    """out= as one (B, 4 nv^3) array (pinned_empty's, the specification's host round trip) or tensor: the four tensors
    are views of its blocks, one after another, equal to a fresh call; one state takes (4 nv^3,); a wrong width or a
    non-contiguous block is refused naming the shape"""
    import torch
    from grid_rbd.torch import TorchRobotHandle
    from robot_cases import make_states
    h = handle("iiwa")
    s = make_states(h, "random", 5, seed=14)
    q, v = s["q"], s["qd"]
    want = h.idsva_so(q, v)
    W = 4 * h.nv ** 3
    out = h.pinned_empty((5, W))
    got = h.idsva_so(q, v, out=out)
    n3 = 5 * h.nv ** 3
    for k, (g, w) in enumerate(zip(got, want)):
        assert np.array_equal(g, w) and np.shares_memory(g, out)
        assert np.array_equal(out.reshape(-1)[k * n3:(k + 1) * n3], w.reshape(-1))
    assert np.array_equal(h.idsva_so(q[0], v[0], out=np.empty(W))[3], want[3][0])
    for bad in (np.empty((5, W - 1)), np.empty((5, 2 * W))[:, :W], np.empty((6, W))):
        with pytest.raises(ValueError, match=rf"one writable C-contiguous float64 array of shape \(5, {W}\)"):
            h.idsva_so(q, v, out=bad)
    t = TorchRobotHandle(h)
    block = torch.zeros(5, W, dtype=torch.float64)
    got = t.idsva_so(torch.from_numpy(q), torch.from_numpy(v), out=block)
    for g, w in zip(got, want):
        assert np.array_equal(g.numpy(), w) and g.untyped_storage().data_ptr() == block.untyped_storage().data_ptr()
    with pytest.raises(ValueError, match=rf"one contiguous float64 tensor of shape \(5, {W}\)"):
        t.idsva_so(torch.from_numpy(q), torch.from_numpy(v), out=torch.zeros(5, W + 1, dtype=torch.float64))


# ---- second derivatives through the front ends: jax.hessian, torch.func.hessian ----

FRONT_ROWS = ["rnea", "rnea_grad", "rnea_vjp", "fd", "fd_grad", "fd_vjp", "minv", "ee_pose", "ee_pose_grad",
              "ee_pose_vjp", "idsva_so", "fdsva_so", "ee_pose_hessian"]


@pytest.mark.parametrize("cid", ["iiwa", "go2_ff"])
def test_framework_hessians(cid):
    """jax.hessian and torch.func.hessian (forward over reverse) of scalar functions of inverse_dynamics,
    forward_dynamics and end_effector_pose, in q (a non-unit quaternion on go2: the ambient q), qd and u, against
    central differences of the frameworks' own first-order gradients; without the second-order row a clear
    DifferentiationError names it, and a third derivative raises"""
    import grid_rbd
    import jax
    import jax.numpy as jnp
    import torch
    from grid_rbd._errors import DifferentiationError
    from grid_rbd.jax import JaxRobotHandle
    from grid_rbd.torch import TorchRobotHandle
    from robot_cases import CASES, robot_path
    jax.config.update("jax_enable_x64", True)
    case = next(c for c in CASES if c.id == cid)
    h = grid_rbd.register_robot(f"fh_{cid}", urdf_path=robot_path(case), floating_base=case.floating_base,
                                dtype="float64", verbose=False, algorithm_list=FRONT_ROWS)
    j, t = JaxRobotHandle(h), TorchRobotHandle(h)
    rng = np.random.default_rng(15)
    q = rng.uniform(-1, 1, h.nq)
    if h.floating_base:
        q[3:7] *= 0.8 / np.linalg.norm(q[3:7])
    qd, u, w = (rng.uniform(-1, 1, h.nv) for _ in range(3))
    x0 = (q, qd, u)
    fns = {"jax": {"rnea": lambda q, qd, u: jnp.sin(j.inverse_dynamics(q, qd)) @ w,
                   "fd": lambda q, qd, u: jnp.sin(j.forward_dynamics(q, qd, u)) @ w,
                   "ee_pose": lambda q, qd, u: jnp.sum(jnp.sin(j.end_effector_pose(q)))},
           "torch": {"rnea": lambda q, qd, u: torch.sin(t.inverse_dynamics(q, qd)) @ torch.from_numpy(w),
                     "fd": lambda q, qd, u: torch.sin(t.forward_dynamics(q, qd, u)) @ torch.from_numpy(w),
                     "ee_pose": lambda q, qd, u: torch.sum(torch.sin(t.end_effector_pose(q)))}}
    for fw, table in fns.items():
        for name, fn in table.items():
            if fw == "jax":
                H = jax.hessian(fn, argnums=(0, 1, 2))(*x0)
                grad = lambda *x: [np.asarray(g) for g in jax.grad(fn, argnums=(0, 1, 2))(*x)]  # noqa: E731
            else:
                H = torch.func.hessian(fn, argnums=(0, 1, 2))(*map(torch.from_numpy, x0))
                grad = lambda *x: [g.numpy() for g in  # noqa: E731
                                   torch.func.grad(fn, argnums=(0, 1, 2))(*map(torch.from_numpy, x))]
            for b, xb in enumerate(x0):  # column block b of every row block a, by central differences along x_b
                cd = [np.zeros((len(xa), len(xb))) for xa in x0]
                for k in range(len(xb)):
                    xp, xm = [x.copy() for x in x0], [x.copy() for x in x0]
                    xp[b][k] += 1e-6
                    xm[b][k] -= 1e-6
                    for a, (gp, gm) in enumerate(zip(grad(*xp), grad(*xm))):
                        cd[a][:, k] = (gp - gm) / 2e-6
                for a in range(3):
                    got = np.asarray(H[a][b])
                    assert rel(got, cd[a]) <= 1e-6, f"{fw} {cid} {name} block ({a}, {b}): {rel(got, cd[a]):.2e}"
    # a third derivative raises; so does a second one without the second-order row in the library
    with pytest.raises(DifferentiationError):
        jax.jacfwd(jax.hessian(fns["jax"]["rnea"]))(*x0)
    plain = grid_rbd.register_robot(f"fh_plain_{cid}", urdf_path=robot_path(case), floating_base=case.floating_base,
                                    dtype="float64", verbose=False, algorithm_list=FRONT_ROWS[:-3])
    jp, tp = JaxRobotHandle(plain), TorchRobotHandle(plain)
    with pytest.raises(DifferentiationError, match="'idsva_so' in algorithm_list"):
        jax.hessian(lambda q: jnp.sum(jp.inverse_dynamics(q, qd)))(q)
    with pytest.raises(DifferentiationError, match="'fdsva_so' in algorithm_list"):
        torch.func.hessian(lambda q: torch.sum(tp.forward_dynamics(q, torch.from_numpy(qd), torch.from_numpy(u))))(
            torch.from_numpy(q))
