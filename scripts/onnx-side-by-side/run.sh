#!/usr/bin/env bash
# The page against ONNX Runtime Web on the same MiniLM-L6 weights, side by side in headless
# Chromium (bench.mjs). Installs what it needs into .tools/onnx and the Python venv (ONNX
# Runtime Web 1.30.0 from npm; onnx and onnxruntime from PyPI), writes the ONNX graph from the
# model's safetensors (export_minilm.py, checked against the numpy reference), builds the page.
source "$(dirname "$0")/../lib.sh"
bash scripts/build-page.sh
ensure_python_env
ensure_chromium
step "ONNX Runtime Web 1.30.0 and the ONNX graph of MiniLM-L6"
mkdir -p .tools/onnx/site
[ -d .tools/onnx/node_modules/onnxruntime-web ] || npm install --prefix .tools/onnx --no-audit --no-fund onnxruntime-web@1.30.0
.venv/bin/python -c "import onnx, onnxruntime" 2>/dev/null || .venv/bin/python -m pip install -q onnx==1.23.2 onnxruntime==1.32.0
[ -f .tools/onnx/minilm-l6.onnx ] || .venv/bin/python scripts/onnx-side-by-side/export_minilm.py .tools/onnx/minilm-l6.onnx
cp scripts/onnx-side-by-side/site/* .tools/onnx/site/
ln -sfn ../node_modules/onnxruntime-web/dist .tools/onnx/site/ort
ln -sfn ../minilm-l6.onnx .tools/onnx/site/minilm-l6.onnx
step "side by side"
node scripts/onnx-side-by-side/bench.mjs
