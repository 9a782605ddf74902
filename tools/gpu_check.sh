#!/usr/bin/env bash
# Build torchcodec on a machine with an NVIDIA GPU and check its CUDA path, in one command:
#
#   bash tools/gpu_check.sh [--quick] [--device cuda|cuda:N|cpu]
#
# --device cpu is a dry run for a machine without a GPU (gpu_check.py's dry run; the build still
# needs nvcc). PYTHON picks the interpreter (python3), GPU_CHECK_BUDGET the seconds (450), and
# GPU_CHECK_FFMPEG=bundle forces the carried FFmpeg.
#
# Steps, each under `timeout` so that the whole stays under GPU_CHECK_BUDGET seconds (450):
#   1. machine   what the machine has: GPU and driver, Python, torch/cupy, nvcc, whether
#                libcuda.so.1 and libnvcuvid.so.1 load, whether the system has FFmpeg dev files
#   2. ffmpeg    the system's FFmpeg if it has dev files and a CLI, else .gpu/ffmpeg (made by
#                tools/gpu_bundle.sh), put first on PKG_CONFIG_PATH, LD_LIBRARY_PATH and PATH
#   3. wheels    .gpu/wheels/*.whl (meson-python and friends) installed into /tmp/site
#   4. build     torchcodec built with -Dcuda=enabled (a missing nvcc or ffnvcodec fails loudly)
#                and installed into /tmp/torchcodec-install
#   5. pytest    every `cuda`-marked test (pytest -m cuda tests)
#   6. check     tools/gpu_check.py: GPU vs CPU frames over the corpus, stream races, benchmark
# then a summary of the steps. Six files go to $OUT when that variable is set (else to
# /tmp/gpu_check): gpu_check.log (everything printed), build.log (the whole build), steps.log,
# pytest-cuda.xml, gpu_check.md and gpu_check.json (the table); each step's own log stays in
# /tmp/gpu_check-steps.
#
# Nothing is downloaded. Exit status: 0 when every step passed, else 1.
set -uo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUNDLE=$REPO/.gpu
LOGS=${OUT:-/tmp/gpu_check}
STEP_LOGS=/tmp/gpu_check-steps
SITE=/tmp/site
INSTALL=/tmp/torchcodec-install
PYTHON=${PYTHON:-python3}
BUDGET=${GPU_CHECK_BUDGET:-450}
QUICK_FLAG=
DEVICE=cuda
while (($#)); do
  case $1 in
    --quick) QUICK_FLAG=--quick ;;
    --device) DEVICE=$2; shift ;;
    *) echo "usage: bash tools/gpu_check.sh [--quick] [--device cuda|cuda:N|cpu]" >&2; exit 2 ;;
  esac
  shift
done

START=$(date +%s)
STEPS=()
FAILED=0
mkdir -p "$LOGS" "$STEP_LOGS"
rm -f "$LOGS"/gpu_check.md "$LOGS"/gpu_check.json   # a table left by an earlier run
cd "$REPO" || exit 1

elapsed() { echo $(($(date +%s) - START)); }
left() { echo $((BUDGET - $(elapsed))); }

# step NAME CAP_SECONDS FUNCTION: run FUNCTION (exported, in a child bash) under timeout: CAP
# (scaled by GPU_CHECK_BUDGET / 450, for slower machines), or what is left of the budget less
# RESERVE seconds kept for later steps. Its output is shown and logged to $STEP_LOGS/NAME.log;
# the outcome goes to STEPS. Returns FUNCTION's status.
RESERVE=0
step() {
  local name=$1 cap=$2 limit status began
  shift 2
  cap=$((cap * BUDGET / 450))
  limit=$(($(left) - RESERVE))
  ((limit > cap)) && limit=$cap
  if ((limit < 5)); then
    STEPS+=("$name: skipped (out of time)"); FAILED=1; return 1
  fi
  printf '\n==== %s (limit %ss)\n' "$name" "$limit"
  began=$SECONDS
  timeout -k 5 "$limit" bash -c '"$@"' "$name" "$@" 2>&1 | tee "$STEP_LOGS/$name.log"
  status=${PIPESTATUS[0]}
  record "$name" "$status" "$((SECONDS - began))" "$limit"
  return "$status"
}

record() {   # record NAME STATUS SECONDS [LIMIT]
  local name=$1 status=$2 took=$3 limit=${4:-}
  if [[ -n $limit ]] && ((status == 124 || status == 137)); then
    STEPS+=("$name: TIMED OUT after ${limit}s")
  elif ((status != 0)); then
    STEPS+=("$name: FAILED (exit $status, ${took}s)")
  else
    STEPS+=("$name: ok (${took}s)")
  fi
  ((status == 0)) || FAILED=1
}

# --- 1. machine -------------------------------------------------------------------------------

describe_machine() {
  echo "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -n1)"
  echo "python: $(command -v "$PYTHON") $("$PYTHON" -c 'import sys; print(sys.version.split()[0])')"
  echo "nvcc: $(command -v nvcc || echo 'not on PATH') $(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*')"
  echo "pkg-config: $(command -v pkg-config || echo none)"
  echo "cc: $(cc --version 2>/dev/null | head -n1 || echo none); ninja: $(ninja --version 2>/dev/null || echo none)"
  echo "pip: $("$PYTHON" -m pip --version 2>&1 | cut -d' ' -f1-2)"
  "$PYTHON" - <<'EOF'
import ctypes, importlib, importlib.util
for name in ("torch", "cupy", "Cython", "mesonpy", "numpy", "pytest"):
    if importlib.util.find_spec(name) is None:
        print(f"{name}: not installed")
        continue
    try:
        module = importlib.import_module(name)
        extra = ""
        if name == "torch":
            extra = f" (CUDA {module.version.cuda}, device: {module.cuda.is_available() and module.cuda.get_device_name()})"
        print(f"{name}: {getattr(module, '__version__', '?')}{extra}")
    except Exception as error:
        print(f"{name}: import failed: {error}")
for lib in ("libcuda.so.1", "libnvcuvid.so.1"):
    try:
        ctypes.CDLL(lib)
        print(f"{lib}: loads")
    except OSError as error:
        print(f"{lib}: does not load ({error})")
EOF
  if system_ffmpeg_usable; then
    echo "system FFmpeg: dev files $(pkg-config --modversion libavcodec) (libavcodec), CLI $(command -v ffmpeg)"
  else
    echo "system FFmpeg: no dev files or no CLI ($(pkg-config --modversion libavcodec 2>&1 | head -n1))"
  fi
  ls /usr/lib/x86_64-linux-gnu/libnvcuvid.so* /usr/local/nvidia/lib64/libnvcuvid.so* 2>/dev/null || true
}

system_ffmpeg_usable() {
  command -v pkg-config >/dev/null && command -v ffmpeg >/dev/null && command -v ffprobe >/dev/null &&
    pkg-config --exists 'libavformat >= 59.27' 'libavcodec >= 59.37' 'libavutil >= 57.28' \
      'libswscale >= 6.7' 'libswresample >= 4.7'
}

# --- 2. ffmpeg --------------------------------------------------------------------------------

use_ffmpeg() {
  # Exported here (not in a step's subshell): the later steps build and test against it.
  # GPU_CHECK_FFMPEG=bundle uses .gpu/ffmpeg even where the system has FFmpeg (to test it).
  if [[ ${GPU_CHECK_FFMPEG:-auto} != bundle ]] && system_ffmpeg_usable; then
    echo "using the system's FFmpeg $(pkg-config --modversion libavcodec)"
  elif [[ -x $BUNDLE/ffmpeg/bin/ffmpeg ]]; then
    export PKG_CONFIG_PATH=$BUNDLE/ffmpeg/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
    export LD_LIBRARY_PATH=$BUNDLE/ffmpeg/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    export PATH=$BUNDLE/ffmpeg/bin:$PATH
    echo "using the carried FFmpeg in $BUNDLE/ffmpeg"
  else
    echo "no FFmpeg: the system has no dev files and .gpu/ffmpeg is missing (run tools/gpu_bundle.sh)"
    return 1
  fi
  if ! command -v pkg-config >/dev/null; then
    [[ -x $BUNDLE/pkgconf/bin/pkg-config ]] || { echo "no pkg-config on this machine, none carried"; return 1; }
    export PATH=$BUNDLE/pkgconf/bin:$PATH
  fi
  # ffnvcodec's headers (the CUDA loader): the system's, else the carried ones
  if ! pkg-config --exists ffnvcodec && [[ ! -f /usr/include/ffnvcodec/dynlink_loader.h ]]; then
    export PKG_CONFIG_PATH=$BUNDLE/ffnvcodec/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
    echo "using the carried ffnvcodec headers $(pkg-config --modversion ffnvcodec)"
  fi
  if ! command -v nvcc >/dev/null && [[ -x /usr/local/cuda/bin/nvcc ]]; then
    export PATH=$PATH:/usr/local/cuda/bin
  fi
  export FFMPEG FFPROBE
  FFMPEG=$(command -v ffmpeg) FFPROBE=$(command -v ffprobe)
  export TORCHCODEC_MEDIA_DIR=$BUNDLE/media
  [[ -d $TORCHCODEC_MEDIA_DIR ]] || unset TORCHCODEC_MEDIA_DIR   # then tests make the corpus
  "$FFMPEG" -hide_banner -version | head -n1
  echo "libavcodec $(pkg-config --modversion libavcodec), ffnvcodec $(pkg-config --modversion ffnvcodec)"
}

# --- 3. wheels, 4. build ----------------------------------------------------------------------

install_wheels() {
  # Only the wheels this Python can install (Cython's is for CPython 3.12, the GPU machine's).
  local wheels
  mapfile -t wheels < <("$PYTHON" - "$BUNDLE"/wheels/*.whl <<'EOF'
import pathlib, sys
from packaging.tags import sys_tags
from packaging.utils import parse_wheel_filename
supported = set(sys_tags())
for path in sys.argv[1:]:
    if supported & set(parse_wheel_filename(pathlib.Path(path).name)[3]):
        print(path)
    else:
        print(f"skipping {pathlib.Path(path).name}: not for this Python", file=sys.stderr)
EOF
)
  ((${#wheels[@]})) || { echo "no wheel in $BUNDLE/wheels to install"; return 1; }
  rm -rf "$SITE"
  "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$SITE" "${wheels[@]}" && ls "$SITE"
}

build_torchcodec() {
  rm -rf "$INSTALL" build/gpu-check
  # the whole output to build.log; on the console without ninja's progress lines
  "$PYTHON" -m pip install -v --no-build-isolation --no-index --no-deps --no-cache-dir \
    --target "$INSTALL" -Csetup-args=-Dcuda=enabled -Cbuild-dir=build/gpu-check . 2>&1 |
    tee "$LOGS/build.log" | grep -vE '^\s*\[[0-9]+/[0-9]+\] (Compiling|Linking|Generating)'
  return "${PIPESTATUS[0]}"
}

import_check() {
  "$PYTHON" -P -c '
import os, torchcodec
from torchcodec._core import _build_config as b
from torchcodec._device import cuda_unavailable_reason
print("torchcodec", torchcodec.__version__, "from", torchcodec.__file__)
print("FFmpeg", torchcodec.ffmpeg_version(), "| CUDA kernels:", b.CUDA_KERNELS, "| CUDA driver loader:", b.CUDA_DRIVER)
print("cuda_available:", torchcodec.cuda_available(), cuda_unavailable_reason() or "")
assert b.CUDA_KERNELS and b.CUDA_DRIVER, "built without CUDA"
assert torchcodec.__file__.startswith(os.environ["INSTALL"]), "not the torchcodec just built (an editable install?)"
'
}

# --- 5. pytest, 6. check ----------------------------------------------------------------------

run_cuda_tests() {
  local extra=()
  "$PYTHON" -c 'import pytest_timeout' 2>/dev/null && extra=(--timeout 60)
  "$PYTHON" -P -m pytest tests -m cuda -q -p no:cacheprovider -rfEs "${extra[@]}" \
    --junitxml "$LOGS/pytest-cuda.xml"
}

run_gpu_check() {
  PYTHONUNBUFFERED=1 "$PYTHON" -P tools/gpu_check.py --device "$DEVICE" --out "$LOGS" \
    --media "${TORCHCODEC_MEDIA_DIR:-$REPO/media-cache}" --deadline "$(($(left) - 15))" $QUICK_FLAG
}

main() {
  echo "gpu_check.sh: $(date -u +%FT%TZ) in $REPO, budget ${BUDGET}s, logs in $LOGS"
  export -f describe_machine system_ffmpeg_usable install_wheels build_torchcodec import_check \
    run_cuda_tests run_gpu_check left elapsed
  export PYTHON REPO BUNDLE LOGS STEP_LOGS SITE INSTALL BUDGET START QUICK_FLAG DEVICE
  step machine 30 describe_machine
  printf '\n==== ffmpeg\n'
  use_ffmpeg >"$STEP_LOGS/ffmpeg.log" 2>&1   # in this shell: its exports hold for the next steps
  record ffmpeg $? 0
  cat "$STEP_LOGS/ffmpeg.log"
  step wheels 60 install_wheels && export PYTHONPATH=$SITE${PYTHONPATH:+:$PYTHONPATH} PATH=$SITE/bin:$PATH
  RESERVE=$((150 * BUDGET / 450))   # keep time for the tests and the check
  step build 240 build_torchcodec && export PYTHONPATH=$INSTALL:$PYTHONPATH && step import 30 import_check
  RESERVE=$((100 * BUDGET / 450))
  step pytest 120 run_cuda_tests
  RESERVE=0
  step check 300 run_gpu_check
  printf '\n==== steps (%ss of %ss)\n' "$(elapsed)" "$BUDGET"
  printf '%s\n' "${STEPS[@]}" | tee "$LOGS/steps.log"
  [[ -f $LOGS/gpu_check.md ]] && cat "$LOGS/gpu_check.md"
  return $FAILED
}

main 2>&1 | tee "$LOGS/gpu_check.log"
exit "${PIPESTATUS[0]}"
