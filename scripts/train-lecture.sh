#!/usr/bin/env bash
# Reproduces the lecture's trained models in trained/ (the exact command their logs record):
#   1. fetch the corpus (scripts/fetch-corpus.sh) and learn a 4,608-token byte-level BPE from
#      it and 12,000 generated stories (common words one token each);
#   2. train lecture-post-ln and its pre-LN twin side by side, one core each, same data, in
#      two phases, post-LN in three (docs/models.md says how long); each writes config.json,
#      tokenizer.json, model.safetensors, train.log and loss.svg (the earlier phases' as
#      train-phaseN.log, loss-phaseN.svg and model-phaseN.safetensors), and a checkpoint every
#      200 steps that RESUME=1 continues from; SECOND_PHASE_ONLY=1 trains from the second phase
#      on, from the committed trained/NAME/model-phase1.safetensors, THIRD_PHASE_ONLY=1
#      post-LN's third phase alone, from trained/lecture-post-ln/model-phase2.safetensors
#      (neither trains lecture-reverse); TWINS=lecture-pre-ln (or lecture-post-ln) trains one
#      twin only;
#   3. train lecture-reverse, the encoder-decoder that writes its source backwards (no corpus:
#      random strings of lowercase letters and spaces, held-out ones never trained on).
# The decoders' recipe (docs/models.md): 32 sequences of 128 tokens a step; for the first 1,200
# steps only random runs of 4-16 tokens shown again and again, their tokens drawn by a power law
# of frequency rank (copying forms on the frequent tokens first); then 40% runs of 8-64 tokens
# by a flatter law, 10% text with a span copied further on, and 50% text and stories.
# STEPS=... / SECOND_STEPS=... / THIRD_STEPS=... / REVERSE_STEPS=... shorten or lengthen the
# runs (the committed weights: the defaults).
set -euo pipefail
cd "$(dirname "$0")/.."
STEPS=${STEPS:-5000}
SECOND_STEPS=${SECOND_STEPS:-4000}
THIRD_STEPS=${THIRD_STEPS:-1500}
REVERSE_STEPS=${REVERSE_STEPS:-12000}
OUT=${OUT:-trained}
resume=()
[[ -n ${RESUME:-} ]] && resume=(--resume)
default_twins="lecture-post-ln lecture-pre-ln"
[[ -z ${THIRD_PHASE_ONLY:-} ]] || default_twins=lecture-post-ln
read -r -a twins <<< "${TWINS:-$default_twins}"
for model in "${twins[@]}"; do
  case $model in lecture-post-ln | lecture-pre-ln) ;; *) echo "TWINS: no twin $model" >&2; exit 2 ;; esac
  if [[ -n ${THIRD_PHASE_ONLY:-} && $model != lecture-post-ln ]]; then
    echo "THIRD_PHASE_ONLY: only lecture-post-ln has a third phase" >&2; exit 2
  fi
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
# and 4, run side by side, 4 did.
# Phase 2 (into NAME for pre-LN, NAME.phase2 for post-LN), from phase 1's weights: 4,000 steps
# at 1e-3 in which three sequences in ten are drills (`stories::drill_stories`: pronoun drills,
# where the word after "she" or "he" is the deed of the person it stands for, and
# indirect-object sentences whose pair may follow any word of the corpus or open the story),
# the rest the first phase's mixture with role stories added to the text. Its seed is 2. The
# drills have four options: half the drill windows start at a drill story's first token,
# where a student's sentence and the held-out prompts begin; a quarter of the indirect-object
# drills open with a corpus word; ten verbs come before "him" / "her"; one pronoun episode in
# three is a person alone. With them one head of each twin finds "he", "she", "him", "her" and
# "it", and pre-LN's indirect objects hold; post-LN's come first in 82% of the held-out prompts.
# Phase 3, post-LN only (into NAME), from phase 2's weights: 1,500 steps at 1e-3, seed 3, the
# same mixture and options, and two more: half the indirect-object drills whose opening ends a
# sentence go on with a sentence of the corpus before the action (with the four fixed asides
# alone the answer was missed after almost any other sentence), and a pair may do something
# with no place said. It takes post-LN's indirect objects past 90% with its pronoun head kept.
phase() {
  local model=$1 init=$2 out=$3 steps=$4 seed=$5
  shift 5
  $bin train --model "$model" --vocab "$OUT/vocab.json" --corpus models/corpus --out "$out" \
    --init-from "$init" --steps "$steps" --batch 32 --sequence 128 \
    --learning-rate 1e-3 --warmup 50 --beta2 0.99 --projection-std 0.088 --eval-every 100 \
    --checkpoint-every 200 --seed "$seed" --stories 24000 --role-stories 60000 --behaviours 200 \
    --drill-stories 40000 --drills 300 --drill-starts 500 --drill-word-first --drill-verbs \
    --drill-solo "$@" --random-repeat 200 --copied-span 100 \
    --run-pool 0 --run-lengths 8-64 --run-zipf 0.5 "${resume[@]}"
}
twin() {
  local model=$1 first="$OUT/$1.phase1" second="$OUT/$1.phase2"
  local init="$first/model.safetensors" first_seed=1 three=
  [[ $model == lecture-post-ln ]] && first_seed=4 three=1
  [[ -n $three ]] || second="$OUT/$model"
  if [[ -n ${SECOND_PHASE_ONLY:-} ]]; then
    init="trained/$model/model-phase1.safetensors"
  elif [[ -n ${THIRD_PHASE_ONLY:-} ]]; then
    :
  elif [[ -z ${RESUME:-} || ! -f $init ]]; then
    $bin train --model "$model" --vocab "$OUT/vocab.json" --corpus models/corpus --out "$first" \
      --steps "$STEPS" --batch 32 --sequence 128 --learning-rate 3e-3 --warmup 200 --beta2 0.99 \
      --projection-std 0.088 --eval-every 100 --checkpoint-every 200 --seed "$first_seed" --stories 24000 \
      --random-repeat 400 --copied-span 100 --run-pool 0 --run-lengths 8-64 --run-zipf 0.5 \
      --early-steps 1200 --early-random-repeat 1000 --early-copied-span 0 --early-run-pool 0 \
      --early-run-lengths 4-16 --early-run-zipf 1.0 "${resume[@]}" || return 1
  fi
  local init3="$second/model.safetensors"
  if [[ -n ${THIRD_PHASE_ONLY:-} ]]; then
    init3="trained/$model/model-phase2.safetensors"
  elif [[ -z ${RESUME:-} || -z $three || ! -f $init3 ]]; then
    phase "$model" "$init" "$second" "$SECOND_STEPS" 2 || return 1
  fi
  [[ -n $three ]] || return 0
  phase "$model" "$init3" "$OUT/$model" "$THIRD_STEPS" 3 --drill-corpus-asides --drill-placeless
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
  [[ $status -eq 0 ]] || continue
  # The earlier phases' logs, loss curves and weights beside the last's (the page ships only
  # model.safetensors): a later phase can be tried again without the earlier ones.
  for phase in 1 2; do
    dir="$OUT/$model.phase$phase"
    [[ -d $dir ]] || continue
    mv "$dir/train.log" "$OUT/$model/train-phase$phase.log"
    mv "$dir/loss.svg" "$OUT/$model/loss-phase$phase.svg"
    mv "$dir/model.safetensors" "$OUT/$model/model-phase$phase.safetensors"
    rm -r "$dir"
  done
done
[ $status -eq 0 ] || exit $status
[[ -z ${SECOND_PHASE_ONLY:-}${THIRD_PHASE_ONLY:-} ]] || exit 0
# One core, its defaults: pre-LN, 64 strings a step, AdamW at 5e-4 after 500 warm-up steps.
$bin train-reverse --out "$OUT/lecture-reverse" --steps "$REVERSE_STEPS" --seed 1
