#!/usr/bin/env bash
# The Q6_K and Q5_K pack layouts A/B on a device host (Intel, AMX): the checkout ("new") against it with
# all_since_517abf9.patch (this session's kernel changes) reversed ("base"), both built here; cold bench_matmul Q6_K and a random-weight
# Qwen3.5-0.8B Q4_K_M model (model_ab.py), alternating per round. Needs .scaling_carry/
# (scripts/device/pack_scaling_carry.sh: the gguf wheel, pytest's wheels and the tokenizer). From the repository root:
#   run(carry=[".scaling_carry"], command="bash docs/results/q6k-layout-2026-12-07/device_ab.sh 2>&1 | tee $OUT/log")
set -uo pipefail
R=$(dirname "$0")
C=$PWD/.scaling_carry W=/tmp/ab ROUNDS=${ROUNDS:-5}
T0=$(date +%s)
say() { echo "== [$(($(date +%s) - T0)) s] $*"; }
lscpu | grep -E 'Model name|^CPU\(s\)|L2|L3'
mkdir -p $W/new $W/base $W/models
python3 -m pip install -q --no-index --no-deps --target $W/site "$C"/gguf-*.whl
tar -cf - --exclude=./build --exclude=./.git --exclude=./.scaling_carry . | tar -xf - -C $W/new
cp -a $W/new/. $W/base/
(cd $W/base && patch -R -p1 -s < "$W/new/$R/all_since_517abf9.patch") || exit 1
(cd $W/new && EYAS_TARGETS="_core bench_matmul" bash scripts/dev-build ab > $W/new.log 2>&1) &
(cd $W/base && EYAS_TARGETS="_core bench_matmul" bash scripts/dev-build ab > $W/base.log 2>&1) &
PYTHONPATH=$W/site python3 $W/new/bench/make_shape_gguf.py --shape qwen3.5-0.8b --type Q4_K_M \
  --tokenizer "$C/tokenizer.gguf" --out $W/models | tail -1
wait
tail -1 $W/new.log $W/base.log
M=$(ls $W/models/*.gguf)
say "built"
# The K-quant parity tests on this CPU first: its AMX tile passes read the reordered packs too, and
# neither the VM nor CI has AMX.
python3 -c "import pytest" 2>/dev/null ||
  python3 -m pip install -q --no-index --find-links "$C/pytest" --target $W/site pytest
(cd $W/new && PYTHONPATH=$W/new/build/ab/pkg:$W/site python3 -m pytest -q -p no:cacheprovider -rs \
  tests/test_matmul_kquant.py tests/test_matmul_invariance.py tests/test_matmul_tiles.py) || say "pytest: FAILED"
for r in $(seq "$ROUNDS"); do
  for v in base new; do
    for thr in 2 16; do
      EYAS_BENCH_COLD=1 EYAS_BENCH_THREADS=$thr EYAS_BENCH_ROWS=1,2,4,8 EYAS_BENCH_TYPES=Q4_K,Q5_K,Q6_K \
        EYAS_BENCH_SHAPES=8192x2048,2048x8192 $W/$v/build/ab/bench/bench_matmul | tail -n +2 | sed "s/^/$v r$r /"
    done
  done
done
say "matmuls done"
for r in $(seq "$ROUNDS"); do
  for v in base new; do
    for thr in 2 16; do
      echo "$v r$r t$thr $(PYTHONPATH=$W/$v/build/ab/pkg python3 "$W/new/$R/model_ab.py" "$M" $thr)"
    done
  done
done
say "done"
