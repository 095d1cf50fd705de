#!/usr/bin/env bash
# GPU calls 1 and 2 (carry $C/a, then $C/b; C defaults to .carry): park the parts carried in /tmp/w.
set -e
C=${CARRY:-.carry}
mkdir -p /tmp/w && cp "$C"/*/gguf.part* /tmp/w/
cp "$C"/*/train.xz.part* /tmp/w/ 2>/dev/null || true  # real-text prompts only
ls -la /tmp/w; git log -1 --format='sent checkout at %h %s' 2>/dev/null || true
python3 -c "import torch; print(torch.__version__, torch.cuda.get_device_name(), torch.cuda.mem_get_info())"
