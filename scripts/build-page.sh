#!/usr/bin/env bash
# Builds the release page into dist/ (after the set-up steps it needs): scripts/lib.sh, build_page.
source "$(dirname "$0")/lib.sh"
ensure_wasm_target
ensure_wasm_bindgen
ensure_npm_packages
ensure_models
build_page
