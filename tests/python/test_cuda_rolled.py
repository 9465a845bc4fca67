"""device="cuda" with codegen_schedule="rolled" (per-thread workspace slices, __device__ body tables) against the
float64 CPU reference on every method, variant and Jacobian frame (pytest -m gpu; skipped without a GPU)."""

import numpy as np
import pytest

import grid_rbd
from grid_rbd import cuda as gcuda
from robot_cases import CASES, make_states, robot_path
from test_codegen import all_outputs, float64_bounds, pose_as_matrices

_ok, _why = gcuda.available()
RTOL64 = 1e-10  # (test_codegen holds the CPU's generated code to 1e-12; rolled CUDA h1_2_ff: 6.0e-12, run 32)
pytestmark = [pytest.mark.gpu] + ([] if _ok else [pytest.mark.skip(reason=f"needs an NVIDIA GPU and nvcc: {_why}")])

# h1_2_ff and panda: coupled mimic joints (the recursion with couplings in FD, ABA and M^-1: a leader's and a host's)
CASES_ROLLED = ("iiwa", "go2_ff", "g1_29dof_ff", "atlas_ff", "synthetic_ff", "joints_ff", "h1_2_ff", "panda")


def errors(a, b):
    a = np.asarray(a, dtype=np.float64).reshape(len(a), -1)
    b = np.asarray(b, dtype=np.float64).reshape(len(b), -1)
    norms = np.linalg.norm(b, axis=1)
    scale = max(1.0, float(norms.max(initial=0.0)))
    return np.linalg.norm(a - b, axis=1) / np.maximum(norms, 1e-6 * scale)


@pytest.mark.parametrize("cid", CASES_ROLLED)
@pytest.mark.parametrize("batch", (1, 7, 300))
def test_rolled_cuda_matches_reference(cid, batch):
    case = next(c for c in CASES if c.id == cid)
    common = dict(urdf_path=robot_path(case), floating_base=case.floating_base, ignore_mimic=case.ignore_mimic,
                  verbose=False)
    ref = grid_rbd.register_robot(f"{cid}_rref_gpu", dtype="float64", codegen=False, device="cpu", **common)
    gpu = grid_rbd.register_robot(f"{cid}_rolled_cuda", dtype="float64", device="cuda", codegen_schedule="rolled",
                                  **common)
    assert gpu.device == "cuda"
    s = make_states(ref, "random", batch, seed=3)
    failures = []
    # RTOL64, or per state what two float64 formulations may differ by (the CPU's generated code is held to the same
    # excess): eps cond(M) for the FD gradient, eps cond(M) cond(Lambda) for the operational-space inertia
    bound = float64_bounds(ref, s)
    for (label, a), (_, b) in zip(all_outputs(gpu, s), all_outputs(ref, s)):
        limit = np.maximum(RTOL64, bound(label, b))
        if label.startswith("end_effector_pose"):
            a, b = pose_as_matrices(a), pose_as_matrices(b)
        err = errors(a, b)
        if not np.all(err <= limit):
            i = int(np.argmax(err / limit))
            failures.append(f"{label}: state {i} error {err[i]:.2e} > {np.broadcast_to(limit, err.shape)[i]:.1e}")
    assert not failures, f"{cid} B={batch} rolled CUDA:\n" + "\n".join(failures)
