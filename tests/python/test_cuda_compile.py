"""The CUDA target without a GPU (runs in CI): the generated CUDA library of iiwa and go2 (floating base) compiles with
nvcc for an explicit architecture (sm_90) and loads (metadata, every entry point) without a GPU; its kernels and host
runtime, run by a CPU emulation of CUDA (cuda_emu.h), equal the C target; device="auto" falls back to the CPU with the
reason in the repr; the device-array path checks its arguments and passes the right pointers and stream (a stand-in
library). The nvcc tests skip only when nvcc is missing."""

import ctypes
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import grid_rbd
from grid_rbd import _core, _signatures
from grid_rbd import cuda as gcuda
from robot_cases import BUNDLED_IIWA, JOINTS_URDF, SHARED_ROBOTS, SYNTHETIC_URDF, example_robot_data_dir
from test_mimic import grouped_urdf, mimic_urdf


# a library's default method set: every row but the opt-in ones (second order, built only when named)
DEFAULT_METHODS = tuple(r["name"] for r in _signatures.ROWS if not r["opt_in"])


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


def _check_cuda_library(entry, nv_nq, dtype, methods=None):
    """a CUDA cache entry built for sm_90: robot.so and robot.cu present, and the library loads without a GPU (the
    CUDA runtime is linked statically and starts only at the first CUDA call) with the entry points of its methods
    (every row of the table unless methods names them)"""
    so = entry / "robot.so"
    assert so.is_file() and (entry / "robot.cu").is_file()
    assert '"cuda_arch":"90"' in (entry / "build_inputs.json").read_text()
    meta = _core.CudaLibrary(so).meta
    methods = list(DEFAULT_METHODS) if methods is None else methods
    assert meta["target"] == 1 and meta["dtype"] == dtype and list(meta["methods"]) == methods
    assert (meta["nv"], meta["nq"]) == nv_nq
    dll = ctypes.CDLL(str(so))
    for algo in methods:
        for prefix in ("grid_", "grid_cuda_", "grid_host_"):
            getattr(dll, prefix + algo)  # AttributeError when missing
    for sym in ("grid_cuda_reserve", "grid_cuda_host_alloc", "grid_cuda_host_free", "grid_cuda_noop",
                "grid_cuda_device_info", "grid_cuda_time", "grid_cuda_last_error", "grid_cuda_use_device"):
        getattr(dll, sym)


# the floating-base library's methods nvcc compiles in CI: a dynamics row, the end-effector pose and a centroidal row
# (iiwa64_cuda below compiles every row; the whole of go2's took 100 s of CI, its derivative rows most of it)
GO2_CUDA_METHODS = ["rnea", "ee_pose", "ccrba"]


def test_precompile_cuda_without_gpu(tmp_path):
    """go2 on a floating base, float32, cuda_arch="sm_90", some methods: compiles, loads with exactly those methods,
    and the same request again is a stage-1 hit (no nvcc)"""
    _need_nvcc()
    t0 = time.perf_counter()
    entry = Path(grid_rbd.precompile("go2_cuda_ci", urdf_path=_urdf("go2"), floating_base=True, dtype="float32",
                                     device="cuda", cuda_arch="sm_90", cache_dir=tmp_path, verbose=False,
                                     algorithm_list=GO2_CUDA_METHODS))
    cold = time.perf_counter() - t0
    _check_cuda_library(entry, (18, 19), "float32", GO2_CUDA_METHODS)
    t0 = time.perf_counter()
    again = grid_rbd.precompile("go2_cuda_ci", urdf_path=_urdf("go2"), floating_base=True, dtype="float32",
                                device="cuda", cuda_arch="sm_90", cache_dir=tmp_path, verbose=False,
                                algorithm_list=GO2_CUDA_METHODS)
    assert Path(again) == entry and time.perf_counter() - t0 < cold


def test_iiwa_cuda_library_loads_without_gpu(iiwa64_cuda):
    """iiwa, fixed base, float64 (the module's shared build)"""
    _check_cuda_library(iiwa64_cuda, (7, 7), "float64")


@pytest.fixture(scope="module")
def iiwa64_cuda(tmp_path_factory):
    """iiwa's float64 CUDA library (its cache entry), built once for this module"""
    _need_nvcc()
    cache = tmp_path_factory.mktemp("iiwa64-cuda")
    return Path(grid_rbd.precompile("iiwa64", urdf_path=BUNDLED_IIWA, dtype="float64", device="cuda", cuda_arch="90",
                                    cache_dir=cache, verbose=False))


def _emitted_cuda(tmp_path_factory, name, urdf, schedule):
    """a directory holding robot.cu of the robot (float64, floating base) as a build would write it, not compiled: the
    emulation tests need only the text (nvcc itself is exercised by the iiwa libraries above and by
    test_precompile_cuda_without_gpu; each nvcc build of these took a minute or two of CI)"""
    d = tmp_path_factory.mktemp(f"{name}-cu-{schedule}")
    model = _core.Model(urdf.encode(), f"<{name}>", floating_base=True)
    sched = {"auto": _core.SCHEDULE_AUTO, "rolled": _core.SCHEDULE_ROLLED}[schedule]
    (d / "robot.cu").write_text(_core.emit_source(model, _core.FLOAT64, 1, sched))
    return d


@pytest.fixture(scope="module")
def synthetic_ff64_cuda(tmp_path_factory):
    """the synthetic robot's (continuous, prismatic and fixed joints) float64 CUDA source on a floating base"""
    return _emitted_cuda(tmp_path_factory, "synthetic", SYNTHETIC_URDF, "auto")


@pytest.fixture(scope="module")
def iiwa64_rolled_cuda(tmp_path_factory):
    """iiwa's float64 CUDA library with every function forced onto the rolled schedule (per-state workspace)"""
    _need_nvcc()
    cache = tmp_path_factory.mktemp("iiwa64-rolled-cuda")
    return Path(grid_rbd.precompile("iiwa64_rolled", urdf_path=BUNDLED_IIWA, dtype="float64", device="cuda",
                                    cuda_arch="90", cache_dir=cache, verbose=False, codegen_schedule="rolled"))


@pytest.fixture(scope="module")
def synthetic_ff64_rolled_cuda(tmp_path_factory):
    """the synthetic robot on a floating base, float64, forced rolled"""
    return _emitted_cuda(tmp_path_factory, "synthetic", SYNTHETIC_URDF, "rolled")


def _joints_ff64(tmp_path_factory, schedule, urdf=JOINTS_URDF, name="joints"):
    return _emitted_cuda(tmp_path_factory, name, urdf, schedule)


@pytest.fixture(scope="module")
def mimic_ff64_cuda(tmp_path_factory):
    """coupled mimic joints (a chain, a leader off the path), float64, floating base"""
    return _joints_ff64(tmp_path_factory, "auto", mimic_urdf(), "mimic")


@pytest.fixture(scope="module")
def mimic_ff64_rolled_cuda(tmp_path_factory):
    return _joints_ff64(tmp_path_factory, "rolled", mimic_urdf(), "mimic")


@pytest.fixture(scope="module")
def grouped_ff64_cuda(tmp_path_factory):
    """mimic groups hanging from one body (a chain at its leader, two fingers at a host) with only members below a
    member: FD, ABA and M^-1 by the articulated-body recursion with the couplings"""
    return _joints_ff64(tmp_path_factory, "auto", grouped_urdf(leaf=True), "grouped")


@pytest.fixture(scope="module")
def grouped_ff64_rolled_cuda(tmp_path_factory):
    return _joints_ff64(tmp_path_factory, "rolled", grouped_urdf(leaf=True), "grouped")


@pytest.fixture(scope="module")
def joints_ff64_cuda(tmp_path_factory):
    """the planar / spherical test robot on a floating base, float64"""
    return _joints_ff64(tmp_path_factory, "auto")


@pytest.fixture(scope="module")
def joints_ff64_rolled_cuda(tmp_path_factory):
    """the same, forced rolled"""
    return _joints_ff64(tmp_path_factory, "rolled")


def test_only_rolled_functions_are_group_templates(iiwa64_cuda, iiwa64_rolled_cuda):
    """the group-size template (lanes sharing a state) is on rolled functions only: on an unrolled function nvcc's
    front end ran for minutes (g1); the unrolled library has none, the rolled one a group kernel per wide output"""
    unrolled = (iiwa64_cuda / "robot.cu").read_text()
    rolled = (iiwa64_rolled_cuda / "robot.cu").read_text()
    assert "template <int GRID_G_" not in unrolled and "grid_kg_" not in unrolled
    templates = re.findall(r"template <int GRID_G_ = 1> static __device__ __forceinline__ void grid_s_(\w+)\(", rolled)
    assert "crba" in templates and "minv" in templates and "rnea_a" in templates, templates
    kernels = set(re.findall(r"static __global__ void __launch_bounds__\(GRID_CUDA_BLOCK, GRID_CUDA_MIN_BLOCKS\)\n"
                             r"grid_kg_(\w+)\(", rolled))
    assert {"crba", "minv", "fk", "frame_jacobian", "rnea_grad", "fd_grad"} <= kernels, kernels
    assert "rnea_a" not in kernels, kernels
    # the FD composites share the state's lanes with their (rolled) callees: the body (src/emit/fd_grad.h) calls FD
    # through a macro that passes the group's template argument and lanes
    assert re.search(r"#define GRID_FDG_FD_\(o_\) grid_s_fd_\w+<GRID_G_>\(cq, cv, ca, cf, 0, o_, 0, 0, ws, 1, gl, gm\)\n",
                     rolled)
    assert "    GRID_FDG_FD_(qdd);\n" in rolled and "#define GRID_FDG_K0_ gl\n" in rolled


def test_only_the_largest_steps_are_their_own_functions():
    """a rolled step of more expression nodes than its target's limit is its own function, not inlined: on the C
    target past 4000 nodes (the floating root's RNEA-gradient step too), on CUDA, where a call costs registers, only
    past 10000 (the floating root's second-order steps, which every kernel that inlined them made ptxas compile
    again: bench/RESULTS-gpu.md run 34), through cuda_host.h's GRID_BIG_FN_ (GRID_CUDA_INLINE_BIG=1 inlines them)"""
    model = _core.Model(SYNTHETIC_URDF.encode(), "<synthetic>", floating_base=True)
    ids = [_signatures.row(m)["id"] for m in ("idsva_so", "rnea_grad")]
    big = {}
    for target, qual in ((0, r"static __attribute__\(\(noinline\)\)"), (1, "GRID_BIG_FN_")):
        src = _core.emit_source(model, _core.FLOAT32, target, _core.SCHEDULE_ROLLED, methods=ids)
        big[target] = {re.sub(r"^grid_rv?_", "", f) for f in re.findall(qual + r" void (grid_rv?_\w+)\(", src)}
    assert big[1] and all(f.startswith("idsva_so_") for f in big[1]), big
    assert big[1] < big[0] and any(f.startswith("rnea_grad_") for f in big[0] - big[1]), big
    host = (RUNTIME / "cuda_host.h").read_text()
    assert "#define GRID_BIG_FN_ static __device__ __noinline__" in host and "GRID_CUDA_INLINE_BIG 0" in host


def test_rolled_cuda_compiles_and_states_its_workspace(iiwa64_rolled_cuda):
    """a forced-rolled robot compiles with nvcc: its rows state the per-state workspace, the model tables are in global
    memory (__device__, not the 64 KB constant bank), and the kernels take a workspace"""
    cu = (iiwa64_rolled_cuda / "robot.cu").read_text()
    assert "static __device__ const grid_real grid_body_[" in cu and "static __device__ const int grid_parent_[" in cu
    assert "__constant__ const grid_real grid_body_" not in cu
    assert "grid_real *const wsl = ws + (b0 + lane) * wst;" in cu and "grid_cuda_scratch_(" in cu
    lib = _core.CudaLibrary(iiwa64_rolled_cuda / "robot.so")
    meta = lib.meta
    assert meta["target"] == 1 and meta["work_bytes"] > 0
    dll = ctypes.CDLL(str(iiwa64_rolled_cuda / "robot.so"))
    for algo in DEFAULT_METHODS:
        getattr(dll, "grid_cuda_" + algo)
    # every row's round trip asks the runtime for its workspace (bytes per state); q_pullback keeps no state: none
    work = dict(re.findall(r"grid_io_ io = \{grid_cuda_(\w+), .*?, \(int\)sizeof\(grid_real\), (\d+)LL\};", cu))
    assert sorted(work) == sorted(DEFAULT_METHODS), work
    assert all((int(w) > 0) == (a != "q_pullback") for a, w in work.items()), work


_EMIT = """
import sys
from grid_rbd import _core
model = _core.Model(open(sys.argv[1], "rb").read(), "<iiwa>", floating_base=False)
sys.stdout.write(_core.emit_source(model, _core.FLOAT64, 1, getattr(_core, sys.argv[2])))
"""


@pytest.mark.parametrize("schedule", ["SCHEDULE_AUTO", "SCHEDULE_ROLLED"])
def test_generated_cuda_is_deterministic(schedule):
    """iiwa's CUDA source emitted by two processes with different hash seeds: the same bytes (so the same content
    key), on both schedules"""
    outs = [subprocess.run([sys.executable, "-c", _EMIT, str(BUNDLED_IIWA), schedule], capture_output=True,
                           check=True, env=dict(os.environ, PYTHONHASHSEED=seed)).stdout for seed in ("1", "2")]
    assert outs[0] == outs[1] and b"__global__" in outs[0]


# ---- the kernels and the host runtime, executed by a CPU emulation of CUDA (cuda_emu.h) ----
HERE = Path(__file__).resolve().parent


REPO = HERE.parents[1]
RUNTIME = REPO / "src" / "runtime"


def _emulation_cxx():
    """the C++ compiler for the emulation programs: clang++ compiles them in less than half g++'s time"""
    return shutil.which("clang++") or shutil.which("g++") or shutil.which("c++")


def _emulated_source(cu_text, harness="cuda_emu_harness.cpp"):
    """robot.cu and the host runtime it links (src/runtime/cuda_runtime.cu) rewritten for cuda_emu.h, with the harness
    appended (harness None: robot.cu alone, a further part of it); compiled with -I src/runtime -I include
    (cuda_host.h, conv_state.h, grid/abi.h, grid/convention.h)"""
    src = cu_text + ("\n" + (RUNTIME / "cuda_runtime.cu").read_text() if harness else "")
    src = src.replace("#include <cuda_runtime.h>\n", '#include "cuda_emu.h"\n')
    src = src.replace("extern __shared__ __align__(16) unsigned char grid_smem_[];",
                      "unsigned char *grid_smem_ = emu_smem_ptr;")
    src = re.sub(r"(\w+)<<<([^,]+), ([^,]+), ([^,]+), ([^>]+)>>>\(([^;]*)\);",
                 lambda m: f"emu_launch({m[1]}, {m[2]}, {m[3]}, {m[4]}, {m[5]}{', ' if m[6] else ''}{m[6]});", src)
    assert "<<<" not in src and "__shared__" not in src
    return src + ((HERE / harness).read_text() if harness else "")


def _emulation_program(tmp_path, cu_text, defines=(), harness="cuda_emu_harness.cpp", link=(), apart=False):
    """the emulated program of a robot.cu text (_emulated_source with harness), compiled with -D defines and linked
    with link (objects and libraries after the source): its path; skips without a C++20 compiler. A text of several
    parts that must be compiled apart (a float64 part: "grid-rbd parts: N (compile as ... part 1 is float64"): part 2,
    of the library's real type, with the runtime and the harness, each other part alone, linked; apart: any text of
    several parts so, as the build driver compiles it"""
    gxx = _emulation_cxx()
    if not gxx:
        pytest.skip("no C++ compiler")
    src, exe = tmp_path / "emulated.cpp", tmp_path / "emulated"
    src.write_text(_emulated_source(cu_text, harness))
    flags = ["-std=c++20", "-O0", "-w", f"-I{HERE}", f"-I{RUNTIME}", f"-I{REPO / 'include'}", *defines]
    m = re.match(r"/\* grid-rbd parts: (\d+) \(compile " + ("(?:once, or )?as" if apart else "as"), cu_text)
    parts = []
    for k in [k for k in range(1, int(m[1]) + 1 if m else 0) if k != 2]:
        part_src, obj = tmp_path / f"emulated_part{k}.cpp", tmp_path / f"emulated_part{k}.o"
        part_src.write_text(_emulated_source(cu_text, None))
        p = subprocess.run([gxx, *flags, f"-DGRID_PART={k}", "-c", str(part_src), "-o", str(obj)],
                           capture_output=True, text=True)
        assert p.returncode == 0, p.stderr[-3000:]
        parts.append(str(obj))
    p = subprocess.run([gxx, *flags, *(["-DGRID_PART=2"] if m else []), str(src), *parts, *link, "-o", str(exe),
                        "-ldl", "-lpthread"], capture_output=True, text=True)
    if p.returncode and "barrier" in p.stderr:
        pytest.skip(f"{gxx} has no C++20 <barrier>")
    assert p.returncode == 0, p.stderr[-3000:]
    return exe


@pytest.mark.parametrize("which,defines", [
    ("iiwa", []),                                                            # the default plan, one chunk
    ("synthetic_ff", ["-DGRID_CUDA_SMEM_MAX=0", "-DGRID_CUDA_SMEM_MAX_WIDE=0",  # nothing staged; many chunks
                      "-DGRID_CUDA_CHUNK_BYTES=4096", "-DGRID_CUDA_CHUNK_MIN_STATES=1",  # (outputs in two halves);
                      "-DGRID_CUDA_INTERLEAVE=0"]),                         # the FD composites' arrays per lane
    ("synthetic_ff", ["-DGRID_CUDA_OUT_STAGE_MAX=4096", "-DGRID_CUDA_SMEM_MAX=1000000", "-DGRID_CUDA_PACK_INPUTS=1",
                      "-DGRID_CUDA_ZERO_COPY_MAX=30000",     # everything staged; packed inputs; zero-copy up to B=46;
                      "-DGRID_CUDA_FILL_BLOCKS=0"]),         # blocks of 128 threads however small the batch
    ("iiwa_rolled", []),                                                     # rolled: per-state workspace
    ("synthetic_ff_rolled", ["-DGRID_CUDA_WORK_MAX=1", "-DGRID_CUDA_CHUNK_BYTES=4096", "-DGRID_CUDA_CHUNK_MIN_STATES=1",
                             "-DGRID_CUDA_PACK_INPUTS=1", "-DGRID_CUDA_SMEM_MAX=0",
                             "-DGRID_CUDA_SMEM_MAX_WIDE=0"]),  # launches in slices of a warp
    ("joints_ff", []),                                                       # planar and spherical joints; the
                                                                             # RNEA gradient in split pieces
    ("joints_ff", ["-DGRID_CUDA_SPLIT_MAX_ROLLED=7"]),                       # split at B = 1, 7; rolled after
    ("joints_ff", ["-DGRID_CUDA_STAGED_MAX=7", "-DGRID_CUDA_FUSE_MAX=7"]),   # the FD gradient staged at B = 1, 7
                                                                             # only (FD and M^-1 in one launch): its
                                                                             # composite kernel after
    ("joints_ff_rolled", []),
    ("joints_ff_rolled", ["-DGRID_CUDA_WORK_MAX=1", "-DGRID_CUDA_STAGED_BYTES=1"]),  # the staged FD gradient
                                                                             # in slices of a warp, its callees'
                                                                             # workspace too
    ("mimic_ff", ["-DGRID_CUDA_SMEM_MAX=0", "-DGRID_CUDA_SMEM_MAX_WIDE=0"]),  # coupled mimic joints, in place
    ("mimic_ff_rolled", []),
    ("grouped_ff", []),  # FD, ABA and M^-1 by the coupled articulated-body recursion
    ("grouped_ff_rolled", []),
    # rolled functions with lanes sharing a state (grid_kg_<fn>): the columns loops split over 4 lanes, over a warp
    # in slices of a warp's states (ragged tails: B = 7, 33), 2 on iiwa and 8 on the joints robot
    ("synthetic_ff_rolled", ["-DGRID_CUDA_GROUP=4", "-DGRID_CUDA_GROUP_MIN_OUT=1"]),
    ("synthetic_ff_rolled", ["-DGRID_CUDA_GROUP=32", "-DGRID_CUDA_GROUP_MIN_OUT=1", "-DGRID_CUDA_WORK_MAX=1"]),
    ("iiwa_rolled", ["-DGRID_CUDA_GROUP=2", "-DGRID_CUDA_GROUP_MIN_OUT=1", "-DGRID_CUDA_FILL_BLOCKS=0"]),
    # one thread per state (the rolled default is GRID_CUDA_GROUP = 8 lanes), gradients included
    ("joints_ff_rolled", ["-DGRID_CUDA_GROUP=1"]),
], ids=["iiwa-default", "synthetic_ff-in-place-chunked", "synthetic_ff-all-staged-packed-zero-copy-block128", "iiwa-rolled",
        "synthetic_ff-rolled-sliced-chunked", "joints_ff", "joints_ff-split-up-to-7", "joints_ff-fd-grad-staged-up-to-7",
        "joints_ff-rolled", "joints_ff-rolled-sliced", "mimic_ff", "mimic_ff-rolled", "grouped_ff", "grouped_ff-rolled",
        "synthetic_ff-rolled-group4", "synthetic_ff-rolled-group32-sliced", "iiwa-rolled-group2-block128",
        "joints_ff-rolled-thread"])
def test_kernels_match_the_c_target_in_emulation(tmp_path, request, which, defines):
    """grid_cuda_<algo> (tiles, plan, tails, variants, rolled workspace and slices) and grid_host_<algo> (chunks,
    packing) run on the CPU, one std::thread per CUDA thread, and must equal the C target of the same robot (float64,
    1e-10; the unrolled C library also for the rolled CUDA ones) at B = 1, 7, 33, 300 (rolled: 70)"""
    fixture = {"iiwa": "iiwa64_cuda", "synthetic_ff": "synthetic_ff64_cuda", "iiwa_rolled": "iiwa64_rolled_cuda",
               "synthetic_ff_rolled": "synthetic_ff64_rolled_cuda", "joints_ff": "joints_ff64_cuda",
               "joints_ff_rolled": "joints_ff64_rolled_cuda", "mimic_ff": "mimic_ff64_cuda",
               "mimic_ff_rolled": "mimic_ff64_rolled_cuda", "grouped_ff": "grouped_ff64_cuda",
               "grouped_ff_rolled": "grouped_ff64_rolled_cuda"}[which]
    entry = request.getfixturevalue(fixture)
    if which.startswith("iiwa"):
        kw = {"urdf_path": BUNDLED_IIWA}
    elif which.startswith("joints"):
        kw = {"urdf_string": JOINTS_URDF, "floating_base": True}
    elif which.startswith("mimic"):
        kw = {"urdf_string": mimic_urdf(), "floating_base": True}
    elif which.startswith("grouped"):
        kw = {"urdf_string": grouped_urdf(leaf=True), "floating_base": True}
    else:
        kw = {"urdf_string": SYNTHETIC_URDF, "floating_base": True}
    if which.endswith("rolled"):
        assert "grid_cuda_scratch_(" in (entry / "robot.cu").read_text()
    cpu = grid_rbd.register_robot(f"{which}_emu_cpu", dtype="float64", device="cpu", cache_dir=None,
                                  verbose=False, **kw)
    exe = _emulation_program(tmp_path, (entry / "robot.cu").read_text(), defines)
    # the gradients run in the configurations without knobs (and the rolled / joint-type / mimic ones), with one
    # thread per state, with the split form or the staged FD gradient for small batches only, and with the staged FD
    # gradient in slices; the other knob variants exercise the runtime's staging, chunks and slices on the other rows
    # (CI time: docs/cuda.md)
    grads = not defines or defines in (["-DGRID_CUDA_GROUP=1"], ["-DGRID_CUDA_SPLIT_MAX_ROLLED=7"],
                                       ["-DGRID_CUDA_STAGED_MAX=7", "-DGRID_CUDA_FUSE_MAX=7"],
                                       ["-DGRID_CUDA_WORK_MAX=1", "-DGRID_CUDA_STAGED_BYTES=1"])
    env = dict(os.environ, **({} if grads else {"EMU_SKIP_GRADIENTS": "1"}))
    # a rolled library's wide rows run GRID_CUDA_GROUP threads per state: 70 states span several blocks there
    sizes = ["1", "7", "33", "70" if which.endswith("rolled") else "300"]
    r = subprocess.run([str(exe), cpu.library_path, *sizes], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "0 mismatches" in r.stdout


def test_coupled_second_order_kernels_match_the_c_target_in_emulation(tmp_path):
    """idsva_so, fdsva_so and the pose Hessian on coupled mimic joints (a floating base: the giant root steps as their
    own functions, the full-coordinate tensors and their projection in the workspace; the Hessian's composite on the
    full coordinates): kernels and host round trip equal the C target at B = 1, 7, 33 (float64, 1e-10); the CUDA
    text from emit_source, no nvcc"""
    algos = ["idsva_so", "fdsva_so", "ee_pose_hessian"]
    model = _core.Model(mimic_urdf().encode(), "<mimic>", floating_base=True)
    cu = _core.emit_source(model, _core.FLOAT64, 1, _core.SCHEDULE_AUTO,
                           methods=[_signatures.row(a)["id"] for a in algos])
    assert "GRID_BIG_FN_ void" in cu and "*const of = ws + " in cu
    cpu = grid_rbd.register_robot("mimic_ff_so_emu_cpu", urdf_string=mimic_urdf(), floating_base=True, dtype="float64",
                                  device="cpu", cache_dir=tmp_path, verbose=False, algorithm_list=algos)
    exe = _emulation_program(tmp_path, cu)
    r = subprocess.run([str(exe), cpu.library_path, "1", "7", "33"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and " 0 mismatches" in r.stdout, r.stdout[-3000:] + r.stderr[-2000:]
    assert "21 checks" in r.stdout  # (idsva_so, fdsva_so with their optional inputs absent and given, the Hessian;
    # three batch sizes)
    assert "grid_s_ee_pose_hessian_m(" in cu


def test_parts_compiled_apart_match_the_c_target_in_emulation(tmp_path, synthetic_ff64_cuda):
    """the CUDA text compiled part by part, as the build driver does: rows that share per-state functions sit in
    different parts with their own copies (emit_target.parts_apart; the FD gradient's staged kernels apart from FD,
    M^-1 and the RNEA gradient), and every row and variant, gradients included, equals the C target at B = 1, 7, 33"""
    cu = (synthetic_ff64_cuda / "robot.cu").read_text()
    parts = int(re.match(r"/\* grid-rbd parts: (\d+)", cu)[1])
    assert parts > 2 and cu.count("#ifndef GRID_FN_") > parts
    cpu = grid_rbd.register_robot("synthetic_ff_emu_cpu", urdf_string=SYNTHETIC_URDF, floating_base=True,
                                  dtype="float64", device="cpu", verbose=False)
    exe = _emulation_program(tmp_path, cu, apart=True)
    assert len(list(tmp_path.glob("emulated_part*.o"))) == parts - 1
    r = subprocess.run([str(exe), cpu.library_path, "1", "7", "33"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and " 0 mismatches" in r.stdout, r.stdout[-3000:] + r.stderr[-2000:]


def test_rows_computed_in_float64_match_the_c_target_in_emulation(tmp_path):
    """a float32 library computes fdsva_so in float64 (emit_method.wide_real): its CUDA text is two parts, the float64
    one with its entry points renamed, the float32 one widening the inputs and rounding the outputs around them in
    slices on the stream (of 32 states here: B = 33 takes two); emulated, its kernels and host round trip equal the C
    target's float32 library (widened the same way) at B = 1, 7, 33, beside a float32 row (rnea) in the same library"""
    algos = ["fdsva_so", "rnea"]
    model = _core.Model(SYNTHETIC_URDF.encode(), "<synthetic>", floating_base=True)
    cu = _core.emit_source(model, _core.FLOAT32, 1, _core.SCHEDULE_AUTO,
                           methods=[_signatures.row(a)["id"] for a in algos])
    assert cu.startswith("/* grid-rbd parts: 2 (compile as 2 objects") and "#error" in cu.split("#if GRID_PART == 1")[0]
    assert "#define grid_cuda_fdsva_so grid_cuda_f64_fdsva_so" in cu and "typedef double grid_real;" in cu
    assert "#define grid_cuda_rnea " not in cu  # (a float32 row stays in the float32 part)
    cpu = grid_rbd.register_robot("synthetic_ff32_wide_emu_cpu", urdf_string=SYNTHETIC_URDF, floating_base=True,
                                  dtype="float32", device="cpu", cache_dir=tmp_path, verbose=False,
                                  algorithm_list=algos)
    exe = _emulation_program(tmp_path, cu, ["-DGRID_CUDA_STAGED_BYTES=1"])
    r = subprocess.run([str(exe), cpu.library_path, "1", "7", "33"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and " 0 mismatches" in r.stdout, r.stdout[-3000:] + r.stderr[-2000:]
    assert "18 checks" in r.stdout  # (fdsva_so's two variants, rnea's four, three batch sizes)


def test_pose_hessian_kernels_match_the_c_target_in_emulation(tmp_path):
    """end_effector_pose_hessian (opt-in: the default fixtures leave it out) with the pose gradient and VJP it shares
    its composite with, on the robot with every joint type on a floating base: kernels and host round trip equal the
    C target at B = 1, 7, 33 (float64, 1e-10)"""
    _need_nvcc()
    algos = ["ee_pose_hessian", "ee_pose_grad", "ee_pose_vjp"]
    kw = dict(urdf_string=JOINTS_URDF, floating_base=True, dtype="float64", verbose=False, algorithm_list=algos)
    entry = Path(grid_rbd.precompile("joints_ff_eeh_cuda", device="cuda", cuda_arch="sm_90", cache_dir=tmp_path, **kw))
    cpu = grid_rbd.register_robot("joints_ff_eeh_emu_cpu", device="cpu", cache_dir=tmp_path, **kw)
    exe = _emulation_program(tmp_path, (entry / "robot.cu").read_text())
    r = subprocess.run([str(exe), cpu.library_path, "1", "7", "33"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and " 0 mismatches" in r.stdout, r.stdout[-3000:] + r.stderr[-2000:]
    assert "9 checks" in r.stdout  # (three rows at three batch sizes)


@pytest.mark.parametrize("which,defines", [
    ("synthetic_ff", []),                                                     # one chunk
    ("synthetic_ff", ["-DGRID_CUDA_CHUNK_BYTES=4096", "-DGRID_CUDA_CHUNK_MIN_STATES=1", "-DGRID_CUDA_PACK_INPUTS=1",
                      "-DGRID_CUDA_ZERO_COPY_MAX=30000"]),       # many chunks, packed, zero-copy up to B=46
    ("synthetic_ff_rolled", ["-DGRID_CUDA_WORK_MAX=1", "-DGRID_CUDA_CHUNK_BYTES=4096",
                             "-DGRID_CUDA_CHUNK_MIN_STATES=1"]),  # workspace in slices
], ids=["synthetic_ff", "synthetic_ff-chunked-packed-zero-copy", "synthetic_ff-rolled-sliced"])
def test_mujoco_convention_on_the_device_in_emulation(tmp_path, request, which, defines):
    """output_convention="mujoco" on CUDA: the runtime's device passes (grid_cuda_convention_call) on device arrays and
    in the host round trip's chunk buffers equal the CPU passes (convention.c) around the C target, every row and
    variant, B = 1, 7, 33, 300 (float64, 1e-10), and leave the caller's inputs untouched"""
    entry = request.getfixturevalue({"synthetic_ff": "synthetic_ff64_cuda",
                                     "synthetic_ff_rolled": "synthetic_ff64_rolled_cuda"}[which])
    urdf = tmp_path / "synthetic.urdf"
    urdf.write_text(SYNTHETIC_URDF)
    cpu = grid_rbd.register_robot(f"{which}_conv_emu_cpu", urdf_path=urdf, floating_base=True, dtype="float64",
                                  device="cpu", verbose=False)
    lib = REPO / "build" / "libgrid.a"
    if subprocess.run(["make", "-s", "build/libgrid.a"], cwd=REPO, capture_output=True).returncode or not lib.is_file():
        pytest.skip("build/libgrid.a could not be made")
    exe = _emulation_program(tmp_path, (entry / "robot.cu").read_text(), defines, "cuda_emu_convention.cpp",
                             (str(lib), "-lexpat", "-lm"))
    r = subprocess.run([str(exe), cpu.library_path, str(urdf), "1", "7", "33", "300"], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert " 0 mismatches" in r.stdout


def test_cuda_library_takes_the_convention(tmp_path):
    """a CUDA library opened for device-array calls in MuJoCo's convention (no GPU needed to open it): the runtime's
    grid_cuda_convention_call is there; a convention needs the model"""
    _need_nvcc()
    entry = Path(grid_rbd.precompile("synthetic_ff64_conv", urdf_string=SYNTHETIC_URDF, floating_base=True,
                                     dtype="float64", device="cuda", cuda_arch="90", cache_dir=tmp_path, verbose=False,
                                     algorithm_list=["rnea"]))
    so = entry / "robot.so"
    model = _core.Model(SYNTHETIC_URDF.encode(), "<synthetic>", floating_base=True)
    _core.CudaLibrary(so, model, _core.CONVENTION_MUJOCO)
    _core.CudaLibrary(so, model, _core.CONVENTION_PINOCCHIO)
    ctypes.CDLL(str(so)).grid_cuda_convention_call
    with pytest.raises(ValueError, match="needs the model"):
        _core.CudaLibrary(so, None, _core.CONVENTION_MUJOCO)
    with pytest.raises(grid_rbd.GridArgumentError, match="unknown output convention"):
        _core.CudaLibrary(so, model, 9)


def test_auto_without_gpu_runs_on_cpu(tmp_path):
    if gcuda.probe()["ok"]:
        pytest.skip("this machine has a GPU (test_cuda.py covers device='auto' there)")
    h = grid_rbd.register_robot("iiwa_auto_cpu", urdf_path=BUNDLED_IIWA, cache_dir=tmp_path, verbose=False,
                                algorithm_list=["rnea"])
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


# ---- the device-array path of a CUDA handle, with a stand-in for the library (no GPU needed) ----
class _DeviceArrayStandIn:
    """host memory dressed as a device array: only __cuda_array_interface__ (version 3)"""

    def __init__(self, arr, stream=None, strides=None):
        self.arr = arr
        self.__cuda_array_interface__ = {"shape": arr.shape, "typestr": arr.dtype.str, "data": (arr.ctypes.data, False),
                                         "strides": strides, "version": 3, "stream": stream}


class _LibraryStandIn:
    """records grid_cuda_<algo> calls instead of launching"""

    def __init__(self):
        self.calls = []

    def call(self, *args):
        self.calls.append(args)

    def use_device(self, dev):
        pass

    def last_error(self):
        return "stand-in"


def _cuda_runner(dtype="float32"):
    import numpy as np
    h = grid_rbd.register_robot(f"iiwa_standin_{dtype}", urdf_path=BUNDLED_IIWA, dtype=dtype, codegen=False,
                                device="cpu", verbose=False)
    lib = _LibraryStandIn()
    runner = _core.Runner(h._model, _core.FLOAT32 if dtype == "float32" else _core.FLOAT64)
    return h, gcuda.CudaRunner(runner, None, lib, h._model), lib, np


def test_device_arrays_go_to_the_kernels():
    h, r, lib, np = _cuda_runner()
    n = 5
    q = np.random.default_rng(0).uniform(-1, 1, (n, h.nq)).astype(np.float32)
    v, a = np.ones((n, h.nv), np.float32), np.zeros((n, h.nv), np.float32)
    out = np.full((n, h.nv), np.nan, np.float32)
    # numpy in: the host path (here the reference runner) answers
    want = h.inverse_dynamics(q, v, a)
    np.testing.assert_allclose(r.call(_core.ALGO_RNEA, (q, v, a, None), None, ()), want, rtol=1e-5, atol=1e-5)
    # device arrays in: grid_cuda_<algo> gets their pointers, the batch and the interface's stream
    dq, dv, da, do = (_DeviceArrayStandIn(x, stream=7) for x in (q, v, a, out))
    got = r.call(_core.ALGO_RNEA, (dq, dv, da, None), do, ())
    assert got is do and len(lib.calls) == 1
    assert lib.calls[0] == (_core.ALGO_RNEA, (q.ctypes.data, v.ctypes.data, a.ctypes.data, 0), (out.ctypes.data,), n, (), 7)
    # the frame Jacobian passes its frame and reference frame
    jac = _DeviceArrayStandIn(np.empty((n, 6, h.nv), np.float32))
    r.call(_core.ALGO_FRAME_JACOBIAN, (dq,), jac, (3, 2))
    assert lib.calls[-1][-2:] == ((3, 2), 7)  # the attributes, and the stream of q
    # a batch of zero launches nothing
    r.call(_core.ALGO_CRBA, (_DeviceArrayStandIn(q[:0]),), _DeviceArrayStandIn(np.empty((0, h.nv, h.nv), np.float32)), ())
    assert len(lib.calls) == 2


@pytest.mark.parametrize("case", ["dtype", "width", "batch", "strides", "out_shape", "mixed", "no_out", "frame",
                                  "missing_qd", "extra_arg"])
def test_device_array_arguments_are_checked(case):
    h, r, lib, np = _cuda_runner()
    n = 4
    q = np.zeros((n, h.nq), np.float32)
    v = np.zeros((n, h.nv), np.float32)
    out = np.zeros((n, h.nv), np.float32)
    D = _DeviceArrayStandIn
    call = {
        "dtype": lambda: r.call(_core.ALGO_NLE, (D(q.astype(np.float64)), D(v)), D(out), ()),
        "width": lambda: r.call(_core.ALGO_NLE, (D(q), D(np.zeros((n, h.nv + 1), np.float32))), D(out), ()),
        "batch": lambda: r.call(_core.ALGO_NLE, (D(q), D(np.zeros((n + 1, h.nv), np.float32))), D(out), ()),
        "strides": lambda: r.call(_core.ALGO_CRBA, (D(q, strides=(4, 4 * n)),), D(np.zeros((n, h.nv, h.nv), np.float32)),
                                  ()),
        "out_shape": lambda: r.call(_core.ALGO_CRBA, (D(q),), D(out), ()),
        "mixed": lambda: r.call(_core.ALGO_NLE, (D(q), v), D(out), ()),
        "no_out": lambda: r.call(_core.ALGO_NLE, (D(q), D(v)), None, ()),
        "frame": lambda: r.call(_core.ALGO_FRAME_JACOBIAN, (D(q),), D(np.zeros((n, 6, h.nv), np.float32)), (999, 0)),
        "missing_qd": lambda: r.call(_core.ALGO_NLE, (D(q), None), D(out), ()),
        "extra_arg": lambda: r.call(_core.ALGO_CRBA, (D(q), D(v)), D(out), ()),
    }[case]
    exc = TypeError if case in ("missing_qd", "extra_arg") else ValueError  # GridArgumentError is a ValueError
    with pytest.raises(exc):
        call()
    assert lib.calls == []
