#!/usr/bin/env bash
# Run the examples that need Ray, dask and Hugging Face datasets (examples/ray_data_pipeline.py,
# examples/dask_job.py, examples/hf_datasets_column.py), each checked against the ffmpeg CLI by
# tests/test_optional_examples.py, in their own virtual environment with pinned versions, so
# that the main test suite neither installs nor waits for them.
#
#   bash tools/run_optional_examples.sh [pytest arguments]
#
# The environment (VENV, default .venv-examples) is made by tools/setup.sh with these pins added,
# the package built into it. torch is the CPU wheel of the version pinned here: datasets' Audio
# feature calls .cpu() on the samples, and it is the DataLoader example's dependency too.
# First run: a few minutes (the pip downloads and the package build); then about a minute.
set -euo pipefail
cd "$(dirname "$0")/.."
export VENV=${VENV:-.venv-examples}
PINS='ray[data]==2.60.0 dask[bag,array]==2026.8.0 datasets==5.2.0 torch==2.13.0'
EXTRA_PIP="$PINS" bash tools/setup.sh
echo "== versions"
"$VENV/bin/python" -P -c "
import dask, datasets, numpy, ray, torch, torchcodec
print(f'torchcodec {torchcodec.__version__} (FFmpeg {torchcodec.ffmpeg_version()}), ray {ray.__version__}, '
      f'dask {dask.__version__}, datasets {datasets.__version__}, torch {torch.__version__}, numpy {numpy.__version__}')"
echo "== generating the test media (cached in ${TORCHCODEC_MEDIA_DIR:-media-cache/})"
"$VENV/bin/python" tools/make_media.py
echo "== running the examples against the ffmpeg CLI"
# Ray's own deprecation warnings (its DataContext) are not ours to fix.
exec "$VENV/bin/python" -P -m pytest -v -p no:cacheprovider -W ignore::DeprecationWarning \
  tests/test_optional_examples.py "$@"
