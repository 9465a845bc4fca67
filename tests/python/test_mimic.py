"""Mimic joints as couplings (q_m = multiplier * q_leader + offset): the coupled model against the independent model
projected (G^T M G, G^T tau, J G) on a robot with a chain of mimics, a mimic whose leader is not its ancestor,
prismatic and negative couplings; layouts and handle.mimic_joints; malformed couplings refused with their line;
ignore_mimic=True. (Pinocchio's mimic=True model is the oracle for the real robot h1_2 in
test_pinocchio_crosscheck.py.)"""

import re

import numpy as np
import pytest

import grid_rbd
from grid_rbd import URDFError

LINK = """<link name="{n}"><inertial><origin xyz="{c}" rpy="0.1 0.2 -0.1"/><mass value="{m}"/>
    <inertia ixx="0.011" ixy="0.001" ixz="-0.0005" iyy="0.012" iyz="0.0007" izz="0.009"/></inertial></link>"""


def joint(name, kind, parent, child, xyz, axis="0 0 1", extra=""):
    lim = '<limit lower="-1" upper="1" effort="5" velocity="2"/>' if kind in ("revolute", "prismatic") else ""
    return (f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
            f'<origin xyz="{xyz}" rpy="0.2 -0.1 0.3"/><axis xyz="{axis}"/>{lim}{extra}</joint>')


def mimic_urdf(extra_joint=""):
    links = "".join(LINK.format(n=n, c=c, m=m) for n, c, m in [
        ("base", "0 0 0.05", 3.0), ("l1", "0.1 0 0", 1.2), ("l2", "0 0.1 0.02", 0.9), ("l3", "0.05 0.05 0", 0.7),
        ("l4", "0 0 0.1", 0.8), ("l5", "0.02 0 0.05", 0.5), ("l6", "0 0.03 0.1", 0.6)])
    joints = "".join([
        joint("j1", "revolute", "base", "l1", "0.1 0 0.2", "0 1 0"),
        # a chain: j3 mimics j2, which mimics j1
        joint("j2", "revolute", "l1", "l2", "0.3 0 0", "0 0 1", '<mimic joint="j1" multiplier="1.5" offset="0.1"/>'),
        joint("j3", "revolute", "l2", "l3", "0.2 0.1 0", "1 0 0", '<mimic joint="j2" multiplier="-0.5" offset="0.2"/>'),
        joint("j4", "prismatic", "base", "l4", "-0.1 0.2 0", "0 0.6 0.8"),
        # its leader j4 is on another branch: not an ancestor (Pinocchio 4.1 refuses this)
        joint("j5", "revolute", "l1", "l5", "0 -0.2 0.1", "0 1 0", '<mimic joint="j4" multiplier="2.0" offset="-0.3"/>'),
        joint("j6", "continuous", "l4", "l6", "0 0 0.3", "1 0 0"),
    ])
    return f'<?xml version="1.0"?>\n<robot name="mimic_tree">{links}{joints}{extra_joint}</robot>\n'


# the couplings of mimic_urdf(): mimic joint -> (leader, multiplier, offset), chains resolved
COUPLED = {"j2": ("j1", 1.5, 0.1), "j3": ("j1", -0.75, -0.05 + 0.2), "j5": ("j4", 2.0, -0.3)}


def expand(indep, coupled, q, v, a, couplings=None):
    """the independent model's q, v, a of the coupled ones, and G (nv_indep x nv); couplings: mimic joint ->
    (leader, multiplier, offset), COUPLED by default"""
    couplings = COUPLED if couplings is None else couplings
    names = list(indep.joint_names)
    G = np.zeros((indep.nv, coupled.nv))
    B = len(q)
    qi, vi, ai = np.zeros((B, indep.nq)), np.zeros((B, indep.nv)), np.zeros((B, indep.nv))
    mi = indep._model
    off = 7 if indep.floating_base else 0
    if off:
        qi[:, :7], vi[:, :6], ai[:, :6] = q[:, :7], v[:, :6], a[:, :6]
        G[:6, :6] = np.eye(6)
    for i, n in enumerate(names):
        if mi.joint_types[i] == "free":
            continue
        iq, iv = mi.joint_idx_q[i], mi.joint_idx_v[i]
        leader, mult, o = couplings.get(n, (n, 1.0, 0.0))
        c = coupled.joint_names.index(leader)
        cq, cv = coupled._model.joint_idx_q[coupled._model.joint_names.index(leader)], \
            coupled._model.joint_idx_v[coupled._model.joint_names.index(leader)]
        assert c >= 0
        qi[:, iq] = mult * q[:, cq] + o
        vi[:, iv] = mult * v[:, cv]
        ai[:, iv] = mult * a[:, cv]
        G[iv, cv] = mult
    return qi, vi, ai, G


def states(h, B=6, seed=0):
    rng = np.random.default_rng(seed)
    q = rng.uniform(-1, 1, (B, h.nq))
    if h.floating_base:
        q[:, 3:7] /= np.linalg.norm(q[:, 3:7], axis=1, keepdims=True)
    return q, rng.uniform(-10, 10, (B, h.nv)), rng.uniform(-50, 50, (B, h.nv)), rng.uniform(-5, 5, (B, 6 * h.nb))


def close(a, b, what, rtol=1e-12):
    a, b = np.asarray(a).reshape(len(a), -1), np.asarray(b).reshape(len(b), -1)
    err = np.linalg.norm(a - b, axis=1) / np.maximum(np.linalg.norm(b, axis=1), 1e-6)
    assert np.all(err <= rtol), f"{what}: worst relative error {err.max():.2e}"


@pytest.mark.parametrize("floating", [False, True], ids=["fixed", "floating"])
@pytest.mark.parametrize("provider", ["reference", "unrolled", "rolled"])
def test_coupled_equals_projected_independent_model(floating, provider):
    common = dict(urdf_string=mimic_urdf(), floating_base=floating, dtype="float64", verbose=False)
    # the generated library: the ten methods compared below (the gradients of coupled robots: test_derivatives)
    kw = {"codegen": False} if provider == "reference" else {
        "codegen_schedule": provider,
        "algorithm_list": ["rnea", "nle", "gravity", "crba", "minv", "fd", "aba", "fk", "ee_pose", "frame_jacobian"]}
    h = grid_rbd.register_robot("mimic_c", **common, **kw)
    indep = grid_rbd.register_robot("mimic_i", ignore_mimic=True, codegen=False, **common)
    assert h.nv == indep.nv - 3 and h.nq == indep.nq - 3
    assert [m["name"] for m in h.mimic_joints] == ["j2", "j3", "j5"]
    for m in h.mimic_joints:
        leader, mult, off = COUPLED[m["name"]]
        assert m["leader"] == leader and m["multiplier"] == pytest.approx(mult, rel=1e-15)
        assert m["offset"] == pytest.approx(off, rel=1e-15, abs=1e-15)
    assert "j2" not in h.joint_names and "j1" in h.joint_names
    q, v, a, f = states(h)
    qi, vi, ai, G = expand(indep, h, q, v, a)
    tau = indep.inverse_dynamics(qi, vi, ai, f_ext=f)
    close(h.inverse_dynamics(q, v, a, f_ext=f), tau @ G, "rnea")
    close(h.inverse_dynamics(q, v, a), indep.inverse_dynamics(qi, vi, ai) @ G, "rnea without f_ext")
    close(h.nonlinear_effects(q, v), indep.nonlinear_effects(qi, vi) @ G, "nle")
    close(h.generalized_gravity(q), indep.generalized_gravity(qi) @ G, "gravity")
    M = np.einsum("ji,bjk,kl->bil", G, indep.crba(qi), G)
    close(h.crba(q), M, "crba")
    close(h.minv(q), np.linalg.inv(M), "minv", 1e-10)
    bias = indep.inverse_dynamics(qi, vi, np.zeros_like(vi), f_ext=f) @ G
    qdd = np.linalg.solve(M, (a - bias)[..., None])[..., 0]
    close(h.forward_dynamics(q, v, a, f_ext=f), qdd, "fd", 1e-10)
    close(h.aba(q, v, a, f_ext=f), qdd, "aba", 1e-10)
    close(h.forward_kinematics(q), indep.forward_kinematics(qi), "fk")
    close(h.end_effector_pose(q), indep.end_effector_pose(qi), "ee pose")
    for frame in ("l3", "l5", "l6"):
        for rf in ("WORLD", "LOCAL", "LOCAL_WORLD_ALIGNED"):
            close(h.frame_jacobian(q, frame, rf), indep.frame_jacobian(qi, frame, rf) @ G, f"jacobian {frame} {rf}")


def test_float32_against_float64():
    """float32 within 1e-4 relative of float64 on the coupled model (the tolerance holds at |qd| = 10, |qdd| = 50)"""
    methods = dict(algorithm_list=["rnea", "crba", "minv", "fd"])   # those compared below
    h64 = grid_rbd.register_robot("mimic64", urdf_string=mimic_urdf(), dtype="float64", verbose=False, **methods)
    h32 = grid_rbd.register_robot("mimic32", urdf_string=mimic_urdf(), dtype="float32", verbose=False, **methods)
    q, v, a, f = states(h64, 16, 3)
    args = {"q": q, "v": v, "a": a}
    for name, call in [("rnea", lambda h, x: h.inverse_dynamics(x["q"], x["v"], x["a"])),
                       ("crba", lambda h, x: h.crba(x["q"])), ("minv", lambda h, x: h.minv(x["q"])),
                       ("fd", lambda h, x: h.forward_dynamics(x["q"], x["v"], x["a"]))]:
        close(call(h32, {k: x.astype(np.float32) for k, x in args.items()}), call(h64, args), name, 1e-4)


def test_ignore_mimic_keeps_independent_joints():
    h = grid_rbd.register_robot("mimic_ind", urdf_string=mimic_urdf(), ignore_mimic=True, codegen=False, verbose=False)
    assert h.mimic_joints == () and h.nv == 6 and "j2" in h.joint_names


BAD = [
    ('<joint name="j7" type="revolute"><parent link="l3"/><child link="l7"/><axis xyz="0 0 1"/>'
     '<limit lower="-1" upper="1" effort="1" velocity="1"/>\n<mimic joint="nowhere"/></joint><link name="l7"/>',
     "mimics 'nowhere', which is not a joint of this robot"),
    ('<joint name="j7" type="planar"><parent link="l3"/><child link="l7"/><axis xyz="0 0 1"/>\n<mimic joint="j1"/>'
     '</joint><link name="l7"/>', "only revolute, continuous and prismatic joints can mimic"),
    ('<joint name="j7" type="ball"><parent link="l3"/><child link="l7"/>\n<mimic joint="j1"/></joint><link name="l7"/>',
     "only revolute, continuous and prismatic joints can mimic"),
    ('<joint name="j7" type="revolute"><parent link="l3"/><child link="l7"/><axis xyz="0 0 1"/>'
     '<limit lower="-1" upper="1" effort="1" velocity="1"/>\n<mimic joint="j7"/></joint><link name="l7"/>',
     "mimics itself"),
    ('<joint name="j7" type="fixed"><parent link="l3"/><child link="l7"/></joint><link name="l7"/>'
     '<joint name="j8" type="revolute"><parent link="l7"/><child link="l8"/><axis xyz="0 0 1"/>'
     '<limit lower="-1" upper="1" effort="1" velocity="1"/>\n<mimic joint="j7"/></joint><link name="l8"/>',
     "a fixed joint: a leader must be revolute, continuous or prismatic"),
    ('<joint name="j7" type="revolute"><parent link="l3"/><child link="l7"/><axis xyz="0 0 1"/>'
     '<limit lower="-1" upper="1" effort="1" velocity="1"/>\n<mimic joint="j8"/></joint><link name="l7"/>'
     '<joint name="j8" type="revolute"><parent link="l7"/><child link="l8"/><axis xyz="0 0 1"/>'
     '<limit lower="-1" upper="1" effort="1" velocity="1"/><mimic joint="j7"/></joint><link name="l8"/>',
     "cycle of mimic joints"),
]


@pytest.mark.parametrize("extra,message", BAD, ids=["missing-leader", "planar", "ball", "self", "fixed-leader",
                                                    "cycle"])
def test_malformed_couplings_name_file_line_and_element(extra, message, tmp_path):
    path = tmp_path / "bad_mimic.urdf"
    text = mimic_urdf(extra)
    path.write_text(text)
    line = text[:text.index(extra)].count("\n") + extra[:extra.index("<mimic")].count("\n") + 1
    with pytest.raises(URDFError) as e:
        grid_rbd.register_robot("bad_mimic", urdf_path=path, codegen=False, verbose=False)
    assert message in str(e.value), str(e.value)
    assert e.value.line == line and str(path) in str(e.value) and "<mimic" in str(e.value), (line, str(e.value))


def grouped_urdf(leaf=False):
    """couplings the articulated-body recursion takes (em_model.group_aba): a chain group eliminated at its leader
    (j2 and j3 below j1, as h1_2's fingers), and two prismatic fingers hanging from one host body, the second
    mimicking the first with a negative multiplier (as panda's gripper); a continuous joint below a member.
    leaf: the continuous joint on the host instead, before the fingers, and the first finger mimicking the second,
    so that only members lie below a member (em_model.group_minv: M^-1 by the recursion too) and a plain joint's
    column lies between the host's and the group's"""
    links = "".join(LINK.format(n=n, c=c, m=m) for n, c, m in [
        ("base", "0 0 0.05", 3.0), ("l1", "0.1 0 0", 1.2), ("l2", "0 0.1 0.02", 0.9), ("l3", "0.05 0.05 0", 0.7),
        ("hand", "0 0 0.1", 0.8), ("f1", "0.02 0 0.05", 0.5), ("f2", "0 0.03 0.1", 0.6), ("tip", "0 0 0.02", 0.3)])
    joints = "".join([
        joint("j1", "revolute", "base", "l1", "0.1 0 0.2", "0 1 0"),
        joint("j2", "revolute", "l1", "l2", "0.3 0 0", "0 0 1", '<mimic joint="j1" multiplier="1.5" offset="0.1"/>'),
        joint("j3", "revolute", "l2", "l3", "0.2 0.1 0", "1 0 0", '<mimic joint="j2" multiplier="-0.5" offset="0.2"/>'),
        joint("wrist", "revolute", "l1", "hand", "-0.1 0.2 0", "0 0.6 0.8"),
    ])
    if leaf:
        joints += "".join([
            joint("f1j", "prismatic", "hand", "f1", "0 0.02 0.1", "0 1 0", '<mimic joint="f2j" multiplier="-1.0"/>'),
            joint("f2j", "prismatic", "hand", "f2", "0 -0.02 0.1", "0 1 0"),
            joint("etipj", "continuous", "hand", "tip", "0 0 0.05", "1 0 0")])
    else:
        joints += "".join([
            joint("f1j", "prismatic", "hand", "f1", "0 0.02 0.1", "0 1 0"),
            joint("f2j", "prismatic", "hand", "f2", "0 -0.02 0.1", "0 1 0", '<mimic joint="f1j" multiplier="-1.0"/>'),
            joint("tipj", "continuous", "f2", "tip", "0 0 0.05", "1 0 0")])
    return f'<?xml version="1.0"?>\n<robot name="grouped">{links}{joints}</robot>\n'


@pytest.mark.parametrize("floating", [False, True], ids=["fixed", "floating"])
@pytest.mark.parametrize("schedule", ["unrolled", "rolled"])
def test_coupled_forward_dynamics_by_the_articulated_recursion(floating, schedule):
    """FD and ABA of couplings that hang from one body run the articulated-body recursion with the couplings (no
    mass matrix): equal to the dense solve of the projected independent model at high speeds, with and without f_ext"""
    common = dict(urdf_string=grouped_urdf(), floating_base=floating, dtype="float64", verbose=False)
    h = grid_rbd.register_robot("grouped_c", codegen_schedule=schedule, algorithm_list=["fd", "aba"], **common)
    indep = grid_rbd.register_robot("grouped_i", ignore_mimic=True, codegen=False, **common)
    assert h.nv == indep.nv - 3
    with open(f"{h.cache_entry}/robot.c") as fh:
        source = fh.read()
    assert "aba_f_m" in source and "grid_ltl_solve" not in source
    q, v, a, f = states(h, B=9, seed=3)
    qi, vi, ai, G = expand(indep, h, q, v, a, {m["name"]: (m["leader"], m["multiplier"], m["offset"])
                                               for m in h.mimic_joints})
    M = np.einsum("ji,bjk,kl->bil", G, indep.crba(qi), G)
    for fe in (None, f):
        bias = indep.inverse_dynamics(qi, vi, np.zeros_like(vi), f_ext=fe) @ G
        qdd = np.linalg.solve(M, (a - bias)[..., None])[..., 0]
        close(h.forward_dynamics(q, v, a, f_ext=fe), qdd, "fd", 1e-10)
        close(h.aba(q, v, a, f_ext=fe), qdd, "aba", 1e-10)
        # the coupled recursion really replaced the dense path: a perturbed leader torque moves qdd as M_c^-1 does
        a2 = a.copy()
        a2[:, 0] += 1.0
        close(h.aba(q, v, a2, f_ext=fe) - h.aba(q, v, a, f_ext=fe), np.linalg.inv(M)[:, :, 0], "aba column", 1e-8)


@pytest.mark.parametrize("floating", [False, True], ids=["fixed", "floating"])
@pytest.mark.parametrize("schedule", ["unrolled", "rolled"])
@pytest.mark.parametrize("leaf", [True, False], ids=["members-below-members", "plain-below-a-member"])
def test_coupled_minv_by_the_articulated_recursion(floating, schedule, leaf):
    """M^-1 of couplings with only members below a member runs the recursion with the couplings on unit torques
    (the user's columns, no mass matrix) and equals the inverse of the projected independent mass matrix, exactly
    symmetric; a plain joint below a member keeps the dense solve of G^T M G, which must agree as well (zero, random
    and wide joint angles)"""
    common = dict(urdf_string=grouped_urdf(leaf), floating_base=floating, dtype="float64", verbose=False)
    h = grid_rbd.register_robot("grouped_minv", codegen_schedule=schedule, algorithm_list=["minv"], **common)
    indep = grid_rbd.register_robot("grouped_minv_i", ignore_mimic=True, codegen=False, **common)
    with open(f"{h.cache_entry}/robot.c") as fh:
        source = fh.read()
    recursion = re.search(r"grid_[sv]_minv_m(_r)?\(", source) is not None
    assert recursion == leaf and ("grid_ltl_solve" in source) == (not leaf)
    q, v, a, _ = states(h, B=9, seed=5)
    q[0] = 0.0
    if floating:
        q[0, 6] = 1.0
    qi, _, _, G = expand(indep, h, q, v, a, {m["name"]: (m["leader"], m["multiplier"], m["offset"])
                                             for m in h.mimic_joints})
    M = np.einsum("ji,bjk,kl->bil", G, indep.crba(qi), G)
    Minv = h.minv(q)
    close(Minv, np.linalg.inv(M), "minv", 1e-10)
    # the recursion writes each upper element once and mirrors it; the dense solve is symmetric to rounding
    if leaf:
        assert np.array_equal(Minv, np.swapaxes(Minv, 1, 2))
    close(Minv, np.swapaxes(Minv, 1, 2), "symmetry", 1e-13)
    close(np.einsum("bij,bjk->bik", Minv, M), np.broadcast_to(np.eye(h.nv), M.shape), "M^-1 M", 1e-10)


@pytest.mark.parametrize("schedule", ["auto", "rolled"])
def test_talos_grippers_against_pinocchio_projected(schedule):
    """talos_full_v2 (floating, 12 coupled gripper joints; Pinocchio 4.1 refuses its mimic=True model): RNEA with
    f_ext, CRBA, M^-1, FD and ABA against Pinocchio's independent model projected with G (G^T tau, G^T M G, the dense
    solve), at random, zero, fast and strongly accelerated states"""
    pytest.importorskip("pinocchio")
    import pinocchio as pin
    from robot_cases import PinMap, example_robot_data_dir
    erd = example_robot_data_dir()
    if erd is None:
        pytest.skip("example-robot-data is not installed")
    path = erd / "talos_data/robots/talos_full_v2.urdf"
    common = dict(urdf_path=path, floating_base=True, dtype="float64", verbose=False)
    h = grid_rbd.register_robot("talos_c", codegen_schedule=schedule, algorithm_list=["rnea", "crba", "minv", "fd",
                                                                                        "aba"], **common)
    indep = grid_rbd.register_robot("talos_i", ignore_mimic=True, codegen=False, **common)
    assert len(h.mimic_joints) == 12 and h.nv == indep.nv - 12
    with open(f"{h.cache_entry}/robot.c") as fh:
        source = fh.read()
    assert "grid_ltl_solve" not in source  # M^-1, FD and ABA by the recursion with the couplings
    pm = PinMap(indep, path, True)
    q, v, a, f = states(h, B=8, seed=11)
    q[0] = 0.0
    q[0, 6] = 1.0
    v[0] = a[0] = f[0] = 0.0
    v[1] *= 10.0
    a[2] *= 10.0
    qi, vi, ai, G = expand(indep, h, q, v, a, {m["name"]: (m["leader"], m["multiplier"], m["offset"])
                                               for m in h.mimic_joints})
    tau, M, h0 = [], [], []
    for b in range(len(q)):
        pq, pv, pa = pm.q(qi[b]), pm.v(vi[b]), pm.v(ai[b])
        tau.append(pm.vec(pin.rnea(pm.model, pm.data, pq, pv, pa, pm.fext(f[b]))))
        h0.append(pm.vec(pin.rnea(pm.model, pm.data, pq, pv, np.zeros(pm.model.nv), pm.fext(f[b]))))
        Mb = pin.crba(pm.model, pm.data, pq)
        M.append(pm.mat(np.triu(Mb) + np.triu(Mb, 1).T))
    tau, h0, M = np.array(tau) @ G, np.array(h0) @ G, np.einsum("ji,bjk,kl->bil", G, np.array(M), G)
    close(h.inverse_dynamics(q, v, a, f_ext=f), tau, "rnea", 1e-9)
    close(h.crba(q), M, "crba", 1e-9)
    close(h.minv(q), np.linalg.inv(M), "minv", 1e-9)
    qdd = np.linalg.solve(M, (a - h0)[..., None])[..., 0]
    close(h.forward_dynamics(q, v, a, f_ext=f), qdd, "fd", 1e-9)
    close(h.aba(q, v, a, f_ext=f), qdd, "aba", 1e-9)


def test_rolled_programs_see_coupling_roles_only_where_they_use_them():
    """the rolled loops switch on the bodies' joint kinds; the coupling roles (leader, member, host) split a kind only
    for the programs that read them (the articulated recursion of FD, ABA and M^-1 with the couplings): the RNEA
    gradient and IDSVA of a coupled model have the independent model's steps (h1_2's IDSVA had 118 steps per dtype
    with the roles, 50 without, and its CUDA build did not finish in 250 s)"""
    from grid_rbd import _core, _signatures
    text = grouped_urdf(leaf=True).encode()
    ids = [_signatures.row(m)["id"] for m in ("rnea_grad", "idsva_so", "minv")]
    steps = {}
    for ignore in (False, True):
        model = _core.Model(text, "<grouped>", floating_base=True, ignore_mimic=ignore)
        src = _core.emit_source(model, _core.FLOAT64, 0, _core.SCHEDULE_ROLLED, methods=ids)
        for fn in ("rnea_grad", "idsva_so", "minv"):
            steps[fn, ignore] = set(re.findall(rf"void grid_rv?_{fn}(?:_m_r)?_(\d+)\(", src))
        if not ignore:
            # M^-1's recursion switches on the roles, the others on the joint kind alone
            assert "switch (grid_kindr_[i])" in src and "switch (grid_kind_[i])" in src
    assert steps["rnea_grad", False] and steps["idsva_so", False]
    for fn in ("rnea_grad", "idsva_so"):
        assert len(steps[fn, False]) == len(steps[fn, True]), (fn, len(steps[fn, False]), len(steps[fn, True]))
    assert len(steps["minv", False]) > len(steps["minv", True])
