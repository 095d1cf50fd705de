#!/usr/bin/env bash
# A/B on the device host's Intel CPU of the K-quant row passes' prefetch spread over each block (e2d71f1,
# measured on Zen 4 only): this commit's build against a variant with kqpack_avx512.h as it was before
# (d251540). Run on 2026-12-07 (the third session that day; call1_ab.log, then call2_*.log and call3_kernels.log,
# summarized by summary.py into summary.txt). Here, first:
#   scripts/device/pack_scaling_carry.sh && mkdir -p .scaling_carry/variants/nospread/csrc/cpu/quant &&
#   git show d251540:csrc/cpu/quant/kqpack_avx512.h > .scaling_carry/variants/nospread/csrc/cpu/quant/kqpack_avx512.h
# then one device call, carry [".scaling_carry"]:
#   MODELS="smollm2-1.7b:Q4_K_M smollm2-1.7b:Q6_K" scripts/device/thread_scaling.sh setup &&
#   scripts/device/build_variant.sh nospread .scaling_carry/variants/nospread &&
#   DEADLINE_S=$((560 - SECONDS)) bash docs/results/device-2026-12-07-spread/ab.sh 2>&1 | tee $OUT/ab.log
set -uo pipefail
T0=$(date +%s)
W=$PWD/build/thread_scaling
left() { echo $((${DEADLINE_S:-560} - $(date +%s) + T0)); }
NEW=$W/src/build/scaling PP_NEW=$W/src/build/scaling/pkg:$W/site
OLD=$W/variants/nospread/build/scaling PP_OLD=$W/variants/nospread/build/scaling/pkg:$W/site
cat > $W/verify.py <<'PY'
# Median decode step and median forwards of 1-8 chained nodes after 128 tokens of context.
import sys, statistics, time, numpy as np
from eyas import _core
from eyas.api import DEFAULT_KV_DTYPE
from eyas.loaders import load_model
path, threads, label = sys.argv[1], int(sys.argv[2]), sys.argv[3]
model = load_model(path)
m = _core.Transformer(model.spec, model.weights, max_context=512, kv_dtype=DEFAULT_KV_DTYPE,
                      device=_core.Device("cpu", threads))
m.prefill((np.arange(128) % 1000 + 100).astype(np.int32))
tok, steps = np.array([100], np.int32), []
for i in range(14):
    t0 = time.perf_counter(); tok[0] = m.forward(tok, logits="argmax")["argmax"]
    m.commit(np.zeros(1, np.int32)); steps.append(time.perf_counter() - t0)
m.truncate(128)
step = statistics.median(steps[4:])
out = [f"{label} thr {threads} step {step * 1e3:.2f} ms"]
for n in (2, 4, 8):
    depths = np.arange(n, dtype=np.int32); mask = np.tril(np.ones((n, n), np.uint8))
    toks = (np.arange(n) + 200).astype(np.int32); ts = []
    for r in range(7):
        t0 = time.perf_counter(); m.forward(toks, mask=mask, depths=depths, logits="all"); ts.append(time.perf_counter() - t0)
    out.append(f"M{n} {statistics.median(ts[1:]) / step:.2f}")
print(" | ".join(out), flush=True)
PY
say() { echo "== [$(($(date +%s) - T0)) s] $*"; }
for r in 1 2 3; do
  for thr in 2 16; do
    for b in new old; do
      [ "$(left)" -lt 120 ] && break 3
      B=$NEW; [ $b = old ] && B=$OLD
      echo -n "round $r $b T=$thr: "
      EYAS_BENCH_COLD=1 EYAS_BENCH_COLD_MB=1024 EYAS_BENCH_ROWS=1,2,4,8 EYAS_BENCH_THREADS=$thr \
        EYAS_BENCH_TYPES=Q4_K,Q5_K,Q6_K EYAS_BENCH_SHAPES=8192x2048 timeout 60 $B/bench/bench_matmul |
        awk 'NR>2{printf "%s r%s %s us | ", $1, $4, $5}'; echo
    done
  done
done
say "model"
for r in 1 2 3; do
  for thr in 2 16; do
    for f in $W/models/smollm2-1.7b-random-Q4_K_M.gguf $W/models/smollm2-1.7b-random-Q6_K.gguf; do
      for b in new old; do
        [ "$(left)" -lt 30 ] && break 4
        PP=$PP_NEW; [ $b = old ] && PP=$PP_OLD
        PYTHONPATH=$PP timeout 60 python3 $W/verify.py $f $thr "r$r $b $(basename $f .gguf)"
      done
    done
  done
done
say end
