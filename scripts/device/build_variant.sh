#!/usr/bin/env bash
# A/B of source changes on the device machine: builds eyas once more with some files replaced, next to
# thread_scaling.sh's build of the carried commit (run its `setup` step first).
#   scripts/device/build_variant.sh NAME DIR
# DIR holds the replacement files at their repository paths (e.g. DIR/csrc/core/thread_pool.cpp); put it
# under .scaling_carry/ here so it travels. The variant lands in $WORK/variants/NAME (a copy of the
# commit's tree with DIR laid over it, built into its build/scaling); the script's last line is the
# PYTHONPATH that imports it, e.g.
#   PP=$(scripts/device/build_variant.sh oldpool .scaling_carry/variants/oldpool | tail -1)
#   PYTHONPATH=$PP python3 bench/compare_llamacpp.py ...
set -euo pipefail
cd "$(dirname "$0")/../.."
name=$1 over=$(cd "$2" && pwd)
W=${WORK:-$PWD/build/thread_scaling}
[ -d "$W/src" ] || { echo "build_variant: no $W/src (run thread_scaling.sh setup first)" >&2; exit 1; }
V=$W/variants/$name
rm -rf "$V" && mkdir -p "$V"
tar -C "$W/src" -cf - --exclude=./build . | tar -xf - -C "$V"
cp -a "$over/." "$V/"
echo "variant $name: $(cd "$over" && find . -type f | sort | tr '\n' ' ')" >&2
(cd "$V" && EYAS_TARGETS="_core bench_matmul bench_attention bench_thread_pool" bash scripts/dev-build scaling) >&2
echo "$V/build/scaling/pkg:$W/site"
