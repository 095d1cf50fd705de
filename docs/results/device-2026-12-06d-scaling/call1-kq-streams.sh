#!/usr/bin/env bash
# A/B of EYAS_KQ_STREAMS (1 = one weight stream per thread, 2/4 = lockstep groups) on the device host.
set -uo pipefail
W=$PWD/build/thread_scaling
export PYTHONPATH=$W/src/build/scaling/pkg:$W/site PYTHONUNBUFFERED=1
BM=$W/src/build/scaling/bench/bench_matmul
T0=$(date +%s)
left() { echo $((${DEADLINE_S:-560} - $(date +%s) + T0)); }
cat > $W/dec.py <<'PY'
import sys, time, statistics, numpy as np
from eyas import _core
from eyas.loaders import load_model
path, threads, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
m = load_model(path)
t = _core.Transformer(m.spec, m.weights, max_context=256, kv_dtype="f16", device=_core.Device("cpu", threads))
t.prefill(np.arange(2, dtype=np.int32)); t.decode(1)
t.reset(); t.prefill(np.arange(16, dtype=np.int32), logits="none")
tok, ts = 5, []
for i in range(n):
    t0 = time.perf_counter(); tok = t.decode(tok, logits="argmax")["argmax"]; ts.append(time.perf_counter() - t0)
print(f"{path.split('/')[-1]} thr {threads} S={sys.argv[4]}: median {statistics.median(ts[2:])*1e3:.2f} ms, min {min(ts)*1e3:.2f} ms, {t.weight_bytes/statistics.median(ts[2:])/1e9:.1f} GB/s")
PY
for r in 1 2; do
  for thr in 16 8 4; do
    for S in 1 4 2; do
      [ "$(left)" -lt 60 ] && break 3
      echo -n "round $r S=$S "; EYAS_KQ_STREAMS=$S EYAS_BENCH_COLD=1 EYAS_BENCH_COLD_MB=1024 EYAS_BENCH_ROWS=1 EYAS_BENCH_THREADS=$thr \
        EYAS_BENCH_TYPES=Q4_K,Q6_K EYAS_BENCH_SHAPES=2048x8192,8192x2048 timeout 60 $BM | awk 'NR>2{printf "%s %s t%s %s us %s GB/s | ", $1,$2,$3,$5,$6}'; echo
    done
  done
done
for r in 1 2 3; do
  for thr in 16 8 4; do
    for f in $W/models/*Q4_K_M.gguf; do
      for S in 1 4; do
        [ "$(left)" -lt 30 ] && break 4
        EYAS_KQ_STREAMS=$S timeout 60 python3 $W/dec.py $f $thr 40 $S
      done
    done
  done
done
echo "end at $(( $(date +%s) - T0 )) s"
