#!/usr/bin/env bash
# Set everything up (tools/setup.sh) and decode a video end to end (tools/demo.py).
#   bash tools/demo.sh [VIDEO] [--out contact_sheet.png]
# Without VIDEO, a sample clip is generated with the ffmpeg CLI.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
exec .venv/bin/python -P tools/demo.py "$@"
