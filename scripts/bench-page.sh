#!/usr/bin/env bash
# Builds the release page, then times it in headless Chromium (scripts/bench-page.mjs):
# navigation to first complete view, and input-to-drawn over 20 keystrokes at 8/32/128 tokens.
# Then SmolLM2 (bench-smollm2.mjs) and the pass on each backend (bench-backends-page.mjs).
# BASELINE_DIST=dir also measures another build in the same run; ROUNDS=n repeats (alternating).
source "$(dirname "$0")/lib.sh"
bash scripts/build-page.sh
ensure_chromium
step "browser benchmark"
node scripts/bench-page.mjs
step "browser benchmark: SmolLM2-135M (one and two threads)"
node scripts/bench-smollm2.mjs
step "browser benchmark: the pass on the CPU and on WebGPU"
node scripts/bench-backends-page.mjs
