#!/usr/bin/env bash
# Wait (up to $1 seconds) for /tmp/w/DONE, then copy logs, eval results and exported drafters to
# $OUT (files > 16 MiB are split into .partNN pieces; at most 8 files come back). The exports come
# back once training has ended (TRAINED), before the evaluation is done; so does the generated data
# (data.tar.xz: the npz sets training read), kept here so a later stage can train on it again.
W=/tmp/w
T=${1:-560}
t0=$(date +%s)
while [ ! -f $W/DONE ] && [ $(( $(date +%s) - t0 )) -lt "$T" ]; do sleep 10; done
tail -c 3000 $W/pipeline.log
mkdir -p $OUT
cat $W/pipeline.log $W/gen.log $W/transplant.log $W/eval.log $W/train_*.log > $OUT/logs.txt 2>/dev/null
# One JSONL for every method, each record labelled with it.
for m in eagle3 hass hydra; do
  [ -f $W/runs/$m/train_log.jsonl ] && sed "s/^{/{\"method\": \"$m\", /" $W/runs/$m/train_log.jsonl
done > $OUT/train_logs.jsonl 2>/dev/null
cp $W/eval*.json $OUT/ 2>/dev/null
for m in eagle3 hass hydra; do
  if [ -f $W/runs/$m/export/model.safetensors ] && { [ -f $W/DONE ] || [ -f $W/TRAINED ]; }; then
    tar -C $W/runs/$m -cf $W/$m.tar export
    split -b 15M -d $W/$m.tar $OUT/$m.tar.part
  fi
done
if [ -f $W/TRAINED ] && ls $W/data*.npz > /dev/null 2>&1; then
  [ -f $W/data.tar.xz ] || tar -C $W -cf - $(cd $W && ls data*.npz) | xz -T0 -6 > $W/data.tar.xz
  split -b 15M -d $W/data.tar.xz $OUT/data.tar.xz.part
fi
ls -la $OUT; [ -f $W/DONE ] && echo PIPELINE_DONE || echo PIPELINE_RUNNING
