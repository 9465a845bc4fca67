"""Regressions of API defects: out= aliasing an input on every row, the model CLI on mimic joints, option and out=
checks and messages, and RobotHandle.close() / the context-manager protocol."""

import pickle
import time

import numpy as np
import pytest

import grid_rbd
from grid_rbd import _signatures

LINK = """<link name="{n}"><inertial><origin xyz="{c}" rpy="0.1 0.2 -0.1"/><mass value="{m}"/>
    <inertia ixx="0.011" ixy="0.001" ixz="-0.0005" iyy="0.012" iyz="0.0007" izz="0.009"/></inertial></link>"""


def arm6_urdf():
    """a 6-dof arm with one end effector: nq = nv = 6 * nee = 6, nb = 6"""
    axes = ["0 0 1", "0 1 0", "1 0 0", "0 1 0", "0 0 1", "0.6 0 0.8"]
    links = "".join(LINK.format(n=f"l{i}", c="0.05 0.02 0.1", m=1.0 + 0.1 * i) for i in range(7))
    joints = "".join(f'<joint name="j{i}" type="revolute"><parent link="l{i}"/><child link="l{i + 1}"/>'
                     f'<origin xyz="0.1 0 0.2" rpy="0.2 -0.1 0.3"/><axis xyz="{axes[i]}"/>'
                     f'<limit lower="-2" upper="2" effort="5" velocity="2"/></joint>' for i in range(6))
    return f'<?xml version="1.0"?>\n<robot name="arm6">{links}{joints}</robot>\n'


def body_urdf():
    """one link: with floating_base=True a free body, nv = 6 = 6 * nee"""
    return f'<?xml version="1.0"?>\n<robot name="body">{LINK.format(n="b", c="0.05 0.02 0.1", m=2.0)}</robot>\n'


# ---- 7. out= aliasing an input, every row ----
ALIAS_ROBOTS = {"arm6": (arm6_urdf, False), "free_body": (body_urdf, True)}


def _sizes(text, floating):
    m = grid_rbd._core.Model(text.encode(), "<urdf_string>", floating_base=floating)
    return _signatures.sizes_of(m)


def aliasable(sizes):
    """(row, output shape, [input indices whose per-state width equals the output's]) of every row of the table"""
    out = []
    for r in _signatures.ROWS:
        c = _signatures.concrete(r, sizes)
        if len(c["outputs"]) > 1:
            continue  # (out= is a tuple there: test_api's multi-output checks)
        if any(a[0] == "target" for a in c["inputs"]):
            continue  # (targets chosen per call: the inputs are repeated per target before the call, a VJP takes no out=)
        shape = c["outputs"][0][1]
        width = int(np.prod(shape))
        ks = [k for k, a in enumerate(c["inputs"]) if int(np.prod(a[1])) == width]
        if ks:
            out.append((r, shape, ks))
    return out


@pytest.fixture(scope="module")
def alias_handles():
    """robot -> {(provider, convention): handle}; the generated library holds the aliasable rows and their MuJoCo
    aux rows, so both conventions share one build"""
    handles = {}
    for robot, (urdf, floating) in ALIAS_ROBOTS.items():
        text = urdf()
        ids = {r["id"] for r, _, _ in aliasable(_sizes(text, floating))}
        ids |= {a for i in list(ids) for a in _signatures.ROWS[i]["mujoco_aux"]}
        algos = [r["name"] for r in _signatures.ROWS if r["id"] in ids]
        for codegen in (True, False):
            for conv in ("pinocchio", "mujoco"):
                handles[robot, "generated" if codegen else "reference", conv] = grid_rbd.register_robot(
                    f"alias_{robot}_{codegen}_{conv}", urdf_string=text, floating_base=floating, dtype="float64",
                    device="cpu", codegen=codegen, verbose=False, output_convention=conv, algorithm_list=algos)
    return handles


def test_alias_robots_have_the_shapes_that_alias():
    """the pose VJP (out nv, cotangent 6 * nee) aliases on both robots"""
    for robot, (urdf, floating) in ALIAS_ROBOTS.items():
        names = {r["name"] for r, _, _ in aliasable(_sizes(urdf(), floating))}
        assert {"ee_pose_vjp", "rnea", "fd"} <= names, robot


# rows MuJoCo's convention refuses on robots it converts (no conversion yet): a clear NotAvailableError, never a wrong
# answer
MUJOCO_REFUSED = {"q_pullback"}


@pytest.mark.parametrize("B", [5, 3000])
@pytest.mark.parametrize("conv", ["pinocchio", "mujoco"])
@pytest.mark.parametrize("provider", ["generated", "reference"])
@pytest.mark.parametrize("which", list(ALIAS_ROBOTS))
def test_out_aliasing_an_input_on_every_row(alias_handles, which, provider, conv, B):
    """out= exactly an input (the same memory, viewed in the output's shape) gives the non-aliased result"""
    h = alias_handles[which, provider, conv]
    rng = np.random.default_rng(B)
    sizes = _signatures.sizes_of(h._model)
    converts = any(t in ("free", "spherical") for t in h._model.joint_types)  # (else MuJoCo's basis is Pinocchio's)
    checked = 0
    for r, shape, ks in aliasable(sizes):
        c = _signatures.concrete(r, sizes)
        args = [rng.uniform(-1, 1, (B,) + a[1]) for a in c["inputs"]]
        method = getattr(h, r["py_name"])
        if conv == "mujoco" and r["name"] in MUJOCO_REFUSED and converts:
            with pytest.raises(grid_rbd.NotAvailableError, match="output_convention='mujoco'"):
                method(*args)
            continue
        expected = method(*[a.copy() for a in args])
        for k in ks:
            inputs = [a.copy() for a in args]
            out = inputs[k].reshape((B,) + shape)
            assert np.shares_memory(out, inputs[k])
            got = method(*inputs, out=out)
            assert got is out
            np.testing.assert_array_equal(out, expected, err_msg=f"{r['py_name']} out={c['inputs'][k][0]}")
            checked += 1
    assert checked >= 5


@pytest.mark.parametrize("provider", ["generated", "reference"])
def test_out_partly_overlapping_the_cotangent(alias_handles, provider):
    """a view overlapping an input without being it: computed into a temporary, then copied (numpy's rule)"""
    h = alias_handles["arm6", provider, "pinocchio"]
    B = 40
    rng = np.random.default_rng(1)
    q = rng.uniform(-1, 1, (B, 6))
    buf = rng.uniform(-1, 1, B * 6 + 3)
    g, out = buf[3:].reshape(B, 6), buf[:B * 6].reshape(B, 6)
    expected = h.end_effector_pose_vjp(q, g.copy())
    assert h.end_effector_pose_vjp(q, g, out=out) is out
    np.testing.assert_array_equal(out, expected)


# ---- 8. python -m grid_rbd model on mimic joints ----
def mimic_cli_urdf():
    """j1 mimics j0 (a chain of three bodies, then an independent j2)"""
    links = "".join(LINK.format(n=f"l{i}", c="0.05 0 0.1", m=1.0 + i) for i in range(4))
    joint = ('<joint name="j{i}" type="revolute"><parent link="l{i}"/><child link="l{c}"/><origin xyz="0 0 0.2"/>'
             '<axis xyz="0 1 0"/><limit lower="-1" upper="1" effort="5" velocity="2"/>{x}</joint>')
    joints = (joint.format(i=0, c=1, x="") + joint.format(i=1, c=2, x='<mimic joint="j0" multiplier="-2" offset="0.5"/>')
              + joint.format(i=2, c=3, x=""))
    return f'<?xml version="1.0"?>\n<robot name="mimic_cli">{links}{joints}</robot>\n'


def test_model_cli_prints_each_joints_own_row_and_the_couplings(tmp_path, capsys):
    from grid_rbd.__main__ import main
    path = tmp_path / "mimic_cli.urdf"
    path.write_text(mimic_cli_urdf())
    assert main(["model", str(path)]) == 0
    rows = {line.split()[1]: line for line in capsys.readouterr().out.splitlines() if line.startswith("    ")}
    assert set(rows) == {"j0", "j1", "j2"}
    assert "q[0:1] v[0:1] body 'l1'" in rows["j0"] and "parent 'world'" in rows["j0"]
    assert "mimics 'j0': q = -2 * q[0] + 0.5, v = -2 * v[0] body 'l2'" in rows["j1"] and "parent 'l1'" in rows["j1"]
    assert "q[1:2] v[1:2] body 'l3'" in rows["j2"] and "parent 'l2'" in rows["j2"]


# ---- 13. smaller defects ----
def pendulum_urdf(extra=""):
    """one revolute joint (nv = 1), and whatever extra joints and links are given"""
    return (f'<?xml version="1.0"?>\n<robot name="pendulum">{LINK.format(n="base", c="0 0 0", m=1.0)}'
            f'{LINK.format(n="arm", c="0 0 -0.3", m=0.5)}<joint name="hinge" type="revolute"><parent link="base"/>'
            f'<child link="arm"/><origin xyz="0 0 1"/><axis xyz="0 1 0"/><limit lower="-2" upper="2"/></joint>'
            f'{extra}</robot>\n')


@pytest.fixture(scope="module")
def pendulum():
    return grid_rbd.register_robot("defects_pendulum", urdf_string=pendulum_urdf(), dtype="float64", codegen=False,
                                   verbose=False)


def test_mimic_in_a_fixed_joint_is_ignored_as_pinocchio_does(tmp_path):
    """talos_reduced.urdf carries <mimic> in two fixed joints: the joint has no coordinate, so nothing couples"""
    path = tmp_path / "fixed_mimic.urdf"
    text = pendulum_urdf(f'{LINK.format(n="tip", c="0 0 0", m=0.1)}\n<joint name="weld" type="fixed">'
                         '<parent link="arm"/><child link="tip"/>\n<mimic joint="hinge"/></joint>')
    path.write_text(text)
    h = grid_rbd.register_robot("fixed_mimic", urdf_path=path, dtype="float64", codegen=False, verbose=False)
    plain = grid_rbd.register_robot("fixed_mimic_ignored", urdf_path=path, dtype="float64", codegen=False,
                                    verbose=False, ignore_mimic=True)
    assert (h.nq, h.nv) == (plain.nq, plain.nv) == (1, 1)
    q = np.array([[0.3]]); qd = np.array([[-0.7]]); qdd = np.array([[1.1]])
    np.testing.assert_array_equal(h.inverse_dynamics(q, qd, qdd), plain.inverse_dynamics(q, qd, qdd))
    assert np.all(h.inverse_dynamics(q, qd, qdd) != 0)


def test_flat_out_of_every_matrix_output_when_nv_is_1(pendulum):
    """the flat (B, width) or (width,) out= of every matrix output, also when nv = 1 (a (B, 2) gradient block)"""
    h = pendulum
    assert h.nv == 1
    B = 3
    rng = np.random.default_rng(3)
    sizes = _signatures.sizes_of(h._model)
    for r in _signatures.matrix_rows():
        c = _signatures.concrete(r, sizes)
        shape = c["outputs"][0][1]
        # (a per-call target input left to its default, the registered end effectors: one on the pendulum)
        args = [rng.uniform(-1, 1, (B,) + a[1]) for a in c["inputs"] if a[0] != "target"]
        method = getattr(h, r["py_name"])
        want = method(*args)
        flat = np.full((B, int(np.prod(shape))), np.nan)
        got = method(*args, out=flat)
        assert got.shape == (B,) + shape and np.shares_memory(got, flat), r["name"]
        np.testing.assert_array_equal(got, want, err_msg=r["name"])
        one = np.full(int(np.prod(shape)), np.nan)
        got = method(*[a[1] for a in args], out=one)
        assert got.shape == shape and np.shares_memory(got, one), r["name"]
        np.testing.assert_array_equal(got, want[1], err_msg=r["name"])


def test_wrong_flat_out_is_reported_with_the_shape_given(alias_handles):
    h = alias_handles["arm6", "reference", "pinocchio"]
    q = np.zeros((4, 6))
    for out in (np.empty((10, 72)), np.empty((4, 72), dtype=np.float32), np.empty((4, 71))):
        with pytest.raises(ValueError) as e:
            h.inverse_dynamics_gradient(q, q, out=out)
        msg = str(e.value)
        assert f"of shape {out.shape}" in msg and "(10, 6, 12)" not in msg and "(4, 6, 12) (or" in msg, msg


def test_scalar_cotangent_is_reported_as_a_scalar(alias_handles):
    h = alias_handles["arm6", "reference", "pinocchio"]
    with pytest.raises(ValueError) as e:
        h.end_effector_pose_vjp(np.zeros((4, 6)), 1.0)
    assert str(e.value).startswith("cotangent must have shape (B, 6)") and str(e.value).endswith("got ()"), str(e.value)


BOOL_OPTIONS = ("floating_base", "ignore_mimic", "codegen", "force_rebuild", "verbose", "enable_mujoco_kernels")


@pytest.mark.parametrize("option", BOOL_OPTIONS)
@pytest.mark.parametrize("value", ["False", 1, None])
def test_boolean_options_refuse_non_bools(tmp_path, option, value):
    kw = dict(urdf_string=pendulum_urdf(), cache_dir=tmp_path, verbose=False)
    kw[option] = value
    with pytest.raises(ValueError, match=f"^{option} must be True or False"):
        grid_rbd.register_robot("bad_bool", **kw)
    if option != "codegen":  # precompile builds; its codegen is always True
        with pytest.raises(ValueError, match=f"^{option} must be True or False"):
            grid_rbd.precompile("bad_bool", **kw)
    assert not any(tmp_path.iterdir())  # refused before anything was built


def test_boolean_options_take_numpy_bools():
    h = grid_rbd.register_robot("np_bool", urdf_string=pendulum_urdf(), codegen=np.False_, floating_base=np.True_,
                                ignore_mimic=np.False_, force_rebuild=np.False_, verbose=np.False_,
                                enable_mujoco_kernels=np.True_)
    assert h.floating_base is True and h.nv == 7 and h.provider == "reference"
    assert h.options["codegen"] is False and type(h.options["verbose"]) is bool


def test_mujoco_convention_names_the_planar_joint():
    text = pendulum_urdf(f'{LINK.format(n="puck", c="0 0 0", m=0.2)}<joint name="slide_plane" type="planar">'
                         '<parent link="arm"/><child link="puck"/><axis xyz="0 0 1"/></joint>')
    with pytest.raises(ValueError) as e:
        grid_rbd.register_robot("mj_planar", urdf_string=text, codegen=False, output_convention="mujoco")
    assert "joint 'slide_plane' is planar" in str(e.value) and "body" not in str(e.value), str(e.value)


# ---- 14. close() and the context-manager protocol ----
@pytest.mark.parametrize("codegen", [True, False])
def test_close_releases_unregisters_and_refuses_calls(codegen):
    h = grid_rbd.register_robot("closing", urdf_string=pendulum_urdf(), dtype="float64", codegen=codegen,
                                verbose=False, algorithm_list=["rnea"])
    runner, library = h._runner, h._library
    q = np.zeros((3, 1))
    h.inverse_dynamics(q, q)
    assert not h.closed
    h.close()
    assert h.closed and h._runner is not runner and h._library is not library
    with pytest.raises(grid_rbd.RobotNotRegisteredError):
        grid_rbd.get_robot("closing")
    for use in (lambda: h.inverse_dynamics(q, q), lambda: h.rnea(q, q), lambda: h.crba(q), lambda: h.dtype,
                lambda: h.provider, lambda: h.num_threads, lambda: setattr(h, "num_threads", 1),
                lambda: h.library_path, lambda: pickle.dumps(h)):
        with pytest.raises(grid_rbd.HandleClosedError, match="'closing' is closed"):
            use()
    assert issubclass(grid_rbd.HandleClosedError, (RuntimeError, grid_rbd.GridError))
    assert h.nq == 1 and h.joint_names == ("hinge",) and h.options["codegen"] is codegen  # still readable
    assert "closed" in repr(h)
    h.close()  # idempotent
    assert h.closed


def test_close_leaves_other_handles_and_a_newer_registration():
    text = pendulum_urdf()
    old = grid_rbd.register_robot("shared_name", urdf_string=text, dtype="float64", codegen=False)
    new = grid_rbd.register_robot("shared_name", urdf_string=text, dtype="float64", codegen=False)
    other = grid_rbd.register_robot("other_name", urdf_string=text, dtype="float64", codegen=False)
    old.close()
    assert grid_rbd.get_robot("shared_name") is new  # the registry held the newer handle: kept
    q = np.full((2, 1), 0.3)
    np.testing.assert_array_equal(new.generalized_gravity(q), other.generalized_gravity(q))
    other.close()
    assert new.generalized_gravity(q).shape == (2, 1)
    new.close()
    assert "shared_name" not in grid_rbd.list_registered()


def test_with_closes_on_exit_and_on_an_exception():
    q = np.zeros((2, 1))
    with grid_rbd.register_robot("ctx", urdf_string=pendulum_urdf(), codegen=False) as r:
        assert r.generalized_gravity(q).shape == (2, 1) and grid_rbd.get_robot("ctx") is r
    assert r.closed and "ctx" not in grid_rbd.list_registered()
    with pytest.raises(KeyError, match="inside"):
        with grid_rbd.register_robot("ctx", urdf_string=pendulum_urdf(), codegen=False) as r2:
            raise KeyError("inside")
    assert r2.closed and "ctx" not in grid_rbd.list_registered()


def test_close_while_a_call_runs_in_another_thread(alias_handles):
    """the running call holds its own reference to the runner: it finishes with the right numbers"""
    import threading
    text = arm6_urdf()
    h = grid_rbd.register_robot("close_busy", urdf_string=text, dtype="float64", device="cpu", verbose=False,
                                algorithm_list=alias_handles["arm6", "generated", "pinocchio"].options["algorithm_list"])
    q = np.random.default_rng(0).uniform(-1, 1, (200000, 6))
    want = alias_handles["arm6", "generated", "pinocchio"].inverse_dynamics(q, q)
    got = []

    def run():
        try:
            got.append(h.inverse_dynamics(q, q))
        except grid_rbd.HandleClosedError as e:  # the thread was slower than close()
            got.append(e)

    t = threading.Thread(target=run)
    t.start()
    time.sleep(0.02)
    h.close()
    t.join()
    assert h.closed and len(got) == 1
    if not isinstance(got[0], grid_rbd.HandleClosedError):
        np.testing.assert_array_equal(got[0], want)
