#!/usr/bin/env bash
# Set up everything torchcodec needs on a Debian/Ubuntu machine, then build and install it into
# the virtual environment .venv (created beside this repository's files).
#
#   bash tools/setup.sh            # system packages (apt), .venv, build + install torchcodec
#   VENV=.venv-torch EXTRA_PIP="torch==2.14.1 torchvision==0.29.1" bash tools/setup.sh   # a second environment, with torch
#
# Re-running is cheap: installed system packages are skipped; the package is rebuilt.
#
# Variant builds (tools/fuzz.sh, tools/sanitize.sh) set, besides VENV and EXTRA_PIP:
#   EXTRA_APT   more system packages (e.g. clang)
#   BUILD_DIR   their own meson build folder (kept between runs: rebuilds are incremental)
#   MESON_ARGS  meson options, e.g. "-Dfuzz=true -Db_sanitize=address,undefined"
#   CC          the C compiler
#   RUN_WITH    a command that runs the built package's Python (e.g. "bash tools/fuzz/asan_run.sh")
set -euo pipefail
cd "$(dirname "$0")/.."

# g++: the CUDA tests compile the real kernels/*.cu as C++ into a stub libcuda to run them on the CPU.
# libffmpeg-nvenc-dev: ffnvcodec's loader header, so that the CUDA driver loader is built (and its
# stub-library tests run) here too; nothing of it is needed at run time.
# The image libraries (each optional at build time, all installed here so that every codec is built),
# and their command-line tools, which the image tests use as references.
APT_PACKAGES=(pkg-config ffmpeg libavformat-dev libavcodec-dev libavutil-dev libswscale-dev
              libswresample-dev libavfilter-dev libffmpeg-nvenc-dev python3-venv python3-dev gcc g++
              libturbojpeg0-dev libpng-dev libwebp-dev libgif-dev libavif-dev libheif-dev
              libjpeg-turbo-progs webp libavif-bin libheif-examples)
# shellcheck disable=SC2206  # EXTRA_APT is a list of packages
APT_PACKAGES+=(${EXTRA_APT:-})
missing=()
for package in "${APT_PACKAGES[@]}"; do
  dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "== installing system packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}
if [ ! -x "$VENV/bin/python" ]; then
  echo "== creating $VENV with $($PYTHON --version)"
  "$PYTHON" -m venv "$VENV"
fi
echo "== installing build tools and test dependencies into $VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip
# shellcheck disable=SC2086  # EXTRA_PIP is a list of requirements
"$VENV/bin/python" -m pip install -q "meson-python>=0.18" "meson>=1.2" ninja "Cython>=3.0.8" numpy pytest mypy pillow ${EXTRA_PIP:-}
# Before 0.17 this package was distributed as "torchcodec" (Meta's TorchCodec's name): remove such
# an install (its editable hook would shadow the new one), never Meta's.
if "$VENV/bin/python" -m pip show torchcodec 2>/dev/null | grep -q "^Summary: Video and audio decoding for machine learning, with TorchCodec's API"; then
  echo "== removing this package's install under its old distribution name, torchcodec"
  "$VENV/bin/python" -m pip uninstall -q -y torchcodec
fi
echo "== building and installing torchcodec-cython${MESON_ARGS:+ ($MESON_ARGS)}"
BUILD_OPTIONS=()
[ -n "${BUILD_DIR:-}" ] && BUILD_OPTIONS+=("-Cbuild-dir=$BUILD_DIR")
for arg in ${MESON_ARGS:-}; do BUILD_OPTIONS+=("-Csetup-args=$arg"); done
"$VENV/bin/python" -m pip install -q --no-build-isolation --no-deps "${BUILD_OPTIONS[@]}" .
${RUN_WITH:-} "$VENV/bin/python" -P -c "import torchcodec; print('torchcodec', torchcodec.__version__, 'with FFmpeg', torchcodec.ffmpeg_version(), '- default bridge:', torchcodec.get_bridge())"
# CUDA kernels are built when nvcc is on PATH (-Dcuda=auto); no GPU is needed for that.
${RUN_WITH:-} "$VENV/bin/python" -P -c "import torchcodec._image as i; print('image codecs:', ', '.join(n for n, built in i.available().items() if built) or 'none')"
${RUN_WITH:-} "$VENV/bin/python" -P -c "from torchcodec._cuda import _build_config as b; print('CUDA kernels:', 'built by ' + b.NVCC if b.CUDA_KERNELS else 'not built (-Dcuda=' + b.CUDA_OPTION + ', nvcc not found)' if b.CUDA_OPTION != 'disabled' else 'not built (-Dcuda=disabled)')"
