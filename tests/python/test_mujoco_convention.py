"""output_convention="mujoco" against MuJoCo itself: every method of go2, hyq, atlas and g1 on a free joint (the URDF
loaded into MuJoCo with visuals and collisions stripped, a <freejoint/> on the root body, armature, damping, friction,
contacts and constraints off), random and extreme states, float64 to 1e-10 per state, on the generated library and the
reference; float32 against float64; the cache entry shared with the Pinocchio convention; a fixed base (the identity);
the option's errors; batch and thread invariance.

The worst errors per robot and method are printed (pytest -s) and written to build/mujoco_convention.md."""

import pickle
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import grid_rbd
from robot_cases import REPO, SHARED_ROBOTS

mujoco = pytest.importorskip("mujoco")

RTOL = 1e-10      # float64, ours vs MuJoCo, per state: ||ours - mj||_F <= RTOL * max(||mj||_F, FLOOR)
FLOOR = 1e-6
F32_RTOL = 1e-5   # float32 vs float64 (same inputs): RNEA, NLE, gravity, CRBA, FK, Jacobian
F32_COND = 1e-6   # Minv, FD, ABA: <= 1e-6 * cond(M)
N = 6             # states per kind
ROBOTS = ("go2", "hyq", "atlas", "g1_29dof")
PROVIDERS = ("generated", "reference")
# the generated libraries of these robots (floating base, float64; float32 for go2) are the session's robot cases go2_ff
# and hyq_ff (robot_cases.CASES: compiled once, shared with the Pinocchio cross-checks; the convention is not part of
# the build); atlas and g1_29dof run against MuJoCo on the reference, the generated code of those robots being pinned
# to the reference elsewhere (test_rolled)
GENERATED = ("go2", "hyq")
ROBOT_PROVIDERS = [(r, p) for r in ROBOTS for p in PROVIDERS if p == "reference" or r in GENERATED]


def free_joint_robots(provider):
    """the robots the free-joint checks of the later methods run on: go2 and atlas on the reference, go2 on the
    generated library (atlas's floating library is no session robot case: a build of its own cost a minute of CI)"""
    return ("go2", "atlas") if provider == "reference" else ("go2",)

_worst = {}    # (robot, provider) -> {method: worst relative error}
_worst32 = {}  # robot -> {method: worst float32 relative error (and the bound it had)}


def _need(robot):
    path = SHARED_ROBOTS / f"{robot}.urdf"
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    return path


# ---- MuJoCo from the URDF ----
def _rpy(r, p, y):
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr], [-sp, cp * sr, cp * cr]])


def load_mujoco(path, floating):
    """MjModel of a URDF: visuals, collisions and any <mujoco> element dropped, the compiler told to keep every body
    and inertia as written (discardvisual, fusestatic=false, balanceinertia=false, inertiafromgeom=false), a free
    joint on the root body when floating, armature / damping / frictionloss zero, contacts, constraints and limits
    disabled. Bodies whose URDF inertia MuJoCo's compiler refuses (atlas: not positive definite, or A + B < C) are
    compiled with a placeholder and given their URDF inertia afterwards (principal moments and axes; MuJoCo's
    dynamics take any values)."""
    root = ET.fromstring(path.read_bytes())
    patch = {}
    for link in root.iter("link"):
        inertial = link.find("inertial")
        if inertial is None:
            continue
        el = inertial.find("inertia")
        a = {k: float(el.get(k, 0)) for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")}
        inertia = np.array([[a["ixx"], a["ixy"], a["ixz"]], [a["ixy"], a["iyy"], a["iyz"]],
                            [a["ixz"], a["iyz"], a["izz"]]])
        lam, axes = np.linalg.eigh(inertia)
        if not inertia.any() or (lam[0] > 0 and lam[0] + lam[1] >= lam[2]):
            continue
        origin = inertial.find("origin")
        xyz = [float(x) for x in (origin.get("xyz", "0 0 0") if origin is not None else "0 0 0").split()]
        rpy = [float(x) for x in (origin.get("rpy", "0 0 0") if origin is not None else "0 0 0").split()]
        frame = _rpy(*rpy) @ axes
        if np.linalg.det(frame) < 0:
            frame[:, 0] *= -1
        quat = np.zeros(4)
        mujoco.mju_mat2Quat(quat, frame.reshape(-1))
        patch[link.get("name")] = (xyz, quat, lam)
        for k in ("ixy", "ixz", "iyz"):
            el.set(k, "0")
        for k in ("ixx", "iyy", "izz"):
            el.set(k, "1")
    for parent in root.iter():
        for tag in ("visual", "collision", "mujoco"):
            for el in parent.findall(tag):
                parent.remove(el)
    ET.SubElement(root, "mujoco").append(ET.Element("compiler", discardvisual="true", fusestatic="false",
                                                    balanceinertia="false", inertiafromgeom="false"))
    spec = mujoco.MjSpec.from_string(ET.tostring(root, encoding="unicode"))
    if floating:
        spec.worldbody.first_body().add_freejoint()
    for j in spec.joints:
        j.armature = 0
        j.damping = np.zeros_like(np.atleast_1d(j.damping))
        j.frictionloss = 0
    off = mujoco.mjtDisableBit
    spec.option.disableflags |= off.mjDSBL_CONTACT | off.mjDSBL_CONSTRAINT | off.mjDSBL_LIMIT
    m = spec.compile()
    for name, (xyz, quat, lam) in patch.items():
        b = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, name)
        m.body_ipos[b], m.body_iquat[b], m.body_inertia[b] = xyz, quat, lam
        m.body_sameframe[b] = 0  # the inertial frame is no longer the body frame
    return m


class MjMap:
    """a MuJoCo model and the index maps between its qpos / qvel and grid_rbd's (joints and bodies by name)"""

    def __init__(self, handle, path):
        self.m = load_mujoco(path, handle.floating_base)
        self.d = mujoco.MjData(self.m)
        m, model = self.m, handle._model
        assert m.nv == handle.nv and m.nq == handle.nq
        self.qperm = np.empty(handle.nq, dtype=np.intp)   # ours[i] = mujoco's qpos[qperm[i]]
        self.vperm = np.empty(handle.nv, dtype=np.intp)
        for i, name in enumerate(handle.joint_names):
            kind = model.joint_types[i]
            j = 0 if kind == "free" else mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, name)
            assert j >= 0 and (kind == "free") == (m.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE), name
            iq, nq, iv, nv = model.joint_idx_q[i], model.joint_nq[i], model.joint_idx_v[i], model.joint_nv[i]
            self.qperm[iq:iq + nq] = m.jnt_qposadr[j] + np.arange(nq)
            self.vperm[iv:iv + nv] = m.jnt_dofadr[j] + np.arange(nv)
        self.bodies = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, n) for n in handle.body_names]
        assert min(self.bodies) > 0

    def body(self, name):
        b = mujoco.mj_name2id(self.m, mujoco.mjtObj.mjOBJ_BODY, name)
        assert b > 0, name
        return b

    def set(self, q, v=None):
        d = self.d
        d.qpos[self.qperm] = q
        d.qvel[:] = 0
        if v is not None:
            d.qvel[self.vperm] = v
        d.qfrc_applied[:] = 0
        d.qacc[:] = 0

    def vec(self, x):
        return np.asarray(x)[self.vperm]

    def mat(self, x):
        return np.asarray(x)[np.ix_(self.vperm, self.vperm)]


def unit(q, floating):
    """q with a unit base quaternion (MuJoCo is given that one)"""
    q = np.array(q, dtype=np.float64)
    if floating:
        q[..., 3:7] /= np.linalg.norm(q[..., 3:7], axis=-1, keepdims=True)
    return q


def states(h, kind, n, seed):
    """MuJoCo-convention states: kind "random" (moderate), "extreme" (|qd| <= 10, |qdd| <= 50, large torques),
    "scaled" (random with the base quaternion scaled by 1e3 and one by 1e-3: the same rotation)"""
    rng = np.random.default_rng(seed)
    q = rng.uniform(-1.5, 1.5, (n, h.nq))
    big = kind == "extreme"
    if h.floating_base:
        q[:, :3] = rng.uniform(-1, 1, (n, 3))
        quat = rng.normal(size=(n, 4))
        q[:, 3:7] = quat / np.linalg.norm(quat, axis=1, keepdims=True)
        if kind == "scaled":
            q[::2, 3:7] *= 1e3
            q[1::2, 3:7] *= 1e-3
    qd = rng.uniform(-1, 1, (n, h.nv)) * (10 if big else 1)
    qdd = rng.uniform(-1, 1, (n, h.nv)) * (50 if big else 1)
    u = rng.uniform(-1, 1, (n, h.nv)) * (200 if big else 20)
    return q, qd, qdd, u


def rel(ours, ref):
    """relative Frobenius error per state"""
    ours = np.asarray(ours, dtype=np.float64).reshape(len(ref), -1)
    ref = np.asarray(ref, dtype=np.float64).reshape(len(ref), -1)
    return np.linalg.norm(ours - ref, axis=1) / np.maximum(np.linalg.norm(ref, axis=1), FLOOR)


def mujoco_reference(mj, q, qd, qdd, u, jac_frames):
    """MuJoCo's answer for every method at each state (in grid_rbd's joint order, MuJoCo's coordinates)"""
    m, d = mj.m, mj.d
    nv = m.nv
    out = {k: [] for k in ("rnea", "rnea_inverse", "nle", "gravity", "crba", "minv", "fd", "fk", "energy")}
    out.update({f"jacobian_{rf}_{f}": [] for f in jac_frames for rf in ("LWA", "LOCAL", "WORLD")})
    m.opt.enableflags |= mujoco.mjtEnableBit.mjENBL_ENERGY
    for k in range(len(q)):
        mj.set(q[k], qd[k])
        mujoco.mj_forward(m, d)
        out["nle"].append(mj.vec(d.qfrc_bias))
        # d.energy: [potential, kinetic]
        out["energy"].append([d.energy[1], d.energy[0], d.energy[0] + d.energy[1]])
        M = np.zeros((nv, nv))
        mujoco.mj_fullM(m, d, M)
        out["crba"].append(mj.mat(M))
        Minv = np.zeros((nv, nv))
        mujoco.mj_solveM(m, d, Minv, np.eye(nv))
        out["minv"].append(mj.mat(Minv))
        # inverse dynamics: mj_rne with the accelerations, and mj_inverse
        d.qacc[mj.vperm] = qdd[k]
        tau = np.zeros(nv)
        mujoco.mj_rne(m, d, 1, tau)
        out["rnea"].append(mj.vec(tau))
        mujoco.mj_inverse(m, d)
        out["rnea_inverse"].append(mj.vec(d.qfrc_inverse))
        # body placements, Jacobians of frames (their MuJoCo bodies) as [jacp; jacr] and in LOCAL / WORLD rows
        fk = np.zeros((len(mj.bodies), 4, 4))
        for i, b in enumerate(mj.bodies):
            fk[i, :3, :3] = d.xmat[b].reshape(3, 3)
            fk[i, :3, 3] = d.xpos[b]
            fk[i, 3, 3] = 1
        out["fk"].append(fk)
        for f in jac_frames:
            b = mj.body(f)
            jp, jr = np.zeros((3, nv)), np.zeros((3, nv))
            mujoco.mj_jacBody(m, d, jp, jr, b)
            R, p = d.xmat[b].reshape(3, 3), d.xpos[b]
            px = np.array([[0, -p[2], p[1]], [p[2], 0, -p[0]], [-p[1], p[0], 0]])
            out[f"jacobian_LWA_{f}"].append(np.vstack([jp, jr])[:, mj.vperm])
            out[f"jacobian_LOCAL_{f}"].append(np.vstack([R.T @ jp, R.T @ jr])[:, mj.vperm])
            out[f"jacobian_WORLD_{f}"].append(np.vstack([jp + px @ jr, jr])[:, mj.vperm])
        # forward dynamics: qacc under qfrc_applied = u
        d.qfrc_applied[mj.vperm] = u[k]
        mujoco.mj_forward(m, d)
        out["fd"].append(mj.vec(d.qacc))
        # gravity: the bias at rest
        mj.set(q[k])
        mujoco.mj_forward(m, d)
        out["gravity"].append(mj.vec(d.qfrc_bias))
    return {k: np.array(v) for k, v in out.items()}


def ours(h, q, qd, qdd, u, jac_frames):
    out = {"rnea": h.rnea(q, qd, qdd), "nle": h.nonlinear_effects(q, qd), "gravity": h.generalized_gravity(q),
           "crba": h.crba(q), "minv": h.minv(q), "fd": h.forward_dynamics(q, qd, u), "aba": h.aba(q, qd, u),
           "fk": h.forward_kinematics(q), "energy": h.energy(q, qd)}
    out["rnea_inverse"] = out["rnea"]
    for f in jac_frames:
        for rf, name in (("LWA", "LOCAL_WORLD_ALIGNED"), ("LOCAL", "LOCAL"), ("WORLD", "WORLD")):
            out[f"jacobian_{rf}_{f}"] = h.frame_jacobian(q, f, name)
    return out


def jacobian_frames(h):
    """the last body, every end effector (fixed children of bodies, in MuJoCo bodies of their own), the base"""
    return sorted(set([h.body_names[-1], h.body_names[0]] + list(h.ee_names)))


_handles = {}


# the methods ours() calls: a fixed-base library (test_fixed_base_is_the_identity) is built with these only
OURS_METHODS = ("rnea", "nle", "gravity", "crba", "minv", "fd", "aba", "fk", "frame_jacobian", "energy")


def handle(robot, provider, dtype="float64", convention="mujoco", floating=True):
    """the session's handle; on a floating base every method (the library of the robot case <robot>_ff, a cache
    hit), on a fixed base (no robot case is generated for hyq) the methods of ours()"""
    key = (robot, provider, dtype, convention, floating)
    if key not in _handles:
        subset = {} if floating or provider != "generated" else {"algorithm_list": list(OURS_METHODS)}
        _handles[key] = grid_rbd.register_robot(
            f"{robot}{'_ff' if floating else ''}_{convention}_{provider}_{dtype}", urdf_path=_need(robot),
            floating_base=floating, dtype=dtype, codegen=provider == "generated", output_convention=convention,
            device="cpu", verbose=False, **subset)
    return _handles[key]


_mj = {}


def mujoco_map(robot, floating=True):
    key = (robot, floating)
    if key not in _mj:
        _mj[key] = MjMap(handle(robot, "reference", floating=floating), _need(robot))
    return _mj[key]


@pytest.fixture(scope="module", autouse=True)
def report():
    yield
    if not _worst and not _worst32:
        return
    methods = sorted({k for row in _worst.values() for k in row})
    lines = ["# output_convention='mujoco' vs MuJoCo: worst relative error per state (float64)", "",
             "| robot | provider | " + " | ".join(methods) + " |", "|---|---|" + "---|" * len(methods)]
    for (robot, provider), row in sorted(_worst.items()):
        lines.append(f"| {robot} | {provider} | " + " | ".join(f"{row.get(k, float('nan')):.1e}" for k in methods) + " |")
    if _worst32:
        methods32 = sorted({k for row in _worst32.values() for k in row})
        lines += ["", "float32 vs float64 (both output_convention='mujoco'): worst relative error (its bound)", "",
                  "| robot | " + " | ".join(methods32) + " |", "|---|" + "---|" * len(methods32)]
        for robot, row in sorted(_worst32.items()):
            cells = [f"{row[k][0]:.1e} ({row[k][1]:.0e})" if k in row else "" for k in methods32]
            lines.append(f"| {robot} | " + " | ".join(cells) + " |")
    out = REPO / "build" / "mujoco_convention.md"
    out.parent.mkdir(exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    print("\n" + "\n".join(lines) + f"\n(written to {out})")


# ---- the oracle ----
@pytest.mark.parametrize("robot_name, provider", ROBOT_PROVIDERS, ids=[f"{r}-{p}" for r, p in ROBOT_PROVIDERS])
def test_against_mujoco(robot_name, provider):
    """every method in MuJoCo's coordinates equals MuJoCo's own answer (mj_rne with accelerations, mj_inverse,
    qfrc_bias, mj_fullM, mj_solveM, qacc of mj_forward under qfrc_applied, mj_jacBody, xpos / xmat)"""
    robot = robot_name
    h = handle(robot, provider)
    assert h.output_convention == "mujoco" and h._runner.converts and h.provider == provider
    mj = mujoco_map(robot)
    # the same robot: total mass (MuJoCo keeps every link a body; grid_rbd merges fixed children)
    assert np.isclose(mj.m.body_mass.sum(), sum(h._model.body_masses), rtol=1e-12)
    frames = jacobian_frames(h)
    worst = _worst.setdefault((robot, provider), {})
    failures = []
    for kind, seed in (("random", 1), ("extreme", 2), ("scaled", 3)):
        q, qd, qdd, u = states(h, kind, N, seed)
        ref = mujoco_reference(mj, unit(q, True), qd, qdd, u, frames)
        ref["aba"] = ref["fd"]
        got = ours(h, q, qd, qdd, u, frames)
        for name, r in ref.items():
            err = rel(got[name], r)
            method = name.split("_")[0] if name.startswith("jacobian") else name
            worst[method] = max(worst.get(method, 0.0), float(err.max()))
            if not np.all(err <= RTOL):
                failures.append(f"{name} ({kind}): state {int(np.argmax(err))} relative error {err.max():.2e}")
    assert not failures, "\n".join(failures)


def test_nle_is_mujocos_bias_not_the_rotated_pinocchio_one():
    """MuJoCo's bias in its coordinates includes M Tdot v (Tdot v = [-omega x v_lin_body; 0]): T^T nle_pin alone is
    off by far more than the tolerance, so the comparison above can tell a wrong basis change from a right one"""
    h_pin = handle("go2", "reference", convention="pinocchio")
    mj = mujoco_map("go2")
    q, qd, _, _ = states(h_pin, "random", N, 4)
    qpin = q.copy()
    qpin[:, 3:7] = q[:, [4, 5, 6, 3]]
    vpin = qd.copy()
    wrong = np.empty_like(qd)
    bias = np.empty_like(qd)
    for k in range(N):
        w, x, y, z = q[k, 3:7]
        R = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                      [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                      [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])
        vpin[k, :3] = R.T @ qd[k, :3]
        wrong[k] = h_pin.nonlinear_effects(qpin[k:k + 1], vpin[k:k + 1])[0]
        wrong[k, :3] = R @ wrong[k, :3]
        mj.set(q[k], qd[k])
        mujoco.mj_forward(mj.m, mj.d)
        bias[k] = mj.vec(mj.d.qfrc_bias)
    assert rel(wrong, bias).min() > 1e-3
    assert rel(handle("go2", "reference").nonlinear_effects(q, qd), bias).max() <= RTOL


# ---- float32 ----
@pytest.mark.parametrize("robot_name", ("go2",))  # go2_ff is the floating quadruped with a float32 library
def test_float32_against_float64(robot_name):
    """the generated float32 library in MuJoCo's convention against the float64 one on the same (float32) inputs:
    1e-5 relative per state (RNEA, NLE, gravity, CRBA, FK, Jacobian), 1e-6 * cond(M) (Minv, FD, ABA)"""
    h32, h64 = handle(robot_name, "generated", "float32"), handle(robot_name, "generated")
    frames = jacobian_frames(h64)
    failures = []
    for kind, seed in (("random", 5), ("extreme", 6)):
        s32 = [x.astype(np.float32) for x in states(h64, kind, N, seed)]
        s64 = [x.astype(np.float64) for x in s32]
        cond = np.linalg.cond(h64.crba(s64[0]))
        a, b = ours(h32, *s32, frames), ours(h64, *s64, frames)
        worst = _worst32.setdefault(robot_name, {})
        for name in a:
            err = rel(a[name], b[name])
            bound = F32_COND * cond if name in ("minv", "fd", "aba") else np.full(N, F32_RTOL)
            method = name.split("_")[0] if name.startswith("jacobian") else name
            k = int(np.argmax(err / bound))
            if err[k] / bound[k] > worst.get(method, (0, 1))[0] / worst.get(method, (0, 1))[1]:
                worst[method] = (float(err[k]), float(bound[k]))
            if not np.all(err <= bound):
                failures.append(f"{name} ({kind}): {err.max():.2e} > {bound[np.argmax(err)]:.1e}")
    assert not failures, "\n".join(failures)


# ---- first-order derivatives in MuJoCo's basis ----
MJD_RTOL = 1e-5       # ours vs MuJoCo's mjd_inverseFD (its finite differences: measured 5e-7 relative)
CD_EPS, CD_RTOL = 1e-6, 1e-6   # the pose gradient vs central differences along mj_integratePos
F32_GRAD_RTOL = 2e-5  # float32 vs float64 RNEA gradient and VJP (test_codegen's bound); FD ones: 1e-6 * cond(M)


def mujoco_inverse_fd(mj, q, qd, qdd):
    """MuJoCo's own finite-difference derivatives of mj_inverse (mjd_inverseFD, outputs transposed there) in grid_rbd's
    joint order: [dtau/dq | dtau/dv] per state, q along MuJoCo's tangent (mj_integratePos)"""
    m, d = mj.m, mj.d
    out = []
    for k in range(len(q)):
        mj.set(q[k], qd[k])
        d.qacc[mj.vperm] = qdd[k]
        dq, dv, da = (np.zeros((m.nv, m.nv)) for _ in range(3))
        mujoco.mjd_inverseFD(m, d, 1e-6, 0, dq, dv, da, None, None, None, None)
        out.append(np.hstack([mj.mat(dq.T), mj.mat(dv.T)]))
    return np.array(out)


def mj_integrate(mj, q, dq):
    """grid_rbd-ordered q moved by the grid_rbd-ordered tangent dq with MuJoCo's mj_integratePos"""
    qpos = np.zeros(mj.m.nq)
    qpos[mj.qperm] = q
    vel = np.zeros(mj.m.nv)
    vel[mj.vperm] = dq
    mujoco.mj_integratePos(mj.m, qpos, vel, 1.0)
    return qpos[mj.qperm]


@pytest.mark.parametrize("robot_name, provider", ROBOT_PROVIDERS, ids=[f"{r}-{p}" for r, p in ROBOT_PROVIDERS])
def test_derivatives_against_mujoco(robot_name, provider):
    """inverse_dynamics_gradient in MuJoCo's basis equals MuJoCo's mjd_inverseFD (q along mj_integratePos, v and the
    torque in MuJoCo's coordinates); forward_dynamics_gradient equals -M^-1 of mjd_inverseFD at MuJoCo's own qacc
    (mj_forward under qfrc_applied = u), both with the acceleration absent (zero in MuJoCo's basis) too; the pose
    gradient central differences along mj_integratePos; the VJPs g^T of those gradients to 1e-12"""
    h = handle(robot_name, provider)
    mj = mujoco_map(robot_name)
    nv = h.nv
    failures, worst = [], _worst.setdefault((robot_name, provider), {})

    def check(name, got, ref, tol):
        err = rel(got, ref)
        worst[name] = max(worst.get(name, 0.0), float(err.max()))
        if not np.all(err <= tol):
            failures.append(f"{name}: state {int(np.argmax(err))} relative error {err.max():.2e} > {tol:.0e}")

    for kind, seed in (("random", 11), ("extreme", 12)):
        q, qd, qdd, u = states(h, kind, 4, seed)
        q = unit(q, True)
        check("rnea_grad", h.inverse_dynamics_gradient(q, qd, qdd), mujoco_inverse_fd(mj, q, qd, qdd), MJD_RTOL)
        check("rnea_grad", h.inverse_dynamics_gradient(q, qd), mujoco_inverse_fd(mj, q, qd, 0 * qdd), MJD_RTOL)
        # forward dynamics: MuJoCo's qacc, then -M^-1 [dtau/dq | dtau/dv] there
        ref = []
        for k in range(len(q)):
            mj.set(q[k], qd[k])
            mj.d.qfrc_applied[mj.vperm] = u[k]
            mujoco.mj_forward(mj.m, mj.d)
            qacc = mj.vec(mj.d.qacc).copy()
            M = np.zeros((nv, nv))
            mujoco.mj_fullM(mj.m, mj.d, M)
            ref.append(-np.linalg.solve(mj.mat(M), mujoco_inverse_fd(mj, q[k:k + 1], qd[k:k + 1], qacc[None])[0]))
        cond = max(np.linalg.cond(M) for M in h.crba(q))
        F = h.forward_dynamics_gradient(q, qd, u)
        check("fd_grad", F, np.array(ref), MJD_RTOL * max(1.0, cond / 1e3))
        # and exactly (no finite differences): FD's derivative is -M^-1 of ID's at FD's own acceleration
        inv = -np.linalg.solve(h.crba(q), h.inverse_dynamics_gradient(q, qd, h.forward_dynamics(q, qd, u)))
        check("fd_grad = -M^-1 rnea_grad", F, inv, 1e-14 * max(1e3, cond))
        # the pose gradient: central differences along MuJoCo's tangent
        P = h.end_effector_pose_gradient(q)
        cd = np.zeros_like(P)
        for k in range(len(q)):
            for c in range(nv):
                e = np.zeros(nv)
                e[c] = CD_EPS
                plus, minus = h.end_effector_pose(mj_integrate(mj, q[k], e)), h.end_effector_pose(
                    mj_integrate(mj, q[k], -e))
                cd[k, :, c] = ((plus - minus) / (2 * CD_EPS)).reshape(-1)
        check("ee_pose_grad", P, cd, CD_RTOL)
        # the VJPs against g^T of the gradients (the FD one's u block: g^T Minv in MuJoCo's basis)
        rng = np.random.default_rng(seed)
        g, gp = rng.normal(size=(len(q), nv)), rng.normal(size=(len(q), 6 * len(h.ee_names)))
        G, F = h.inverse_dynamics_gradient(q, qd, qdd), h.forward_dynamics_gradient(q, qd, u)
        check("rnea_vjp", h.inverse_dynamics_vjp(q, qd, g, qdd), np.einsum("bi,bij->bj", g, G), 1e-12)
        fd_ref = np.hstack([np.einsum("bi,bij->bj", g, F), np.einsum("bi,bij->bj", g, h.minv(q))])
        check("fd_vjp", h.forward_dynamics_vjp(q, qd, u, g), fd_ref, 1e-12)
        check("ee_pose_vjp", h.end_effector_pose_vjp(q, gp), np.einsum("bi,bij->bj", gp, P), 1e-12)
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("robot_name", ("go2",))  # go2_ff is the floating quadruped with a float32 library
def test_derivatives_float32_against_float64(robot_name):
    """the generated float32 library's derivatives in MuJoCo's basis against float64 on the same inputs: the RNEA
    gradient and VJP within 2e-5 relative per state, the FD ones within 1e-6 * cond(M), at |qd| <= 10, |qdd| <= 50"""
    h32, h64 = handle(robot_name, "generated", "float32"), handle(robot_name, "generated")
    failures = []
    for kind, seed in (("random", 21), ("extreme", 22)):
        s32 = [x.astype(np.float32) for x in states(h64, kind, N, seed)]
        s64 = [x.astype(np.float64) for x in s32]
        g32 = np.random.default_rng(seed).normal(size=(N, h64.nv)).astype(np.float32)
        cond = np.array([np.linalg.cond(M) for M in h64.crba(s64[0])])
        for name, call, bound in (
                ("rnea_grad", lambda h, q, qd, qdd, u, g: h.inverse_dynamics_gradient(q, qd, qdd), F32_GRAD_RTOL),
                ("rnea_vjp", lambda h, q, qd, qdd, u, g: h.inverse_dynamics_vjp(q, qd, g, qdd), F32_GRAD_RTOL),
                ("fd_grad", lambda h, q, qd, qdd, u, g: h.forward_dynamics_gradient(q, qd, u), F32_COND * cond),
                ("fd_vjp", lambda h, q, qd, qdd, u, g: h.forward_dynamics_vjp(q, qd, u, g), F32_COND * cond)):
            err = rel(call(h32, *s32, g32), call(h64, *s64, g32.astype(np.float64)))
            worst = _worst32.setdefault(robot_name, {})
            b = np.broadcast_to(bound, err.shape)
            k = int(np.argmax(err / b))
            if err[k] / b[k] > worst.get(name, (0, 1))[0] / worst.get(name, (0, 1))[1]:
                worst[name] = (float(err[k]), float(b[k]))
            if not np.all(err <= b):
                failures.append(f"{name} ({kind}): {err.max():.2e} > {b[k]:.1e}")
    assert not failures, "\n".join(failures)


def test_a_subset_of_methods_builds_the_derivatives_aux_rows():
    """algorithm_list=[a method] in MuJoCo's convention also builds the rows it runs there (tau and M beside the ID
    gradient, qdd beside the FD VJP, RNEA for NLE: the signature table's mujoco_aux), so the generated library
    answers them rather than the reference; the results equal the full library's"""
    full = handle("go2", "generated")
    for method, want in (("inverse_dynamics_gradient", {"rnea", "crba", "rnea_grad"}),
                         ("forward_dynamics_vjp", {"fd", "fd_vjp"}), ("nonlinear_effects", {"nle", "rnea"})):
        h = grid_rbd.register_robot(f"go2_mj_only_{method}", urdf_path=_need("go2"), floating_base=True,
                                    dtype="float64", output_convention="mujoco", algorithm_list=[method],
                                    device="cpu", verbose=False)
        assert set(h._options["algorithm_list"]) == want
        q, qd, qdd, u = states(h, "random", 5, 31)
        g = np.random.default_rng(3).normal(size=qd.shape)
        args = {"inverse_dynamics_gradient": (q, qd, qdd), "forward_dynamics_vjp": (q, qd, u, g),
                "nonlinear_effects": (q, qd)}[method]
        assert rel(getattr(h, method)(*args), getattr(full, method)(*args)).max() <= 1e-12


# ---- one build for both conventions ----
def test_cache_entry_is_shared_with_pinocchio(tmp_path):
    """the convention is not part of the build: the same robot.so answers both, the second registration is a hit"""
    path = _need("go2")
    # one method: the cache, not the dynamics, is under test (the full libraries share their entries too: handle())
    one = dict(algorithm_list=["rnea"])
    a = grid_rbd.register_robot("go2_share_pin", urdf_path=path, floating_base=True, dtype="float64", device="cpu",
                                cache_dir=tmp_path, verbose=False, **one)
    b = grid_rbd.register_robot("go2_share_mj", urdf_path=path, floating_base=True, dtype="float64", device="cpu",
                                cache_dir=tmp_path, verbose=False, output_convention="mujoco", **one)
    assert a.build_info["compiled"] and not b.build_info["compiled"] and b.build_info["cache_hit"]
    assert a.library_path == b.library_path and a.cache_entry == b.cache_entry
    assert a.build_info["input_key"] == b.build_info["input_key"]
    assert a.build_info["model_hash"] == b.build_info["model_hash"]
    entries = [e for e in grid_rbd.cache.entries(cache_dir=tmp_path)]
    assert len(entries) == 1
    assert a.output_convention == "pinocchio" and b.output_convention == "mujoco"
    # precompile takes the option and finds the same entry
    assert grid_rbd.precompile("go2_share_pre", urdf_path=path, floating_base=True, dtype="float64",
                               cache_dir=tmp_path, verbose=False, output_convention="mujoco",
                               device="cpu", **one) == b.cache_entry
    # and the two handles disagree exactly where the bases do
    q, qd, qdd, _ = states(b, "random", 3, 7)
    assert not np.allclose(a.rnea(q, qd, qdd), b.rnea(q, qd, qdd))


# ---- fixed base: the identity ----
@pytest.mark.parametrize("provider", PROVIDERS)
def test_fixed_base_is_the_identity(provider):
    """revolute joints only: the MuJoCo convention converts nothing (bitwise the Pinocchio handle) and still matches
    MuJoCo"""
    h = handle("hyq", provider, floating=False)
    p = handle("hyq", provider, convention="pinocchio", floating=False)
    assert h.output_convention == "mujoco" and not h._runner.converts and h._model.convention_blocks(1) == ()
    q, qd, qdd, u = states(h, "extreme", N, 8)
    frames = jacobian_frames(h)
    a, b = ours(h, q, qd, qdd, u, frames), ours(p, q, qd, qdd, u, frames)
    for name in a:
        assert np.array_equal(a[name], b[name]), name
    mj = mujoco_map("hyq", floating=False)
    ref = mujoco_reference(mj, q, qd, qdd, u, frames)
    ref["aba"] = ref["fd"]
    # MuJoCo's potential energy also counts the bodies welded to the world (the trunk); Pinocchio's, and so grid_rbd's
    # in either convention, only the moving ones: a constant apart
    static = [b for b in range(1, mj.m.nbody) if mj.m.body_weldid[b] == 0]
    pe_static = -sum(mj.m.body_mass[b] * mj.m.opt.gravity @ mj.d.xipos[b] for b in static)
    assert static and pe_static != 0
    ref["energy"] = ref["energy"] - np.array([0.0, pe_static, pe_static])
    for name, r in ref.items():
        err = rel(a[name], r)
        assert np.all(err <= RTOL), f"{name}: {err.max():.2e}"


# ---- the per-state conversion: batches, threads, aliasing ----
def test_bitwise_the_same_for_any_batch_and_thread_count():
    """each state's result depends on that state alone: one state at a time, a batch over many conversion chunks
    (256 KiB: ~450 go2 RNEA states) on one thread or on two slices of 2500, all give the same bits"""
    h = handle("go2", "generated")
    q, qd, qdd, u = states(h, "extreme", 5000, 9)
    picks = [0, 1, 447, 448, 2499, 2500, 4999]
    for method, args in (("rnea", (q, qd, qdd)), ("nonlinear_effects", (q, qd)), ("crba", (q,)),
                         ("forward_dynamics", (q, qd, u)), ("frame_jacobian", (q,)), ("forward_kinematics", (q,)),
                         ("end_effector_pose", (q,)), ("generalized_gravity", (q,)), ("minv", (q,)), ("aba", (q, qd, u))):
        fn = getattr(h, method)
        h.num_threads = 1
        one_thread = fn(*args)
        h.num_threads = 2
        two = fn(*args)
        assert np.array_equal(one_thread, two), method
        for k in picks:
            assert np.array_equal(fn(*(x[k:k + 1] for x in args))[0], two[k]), (method, k)


def test_out_over_an_input():
    """out= exactly an input (every state is converted before it runs) and partly over one (a temporary)"""
    h = handle("go2", "generated")
    q, qd, _, u = states(h, "extreme", 300, 10)
    want = h.forward_dynamics(q, qd, u)
    uu = u.copy()
    assert h.forward_dynamics(q, qd, uu, out=uu) is uu and np.array_equal(uu, want)
    buf = np.concatenate([u, u[:1]])
    got = h.forward_dynamics(q, qd, buf[1:], out=buf[:300])
    assert np.array_equal(got, h.forward_dynamics(q, qd, np.concatenate([u[1:], u[:1]])))


def test_qdd_none_is_zero_in_mujocos_basis():
    """rnea(q, qd) with qdd absent is rnea(q, qd, 0) of MuJoCo's coordinates (= nle), not Pinocchio's zero"""
    for provider in PROVIDERS:
        h = handle("go2", provider)
        q, qd, _, _ = states(h, "extreme", 4, 11)
        assert np.array_equal(h.rnea(q, qd), h.rnea(q, qd, np.zeros_like(qd)))
        assert np.allclose(h.rnea(q, qd), h.nonlinear_effects(q, qd), rtol=1e-12, atol=1e-9)


def test_pickle_keeps_the_convention():
    h = handle("go2", "reference")
    h2 = pickle.loads(pickle.dumps(h))
    assert h2.output_convention == "mujoco" and h2._runner.converts
    q, qd, qdd, _ = states(h, "random", 2, 12)
    assert np.array_equal(h2.rnea(q, qd, qdd), h.rnea(q, qd, qdd))


# ---- the option ----
def test_option_errors(tmp_path):
    path = _need("go2")
    kw = dict(urdf_path=path, floating_base=True, cache_dir=tmp_path, verbose=False, device="cpu")
    for bad in ("MuJoCo", "ros", 1, None):
        with pytest.raises(ValueError, match="output_convention must be one of 'pinocchio', 'mujoco'"):
            grid_rbd.register_robot("bad", output_convention=bad, **kw)
        with pytest.raises(ValueError, match="output_convention must be one of"):
            grid_rbd.precompile("bad", output_convention=bad, **kw)
    with pytest.raises(ValueError, match="mutually exclusive"):
        grid_rbd.register_robot("bad", output_convention="mujoco", enable_mujoco_kernels=False, **kw)
    with pytest.raises(ValueError, match="enable_mujoco_kernels must be True or False"):
        grid_rbd.register_robot("bad", output_convention="mujoco", enable_mujoco_kernels="yes", **kw)
    # nothing was built by the refusals
    assert not list(grid_rbd.cache.entries(cache_dir=tmp_path))
    # accepted: enable_mujoco_kernels True with either convention, False with Pinocchio's (it changes nothing)
    h = grid_rbd.register_robot("ok1", output_convention="mujoco", enable_mujoco_kernels=True, codegen=False, **kw)
    assert h.output_convention == "mujoco" and h.options["enable_mujoco_kernels"] is True
    h = grid_rbd.register_robot("ok2", enable_mujoco_kernels=False, codegen=False, **kw)
    assert h.output_convention == "pinocchio" and not h._runner.converts
    assert "output_convention='mujoco'" in repr(handle("go2", "reference"))
    # the Runner refuses an unknown kind
    with pytest.raises(grid_rbd.GridArgumentError, match="unknown output convention"):
        grid_rbd._core.Runner(h._model, grid_rbd._core.FLOAT64, convention=5)



@pytest.mark.parametrize("provider", PROVIDERS)
def test_coriolis_matrix_in_mujocos_basis(provider):
    """C_mj = T^T (C T + M dT/dt): C_mj qd + g is MuJoCo's bias, and C_mj + C_mj^T is dM_mj/dt (MuJoCo's mj_fullM,
    differentiated centrally along qd with mj_integratePos), on go2 and atlas with a free joint (atlas on the
    reference only: its floating generated library is no session robot case, and a build of its own cost 30 s of CI)"""
    for robot in free_joint_robots(provider):
        h = handle(robot, provider)
        mj = mujoco_map(robot)
        m, d = mj.m, mj.d
        q, qd, _, _ = states(h, "random", 3, 6)
        C = h.coriolis_matrix(q, qd)
        bias = np.einsum("bij,bj->bi", C, qd) + h.generalized_gravity(q)
        err = rel(bias, h.nonlinear_effects(q, qd))
        assert np.all(err <= RTOL), f"{robot}: C qd + g vs MuJoCo's bias: {err.max():.1e}"
        qu = unit(q, True)
        eps = 1e-6
        for b in range(len(q)):
            Ms = []
            for sgn in (1, -1):
                mj.set(mj_integrate(mj, qu[b], sgn * eps * qd[b]))
                mujoco.mj_forward(m, d)
                M = np.zeros((m.nv, m.nv))
                mujoco.mj_fullM(m, d, M)
                Ms.append(mj.mat(M))
            Mdot = (Ms[0] - Ms[1]) / (2 * eps)
            e = np.abs(C[b] + C[b].T - Mdot).max() / max(1.0, np.abs(Mdot).max())
            assert e < 1e-6, f"{robot} state {b}: |C + C^T - dM/dt| = {e:.1e}"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_inverse_dynamics_regressor_in_mujocos_basis(provider):
    """Y_mj = T^T Y: Y_mj pi is inverse_dynamics in MuJoCo's basis (checked against MuJoCo's mj_inverse above), with
    and without qdd, on go2 and atlas with a free joint (pi: Pinocchio's dynamic parameters of the same bodies)"""
    from robot_cases import PinMap
    for robot in free_joint_robots(provider):
        h = handle(robot, provider)
        P = PinMap(h, _need(robot), True)
        pi = np.concatenate([P.model.inertias[j].toDynamicParameters() for j in P.joint_ids])
        for kind in ("random", "extreme"):
            q, qd, qdd, _ = states(h, kind, 3, 8)
            err = rel(h.inverse_dynamics_regressor(q, qd, qdd) @ pi, h.inverse_dynamics(q, qd, qdd))
            assert np.all(err <= RTOL), f"{robot} {kind}: Y pi vs inverse_dynamics: {err.max():.1e}"
            err = rel(h.inverse_dynamics_regressor(q, qd) @ pi, h.nonlinear_effects(q, qd))
            assert np.all(err <= RTOL), f"{robot} {kind}: Y(qdd = 0) pi vs nonlinear_effects: {err.max():.1e}"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_com_in_mujocos_basis(provider):
    """com is MuJoCo's subtree_com of the root body and J_mj = J T its mj_jacSubtreeCom (go2 and atlas with a free
    joint: the root body's subtree is the whole robot)"""
    for robot in free_joint_robots(provider):
        h = handle(robot, provider)
        mj = mujoco_map(robot)
        m, d = mj.m, mj.d
        root = mj.bodies[0]
        q, _, _, _ = states(h, "random", 3, 9)
        c, J = h.com(q)
        qu = unit(q, True)
        for b in range(len(q)):
            mj.set(qu[b])
            mujoco.mj_forward(m, d)
            jp = np.zeros((3, m.nv))
            mujoco.mj_jacSubtreeCom(m, d, jp, root)
            assert np.abs(c[b] - d.subtree_com[root]).max() < 1e-12, f"{robot} state {b}: com"
            err = np.abs(J[b] - jp[:, mj.vperm]).max() / max(1.0, np.abs(jp).max())
            assert err < 1e-12, f"{robot} state {b}: J_mj vs mj_jacSubtreeCom: {err:.1e}"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_ccrba_in_mujocos_basis(provider):
    """A_mj = A T with A_mj qd_mj = h, and h is MuJoCo's momentum of the root body's subtree (mj_subtreeVel: mass
    times subtree_linvel, and subtree_angmom about the centre of mass), on go2 and atlas with a free joint"""
    for robot in free_joint_robots(provider):
        h = handle(robot, provider)
        mj = mujoco_map(robot)
        m, d = mj.m, mj.d
        root = mj.bodies[0]
        q, qd, _, _ = states(h, "random", 3, 10)
        A, hg = h.ccrba(q, qd)
        assert np.all(rel(np.einsum("bij,bj->bi", A, qd), hg) <= RTOL), robot
        qu = unit(q, True)
        for b in range(len(q)):
            mj.set(qu[b], qd[b])
            mujoco.mj_forward(m, d)
            mujoco.mj_subtreeVel(m, d)
            ref = np.concatenate([m.body_subtreemass[root] * d.subtree_linvel[root], d.subtree_angmom[root]])
            err = np.abs(hg[b] - ref).max() / max(1.0, np.abs(ref).max())
            assert err < 1e-10, f"{robot} state {b}: h vs MuJoCo's subtree momentum: {err:.1e}"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_cmm_time_variation_in_mujocos_basis(provider):
    """dA_mj/dt = dA/dt T + A dT/dt is the rate of ccrba's A_mj along MuJoCo's motion: the central difference of A_mj
    at qpos moved by mj_integratePos along qvel (go2 and atlas with a free joint)"""
    for robot in free_joint_robots(provider):
        h = handle(robot, provider)
        mj = mujoco_map(robot)
        m, d = mj.m, mj.d
        q, qd, _, _ = states(h, "random", 3, 12)
        dA = h.cmm_time_variation(q, qd)
        qu = unit(q, True)
        eps = 1e-6
        for b in range(len(q)):
            A = []
            for sgn in (1, -1):
                A.append(h.ccrba(mj_integrate(mj, qu[b], sgn * eps * qd[b]), qd[b])[0])
            rate = (A[0] - A[1]) / (2 * eps)
            err = np.abs(dA[b] - rate).max() / max(1.0, np.abs(rate).max())
            assert err < 1e-6, f"{robot} state {b}: dA_mj/dt vs the central difference of A_mj: {err:.1e}"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_dccrba_is_refused_on_a_free_flyer(provider):
    """dA/dq has no MuJoCo-basis conversion (its q index would need the derivative of T along MuJoCo's tangent): a
    floating base refuses it with a NotAvailableError that says what to do; a fixed base of revolute joints, where the
    convention is the identity, computes it"""
    h = handle("go2", provider)
    q, _, _, _ = states(h, "random", 2, 13)
    with pytest.raises(grid_rbd.NotAvailableError, match="output_convention='pinocchio'"):
        h.dccrba(q)
    fixed = handle("go2", "reference", floating=False)
    qf, _, _, _ = states(fixed, "random", 2, 13)
    pin_h = handle("go2", "reference", convention="pinocchio", floating=False)
    np.testing.assert_array_equal(fixed.dccrba(qf), pin_h.dccrba(qf))


@pytest.mark.parametrize("provider", PROVIDERS)
def test_frame_jacobian_dot_in_mujocos_basis(provider):
    """dJ_mj/dt = dJ/dt T + J dT/dt is the rate of frame_jacobian's J_mj along MuJoCo's motion, in every reference
    frame: the aux Jacobian runs at the call's frame and reference frame (go2 and atlas with a free joint)"""
    for robot in free_joint_robots(provider):
        h = handle(robot, provider)
        mj = mujoco_map(robot)
        q, qd, _, _ = states(h, "random", 3, 13)
        qu = unit(q, True)
        eps = 1e-6
        for target in (h.ee_names[0], h.frame_names[len(h.frame_names) // 2]):
            for rf in ("WORLD", "LOCAL", "LOCAL_WORLD_ALIGNED"):
                dJ = h.frame_jacobian_dot(q, qd, target, rf)
                for b in range(len(q)):
                    qs = np.stack([mj_integrate(mj, qu[b], sgn * eps * qd[b]) for sgn in (1, -1)])
                    Jp, Jm = h.frame_jacobian(qs, target, rf)
                    rate = (Jp - Jm) / (2 * eps)
                    err = np.abs(dJ[b] - rate).max() / max(1.0, np.abs(rate).max())
                    assert err < 1e-6, f"{robot} {target} {rf} state {b}: dJ_mj/dt vs the central difference: {err:.1e}"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_osc_inertia_is_the_same_in_both_conventions(provider):
    """Lambda = (J M^-1 J^T)^-1 does not depend on the velocity coordinates (J T and T^T M T give the same): go2 on a
    free joint, the first end effector and a mid frame in every reference frame, the same state in either basis"""
    h_mj, h_pin = handle("go2", provider), handle("go2", provider, convention="pinocchio")
    q, _, _, _ = states(h_mj, "random", N, 8)
    qpin = q.copy()
    qpin[:, 3:7] = q[:, [4, 5, 6, 3]]  # MuJoCo's (w, x, y, z) as Pinocchio's (x, y, z, w)
    for target in (h_mj.ee_names[0], h_mj.frame_names[len(h_mj.frame_names) // 2]):
        for rf in ("WORLD", "LOCAL", "LOCAL_WORLD_ALIGNED"):
            ours, pin_basis = h_mj.osc_inertia(q, target, rf), h_pin.osc_inertia(qpin, target, rf)
            err = rel(ours, pin_basis)
            assert np.all(err <= RTOL), f"{target} {rf}: {err.max():.1e}"
            assert np.abs(pin_basis).max() > 0
