#!/usr/bin/env bash
# eyas against llama.cpp's llama-bench across thread counts on the device machine (docs/performance.md §8.6).
# Steps, run in the order given:
#   setup                 copy the checkout to $WORK/src and make it the carry's commit.txt (head/ copied
#                         over, not_in_head.txt deleted); build eyas (_core, bench_bandwidth; the runtime
#                         ISA dispatch) and llama-bench (CPU, GGML_NATIVE) side by side; write the GGUFs of
#                         $MODELS with bench/make_shape_gguf.py. Skipped when done before on this warm machine
#   bandwidth             bench_bandwidth: read GB/s of a cold 1 GiB buffer, 1..all threads, 1 and 4 streams
#   compare:SHAPE:TYPE:T  bench/compare_llamacpp.py (the commit's copy) at each of $THREADS (tg T, pp $PROMPT)
#   matmul:TYPES:SHAPES:ROWS  bench_matmul, warm, at each of $THREADS (EYAS_BENCH_TYPES / _SHAPES / _ROWS as given,
#                         commas inside each): whether a kernel alone scales with the threads
#   pytest:FILE,FILE,...  those test files of the commit's copy against its build (the kernels' parity tests
#                         on this CPU's instruction sets: AMX here, which CI's machines lack)
#   profile:SHAPE:TYPE:T  decode steps (T a run, two runs) at each of $PROFILE_THREADS, without and with
#                         EYAS_PROFILE=1, and pp512 with it (the profiles leave out each process's first
#                         forward: _core._profile_reset); then the `pool` step
#   pool                  bench_thread_pool: the thread pool's cost of one job at 1..all threads
# Needs .scaling_carry/ from scripts/device/pack_scaling_carry.sh. Through the device tool:
#   run(carry=[".scaling_carry"], command="set -o pipefail; PYTHONUNBUFFERED=1 scripts/device/thread_scaling.sh
#       setup bandwidth compare:smollm2-135m:Q4_1:64 compare:smollm2-1.7b:Q4_0:32 2>&1 | tee $OUT/log")
# Env: THREADS ("16 8 4 2 1"), PROFILE_THREADS ("4 16"), ROUNDS (2), REPEATS (2), PROMPT (512),
#      MODELS ("smollm2-135m:Q4_1 smollm2-1.7b:Q4_0 smollm2-1.7b:Q4_K_M"), WORK (build/thread_scaling),
#      DEADLINE_S (570: steps left when that many seconds have passed are cut, so the call ends in time).
set -uo pipefail
cd "$(dirname "$0")/../.."
T0=$(date +%s)
C=$PWD/.scaling_carry
W=${WORK:-$PWD/build/thread_scaling}
THREADS=${THREADS:-16 8 4 2 1}
PROFILE_THREADS=${PROFILE_THREADS:-4 16}
ROUNDS=${ROUNDS:-2} REPEATS=${REPEATS:-2} PROMPT=${PROMPT:-512}
MODELS=${MODELS:-smollm2-135m:Q4_1 smollm2-1.7b:Q4_0 smollm2-1.7b:Q4_K_M}
DEADLINE_S=${DEADLINE_S:-570}
LB=$W/llama.cpp/build/bin/llama-bench
export PYTHONPATH=$W/src/build/scaling/pkg:$W/site PYTHONUNBUFFERED=1
left() { echo $((DEADLINE_S - $(date +%s) + T0)); }
say() { echo "== [$(($(date +%s) - T0)) s] $*"; }
model() { echo "$W/models/$1-random-$2.gguf"; }

setup() {
  if [ -f "$W/setup.done" ]; then say "setup: done before ($(cat "$W/setup.done"))"; return; fi
  mkdir -p "$W/src" "$W/models" "$W/llama.cpp"
  lscpu | grep -E 'Model name|^CPU\(s\)|Thread|Socket|NUMA node|L2|L3'
  echo "flags: $(grep -m1 -o -E 'avx512_vnni|amx_tile|amx_int8|amx_bf16' /proc/cpuinfo | sort -u | tr '\n' ' ')"
  free -g | head -2; gcc --version | head -1; python3 --version
  python3 -m pip install -q --no-index --no-deps --target "$W/site" "$C"/gguf-*.whl || return 1
  tar -cf - --exclude=./build --exclude=./.git --exclude=./.scaling_carry . | tar -xf - -C "$W/src"
  [ -d "$C/head" ] && cp -a "$C/head/." "$W/src/" &&
    say "HEAD's copy of: $(cd "$C/head" && find . -type f | tr '\n' ' ')"
  while read -r f; do rm -f "$W/src/$f"; done < "$C/not_in_head.txt"
  say "building commit $(cat "$C/commit.txt")"
  (for m in $MODELS; do python3 "$W/src/bench/make_shape_gguf.py" --shape "${m%%:*}" --type "${m##*:}" \
      --tokenizer "$C/tokenizer.gguf" --out "$W/models"; done) > "$W/models.log" 2>&1 &
  local gen=$!
  (tar -xJf "$C/llama.cpp.tar.xz" -C "$W" &&
   cmake -S "$W/llama.cpp" -B "$W/llama.cpp/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
     -DGGML_CUDA=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
     -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF > "$W/llama-cmake.log" 2>&1 &&
   cmake --build "$W/llama.cpp/build" --target llama-bench -j"$(nproc)" > "$W/llama-build.log" 2>&1) &
  local ll=$!
  (cd "$W/src" && EYAS_TARGETS="_core bench_bandwidth bench_matmul bench_thread_pool" bash scripts/dev-build scaling) || return 1
  say "eyas built"
  wait $ll || { tail -30 "$W/llama-cmake.log" "$W/llama-build.log"; return 1; }
  say "llama-bench built"; grep -iE 'AMX|AVX512|native|OpenMP' "$W/llama-cmake.log" | head
  wait $gen; cat "$W/models.log"; ls -l "$W/models"
  python3 -c "from eyas import _core; print('eyas matmul', _core.ops.get_isa(), 'simd', _core.ops._simd_levels())"
  cat "$C/commit.txt" > "$W/setup.done"
  say "setup done"
}

bandwidth() { "$W/src/build/scaling/bench/bench_bandwidth"; }

pool() { say "thread pool: cost of one job"; timeout -k 5 "$(left)" "$W/src/build/scaling/bench/bench_thread_pool"; }

matmul() {  # TYPES SHAPES ROWS
  for t in $THREADS; do
    [ "$(left)" -lt 15 ] && { say "cut (deadline): matmul threads $t"; continue; }
    EYAS_BENCH_TYPES=$1 EYAS_BENCH_SHAPES=$2 EYAS_BENCH_ROWS=$3 EYAS_BENCH_THREADS=$t \
      timeout -k 5 "$(left)" "$W/src/build/scaling/bench/bench_matmul" | tail -n +2
  done
}

run_pytest() {  # FILE,FILE,...
  python3 -c "import pytest" 2>/dev/null ||
    python3 -m pip install -q --no-index --find-links "$C/pytest" --target "$W/site" pytest || return 1
  (cd "$W/src" && timeout -k 5 "$(left)" python3 -m pytest -q -p no:cacheprovider -rs ${1//,/ })
}

compare() {  # SHAPE TYPE TOKENS
  local f; f=$(model "$1" "$2")
  [ -f "$f" ] || python3 "$W/src/bench/make_shape_gguf.py" --shape "$1" --type "$2" --tokenizer "$C/tokenizer.gguf" \
    --out "$W/models"
  ls -l "$f"
  for t in $THREADS; do
    if [ "$(left)" -lt 20 ]; then say "cut (deadline): $1 $2 threads $t"; continue; fi
    say "compare $1 $2 threads $t"
    timeout -k 5 "$(left)" python3 "$W/src/bench/compare_llamacpp.py" --llama-bench "$LB" --model "$f" --threads "$t" \
      --rounds "$ROUNDS" --repeats "$REPEATS" --tokens "$3" --prompt "$PROMPT"
  done
}

profile() {  # SHAPE TYPE TOKENS
  local f; f=$(model "$1" "$2")
  cat > "$W/steps.py" <<'EOF'
import sys, time
from eyas import _core
from eyas.api import DEFAULT_KV_DTYPE
from eyas.generation import stream
from eyas.loaders import load_model
from eyas.sampling import SamplingParams
import numpy as np
path, threads, tokens, mode = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
model = load_model(path)
m = _core.Transformer(model.spec, model.weights, max_context=max(tokens, 512) + 16,
                      device=_core.Device("cpu", threads), kv_dtype=DEFAULT_KV_DTYPE)
if mode == "pp":  # a warm-up forward over 512 tokens (dropped from the profile), then two timed ones
    ids = (np.arange(512) % 1000 + 100).astype(np.int32)
    for r in range(3):
        m.reset()
        t0 = time.perf_counter()
        m.forward(ids, logits="last")
        print(f"threads {threads} pp512 run {r}: {512 / (time.perf_counter() - t0):.1f} tok/s", flush=True)
        if r == 0:
            _core._profile_reset()
    print("forwards in the profile: 2")
    sys.exit()
for r in range(2):  # each run: the one-token prompt's forward, then `tokens` steps
    steps = stream(m, [1], SamplingParams())
    next(steps)
    if r == 0:
        _core._profile_reset()  # the first forward's repacks and page touches stay out of the profile
    t0 = time.perf_counter()
    for _ in range(tokens):
        next(steps)
    dt = time.perf_counter() - t0
    steps.close()
    print(f"threads {threads} run {r + 1}: {tokens / dt:.1f} tok/s, {dt / tokens * 1e3:.3f} ms a step", flush=True)
print(f"forwards in the profile: {2 * tokens + 1}")
EOF
  for t in $PROFILE_THREADS; do
    [ "$(left)" -lt 15 ] && { say "cut (deadline): profile threads $t"; continue; }
    say "decode steps $1 $2 threads $t"; timeout -k 5 "$(left)" python3 "$W/steps.py" "$f" "$t" "$3" tg
    say "the same, EYAS_PROFILE=1"; EYAS_PROFILE=1 timeout -k 5 "$(left)" python3 "$W/steps.py" "$f" "$t" "$3" tg
    say "pp512, EYAS_PROFILE=1"; EYAS_PROFILE=1 timeout -k 5 "$(left)" python3 "$W/steps.py" "$f" "$t" "$3" pp
  done
  pool
}

for step in "$@"; do
  IFS=: read -r name a b c <<< "$step"
  case $name in
    setup) setup || { say "setup failed"; exit 1; } ;;
    bandwidth) say bandwidth; bandwidth ;;
    pool) pool ;;
    matmul) say "bench_matmul $a $b T=$c"; matmul "$a" "$b" "$c" ;;
    pytest) say "pytest $a"; run_pytest "$a" || say "pytest: FAILED" ;;
    compare) compare "$a" "$b" "$c" ;;
    profile) profile "$a" "$b" "$c" ;;
    *) echo "unknown step: $step" >&2; exit 2 ;;
  esac
done
say "end"
