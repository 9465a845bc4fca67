#!/usr/bin/env bash
# Builds bench/pinocchio_bench.cpp (or another bench C++ source) against the Pinocchio C++ headers and libraries shipped in the venv's `pin` wheel.
#
# usage: bench/build_pinocchio_bench.sh [OUTPUT [SOURCE]]   (default build/bench/pinocchio_bench from
#        bench/pinocchio_bench.cpp; bench/pinocchio_float32.cpp is the other source)
# env:   PY   the venv python (default .venv/bin/python of this repo)
#        CXX  the C++ compiler (default g++)
#        OPT  the optimisation flag (default -O3, the anchors'; the tests' oracle builds with -O1)
# The wheel ships Pinocchio's headers and .so files but not the headers of two build-time
# dependencies (Eigen, urdfdom_headers); their cmeel wheels are installed into the venv
# when missing. Flags follow the anchors: -O3, no -march=native.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
py="${PY:-$root/.venv/bin/python}"
cxx="${CXX:-g++}"
out="${1:-$root/build/bench/pinocchio_bench}"
src="${2:-$root/bench/pinocchio_bench.cpp}"

# the cmeel prefix of the venv (site-packages/cmeel.prefix)
prefix="$("$py" -c 'import sysconfig, os; print(os.path.join(sysconfig.get_paths()["purelib"], "cmeel.prefix"))')"
if [ ! -f "$prefix/include/pinocchio/config.hpp" ]; then
    echo "build_pinocchio_bench: no Pinocchio headers under $prefix (is the pin wheel installed?)" >&2
    exit 1
fi

# header-only build dependencies the runtime wheels leave out
if [ ! -d "$prefix/include/eigen3/Eigen" ] || [ ! -f "$prefix/include/urdfdom_headers/urdf_model/model.h" ]; then
    echo "build_pinocchio_bench: installing cmeel-eigen and cmeel-urdfdom-headers into the venv" >&2
    "$py" -m pip install -q "cmeel-eigen>=3.4.1" "cmeel-urdfdom-headers>=3,<4"
fi

inc="$prefix/include"
lib="$prefix/lib"
mkdir -p "$(dirname "$out")"

# the compile definitions pinocchio's exported CMake targets carry (the boost variant
# limits must match the library's, or the joint-model layout differs)
defs=(
    -DBOOST_MPL_LIMIT_LIST_SIZE=30 -DBOOST_MPL_LIMIT_VECTOR_SIZE=30
    -DBOOST_MPL_CFG_NO_PREPROCESSED_HEADERS -DBOOST_FUSION_INVOKE_MAX_ARITY=12
    -DPINOCCHIO_WITH_URDFDOM
    -DPINOCCHIO_URDFDOM_HEADERS_MAJOR_VERSION=3 -DPINOCCHIO_URDFDOM_HEADERS_MINOR_VERSION=0
    -DPINOCCHIO_URDFDOM_HEADERS_PATCH_VERSION=0
)

set -x
"$cxx" -std=c++17 "${OPT:--O3}" -DNDEBUG -w "${defs[@]}" \
    -I"$inc" -I"$inc/eigen3" -I"$inc/urdfdom_headers" -I"$inc/urdfdom" \
    "$src" -o "$out" \
    -L"$lib" -Wl,-rpath,"$lib" \
    -lpinocchio_parsers -lpinocchio_default -lurdfdom_model -lboost_filesystem -lboost_serialization
