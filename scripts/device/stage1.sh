#!/usr/bin/env bash
# GPU calls 1 and 2 (carry .carry/a, then .carry/b): park the GGUF part(s) carried in /tmp/w.
set -e
mkdir -p /tmp/w && cp .carry/*/gguf.part* /tmp/w/
ls -la /tmp/w
python3 -c "import torch; print(torch.__version__, torch.cuda.get_device_name(), torch.cuda.mem_get_info())"
