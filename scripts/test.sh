#!/usr/bin/env bash
# Sets up everything the tests need on a fresh Debian machine with Rust, Node and apt, then
# runs every test:
#   1. native Rust tests: exact formulas, parity with the numpy reference on the real model,
#      tokenizer parity with Hugging Face `tokenizers`, errors, rendering, and every GPU kernel
#      against its CPU twin on lavapipe (Mesa's CPU Vulkan driver);
#   2. the wasm build, and wasm-bindgen tests: the forward pass in Node.js against native
#      numbers, and the page's wasm API on real canvases in headless Chromium;
#   3. the release page (scripts/assemble-page.mjs around the wasm builds), driven end to end in
#      headless Chromium.
source "$(dirname "$0")/lib.sh"

# Every step's time, printed when it ends and again, with the total, when the run ends (also
# when a step fails), so a run's log shows where the time goes. lib.sh's own steps count too.
STEP_NAME=""
STEP_START=$SECONDS
STEP_TIMES=()
end_step() {
  if [[ -n $STEP_NAME ]]; then
    local took=$((SECONDS - STEP_START))
    printf '<== %s: %d s\n' "$STEP_NAME" "$took"
    STEP_TIMES+=("$(printf '%6d s  %s' "$took" "$STEP_NAME")")
    STEP_NAME=""
  fi
}
step() {
  end_step
  STEP_NAME="$*"
  STEP_START=$SECONDS
  printf '\n==> %s\n' "$*"
}
report_times() {
  local status=$?
  end_step
  printf '\n==> time per step%s\n' "$([[ $status -eq 0 ]] || echo " (the run FAILED, exit status $status)")"
  printf '%s\n' "${STEP_TIMES[@]}"
  printf '%6d s  total\n' "$SECONDS"
}
trap report_times EXIT

step "set-up"
ensure_wasm_target
ensure_wasm_bindgen
ensure_python_env
ensure_npm_packages
ensure_chromium
ensure_vulkan

step "format (cargo fmt --check)"
rustup component list --installed 2>/dev/null | grep -q '^rustfmt' || rustup component add rustfmt
cargo fmt --check

step "dependencies point one way (scripts/check-layers.mjs: the crate's modules, the page's)"
node scripts/check-layers.mjs

# --all-targets: the benchmarks are compiled (checked) here too; `cargo bench` builds and runs them.
step "lints (cargo clippy --all-targets -- -D warnings)"
rustup component list --installed 2>/dev/null | grep -q '^clippy' || rustup component add clippy
cargo clippy --all-targets -- -D warnings

# The native test binaries: each directory tests/NAME/main.rs (engine: one module per topic), and any tests/NAME.rs that is not wasm-only (wasm_parity and web_api run further down).
# Named, so the wasm-only ones are not built natively as empty binaries; with the library's and
# the binary's unit tests (the library has no doc tests: `cargo test --doc` would run them).
native_tests=()
for main in tests/*/main.rs; do
  native_tests+=(--test "$(basename "$(dirname "$main")")")
done
for file in tests/*.rs; do
  grep -qx '#!\[cfg(target_arch = "wasm32")\]' "$file" || native_tests+=(--test "$(basename "$file" .rs)")
done

step "native tests: build (${native_tests[*]})"
cargo test --profile quick --lib --bins "${native_tests[@]}" --no-run

# The CLI as that build left it (cargo builds it for the integration tests, with the
# dev-dependencies' features): `cargo run` would compile it again without them, and again for
# the next `cargo test` (the crate is a cdylib, whose build is not kept per feature set). The
# model set-up, the wasm tests' native numbers and the browser tests call it.
export TVIZ_CLI="$CARGO_TARGET_DIR/quick/transformer-viz"

# After the build, so that converting MiniLM's weights uses its CLI.
ensure_models

step "native tests: run"
# The set-up fetched SmolLM2's GGUF: tests that read it must not skip.
TVIZ_REQUIRE_SMOLLM2=1 cargo test --profile quick --lib --bins "${native_tests[@]}"

step "property tests of the page's link format (Node.js, fast-check)"
node --test tests/js/

step "the native numbers the wasm tests compare with (the CLI: MiniLM's trace, SmolLM2's prediction)"
mkdir -p target/parity
"$TVIZ_CLI" trace --model minilm-l6 \
  --text "The quick brown fox jumps over the lazy dog." > target/parity/native-trace.json
"$TVIZ_CLI" predict --model smollm2-135m \
  --text "The capital of France is" --top 20 > target/parity/native-smollm2.json

# The wasm tests build in the `quick` profile (release's optimisation without link-time
# optimisation): the same numbers as the page's release build, in half the build time. The
# browser tests below run the page's own release build.
step "wasm-bindgen test: the forward passes in WebAssembly (Node.js) against native numbers"
cargo test --profile quick --target wasm32-unknown-unknown --test wasm_parity

step "wasm-bindgen test: the page's wasm API in headless Chromium"
CHROMEDRIVER=/usr/bin/chromedriver cargo test --profile quick --target wasm32-unknown-unknown --test web_api

build_page

# Two test files at a time: one alone leaves a third of two cores idle while the page and the
# test wait on each other (docs/benchmarks.md, "The test command"). Every test waits for the
# state it asserts, so a busier machine makes a test slower, never wrong.
step "end-to-end tests of the page in headless Chromium (screenshots in tests/artifacts/)"
node --test --test-concurrency=2 tests/e2e/
