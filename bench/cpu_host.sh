#!/usr/bin/env bash
# The CPU benchmark (bench/run.py: Pinocchio, grid, the store path) on another machine's processor, run at the
# repository root through the device tool: the GPU host's CPU is a second processor to measure issue 11's
# wide-output cells on (and, when it has AVX-512, 8 float64 lanes beside the default 4).
#
#   bench/cpu_host.sh prepare    # HERE: bench/gpu_session.sh prepare, plus pinocchio_bench and its libraries
#                                #       into .gpu-deps/pin (the device has no pin wheel and no network)
#   bench/cpu_host.sh            # THERE, with carry [".gpu-deps"]; $OUT receives RESULTS-host*.md and the logs
#   bench/cpu_host.sh stream     # THERE: only bench/stream_ab.py (streamed against cached stores), $OUT/stream_ab.md
#   bench/cpu_host.sh flags      # THERE: the grid cells of $CPU_HOST_ROBOTS under each CPU_HOST_VARIANTS entry
#                                #   ("name=flags;name=flags", "$F" standing for the default tuning flags)
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
DEPS=$ROOT/.gpu-deps

if [ "${1:-run}" = prepare ]; then
    set -e
    bash bench/gpu_session.sh prepare
    mkdir -p "$DEPS/pin"
    test -x build/bench/pinocchio_bench || .venv/bin/python -c "import sys; sys.path.insert(0, 'bench'); import run; run.build_programs(True, False)"
    cp build/bench/pinocchio_bench "$DEPS/pin/"
    ldd build/bench/pinocchio_bench | awk '$3 ~ /cmeel.prefix/ {print $3}' | xargs -I{} cp -L {} "$DEPS/pin/"
    du -sh "$DEPS"
    exit 0
fi

T0=$(date +%s)
OUT=${OUT:-$ROOT/build/cpu_host}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/cpu_host.log") 2>&1
ts() { echo "[$(date +%T) +$(($(date +%s) - T0))s] $*"; }
export CFLAGS="-I$DEPS/include ${CFLAGS:-}" LDFLAGS="-L$DEPS/lib ${LDFLAGS:-}"
export LIBRARY_PATH="$DEPS/lib:${LIBRARY_PATH:-}" LD_LIBRARY_PATH="$DEPS/lib:$DEPS/pin:${LD_LIBRARY_PATH:-}"
export GRID_RBD_ROBOTS_DIR=$DEPS/robots GRID_RBD_ERD_DIR=$DEPS/erd GRID_BENCH_PINOCCHIO=$DEPS/pin/pinocchio_bench
export GRID_RBD_CACHE_DIR=/tmp/grid-rbd-cpu-cache PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1

ts "start; $(uname -srm); $(nproc) cores"
lscpu | sed -n '1,30p'
cc -march=native -Q --help=target | grep -E '^\s+-march='
ts "install"
if ! python3 -m pip install --no-build-isolation --no-deps -e . > /tmp/install.log 2>&1; then
    tail -20 /tmp/install.log
    python3 setup.py build_ext --inplace -j "$(nproc)" > /tmp/install2.log 2>&1 || { tail -30 /tmp/install2.log; exit 1; }
    export PYTHONPATH=$ROOT/python${PYTHONPATH:+:$PYTHONPATH}
fi
if [ "${1:-run}" = stream ]; then   # only bench/stream_ab.py: streamed against cached stores on this CPU
    ts "bench/stream_ab.py"
    timeout ${CPU_HOST_SECONDS:-400} python3 bench/stream_ab.py ${STREAM_AB_ARGS:-} > "$OUT/stream_ab.md" 2> "$OUT/stream_ab.log"
    cat "$OUT/stream_ab.md"; tail -3 "$OUT/stream_ab.log"
    ts "done"
    exit 0
fi
ROBOTS=${CPU_HOST_ROBOTS:-iiwa,hyq,atlas,go2,talos,g1}
if [ "${1:-run}" = flags ]; then   # the same cells under other compiler flags: CPU_HOST_VARIANTS="name=flags;..."
    F=$(python3 -c "import sys; sys.path.insert(0, 'bench'); import run; print(' '.join(run.cpu_build_flags()))")
    IFS=';' read -ra VARIANTS <<< "${CPU_HOST_VARIANTS:-default=$F}"
    for v in "${VARIANTS[@]}"; do
        name=${v%%=*}; flags=${v#*=}; flags=${flags//\$F/$F}
        ts "variant $name: GRID_RBD_CFLAGS=$flags"
        GRID_RBD_CFLAGS="$flags" timeout ${CPU_HOST_VARIANT_SECONDS:-120} python3 bench/run.py --quick --robots "$ROBOTS" \
            --only pinocchio,grid --out "$OUT/RESULTS-host-$name.md" > "$OUT/run_$name.log" 2>&1 || ts "exit $?"
        grep -E "^\| (CRBA|computeMinverse\(q\)) \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \|" "$OUT/run_$name.log" | sed "s/^/$name /"
    done
    ts "done"
    exit 0
fi
ts "bench/run.py --robots $ROBOTS --only pinocchio,grid,store"
timeout ${CPU_HOST_SECONDS:-330} python3 bench/run.py --robots "$ROBOTS" --only pinocchio,grid,store \
    --out "$OUT/RESULTS-host.md" > "$OUT/run.log" 2>&1 || ts "run.py: exit $?"
tail -5 "$OUT/run.log"
if [ -z "${CPU_HOST_NO_LANES8:-}" ] && grep -q avx512f /proc/cpuinfo; then
    F=$(python3 -c "import sys; sys.path.insert(0, 'bench'); import run; print(' '.join(run.cpu_build_flags()))")
    ts "AVX-512: 8 float64 lanes (GRID_RBD_CFLAGS=$F -DGRID_LANES=8)"
    GRID_RBD_CFLAGS="$F -DGRID_LANES=8" timeout ${CPU_HOST_LANES_SECONDS:-150} python3 bench/run.py --quick \
        --robots "${CPU_HOST_LANES_ROBOTS:-go2,talos,g1}" --only pinocchio,grid --out "$OUT/RESULTS-host-lanes8.md" \
        > "$OUT/run_lanes8.log" 2>&1 || ts "run.py lanes 8: exit $?"
    tail -3 "$OUT/run_lanes8.log"
fi
ts "done"
ls -la "$OUT"
