#!/usr/bin/env bash
# Installs the system packages the build needs (libexpat headers, a C compiler, clang for the fuzzer) when missing.
set -euo pipefail
need=()
[ -f /usr/include/expat.h ] || need+=(libexpat1-dev)
command -v cc >/dev/null 2>&1 || need+=(gcc)
command -v clang >/dev/null 2>&1 || need+=(clang)
command -v make >/dev/null 2>&1 || need+=(make)
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need+=(python3-venv)
if [ ${#need[@]} -gt 0 ]; then
    echo "grid-rbd: installing system packages: ${need[*]}" >&2
    sudo_cmd=""
    [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
    $sudo_cmd apt-get update -q >&2
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -q "${need[@]}" >&2
fi
