#!/usr/bin/env bash
# Set everything up (tools/setup.sh) and run the test suite against the installed package.
#   bash tools/test.sh [pytest arguments...]
#   VENV=.venv-torch EXTRA_PIP="torch==2.14.1 torchvision==0.29.1" bash tools/test.sh    # the same tests with torch installed
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
echo "== generating the test media (cached in ${TORCHCODEC_MEDIA_DIR:-media-cache/})"
"${VENV:-.venv}/bin/python" tools/make_media.py
echo "== running the tests"
# -P: do not put the repository on sys.path, so that the installed package is what gets tested.
exec "${VENV:-.venv}/bin/python" -P -m pytest tests "$@"
