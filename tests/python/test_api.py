"""The Python surface: shapes, aliases, options, error classes and messages, odd inputs (NaN, non-contiguous, B = 0)."""

import concurrent.futures

import numpy as np
import pytest

import grid_rbd
from grid_rbd import _core, _errors
from robot_cases import BUNDLED_IIWA, make_states

IIWA_NV = 7


@pytest.fixture(scope="module")
def iiwa():
    return grid_rbd.register_robot("api_iiwa", urdf_path=BUNDLED_IIWA)


@pytest.fixture(scope="module")
def iiwa_ff():
    # the methods of call_all (no float32 library of iiwa_ff is built for the robot cases: robot_cases.CASES)
    return grid_rbd.register_robot("api_iiwa_ff", urdf_path=BUNDLED_IIWA, floating_base=True,
                                   algorithm_list=list(CALL_ALL_METHODS))


CALL_ALL_METHODS = ("rnea", "nle", "gravity", "crba", "minv", "fd", "aba", "fk", "ee_pose", "frame_jacobian")


def call_all(h, s, out=None):
    """every method once: name -> (result, expected shape)"""
    B = len(s["q"])
    nv, nb, nee = h.nv, h.nb, h.num_ees
    return {
        "inverse_dynamics": (h.inverse_dynamics(s["q"], s["qd"], s["qdd"], f_ext=s["f_ext"]), (B, nv)),
        "rnea": (h.rnea(s["q"], s["qd"]), (B, nv)),
        "nonlinear_effects": (h.nonlinear_effects(s["q"], s["qd"]), (B, nv)),
        "generalized_gravity": (h.generalized_gravity(s["q"]), (B, nv)),
        "crba": (h.crba(s["q"]), (B, nv, nv)),
        "minv": (h.minv(s["q"]), (B, nv, nv)),
        "forward_dynamics": (h.forward_dynamics(s["q"], s["qd"], s["u"], f_ext=s["f_ext"]), (B, nv)),
        "fd": (h.fd(s["q"], s["qd"], s["u"]), (B, nv)),
        "aba": (h.aba(s["q"], s["qd"], s["u"], f_ext=s["f_ext"]), (B, nv)),
        "forward_kinematics": (h.forward_kinematics(s["q"]), (B, nb, 4, 4)),
        "end_effector_pose": (h.end_effector_pose(s["q"]), (B, 6 * nee)),
        "frame_jacobian": (h.frame_jacobian(s["q"]), (B, 6, nv)),
    }


# ---- sizes, names, aliases ----
def test_sizes_and_names(iiwa, iiwa_ff):
    assert (iiwa.nq, iiwa.nv, iiwa.nb) == (7, 7, 7)
    assert (iiwa_ff.nq, iiwa_ff.nv, iiwa_ff.nb) == (14, 13, 8)
    for h in (iiwa, iiwa_ff):
        assert (h.num_joints, h.num_vel, h.num_bodies) == (h.nq, h.nv, h.nb)
    assert iiwa.joint_names == tuple(f"iiwa_joint_{i}" for i in range(1, 8))
    assert iiwa_ff.joint_names[0] == "root_joint" and iiwa_ff.joint_names[1:] == iiwa.joint_names
    assert iiwa.frame_names[0] == "base" and "iiwa_link_7" in iiwa.frame_names
    assert iiwa.ee_names == ("iiwa_link_7",)
    assert iiwa.dtype == np.float32 and iiwa.name == "api_iiwa"
    assert iiwa.floating_base is False and iiwa_ff.floating_base is True
    assert iiwa.max_batch_size == 256 and iiwa.device == "cpu" and iiwa.backend == "numpy"
    r = repr(iiwa_ff)
    for part in ("api_iiwa_ff", "iiwa14", "nq=14", "nv=13", "nb=8", "float32", "'cpu'", "generated"):
        assert part in r


def test_aliases():
    H = grid_rbd.RobotHandle
    assert H.rnea is H.inverse_dynamics and H.fd is H.forward_dynamics
    assert H.num_joints is H.nq and H.num_vel is H.nv and H.num_bodies is H.nb


@pytest.mark.parametrize("floating", [False, True])
def test_output_shapes_and_dtypes(iiwa, iiwa_ff, floating):
    h = iiwa_ff if floating else iiwa
    for name, (y, shape) in call_all(h, make_states(h, "random", 5)).items():
        assert y.shape == shape, name
        assert y.dtype == np.float32 and y.flags.c_contiguous, name


def test_float64_handle_returns_float64():
    h = grid_rbd.register_robot("api_iiwa64", urdf_path=BUNDLED_IIWA, dtype=np.float64)
    assert h.dtype == np.float64
    for name, (y, _) in call_all(h, make_states(h, "random", 2)).items():
        assert y.dtype == np.float64, name


def test_get_robot(iiwa):
    assert grid_rbd.get_robot("api_iiwa") is iiwa
    with pytest.raises(KeyError, match="api_iiwa"):
        grid_rbd.get_robot("no_such_robot")


def test_register_from_string_and_bytes():
    text = BUNDLED_IIWA.read_text()
    a = grid_rbd.register_robot("api_str", urdf_string=text, dtype="float64")
    b = grid_rbd.register_robot("api_bytes", urdf_string=text.encode(), dtype="float64")
    q = make_states(a, "random", 3)["q"]
    np.testing.assert_array_equal(a.crba(q), b.crba(q))


def test_gravity_option():
    q = make_states(grid_rbd.get_robot("api_iiwa"), "random", 3)["q"]
    kw = dict(urdf_path=BUNDLED_IIWA, dtype="float64", algorithm_list=["generalized_gravity"])
    g1 = grid_rbd.register_robot("api_g1", **kw).generalized_gravity(q)
    g2 = grid_rbd.register_robot("api_g2", gravity=-19.62, **kw).generalized_gravity(q)
    g0 = grid_rbd.register_robot("api_g0", gravity=0.0, **kw).generalized_gravity(q)
    np.testing.assert_allclose(g2, 2 * g1, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(g0, 0.0)


def test_ee_joint_names_option():
    h = grid_rbd.register_robot("api_ee", urdf_path=BUNDLED_IIWA, ee_joint_names=["iiwa_joint_4", "iiwa_joint_7"],
                                algorithm_list=["end_effector_pose"])
    assert h.ee_names == ("iiwa_link_4", "iiwa_link_7")
    q = make_states(h, "random", 2)["q"]
    assert h.end_effector_pose(q).shape == (2, 12)
    with pytest.raises(ValueError, match="nope"):
        grid_rbd.register_robot("api_ee_bad", urdf_path=BUNDLED_IIWA, ee_joint_names=["nope"])


# ---- out= ----
def test_out_is_filled_and_returned(iiwa):
    s = make_states(iiwa, "random", 4)
    out = np.empty((4, 7, 7), dtype=np.float32)
    assert iiwa.crba(s["q"], out=out) is out
    np.testing.assert_array_equal(out, iiwa.crba(s["q"]))
    tau = np.empty((4, 7), dtype=np.float32)
    assert iiwa.inverse_dynamics(s["q"], s["qd"], out=tau) is tau
    J = np.empty((4, 6, 7), dtype=np.float32)
    assert iiwa.frame_jacobian(s["q"], "iiwa_link_5", "WORLD", out=J) is J


def test_several_outputs_are_a_tuple(iiwa):
    """com returns (com, J); out= is a tuple of arrays of those shapes, each filled and returned; one state without
    the batch axis gives one state's outputs; a wrong out= names the output and its expected shape"""
    s = make_states(iiwa, "random", 4)
    c, J = iiwa.com(s["q"])
    assert c.shape == (4, 3) and J.shape == (4, 3, 7) and c.dtype == J.dtype == np.float32
    outs = (np.empty((4, 3), dtype=np.float32), np.empty((4, 3, 7), dtype=np.float32))
    got = iiwa.com(s["q"], out=outs)
    assert got[0] is outs[0] and got[1] is outs[1]
    np.testing.assert_array_equal(outs[0], c)
    np.testing.assert_array_equal(outs[1], J)
    c1, J1 = iiwa.com(s["q"][2])
    assert c1.shape == (3,) and J1.shape == (3, 7)
    np.testing.assert_array_equal(J1, J[2])
    with pytest.raises(TypeError, match="out must be None, a tuple of 2 arrays or one array of their blocks for com"):
        iiwa.com(s["q"], out=[outs[0], outs[1]])
    # one array holding both outputs' blocks one after another: (4, 3 + 21), the results its views
    block = np.empty((4, 24), dtype=np.float32)
    bc, bJ = iiwa.com(s["q"], out=block)
    assert np.shares_memory(bc, block) and np.shares_memory(bJ, block)
    np.testing.assert_array_equal(bc, c)
    np.testing.assert_array_equal(bJ, J)
    np.testing.assert_array_equal(block.reshape(-1)[:12], c.reshape(-1))
    with pytest.raises(ValueError, match=r"out must be a tuple of 2 arrays, or one .* shape \(4, 24\)"):
        iiwa.com(s["q"], out=outs[1])
    with pytest.raises(ValueError, match=r"out\[1\] \(J\).*shape \(4, 3, 7\)"):
        iiwa.com(s["q"], out=(outs[0], np.empty((4, 3, 6), dtype=np.float32)))


@pytest.mark.parametrize("bad, why", [
    (np.empty((4, 7, 7), dtype=np.float64), "float64"),
    (np.empty((4, 7, 6), dtype=np.float32), r"\(4, 7, 6\)"),
    (np.empty((3, 7, 7), dtype=np.float32), r"\(3, 7, 7\)"),
    (np.empty((4, 7, 14), dtype=np.float32)[:, :, ::2], "non-contiguous"),
    ([[0.0] * 7] * 4, "list"),
])
def test_bad_out_is_refused(iiwa, bad, why):
    q = make_states(iiwa, "random", 4)["q"]
    with pytest.raises(ValueError, match=r"out must be a writable C-contiguous float32 array of shape \(4, 7, 7\)") as e:
        iiwa.crba(q, out=bad)
    assert e.match(why)


def test_read_only_out_is_refused(iiwa):
    out = np.empty((2, 7), dtype=np.float32)
    out.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        iiwa.generalized_gravity(np.zeros((2, 7)), out=out)


# ---- argument errors ----
def test_wrong_width_names_the_argument_and_expected_shape(iiwa, iiwa_ff):
    with pytest.raises(ValueError, match=r"q must have shape \(B, 7\) \(B states x nq=7 configuration width\); got \(4, 6\)"):
        iiwa.crba(np.zeros((4, 6)))
    with pytest.raises(ValueError, match=r"qd must have shape \(B, 13\) \(B states x nv=13 tangent width\); got \(4, 12\)"):
        iiwa_ff.nonlinear_effects(np.zeros((4, 14)), np.zeros((4, 12)))
    with pytest.raises(ValueError, match=r"u must have shape \(B, 7\)"):
        iiwa.aba(np.zeros((4, 7)), np.zeros((4, 7)), np.zeros((4, 8)))
    with pytest.raises(ValueError, match=r"qdd must have shape \(B, 7\)"):
        iiwa.inverse_dynamics(np.zeros((4, 7)), np.zeros((4, 7)), np.zeros((4, 3)))
    with pytest.raises(ValueError, match=r"f_ext must have shape \(B, 42\) \(B states x 6\*nb=42"):
        iiwa.inverse_dynamics(np.zeros((4, 7)), np.zeros((4, 7)), f_ext=np.zeros((4, 36)))


def test_nq_wide_velocity_on_floating_base_names_the_tangent_width(iiwa_ff):
    q = make_states(iiwa_ff, "random", 4)["q"]
    for call in (lambda v: iiwa_ff.inverse_dynamics(q, v),
                 lambda v: iiwa_ff.inverse_dynamics(q, np.zeros((4, 13)), v),
                 lambda v: iiwa_ff.forward_dynamics(q, np.zeros((4, 13)), v)):
        with pytest.raises(ValueError, match=r"\(B, 13\) \(B states x nv=13 tangent width\); got \(4, 14\).*not nq=14"):
            call(np.zeros((4, 14)))


@pytest.mark.parametrize("q", [np.zeros((2, 3, 7)), np.float32(1.0), np.zeros(6)], ids=["3d", "scalar", "1d-short"])
def test_wrong_rank(iiwa, q):
    """(a 1-D q of the state's width is one state: test_one_state_without_the_batch_axis)"""
    with pytest.raises(ValueError, match=r"q must have shape \(B, 7\)"):
        iiwa.generalized_gravity(q)


def test_batch_mismatch(iiwa):
    with pytest.raises(ValueError, match=r"qd must have shape \(4, 7\) to match the batch of q.*got \(5, 7\)"):
        iiwa.nonlinear_effects(np.zeros((4, 7)), np.zeros((5, 7)))
    with pytest.raises(ValueError, match=r"f_ext must have shape \(4, 42\)"):
        iiwa.aba(np.zeros((4, 7)), np.zeros((4, 7)), np.zeros((4, 7)), f_ext=np.zeros((3, 42)))


def test_missing_required_input(iiwa):
    with pytest.raises(TypeError, match="u is required"):
        iiwa.aba(np.zeros((1, 7)), np.zeros((1, 7)), None)
    with pytest.raises(TypeError, match="qd is required"):
        iiwa.nonlinear_effects(np.zeros((1, 7)), None)


def test_unconvertible_input(iiwa):
    with pytest.raises(ValueError):
        iiwa.crba([["a"] * 7])


def test_frame_jacobian_targets(iiwa):
    q = make_states(iiwa, "random", 2)["q"]
    J = iiwa.frame_jacobian(q, "iiwa_link_5")
    fid = iiwa.frame_names.index("iiwa_link_5")
    np.testing.assert_array_equal(J, iiwa.frame_jacobian(q, fid))
    np.testing.assert_array_equal(J, iiwa.frame_jacobian(q, np.int64(fid)))
    np.testing.assert_array_equal(J, iiwa.frame_jacobian(q, "iiwa_joint_5"))  # the joint above the link
    np.testing.assert_array_equal(J, iiwa.frame_jacobian(q, "iiwa_link_5", "local_world_aligned"))
    with pytest.raises(ValueError, match="unknown frame 'nope'"):
        iiwa.frame_jacobian(q, "nope")
    with pytest.raises(ValueError, match="out of range"):
        iiwa.frame_jacobian(q, len(iiwa.frame_names))
    with pytest.raises(TypeError):
        iiwa.frame_jacobian(q, 1.5)
    with pytest.raises(ValueError, match="reference_frame must be one of 'WORLD', 'LOCAL', 'LOCAL_WORLD_ALIGNED'"):
        iiwa.frame_jacobian(q, reference_frame="GLOBAL")


def test_frame_jacobian_dot_targets(iiwa):
    """the rate's target and reference_frame as the Jacobian's: a name, the joint above it, an id; the default the
    first end effector in LOCAL_WORLD_ALIGNED"""
    s = make_states(iiwa, "random", 2)
    q, qd = s["q"], s["qd"]
    dJ = iiwa.frame_jacobian_dot(q, qd, "iiwa_link_5", "WORLD")
    fid = iiwa.frame_names.index("iiwa_link_5")
    assert dJ.shape == (2, 6, IIWA_NV) and np.abs(dJ).max() > 0
    np.testing.assert_array_equal(dJ, iiwa.frame_jacobian_dot(q, qd, target=fid, reference_frame="world"))
    np.testing.assert_array_equal(dJ, iiwa.frame_jacobian_dot(q, qd, "iiwa_joint_5", "WORLD"))
    np.testing.assert_array_equal(iiwa.frame_jacobian_dot(q, qd),
                                  iiwa.frame_jacobian_dot(q, qd, iiwa.ee_names[0], "LOCAL_WORLD_ALIGNED"))
    assert not np.array_equal(iiwa.frame_jacobian_dot(q, qd, fid, "LOCAL"), dJ)
    with pytest.raises(ValueError, match="unknown frame 'nope'"):
        iiwa.frame_jacobian_dot(q, qd, "nope")
    with pytest.raises(ValueError, match="out of range"):
        iiwa.frame_jacobian_dot(q, qd, len(iiwa.frame_names))
    with pytest.raises(ValueError, match="reference_frame must be one of 'WORLD', 'LOCAL', 'LOCAL_WORLD_ALIGNED'"):
        iiwa.frame_jacobian_dot(q, qd, reference_frame="GLOBAL")
    with pytest.raises(TypeError, match="qd is required"):
        iiwa.frame_jacobian_dot(q)


def test_frame_jacobian_accepts_pinocchio_enum(iiwa):
    pin = pytest.importorskip("pinocchio")
    q = make_states(iiwa, "random", 2)["q"]
    np.testing.assert_array_equal(iiwa.frame_jacobian(q, reference_frame=pin.ReferenceFrame.LOCAL),
                                  iiwa.frame_jacobian(q, reference_frame="LOCAL"))


def test_runner_refuses_bad_frame_ids(iiwa):
    """the C layer checks too, whatever Python passes"""
    q = np.zeros((1, 7), dtype=np.float32)
    with pytest.raises(ValueError, match="out of range"):
        iiwa._runner.call(_core.ALGO_FRAME_JACOBIAN, (q,), None, (99, 0))
    with pytest.raises(ValueError, match="reference_frame"):
        iiwa._runner.call(_core.ALGO_FRAME_JACOBIAN, (q,), None, (0, 7))
    with pytest.raises(ValueError, match="algorithm"):
        iiwa._runner.call(99, (q,), None, ())
    with pytest.raises(TypeError, match="takes no"):
        iiwa._runner.call(_core.ALGO_CRBA, (q, q), None, ())


# ---- odd inputs ----
def test_nan_in_nan_out(iiwa_ff):
    h = iiwa_ff
    s = {k: v.astype(np.float32) for k, v in make_states(h, "random", 3).items()}
    for k in s:
        s[k][1, :] = np.nan  # state 1 is poisoned in every input
    for name, (y, _) in call_all(h, s).items():
        assert np.isnan(y[1]).any(), name
        assert np.isfinite(y[0]).all() and np.isfinite(y[2]).all(), name


def test_non_contiguous_and_other_dtypes_are_converted(iiwa):
    s = make_states(iiwa, "random", 6)
    s32 = {k: v.astype(np.float32) for k, v in s.items()}
    expected = call_all(iiwa, s32)
    wide = {k: np.repeat(v, 2, axis=1)[:, ::2] for k, v in s.items()}       # float64, strided
    fortran = {k: np.asfortranarray(v) for k, v in s32.items()}              # float32, column-major
    lists = {k: v.tolist() for k, v in s.items()}                            # nested lists
    for variant in (s, wide, fortran, lists):
        for name, (y, _) in call_all(iiwa, variant).items():
            np.testing.assert_array_equal(y, expected[name][0], err_msg=name)


def test_read_only_input_is_fine(iiwa):
    q = np.zeros((2, 7), dtype=np.float32)
    q.flags.writeable = False
    assert iiwa.crba(q).shape == (2, 7, 7)


def test_empty_batch(iiwa, iiwa_ff):
    for h in (iiwa, iiwa_ff):
        for name, (y, shape) in call_all(h, make_states(h, "random", 0)).items():
            assert y.shape == shape and shape[0] == 0, name


def test_batch_larger_than_max_batch_size_on_cpu():
    h = grid_rbd.register_robot("api_small", urdf_path=BUNDLED_IIWA, max_batch_size=2, algorithm_list=["crba"])
    assert h.crba(np.zeros((5, 7))).shape == (5, 7, 7)


def test_concurrent_calls_from_threads(iiwa):
    s = make_states(iiwa, "high_velocity", 64)
    expected = iiwa.aba(s["q"], s["qd"], s["u"])
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: iiwa.aba(s["q"], s["qd"], s["u"]), range(16)))
    for r in results:
        np.testing.assert_array_equal(r, expected)


# ---- register_robot options ----
@pytest.mark.parametrize("kwargs, exc, match", [
    ({"dtype": "float16"}, ValueError, "dtype must be 'float32' or 'float64'"),
    ({"dtype": "int32"}, ValueError, "dtype must be"),
    ({"device": "tpu"}, ValueError, "device must be one of 'auto', 'cpu', 'cuda'"),
    ({"device": "cuda", "codegen": False}, ValueError, "device='cuda' needs codegen=True"),
    ({"backend": "tensorflow"}, ValueError, "backend must be one of 'numpy', 'jax', 'torch'"),
    ({"max_batch_size": 0}, ValueError, "max_batch_size"),
    ({"gravity": float("nan")}, ValueError, "gravity"),
    ({"output_convention": "ros"}, ValueError, "output_convention must be one of"),
    ({"contact_frames": ["x"]}, grid_rbd.NotAvailableError, "contact_frames"),
    ({"no_such_option": 1}, TypeError, "no_such_option"),
    ({"urdf_string": "<robot/>"}, ValueError, "exactly one of urdf_path= or urdf_string="),
])
def test_register_robot_option_errors(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        grid_rbd.register_robot("api_opt", urdf_path=BUNDLED_IIWA, **kwargs)


def test_not_available_error_is_a_grid_error():
    with pytest.raises(grid_rbd.GridError):
        grid_rbd.register_robot("api_contacts", urdf_path=BUNDLED_IIWA, contact_frames=["x"])
    with pytest.raises(NotImplementedError):
        grid_rbd.register_robot("api_contacts", urdf_path=BUNDLED_IIWA, contact_frames=["x"])


def test_algorithm_list_builds_only_those_methods(tmp_path):
    """algorithm_list names methods by any name; the library has exactly those rows (a gradient brings the functions
    it calls, not their methods); a method left out is a NotAvailableError naming the fix; bad names are refused"""
    h = grid_rbd.register_robot("api_subset", urdf_path=BUNDLED_IIWA, dtype="float64", cache_dir=str(tmp_path),
                                algorithm_list=["fd_grad", "inverse_dynamics", "rnea"], verbose=False)
    assert [m["name"] for m in h._library.methods] == ["rnea", "fd_grad"]
    assert h.options["algorithm_list"] == ["rnea", "fd_grad"]
    ref = grid_rbd.register_robot("api_subset_ref", urdf_path=BUNDLED_IIWA, dtype="float64", codegen=False)
    s = make_states(ref, "random", 3)
    np.testing.assert_allclose(h.forward_dynamics_gradient(s["q"], s["qd"], s["u"]),
                               ref.forward_dynamics_gradient(s["q"], s["qd"], s["u"]), rtol=1e-9, atol=1e-10)
    with pytest.raises(grid_rbd.NotAvailableError, match=r"forward_dynamics was not built .*algorithm_list"):
        h.forward_dynamics(s["q"], s["qd"], s["u"])
    with pytest.raises(ValueError, match="no method 'nope'"):
        grid_rbd.register_robot("api_subset_bad", urdf_path=BUNDLED_IIWA, algorithm_list=["nope"])
    with pytest.raises(ValueError, match="at least one"):
        grid_rbd.register_robot("api_subset_bad", urdf_path=BUNDLED_IIWA, algorithm_list=[])
    with pytest.raises(TypeError, match="list of method names"):
        grid_rbd.register_robot("api_subset_bad", urdf_path=BUNDLED_IIWA, algorithm_list="rnea")
    # the same set in another order and spelling is the same cache entry; another set is another
    again = grid_rbd.register_robot("api_subset2", urdf_path=BUNDLED_IIWA, dtype="float64", cache_dir=str(tmp_path),
                                    algorithm_list=["forward_dynamics_gradient", "rnea"], verbose=False)
    assert again.build_info["cache_hit"] and again.cache_entry == h.cache_entry
    other = grid_rbd.register_robot("api_subset3", urdf_path=BUNDLED_IIWA, dtype="float64", cache_dir=str(tmp_path),
                                    algorithm_list=["rnea"], verbose=False)
    assert other.cache_entry != h.cache_entry


def test_build_options_are_accepted(tmp_path):
    h = grid_rbd.register_robot("api_build_opts", urdf_path=BUNDLED_IIWA, cache_dir=str(tmp_path),
                                force_rebuild=True, enable_mujoco_kernels=False, output_convention="pinocchio",
                                algorithm_list=["rnea"])
    assert h.nv == IIWA_NV


# ---- URDF errors ----
def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


BAD_URDFS = {
    # name: (text, line of the offending element, a word the message must contain)
    "bad_number": ("<robot name='r'>\n  <link name='a'/>\n  <link name='b'>\n    <inertial>\n"
                   "      <mass value='heavy'/>\n    </inertial>\n  </link>\n"
                   "  <joint name='j' type='revolute'>\n    <parent link='a'/>\n    <child link='b'/>\n"
                   "    <limit lower='-1' upper='1' effort='1' velocity='1'/>\n  </joint>\n</robot>\n", 5, "mass"),
    "unknown_link": ("<robot name='r'>\n  <link name='a'/>\n  <joint name='j' type='revolute'>\n"
                     "    <parent link='a'/>\n    <child link='ghost'/>\n  </joint>\n</robot>\n", 5, "ghost"),
    "bad_joint_type": ("<robot name='r'>\n  <link name='a'/>\n  <link name='b'/>\n"
                       "  <joint name='j' type='wobbly'>\n    <parent link='a'/>\n    <child link='b'/>\n"
                       "  </joint>\n</robot>\n", 4, "wobbly"),
    "malformed_xml": ("<robot name='r'>\n  <link name='a'>\n</robot>\n", 3, "XML"),
    "not_a_robot": ("<?xml version='1.0'?>\n<model name='r'/>\n", 2, "robot"),
}


@pytest.mark.parametrize("case", list(BAD_URDFS))
def test_urdf_error_names_file_line_and_element(tmp_path, case):
    text, line, word = BAD_URDFS[case]
    path = _write(tmp_path, f"{case}.urdf", text)
    with pytest.raises(grid_rbd.URDFError) as e:
        grid_rbd.register_robot("api_bad", urdf_path=path)
    err = e.value
    assert isinstance(err, ValueError) and isinstance(err, grid_rbd.GridError)
    assert err.filename == str(path) and err.line == line
    assert str(err).startswith(f"{path}:{line}:")
    assert word in str(err)


def test_missing_file_is_an_os_error_naming_it(tmp_path):
    path = tmp_path / "missing.urdf"
    with pytest.raises(grid_rbd.GridIOError) as e:
        grid_rbd.register_robot("api_missing", urdf_path=path)
    assert isinstance(e.value, OSError) and isinstance(e.value, grid_rbd.GridError)
    assert str(path) in str(e.value)


MIMIC_URDF = """<robot name="gripper">
  <link name="palm"/>
  <link name="finger_a"><inertial><mass value="0.1"/><inertia ixx="1e-4" iyy="1e-4" izz="1e-4" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="finger_b"><inertial><mass value="0.1"/><inertia ixx="1e-4" iyy="1e-4" izz="1e-4" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="a" type="prismatic"><parent link="palm"/><child link="finger_a"/><axis xyz="0 1 0"/>
    <limit lower="0" upper="0.04" effort="20" velocity="0.2"/></joint>
  <joint name="b" type="prismatic"><parent link="palm"/><child link="finger_b"/><axis xyz="0 -1 0"/>
    <limit lower="0" upper="0.04" effort="20" velocity="0.2"/>
    <mimic joint="a" multiplier="1" offset="0"/></joint>
</robot>
"""


def test_mimic_is_a_coupling_and_ignore_mimic_makes_it_independent(tmp_path):
    path = _write(tmp_path, "gripper.urdf", MIMIC_URDF)
    h = grid_rbd.register_robot("api_mimic", urdf_path=path, codegen=False)
    assert h.joint_names == ("a",) and h.nq == h.nv == 1
    assert h.mimic_joints == ({"name": "b", "leader": "a", "multiplier": 1.0, "offset": 0.0, "index_q": 0,
                               "index_v": 0},)
    h = grid_rbd.register_robot("api_mimic", urdf_path=path, ignore_mimic=True, algorithm_list=["rnea"])
    assert h.joint_names == ("a", "b") and h.nv == 2 and h.mimic_joints == ()


def test_status_table_matches_the_c_enum():
    for name, code in vars(_core).items():
        if name.startswith("ERR_"):
            assert _errors.STATUS_NAMES[code] == "GRID_" + name
            assert code in _errors.STATUS_CLASSES
    assert _errors.STATUS_CLASSES[_core.ERR_ARG].__mro__[2] is ValueError
    assert issubclass(_errors.STATUS_CLASSES[_core.ERR_IO], OSError)
    for code in (_core.ERR_XML, _core.ERR_URDF, _core.ERR_LIMIT, _core.ERR_UNSUPPORTED):
        assert issubclass(_errors.STATUS_CLASSES[code], grid_rbd.URDFError)
    assert _errors.STATUS_CLASSES[_core.ERR_BUILD] is grid_rbd.BuildError
    assert _errors.STATUS_CLASSES[_core.ERR_CACHE] is grid_rbd.CacheError
    assert _errors.STATUS_CLASSES[_core.ERR_LOAD] is grid_rbd.LoadError


# ---- the specification's own Python surface ----
def test_max_batch_alias(iiwa):
    assert iiwa.max_batch == iiwa.max_batch_size == 256


def test_get_robot_of_an_unknown_name_raises_robot_not_registered(iiwa):
    with pytest.raises(grid_rbd.RobotNotRegisteredError, match="no robot registered as 'nope'.*'api_iiwa'") as e:
        grid_rbd.get_robot("nope")
    assert isinstance(e.value, KeyError) and isinstance(e.value, grid_rbd.GridError)
    with pytest.raises(KeyError):  # what code written against a dict-like registry catches
        grid_rbd.get_robot("nope")
    assert grid_rbd.get_robot("api_iiwa") is iiwa


def test_list_registered(iiwa, iiwa_ff):
    names = grid_rbd.list_registered()
    assert "api_iiwa" in names and "api_iiwa_ff" in names
    assert names == sorted(names) and all(isinstance(n, str) for n in names)


@pytest.mark.parametrize("floating", [False, True])
def test_one_state_without_the_batch_axis(iiwa, iiwa_ff, floating):
    """q of shape (nq,) (and every input per state): outputs without the batch axis, equal to the batched row"""
    h = iiwa_ff if floating else iiwa
    s = make_states(h, "random", n=3, seed=5)
    batched = call_all(h, s)
    one = {n: v[1] for n, v in s.items()}
    single = call_all(h, one)
    for name, (got, shape) in single.items():
        want = batched[name][0][1]
        assert got.shape == shape[1:], name
        np.testing.assert_array_equal(got, want, err_msg=name)
    # out= of the per-state shape is written and returned
    out = np.full((h.nv, h.nv), np.nan, dtype=h.dtype)
    assert h.crba(one["q"], out=out) is out
    np.testing.assert_array_equal(out, batched["crba"][0][1])
    # lists work as arrays do
    np.testing.assert_array_equal(h.generalized_gravity(list(map(float, one["q"]))), batched["generalized_gravity"][0][1])


def test_one_state_shapes_must_agree(iiwa):
    s = make_states(iiwa, "random", n=2)
    with pytest.raises(ValueError, match=r"qd must have shape \(7,\) \(one state.*q has no batch axis\); got \(2, 7\)"):
        iiwa.inverse_dynamics(s["q"][0], s["qd"])
    with pytest.raises(ValueError, match=r"out must be a writable C-contiguous float32 array of shape \(7, 7\)"):
        iiwa.crba(s["q"][0], out=np.zeros((1, 7, 7), dtype=iiwa.dtype))
    with pytest.raises(ValueError, match=r"q must have shape \(B, 7\) \(B states x .*\) or \(7,\) \(one state\); got \(6,\)"):
        iiwa.crba(np.zeros(6))
