"""Test helpers: the robot list (example-robot-data, ../shared/robots, a synthetic robot), Pinocchio models mapped
to grid_rbd's joint order, state generators and the block comparison used by the cross-checks."""

import concurrent.futures
import importlib.metadata
import os
import sysconfig
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

import grid_rbd

REPO = Path(__file__).resolve().parents[2]
# the shared robot folder next to the repository, or GRID_RBD_ROBOTS_DIR (as test_cuda reads it)
SHARED_ROBOTS = Path(os.environ.get("GRID_RBD_ROBOTS_DIR") or REPO.parent / "shared" / "robots")
BUNDLED_IIWA = REPO / "examples" / "robots" / "iiwa.urdf"

# ---- comparison ----
# Every output is compared one state (one block: a vector, matrix, Jacobian, or the nb 4x4 placements) at a time:
#     ||ours - pinocchio||_F <= RTOL * max(||pinocchio||_F, NORM_FLOOR)
# NORM_FLOOR = 1e-6 makes a block whose reference is (numerically) zero pass only when ours is within
# RTOL * NORM_FLOOR = 1e-15 of it in absolute terms, i.e. zero up to float64 rounding.
RTOL = 1e-9
NORM_FLOOR = 1e-6


def block_errors(ours, ref):
    """relative Frobenius error of each state's block (axis 0 = states)"""
    ours = np.asarray(ours, dtype=np.float64).reshape(len(ours), -1)
    ref = np.asarray(ref, dtype=np.float64).reshape(len(ref), -1)
    assert ours.shape == ref.shape, (ours.shape, ref.shape)
    return np.linalg.norm(ours - ref, axis=1) / np.maximum(np.linalg.norm(ref, axis=1), NORM_FLOOR)


def assert_blocks_close(ours, ref, label, rtol=RTOL):
    err = block_errors(ours, ref)
    worst = int(np.argmax(err)) if len(err) else 0
    assert np.all(err <= rtol), (f"{label}: state {worst} has relative error {err[worst]:.3e} > {rtol:.0e}\n"
                                 f"ours={np.asarray(ours)[worst]}\npinocchio={np.asarray(ref)[worst]}")


# ---- robot list ----
def example_robot_data_dir():
    """robots/ of the installed example-robot-data package (its cmeel prefix), or None"""
    candidates = []
    try:
        dist = importlib.metadata.distribution("example-robot-data")
        candidates.append(Path(dist.locate_file("cmeel.prefix/share/example-robot-data/robots")))
    except importlib.metadata.PackageNotFoundError:
        pass
    for key in ("purelib", "platlib"):
        candidates.append(Path(sysconfig.get_paths()[key]) / "cmeel.prefix/share/example-robot-data/robots")
    for c in candidates:
        if c.is_dir():
            return c
    return None


# a small synthetic tree covering what the real robots lack: continuous joints (Pinocchio nq = 2),
# an unaligned revolute axis, a prismatic joint, fixed joints, rpy origins and off-diagonal inertias
SYNTHETIC_URDF = """<?xml version="1.0"?>
<robot name="synthetic">
  <link name="root"><inertial><origin xyz="0.01 0.02 0.03" rpy="0.1 0.2 0.3"/><mass value="2.0"/>
    <inertia ixx="0.02" ixy="0.001" ixz="0.002" iyy="0.03" iyz="0.003" izz="0.04"/></inertial></link>
  <joint name="j_cont" type="continuous"><parent link="root"/><child link="l1"/>
    <origin xyz="0.1 0 0.2" rpy="0.3 -0.2 0.1"/><axis xyz="0 0.6 0.8"/></joint>
  <link name="l1"><inertial><origin xyz="0.05 -0.01 0.1" rpy="0 0.4 0"/><mass value="1.5"/>
    <inertia ixx="0.01" ixy="0.0005" ixz="0" iyy="0.012" iyz="0.001" izz="0.008"/></inertial></link>
  <joint name="j_pris" type="prismatic"><parent link="l1"/><child link="l2"/>
    <origin xyz="0 0.1 0.3" rpy="0 0 0.5"/><axis xyz="1 0 0"/>
    <limit lower="-0.5" upper="0.5" effort="100" velocity="1"/></joint>
  <link name="l2"><inertial><origin xyz="0.1 0 0" rpy="0 0 0"/><mass value="0.8"/>
    <inertia ixx="0.004" ixy="0" ixz="0" iyy="0.005" iyz="0" izz="0.006"/></inertial></link>
  <joint name="j_tool" type="fixed"><parent link="l2"/><child link="tool"/>
    <origin xyz="0.2 0 0.05" rpy="1.0 0 0"/></joint>
  <link name="tool"><inertial><origin xyz="0 0 0.02" rpy="0 0 0"/><mass value="0.3"/>
    <inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.0005"/></inertial></link>
  <joint name="j_rev" type="revolute"><parent link="l1"/><child link="l3"/>
    <origin xyz="0 -0.1 0.3" rpy="-0.5 0 0"/><axis xyz="0 1 0"/>
    <limit lower="-2" upper="2" effort="50" velocity="3"/></joint>
  <link name="l3"><inertial><origin xyz="0 0 0.15" rpy="0 0 0"/><mass value="1.1"/>
    <inertia ixx="0.009" ixy="0" ixz="0.0004" iyy="0.009" iyz="0" izz="0.002"/></inertial></link>
  <joint name="j_cont2" type="continuous"><parent link="l3"/><child link="l4"/>
    <origin xyz="0 0 0.3" rpy="0 0 0"/><axis xyz="0 0 -1"/></joint>
  <link name="l4"><inertial><origin xyz="0.02 0.01 0.05" rpy="0 0 0"/><mass value="0.6"/>
    <inertia ixx="0.002" ixy="0.0001" ixz="0" iyy="0.003" iyz="0" izz="0.001"/></inertial></link>
  <joint name="j_flange" type="fixed"><parent link="l4"/><child link="flange"/>
    <origin xyz="0 0 0.1" rpy="0 0 0"/></joint>
  <link name="flange"/>
</robot>
"""


# a tree with the joint types the real robots lack: planar (a mobile base, normal z, the way Pinocchio's URDF
# parser reads every planar joint; the root has mass, so on a floating base M stays regular), spherical ("ball" and "spherical"), beside revolute, continuous and
# prismatic joints, with off-diagonal inertias and rotated origins
JOINTS_URDF = """<?xml version="1.0"?>
<robot name="joints">
  <link name="ground"><inertial><origin xyz="0 0 -0.05" rpy="0 0 0"/><mass value="8.0"/>
    <inertia ixx="0.3" ixy="0" ixz="0" iyy="0.4" iyz="0" izz="0.6"/></inertial></link>
  <joint name="j_planar" type="planar"><parent link="ground"/><child link="cart"/>
    <origin xyz="0.1 -0.2 0.05" rpy="0 0 0.3"/><axis xyz="0 0 1"/></joint>
  <link name="cart"><inertial><origin xyz="0.02 -0.01 0.1" rpy="0.1 0 0.2"/><mass value="5.0"/>
    <inertia ixx="0.2" ixy="0.01" ixz="-0.02" iyy="0.3" iyz="0.015" izz="0.25"/></inertial></link>
  <joint name="j_shoulder" type="revolute"><parent link="cart"/><child link="upper"/>
    <origin xyz="0.1 0 0.3" rpy="0.2 -0.1 0"/><axis xyz="0 1 0"/>
    <limit lower="-2" upper="2" effort="80" velocity="2"/><dynamics damping="0.5" friction="0.1"/></joint>
  <link name="upper"><inertial><origin xyz="0 0.01 0.2" rpy="0 0 0"/><mass value="2.0"/>
    <inertia ixx="0.03" ixy="0.001" ixz="0" iyy="0.03" iyz="0.002" izz="0.004"/></inertial></link>
  <joint name="j_ball" type="ball"><parent link="upper"/><child link="forearm"/>
    <origin xyz="0 0 0.4" rpy="0.3 0.2 -0.1"/></joint>
  <link name="forearm"><inertial><origin xyz="0.01 0 0.15" rpy="0 0.3 0"/><mass value="1.2"/>
    <inertia ixx="0.012" ixy="0.0004" ixz="0.0008" iyy="0.011" iyz="-0.0003" izz="0.003"/></inertial></link>
  <joint name="j_wrist" type="spherical"><parent link="forearm"/><child link="hand"/>
    <origin xyz="0.02 0 0.3" rpy="0 0 0"/></joint>
  <link name="hand"><inertial><origin xyz="0 0.02 0.05" rpy="0 0 0"/><mass value="0.5"/>
    <inertia ixx="0.002" ixy="0" ixz="0.0001" iyy="0.0025" iyz="0" izz="0.001"/></inertial></link>
  <joint name="j_finger" type="prismatic"><parent link="hand"/><child link="finger"/>
    <origin xyz="0 0.03 0.08" rpy="0 0 0"/><axis xyz="0 0.6 0.8"/>
    <limit lower="0" upper="0.04" effort="20" velocity="0.1"/></joint>
  <link name="finger"><inertial><origin xyz="0 0 0.02" rpy="0 0 0"/><mass value="0.1"/>
    <inertia ixx="0.0001" ixy="0" ixz="0" iyy="0.0001" iyz="0" izz="0.00005"/></inertial></link>
  <joint name="j_spin" type="continuous"><parent link="cart"/><child link="mast"/>
    <origin xyz="-0.2 0.1 0.2" rpy="0 0.4 0"/><axis xyz="0.6 0 0.8"/></joint>
  <link name="mast"><inertial><origin xyz="0 0 0.3" rpy="0 0 0"/><mass value="1.0"/>
    <inertia ixx="0.04" ixy="0" ixz="0" iyy="0.04" iyz="0" izz="0.002"/></inertial></link>
  <joint name="j_tray" type="planar"><parent link="mast"/><child link="tray"/>
    <origin xyz="0 0 0.6" rpy="0 0 0"/><axis xyz="0 0 1"/></joint>
  <link name="tray"><inertial><origin xyz="0.05 0.02 0.01" rpy="0 0 0"/><mass value="0.4"/>
    <inertia ixx="0.001" ixy="0.0001" ixz="0" iyy="0.002" iyz="0" izz="0.0025"/></inertial></link>
  <joint name="j_tip" type="fixed"><parent link="hand"/><child link="tip"/>
    <origin xyz="0 0 0.12" rpy="0.5 0 0"/></joint>
  <link name="tip"/>
</robot>
"""
SYNTHETIC_TEXTS = {"synthetic.urdf": SYNTHETIC_URDF, "joints.urdf": JOINTS_URDF}


@dataclass(frozen=True)
class RobotCase:
    id: str
    source: str            # "erd" (example-robot-data), "shared" (../shared/robots) or "synthetic"
    relpath: str
    floating_base: bool
    ignore_mimic: bool = False
    mass_matrix_pd: bool = True   # False for atlas: indefinite body inertias (shared/robots/SOURCES.md)
    generated: bool = True        # False: no generated library is compiled for it (below); reference provider only
    float32: bool = True          # False: no float32 library is compiled for it (below)

    def __post_init__(self):
        assert self.generated or not self.float32, f"{self.id}: float32 is compiled only beside a float64 library"


# Every case runs on the float64 reference (codegen=False, nothing compiled): the Pinocchio cross-checks and the
# identities of test_properties, on every robot. The generated robot.so (every method, compiled once per session and
# shared by every test that uses it) is built for a representative subset, GEN = False marking the others: fixed and
# floating bases, a serial arm, branching quadrupeds, the mimic robots (panda: fixed, h1_2_ff: floating, coupled,
# the largest nv, its RNEA gradient rolled by "auto"), the joint types (joints_ff), continuous / prismatic / fixed
# joints (synthetic), the ill-conditioned atlas. On those the generated code is cross-checked against Pinocchio and
# pinned to the reference at 1e-12 (test_codegen); the generated code of the cases left to the reference (g1_29dof,
# talos, atlas_ff, go2, joints ...) is pinned to the reference on the rolled schedule (test_rolled), the same
# programs emitted in the other layout. Each full compile is tens of seconds to minutes of CI time.
# The generated float32 libraries are compiled for a smaller subset (fixed and floating bases, the quadruped go2_ff,
# the mimic robot panda, the joint types, the ill-conditioned atlas): the emitter writes both dtypes from the same programs (only the
# spelling table differs). F32 = False marks the cases left to float64 (their float32 reference handles, which
# compile nothing, stay).
F32 = False
GEN = False
CASES = [
    RobotCase("ur5", "erd", "ur_description/urdf/ur5_robot.urdf", False, generated=GEN, float32=F32),
    RobotCase("panda", "erd", "panda_description/urdf/panda.urdf", False),    # its second finger mimics the first
    RobotCase("hyq_erd", "erd", "hyq_description/robots/hyq_no_sensors.urdf", False, generated=GEN, float32=F32),
    RobotCase("hyq_erd_ff", "erd", "hyq_description/robots/hyq_no_sensors.urdf", True, generated=GEN, float32=F32),
    RobotCase("solo12_ff", "erd", "solo_description/robots/solo12.urdf", True, generated=GEN, float32=F32),
    RobotCase("talos_ff", "erd", "talos_data/robots/talos_reduced.urdf", True, generated=GEN,
              float32=F32),  # mimics only on fixed joints
    RobotCase("iiwa", "shared", "iiwa.urdf", False),
    RobotCase("iiwa_ff", "shared", "iiwa.urdf", True, float32=F32),
    RobotCase("hyq", "shared", "hyq.urdf", False, generated=GEN, float32=F32),
    RobotCase("hyq_ff", "shared", "hyq.urdf", True, float32=F32),
    RobotCase("atlas", "shared", "atlas.urdf", False, mass_matrix_pd=False),
    RobotCase("atlas_ff", "shared", "atlas.urdf", True, mass_matrix_pd=False, generated=GEN, float32=F32),
    RobotCase("go2", "shared", "go2.urdf", False, generated=GEN, float32=F32),
    RobotCase("go2_ff", "shared", "go2.urdf", True),
    RobotCase("g1_29dof", "shared", "g1_29dof.urdf", False, generated=GEN, float32=F32),
    RobotCase("g1_29dof_ff", "shared", "g1_29dof.urdf", True, generated=GEN, float32=F32),
    RobotCase("h1_2", "shared", "h1_2.urdf", False, generated=GEN, float32=F32),  # 12 coupled mimic joints in the hands
    RobotCase("h1_2_ff", "shared", "h1_2.urdf", True, float32=F32),
    RobotCase("synthetic", "synthetic", "synthetic.urdf", False, float32=F32),
    RobotCase("synthetic_ff", "synthetic", "synthetic.urdf", True),
    RobotCase("joints", "synthetic", "joints.urdf", False, generated=GEN, float32=F32),
    RobotCase("joints_ff", "synthetic", "joints.urdf", True),
]
GEN_CASES = [c for c in CASES if c.generated]


_synthetic_dir = None


def synthetic_dir():
    """a directory for the synthetic robot's URDF, one per process (removed at exit)"""
    global _synthetic_dir
    if _synthetic_dir is None:
        import atexit
        import shutil
        import tempfile
        _synthetic_dir = Path(tempfile.mkdtemp(prefix="grid-rbd-test-cases-"))
        atexit.register(shutil.rmtree, _synthetic_dir, True)
    return _synthetic_dir


def case_path(case, tmp_dir):
    """the URDF path of a case, or pytest.skip when its folder is absent"""
    if case.source == "erd":
        base = example_robot_data_dir()
        if base is None:
            pytest.skip("example-robot-data is not installed")
    elif case.source == "shared":
        base = SHARED_ROBOTS
        if not base.is_dir():
            pytest.skip(f"{base} is absent (the shared robot folder lives next to the repository)")
    else:
        base = tmp_dir
        target = base / case.relpath
        text = SYNTHETIC_TEXTS[case.relpath]
        if not target.is_file() or target.read_text() != text:
            tmp = target.with_suffix(f".tmp{os.getpid()}.{threading.get_ident()}")
            tmp.write_text(text)
            os.replace(tmp, target)  # atomic: a reader in another thread never sees half a file
    path = base / case.relpath
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    return path


# ---- Pinocchio side, in grid_rbd's joint order ----
def pin_model(path, floating_base, mimic=False):
    """Pinocchio's model of a URDF. Pinocchio's URDF parser has no spherical joints: they are read as
    continuous placeholders and the model is rebuilt with JointModelSpherical in their place (same placements,
    inertias and frames)."""
    import re
    import pinocchio as pin
    text = Path(path).read_text()
    spherical = set(re.findall(r'<joint\s+name="([^"]+)"\s+type="(?:spherical|ball)"', text))
    text = re.sub(r'type="(?:spherical|ball)"', 'type="continuous"', text)
    root = [pin.JointModelFreeFlyer()] if floating_base else []
    model = pin.buildModelFromXML(text, *root, mimic=mimic) if mimic else pin.buildModelFromXML(text, *root)
    if not spherical:
        return model
    new = pin.Model()
    new.name = model.name
    new.gravity = model.gravity
    for jid in range(1, model.njoints):
        name = model.names[jid]
        jm = pin.JointModelSpherical() if name in spherical else model.joints[jid]
        nid = new.addJoint(model.parents[jid], jm, model.jointPlacements[jid], name)
        new.appendBodyToJoint(nid, model.inertias[jid], pin.SE3.Identity())
    # limits, damping and friction of the joints kept
    vecs = {k: np.array(getattr(new, k)) for k in ("velocityLimit", "effortLimit", "damping", "friction",
                                                   "lowerPositionLimit", "upperPositionLimit")}
    for jid in range(1, model.njoints):
        if model.names[jid] in spherical:
            continue
        for k in vecs:
            idx, old, n = ((new.idx_qs[jid], model.idx_qs[jid], model.nqs[jid]) if "Position" in k else
                           (new.idx_vs[jid], model.idx_vs[jid], model.nvs[jid]))
            vecs[k][idx:idx + n] = np.array(getattr(model, k))[old:old + n]
    for k, x in vecs.items():
        setattr(new, k, x)
    for f in list(model.frames)[1:]:
        if f.name == "universe":
            continue
        new.addFrame(pin.Frame(f.name, f.parentJoint, f.parentFrame, f.placement, f.type, f.inertia), False)
    return new


class PinMap:
    """Pinocchio model + data of a case and the index maps between its q/v order and grid_rbd's (by joint name)."""

    def __init__(self, handle, path, floating_base):
        import pinocchio as pin
        self.pin = pin
        # coupled mimic joints: Pinocchio's mimic=True model (nq = nv = 0 for a mimic joint)
        self.mimic = len(handle.mimic_joints) > 0
        self.model = pin_model(path, floating_base, self.mimic)
        self.data = self.model.createData()
        m = handle._model
        assert self.model.nv == handle.nv, (self.model.nv, handle.nv)
        assert self.model.njoints - 1 == handle.nb, (self.model.njoints, handle.nb)
        nv = handle.nv
        self.vperm = np.empty(nv, dtype=np.intp)   # ours[i] = pin[vperm[i]]
        self.joint_ids = []                        # pin joint id of each of our bodies
        self.q_parts = []                          # (our iq, our nq, pin iq, kind)
        for i, name in enumerate(m.joint_names):
            jid = self.model.getJointId(name)
            assert jid < self.model.njoints, f"Pinocchio has no joint {name!r}"
            self.joint_ids.append(jid)
            iv, nvj = m.joint_idx_v[i], m.joint_nv[i]
            assert self.model.nvs[jid] == nvj
            self.vperm[iv:iv + nvj] = np.arange(self.model.idx_vs[jid], self.model.idx_vs[jid] + nvj)
            kind = m.joint_types[i]
            pin_nq = self.model.nqs[jid]
            if kind == "continuous":
                assert pin_nq == 2
            elif kind == "planar":
                assert pin_nq == 4
            else:
                assert pin_nq == m.joint_nq[i]
            self.q_parts.append((m.joint_idx_q[i], m.joint_nq[i], self.model.idx_qs[jid], kind))
        assert sorted(self.vperm) == list(range(nv))

    def q(self, q):
        """one grid_rbd configuration -> Pinocchio's (quaternion normalised, continuous -> cos, sin)"""
        out = np.zeros(self.model.nq)
        for iq, nq, piq, kind in self.q_parts:
            if kind == "continuous":
                out[piq:piq + 2] = np.cos(q[iq]), np.sin(q[iq])
            elif kind == "free":
                out[piq:piq + 7] = q[iq:iq + 7]
                out[piq + 3:piq + 7] /= np.linalg.norm(q[iq + 3:iq + 7])
            elif kind == "spherical":
                out[piq:piq + 4] = q[iq:iq + 4] / np.linalg.norm(q[iq:iq + 4])
            elif kind == "planar":
                out[piq:piq + 4] = q[iq], q[iq + 1], np.cos(q[iq + 2]), np.sin(q[iq + 2])
            else:
                out[piq:piq + nq] = q[iq:iq + nq]
        return out

    def v(self, v):
        out = np.zeros(self.model.nv)
        out[self.vperm] = v
        return out

    def vec(self, x):
        """a Pinocchio tangent vector in our order"""
        return np.asarray(x)[self.vperm]

    def mat(self, M):
        return np.asarray(M)[np.ix_(self.vperm, self.vperm)]

    def cols(self, J):
        return np.asarray(J)[:, self.vperm]

    def fext(self, f):
        """(6*nb,) body-local [f; tau] per body -> Pinocchio's per-joint list of pin.Force"""
        pin = self.pin
        forces = [pin.Force.Zero() for _ in range(self.model.njoints)]
        for i, jid in enumerate(self.joint_ids):
            forces[jid] = pin.Force(f[6 * i:6 * i + 3], f[6 * i + 3:6 * i + 6])
        return forces

    def frame_id(self, name):
        return self.model.getFrameId(name, self.pin.FrameType.BODY)


# ---- registered handles, once per (case, provider, dtype) per session ----
# "generated": the robot's compiled robot.so (codegen=True, the default); "reference": the float64 C reference
PROVIDERS = ("generated", "reference")

_handles = {}
_handles_lock = threading.Lock()


def handle_for(case, path, provider, dtype, convention="pinocchio"):
    """the session's handle of a case on a provider and dtype in an output convention (registered on first use; a
    cache hit when the background precompile, or another convention, got there first)"""
    if provider == "generated" and not case.generated:
        pytest.skip(f"{case.id}: the generated library is compiled for a subset of the robots (robot_cases.CASES)")
    if provider == "generated" and dtype == "float32" and not case.float32:
        pytest.skip(f"{case.id}: float32 is compiled for a subset of the robots (robot_cases.CASES)")
    key = (case.id, provider, dtype) + (() if convention == "pinocchio" else (convention,))
    with _handles_lock:
        h = _handles.get(key)
    if h is None:
        suffix = ("" if dtype == "float64" else "_f32") + ("" if provider == "generated" else "_ref") + \
            ("" if convention == "pinocchio" else "_" + convention)
        h = grid_rbd.register_robot(case.id + suffix, urdf_path=path, floating_base=case.floating_base,
                                    ignore_mimic=case.ignore_mimic, dtype=dtype, codegen=provider == "generated",
                                    output_convention=convention, verbose=False)
        assert h.provider == provider
        with _handles_lock:
            h = _handles.setdefault(key, h)
    return h


def opt_in_handle(case_id, dtype):
    """a generated library of a case holding the opt-in rows alone (the second-order methods, which a default library
    leaves out: built only when named), shared by the tests"""
    from grid_rbd._signatures import ROWS
    case = next(c for c in CASES if c.id == case_id)
    key = (case.id, "opt_in", dtype)
    with _handles_lock:
        h = _handles.get(key)
    if h is None:
        h = grid_rbd.register_robot(case.id + "_opt_in" + ("" if dtype == "float64" else "_f32"),
                                    urdf_path=case_path(case, synthetic_dir()), floating_base=case.floating_base,
                                    ignore_mimic=case.ignore_mimic, dtype=dtype, verbose=False,
                                    algorithm_list=[r["name"] for r in ROWS if r["opt_in"]])
        with _handles_lock:
            h = _handles.setdefault(key, h)
    return h


# Compiling every case takes minutes of CPU; these threads (grid_build releases the GIL) build the libraries
# in test order, as many at once as there are cores, while the tests that need them run.
_pool = None
_pool_lock = threading.Lock()
_futures = []


def start_precompile(case_dir, ids=None):
    """compile the generated cases (those whose id is in ids, default all) for float64 and float32, in CASES order;
    under pytest-xdist only the first worker does (the cache directory is shared, and the other workers' cores are
    busy running tests)"""
    global _pool
    if os.environ.get("PYTEST_XDIST_WORKER", "gw0") != "gw0":
        return
    with _pool_lock:
        if _pool is not None:
            return
        _pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(1, min(4, os.cpu_count() or 1)),
                                                      thread_name_prefix="precompile")
        for case in GEN_CASES:
            if ids is not None and case.id not in ids:
                continue
            try:
                path = case_path(case, case_dir)
            except BaseException:  # pytest.skip: the robot's folder is absent
                continue
            for dtype in ("float64", "float32") if case.float32 else ("float64",):
                _futures.append(_pool.submit(_precompile_quietly, case, path, dtype))


def wait_precompile():
    """block until the background builds are done: before a test that changes the compiler's environment
    (GRID_RBD_CC / GRID_RBD_CFLAGS, read by every build in the process), which a build still running in a precompile
    thread would otherwise pick up (a wasted build of another cache key, or one refused by the self-check)"""
    with _pool_lock:
        pending = list(_futures)
    concurrent.futures.wait(pending)


def _precompile_quietly(case, path, dtype):
    """errors surface when the test registers the robot"""
    try:
        grid_rbd.precompile(case.id + ("" if dtype == "float64" else "_f32"), urdf_path=path,
                            floating_base=case.floating_base, ignore_mimic=case.ignore_mimic, dtype=dtype,
                            verbose=False)
    except Exception:
        pass


def stop_precompile():
    """drop the builds not started yet (at the end of the session)"""
    with _pool_lock:
        if _pool is not None:
            _pool.shutdown(wait=True, cancel_futures=True)


@dataclass
class Robot:
    """one registered case on one provider: the float64 handle, and lazily its Pinocchio map and a float32
    handle on the same provider"""
    case: RobotCase
    path: Path
    handle: object
    provider: str = "generated"
    _pin: object = field(default=None, repr=False)

    @property
    def pin(self):
        if self._pin is None:
            self._pin = PinMap(self.handle, self.path, self.case.floating_base)
        return self._pin

    @property
    def handle32(self):
        return handle_for(self.case, self.path, self.provider, "float32")


# ---- states ----
STATE_KINDS = ("random", "zero", "high_velocity", "high_acceleration", "nonunit_quaternion")
BATCH = 8


def kinds_for(robot):
    has_quaternion = any(t in ("free", "spherical") for t in robot.handle._model.joint_types)
    return [k for k in STATE_KINDS if k != "nonunit_quaternion" or has_quaternion]


def make_states(handle, kind, n=BATCH, seed=0):
    """dict of q (n, nq), qd, qdd, u (n, nv), f_ext (n, 6 nb) for one kind of state, and cotangents g (n, nv) and
    g_pose (n, 6 nee)"""
    rng = np.random.default_rng(seed + 1000 * STATE_KINDS.index(kind))
    m = handle._model
    nq, nv, nb = handle.nq, handle.nv, handle.nb
    q = np.zeros((n, nq))
    for iq, nqj, kind_j in zip(m.joint_idx_q, m.joint_nq, m.joint_types):
        if kind_j == "free":
            q[:, iq:iq + 3] = rng.uniform(-1, 1, (n, 3))
            quat = rng.normal(size=(n, 4))
            quat /= np.linalg.norm(quat, axis=1, keepdims=True)
            if kind == "nonunit_quaternion":
                quat *= rng.uniform(0.5, 2.0, (n, 1))
            q[:, iq + 3:iq + 7] = quat
        elif kind_j == "spherical":
            quat = rng.normal(size=(n, 4))
            quat /= np.linalg.norm(quat, axis=1, keepdims=True)
            if kind == "nonunit_quaternion":
                quat *= rng.uniform(0.5, 2.0, (n, 1))
            q[:, iq:iq + 4] = quat
        elif kind_j == "planar":
            q[:, iq:iq + 2] = rng.uniform(-1, 1, (n, 2))
            q[:, iq + 2] = rng.uniform(-np.pi, np.pi, n)
        elif kind_j == "prismatic":
            q[:, iq] = rng.uniform(-0.5, 0.5, n)
        else:
            q[:, iq] = rng.uniform(-np.pi, np.pi, n)
    qd = rng.uniform(-1, 1, (n, nv))
    qdd = rng.uniform(-1, 1, (n, nv))
    u = rng.uniform(-10, 10, (n, nv))
    f_ext = rng.uniform(-5, 5, (n, 6 * nb))
    if kind == "zero":
        q[:] = 0
        for iq, kind_j in zip(m.joint_idx_q, m.joint_types):
            if kind_j == "free":
                q[:, iq + 6] = 1.0  # identity quaternion (qw last)
            elif kind_j == "spherical":
                q[:, iq + 3] = 1.0
        qd[:] = qdd[:] = u[:] = f_ext[:] = 0
    elif kind == "high_velocity":
        qd = rng.uniform(-10, 10, (n, nv))
    elif kind == "high_acceleration":
        qdd = rng.uniform(-50, 50, (n, nv))
        u = rng.uniform(-200, 200, (n, nv))
    # cotangents for the vector-Jacobian products (drawn last: the states above do not change)
    g = rng.normal(size=(n, nv))
    g_pose = rng.normal(size=(n, 6 * handle.num_ees))
    return {"q": q, "qd": qd, "qdd": qdd, "u": u, "f_ext": f_ext, "g": g, "g_pose": g_pose}


def all_states(robot, n=BATCH):
    """(kind, states) for every kind that applies to the robot"""
    return [(k, make_states(robot.handle, k, n)) for k in kinds_for(robot)]


def robot_path(case):
    """the case's URDF: GRID_RBD_ROBOTS_DIR (shared robots) / GRID_RBD_ERD_DIR (example-robot-data robots/) first (the
    copies on the GPU machine, where neither is installed)"""
    env = {"shared": "GRID_RBD_ROBOTS_DIR", "erd": "GRID_RBD_ERD_DIR"}.get(case.source)
    if env and os.environ.get(env):
        p = Path(os.environ[env]) / case.relpath
        if p.is_file():
            return p
    return case_path(case, synthetic_dir())


def row_targets(h):
    """the targets row_inputs gives a row with a per-call target input: (frame names, offsets as nested lists)"""
    frames = sorted(set(list(h.ee_frame_ids[:1]) + [len(h.frame_names) // 2, len(h.frame_names) - 1]))
    return [h.frame_names[f] for f in frames], np.linspace(-0.2, 0.3, 3 * len(frames)).reshape(-1, 3).tolist()


def row_inputs(h, row, n, seed=0, per_state=False):
    """arguments of a signature-table row's method for n states of h's dtype, in the row's order: the test states of
    make_states by input name, normal random values for the others (cotangents); a per-call target input as the
    method's ee_joint_names and ee_offsets (row_targets: a list of names and nested lists, the cotangent n targets
    wide), or with per_state as the row's own (n, 4) input of valid [frame id, offset] rows (what its op takes)"""
    from grid_rbd import _signatures
    s = make_states(h, "random", n, seed)
    c = _signatures.concrete(row, _signatures.sizes_of(h._model))
    rng = np.random.default_rng(seed + 7)
    names, offsets = row_targets(h)
    fan = 1 if per_state or "target" not in [x[0] for x in c["inputs"]] else len(names)
    args = []
    for name, shape, *_ in c["inputs"]:
        if name == "target" and not per_state:
            args += [names, offsets]
            continue
        if name == "target":
            x = np.column_stack([np.arange(n) % len(h.frame_names), rng.uniform(-0.3, 0.3, (n, 3))])
        elif name == "cotangent":
            x = rng.normal(size=(n, shape[0] * fan) + shape[1:])
        else:
            x = s[name] if name in s else rng.normal(size=(n,) + shape)
        args.append(np.ascontiguousarray(x, dtype=h.dtype))
    return args

