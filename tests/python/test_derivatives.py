"""First-order derivatives (inverse_dynamics_gradient, forward_dynamics_gradient): central differences on robots
Pinocchio cannot differentiate (coupled mimic joints), the tangent convention on every joint type, float32 against
float64 with a bound that does not grow with velocity, and the API (aliases, one state, out=, shapes). The
cross-check against Pinocchio's computeRNEADerivatives / computeABADerivatives is in test_pinocchio_crosscheck."""

import numpy as np
import pytest

import grid_rbd
from robot_cases import CASES, case_path, make_states, synthetic_dir

EPS = 1e-6          # central-difference step
CD_RTOL = 1e-6      # the bound for central differences (truncation ~ EPS^2, rounding ~ 1e-16 / EPS)


def case_by_id(cid):
    return next(c for c in CASES if c.id == cid)


def quat_mul(a, b):
    """Hamilton product of [x, y, z, w] quaternions"""
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return np.array([aw * bx + ax * bw + ay * bz - az * by, aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw, aw * bw - ax * bx - ay * by - az * bz])


def quat_exp(w):
    """the unit quaternion of the rotation vector w"""
    t = np.linalg.norm(w)
    if t < 1e-300:
        return np.array([0.0, 0.0, 0.0, 1.0])
    return np.concatenate([np.sin(t / 2) * w / t, [np.cos(t / 2)]])


def quat_matrix(q):
    x, y, z, w = q / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def integrate(h, q, dv):
    """q (+) dv in the local tangent of every joint (what pinocchio.integrate does): the body moves by
    M(q) exp(S dv) in its own frame; one-dof joints add"""
    m = h._model
    out = np.array(q, dtype=np.float64)
    for iq, iv, nqj, nvj, kind in zip(m.joint_idx_q, m.joint_idx_v, m.joint_nq, m.joint_nv, m.joint_types):
        d = dv[iv:iv + nvj]
        if nvj == 0:
            continue
        if kind == "free":
            out[iq:iq + 3] += quat_matrix(q[iq + 3:iq + 7]) @ d[:3]
            out[iq + 3:iq + 7] = quat_mul(q[iq + 3:iq + 7], quat_exp(d[3:]))
        elif kind == "spherical":
            out[iq:iq + 4] = quat_mul(q[iq:iq + 4], quat_exp(d))
        elif kind == "planar":
            c, s = np.cos(q[iq + 2]), np.sin(q[iq + 2])
            out[iq:iq + 2] += [c * d[0] - s * d[1], s * d[0] + c * d[1]]
            out[iq + 2] += d[2]
        else:
            out[iq:iq + nqj] += d
    return out


def central_gradient(h, fn, q, qd, x, fx=None):
    """[d fn/dq | d fn/dqd] at one state by central differences along the local tangent, batched"""
    nv = h.nv
    qs, vs = [], []
    for k in range(nv):
        for sgn in (1, -1):
            e = np.zeros(nv)
            e[k] = sgn * EPS
            qs.append(integrate(h, q, e))
            vs.append(qd)
    for k in range(nv):
        for sgn in (1, -1):
            qs.append(q)
            vs.append(qd + sgn * EPS * np.eye(nv)[k])
    n = len(qs)
    args = (np.array(qs), np.array(vs), np.tile(x, (n, 1))) + ((np.tile(fx, (n, 1)),) if fx is not None else ())
    y = fn(*args)
    return ((y[0::2] - y[1::2]) / (2 * EPS)).T  # (nv outputs, 2 nv columns)


def rel(a, b):
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-12))


@pytest.fixture(scope="module", params=["h1_2", "h1_2_ff", "panda", "joints_ff", "go2_ff"])
def pair(request):
    """a robot's generated float64 handle (the session's library of the case: None for a case left to the reference,
    robot_cases.CASES) and its reference"""
    case = case_by_id(request.param)
    path = case_path(case, synthetic_dir())
    kw = dict(urdf_path=path, floating_base=case.floating_base, ignore_mimic=case.ignore_mimic, dtype="float64",
              verbose=False)
    return (case, grid_rbd.register_robot(case.id + "_dgen", **kw) if case.generated else None,
            grid_rbd.register_robot(case.id + "_dref", codegen=False, **kw))


def need_generated(gen, case):
    if gen is None:
        pytest.skip(f"{case.id}: no generated library (robot_cases.CASES); its reference is checked")


@pytest.mark.parametrize("with_fext", [False, True], ids=["no_fext", "fext"])
def test_gradients_match_central_differences(pair, with_fext):
    """mimic robots (Pinocchio refuses their derivatives), planar and spherical joints, a floating base: the gradients
    equal central differences of the same provider's own inverse / forward dynamics, in the user's coordinates"""
    case, gen, ref = pair
    s = make_states(ref, "random", 3, seed=31)
    worst = 0.0
    for h in (x for x in (gen, ref) if x is not None):
        for b in range(3):
            q, qd, qdd, u, fx = s["q"][b], s["qd"][b] * 3, s["qdd"][b] * 5, s["u"][b], s["f_ext"][b]
            f = fx if with_fext else None
            got = h.inverse_dynamics_gradient(q, qd, qdd, f_ext=f)
            cd = central_gradient(h, lambda Q, V, A, *F: h.inverse_dynamics(Q, V, A, *F), q, qd, qdd, f)
            assert got.shape == (h.nv, 2 * h.nv)
            e = rel(got, cd)
            assert e <= CD_RTOL, f"{case.id} {h.provider} rnea_grad state {b}: {e:.2e}"
            got = h.forward_dynamics_gradient(q, qd, u, f_ext=f)
            cd = central_gradient(h, lambda Q, V, U, *F: h.forward_dynamics(Q, V, U, *F), q, qd, u, f)
            e2 = rel(got, cd)
            assert e2 <= CD_RTOL, f"{case.id} {h.provider} fd_grad state {b}: {e2:.2e}"
            worst = max(worst, e, e2)
    print(f"\n{case.id}: worst relative difference to central differences {worst:.1e}")


def test_generated_equals_reference_on_mimic_robots(pair):
    case, gen, ref = pair
    need_generated(gen, case)
    s = make_states(ref, "high_velocity", 6, seed=3)
    for name, args in (("inverse_dynamics_gradient", (s["q"], s["qd"], s["qdd"], s["f_ext"])),
                       ("forward_dynamics_gradient", (s["q"], s["qd"], s["u"], s["f_ext"]))):
        a, b = getattr(gen, name)(*args), getattr(ref, name)(*args)
        scale = np.abs(b).reshape(len(b), -1).max(axis=1)
        err = np.abs(a - b).reshape(len(b), -1).max(axis=1) / scale
        assert err.max() <= 1e-11, f"{case.id} {name}: {err.max():.2e}"


VJP_RTOL = 1e-12   # the bound for a VJP against g^T J of the full gradients (float64)


def vjp_errors(h, s, b=None):
    """worst relative error of each VJP row of h against g^T of h's own full gradients (the u block of the FD VJP
    against g^T minv), over the states of s"""
    g, gp = s["g"], s["g_pose"]
    contract = lambda ct, J: np.einsum("bi,bij->bj", ct, J)
    want = {
        "inverse_dynamics_vjp": contract(g, h.inverse_dynamics_gradient(s["q"], s["qd"], s["qdd"], s["f_ext"])),
        "forward_dynamics_vjp": np.concatenate([contract(g, h.forward_dynamics_gradient(s["q"], s["qd"], s["u"], s["f_ext"])),
                                                contract(g, h.minv(s["q"]))], axis=1),
        "end_effector_pose_vjp": contract(gp, h.end_effector_pose_gradient(s["q"])),
    }
    got = {
        "inverse_dynamics_vjp": h.inverse_dynamics_vjp(s["q"], s["qd"], g, s["qdd"], s["f_ext"]),
        "forward_dynamics_vjp": h.forward_dynamics_vjp(s["q"], s["qd"], s["u"], g, s["f_ext"]),
        "end_effector_pose_vjp": h.end_effector_pose_vjp(s["q"], gp),
    }
    out = {}
    for k in want:
        assert got[k].shape == want[k].shape, k
        scale = np.linalg.norm(want[k], axis=1)
        out[k] = float((np.linalg.norm(got[k] - want[k], axis=1) / np.maximum(scale, 1e-300)).max())
    return out


def test_vjps_are_the_contracted_gradients(pair):
    """each VJP row equals g^T J of the full gradient rows (1e-12), on both providers, mimic robots included; states
    at |qd| <= 10 with f_ext"""
    case, gen, ref = pair
    s = make_states(ref, "high_velocity", 6, seed=41)
    for h in (x for x in (gen, ref) if x is not None):
        for name, e in vjp_errors(h, s).items():
            assert e <= VJP_RTOL, f"{case.id} {h.provider} {name}: {e:.2e}"
    # the VJP of an absent qdd / f_ext is the VJP at zeros
    h = gen if gen is not None else ref
    np.testing.assert_array_equal(h.inverse_dynamics_vjp(s["q"], s["qd"], s["g"]),
                                  h.inverse_dynamics_vjp(s["q"], s["qd"], s["g"], np.zeros_like(s["qdd"]),
                                                         np.zeros_like(s["f_ext"])))


def test_a_wrong_vjp_fails_the_check(pair):
    """the comparison can fail: a cotangent off by 1e-9 in one entry is caught"""
    case, gen, ref = pair
    gen = gen if gen is not None else ref
    s = make_states(gen, "random", 2, seed=5)
    s2 = dict(s, g=s["g"].copy())
    s2["g"][:, 0] += 1e-9 * np.abs(s["g"]).max()
    want = np.einsum("bi,bij->bj", s["g"], gen.inverse_dynamics_gradient(s["q"], s["qd"], s["qdd"], s["f_ext"]))
    got = gen.inverse_dynamics_vjp(s["q"], s["qd"], s2["g"], s["qdd"], s["f_ext"])
    assert (np.linalg.norm(got - want, axis=1) / np.linalg.norm(want, axis=1)).max() > 10 * VJP_RTOL


def test_a_wrong_gradient_fails_the_central_difference_check(pair):
    """the comparison can fail: the FD gradient's q block taken as the RNEA gradient's is caught"""
    case, gen, ref = pair
    gen = gen if gen is not None else ref
    s = make_states(gen, "random", 1, seed=2)
    q, qd, qdd = s["q"][0], s["qd"][0], s["qdd"][0]
    cd = central_gradient(gen, lambda Q, V, A: gen.inverse_dynamics(Q, V, A), q, qd, qdd)
    wrong = gen.inverse_dynamics_gradient(q, qd, qdd).copy()
    wrong[:, :gen.nv] *= 1.001
    assert rel(wrong, cd) > 1e2 * CD_RTOL


# ---- API ----
@pytest.fixture(scope="module")
def iiwa():
    case = case_by_id("iiwa")
    return grid_rbd.register_robot("iiwa_deriv_api", urdf_path=case_path(case, synthetic_dir()), dtype="float64",
                                   verbose=False)


def test_aliases_shapes_and_one_state(iiwa):
    h = iiwa
    s = make_states(h, "random", 5, seed=1)
    g = h.inverse_dynamics_gradient(s["q"], s["qd"], s["qdd"])
    assert g.shape == (5, h.nv, 2 * h.nv) and g.dtype == np.float64
    np.testing.assert_array_equal(h.rnea_grad(s["q"], s["qd"], s["qdd"]), g)
    f = h.forward_dynamics_gradient(s["q"], s["qd"], s["u"])
    np.testing.assert_array_equal(h.forward_dynamics_grad(s["q"], s["qd"], s["u"]), f)
    np.testing.assert_array_equal(h.aba_gradient(s["q"], s["qd"], s["u"]), f)
    # one state without the batch axis: the batched row, bitwise
    np.testing.assert_array_equal(h.inverse_dynamics_gradient(s["q"][2], s["qd"][2], s["qdd"][2]), g[2])
    np.testing.assert_array_equal(h.forward_dynamics_gradient(s["q"][2], s["qd"][2], s["u"][2]), f[2])
    # out= of the output's shape is filled and returned
    out = np.empty((5, h.nv, 2 * h.nv))
    assert h.inverse_dynamics_gradient(s["q"], s["qd"], s["qdd"], out=out) is out
    np.testing.assert_array_equal(out, g)


def test_flat_out_buffer_gives_a_view(iiwa):
    """the specification's out= for a gradient: the flat (B, 2 nv^2) block (pinned_empty's too); the method returns a
    (B, nv, 2nv) view of it"""
    h = iiwa
    s = make_states(h, "random", 4, seed=8)
    want = h.inverse_dynamics_gradient(s["q"], s["qd"], s["qdd"])
    for flat in (np.empty((4, 2 * h.nv ** 2)), h.pinned_empty((4, 2 * h.nv ** 2))):
        got = h.inverse_dynamics_gradient(s["q"], s["qd"], s["qdd"], out=flat)
        assert got.shape == (4, h.nv, 2 * h.nv) and np.shares_memory(got, flat)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(flat.reshape(4, h.nv, 2 * h.nv), want)
    one = np.empty(2 * h.nv ** 2)
    got = h.forward_dynamics_gradient(s["q"][1], s["qd"][1], s["u"][1], out=one)
    assert got.shape == (h.nv, 2 * h.nv) and np.shares_memory(got, one)
    np.testing.assert_array_equal(got, h.forward_dynamics_gradient(s["q"], s["qd"], s["u"])[1])
    with pytest.raises(ValueError):
        h.inverse_dynamics_gradient(s["q"], s["qd"], out=np.empty((4, 2 * h.nv ** 2 - 1)))


def test_vjp_rows_shapes_aliases_and_one_state(iiwa):
    """the VJP rows: (B, 2 nv), (B, 3 nv), (B, nv); their aliases; one state without the batch axis; out=; the
    cotangent's shape named in the error"""
    h = iiwa
    s = make_states(h, "random", 4, seed=6)
    q, qd, qdd, u, g, gp = s["q"], s["qd"], s["qdd"], s["u"], s["g"], s["g_pose"]
    r = h.inverse_dynamics_vjp(q, qd, g, qdd)
    f = h.forward_dynamics_vjp(q, qd, u, g)
    e = h.end_effector_pose_vjp(q, gp)
    assert r.shape == (4, 2 * h.nv) and f.shape == (4, 3 * h.nv) and e.shape == (4, h.nv)
    np.testing.assert_array_equal(h.rnea_vjp(q, qd, g, qdd), r)
    np.testing.assert_array_equal(h.fd_vjp(q, qd, u, g), f)
    np.testing.assert_array_equal(h.aba_vjp(q, qd, u, g), f)
    np.testing.assert_array_equal(h.ee_pose_vjp(q, gp), e)
    np.testing.assert_array_equal(h.inverse_dynamics_vjp(q[1], qd[1], g[1], qdd[1]), r[1])
    np.testing.assert_array_equal(h.forward_dynamics_vjp(q[1], qd[1], u[1], cotangent=g[1]), f[1])
    out = np.empty((4, 3 * h.nv))
    assert h.forward_dynamics_vjp(q, qd, u, g, out=out) is out
    np.testing.assert_array_equal(out, f)
    with pytest.raises(ValueError, match=r"cotangent must have shape \(B, 7\)"):
        h.inverse_dynamics_vjp(q, qd, g[:, :6])
    with pytest.raises(TypeError, match="cotangent"):
        h.inverse_dynamics_vjp(q, qd)


def test_vjps_of_a_linear_combination(iiwa):
    """a VJP is linear in its cotangent: vjp(a g1 + b g2) = a vjp(g1) + b vjp(g2), and the u block of the FD VJP is
    M^-1 g"""
    h = iiwa
    s = make_states(h, "high_acceleration", 3, seed=12)
    q, qd, qdd, u = s["q"], s["qd"], s["qdd"], s["u"]
    g1, g2 = s["g"], np.roll(s["g"], 1, axis=1)
    for fn in (lambda g: h.inverse_dynamics_vjp(q, qd, g, qdd), lambda g: h.forward_dynamics_vjp(q, qd, u, g)):
        assert rel(fn(2 * g1 - 3 * g2), 2 * fn(g1) - 3 * fn(g2)) <= 1e-13
    np.testing.assert_allclose(h.forward_dynamics_vjp(q, qd, u, g1)[:, 2 * h.nv:],
                               np.einsum("bij,bj->bi", h.minv(q), g1), rtol=1e-12, atol=1e-12)


def test_dqdd_du_is_minv(iiwa):
    """forward dynamics is linear in u with slope M^-1: a finite difference in u equals minv exactly enough"""
    h = iiwa
    s = make_states(h, "random", 2, seed=4)
    q, qd, u = s["q"][0], s["qd"][0], s["u"][0]
    cols = [(h.forward_dynamics(q, qd, u + EPS * e) - h.forward_dynamics(q, qd, u - EPS * e)) / (2 * EPS)
            for e in np.eye(h.nv)]
    assert rel(np.array(cols).T, h.minv(q)) <= 1e-7


def test_wrong_shapes_name_the_expected_shape(iiwa):
    h = iiwa
    s = make_states(h, "random", 3, seed=1)
    with pytest.raises(ValueError, match=r"qd must have shape \(B, 7\)"):
        h.inverse_dynamics_gradient(s["q"], s["qd"][:, :6])
    with pytest.raises(ValueError, match=r"7, 14"):
        h.inverse_dynamics_gradient(s["q"], s["qd"], out=np.empty((3, 7, 7)))


# ---- end-effector pose gradient ----
def wrap(x):
    """an angle difference into (-pi, pi]"""
    return (x + np.pi) % (2 * np.pi) - np.pi


def pose_central_gradient(h, q):
    """d[xyz, rpy]/dq by central differences along the local tangent (angle differences wrapped)"""
    nv = h.nv
    qs = [integrate(h, q, s * EPS * e) for e in np.eye(nv) for s in (1, -1)]
    y = h.end_effector_pose(np.array(qs)).reshape(2 * nv, -1, 6)
    d = y[0::2] - y[1::2]
    d[..., 3:] = wrap(d[..., 3:])
    return (d / (2 * EPS)).reshape(nv, -1).T   # (6 nee, nv)


@pytest.mark.parametrize("cid", ["iiwa", "go2_ff", "joints_ff", "h1_2_ff", "talos_ff"])
def test_ee_pose_gradient_matches_central_differences(cid):
    case = case_by_id(cid)
    path = case_path(case, synthetic_dir())
    kw = dict(urdf_path=path, floating_base=case.floating_base, dtype="float64", verbose=False)
    # the generated side: the session's library of the case (talos_ff is left to the reference: robot_cases.CASES)
    handles = [grid_rbd.register_robot(cid + "_eeg", **kw)] if case.generated else []
    for h in handles + [grid_rbd.register_robot(cid + "_eeg_ref", codegen=False, **kw)]:
        s = make_states(h, "random", 4, seed=17)
        g = h.end_effector_pose_gradient(s["q"])
        assert g.shape == (4, 6 * h.num_ees, h.nv)
        for b in range(4):
            pose = h.end_effector_pose(s["q"][b]).reshape(-1, 6)
            if np.any(np.abs(np.abs(pose[:, 4]) - np.pi / 2) < 1e-2):
                continue  # near the rpy singularity the coordinate derivative is huge (documented)
            cd = pose_central_gradient(h, s["q"][b])
            e = rel(g[b], cd)
            assert e <= CD_RTOL, f"{cid} {h.provider} ee_pose_grad state {b}: {e:.2e}"


def test_ee_pose_gradient_at_the_rpy_singularity():
    """at pitch = +-pi/2 roll and yaw are not separately defined: their rows grow as 1 / cos(pitch) for a turn about
    a world axis other than the pitch axis (1e16 at the rounded pitch of pi/2, inf where it is exact), while a turn
    about the pitch axis and the xyz rows stay finite and exact"""
    urdf = """<?xml version="1.0"?>
<robot name="pitch"><link name="base"/>
  <joint name="jx" type="revolute"><parent link="base"/><child link="mid"/><axis xyz="1 0 0"/>
    <limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <link name="mid"><inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>
  <joint name="jy" type="revolute"><parent link="mid"/><child link="tip"/><origin xyz="0 0 0.5"/><axis xyz="0 1 0"/>
    <limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <link name="tip"><inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>
</robot>"""
    for codegen in (True, False):
        h = grid_rbd.register_robot(f"pitch_eeg_{codegen}", urdf_string=urdf, dtype="float64", codegen=codegen,
                                    verbose=False, **({"algorithm_list": ["ee_pose_grad"]} if codegen else {}))
        g = h.end_effector_pose_gradient(np.array([[0.0, np.pi / 2]]))[0]
        assert np.all(np.isfinite(g[:3]))
        assert not np.all(np.abs(g[3:, 0]) < 1e12)          # the turn about world x: unbounded roll and yaw rates
        np.testing.assert_allclose(g[3:, 1], [0, 1, 0], atol=1e-12)  # the turn about the pitch axis
        g = h.end_effector_pose_gradient(np.array([[0.0, 0.3]]))[0]
        # a turn about world x seen in R = Rz(y) Ry(p) Rx(r) at p = 0.3: dr = 1 / cos p, dy = tan p
        np.testing.assert_allclose(g[3:], [[1 / np.cos(0.3), 0], [0, 1], [np.tan(0.3), 0]], atol=1e-12)


@pytest.mark.parametrize("cid", ["go2_ff", "joints_ff"])
def test_ee_pose_gradient_matches_pinocchio_central_differences(cid):
    """the issue's oracle: central differences of Pinocchio's frame pose along pin.integrate (its own tangent)"""
    pin = pytest.importorskip("pinocchio")
    from robot_cases import PinMap
    case = case_by_id(cid)
    path = case_path(case, synthetic_dir())
    h = grid_rbd.register_robot(cid + "_eeg_pin", urdf_path=path, floating_base=case.floating_base, dtype="float64",
                                verbose=False)
    P = PinMap(h, path, case.floating_base)
    s = make_states(h, "random", 3, seed=5)
    g = h.end_effector_pose_gradient(s["q"])
    fids = [P.frame_id(n) for n in h.ee_names]

    def pose(pq):
        pin.framesForwardKinematics(P.model, P.data, pq)
        return np.concatenate([np.concatenate([P.data.oMf[f].translation, pin.rpy.matrixToRpy(P.data.oMf[f].rotation)])
                               for f in fids])

    for b in range(3):
        pq = P.q(s["q"][b])
        cols = []
        for k in range(h.nv):
            dv = P.v(EPS * np.eye(h.nv)[k])    # our tangent column k in Pinocchio's order
            d = pose(pin.integrate(P.model, pq, dv)) - pose(pin.integrate(P.model, pq, -dv))
            d = d.reshape(-1, 6)
            d[:, 3:] = wrap(d[:, 3:])
            cols.append(d.reshape(-1) / (2 * EPS))
        assert rel(g[b], np.array(cols).T) <= CD_RTOL, cid


@pytest.mark.parametrize("cid", ["iiwa", "joints_ff"])
def test_rolled_gradients_equal_the_reference(cid):
    """the rolled schedule (forced) of all three gradients and their VJPs against the float64 reference, to 1e-12 per
    block (the
    coupled mimic robots' rolled gradients run in the CUDA emulation's mimic_ff-rolled configuration against the C
    target, and under AUTO on h1_2_ff, whose gradient rolls)"""
    case = case_by_id(cid)
    kw = dict(urdf_path=case_path(case, synthetic_dir()), floating_base=case.floating_base, dtype="float64",
              verbose=False)
    # the session cache: test_rolled's rolled library of the same robot (one build for both)
    r = grid_rbd.register_robot(cid + "_grad_rolled", codegen_schedule="rolled", **kw)
    ref = grid_rbd.register_robot(cid + "_grad_rolled_ref", codegen=False, **kw)
    s = make_states(ref, "high_velocity", 5, seed=9)
    for name, args in (("inverse_dynamics_gradient", (s["q"], s["qd"], s["qdd"], s["f_ext"])),
                       ("forward_dynamics_gradient", (s["q"], s["qd"], s["u"], s["f_ext"])),
                       ("end_effector_pose_gradient", (s["q"],)),
                       ("inverse_dynamics_vjp", (s["q"], s["qd"], s["g"], s["qdd"], s["f_ext"])),
                       ("forward_dynamics_vjp", (s["q"], s["qd"], s["u"], s["g"], s["f_ext"])),
                       ("end_effector_pose_vjp", (s["q"], s["g_pose"]))):
        a, b = getattr(r, name)(*args), getattr(ref, name)(*args)
        a, b = a.reshape(len(a), -1), b.reshape(len(b), -1)
        err = np.linalg.norm(a - b, axis=1) / np.maximum(np.linalg.norm(b, axis=1), 1e-6)
        assert err.max() <= 1e-12, f"{cid} rolled {name}: {err.max():.2e}"
