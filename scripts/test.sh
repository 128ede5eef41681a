#!/usr/bin/env bash
# Sets up everything the tests need on a fresh Debian machine with Rust, Node and apt, then
# runs every test: native Rust tests (including parity with the numpy reference on the real
# model), the wasm build, and the wasm-bindgen test of the forward pass in Node.js.
source "$(dirname "$0")/lib.sh"

step "set-up"
ensure_wasm_target
ensure_wasm_bindgen
ensure_python_env
ensure_models

step "native tests"
cargo test --release

step "benchmarks compile"
cargo bench --no-run --quiet

step "wasm build"
cargo build --release --target wasm32-unknown-unknown

step "wasm-bindgen test: the forward pass in WebAssembly (Node.js) against native numbers"
mkdir -p target/parity
cargo run --quiet --release --bin transformer-viz -- trace \
  --text "The quick brown fox jumps over the lazy dog." > target/parity/native-trace.json
cargo test --target wasm32-unknown-unknown --test wasm_parity
