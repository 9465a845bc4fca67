"""q_pullback (the cotangent of q of a cotangent of the local tangent) against central differences over every q
component, through the float64 reference's inverse dynamics and its gradient: for s = c . tau(q), d s / d q (each
component of q, a quaternion off the unit sphere too) equals q_pullback(q, c^T dtau/dq). Every joint type (joints_ff:
free, planar, spherical, revolute, prismatic, continuous), a floating quadruped and coupled mimic joints (h1_2); the
generated library in float64 and float32, and the torch backward that calls it."""

import numpy as np
import pytest

import grid_rbd
from robot_cases import CASES, make_states, robot_path

CASE_IDS = ("joints_ff", "go2_ff", "h1_2_ff")
H = 1e-6
ROWS = ["q_pullback", "inverse_dynamics", "inverse_dynamics_gradient", "inverse_dynamics_vjp"]


def _common(case):
    return dict(urdf_path=str(robot_path(case)), floating_base=case.floating_base, ignore_mimic=case.ignore_mimic,
                verbose=False)


def _handles(case, cache):
    ref = grid_rbd.register_robot(f"{case.id}_qp_ref", dtype="float64", codegen=False, **_common(case))
    gen = {dt: grid_rbd.register_robot(f"{case.id}_qp_{dt}", dtype=dt, cache_dir=cache, algorithm_list=ROWS,
                                       **_common(case))
           for dt in ("float64", "float32")}
    return ref, gen


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("qp")


@pytest.mark.parametrize("case", [c for c in CASES if c.id in CASE_IDS], ids=lambda c: c.id)
def test_q_pullback_matches_central_differences(case, cache):
    ref, gen = _handles(case, cache)
    s = make_states(ref, "nonunit_quaternion" if case.floating_base else "random", 4, seed=11)
    q, qd, qdd, c = s["q"], s["qd"], s["qdd"], s["g"]
    nv = ref.nv
    # the tangent cotangent c^T dtau/dq and its pullback, by the reference and by the generated libraries
    ct = np.einsum("bi,bij->bj", c, ref.inverse_dynamics_gradient(q, qd, qdd)[:, :, :nv])
    want = np.zeros_like(q)
    for k in range(ref.nq):
        e = np.zeros(ref.nq)
        e[k] = H
        tp, tm = ref.inverse_dynamics(q + e, qd, qdd), ref.inverse_dynamics(q - e, qd, qdd)
        want[:, k] = np.einsum("bi,bi->b", c, tp - tm) / (2 * H)
    scale = np.abs(want).max(axis=1, keepdims=True)
    for name, h in (("reference", ref), ("float64", gen["float64"])):
        got = h.q_pullback(q, ct)
        err = (np.abs(got - want) / scale).max()
        assert err < 1e-6, f"{case.id} {name}: {err:.2e} of the largest entry"
    got32 = gen["float32"].q_pullback(q.astype(np.float32), ct.astype(np.float32))
    assert got32.dtype == np.float32
    err32 = (np.abs(got32 - want) / scale).max()
    assert err32 < 1e-5, f"{case.id} float32: {err32:.2e} of the largest entry"
    # the free flyer's quaternion block is exercised (tau does not depend on the base's position: that block is 0)
    if case.floating_base:
        assert np.abs(want[:, 3:7]).min() > 1e-3 * scale.min()


@pytest.mark.parametrize("case", [c for c in CASES if c.id in ("joints_ff",)], ids=lambda c: c.id)
def test_torch_backward_uses_the_row(case, cache):
    """the torch backward of inverse dynamics in q, through the row (eager) and through QMap's operations (create_graph:
    differentiable), equal each other and the central differences above"""
    torch = pytest.importorskip("torch")
    ref, _ = _handles(case, cache)
    t = grid_rbd.register_robot(f"{case.id}_qp_float64", dtype="float64", cache_dir=cache, algorithm_list=ROWS,
                                backend="torch", **_common(case))
    assert t._q_row is not None
    s = make_states(ref, "nonunit_quaternion", 3, seed=5)
    q = torch.tensor(s["q"], requires_grad=True)
    qd, c = torch.tensor(s["qd"]), torch.tensor(s["g"])
    (g_row,) = torch.autograd.grad((t.inverse_dynamics(q, qd) * c).sum(), q)
    (g_ops,) = torch.autograd.grad((t.inverse_dynamics(q, qd) * c).sum(), q, create_graph=True)
    assert torch.allclose(g_row, g_ops.detach(), rtol=1e-12, atol=1e-12)
    want = np.zeros_like(s["q"])
    for k in range(ref.nq):
        e = np.zeros(ref.nq)
        e[k] = H
        d = ref.inverse_dynamics(s["q"] + e, s["qd"]) - ref.inverse_dynamics(s["q"] - e, s["qd"])
        want[:, k] = np.einsum("bi,bi->b", s["g"], d) / (2 * H)
    assert np.abs(g_row.numpy() - want).max() <= 1e-6 * np.abs(want).max()
