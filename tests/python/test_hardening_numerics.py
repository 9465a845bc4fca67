"""Hardening of the numerics (issue 8, item 8): a floating base's quaternion of any finite, nonzero scale gives the
results at the normalised quaternion, on the generated path (both schedules, both dtypes) and the reference."""

from pathlib import Path

import numpy as np
import pytest

import grid_rbd

ROBOTS = Path(__file__).resolve().parents[2].parent / "shared" / "robots"
GO2 = ROBOTS / "go2.urdf"
pytestmark = pytest.mark.skipif(not GO2.is_file(), reason="../shared/robots not present")

SCALES = {"float64": [1e-300, 1e-154, 1e-20, 1e20, 1e155, 1e300], "float32": [1e-30, 1e-20, 1e20, 1e30]}
TOL = {"float64": 1e-12, "float32": 2e-5}


@pytest.fixture(scope="module")
def handles():
    # the session cache: the "auto" libraries are the robot case go2_ff's (float64 and float32, every method); the
    # rolled one builds the three methods compared below
    kw = dict(urdf_path=GO2, floating_base=True, device="cpu", verbose=False)
    hs = {("ref", "float64"): grid_rbd.register_robot("q_ref", dtype="float64", codegen=False, **kw)}
    for dt in ("float64", "float32"):
        hs[("auto", dt)] = grid_rbd.register_robot(f"q_{dt}", dtype=dt, **kw)
    hs[("rolled", "float64")] = grid_rbd.register_robot("q_rolled", dtype="float64", codegen_schedule="rolled",
                                                        algorithm_list=["rnea", "crba", "fk"], **kw)
    return hs


def states(h, n=6, seed=3):
    rng = np.random.default_rng(seed)
    q = rng.uniform(-1, 1, (n, h.nq))
    q[:, 3:7] /= np.linalg.norm(q[:, 3:7], axis=1, keepdims=True)
    return q, rng.uniform(-2, 2, (n, h.nv)), rng.uniform(-2, 2, (n, h.nv))


@pytest.mark.parametrize("kind", [("ref", "float64"), ("auto", "float64"), ("rolled", "float64"), ("auto", "float32")])
def test_quaternion_scale_does_not_matter(handles, kind):
    h, ref = handles[kind], handles[("ref", "float64")]
    dt = kind[1]
    q, v, a = states(h)
    want = {"rnea": ref.inverse_dynamics(q, v, a), "crba": ref.crba(q), "fk": ref.forward_kinematics(q)}
    for s in SCALES[dt]:
        qs = q.copy()
        qs[:, 3:7] *= s
        args = [x.astype(dt) for x in (qs, v, a)]
        got = {"rnea": h.inverse_dynamics(*args), "crba": h.crba(args[0]), "fk": h.forward_kinematics(args[0])}
        for k in want:
            err = np.abs(got[k] - want[k]).max() / np.abs(want[k]).max()
            assert err <= TOL[dt], (kind, s, k, err)


@pytest.mark.parametrize("kind", [("ref", "float64"), ("auto", "float64"), ("auto", "float32")])
def test_degenerate_quaternions_give_nan(handles, kind):
    # zero, infinite and NaN quaternions have no rotation: the results are NaN, never finite numbers
    h = handles[kind]
    q, v, a = states(h, n=3)
    q[0, 3:7] = 0.0
    q[1, 3] = np.inf
    q[2, 5] = np.nan
    tau = h.inverse_dynamics(q.astype(kind[1]), v.astype(kind[1]), a.astype(kind[1]))
    assert np.isnan(tau).any(axis=1).all(), tau


IIWA = ROBOTS / "iiwa.urdf"


@pytest.mark.parametrize("codegen", [True, False])
def test_nan_reaches_exactly_what_depends_on_it(codegen):
    """What "NaN inputs give NaN outputs" means (docs/python.md): a NaN in one input coordinate makes NaN every
    output entry of its state that depends on that coordinate; entries that do not depend on it may stay finite
    (the generated code drops terms that are structurally zero, the reference multiplies them by 0); other states
    are untouched"""
    # generated: the session's iiwa library (the robot case iiwa, a cache hit)
    h = grid_rbd.register_robot("nan_iiwa", urdf_path=IIWA, dtype="float64", device="cpu", codegen=codegen,
                                verbose=False)
    rng = np.random.default_rng(5)
    q, v, a = (rng.uniform(-1, 1, (3, 7)) for _ in range(3))
    clean = h.inverse_dynamics(q, v, a)
    for arr in range(3):
        for k in range(7):
            ins = [x.copy() for x in (q, v, a)]
            # which torques depend on coordinate k of this input: they move when it moves
            moved = [x.copy() for x in ins]
            moved[arr][1, k] += 0.37
            depends = h.inverse_dynamics(*moved)[1] != clean[1]
            ins[arr][1, k] = np.nan
            tau = h.inverse_dynamics(*ins)
            assert np.isnan(tau[1][depends]).all(), (arr, k, tau[1], depends)
            np.testing.assert_array_equal(tau[[0, 2]], clean[[0, 2]])
