#!/usr/bin/env bash
# The last GPU call for a carry packed by pack_carry.sh (one xz archive in parts, $C/a, b, ...
# /payload.partNN; the calls before copied all but the last to /tmp/w, this one carries the last): unpack
# the target GGUF, the drafter to continue (init/), the prompts, earlier stages' data (extra/) and the gguf wheel, check the sha256 sums, copy
# the sources (python/ and scripts/ of the checkout the call runs in) to /tmp/w/src, start
# pipeline_overlap.sh detached, then wait (up to $1 seconds) and collect.
set -e
W=/tmp/w
C=${CARRY:?CARRY: the carry folder}
cp "$C"/*/payload.part* $W/  # only the carried part is there
cat $W/payload.part* | xz -d | tar -C $W -x
rm -f $W/payload.part*
(cd $W && sha256sum -c SHA256SUMS)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target $W/site $W/whl/*.whl
rm -rf $W/src && mkdir -p $W/src && cp -r python scripts $W/src/ && rm -rf $W/src/python/eyas/drafters/bundled
wc -l $W/prompts/*.jsonl
rm -f $W/DONE $W/TRAINED
cd $W && PYTHONPATH=$W/site PYTHONUNBUFFERED=1 setsid nohup bash $W/src/scripts/device/pipeline_overlap.sh > $W/pipeline.log 2>&1 < /dev/null &
sleep 2
exec bash "$W/src/scripts/device/collect.sh" "${1:-540}"
