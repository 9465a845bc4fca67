"""The post-build self-check: valid but numerically hard robots register in both dtypes, and a compiler that gets
one variant, one frame or the threaded path wrong is caught, with a message that names what and says what to do."""

import json
import os
import stat
import sys

import numpy as np
import pytest

import grid_rbd
import hard_robots
from robot_cases import BUNDLED_IIWA, example_robot_data_dir

ERD = example_robot_data_dir()


def _write(tmp_path_factory, name, text):
    path = tmp_path_factory.mktemp("hard") / f"{name}.urdf"
    path.write_text(text)
    return str(path)


def _report(handle):
    with open(os.path.join(os.path.dirname(handle.library_path), "selfcheck.json")) as f:
        return json.load(f)


# robot, methods the old check refused on it (the fewest that show it), dtypes
HARD = [
    ("scara_flipped", ["gravity", "ee_pose"], ["float64", "float32"]),   # gravity torques ~1e-14, roll at pi
    ("coaxial_pair", ["nle"], ["float64"]),                              # analytically zero nonlinear effects
    ("massless_leaf", ["minv", "fd"], ["float64", "float32"]),           # singular M
    ("far_origin", ["rnea_grad", "frame_jacobian"], ["float64", "float32"]),  # joint origins 1e5 m away
    ("chain150", ["fd_grad"], ["float64"]),                              # cond(M) ~ 1e7 with default options
]


@pytest.mark.parametrize("name,methods,dtypes", HARD, ids=[h[0] for h in HARD])
def test_hard_robot_registers(tmp_path_factory, name, methods, dtypes):
    path = _write(tmp_path_factory, name, hard_robots.ROBOTS[name])
    ref = grid_rbd.register_robot(f"{name}_ref", urdf_path=path, codegen=False, dtype="float64")
    for dtype in dtypes:
        h = grid_rbd.register_robot(f"{name}_{dtype}", urdf_path=path, dtype=dtype, algorithm_list=methods,
                                    verbose=False)
        rep = _report(h)
        assert set(methods) <= set(rep["methods"])
        assert all(m["checks"] > 0 and m["worst_ratio"] <= 1 for m in rep["methods"].values()), rep
        # and the published library is as good as its dtype on fresh states
        q = np.random.default_rng(3).uniform(-1, 1, (5, h.nq))
        if "gravity" in methods:
            g, g_ref = h.generalized_gravity(q), ref.generalized_gravity(q)
            assert np.abs(g - g_ref).max() <= 1e-4 * (1 + np.abs(g_ref).max())


def test_massless_leaf_is_singular_and_skipped(tmp_path_factory):
    """a zero column in M: the reference's M^-1 is not finite, so its blocks carry no evidence and are skipped"""
    path = _write(tmp_path_factory, "massless_leaf", hard_robots.ROBOTS["massless_leaf"])
    h = grid_rbd.register_robot("massless_leaf_f64", urdf_path=path, dtype="float64", algorithm_list=["minv", "fd"],
                                verbose=False)
    rep = _report(h)
    assert rep["methods"]["minv"]["non_finite_reference_blocks"] > 0


@pytest.mark.skipif(ERD is None, reason="example-robot-data is not installed")
@pytest.mark.parametrize("urdf,floating,dtype,methods", [
    ("icub_description/robots/icub.urdf", True, "float32", ["fd_grad"]),   # FD gradient "relative error 0.0076"
    ("romeo_description/urdf/romeo.urdf", False, "float64", ["minv"]),     # unrolled M^-1 "relative error inf"
    ("romeo_description/urdf/romeo.urdf", False, "float32", ["minv"]),
], ids=["icub-ff-float32", "romeo-float64", "romeo-float32"])
def test_real_robots_the_old_check_refused(urdf, floating, dtype, methods):
    h = grid_rbd.register_robot(f"sc_{urdf.split('/')[0]}_{dtype}", urdf_path=str(ERD / urdf), dtype=dtype,
                                floating_base=floating, algorithm_list=methods, verbose=False)
    assert h.provider == "generated"
    assert all(m["worst_ratio"] <= 1 for m in _report(h)["methods"].values())


def test_report_covers_variants_frames_and_paths():
    h = grid_rbd.register_robot("sc_iiwa_cover", urdf_path=str(BUNDLED_IIWA), dtype="float64",
                                algorithm_list=["rnea", "frame_jacobian"], verbose=False)
    rep = _report(h)["methods"]
    # rnea: 4 variants (qdd, f_ext present or not) on one batch each; the Jacobian: 4 extremes, then every frame
    # under every reference frame
    assert rep["rnea"]["checks"] == 4
    assert rep["frame_jacobian"]["checks"] == 4 + 3 * len(h.frame_names)
    assert rep["rnea"]["threaded_path"] and rep["frame_jacobian"]["threaded_path"]


# ---- a compiler that gets one piece wrong ----

WRAPPER = """#!{python}
# a compiler wrapper that edits the generated source before compiling it (the self-check must catch it)
import os, re, sys
args = sys.argv[1:]
def edit(src):
{edit}
for a in args:
    if a.endswith(".c") and os.path.exists(a):
        with open(a) as f:
            src = f.read()
        out = edit(src)
        assert out != src, "the wrapper's edit found nothing to change"
        with open(a, "w") as f:
            f.write(out)
os.execvp("cc", ["cc"] + args)
"""


def _wrapper(tmp_path, edit_body):
    path = tmp_path / "cc-wrapper"
    path.write_text(WRAPPER.format(python=sys.executable, edit=edit_body))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


# the first 9.81 in a function's body becomes 9.8101
GRAVITY_IN = """    i = src.index("{fn}(")
    j = src.index("9.81", i)
    return src[:j] + "9.8101" + src[j + 4:]
"""


@pytest.mark.parametrize("method,fn,variant", [
    ("rnea", "grid_v_rnea_a", "without f_ext"),   # inverse_dynamics(q, qd, qdd): the old check never ran it
    ("fd", "grid_v_fd_0", "without f_ext"),
], ids=["rnea-qdd-only", "fd-no-fext"])
def test_a_wrong_variant_is_caught(tmp_path, monkeypatch, method, fn, variant):
    monkeypatch.setenv("GRID_RBD_CC", _wrapper(tmp_path, GRAVITY_IN.format(fn=fn)))
    with pytest.raises(grid_rbd.BuildError) as e:
        grid_rbd.register_robot(f"sc_bad_{method}", urdf_path=str(BUNDLED_IIWA), dtype="float64",
                                algorithm_list=[method], cache_dir=str(tmp_path / "cache"), verbose=False)
    msg = str(e.value)
    assert f"compiled {method} {variant}" in msg and "not published" in msg
    assert "codegen=False" in msg and "dtype='float64'" in msg and "codegen_schedule" in msg
    assert "compiler" in msg
    # nothing was published: the next registration without the wrapper builds and works
    monkeypatch.delenv("GRID_RBD_CC")
    ok = grid_rbd.register_robot(f"sc_ok_{method}", urdf_path=str(BUNDLED_IIWA), dtype="float64",
                                 algorithm_list=[method], cache_dir=str(tmp_path / "cache"), verbose=False)
    assert ok.build_info["compiled"]


def test_a_wrong_middle_frame_is_caught(tmp_path, monkeypatch):
    """a constant changed in the LOCAL Jacobian of iiwa's fourth body (frame iiwa_link_4): only a check that runs
    every frame's body in every reference frame sees it"""
    edit = """    i = src.index("grid_fjl_3(const")
    m = re.compile("0[.][0-9]*[1-9]").search(src, i)
    return src[:m.start()] + repr(float(m.group(0)) * 1.0001) + src[m.end():]
"""
    monkeypatch.setenv("GRID_RBD_CC", _wrapper(tmp_path, edit))
    with pytest.raises(grid_rbd.BuildError) as e:
        grid_rbd.register_robot("sc_bad_jac", urdf_path=str(BUNDLED_IIWA), dtype="float64",
                                algorithm_list=["frame_jacobian"], cache_dir=str(tmp_path / "cache"), verbose=False)
    assert "compiled frame_jacobian at frame=" in str(e.value) and "reference_frame=1" in str(e.value)


def test_a_wrong_threaded_path_is_caught(tmp_path, monkeypatch):
    """the thread team skips its last tile: only a batch large enough for the team shows it"""
    edit = """    i = src.index("int grid_crba(const grid_call")
    j = src.index("#pragma omp for schedule(static)", i)
    k = src.index("i < tiles;", j)
    return src[:k] + "i < tiles - 1;" + src[k + len("i < tiles;"):]
"""
    monkeypatch.setenv("GRID_RBD_CC", _wrapper(tmp_path, edit))
    with pytest.raises(grid_rbd.BuildError) as e:
        grid_rbd.register_robot("sc_bad_team", urdf_path=str(BUNDLED_IIWA), dtype="float64",
                                algorithm_list=["crba"], cache_dir=str(tmp_path / "cache"), verbose=False)
    assert "compiled crba" in str(e.value) and "batch" in str(e.value)


def test_overflowing_gravity_is_refused_up_front():
    for g in (1e308, -1e7, float("inf")):
        with pytest.raises(ValueError, match="gravity must be a finite number of at most"):
            grid_rbd.register_robot("sc_g", urdf_path=str(BUNDLED_IIWA), gravity=g)
