#!/usr/bin/env bash
# Reproduces the lecture's trained models in trained/ (the exact command their logs record):
#   1. fetch the corpus (scripts/fetch-corpus.sh) and learn a 4,608-token byte-level BPE from
#      it and 12,000 generated stories (common words one token each);
#   2. train lecture-post-ln and its pre-LN twin side by side, one core each, same data, in
#      two phases (docs/models.md says how long); each writes config.json,
#      tokenizer.json, model.safetensors, train.log and loss.svg (the first phase's as
#      train-phase1.log, loss-phase1.svg and model-phase1.safetensors), and a checkpoint every
#      200 steps that RESUME=1 continues from; SECOND_PHASE_ONLY=1 trains the second phase alone,
#      from the committed trained/NAME/model-phase1.safetensors (and not lecture-reverse);
#      TWINS=lecture-pre-ln (or lecture-post-ln) trains one twin only;
#   3. train lecture-reverse, the encoder-decoder that writes its source backwards (no corpus:
#      random strings of lowercase letters and spaces, held-out ones never trained on).
# The decoders' recipe (docs/models.md): 32 sequences of 128 tokens a step; for the first 1,200
# steps only random runs of 4-16 tokens shown again and again, their tokens drawn by a power law
# of frequency rank (copying forms on the frequent tokens first); then 40% runs of 8-64 tokens
# by a flatter law, 10% text with a span copied further on, and 50% text and stories.
# STEPS=... / SECOND_STEPS=... / REVERSE_STEPS=... shorten or lengthen the runs (the committed
# weights: the defaults).
set -euo pipefail
cd "$(dirname "$0")/.."
STEPS=${STEPS:-5000}
SECOND_STEPS=${SECOND_STEPS:-4000}
REVERSE_STEPS=${REVERSE_STEPS:-12000}
OUT=${OUT:-trained}
resume=()
[[ -n ${RESUME:-} ]] && resume=(--resume)
read -r -a twins <<< "${TWINS:-lecture-post-ln lecture-pre-ln}"
for model in "${twins[@]}"; do
  case $model in lecture-post-ln | lecture-pre-ln) ;; *) echo "TWINS: no twin $model" >&2; exit 2 ;; esac
done
scripts/fetch-corpus.sh
cargo build --release --quiet --bin transformer-viz
bin=${CARGO_TARGET_DIR:-target}/release/transformer-viz
mkdir -p "$OUT"
$bin vocab --corpus models/corpus --size 4608 --stories 12000 --out "$OUT/vocab.json"
# candle allocates a fresh buffer for every tensor; glibc's default returns big ones to the
# system at once, and the page faults of taking them back cost a third of the time. A step's
# logits (32 x 128 x 4,608 floats, 75 MB) are above the largest threshold glibc allows (32 MiB),
# so they would still be mapped afresh each time: MALLOC_MMAP_MAX_=0 keeps every buffer on the
# heap (docs/models.md, "Training", says what each costs).
export MALLOC_MMAP_MAX_=0 MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=4000000000 MALLOC_TOP_PAD_=1000000000
# One core each: candle's element-wise operations run on one thread, so two runs side by side
# finish sooner than one after the other on two threads.
export RAYON_NUM_THREADS=1
# Phase 1 (into NAME.phase1): the heads' curriculum above. Its seed is 1 for pre-LN and 4 for
# post-LN: from post-LN's seed-1 first phase no second phase formed one head for "he", "she",
# "him", "her" and "it" together (docs/models.md, "How the second phase was found"); of seeds 3
# and 4, run side by side, 4 did. Phase 2 (into NAME), from phase 1's weights: 4,000 steps at
# 1e-3 in which three sequences in ten are drills (`stories::drill_stories`: pronoun drills,
# where the word after "she" or "he" is the deed of the person it stands for, and
# indirect-object sentences whose pair may follow any word of the corpus or open the story),
# the rest the first phase's mixture with role stories added to the text. Its seed is 2. The
# drills have four options: half the drill windows start at a drill story's first token,
# where a student's sentence and the held-out prompts begin; a quarter of the indirect-object
# drills open with a corpus word; ten verbs come before "him" / "her"; one pronoun episode in
# three is a person alone. With them one head of each twin finds "he", "she", "him", "her" and
# "it"; pre-LN's indirect objects hold at a text's start, post-LN's not yet (82%), so the
# committed post-LN model.safetensors is still an older recipe's (docs/models.md).
twin() {
  local model=$1 first="$OUT/$1.phase1"
  local init="$first/model.safetensors"
  local first_seed=1
  [[ $model == lecture-post-ln ]] && first_seed=4
  if [[ -n ${SECOND_PHASE_ONLY:-} ]]; then
    init="trained/$model/model-phase1.safetensors"
  elif [[ -z ${RESUME:-} || ! -f $init ]]; then
    $bin train --model "$model" --vocab "$OUT/vocab.json" --corpus models/corpus --out "$first" \
      --steps "$STEPS" --batch 32 --sequence 128 --learning-rate 3e-3 --warmup 200 --beta2 0.99 \
      --projection-std 0.088 --eval-every 100 --checkpoint-every 200 --seed "$first_seed" --stories 24000 \
      --random-repeat 400 --copied-span 100 --run-pool 0 --run-lengths 8-64 --run-zipf 0.5 \
      --early-steps 1200 --early-random-repeat 1000 --early-copied-span 0 --early-run-pool 0 \
      --early-run-lengths 4-16 --early-run-zipf 1.0 "${resume[@]}" || return 1
  fi
  $bin train --model "$model" --vocab "$OUT/vocab.json" --corpus models/corpus --out "$OUT/$model" \
    --init-from "$init" --steps "$SECOND_STEPS" --batch 32 --sequence 128 \
    --learning-rate 1e-3 --warmup 50 --beta2 0.99 --projection-std 0.088 --eval-every 100 \
    --checkpoint-every 200 --seed 2 --stories 24000 --role-stories 60000 --behaviours 200 \
    --drill-stories 40000 --drills 300 --drill-starts 500 --drill-word-first --drill-verbs \
    --drill-solo --random-repeat 200 --copied-span 100 \
    --run-pool 0 --run-lengths 8-64 --run-zipf 0.5 "${resume[@]}"
}
pids=()
for model in "${twins[@]}"; do
  twin "$model" >> "$OUT/$model.out" 2>&1 &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
rm -f "$OUT/vocab.json"
for model in "${twins[@]}"; do
  tail -n 2 "$OUT/$model.out"; rm -f "$OUT/$model.out" "$OUT/$model/checkpoint.json" "$OUT/$model/checkpoint.safetensors"
  [[ $status -eq 0 && -z ${SECOND_PHASE_ONLY:-} ]] || continue
  # The first phase's log, loss curve and weights beside the second's (the page ships only
  # model.safetensors): a second phase can be tried again without the first.
  mv "$OUT/$model.phase1/train.log" "$OUT/$model/train-phase1.log"
  mv "$OUT/$model.phase1/loss.svg" "$OUT/$model/loss-phase1.svg"
  mv "$OUT/$model.phase1/model.safetensors" "$OUT/$model/model-phase1.safetensors"
  rm -r "$OUT/$model.phase1"
done
[ $status -eq 0 ] || exit $status
[[ -z ${SECOND_PHASE_ONLY:-} ]] || exit 0
# One core, its defaults: pre-LN, 64 strings a step, AdamW at 5e-4 after 500 warm-up steps.
$bin train-reverse --out "$OUT/lecture-reverse" --steps "$REVERSE_STEPS" --seed 1
