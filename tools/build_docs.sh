#!/usr/bin/env bash
# Build the documentation site (docs/, Sphinx + MyST-Parser) with warnings as errors: first the
# performance page's figures (matplotlib, from docs/_data/*.json, checked against the data), then
# the site, then every Python example of README.md and docs/ as tests.
#
#   bash tools/build_docs.sh [OUTPUT_DIR]      # default docs/_build/html
#
# The build tools live in their own virtual environment (DOCS_VENV, default .venv-docs) with the
# versions pinned in docs/requirements.txt. The API reference is generated from the docstrings of
# the package installed in VENV (default .venv, made by tools/setup.sh when missing), which the
# docs environment sees through a .pth file: no second build of the package (nor of pytest).
# Timing on the 2-core development machine, .venv-docs already made: about 40 s in all (the figures
# 5 s, the build 10 to 20 s, the examples of every page 20 s; 80 s when the machine is busy).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
DOCS_VENV=${DOCS_VENV:-.venv-docs}
OUT=${1:-docs/_build/html}
PYTHON=${PYTHON:-python3}

if ! "$VENV/bin/python" -P -c "import torchcodec" 2>/dev/null; then
  bash tools/setup.sh
fi
if [ ! -x "$DOCS_VENV/bin/python" ]; then
  echo "== creating $DOCS_VENV"
  "$PYTHON" -m venv "$DOCS_VENV"
fi
echo "== installing the pinned documentation tools into $DOCS_VENV"
"$DOCS_VENV/bin/python" -m pip install -q --disable-pip-version-check -r docs/requirements.txt
package_site=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')
docs_site=$("$DOCS_VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')
echo "$package_site" > "$docs_site/torchcodec-package-venv.pth"   # appended after the docs venv's own packages

echo "== drawing the figures from docs/_data/*.json (tools/docs_figures.py)"
"$DOCS_VENV/bin/python" -P tools/docs_figures.py plot docs/_figures
"$DOCS_VENV/bin/python" -P -m pytest -q -p no:cacheprovider tests/test_docs_figures.py

echo "== building the site into $OUT (warnings are errors: a missing figure fails it)"
# -P: the source tree (no compiled modules) must not shadow the installed package.
"$DOCS_VENV/bin/python" -P -m sphinx -E -W --keep-going -q -b html docs "$OUT"
echo "== running every Python example of README.md and docs/ (tests/test_docs_examples.py)"
"$VENV/bin/python" -P -m pytest -q -p no:cacheprovider tests/test_docs_examples.py
echo "== the site is in $OUT/index.html"
