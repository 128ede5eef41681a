#!/usr/bin/env bash
# Reproduces the lecture's trained models in trained/ (the exact command their logs record):
#   1. fetch the corpus (scripts/fetch-corpus.sh) and learn a 512-token byte-level BPE;
#   2. train lecture-post-ln and its pre-LN twin side by side, one core each, same data and
#      seed; each writes config.json, tokenizer.json, model.safetensors, train.log, loss.svg;
#   3. train lecture-reverse, the encoder-decoder that writes its source backwards (no corpus:
#      random strings of lowercase letters and spaces, held-out ones never trained on).
# STEPS=... / REVERSE_STEPS=... shorten or lengthen the runs (the committed weights: the defaults).
set -euo pipefail
cd "$(dirname "$0")/.."
STEPS=${STEPS:-9600}
REVERSE_STEPS=${REVERSE_STEPS:-12000}
OUT=${OUT:-trained}
scripts/fetch-corpus.sh
cargo build --release --quiet --bin transformer-viz
bin=${CARGO_TARGET_DIR:-target}/release/transformer-viz
mkdir -p "$OUT"
$bin vocab --corpus models/corpus --size 512 --out "$OUT/vocab.json"
# candle allocates a fresh buffer for every tensor; glibc's default returns big ones to the
# system at once, and the page faults of taking them back cost a third of the time.
export MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=4000000000 MALLOC_TOP_PAD_=1000000000
# One core each: candle's element-wise operations run on one thread, so two runs side by side
# finish sooner than one after the other on two threads.
export RAYON_NUM_THREADS=1
pids=()
for model in lecture-post-ln lecture-pre-ln; do
  $bin train --model "$model" --vocab "$OUT/vocab.json" --corpus models/corpus --out "$OUT/$model" \
    --steps "$STEPS" --batch 8 --learning-rate 4e-3 --warmup 1600 --eval-every 200 --seed 1 > "$OUT/$model.out" 2>&1 &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
rm -f "$OUT/vocab.json"
for model in lecture-post-ln lecture-pre-ln; do tail -n 2 "$OUT/$model.out"; rm -f "$OUT/$model.out"; done
[ $status -eq 0 ] || exit $status
# One core, its defaults: pre-LN, 64 strings a step, AdamW at 5e-4 after 500 warm-up steps.
$bin train-reverse --out "$OUT/lecture-reverse" --steps "$REVERSE_STEPS" --seed 1
