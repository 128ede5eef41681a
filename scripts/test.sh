#!/usr/bin/env bash
# Sets up everything the tests need on a fresh Debian machine with Rust, Node and apt, then
# runs every test:
#   1. native Rust tests: exact formulas, parity with the numpy reference on the real model,
#      tokenizer parity with Hugging Face `tokenizers`, errors, rendering, and every GPU kernel
#      against its CPU twin on lavapipe (Mesa's CPU Vulkan driver);
#   2. the wasm build, and wasm-bindgen tests: the forward pass in Node.js against native
#      numbers, and the page's wasm API on real canvases in headless Chromium;
#   3. the release page built with Trunk, driven end to end in headless Chromium.
source "$(dirname "$0")/lib.sh"

step "set-up"
ensure_wasm_target
ensure_wasm_bindgen
ensure_trunk
ensure_python_env
ensure_npm_packages
ensure_chromium
ensure_vulkan
ensure_models

step "native tests"
# The set-up fetched SmolLM2's GGUF: tests that read it must not skip.
TVIZ_REQUIRE_SMOLLM2=1 cargo test --release

step "property tests of the page's link format (Node.js, fast-check)"
node --test tests/js/

step "benchmarks compile"
cargo bench --no-run --quiet

step "wasm build"
cargo build --release --target wasm32-unknown-unknown

step "wasm-bindgen test: the forward passes in WebAssembly (Node.js) against native numbers"
mkdir -p target/parity
cargo run --quiet --release --bin transformer-viz -- trace \
  --text "The quick brown fox jumps over the lazy dog." > target/parity/native-trace.json
cargo run --quiet --release --bin transformer-viz -- predict --model smollm2-135m \
  --text "The capital of France is" --top 20 > target/parity/native-smollm2.json
cargo test --target wasm32-unknown-unknown --test wasm_parity

step "wasm-bindgen test: the page's wasm API in headless Chromium"
CHROMEDRIVER=/usr/bin/chromedriver cargo test --target wasm32-unknown-unknown --test web_api

build_page

step "end-to-end tests of the page in headless Chromium (screenshots in tests/artifacts/)"
node --test tests/e2e/
