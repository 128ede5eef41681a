#!/usr/bin/env bash
# Builds the release page into dist/ with Trunk (after the set-up steps it needs).
source "$(dirname "$0")/lib.sh"
ensure_wasm_target
ensure_wasm_bindgen
ensure_trunk
ensure_wasm_opt
ensure_npm_packages
ensure_models
build_page
