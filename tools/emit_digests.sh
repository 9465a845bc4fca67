#!/usr/bin/env bash
# Emits every shared robot's library source over both bases, dtypes, targets and schedules and prints one sha256 per
# source: run before and after an emitter refactor and diff the two lists (issue 26: "byte-identical").
# usage: tools/emit_digests.sh [GRIDC] [ROBOTS_DIR]   (defaults: build/gridc, ../shared/robots)
#   EMIT_DIGESTS_PP=1: digest the preprocessed source instead (gcc -E -P, whitespace collapsed; CUDA with empty
#   system and runtime headers), for refactors that move code into macros or templates but not into other tokens
set -euo pipefail
gridc=${1:-build/gridc}
robots=${2:-../shared/robots}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/inc"
for h in cuda_runtime.h math.h stddef.h omp.h cuda_host.h; do : > "$tmp/inc/$h"; done
# the digest of one source: its bytes, or its preprocessed tokens
digest() {
  if [ "${EMIT_DIGESTS_PP:-0}" = 1 ]; then
    if [ "$2" = cuda ]; then gcc -E -P -x c++ -nostdinc -I"$tmp/inc" "$1"; else gcc -E -P -x c -nostdinc -I"$tmp/inc" "$1"; fi \
      | tr -s ' \t\n' ' ' | sha256sum | cut -c1-16
  else
    sha256sum < "$1" | cut -c1-16
  fi
}
for urdf in "$robots"/*.urdf; do
  r=$(basename "$urdf" .urdf)
  scheds="auto rolled"
  case "$r" in iiwa|go2|hyq) scheds="auto rolled unrolled" ;; esac
  for base in fixed floating; do
    fb=(); [ "$base" = floating ] && fb=(--floating-base)
    for dt in float32 float64; do
      for tg in c cuda; do
        for s in $scheds; do
          "$gridc" "$urdf" "${fb[@]}" --dtype "$dt" --target "$tg" --schedule "$s" -o "$tmp/src"
          echo "$(digest "$tmp/src" "$tg") $r $base $dt $tg $s"
        done
      done
    done
  done
done
