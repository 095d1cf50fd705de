#!/usr/bin/env bash
# The whole GPU pipeline (runs detached under /tmp/w): self-distillation data, the drafters of
# METHODS (default EAGLE-3 and HASS side by side on the one GPU, same wall-time budget; "hydra" adds
# Hydra++ heads at HYDRA_LR, continued from HYDRA_INIT), export,
# evaluation on EVAL_FILES (prompt files under /tmp/w/prompts; Hydra drafters in chain shapes only).
# SELF_N>0: the target first writes SELF_N chat requests (`self-prompts`, the "self" source), answered
# in a pass of their own (short prompts batch wider: SELF_GEN_BATCH) and trained on beside train.jsonl's.
# INIT=DIR warm-starts the runs from an exported drafter (default: the bundled one; INIT= none).
# EVAL_ALSO=DIRS: more drafters evaluated beside the new ones (e.g. the bundled one when INIT=).
# Long real-text prompts: raise MAX_PROMPT (generate + eval), MAX_LEN and lower TOKENS_PER_BATCH
# (the drafter's attention is quadratic in the sequence length).
set -x
W=/tmp/w
G=$W/target.gguf
R="python3 $W/src/scripts/device/run_train.py"
GEN_MIN=${GEN_MIN:-5.5}
TRAIN_MIN=${TRAIN_MIN:-11}
INIT=${INIT-$W/src/python/eyas/drafters/bundled/smollm2-135m-instruct}
GEN_BATCH=${GEN_BATCH:-2048}
METHODS=${METHODS:-eagle3 hass}
MAX_PROMPT=${MAX_PROMPT:-384}
MAX_NEW=${MAX_NEW:-256}
EVAL_FILES=${EVAL_FILES:-eval_code.jsonl eval_chat.jsonl}
EVAL_TREES=${EVAL_TREES:-8,6,48 10,7,60}
# DRY=1: the same pipeline shrunk to seconds of work (a CPU rehearsal before spending GPU time).
if [ "${DRY:-0}" = 1 ]; then SMALL="--limit 4 --max-new 8 --batch 4"; ESMALL="--limit 2 --max-new 8"; TRAIN_MIN=0.3; else SMALL="--max-new $MAX_NEW --batch $GEN_BATCH"; ESMALL="--max-new 256"; fi
nvidia-smi --query-gpu=name,memory.used --format=csv
$R generate --gguf $G --prompts $W/prompts/train.jsonl --out $W/data.npz $SMALL --max-prompt $MAX_PROMPT \
  --greedy-frac 0.5 --temperature 0.7 --max-minutes $GEN_MIN --log $W/gen.log ||
$R generate --gguf $G --prompts $W/prompts/train.jsonl --out $W/data.npz $SMALL --batch 512 --max-prompt $MAX_PROMPT \
  --greedy-frac 0.5 --temperature 0.7 --max-minutes $GEN_MIN --log $W/gen.log || { echo FAILED > $W/DONE; exit 1; }
DATA=$W/data.npz
if [ "${SELF_N:-0}" -gt 0 ]; then
  if [ "${DRY:-0}" = 1 ]; then SELF_ARGS="--n 4 --batch 8 --max-new 64 --max-rounds 2"; SSMALL="$SMALL"
  else SELF_ARGS="--n $SELF_N --batch ${SELF_BATCH:-2048} --max-minutes ${SELF_MIN:-3}"; SSMALL="--max-new $MAX_NEW --batch ${SELF_GEN_BATCH:-2048}"; fi
  $R self-prompts --gguf $G $SELF_ARGS --seed ${SELF_SEED:-0} --out $W/prompts/self.jsonl --log $W/gen.log || { echo FAILED > $W/DONE; exit 1; }
  $R generate --gguf $G --prompts $W/prompts/self.jsonl --out $W/data_self.npz $SSMALL --max-prompt 384 --seed 1 \
    --greedy-frac 0.5 --temperature 0.7 --max-minutes ${SELF_GEN_MIN:-$GEN_MIN} --log $W/gen.log || { echo FAILED > $W/DONE; exit 1; }
  DATA="$DATA $W/data_self.npz"
fi
# NEW_VOCAB=1: a new 8,192-token draft vocabulary chosen on this data, INIT transplanted into it
# (`transplant`, eyas/train/vocab_transplant.py); the EAGLE-3 runs continue from the transplant, and both
# transplant inits are evaluated beside them (the "target" one is written on the CPU while training runs).
TRAIN_INIT=$INIT
TPIDS=
if [ "${NEW_VOCAB:-0}" = 1 ] && [ -n "$INIT" ]; then
  $R transplant --gguf $G --drafter $INIT --data $DATA --draft-vocab 8192 --init mapped --out $W/runs/transplant_mapped \
    --log $W/transplant.log || { echo FAILED > $W/DONE; exit 1; }
  OMP_NUM_THREADS=4 $R transplant --gguf $G --drafter $INIT --data $DATA --draft-vocab 8192 --init target --out $W/runs/transplant_target \
    --log $W/transplant.log > $W/transplant_target.out 2>&1 &  # (4 threads: beside the training)
  TPIDS=$!
  TRAIN_INIT=$W/runs/transplant_mapped
  EVAL_ALSO="${EVAL_ALSO:-} $W/runs/transplant_mapped $W/runs/transplant_target"
fi
COMMON="--gguf $G --data $DATA --draft-vocab 8192 --tokens-per-batch ${TOKENS_PER_BATCH:-32768} --max-len ${MAX_LEN:-768} --lr ${LR:-3e-4} --epochs 50 ${TRAIN_INIT:+--init-from $TRAIN_INIT} --max-minutes $TRAIN_MIN --ckpt-every 300 --log-every 50 --dtype float16"
PIDS=
# HYDRA_INIT: the Hydra export to continue (default: the bundled one; HYDRA_INIT= trains from scratch).
HYDRA_INIT=${HYDRA_INIT-$W/src/python/eyas/drafters/bundled/hydra/smollm2-135m-instruct}
[ -n "$HYDRA_INIT" ] && [ ! -d "$HYDRA_INIT" ] && HYDRA_INIT=
# A continuation starts from trained heads: at 1e-3 the 2026-12-03 one lost 0.80 -> 0.58 agreement in its first steps.
[ -n "$HYDRA_INIT" ] && HYDRA_LR=${HYDRA_LR:-2e-4}
HYDRA="--gguf $G --data $DATA --draft-vocab 8192 --tokens-per-batch ${TOKENS_PER_BATCH:-32768} --max-len ${MAX_LEN:-768} --lr ${HYDRA_LR:-1e-3} --epochs 50 ${HYDRA_INIT:+--init-from $HYDRA_INIT} --max-minutes $TRAIN_MIN --ckpt-every 300 --log-every 50 --dtype float16 --family hydra"
for m in $METHODS; do
  case $m in
    hydra) $R train $HYDRA --out $W/runs/$m > $W/train_$m.log 2>&1 & ;;
    *) $R train $COMMON $([ $m = hass ] && echo --hass) --out $W/runs/$m > $W/train_$m.log 2>&1 & ;;
  esac
  PIDS="$PIDS $!"
done
for p in $PIDS $TPIDS; do wait $p; done
for m in $METHODS; do tail -n 3 $W/train_$m.log; done
touch $W/TRAINED  # collect.sh may return the exports from here on
[ "${SKIP_EVAL:-0}" = 1 ] && { echo ok > $W/DONE; exit 0; }  # SKIP_EVAL=1: the engine evaluates the exports instead
EXPORTS=$(for m in $METHODS; do echo $W/runs/$m/export; done)
# Hydra drafters are simulated as chains (top_k 1): the bundled one beside the continued one.
case " $METHODS " in *" hydra "*) EXPORTS="$HYDRA_INIT $EXPORTS" ;; esac
PROMPTS=$(for f in $EVAL_FILES; do echo $W/prompts/$f; done)
for tree in $EVAL_TREES; do
  IFS=, read -r K D N <<< "$tree"
  # The trees share the cached greedy sequences; the first is eval.json, the others eval<N>.json.
  J=$W/eval.json; [ "$tree" = "${EVAL_TREES%% *}" ] || J=$W/eval$N.json
  $R eval --gguf $G --drafter ${INIT:+$INIT} ${EVAL_ALSO:-} $EXPORTS --prompts $PROMPTS $ESMALL --batch 160 --max-prompt $((MAX_PROMPT + 1200)) \
    --top-k $K --depth $D --total-tokens $N --cache-dir $W/cache --json-out $J --log $W/eval.log
done
echo ok > $W/DONE
