#!/usr/bin/env bash
# GPU call 3 (carry $C/c, and .whl unless prepare.sh put the gguf wheel in $C/c/whl; C defaults to .carry): reassemble + verify the GGUF (and the
# real-text prompts if their parts came), install the gguf wheel, copy the sources to /tmp/w
# ($C/c/src if prepare.sh put them there, else this checkout; the working tree is re-synced on
# each call), start pipeline.sh detached, then wait and collect. Later calls run collect.sh.
set -e
W=/tmp/w
C=${CARRY:-.carry}
cp "$C"/c/gguf.part* $W/
cp "$C"/c/train.xz.part* $W/ 2>/dev/null || true  # real-text prompts only
cat $W/gguf.part0[0-9] > $W/target.gguf
echo "$(cat "$C"/c/gguf.sha256)  $W/target.gguf" | sha256sum -c -
rm -f $W/gguf.part0[0-9]
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target $W/site $(ls "$C"/c/whl/*.whl .whl/*.whl 2>/dev/null)
SRC=.; [ -d "$C/c/src/python" ] && SRC="$C/c/src"
rm -rf $W/src $W/prompts && mkdir -p $W/src && cp -r "$SRC/python" "$SRC/scripts" $W/src/ && cp -r "$C"/c/prompts $W/prompts
B=python/eyas/drafters/bundled; [ -d $W/src/$B ] || cp -r $B $W/src/$B  # prepare.sh leaves it to the checkout
if ls $W/train.xz.part0* >/dev/null 2>&1; then cat $W/train.xz.part0[0-9] | xz -d > $W/prompts/train.jsonl; rm $W/train.xz.part0*; fi
wc -l $W/prompts/*.jsonl
rm -f $W/DONE $W/TRAINED  # markers of an earlier run in the same folder (a rehearsal here) would end collect.sh at once
cd $W && PYTHONPATH=$W/site PYTHONUNBUFFERED=1 setsid nohup bash $W/src/scripts/device/pipeline.sh > $W/pipeline.log 2>&1 < /dev/null &
sleep 2
exec bash "$W/src/scripts/device/collect.sh" "${1:-540}"
