#!/usr/bin/env bash
# A continuation pipeline for a session short of device time (stage 6, 2026-12-04): the steps of
# pipeline.sh for one EAGLE-3 run, overlapped on the one GPU, and training cut to a wall-clock deadline.
#   - real-text responses (train.jsonl) and the self-written requests + their responses run side by side;
#   - INIT's simulation (EVAL_TREES on EVAL_FILES) starts once the self-written data is done, beside the
#     rest of generation and training: it writes the greedy reference sequences into the cache;
#   - training (--init-from INIT, its vocabulary kept) gets TRAIN_MIN minutes, or fewer so that the
#     pipeline ends END_S seconds after it started (EVAL_RESERVE_S kept for the export and the evaluation);
#   - the new export is simulated on the cached references, the trees side by side, and each tree's
#     results for INIT and the new export are merged into eval_<N>.json ({split: [INIT, new]}).
# Runs detached under /tmp/w (stage3.sh starts it); collect.sh returns its files. DRY=1 rehearses it
# on the CPU in a few minutes. GEN_LIMIT=N answers only the first N rows of train.jsonl (its kinds are shuffled).
# METHOD=hass trains the continuation with HASS's objective instead of EAGLE-3's (runs/hass).
set -x
W=/tmp/w
G=$W/target.gguf
R="python3 $W/src/scripts/device/run_train.py"
T0=$(date +%s)
INIT=${INIT:?INIT: the exported drafter to continue}
END_S=${END_S:-480}
TRAIN_MIN=${TRAIN_MIN:-7}
EVAL_RESERVE_S=${EVAL_RESERVE_S:-60}
GEN_MIN=${GEN_MIN:-3}
GEN_BATCH=${GEN_BATCH:-512}
MAX_PROMPT=${MAX_PROMPT:-2200}
MAX_NEW=${MAX_NEW:-256}
SELF_N=${SELF_N:-2048}
EVAL_FILES=${EVAL_FILES:-eval_code.jsonl eval_chat.jsonl}
EVAL_TREES=${EVAL_TREES:-1,4,5 8,6,48}
METHOD=${METHOD:-eagle3}
fail() { echo "FAILED: $1"; echo FAILED > $W/DONE; exit 1; }
if [ "${DRY:-0}" = 1 ]; then
  SMALL="--limit 4 --max-new 8 --batch 4"; SSMALL="--limit 4 --max-new 8 --batch 4"; ESMALL="--limit 2 --max-new 8"
  SELF_ARGS="--n 4 --batch 8 --max-new 64 --max-rounds 2"; TRAIN_MIN=0.3
else
  SMALL="--max-new $MAX_NEW --batch $GEN_BATCH ${GEN_LIMIT:+--limit $GEN_LIMIT}"; SSMALL="--max-new $MAX_NEW --batch ${SELF_GEN_BATCH:-2048}"
  ESMALL="--max-new 256"; SELF_ARGS="--n $SELF_N --batch ${SELF_BATCH:-2048} --max-minutes ${SELF_MIN:-1.5}"
fi
nvidia-smi --query-gpu=name,memory.used --format=csv
PROMPTS=$(for f in $EVAL_FILES; do echo $W/prompts/$f; done)
evaluate() {  # evaluate DRAFTER TAG: every tree of EVAL_TREES, sequentially (the first one fills the cache)
  for tree in $EVAL_TREES; do
    IFS=, read -r K D N <<< "$tree"
    $R eval --gguf $G --drafter $1 --prompts $PROMPTS $ESMALL --batch 160 --max-prompt $((MAX_PROMPT + 1200)) \
      --top-k $K --depth $D --total-tokens $N --cache-dir $W/cache --json-out $W/e_$2_$N.json --log $W/eval.log || return 1
  done
}

$R generate --gguf $G --prompts $W/prompts/train.jsonl --out $W/data.npz $SMALL --max-prompt $MAX_PROMPT \
  --greedy-frac 0.5 --temperature 0.7 --max-minutes $GEN_MIN --log $W/gen.log > $W/gen_real.out 2>&1 &
P_REAL=$!
{ $R self-prompts --gguf $G $SELF_ARGS --seed ${SELF_SEED:-0} --out $W/prompts/self.jsonl --log $W/gen.log &&
  $R generate --gguf $G --prompts $W/prompts/self.jsonl --out $W/data_self.npz $SSMALL --max-prompt 384 --seed 1 \
    --greedy-frac 0.5 --temperature 0.7 --max-minutes ${SELF_GEN_MIN:-2} --log $W/gen.log; } > $W/gen_self.out 2>&1
[ $? = 0 ] || fail "self-written requests"
echo "self-written data done at $(( $(date +%s) - T0 )) s"
P_EV=
# SKIP_EVAL=1: no simulation on the device (the engine's own measurement decides, on the CPU): the GPU
# is left to generation and training, and the pipeline ends with the training.
[ "${SKIP_EVAL:-0}" = 1 ] || { evaluate $INIT init > $W/eval_init.out 2>&1 & P_EV=$!; }
wait $P_REAL || fail "real-text responses"
echo "real-text data done at $(( $(date +%s) - T0 )) s"

EXTRA=  # earlier stages' sequences (pack_carry.sh EXTRA_DATA), trained on beside this stage's
for x in $W/extra/*.tar.xz; do
  [ -f "$x" ] || continue
  d=${x%.tar.xz}; mkdir -p $d && xz -dc $x | tar -C $d -x && EXTRA="$EXTRA $(ls $d/*.npz | tr '\n' ' ')"
done
echo "earlier stages' data: ${EXTRA:-none}"
# DRAFT_VOCAB=N: INIT moved onto the N most frequent assistant tokens of this data first (`transplant`,
# mapped rows for new tokens), and training continues from there; unset keeps INIT's vocabulary.
TRAIN_INIT=$INIT
if [ -n "${DRAFT_VOCAB:-}" ]; then
  $R transplant --gguf $G --drafter $INIT --data $W/data.npz $W/data_self.npz $EXTRA --draft-vocab $DRAFT_VOCAB \
    --init mapped --out $W/runs/transplant --log $W/transplant.log > $W/transplant.out 2>&1 || fail "transplant"
  TRAIN_INIT=$W/runs/transplant
  echo "transplanted onto $DRAFT_VOCAB draft tokens at $(( $(date +%s) - T0 )) s"
fi
LEFT=$(( END_S - ($(date +%s) - T0) - EVAL_RESERVE_S - 25 ))  # 25 s: the run's start (imports, target, data)
TM=$(python3 -c "print(round(max(0.5, min($TRAIN_MIN, $LEFT / 60)), 2))")
[ "${DRY:-0}" = 1 ] && TM=$TRAIN_MIN
echo "training for $TM min (from $(( $(date +%s) - T0 )) s)"
# Expandable segments let the allocator grow for new batch shapes instead of freeing its cache and
# retrying. They did not fix slow first epochs: stage 11's log shows no retries (alloc_retries 0).
PYTORCH_CUDA_ALLOC_CONF=${PYTORCH_CUDA_ALLOC_CONF:-expandable_segments:True} \
$R train --gguf $G --data $W/data.npz $W/data_self.npz $EXTRA --draft-vocab ${DRAFT_VOCAB:-8192} --tokens-per-batch ${TOKENS_PER_BATCH:-24576} \
  --max-len ${MAX_LEN:-2560} --lr ${LR:-2e-4} --epochs 50 --init-from $TRAIN_INIT --max-minutes $TM --ckpt-every 300 \
  --log-every 50 --dtype float16 $([ $METHOD = hass ] && echo --hass) --out $W/runs/$METHOD > $W/train_$METHOD.log 2>&1 \
  || fail "training"
tail -n 3 $W/train_$METHOD.log
touch $W/TRAINED  # collect.sh may return the export from here on
echo "trained at $(( $(date +%s) - T0 )) s"
[ "${SKIP_EVAL:-0}" = 1 ] && { echo ok > $W/DONE; exit 0; }
wait $P_EV || echo "INIT's evaluation failed (see eval_init.out)"
echo "INIT evaluated by $(( $(date +%s) - T0 )) s"
# The new export on the cached references: one process per tree.
EV=$W/runs/$METHOD/export
PIDS=
for tree in $EVAL_TREES; do
  IFS=, read -r K D N <<< "$tree"
  $R eval --gguf $G --drafter $EV --prompts $PROMPTS $ESMALL --batch 160 --max-prompt $((MAX_PROMPT + 1200)) \
    --top-k $K --depth $D --total-tokens $N --cache-dir $W/cache --json-out $W/e_new_$N.json --log $W/eval.log \
    > $W/eval_new_$N.out 2>&1 &
  PIDS="$PIDS $!"
done
for p in $PIDS; do wait $p; done
for tree in $EVAL_TREES; do
  IFS=, read -r K D N <<< "$tree"
  python3 - $W/e_init_$N.json $W/e_new_$N.json $W/eval_$N.json <<'EOF'
import json, os, sys
out = {}
for p in sys.argv[1:3]:
    if os.path.exists(p):
        for split, rows in json.load(open(p)).items():
            out.setdefault(split, []).extend(rows)
json.dump(out, open(sys.argv[3], "w"), indent=1)
EOF
done
cat $W/eval_new_*.out | grep -v '%|' | tail -n 20
echo "done at $(( $(date +%s) - T0 )) s"
echo ok > $W/DONE
