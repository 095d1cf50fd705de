#!/usr/bin/env bash
# GPU call 1 (carry .carry/a .whl): park GGUF part 1 in /tmp/w and check the machine.
set -e
mkdir -p /tmp/w && cp .carry/a/gguf.part00 /tmp/w/
python3 -c "import torch; print(torch.__version__, torch.cuda.get_device_name(), torch.cuda.mem_get_info())"
nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv
