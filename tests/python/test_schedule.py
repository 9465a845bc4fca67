"""register_robot(codegen_schedule=...) and precompile(codegen_schedule=...): checked before any build, passed to
the emitter, part of the cache's input key, shown in handle.options."""

import json

import numpy as np
import pytest

import grid_rbd
from grid_rbd import _core
from robot_cases import BUNDLED_IIWA, make_states

# the two methods the key test compares (the schedule, not the dynamics, is under test: test_rolled and test_codegen
# check every method on both schedules)
METHODS = ["inverse_dynamics", "minv"]


@pytest.fixture(autouse=True)
def _quiet(monkeypatch):
    monkeypatch.delenv("GRID_RBD_VERBOSE", raising=False)


@pytest.mark.parametrize("bad", ["fast", "ROLLED", "", None, 1])
def test_an_invalid_schedule_is_refused_before_building(tmp_path, bad):
    cache = tmp_path / "cache"
    for fn in (grid_rbd.register_robot, grid_rbd.precompile):
        with pytest.raises(ValueError) as e:
            fn("sched_bad", urdf_path=BUNDLED_IIWA, cache_dir=cache, codegen_schedule=bad, verbose=False)
        for allowed in ("'auto'", "'unrolled'", "'rolled'"):
            assert allowed in str(e.value)
        assert "codegen_schedule" in str(e.value)
    assert not cache.exists()  # nothing was generated or compiled


def test_the_schedule_reaches_the_key_the_emitter_and_the_options(tmp_path):
    ref = grid_rbd.register_robot("sched_ref", urdf_path=BUNDLED_IIWA, dtype="float64", codegen=False)
    s = make_states(ref, "random", 4)
    keys = {}
    for sched, code in (("auto", _core.SCHEDULE_AUTO), ("unrolled", _core.SCHEDULE_UNROLLED),
                        ("rolled", _core.SCHEDULE_ROLLED)):
        h = grid_rbd.register_robot(f"sched_{sched}", urdf_path=BUNDLED_IIWA, dtype="float64", cache_dir=tmp_path,
                                    codegen_schedule=sched, verbose=False, algorithm_list=METHODS)
        assert h.options["codegen_schedule"] == sched
        assert h._library.schedule == code  # what the extension handed to grid_emit_options.schedule
        assert json.loads(grid_rbd.registry.options_json(h.options))["codegen_schedule"] == sched
        assert h.build_info["compiled"]
        keys[sched] = h.build_info["input_key"]
        np.testing.assert_allclose(h.inverse_dynamics(s["q"], s["qd"], s["qdd"]),
                                   ref.inverse_dynamics(s["q"], s["qd"], s["qdd"]), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(h.minv(s["q"]), ref.minv(s["q"]), rtol=1e-10, atol=1e-12)
    assert len(set(keys.values())) == 3, keys  # one stage-1 entry per schedule
    # the same schedule again is a hit; the default is "auto"
    again = grid_rbd.register_robot("sched_default", urdf_path=BUNDLED_IIWA, dtype="float64", cache_dir=tmp_path,
                                    verbose=False, algorithm_list=METHODS)
    assert again.options["codegen_schedule"] == "auto" and again.build_info["cache_hit"]
    assert again.build_info["input_key"] == keys["auto"]
    # precompile keys it the same way
    entry = grid_rbd.precompile("sched_pre", urdf_path=BUNDLED_IIWA, dtype="float64", cache_dir=tmp_path,
                                codegen_schedule="unrolled", verbose=False, algorithm_list=METHODS)
    assert entry == grid_rbd.get_robot("sched_unrolled").cache_entry


def test_rolled_workspace_is_safe_under_concurrent_calls(tmp_path):
    """a rolled library needs workspace (the Runner's context): calls from several Python threads at once (the GIL
    released) each get their own, and equal the sequential results bit for bit"""
    import concurrent.futures
    h = grid_rbd.register_robot("sched_conc", urdf_path=BUNDLED_IIWA, dtype="float64", cache_dir=tmp_path,
                                codegen_schedule="rolled", verbose=False, algorithm_list=["aba", "crba"])
    assert h._library.meta["work_bytes"] > 0
    s = make_states(h, "random", 2000)
    want = h.aba(s["q"], s["qd"], s["u"]), h.crba(s["q"])
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda k: (h.aba(s["q"], s["qd"], s["u"]), h.crba(s["q"])), range(12)))
    for a, m in got:
        np.testing.assert_array_equal(a, want[0])
        np.testing.assert_array_equal(m, want[1])
