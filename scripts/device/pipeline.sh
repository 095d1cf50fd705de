#!/usr/bin/env bash
# The whole GPU pipeline (runs detached under /tmp/w): self-distillation data, EAGLE-3 and HASS
# trained side by side on the one GPU with the same wall-time budget, export, evaluation.
# INIT=DIR warm-starts both runs from an exported drafter (default: the bundled one; INIT= none).
set -x
W=/tmp/w
G=$W/target.gguf
R="python3 $W/src/scripts/device/run_train.py"
GEN_MIN=${GEN_MIN:-5.5}
TRAIN_MIN=${TRAIN_MIN:-11}
INIT=${INIT-$W/src/python/eyas/drafters/bundled/smollm2-135m-instruct}
GEN_BATCH=${GEN_BATCH:-2048}
# DRY=1: the same pipeline shrunk to seconds of work (a CPU rehearsal before spending GPU time).
if [ "${DRY:-0}" = 1 ]; then SMALL="--limit 4 --max-new 8 --batch 4"; ESMALL="--limit 2 --max-new 8"; TRAIN_MIN=0.3; else SMALL="--max-new 256 --batch $GEN_BATCH"; ESMALL="--max-new 256"; fi
nvidia-smi --query-gpu=name,memory.used --format=csv
$R generate --gguf $G --prompts $W/prompts/train.jsonl --out $W/data.npz $SMALL \
  --greedy-frac 0.5 --temperature 0.7 --max-minutes $GEN_MIN --log $W/gen.log ||
$R generate --gguf $G --prompts $W/prompts/train.jsonl --out $W/data.npz $SMALL --batch 512 \
  --greedy-frac 0.5 --temperature 0.7 --max-minutes $GEN_MIN --log $W/gen.log || { echo FAILED > $W/DONE; exit 1; }
COMMON="--gguf $G --data $W/data.npz --draft-vocab 8192 --tokens-per-batch 32768 --max-len 768 --lr ${LR:-3e-4} --epochs 50 ${INIT:+--init-from $INIT} --max-minutes $TRAIN_MIN --ckpt-every 300 --log-every 50 --dtype float16"
$R train $COMMON --out $W/runs/eagle3 > $W/train_eagle3.log 2>&1 &
P1=$!
$R train $COMMON --hass --out $W/runs/hass > $W/train_hass.log 2>&1 &
P2=$!
wait $P1; wait $P2
tail -n 3 $W/train_eagle3.log $W/train_hass.log
$R eval --gguf $G --drafter ${INIT:+$INIT} $W/runs/eagle3/export $W/runs/hass/export \
  --prompts $W/prompts/eval_code.jsonl $W/prompts/eval_chat.jsonl $ESMALL --batch 160 \
  --top-k 8 --depth 6 --total-tokens 48 --cache-dir $W/cache --json-out $W/eval.json --log $W/eval.log
# A larger tree (EAGLE's default size) on the same cached greedy sequences.
$R eval --gguf $G --drafter ${INIT:+$INIT} $W/runs/eagle3/export $W/runs/hass/export \
  --prompts $W/prompts/eval_code.jsonl $W/prompts/eval_chat.jsonl $ESMALL --batch 160 \
  --top-k 10 --depth 7 --total-tokens 60 --cache-dir $W/cache --json-out $W/eval60.json --log $W/eval.log
echo ok > $W/DONE
