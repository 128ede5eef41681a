# Shared set-up steps for scripts/serve.sh and scripts/test.sh. Each step installs what it
# needs from the package registries (crates.io, PyPI, npm, Debian) and skips what is there.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export PATH="$HOME/.cargo/bin:$ROOT/node_modules/.bin:$PATH"
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp}"

# Cargo's build directory lives outside the clone, one per user, as ~/.cargo keeps the crates it
# downloads: a fresh clone then compiles only this crate, not its ~300 dependencies again. Cargo
# tells the clones apart (each clone's path is part of its build's hash), so a build never takes
# another clone's. TVIZ_TARGET_DIR=target keeps the build in the clone (a cold build, as on a bare
# machine); an exported CARGO_TARGET_DIR wins over both.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${TVIZ_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/transformer-viz/target}}"
# Each clone adds its own build of this crate (~1 GB for the test command); past 40 GB the
# directory starts again from nothing.
if [[ -d $CARGO_TARGET_DIR ]] && (( $(du -sk "$CARGO_TARGET_DIR" | cut -f1) > 40 * 1024 * 1024 )); then
  echo "[build] $CARGO_TARGET_DIR is past 40 GB: emptied"
  rm -rf "$CARGO_TARGET_DIR"
fi

WASM_BINDGEN_VERSION=0.2.130

step() { printf '\n==> %s\n' "$*"; }

as_root() { if [[ $(id -u) -eq 0 ]]; then "$@"; else sudo "$@"; fi; }

ensure_wasm_target() {
  if rustup target list --installed | grep -qx wasm32-unknown-unknown; then
    echo "wasm32 target present"
  else
    step "adding the wasm32-unknown-unknown target"
    rustup target add wasm32-unknown-unknown
  fi
}

ensure_wasm_bindgen() {
  if [[ "$(wasm-bindgen --version 2>/dev/null)" == "wasm-bindgen $WASM_BINDGEN_VERSION" ]]; then
    echo "wasm-bindgen $WASM_BINDGEN_VERSION present"
  else
    step "installing wasm-bindgen-cli $WASM_BINDGEN_VERSION (about 3 minutes)"
    # Not --locked: one locked dependency version is missing from the registry.
    cargo install wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION"
  fi
}

ensure_python_env() {
  if [[ -x .venv/bin/python ]] && .venv/bin/python -c "import numpy, tokenizers, gguf" 2>/dev/null; then
    echo "Python reference environment present"
  else
    step "creating the Python reference environment (.venv: numpy, tokenizers, gguf)"
    python3 -m venv .venv
    .venv/bin/pip install --quiet --disable-pip-version-check -r tests/reference/requirements.txt
  fi
}

ensure_npm_packages() {
  if node -e '
      const want = require("./package.json").devDependencies;
      for (const [name, version] of Object.entries(want)) {
        if (require(`./node_modules/${name}/package.json`).version !== version) process.exit(1);
      }' 2>/dev/null; then
    echo "npm packages present"
  else
    step "installing npm packages (KaTeX, playwright-core, serve-static, fast-check)"
    npm ci --no-audit --no-fund --loglevel=error
  fi
}

ensure_chromium() {
  if [[ -x /usr/lib/chromium/chromium && -x /usr/bin/chromedriver ]]; then
    echo "chromium and chromedriver present"
  else
    step "installing Debian's chromium and chromedriver"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
  fi
}

ensure_vulkan() {
  if [[ -e /usr/share/vulkan/icd.d/lvp_icd.x86_64.json || -e /usr/share/vulkan/icd.d/lvp_icd.aarch64.json ]] && ldconfig -p | grep -q libvulkan.so.1; then
    echo "Vulkan loader and lavapipe present"
  else
    step "installing Debian's Vulkan loader and Mesa's drivers (lavapipe: a CPU Vulkan adapter for the GPU kernels' tests)"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mesa-vulkan-drivers libvulkan1 >/dev/null
  fi
  # wgpu warns without it.
  export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
}

# The page: the crate for wasm (Cargo.toml's `page` profile: release, optimised as one unit), its
# wasm-bindgen glue into $CARGO_TARGET_DIR/page-glue/,
# the threaded build into dist/threads/, then www/ and the model files assembled around them in
# dist/ (scripts/assemble-page.mjs); then the trainer beside them. No build runs binaryen's wasm-opt: measured with
# and without it, the page opened no sooner and answered keystrokes no faster with it
# (docs/benchmarks.md, "wasm-opt"), and it took 7 minutes to install on a bare machine.
build_page() {
  step "building the page (the page profile: release, one unit) into dist/"
  cargo build --quiet --profile page --lib --target wasm32-unknown-unknown
  local glue="$CARGO_TARGET_DIR/page-glue"
  rm -rf "$glue" dist
  wasm-bindgen --target web --out-dir "$glue" --no-typescript \
    "$CARGO_TARGET_DIR/wasm32-unknown-unknown/page/transformer_viz.wasm"
  build_threaded_page # before the page is assembled: it preloads the threaded glue
  node scripts/assemble-page.mjs "$glue" dist
  build_trainer
}

ensure_nightly() {
  if rustup +nightly target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown \
      && rustup +nightly component list --installed 2>/dev/null | grep -q '^rust-src'; then
    echo "nightly Rust with rust-src and wasm32 present"
  else
    step "installing nightly Rust with rust-src and the wasm32 target (the page's threaded build)"
    rustup toolchain install nightly --profile minimal --component rust-src --target wasm32-unknown-unknown
  fi
}

# rustc's flags for wasm threads on one shared memory (the two threaded builds below).
THREADED_WASM_FLAGS=(-C target-feature=+atomics,+bulk-memory,+mutable-globals,+simd128
  -C link-arg=--shared-memory -C link-arg=--max-memory=4294967296 -C link-arg=--import-memory
  -C link-arg=--export=__wasm_init_tls -C link-arg=--export=__tls_size
  -C link-arg=--export=__tls_align -C link-arg=--export=__tls_base)

# The crate for wasm threads with `features`, its glue into `out` (nightly, std rebuilt with
# atomics; one target directory for both threaded builds, so std is rebuilt once).
build_threaded() {
  local features=$1 out=$2
  ensure_nightly
  RUSTFLAGS="${THREADED_WASM_FLAGS[*]}" cargo +nightly build --quiet --profile page --lib --features "$features" \
    --target wasm32-unknown-unknown -Z build-std=panic_abort,std --target-dir "$CARGO_TARGET_DIR/threads"
  rm -rf "$out"
  wasm-bindgen --target web --out-dir "$out" --no-typescript \
    "$CARGO_TARGET_DIR/threads/wasm32-unknown-unknown/page/transformer_viz.wasm"
}

# The page's second build, into dist/threads/: the same crate with the `threads` feature, on wasm
# threads that share one memory (std rebuilt with atomics, which needs nightly). www/start-wasm.js
# loads it when the page is cross-origin isolated; elsewhere the page runs the plain build.
build_threaded_page() {
  step "building the page's threaded WebAssembly (nightly, atomics) into dist/threads/"
  build_threaded threads dist/threads
}

# The page's third build, into dist/train/: the crate with the `train` feature (the trainer, on
# candle's automatic differentiation) for the Training section's worker (www/train-worker.js),
# so that the inspector's wasm does not carry candle. The plain build's flags and target
# directory: only the crates the feature adds, and this crate, are compiled again. Then the same on wasm
# threads into dist/train-threads/, which the worker loads on a cross-origin isolated page: each
# step's batch cut into one part a thread (`train::step::loss_and_gradients`).
build_trainer() {
  step "building the page's trainer (WebAssembly with candle) into dist/train/"
  cargo build --quiet --profile page --lib --features train --target wasm32-unknown-unknown
  rm -rf dist/train
  wasm-bindgen --target web --out-dir dist/train --no-typescript \
    "$CARGO_TARGET_DIR/wasm32-unknown-unknown/page/transformer_viz.wasm"
  step "building the page's threaded trainer (nightly, atomics) into dist/train-threads/"
  build_threaded train,threads dist/train-threads
}

ensure_models() {
  step "model files, and the corpus the lecture's models were trained on (tests check them on it)"
  scripts/fetch-models.sh
  scripts/fetch-corpus.sh
}
