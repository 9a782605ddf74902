#!/usr/bin/env bash
# Set everything up (tools/setup.sh) and run the test suite against the installed package.
#   bash tools/test.sh [pytest arguments...]
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
echo "== generating the test media (cached in ${TORCHCODEC_MEDIA_DIR:-media-cache/})"
.venv/bin/python tools/make_media.py
echo "== running the tests"
# -P: do not put the repository on sys.path, so that the installed package is what gets tested.
exec .venv/bin/python -P -m pytest tests "$@"
