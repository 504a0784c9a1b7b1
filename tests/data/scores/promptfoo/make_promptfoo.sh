#!/usr/bin/env bash
# Writes ids.json, text.json and repeat.json with promptfoo's echo provider (no model is
# called). Needs promptfoo (npm) on PATH and Node.js >= 22.22; nothing is sent anywhere.
set -euo pipefail
cd "$(dirname "$0")"
export PROMPTFOO_DISABLE_TELEMETRY=1 PROMPTFOO_DISABLE_UPDATE=1 PROMPTFOO_DISABLE_SHARING=1
export PROMPTFOO_CONFIG_DIR="${PROMPTFOO_CONFIG_DIR:-$(mktemp -d)}"
# promptfoo exits with 100 when a test fails, as some of these do on purpose
run() { promptfoo eval --no-cache --no-share --no-table --no-progress-bar -j 1 "$@" || [ $? -eq 100 ]; }
run -c promptfooconfig.yaml -o ids.json
run -c text.yaml -o text.json
run -c repeat.yaml -o repeat.json --repeat 2
