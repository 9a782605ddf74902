#!/usr/bin/env bash
# Set everything up (tools/setup.sh) and run the test suite against the installed package.
#   bash tools/test.sh [pytest arguments...]
#   VENV=.venv-torch EXTRA_PIP="torch==2.14.1 torchvision==0.29.1" bash tools/test.sh    # the same tests with torch installed
#   TESTS="tests/test_bridge.py tests/test_samplers.py" bash tools/test.sh                 # some files only
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
echo "== generating the test media (cached in ${TORCHCODEC_MEDIA_DIR:-media-cache/})"
"${VENV:-.venv}/bin/python" tools/make_media.py
echo "== running the tests"
# -P: do not put the repository on sys.path, so that the installed package is what gets tested.
# TESTS: the test files to run (default: all of tests/).
# shellcheck disable=SC2086  # TESTS is a list of paths
exec "${VENV:-.venv}/bin/python" -P -m pytest ${TESTS:-tests} "$@"
