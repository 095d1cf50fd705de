#!/usr/bin/env bash
# GPU call 3 (carry .carry/c .whl): reassemble + verify the GGUF, install the gguf wheel, copy the
# sources to /tmp/w (the working tree is re-synced on each call), start pipeline.sh detached,
# then wait and collect. Later calls run `scripts/device/collect.sh`.
set -e
W=/tmp/w
cp .carry/c/gguf.part* $W/
cat $W/gguf.part0[0-9] > $W/target.gguf
echo "$(cat .carry/c/gguf.sha256)  $W/target.gguf" | sha256sum -c -
rm -f $W/gguf.part0[0-9]
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target $W/site .whl/*.whl
rm -rf $W/src && mkdir -p $W/src && cp -r python scripts $W/src/ && cp -r .carry/c/prompts $W/prompts
cd $W && PYTHONPATH=$W/site PYTHONUNBUFFERED=1 setsid nohup bash $W/src/scripts/device/pipeline.sh > $W/pipeline.log 2>&1 < /dev/null &
sleep 2
exec bash "$(dirname "$0")/collect.sh" "${1:-540}"
