"""The CUDA target without a GPU (runs in CI): the generated CUDA library of iiwa and go2 (floating base) compiles with
nvcc for an explicit architecture (sm_90), loads (metadata, every entry point) without a GPU, and device="auto" falls
back to the CPU with the reason in the repr. Skipped only when nvcc is missing."""

import ctypes
import os
import time
from pathlib import Path

import pytest

import grid_rbd
from grid_rbd import _core
from grid_rbd import cuda as gcuda
from robot_cases import BUNDLED_IIWA, SHARED_ROBOTS, example_robot_data_dir

ALL_ALGORITHMS = (1 << _core.ALGO_COUNT) - 1


def _need_nvcc():
    ok, why = gcuda.nvcc_status()
    if not ok:
        pytest.skip(f"nvcc is not available: {why}")


def _urdf(name):
    """iiwa: the bundled copy; go2: ../shared/robots, else example-robot-data's go2"""
    if name == "iiwa":
        return BUNDLED_IIWA
    p = SHARED_ROBOTS / "go2.urdf"
    if p.is_file():
        return p
    erd = example_robot_data_dir()
    if erd is not None and (erd / "go2_description/urdf/go2.urdf").is_file():
        return erd / "go2_description/urdf/go2.urdf"
    pytest.skip("no go2 URDF (../shared/robots or example-robot-data)")


@pytest.mark.parametrize("name,floating", [("iiwa", False), ("go2", True)], ids=["iiwa", "go2_ff"])
def test_precompile_cuda_without_gpu(tmp_path, name, floating):
    _need_nvcc()
    t0 = time.perf_counter()
    entry = Path(grid_rbd.precompile(f"{name}_cuda_ci", urdf_path=_urdf(name), floating_base=floating, dtype="float32",
                                     device="cuda", cuda_arch="sm_90", cache_dir=tmp_path, verbose=False))
    cold = time.perf_counter() - t0
    so = entry / "robot.so"
    assert so.is_file() and (entry / "robot.cu").is_file()
    assert '"cuda_arch":"90"' in (entry / "build_inputs.json").read_text()

    # loading needs no GPU: the CUDA runtime is linked statically and starts only at the first CUDA call
    lib = _core.CudaLibrary(so)
    meta = lib.meta
    assert meta["target"] == 1 and meta["dtype"] == "float32" and meta["algorithms"] == ALL_ALGORITHMS
    assert (meta["nv"], meta["nq"]) == ((18, 19) if floating else (7, 7))
    dll = ctypes.CDLL(str(so))
    for algo in _core.ALGORITHMS:
        for prefix in ("grid_", "grid_cuda_", "grid_host_"):
            getattr(dll, prefix + algo)  # AttributeError when missing
    for sym in ("grid_cuda_reserve", "grid_cuda_host_alloc", "grid_cuda_host_free", "grid_cuda_noop",
                "grid_cuda_device_info", "grid_cuda_time", "grid_cuda_last_error", "grid_cuda_use_device"):
        getattr(dll, sym)

    # the same request again is a stage-1 hit: no nvcc
    t0 = time.perf_counter()
    again = grid_rbd.precompile(f"{name}_cuda_ci", urdf_path=_urdf(name), floating_base=floating, dtype="float32",
                                device="cuda", cuda_arch="sm_90", cache_dir=tmp_path, verbose=False)
    assert Path(again) == entry and time.perf_counter() - t0 < cold


def test_generated_cuda_is_deterministic(tmp_path):
    """the same robot twice, force_rebuild: the same source bytes (so the same content key)"""
    _need_nvcc()
    a = Path(grid_rbd.precompile("iiwa_det", urdf_path=BUNDLED_IIWA, dtype="float64", device="cuda", cuda_arch="90",
                                 cache_dir=tmp_path / "a", verbose=False))
    b = Path(grid_rbd.precompile("iiwa_det", urdf_path=BUNDLED_IIWA, dtype="float64", device="cuda", cuda_arch="90",
                                 cache_dir=tmp_path / "b", verbose=False, force_rebuild=True))
    assert (a / "robot.cu").read_bytes() == (b / "robot.cu").read_bytes()
    assert a.name == b.name


def test_auto_without_gpu_runs_on_cpu(tmp_path):
    if gcuda.probe()["ok"]:
        pytest.skip("this machine has a GPU (test_cuda.py covers device='auto' there)")
    h = grid_rbd.register_robot("iiwa_auto_cpu", urdf_path=BUNDLED_IIWA, cache_dir=tmp_path, verbose=False)
    assert h.device == "cpu"
    assert "device='cpu' (auto: no GPU" in repr(h), repr(h)
    assert h.device_reason.startswith("auto: no GPU")
    with pytest.raises(grid_rbd.CudaError, match="needs an NVIDIA GPU"):
        grid_rbd.register_robot("iiwa_cuda_nogpu", urdf_path=BUNDLED_IIWA, device="cuda", cache_dir=tmp_path,
                                verbose=False)
    # the CPU handle's pinned_empty is an ordinary array
    out = h.pinned_empty((3, h.nv))
    assert out.shape == (3, h.nv) and out.dtype == h.dtype


def test_device_option_is_checked():
    with pytest.raises(ValueError, match="device must be one of"):
        grid_rbd.register_robot("x", urdf_path=BUNDLED_IIWA, device="gpu", verbose=False)
    with pytest.raises(ValueError, match="codegen=True"):
        grid_rbd.register_robot("x", urdf_path=BUNDLED_IIWA, device="cuda", codegen=False, verbose=False)
    with pytest.raises(TypeError, match="cuda_arch"):
        grid_rbd.register_robot("x", urdf_path=BUNDLED_IIWA, device="cpu", cuda_arch=90, verbose=False)


def test_nvcc_missing_is_named(monkeypatch, tmp_path):
    """device='cuda' with no nvcc says so (the build driver's lookup, through GRID_RBD_NVCC)"""
    monkeypatch.setenv("GRID_RBD_NVCC", str(tmp_path / "no-such-nvcc"))
    monkeypatch.setattr(gcuda, "_nvcc", None)
    try:
        with pytest.raises(grid_rbd.BuildError, match="nvcc"):
            grid_rbd.precompile("iiwa_nonvcc", urdf_path=BUNDLED_IIWA, device="cuda", cuda_arch="sm_90",
                                cache_dir=tmp_path, verbose=False)
    finally:
        monkeypatch.undo()
        gcuda._nvcc = None
