#!/usr/bin/env bash
# Builds the release page into dist/ with Trunk (after the set-up steps it needs).
source "$(dirname "$0")/lib.sh"
ensure_wasm_target
ensure_wasm_bindgen
ensure_trunk
ensure_npm_packages
ensure_models
step "building the page (release)"
cargo fetch --quiet
TRUNK_SKIP_VERSION_CHECK=true trunk build --release
