"""Joint types beyond the real robots' (planar with any normal, spherical/ball): the documented layouts, a planar
joint with a tilted normal against Pinocchio's model of the same robot with the plane rotated onto z, and the
joint-model table as the handle reports it."""

import numpy as np
import pytest

import grid_rbd
from robot_cases import RTOL, assert_blocks_close

pin = pytest.importorskip("pinocchio")

INERTIA = """<inertial><origin xyz="{c}" rpy="0.1 -0.2 0.3"/><mass value="{m}"/>
    <inertia ixx="0.02" ixy="0.001" ixz="-0.002" iyy="0.03" iyz="0.0015" izz="0.025"/></inertial>"""


def tilted_urdf(normal, pinocchio_form):
    """base -> planar (normal `normal`) -> plate -> revolute -> arm. pinocchio_form: the planar joint written as
    fixed (placement . Rb) -> planar about z -> fixed (Rb^T), Rb = [e1 e2 n], which Pinocchio can read"""
    n = np.asarray(normal, float) / np.linalg.norm(normal)
    e1, e2 = plane_basis(n)
    Rb = np.column_stack([e1, e2, n])
    R0 = pin.rpy.rpyToMatrix(0.2, -0.3, 0.4)
    fmt = lambda v: " ".join(f"{x:.17g}" for x in v)
    if pinocchio_form:
        planar = f"""
  <joint name="pre" type="fixed"><parent link="base"/><child link="pre_link"/>
    <origin xyz="0.1 0.2 0.3" rpy="{fmt(pin.rpy.matrixToRpy(R0 @ Rb))}"/></joint>
  <link name="pre_link"/>
  <joint name="slide" type="planar"><parent link="pre_link"/><child link="mid_link"/><axis xyz="0 0 1"/></joint>
  <link name="mid_link"/>
  <joint name="post" type="fixed"><parent link="mid_link"/><child link="plate"/>
    <origin xyz="0 0 0" rpy="{fmt(pin.rpy.matrixToRpy(Rb.T))}"/></joint>"""
    else:
        planar = f"""
  <joint name="slide" type="planar"><parent link="base"/><child link="plate"/>
    <origin xyz="0.1 0.2 0.3" rpy="0.2 -0.3 0.4"/><axis xyz="{fmt(normal)}"/></joint>"""
    return f"""<?xml version="1.0"?>
<robot name="tilted">
  <link name="base">{INERTIA.format(c="0 0 0.1", m=3.0)}</link>{planar}
  <link name="plate">{INERTIA.format(c="0.05 -0.02 0.03", m=1.5)}</link>
  <joint name="elbow" type="revolute"><parent link="plate"/><child link="arm"/>
    <origin xyz="0.2 0 0.1" rpy="0.3 0 0"/><axis xyz="0 0.6 0.8"/>
    <limit lower="-2" upper="2" effort="10" velocity="3"/></joint>
  <link name="arm">{INERTIA.format(c="0.1 0.02 0", m=0.7)}</link>
</robot>
"""


def plane_basis(n):
    """the documented in-plane axes of a planar joint (include/grid/joints.h): Duff et al.'s basis"""
    s = np.copysign(1.0, n[2])
    a = -1.0 / (s + n[2])
    b = n[0] * n[1] * a
    return (np.array([1 + s * n[0] ** 2 * a, s * b, -s * n[0]]), np.array([b, s + n[1] ** 2 * a, -n[1]]))


@pytest.mark.parametrize("normal", [(0, 0, 1), (0, 0.6, 0.8), (0.48, -0.6, -0.64), (0, 0, -1), (1, 0, 0)],
                         ids=["z", "tilted", "downward", "minus-z", "x"])
@pytest.mark.parametrize("floating", [False, True], ids=["fixed", "floating"])
@pytest.mark.parametrize("codegen", [False, True], ids=["reference", "generated"])
def test_planar_normal_against_rotated_z_model(normal, floating, codegen):
    # the generated library: the six methods compared below
    subset = {"algorithm_list": ["rnea", "crba", "minv", "fd", "aba", "fk"]} if codegen else {}
    ours = grid_rbd.register_robot("tilted", urdf_string=tilted_urdf(normal, False), floating_base=floating,
                                   dtype="float64", codegen=codegen, verbose=False, **subset)
    root = [pin.JointModelFreeFlyer()] if floating else []
    model = pin.buildModelFromXML(tilted_urdf(normal, True), *root)
    data = model.createData()
    assert model.nv == ours.nv == (10 if floating else 4) and ours.nq == ours.nv + floating
    assert ours._model.joint_types[floating] == "planar"
    rng = np.random.default_rng(7)
    B = 6
    q = np.zeros((B, ours.nq))
    o = 7 if floating else 0
    if floating:
        q[:, :3] = rng.uniform(-1, 1, (B, 3))
        quat = rng.normal(size=(B, 4))
        q[:, 3:7] = quat / np.linalg.norm(quat, axis=1, keepdims=True)
    q[:, o:o + 2] = rng.uniform(-1, 1, (B, 2))
    q[:, o + 2] = rng.uniform(-np.pi, np.pi, B)
    q[:, o + 3] = rng.uniform(-np.pi, np.pi, B)
    qd = rng.uniform(-10, 10, (B, ours.nv))
    qdd = rng.uniform(-50, 50, (B, ours.nv))

    def pq(x):
        return np.concatenate([x[:o], [x[o], x[o + 1], np.cos(x[o + 2]), np.sin(x[o + 2])], x[o + 3:]])

    ref = {"tau": [], "M": [], "Minv": [], "qdd": [], "plate": [], "arm": []}
    for x, v, a in zip(q, qd, qdd):
        ref["tau"].append(pin.rnea(model, data, pq(x), v, a))
        M = pin.crba(model, data, pq(x))
        ref["M"].append(np.triu(M) + np.triu(M, 1).T)
        ref["Minv"].append(np.linalg.inv(ref["M"][-1]))
        ref["qdd"].append(pin.aba(model, data, pq(x), v, a))
        pin.framesForwardKinematics(model, data, pq(x))
        for link in ("plate", "arm"):
            ref[link].append(data.oMf[model.getFrameId(link, pin.FrameType.BODY)].homogeneous)
    label = f"normal {normal} floating={floating} codegen={codegen}"
    assert_blocks_close(ours.inverse_dynamics(q, qd, qdd), np.array(ref["tau"]), "rnea " + label)
    assert_blocks_close(ours.crba(q), np.array(ref["M"]), "crba " + label)
    assert_blocks_close(ours.minv(q), np.array(ref["Minv"]), "minv " + label, rtol=1e-8)
    assert_blocks_close(ours.aba(q, qd, qdd), np.array(ref["qdd"]), "aba " + label)
    assert_blocks_close(ours.forward_dynamics(q, qd, qdd), np.array(ref["qdd"]), "fd " + label)
    fk = ours.forward_kinematics(q)
    names = ours.body_names
    for link in ("plate", "arm"):
        assert_blocks_close(fk[:, names.index(link)], np.array(ref[link]), f"fk {link} " + label)


def test_layouts_and_table():
    """q and v widths and offsets follow the joint-model table; a spherical joint's neutral q is the identity
    quaternion and its q is normalised (any scale gives the same dynamics)"""
    urdf = tilted_urdf((0, 0, 1), False).replace('type="revolute"', 'type="ball"')
    h = grid_rbd.register_robot("tilted_ball", urdf_string=urdf, dtype="float64", codegen=False, verbose=False)
    m = h._model
    assert m.joint_types == ("planar", "spherical")
    assert list(m.joint_nq) == [3, 4] and list(m.joint_nv) == [3, 3]
    assert list(m.joint_idx_q) == [0, 3] and list(m.joint_idx_v) == [0, 3]
    q = np.array([[0.1, -0.2, 0.3, 0.1, 0.2, -0.3, 0.9]])
    scaled = q.copy()
    scaled[:, 3:] *= 7.5
    assert np.allclose(h.crba(q), h.crba(scaled), rtol=1e-14, atol=1e-15)
    assert RTOL < 1e-8


@pytest.mark.parametrize("cid", ["iiwa", "hyq", "g1_29dof_ff", "synthetic", "joints_ff", "talos_ff", "panda"])
def test_joint_data_against_pinocchio(cid, tmp_path):
    """limits, damping, friction in q/v order and the total mass equal Pinocchio's model (Pinocchio writes an
    absent limit as +-DBL_MAX, we write +-inf; quaternion components are bounded by +-1 here)"""
    from robot_cases import CASES, PinMap, case_path, synthetic_dir
    case = next(c for c in CASES if c.id == cid)
    path = case_path(case, synthetic_dir())
    h = grid_rbd.register_robot(f"{cid}_data", urdf_path=path, floating_base=case.floating_base,
                                ignore_mimic=case.ignore_mimic, codegen=False, verbose=False)
    P = PinMap(h, path, case.floating_base)
    pm = P.model
    big = np.finfo(np.float64).max

    def as_ours(x):
        x = np.array(x, dtype=np.float64)
        x[x >= big] = np.inf
        x[x <= -big] = -np.inf
        return x

    m = h._model
    checked = 0
    for i, jid in enumerate(P.joint_ids):
        kind, iq, nq, iv, nv = m.joint_types[i], m.joint_idx_q[i], m.joint_nq[i], m.joint_idx_v[i], m.joint_nv[i]
        pv = slice(pm.idx_vs[jid], pm.idx_vs[jid] + nv)
        for ours, theirs in ((h.velocity_limit, pm.velocityLimit), (h.effort_limit, pm.effortLimit),
                             (h.damping, pm.damping), (h.friction, pm.friction)):
            np.testing.assert_array_equal(ours[iv:iv + nv], as_ours(theirs[pv]), err_msg=f"{cid} joint {i} ({kind})")
        lo, hi = h.lower_position_limit[iq:iq + nq], h.upper_position_limit[iq:iq + nq]
        if nq == 0:
            assert m.joint_mimic[i] is not None  # a coupled joint: no coordinates, no entries
        elif kind in ("revolute", "prismatic"):
            pq = pm.idx_qs[jid]
            assert lo[0] == as_ours(pm.lowerPositionLimit[pq:pq + 1])[0] and hi[0] == as_ours(pm.upperPositionLimit[pq:pq + 1])[0]
            checked += np.isfinite(lo[0])
        elif kind == "free":
            assert np.all(lo[:3] == -np.inf) and np.all(hi[:3] == np.inf)
            assert np.all(lo[3:] == -1) and np.all(hi[3:] == 1)
        elif kind == "spherical":
            assert np.all(lo == -1) and np.all(hi == 1)
        else:  # continuous, planar
            assert np.all(lo == -np.inf) and np.all(hi == np.inf)
    assert checked > 0 or cid == "joints_ff"
    assert h.total_mass == pytest.approx(pin.computeTotalMass(pm), rel=1e-14)
    assert h.lower_position_limit.shape == (h.nq,) and h.velocity_limit.shape == (h.nv,)
    with pytest.raises(ValueError):
        h.damping[0] = 1.0


def test_mujoco_convention_of_spherical_planar_and_mimic():
    """a spherical joint is MuJoCo's ball joint (q wxyz, the same local angular velocity); planar joints (MuJoCo
    composes slides and a hinge) and coupled mimic joints are refused in that convention, with the reason"""
    ball = tilted_urdf((0, 0, 1), False).replace('type="planar"', 'type="ball"')
    pin_h = grid_rbd.register_robot("ball_pin", urdf_string=ball, dtype="float64", codegen=False, verbose=False)
    mj_h = grid_rbd.register_robot("ball_mj", urdf_string=ball, dtype="float64", codegen=False, verbose=False,
                                   output_convention="mujoco")
    assert pin_h._model.joint_types[0] == "spherical"
    rng = np.random.default_rng(2)
    q = rng.normal(size=(5, 5))
    q[:, :4] /= np.linalg.norm(q[:, :4], axis=1, keepdims=True)
    q_mj = q.copy()
    q_mj[:, 0], q_mj[:, 1:4] = q[:, 3], q[:, :3]
    v, a = rng.uniform(-10, 10, (5, 4)), rng.uniform(-50, 50, (5, 4))
    np.testing.assert_allclose(mj_h.crba(q_mj), pin_h.crba(q), rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(mj_h.inverse_dynamics(q_mj, v, a), pin_h.inverse_dynamics(q, v, a), rtol=1e-13, atol=1e-12)
    np.testing.assert_allclose(mj_h.forward_kinematics(q_mj), pin_h.forward_kinematics(q), rtol=1e-13, atol=1e-14)
    with pytest.raises(ValueError, match="planar"):
        grid_rbd.register_robot("planar_mj", urdf_string=tilted_urdf((0, 0, 1), False), codegen=False, verbose=False,
                                output_convention="mujoco")
    from test_mimic import mimic_urdf
    with pytest.raises(ValueError, match="mimic"):
        grid_rbd.register_robot("mimic_mj", urdf_string=mimic_urdf(), codegen=False, verbose=False,
                                output_convention="mujoco")
