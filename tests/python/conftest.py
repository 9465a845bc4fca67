"""pytest set-up: one temporary robot.so cache for the whole session (each robot and dtype compiles once, in
background threads ahead of the tests), and the `robot` fixture: every robot case of robot_cases.CASES on the float64
reference, and the generated cases (robot_cases.GEN_CASES) on the generated library too."""

import os
import shutil
import tempfile

import pytest

import robot_cases
from robot_cases import CASES, GEN_CASES, Robot, case_path

_session_cache = None


def pytest_configure(config):
    """GRID_RBD_CACHE_DIR = a fresh temporary directory for this session (GRID_RBD_TEST_CACHE_DIR, when set,
    names a persistent one instead, to iterate locally without recompiling); pytest-xdist workers use the
    controller's"""
    global _session_cache
    keep = os.environ.get("GRID_RBD_TEST_CACHE_DIR")
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return  # an xdist worker: the controller's directory, inherited through the environment, is shared
    # The session's libraries compile at -O0 (the default tuning flags otherwise: the same C, no FMA contraction):
    # 4-9 s a robot instead of 20-50 s, which keeps `make test` inside CI's limit. The production flags (-O2) are
    # compiled and checked by tests/c/test_emit (iiwa, every float32 library; -Werror) and by every benchmark; the
    # tests that set GRID_RBD_CFLAGS themselves (hardening, lane stores) still do. GRID_RBD_TEST_CFLAGS overrides
    # this ("default": the build driver's own flags).
    flags = os.environ.get("GRID_RBD_TEST_CFLAGS", "-O0 -march=native -ffp-contract=fast -fno-math-errno -fopenmp")
    if flags != "default":
        os.environ["GRID_RBD_CFLAGS"] = flags
    if keep:
        os.makedirs(keep, exist_ok=True)
        os.environ["GRID_RBD_CACHE_DIR"] = keep
    else:
        _session_cache = tempfile.mkdtemp(prefix="grid-rbd-test-cache-")
        os.environ["GRID_RBD_CACHE_DIR"] = _session_cache


def pytest_collection_finish(session):
    """when any collected test uses the generated robot cases, start compiling them now, in the background, so the
    builds overlap the tests that come first"""
    ids = set()
    for item in session.items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        if "robot" in params and params["robot"][1] == "generated":
            ids.add(params["robot"][0].id)
        if "robot_case" in params:
            ids.add(params["robot_case"].id)
    if ids:
        robot_cases.start_precompile(robot_cases.synthetic_dir(), ids)


def pytest_runtest_setup(item):
    """a test that may change the compiler's environment (monkeypatch.setenv of GRID_RBD_CC, GRID_RBD_CFLAGS,
    GRID_RBD_CACHE_DIR; test_lane_store sets GRID_RBD_CFLAGS itself) waits for the background builds first: a build
    still running in a precompile thread would read the changed variables"""
    if "monkeypatch" in item.fixturenames or item.module.__name__ == "test_lane_store":
        robot_cases.wait_precompile()


def pytest_sessionfinish(session, exitstatus):
    robot_cases.stop_precompile()
    if _session_cache:
        shutil.rmtree(_session_cache, ignore_errors=True)


@pytest.fixture(scope="session")
def case_dir():
    """where the synthetic robot's URDF is written"""
    return robot_cases.synthetic_dir()


# every case on the reference; the generated cases on the generated library as well (its own robot.so per case, every
# method, shared by every test of the session)
PARAMS = [(case, provider) for case in CASES
          for provider in (("generated", "reference") if case.generated else ("reference",))]


@pytest.fixture(scope="session", params=PARAMS, ids=[f"{c.id}-{p}" for c, p in PARAMS])
def robot(request, case_dir):
    """one robot case on one provider, float64 (robot.handle32: float32 on the same provider)"""
    case, provider = request.param
    robot_cases.start_precompile(case_dir)
    path = case_path(case, case_dir)
    return Robot(case, path, robot_cases.handle_for(case, path, provider, "float64"), provider)


@pytest.fixture(scope="session", params=GEN_CASES, ids=[c.id for c in GEN_CASES])
def robot_case(request, case_dir):
    """(case, URDF path) of every generated robot case, with the background precompile started"""
    robot_cases.start_precompile(case_dir)
    return request.param, case_path(request.param, case_dir)
