#!/usr/bin/env bash
# Emits every shared robot's library source over both bases, dtypes, targets and schedules and prints one sha256 per
# source: run before and after an emitter refactor and diff the two lists (issue 26: "byte-identical").
# usage: tools/emit_digests.sh [GRIDC] [ROBOTS_DIR]   (defaults: build/gridc, ../shared/robots)
set -euo pipefail
gridc=${1:-build/gridc}
robots=${2:-../shared/robots}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
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
          echo "$(sha256sum < "$tmp/src" | cut -c1-16) $r $base $dt $tg $s"
        done
      done
    done
  done
done
