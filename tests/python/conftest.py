"""pytest fixtures: `robot` runs a test once per robot case of robot_cases.CASES (float64 handle + Pinocchio map)."""

import pytest

import grid_rbd
from robot_cases import CASES, Robot, case_path


@pytest.fixture(scope="session", params=CASES, ids=[c.id for c in CASES])
def robot(request, tmp_path_factory):
    case = request.param
    path = case_path(case, tmp_path_factory.mktemp(case.id))
    handle = grid_rbd.register_robot(case.id, urdf_path=path, floating_base=case.floating_base,
                                     ignore_mimic=case.ignore_mimic, dtype="float64")
    return Robot(case, path, handle)
