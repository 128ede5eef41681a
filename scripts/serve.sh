#!/usr/bin/env bash
# Sets up, builds the release page (its default model: the lecture decoder, post-LN; the others in
# the picker) and serves it on http://127.0.0.1:${PORT:-8080}/ from static files.
source "$(dirname "$0")/lib.sh"
bash scripts/build-page.sh
step "serving"
exec node scripts/static-server.mjs dist "${PORT:-8080}"
