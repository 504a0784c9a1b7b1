#!/usr/bin/env bash
# Writes ids.json, text.json and repeat.json with promptfoo's echo provider (no model is
# called) into FOLDER (default: this script's folder): make_promptfoo.sh [FOLDER]. Needs
# promptfoo (npm) on PATH and the Node.js it asks for (0.123.1: >= 22.22); nothing is sent
# anywhere.
set -euo pipefail
OUT="$(realpath "${1:-$(dirname "$0")}")"
cd "$(dirname "$0")"
export PROMPTFOO_DISABLE_TELEMETRY=1 PROMPTFOO_DISABLE_UPDATE=1 PROMPTFOO_DISABLE_SHARING=1
export PROMPTFOO_CONFIG_DIR="${PROMPTFOO_CONFIG_DIR:-$(mktemp -d)}"
# promptfoo exits with 100 when a test fails, as some of these do on purpose
run() { promptfoo eval --no-cache --no-share --no-table --no-progress-bar -j 1 "$@" || [ $? -eq 100 ]; }
run -c promptfooconfig.yaml -o "$OUT/ids.json"
run -c text.yaml -o "$OUT/text.json"
run -c repeat.yaml -o "$OUT/repeat.json" --repeat 2
