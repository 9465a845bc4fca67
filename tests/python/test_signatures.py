"""The signature table from Python: _core.signatures() drives the handle methods (names, aliases, argument order,
optional inputs, output shapes), the generated library exports the same rows with this robot's shapes, and the
Runner's checks and messages come from the row."""

import inspect

import numpy as np
import pytest

import grid_rbd
from grid_rbd import _core, _signatures
from robot_cases import BUNDLED_IIWA, make_states, row_inputs, row_targets

ROWS = _core.signatures()


@pytest.fixture(scope="module")
def handles():
    # every row, the opt-in second-order ones too (a default library leaves them out: built only when named)
    gen = grid_rbd.register_robot("sig_iiwa_ff", urdf_path=BUNDLED_IIWA, floating_base=True, dtype="float64",
                                  device="cpu", verbose=False, algorithm_list=list(_core.ALGORITHMS))
    ref = grid_rbd.register_robot("sig_iiwa_ff_ref", urdf_path=BUNDLED_IIWA, floating_base=True, dtype="float64",
                                  codegen=False)
    return gen, ref


def test_table_shape():
    assert len(ROWS) == _core.ALGO_COUNT and tuple(r["name"] for r in ROWS) == _core.ALGORITHMS
    for i, r in enumerate(ROWS):
        assert r["id"] == i == getattr(_core, "ALGO_" + r["name"].upper())
        assert r["inputs"][0]["name"] == "q" and not r["inputs"][0]["optional"] and 1 <= len(r["outputs"]) <= 4
        assert r["gpu_map"] == "thread"
        for a in r["inputs"] + r["outputs"]:
            assert len(a["shape"]) == len(a["dims"]) and a["absent"] == ("zeros" if a["optional"] else None)
    by = {r["name"]: r for r in ROWS}
    assert [a["name"] for a in by["rnea"]["inputs"]] == ["q", "qd", "qdd", "f_ext"]
    assert [a["optional"] for a in by["rnea"]["inputs"]] == [False, False, True, True]
    assert by["fk"]["outputs"][0]["shape"] == ("nb", 4, 4) and by["crba"]["outputs"][0]["shape"] == ("nv", "nv")
    assert [(a["name"], a["shape"]) for a in by["com"]["outputs"]] == [("com", (3,)), ("J", (3, "nv"))]
    assert by["ee_pose"]["outputs"][0]["shape"] == ("6*nee",) and by["frame_jacobian"]["outputs"][0]["shape"] == (6, "nv")
    assert [(a["name"], a["lo"], a["hi"]) for a in by["frame_jacobian"]["attrs"]] == [("frame", 0, "nframes"),
                                                                                      ("reference_frame", 0, 3)]
    # the derivative links: each method to the row of its gradient, which takes the same inputs
    links = {r["name"]: ROWS[r["derivative"]]["name"] for r in ROWS if r["derivative"] >= 0}
    assert links == {"rnea": "rnea_grad", "fd": "fd_grad", "aba": "fd_grad", "ee_pose": "ee_pose_grad",
                     "ee_pose_runtime": "ee_pose_runtime_grad"}
    for name, grad in links.items():
        assert [a["name"] for a in by[name]["inputs"]] == [a["name"] for a in by[grad]["inputs"]]
    # and to its vector-Jacobian product, which takes the method's inputs plus a cotangent of its output (required,
    # ahead of the optional ones and of a per-call target, which users pass as optional parameters) and returns one
    # cotangent per differentiable input (the specification's)
    vjps = {r["name"]: ROWS[r["vjp"]]["name"] for r in ROWS if r["vjp"] >= 0}
    assert vjps == {"rnea": "rnea_vjp", "fd": "fd_vjp", "aba": "fd_vjp", "ee_pose": "ee_pose_vjp",
                    "ee_pose_runtime": "ee_pose_runtime_vjp"}
    widths = {"rnea_vjp": ("nv", 2), "fd_vjp": ("nv", 3), "ee_pose_vjp": ("nv", 1), "ee_pose_runtime_vjp": ("nv", 1)}
    for name, vjp in vjps.items():
        ins = [a["name"] for a in by[vjp]["inputs"]]
        assert sorted(ins) == sorted([a["name"] for a in by[name]["inputs"]] + ["cotangent"]), vjp
        ct = by[vjp]["inputs"][ins.index("cotangent")]
        assert ct["dims"] == by[name]["outputs"][0]["dims"] and not ct["optional"]
        assert all(a["optional"] or a["name"] == "target" for a in by[vjp]["inputs"][ins.index("cotangent") + 1:])
        assert by[vjp]["outputs"][0]["dims"] == (widths[vjp],), vjp
    assert by["rnea_grad"]["outputs"][0]["shape"] == ("nv", "2*nv")
    assert by["ee_pose_grad"]["outputs"][0]["shape"] == ("6*nee", "nv")


def test_every_row_is_a_handle_method_with_the_rows_arguments():
    H = grid_rbd.RobotHandle
    for r in ROWS:
        fn = getattr(H, r["py_name"])
        for alias in r["aliases"]:
            assert getattr(H, alias) is fn, (r["name"], alias)
        params = list(inspect.signature(fn).parameters.values())[1:]   # without self
        names = [p.name for p in params]
        # a per-call target input is the two parameters users give it
        want = [n for a in r["inputs"] for n in (("ee_joint_names", "ee_offsets") if a["name"] == "target" else
                                                 (a["name"],))]
        optional = [o for a in r["inputs"] for o in ((True, True) if a["name"] == "target" else (a["optional"],))]
        assert names[:len(want)] == want, r["name"]
        for p, opt in zip(params, optional):
            assert (p.default is None) if opt else (p.default is inspect.Parameter.empty), (r["name"], p)
        assert names[-1] == "out" and fn.__doc__


class _Recorder:
    """a runner whose call records what a handle method sends"""

    def __init__(self, dtype):
        self.calls = []
        self.dtype = dtype

    def call(self, algo, inputs, out, attrs):
        self.calls.append((algo, inputs, out, attrs))
        return "result"


def test_handle_methods_are_thin_calls_of_their_row(handles):
    gen, _ = handles
    rec = _Recorder(gen.dtype)
    h = grid_rbd.RobotHandle("sig_rec", gen._model, rec, gen.options)
    for r in ROWS:
        if any(a["name"] == "target" for a in r["inputs"]):
            continue  # (a per-call target's rows fan out over the targets: test_output_shapes_follow_the_table)
        sentinels = tuple(object() for _ in r["inputs"])
        out = object()
        extra = {"target": 0} if r["attrs"] else {}
        assert getattr(h, r["py_name"])(*sentinels, out=out, **extra) == "result"
        algo, inputs, got_out, attrs = rec.calls[-1]
        assert algo == r["id"] and got_out is out and len(attrs) == len(r["attrs"]), r["name"]
        assert len(inputs) == len(r["inputs"]) and all(x is y for x, y in zip(inputs, sentinels)), r["name"]


def test_output_shapes_follow_the_table(handles):
    gen, ref = handles
    sizes = _signatures.sizes_of(gen._model)
    s = make_states(gen, "random", 3)
    by_name = {"q": s["q"], "qd": s["qd"], "qdd": s["qdd"], "u": s["u"], "f_ext": s["f_ext"]}
    for r in ROWS:
        row = _signatures.concrete(r, sizes)
        # a cotangent has the shape of the method's output (a VJP row's input of that name)
        args = [by_name[name] if name in by_name else np.random.default_rng(1).normal(size=(3,) + shape)
                for name, shape, *_ in row["inputs"]]
        fan = None  # a per-call target's rows: n targets stacked along the first output axis (a VJP's summed)
        if any(name == "target" for name, *_ in row["inputs"]):
            args, fan = row_inputs(gen, r, 3), len(row_targets(gen)[0])
        for h in (gen, ref):
            y = getattr(h, r["py_name"])(*args)
            ys = y if len(row["outputs"]) > 1 else (y,)  # several outputs: a tuple
            assert isinstance(ys, tuple) and len(ys) == len(row["outputs"]), r["name"]
            for yk, (_, shape) in zip(ys, row["outputs"]):
                if fan and not r["name"].endswith("_vjp"):
                    shape = (fan * shape[0],) + shape[1:]
                assert yk.shape == (3,) + shape, (r["name"], yk.shape)
        # an absent optional input behaves as zeros
        for k, (name, shape, optional, _, _) in enumerate(row["inputs"]):
            if optional:
                zeros = list(args)
                zeros[k] = np.zeros((3,) + shape)
                absent = list(args)
                absent[k] = None
                np.testing.assert_array_equal(getattr(gen, r["py_name"])(*absent), getattr(gen, r["py_name"])(*zeros))


def test_the_library_exports_the_tables_rows_for_this_robot(handles):
    gen, _ = handles
    lib = gen._library
    assert lib.meta["abi_version"] == _core.ABI_VERSION == 2 and lib.meta["methods"] == _core.ALGORITHMS
    sizes = _signatures.sizes_of(gen._model)
    source = open(gen.library_path[:-len("robot.so")] + "robot.c").read()
    for have, r in zip(lib.methods, ROWS):
        want = _signatures.concrete(r, sizes)
        assert have["name"] == want["name"]
        assert have["inputs"] == tuple((n, shape, opt) for n, shape, opt, _, _ in want["inputs"])
        assert have["outputs"] == tuple((n, shape, False) for n, shape in want["outputs"])
        assert have["attrs"] == tuple((n, lo, hi) for n, lo, hi, _ in want["attrs"])
        # unrolled per-state code takes no workspace; rolled code (under auto, the floating iiwa's RNEA gradient and
        # second-order derivatives), the FD composites (their M^-1 and dtau, and their callees' workspace) and the
        # scalar composites of the end-effector pose and its Hessian (the poses and a Jacobian), the operational-space inertia (J,
        # M^-1) and the second-order FD (its callees' tensors) take one; the targets chosen per call keep theirs in
        # local arrays (their callees here unrolled)
        rolled = f"/* {r['name']}, rolled schedule" in source
        composite = r["name"] in ("ee_pose_grad", "ee_pose_vjp", "fd_grad", "fd_vjp", "osc_inertia", "fdsva_so",
                                  "ee_pose_hessian")
        assert (have["work_bytes"] > 0) == (rolled or composite) and have["gpu_map"] == 0, r["name"]
    assert "/* rnea, rolled schedule" not in source and "/* rnea_grad, rolled schedule" in source


def test_runner_checks_come_from_the_row(handles):
    gen, _ = handles
    q = make_states(gen, "random", 2)["q"]
    run = gen._runner.call
    with pytest.raises(TypeError, match="qd is required"):
        run(_core.ALGO_NLE, (q,), None, ())
    with pytest.raises(TypeError, match=r"crba takes no input at position 1 \(its inputs: q\)"):
        run(_core.ALGO_CRBA, (q, q), None, ())
    with pytest.raises(TypeError, match="frame_jacobian takes 2 attributes; 0 given"):
        run(_core.ALGO_FRAME_JACOBIAN, (q,), None, ())
    with pytest.raises(ValueError, match=f"frame id {len(gen.frame_names)} is out of range: the robot has "
                                         f"{len(gen.frame_names)} frames"):
        run(_core.ALGO_FRAME_JACOBIAN, (q,), None, (len(gen.frame_names), 0))
    with pytest.raises(ValueError, match=r"reference_frame id 3 is not WORLD \(0\), LOCAL \(1\) or LOCAL_WORLD_ALIGNED"):
        run(_core.ALGO_FRAME_JACOBIAN, (q,), None, (0, 3))
    with pytest.raises(TypeError, match="inputs must be a tuple"):
        run(_core.ALGO_CRBA, [q], None, ())
    # trailing optional inputs may be left out
    qd = make_states(gen, "random", 2)["qd"]
    np.testing.assert_array_equal(run(_core.ALGO_RNEA, (q, qd), None, ()), gen.nonlinear_effects(q, qd))


def test_a_row_without_a_hand_written_method_gets_a_generic_one(handles):
    """what a new row gets before anyone writes its method: the same call as the hand-written ones"""
    from grid_rbd.handle import _generic_method
    gen, _ = handles
    s = make_states(gen, "random", 4)
    by = {r["name"]: r for r in ROWS}
    rnea = _generic_method(dict(by["rnea"], py_name="rnea_generic"))
    jac = _generic_method(dict(by["frame_jacobian"], py_name="jac_generic"))
    assert [p for p in inspect.signature(rnea).parameters] == ["self", "q", "qd", "qdd", "f_ext", "out"]
    np.testing.assert_array_equal(rnea(gen, s["q"], s["qd"], f_ext=s["f_ext"]),
                                  gen.inverse_dynamics(s["q"], s["qd"], None, s["f_ext"]))
    # the frame attributes are target= and reference_frame= (names or ids), positional after the inputs too
    assert [p for p in inspect.signature(jac).parameters] == ["self", "q", "target", "reference_frame", "out"]
    np.testing.assert_array_equal(jac(gen, s["q"], target=3, reference_frame="WORLD"),
                                  gen.frame_jacobian(s["q"], 3, "WORLD"))
    np.testing.assert_array_equal(jac(gen, s["q"], gen.frame_names[3], "world"), gen.frame_jacobian(s["q"], 3, "WORLD"))
    np.testing.assert_array_equal(jac(gen, s["q"]), gen.frame_jacobian(s["q"], gen.ee_names[0], "LOCAL_WORLD_ALIGNED"))
    with pytest.raises(TypeError, match="unexpected keyword argument 'frame'"):
        jac(gen, s["q"], frame=3)
    with pytest.raises(TypeError, match="qd is required"):
        rnea(gen, s["q"])
    with pytest.raises(TypeError, match="unexpected keyword"):
        rnea(gen, s["q"], s["qd"], frame=1)
