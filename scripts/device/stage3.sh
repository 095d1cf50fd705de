#!/usr/bin/env bash
# GPU call 3 for a carry packed by pack_carry.sh (one xz archive in three parts, $C/{a,b,c}/payload.part0N;
# calls 1 and 2 copied parts 0 and 1 to /tmp/w): unpack the target GGUF, the drafter to continue
# (init/), the prompts and the gguf wheel, check the sha256 sums, copy the sources ($C/c/src) to
# /tmp/w/src, start pipeline_overlap.sh detached, then wait (up to $1 seconds) and collect.
set -e
W=/tmp/w
C=${CARRY:?CARRY: the carry folder}
cp "$C"/c/payload.part* $W/
cat $W/payload.part0[0-2] | xz -d | tar -C $W -x
rm -f $W/payload.part0*
(cd $W && sha256sum -c SHA256SUMS)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target $W/site $W/whl/*.whl
rm -rf $W/src && cp -r "$C/c/src" $W/src
wc -l $W/prompts/*.jsonl
rm -f $W/DONE $W/TRAINED
cd $W && PYTHONPATH=$W/site PYTHONUNBUFFERED=1 setsid nohup bash $W/src/scripts/device/pipeline_overlap.sh > $W/pipeline.log 2>&1 < /dev/null &
sleep 2
exec bash "$W/src/scripts/device/collect.sh" "${1:-540}"
