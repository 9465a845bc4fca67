#!/usr/bin/env bash
# The one GPU session of issue 4 (CUDA target), run at the repository root on the H200 through the device tool:
# nvidia-smi, install, parallel precompile of every CUDA/CPU library the GPU tests and the benchmark need,
# pytest -m gpu (accuracy report), bench/gpu_bench.py, a compute-sanitizer pass; reports and logs to $OUT.
#
#   bench/gpu_session.sh prepare     # HERE, before the device call: fills .gpu-deps/{robots,erd} (git-ignored)
#   bench/gpu_session.sh             # THERE, with carry [".gpu-deps"]; about 9 minutes, budgeted below
#   bench/gpu_session.sh wide        # THERE: only bench/gpu_wide.py (g1 CRBA/Minv wide-output variants; WIDE_ROBOTS,
#                                    # WIDE_ALGOS, WIDE_SIZES, WIDE_VARIANTS, WIDE_EXTRA pick others)
#   bench/gpu_session.sh features    # THERE: only the GPU tests matching GPU_TEST_FILTER (pytest -k); with
#                                    # GPU_BENCH_ALGOS (e.g. com,ccrba) also gpu_bench.py on those rows for
#                                    # GPU_BENCH_SECONDS (default 150) before the tests
#   bench/gpu_session.sh sanitize    # THERE: only compute-sanitizer on the derivative rows
#   bench/gpu_session.sh mimic       # THERE: only bench/gpu_mimic.py (h1_2's coupled mimic joints against welded and
#                                    # independent, checked, then timed)
#   bench/gpu_session.sh sweep       # THERE: bench/robot_sweep.py on the host's CPUs: every URDF of example-robot-data
#                                    # (.gpu-deps/erd-all) and the shared robots, float32/float64, fixed/floating,
#                                    # default options; $OUT/RESULTS-sweep.md and sweep.json
#   bench/gpu_session.sh frameworks  # THERE: the JAX and PyTorch front ends on CUDA: tests/python/test_frameworks_gpu.py
#                                    # and bench/gpu_frameworks.py ($OUT/gpu_frameworks.md)
#   bench/gpu_session.sh peers       # THERE: bench/gpu_frameworks.py and bench/gpu_peers.py (adam, pytorch_kinematics
#                                    # from .gpu-deps/wheels) only
#   bench/gpu_session.sh second_order  # THERE: bench/gpu_second_order.py (SO_ROBOTS, SO_ROUND_TRIP) and
#                                    # compute-sanitizer on bench/gpu_sanitize_so.py
#   bench/gpu_session.sh ab          # THERE: compile-time knobs side by side (bench/gpu_ab_flags.py: AB_ROBOTS,
#                                    # AB_METHODS ("all": every row), AB_VARIANTS, AB_BUILD_ONLY), then with
#                                    # SO_ROBOTS bench/gpu_second_order.py float32
#   bench/gpu_session.sh grad        # THERE: the first-order derivatives: their GPU tests on five robots, the bench
#                                    # of rnea / rnea_grad / fd / fd_grad ($GRAD_ALGOS: e.g. with rnea_vjp,fd_vjp),
#                                    # cold builds, compute-sanitizer
#
# $OUT receives: session.log, pytest_gpu.log, gpu_accuracy.md, gpu_bench.md, gpu_bench.json, gpu_bench.log,
# sanitizer.log.
#
# .gpu-deps/include + lib hold libexpat's header and library (the device image has no libexpat headers),
# .gpu-deps/robots the shared robots, .gpu-deps/erd the example-robot-data URDFs the test cases use.
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
DEPS=$ROOT/.gpu-deps

if [ "${1:-run}" = prepare ]; then
    set -e
    mkdir -p "$DEPS/robots" "$DEPS/erd"
    cp ../shared/robots/*.urdf "$DEPS/robots/"
    PY=${PY:-.venv/bin/python}
    "$PY" - "$DEPS/erd" <<'EOF'
import shutil, sys
from pathlib import Path
sys.path.insert(0, "tests/python")
import robot_cases
erd = robot_cases.example_robot_data_dir()
if erd is None:
    sys.exit("example-robot-data is not installed in this Python: the erd test cases will be skipped there")
for case in robot_cases.CASES:
    if case.source == "erd":
        dst = Path(sys.argv[1]) / case.relpath
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(erd / case.relpath, dst)
        print("copied", case.relpath)
EOF
    # every URDF of example-robot-data, for the sweep
    "$PY" - "$DEPS/erd-all" <<'EOF2'
import shutil, sys
from pathlib import Path
sys.path.insert(0, "tests/python")
import robot_cases
erd = robot_cases.example_robot_data_dir()
for p in sorted(erd.rglob("*.urdf")) if erd else []:
    dst = Path(sys.argv[1]) / p.relative_to(erd)
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(p, dst)
EOF2
    # the peers bench/gpu_peers.py runs beside grid-rbd (adam, pytorch_kinematics and what they import that the
    # device image lacks), as wheels for the device's Python 3.12
    mkdir -p "$DEPS/wheels"
    pip download -q --no-deps -d "$DEPS/wheels" --python-version 3.12 --only-binary=:all: \
        --platform manylinux2014_x86_64 adam-robotics==0.5.0 pytorch-kinematics==0.10.0 array-api-compat urdfdom-py \
        prettytable wcwidth pytorch-seed arm-pytorch-utilities || echo "peer wheels not downloaded: gpu_peers.py will fail"
    if [ ! -f "$DEPS/include/expat.h" ] || ! ls "$DEPS"/lib/libexpat.so* >/dev/null 2>&1; then
        mkdir -p "$DEPS/include" "$DEPS/lib"
        cp /usr/include/expat.h /usr/include/expat_external.h "$DEPS/include/"
        cp -L "$(gcc -print-file-name=libexpat.so)" "$DEPS/lib/libexpat.so"
        cp -L "$(gcc -print-file-name=libexpat.so.1)" "$DEPS/lib/libexpat.so.1" 2>/dev/null || true
    fi
    du -sh "$DEPS"
    echo "ready: run bench/gpu_session.sh on the device with carry [\".gpu-deps\"]"
    exit 0
fi

# ---- on the GPU machine ----
T0=$(date +%s)
DEADLINE=$((T0 + ${GPU_SESSION_SECONDS:-535}))   # the device call's limit is 600 s: keep a margin
OUT=${OUT:-$ROOT/build/gpu_session}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/session.log") 2>&1
ts() { echo "[$(date +%T) +$(($(date +%s) - T0))s] $*"; }
left() { echo $((DEADLINE - $(date +%s))); }
# compute-sanitizer memcheck and racecheck on a python script while time is left; the last $2 lines of each log
# go to $OUT/sanitizer.log
sanitize() {
    for tool in memcheck racecheck; do
        [ "$(left)" -gt 15 ] || break
        timeout $(( $(left) - 10 )) compute-sanitizer --tool $tool --error-exitcode 9 python3 "$1" \
            > "/tmp/sanitizer_$tool.log" 2>&1
        echo "== compute-sanitizer --tool $tool: exit $?" | tee -a "$OUT/sanitizer.log"
        tail -"$2" "/tmp/sanitizer_$tool.log" >> "$OUT/sanitizer.log"
    done
}

export CFLAGS="-I$DEPS/include ${CFLAGS:-}" LDFLAGS="-L$DEPS/lib ${LDFLAGS:-}"
export LIBRARY_PATH="$DEPS/lib:${LIBRARY_PATH:-}" LD_LIBRARY_PATH="$DEPS/lib:${LD_LIBRARY_PATH:-}"
export GRID_RBD_ROBOTS_DIR=$DEPS/robots GRID_RBD_ERD_DIR=$DEPS/erd
export GRID_RBD_CACHE_DIR=/tmp/grid-rbd-gpu-cache GRID_RBD_TEST_CACHE_DIR=/tmp/grid-rbd-gpu-cache
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
JOBS=$(nproc)

ts "session start; $(uname -srm); $JOBS cores; python3 = $(command -v python3) ($(python3 --version 2>&1))"
nvidia-smi
nvidia-smi --query-gpu=name,driver_version,compute_cap,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu,memory.used --format=csv
command -v nvcc && nvcc --version | tail -2
python3 -c "import numpy, torch; print('numpy', numpy.__version__, 'torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.is_available())"

ts "install (pip install -e .)"
if ! python3 -m pip install --no-build-isolation --no-deps -e . > /tmp/install.log 2>&1; then
    tail -30 /tmp/install.log
    ts "pip install failed; building the extension in place instead"
    python3 setup.py build_ext --inplace -j "$JOBS" > /tmp/install2.log 2>&1 || { tail -30 /tmp/install2.log; exit 1; }
    export PYTHONPATH=$ROOT/python${PYTHONPATH:+:$PYTHONPATH}
fi
python3 -c "
import grid_rbd
from grid_rbd import cuda
print('grid_rbd', grid_rbd.__version__, grid_rbd.__file__)
print('probe', cuda.probe()); print('nvcc', cuda.nvcc_status())" || exit 1

if [ "${1:-run}" = features ]; then   # only the GPU tests whose ids match $GPU_TEST_FILTER (new features)
    if [ -n "${GPU_BENCH_ALGOS:-}" ]; then   # the bench's float32 libraries, beside the test cases' precompile
        python3 bench/gpu_bench.py --precompile --no-tests --no-variants --bench-dtypes float32 --jobs "$JOBS" \
            --robots-dir "$DEPS/robots" > "$OUT/precompile_bench.log" 2>&1 &
        BENCH_PRECOMPILE=$!
    fi
    if [ -n "${GPU_PRECOMPILE_CASES:-}" ]; then   # their libraries first, in parallel (comma-separated case ids)
        ts "precompile $GPU_PRECOMPILE_CASES"
        timeout $(( $(left) / 2 )) python3 bench/gpu_bench.py --precompile --cases "$GPU_PRECOMPILE_CASES" --jobs "$JOBS" \
            --robots-dir "$DEPS/robots" > "$OUT/precompile.log" 2>&1 || ts "precompile: some builds failed or timed out"
        tail -3 "$OUT/precompile.log"
    fi
    if [ -n "${GPU_BENCH_ALGOS:-}" ]; then   # the new rows timed: resident B = 16 .. 1M, states/s against the bound
        ts "waiting for the bench's precompile"; wait "$BENCH_PRECOMPILE"; tail -5 "$OUT/precompile_bench.log"
        BS=${GPU_BENCH_SECONDS:-150}
        ts "gpu_bench.py --algos $GPU_BENCH_ALGOS (budget $BS s)"
        timeout $((BS + 30)) python3 bench/gpu_bench.py --out "$OUT" --robots-dir "$DEPS/robots" --algos "$GPU_BENCH_ALGOS" \
            --budget-s "$BS" --no-build-times > "$OUT/gpu_bench.log" 2>&1 || ts "gpu_bench.py: exit $?"
        tail -20 "$OUT/gpu_bench.log"
    fi
    TEST_SECONDS=$(( $(left) - ${GPU_SANITIZE_SECONDS:-20} ))
    ts "pytest -m gpu -k '${GPU_TEST_FILTER:-joints}' (deadline in $TEST_SECONDS s)"
    export GRID_RBD_GPU_TEST_DEADLINE=$(( $(date +%s) + TEST_SECONDS - 10 ))
    GRID_RBD_GPU_REPORT=$OUT/gpu_accuracy.md timeout $((TEST_SECONDS + 10)) \
        python3 -m pytest -m gpu -q -rs -p no:cacheprovider -k "${GPU_TEST_FILTER:-joints}" \
        tests/python/test_cuda.py tests/python/test_cuda_rolled.py 2>&1 | tee "$OUT/pytest_gpu.log" | tail -40
    if [ -n "${GPU_SANITIZE_SECONDS:-}" ]; then   # then compute-sanitizer on the derivative rows
        ts "compute-sanitizer: bench/gpu_sanitize_derivs.py"
        sanitize bench/gpu_sanitize_derivs.py 8
    fi
    ts "done"
    exit 0
fi

if [ "${1:-run}" = second_order ]; then   # issue 29: the second-order rows on CUDA, checked and timed, the host round
    # trip into a pinned block (SO_ROBOTS, SO_ROUND_TRIP, SO_DTYPES, SO_METHODS pick others), then compute-sanitizer on
    # iiwa's
    ts "gpu_second_order.py --robots ${SO_ROBOTS:-iiwa,go2} --round-trip ${SO_ROUND_TRIP-go2}"
    timeout $(( $(left) - ${GPU_SANITIZE_SECONDS:-90} )) python3 bench/gpu_second_order.py --out "$OUT" \
        --robots-dir "$DEPS/robots" --robots "${SO_ROBOTS:-iiwa,go2}" --round-trip "${SO_ROUND_TRIP-go2}" \
        --dtypes "${SO_DTYPES:-float32,float64}" --methods "${SO_METHODS:-idsva_so,fdsva_so,ee_pose_hessian}" \
        --jobs "$JOBS" --budget-s $(( $(left) - ${GPU_SANITIZE_SECONDS:-90} - 20 )) 2>&1 | tee "$OUT/gpu_second_order.log" | tail -30
    if [ "${GPU_SANITIZE_SECONDS:-90}" -gt 0 ]; then   # (GPU_SANITIZE_SECONDS=0: none)
        ts "compute-sanitizer: bench/gpu_sanitize_so.py"
        sanitize bench/gpu_sanitize_so.py 8
    fi
    ts "done"
    exit 0
fi

if [ "${1:-run}" = ab ]; then   # compile-time knobs side by side (bench/gpu_ab_flags.py: AB_ROBOTS, AB_METHODS, AB_VARIANTS
    # as "NAME=FLAGS;NAME=FLAGS"); with SO_ROBOTS, then bench/gpu_second_order.py on them (float32, SO_ROUND_TRIP),
    # whose libraries build in the background meanwhile
    if [ -n "${SO_ROBOTS:-}" ] && [ -n "${SO_AFTER:-}" ]; then   # (SO_AFTER: their builds after the A/B's, alone)
        ts "gpu_ab_flags.py first (SO_AFTER)"
        timeout $(( $(left) - ${SO_SECONDS:-0} )) python3 bench/gpu_ab_flags.py --out "$OUT" --robots-dir "$DEPS/robots" \
            --robots "${AB_ROBOTS:-g1_29dof}" --methods "${AB_METHODS:-all}" --build-only \
            --build-timeout-s "${AB_BUILD_SECONDS:-300}" 2>&1 | tee "$OUT/gpu_ab_flags.log" | tail -10
        AB_DONE=1
    fi
    if [ -n "${SO_ROBOTS:-}" ]; then
        python3 - "$DEPS/robots" > "$OUT/so_precompile.log" 2>&1 <<'EOF4' &
import sys, threading
sys.path.insert(0, "bench")
import grid_rbd, gpu_second_order as S
from gpu_bench import EXTRA_ROBOTS, ROBOTS, urdf_path
def build(robot):
    file, floating = next((f, fb) for r, f, fb in ROBOTS + EXTRA_ROBOTS if r == robot)
    methods = __import__("os").environ.get("SO_METHODS", ",".join(S.METHODS)).split(",")
    grid_rbd.register_robot(f"so_gpu_{robot}_float32", urdf_path=urdf_path(sys.argv[1], file), floating_base=floating,
                            dtype="float32", device="cuda", algorithm_list=methods + ["forward_dynamics"],
                            verbose=False)
    print("built", robot, flush=True)
threads = [threading.Thread(target=build, args=(r,)) for r in __import__("os").environ["SO_ROBOTS"].split(",")]
[t.start() for t in threads]; [t.join() for t in threads]
EOF4
        SO_BUILD=$!
    fi
    [ -n "${AB_DONE:-}" ] || {
    VARIANT_ARGS=()
    IFS=';' read -ra VS <<< "${AB_VARIANTS-inline_big=-DGRID_CUDA_INLINE_BIG=1}"
    for v in "${VS[@]}"; do VARIANT_ARGS+=(--variant "$v"); done
    [ -n "${AB_BUILD_ONLY:-}" ] && VARIANT_ARGS+=(--build-only)
    ts "gpu_ab_flags.py --robots ${AB_ROBOTS:-go2,g1_29dof} --methods ${AB_METHODS:-rnea_grad,fd_grad} ${VARIANT_ARGS[*]}"
    timeout $(( $(left) - ${SO_SECONDS:-0} )) python3 bench/gpu_ab_flags.py --out "$OUT" --robots-dir "$DEPS/robots" \
        --robots "${AB_ROBOTS:-go2,g1_29dof}" --methods "${AB_METHODS:-rnea_grad,fd_grad}" "${VARIANT_ARGS[@]}" \
        --build-timeout-s "${AB_BUILD_SECONDS:-300}" --so-batches "${AB_SO_BATCHES:-256,1024}" 2>&1 | tee "$OUT/gpu_ab_flags.log" | tail -40
    }
    if [ -n "${SO_ROBOTS:-}" ]; then
        ts "waiting for the second-order libraries"; wait "$SO_BUILD"; tail -3 "$OUT/so_precompile.log"
        ts "gpu_second_order.py --robots $SO_ROBOTS --dtypes float32 --round-trip ${SO_ROUND_TRIP:-}"
        timeout $(( $(left) - 5 )) python3 bench/gpu_second_order.py --out "$OUT" --robots-dir "$DEPS/robots" \
            --robots "$SO_ROBOTS" --dtypes float32 --round-trip "${SO_ROUND_TRIP:-}" \
            --methods "${SO_METHODS:-idsva_so,fdsva_so,ee_pose_hessian}" \
            --budget-s $(( $(left) - 15 )) 2>&1 | tee "$OUT/gpu_second_order.log" | tail -20
    fi
    ts "done"
    exit 0
fi

if [ "${1:-run}" = frameworks ]; then   # the JAX and PyTorch front ends on CUDA (issue 28): their GPU tests, the bench
    export XLA_PYTHON_CLIENT_PREALLOCATE=false   # (JAX would take 75% of the GPU from torch in the same process)
    ts "precompile the front ends' CUDA libraries (in parallel)"
    timeout 300 python3 - <<'EOF3' || ts "precompile: some builds failed or timed out"
import os, sys, threading
sys.path.insert(0, "tests/python"); sys.path.insert(0, "bench")
import test_frameworks_gpu as T, gpu_frameworks as G
jobs = [lambda: T.cuda_handles("iiwa"), lambda: T.cuda_handles("go2_ff"), lambda: T.cuda_handles("iiwa", "float32"),
        lambda: T.cuda_handles("g1_29dof_ff", algorithm_list=T.GRAD_ROWS),
        lambda: G.register(os.environ["GRID_RBD_ROBOTS_DIR"], "iiwa", "float32"),
        lambda: G.register(os.environ["GRID_RBD_ROBOTS_DIR"], "g1_29dof", "float32")]
threads = [threading.Thread(target=j) for j in jobs]
[t.start() for t in threads]; [t.join() for t in threads]
print("precompiled")
EOF3
    TEST_SECONDS=${FW_TEST_SECONDS:-200}
    ts "pytest -m gpu tests/python/test_frameworks_gpu.py (deadline in $TEST_SECONDS s)"
    timeout "$TEST_SECONDS" python3 -m pytest -m gpu -q -rs -p no:cacheprovider tests/python/test_frameworks_gpu.py \
        2>&1 | tee "$OUT/pytest_frameworks.log" | tail -30
    ts "bench/gpu_frameworks.py"
    timeout $(( $(left) - 5 )) python3 bench/gpu_frameworks.py --robots-dir "$DEPS/robots" > "$OUT/gpu_frameworks.md" \
        2> "$OUT/gpu_frameworks.log"
    ts "bench exit $?"; tail -12 "$OUT/gpu_frameworks.log"; cat "$OUT/gpu_frameworks.md"
    ts "done"
    exit 0
fi

if [ "${1:-run}" = peers ]; then   # issue 28's benches only: bench/gpu_frameworks.py, then bench/gpu_peers.py
    export XLA_PYTHON_CLIENT_PREALLOCATE=false
    python3 -m pip install -q --no-deps "$DEPS"/wheels/*.whl || ts "peer wheels: install failed"
    if [ -z "${PEERS_ONLY:-}" ]; then
        ts "bench/gpu_frameworks.py"
        timeout 240 python3 bench/gpu_frameworks.py --robots-dir "$DEPS/robots" > "$OUT/gpu_frameworks.md" \
            2> "$OUT/gpu_frameworks.log"
        ts "exit $?"; cat "$OUT/gpu_frameworks.md"
    fi
    ts "bench/gpu_peers.py"
    timeout $(( $(left) - 5 )) python3 bench/gpu_peers.py --robots-dir "$DEPS/robots" --budget-s $(( $(left) - 60 )) \
        > "$OUT/gpu_peers.md" 2> "$OUT/gpu_peers.log"
    ts "exit $?"; grep -v "^Unknown tag" "$OUT/gpu_peers.log" | tail -15; cat "$OUT/gpu_peers.md"
    ts "done"
    exit 0
fi

if [ "${1:-run}" = sweep ]; then   # every robot in both dtypes, fixed and floating, on the host's CPUs
    ts "bench/robot_sweep.py --jobs $JOBS"
    timeout $(( $(left) - 5 )) python3 bench/robot_sweep.py --jobs "$JOBS" --erd "$DEPS/erd-all" --shared "$DEPS/robots" \
        --json "$OUT/sweep.json" > "$OUT/RESULTS-sweep.md" 2> "$OUT/sweep.log"
    ts "sweep exit $?"; tail -5 "$OUT/sweep.log"; head -8 "$OUT/RESULTS-sweep.md"
    ts "done"
    exit 0
fi

if [ "${1:-run}" = sanitize ]; then   # only compute-sanitizer on the derivative rows (bench/gpu_sanitize_derivs.py)
    ts "compute-sanitizer: bench/gpu_sanitize_derivs.py"
    sanitize bench/gpu_sanitize_derivs.py 8
    ts "done"
    exit 0
fi

if [ "${1:-run}" = grad ]; then   # the gradients (issue 10)
    ts "precompile (the bench's libraries)"
    timeout 200 python3 bench/gpu_bench.py --precompile --no-tests --jobs "$JOBS" --robots-dir "$DEPS/robots" \
        || ts "precompile: some builds failed or timed out"
    TEST_SECONDS=${GRAD_TEST_SECONDS:-150}   # 0: no tests (a bench-only rerun)
    if [ "$TEST_SECONDS" -gt 0 ]; then
        ts "pytest -m gpu, gradients' robots (deadline in $TEST_SECONDS s)"
        export GRID_RBD_GPU_TEST_DEADLINE=$(( $(date +%s) + TEST_SECONDS - 10 ))
        GRID_RBD_GPU_REPORT=$OUT/gpu_accuracy.md timeout $((TEST_SECONDS + 20)) \
            python3 -m pytest -m gpu -q -rs -p no:cacheprovider \
            -k "(test_matches_reference and (iiwa or go2_ff or joints_ff or h1_2_ff or g1_29dof_ff)) or large_batch" \
            tests/python/test_cuda.py 2>&1 | tee "$OUT/pytest_gpu.log" | tail -30
    fi
    BENCH_SECONDS=$(( $(left) - 70 ))
    GRAD_ALGOS=${GRAD_ALGOS:-rnea,rnea_grad,fd,fd_grad}
    ts "gpu_bench.py $GRAD_ALGOS (budget $BENCH_SECONDS s)"
    timeout $((BENCH_SECONDS + 30)) python3 bench/gpu_bench.py --out "$OUT" --robots-dir "$DEPS/robots" \
        --algos "$GRAD_ALGOS" --budget-s "$BENCH_SECONDS" > "$OUT/gpu_bench.log" 2>&1
    tail -40 "$OUT/gpu_bench.log"
    if [ "$(left)" -gt 25 ] && command -v compute-sanitizer >/dev/null; then
        cat > /tmp/sanity_grad.py <<'EOF'
import os, sys, numpy as np
sys.path.insert(0, "bench")
from gpu_bench import register, random_states
for robot in ("iiwa", "go2"):
    h = register(os.environ["GRID_RBD_ROBOTS_DIR"], robot, "float32")
    for n in (1, 45):
        q, qd, u = random_states(h, n, seed=n)
        for out in (h.inverse_dynamics_gradient(q, qd, u), h.forward_dynamics_gradient(q, qd, u),
                    h.inverse_dynamics_vjp(q, qd, u), h.forward_dynamics_vjp(q, qd, u, u)):
            assert np.isfinite(out).all(), (robot, n)
print("sanity ok")
EOF
        sanitize /tmp/sanity_grad.py 8
    fi
    ts "done"
    ls -la "$OUT"
    exit 0
fi

if [ "${1:-run}" = mimic ]; then   # only bench/gpu_mimic.py (h1_2 coupled / welded / independent on CUDA)
    ts "gpu_mimic.py"
    timeout $(( $(left) - 5 )) python3 bench/gpu_mimic.py --out "$OUT" --robots-dir "$DEPS/robots" --jobs "$JOBS" \
        --budget-s $(( $(left) - 20 ))
    ts "done (exit $?)"
    exit 0
fi

if [ "${1:-run}" = wide ]; then   # only the wide-output variants (bench/gpu_wide.py)
    ts "gpu_wide.py"
    timeout $(( $(left) - 10 )) python3 bench/gpu_wide.py --out "$OUT" --robots-dir "$DEPS/robots" --jobs "${WIDE_JOBS:-$JOBS}" \
        --variants "${WIDE_VARIANTS:-}" --dtypes "${WIDE_DTYPES:-float32,float64}" --robots "${WIDE_ROBOTS:-g1_29dof}" \
        --algos "${WIDE_ALGOS:-crba,minv}" --sizes "${WIDE_SIZES:-65536,1048576}" --extra-flags="${WIDE_EXTRA:-}" \
        --budget-s $(( $(left) - 60 )) 2>&1 | tee "$OUT/gpu_wide.log" | tail -30
    ts "done"
    exit 0
fi

ts "precompile (every library of the tests and the bench, $JOBS processes)"
PRE_SECONDS=$(( $(left) - 300 ))
[ "$PRE_SECONDS" -lt 60 ] && PRE_SECONDS=60
timeout "$PRE_SECONDS" python3 bench/gpu_bench.py --precompile --jobs "$JOBS" --robots-dir "$DEPS/robots" \
    || ts "precompile: some builds failed or timed out (their tests will build or fail on their own)"

# the GPU tests get what is left minus the bench's share; they skip themselves past their deadline
TEST_SECONDS=$(( $(left) - 260 ))
[ "$TEST_SECONDS" -lt 60 ] && TEST_SECONDS=60
ts "pytest -m gpu (deadline in $TEST_SECONDS s)"
export GRID_RBD_GPU_TEST_DEADLINE=$(( $(date +%s) + TEST_SECONDS - 10 ))
GRID_RBD_GPU_REPORT=$OUT/gpu_accuracy.md timeout $((TEST_SECONDS + 30)) \
    python3 -m pytest -m gpu -q -rs -p no:cacheprovider tests/python/test_cuda.py tests/python/test_cuda_rolled.py 2>&1 | tee "$OUT/pytest_gpu.log" | tail -40
ts "pytest done"

BENCH_SECONDS=$(( $(left) - 45 ))
[ "$BENCH_SECONDS" -lt 30 ] && BENCH_SECONDS=30
ts "gpu_bench.py (budget $BENCH_SECONDS s: measurements, cold builds, variants)"
timeout $((BENCH_SECONDS + 40)) python3 bench/gpu_bench.py --out "$OUT" --robots-dir "$DEPS/robots" \
    --budget-s "$BENCH_SECONDS" > "$OUT/gpu_bench.log" 2>&1
tail -25 "$OUT/gpu_bench.log"

if [ "$(left)" -gt 25 ] && command -v compute-sanitizer >/dev/null; then
    ts "compute-sanitizer (memcheck, racecheck) on small batches"
    cat > /tmp/sanity.py <<'EOF'
import sys, numpy as np, grid_rbd
sys.path.insert(0, "bench")
from gpu_bench import ALGOS, method, inputs_of, random_states, register
import os
for robot in ("iiwa", "go2"):
    h = register(os.environ["GRID_RBD_ROBOTS_DIR"], robot, "float32")
    for n in (1, 45):
        q, qd, u = random_states(h, n, seed=n)
        for algo in ALGOS:
            out = method(h, algo)(*[x for x in inputs_of(algo, q, qd, u) if x is not None])
            assert np.isfinite(out).all(), (robot, algo, n)
        h.forward_kinematics(q); h.frame_jacobian(q); h.inverse_dynamics(q, qd, f_ext=np.ones((n, 6 * h.nb), np.float32))
print("sanity ok")
EOF
    sanitize /tmp/sanity.py 25
fi

ts "done; files in \$OUT:"
ls -la "$OUT"
[ -f "$OUT/gpu_bench.md" ] && sed -n '/## Targets/,/^$/p' "$OUT/gpu_bench.md"
head -3 "$OUT/gpu_accuracy.md" 2>/dev/null
tail -3 "$OUT/pytest_gpu.log" 2>/dev/null
exit 0
