#!/usr/bin/env bash
# Make .gpu/: everything tools/gpu_check.sh needs on the GPU machine that the machine lacks.
#
# Runs HERE (Debian 12, the FFmpeg 5.1 the package is developed against). The GPU machine has
# Python 3.12, torch, cupy, cython, meson, ninja, nvcc and pytest, but (as far as is known) no
# FFmpeg libraries, headers or CLI, no meson-python, and no way to download anything. So this
# script puts into the git-ignored folder .gpu/ (carried there with the working tree):
#
#   .gpu/ffmpeg/   a minimal FFmpeg built from Debian's own source package (same version as the
#                  system's libavcodec): the decoders, demuxers, parsers and bitstream filters the
#                  package and its tests use, the CUDA hwaccel (nvdec, cuvid), swscale,
#                  swresample, a small avfilter, the ffmpeg/ffprobe CLI (tests' references),
#                  libdav1d (AV1 on the CPU); shared libraries whose rpath is $ORIGIN and
#                  pkg-config files whose prefix is ${pcfiledir}/../.. (relocatable)
#   .gpu/ffnvcodec/ ffnvcodec's headers and .pc (the CUDA loader torchcodec builds against)
#   .gpu/pkgconf/  a pkg-config (Debian's pkgconf, with its library) for meson to find FFmpeg
#   .gpu/wheels/   pure-Python wheels for Python 3.12: meson-python, pyproject-metadata, and the
#                  meson and Cython versions this repository builds with
#   .gpu/media/    the test corpus and the 1080p benchmark clips (tools/make_media.py), so that
#                  nothing is encoded there (its ffmpeg has no encoders for most of the corpus)
#   .gpu/install/<ABI>/  torchcodec built here with -Dcuda=enabled against this system's FFmpeg (the
#                  version .gpu/ffmpeg carries), one per Python in GPU_BUNDLE_PYTHONS (default: the
#                  repository's .venv and python3.12 when present); gpu_check.sh imports it instead of
#                  building when its Python has that ABI, so nvcc and Cython stay off the GPU machine
#                  (made every run: the sources change)
#
# Each part but the media is skipped when already present (delete it to remake it); the media are
# brought up to date with tools/make_media.py's recipes every time (rerun after changing them). The FFmpeg source and
# build tree live in $GPU_BUNDLE_WORK (default /tmp/torchcodec-gpu-bundle), not in .gpu/.
# Prints the bundle's size at the end and fails if it is over GPU_BUNDLE_MAX_MIB (50).
#
# Usage: bash tools/gpu_bundle.sh [--jobs N] [--build-only]     (as root, or with sudo for apt-get)
#        --build-only makes .gpu/install only (no root needed)
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUNDLE=$REPO/.gpu
PREFIX=$BUNDLE/ffmpeg
WORK=${GPU_BUNDLE_WORK:-/tmp/torchcodec-gpu-bundle}
MAX_MIB=${GPU_BUNDLE_MAX_MIB:-50}
JOBS=2
PYTHON=${PYTHON:-python3}

BUILD_ONLY=0
while (($#)); do
  case $1 in
    --jobs) JOBS=$2; shift ;;
    --build-only) BUILD_ONLY=1 ;;
    *) echo "usage: bash tools/gpu_bundle.sh [--jobs N] [--build-only]" >&2; exit 2 ;;
  esac
  shift
done

log() { printf '[gpu_bundle] %s\n' "$*" >&2; }

# --- FFmpeg's configuration (tests/test_gpu_check.py parses these arrays) ----------------------

FF_DECODERS=(h264 hevc vp8 vp9 mpeg4 mpeg1video mpeg2video av1 libdav1d
             aac aac_latm mp3 mp3float mp2 mp2float flac opus vorbis 'pcm_*' rawvideo
             h264_cuvid hevc_cuvid vp8_cuvid vp9_cuvid mpeg1_cuvid mpeg2_cuvid mpeg4_cuvid av1_cuvid)
FF_HWACCELS=(h264_nvdec hevc_nvdec vp8_nvdec vp9_nvdec mpeg1_nvdec mpeg2_nvdec mpeg4_nvdec av1_nvdec)
FF_DEMUXERS=(mov matroska avi mpegts mpegps ogg wav mp3 aac flac ivf h264 hevc m4v mpegvideo
             rawvideo nut)
FF_PARSERS=(h264 hevc vp8 vp9 av1 mpeg4video mpegvideo aac aac_latm mpegaudio flac opus vorbis)
FF_BSFS=(h264_mp4toannexb hevc_mp4toannexb mpeg4_unpack_bframes null vp9_superframe_split
         extract_extradata)
FF_PROTOCOLS=(file pipe)
# Encoders and muxers: only what the tests' reference commands write (raw frames and samples,
# stream copies into containers, the small MPEG-4 clip test_nvdec_input.py encodes itself), and
# NVENC's encoders (torchcodec's device="cuda" encoding; gpu_check.sh's nvenc step).
FF_ENCODERS=(rawvideo wrapped_avframe 'pcm_*' mpeg4 h264_nvenc hevc_nvenc av1_nvenc)
FF_MUXERS=(rawvideo null pcm_f32le pcm_s16le wav mov mp4 matroska webm nut avi mpegts ivf h264 hevc m4v)
# Filters: the CLI's own plumbing, auto-rotation, the tests' -vf chains, lavfi sources (the
# buffer sources and sinks are always built).
FF_FILTERS=(format aformat scale aresample null anull
            copy crop transpose hflip vflip rotate setparams trim atrim fps select setpts
            testsrc testsrc2 mandelbrot aevalsrc)
FF_INDEVS=(lavfi)

join() { local IFS=,; echo "$*"; }

ffmpeg_configure_args() {
  # --disable-autodetect: nothing from this machine is linked unless named here (the result must
  # run on another distribution), so the hwaccel and dav1d are enabled explicitly.
  printf '%s\n' \
    --prefix="$PREFIX" --disable-everything --disable-autodetect \
    --enable-shared --disable-static --disable-doc --disable-ffplay --disable-network \
    --disable-postproc --enable-avdevice --enable-avfilter --enable-swscale --enable-swresample \
    --enable-ffnvcodec --enable-nvdec --enable-cuvid --enable-nvenc --enable-libdav1d \
    --enable-decoder="$(join "${FF_DECODERS[@]}")" \
    --enable-hwaccel="$(join "${FF_HWACCELS[@]}")" \
    --enable-demuxer="$(join "${FF_DEMUXERS[@]}")" \
    --enable-parser="$(join "${FF_PARSERS[@]}")" \
    --enable-bsf="$(join "${FF_BSFS[@]}")" \
    --enable-protocol="$(join "${FF_PROTOCOLS[@]}")" \
    --enable-encoder="$(join "${FF_ENCODERS[@]}")" \
    --enable-muxer="$(join "${FF_MUXERS[@]}")" \
    --enable-filter="$(join "${FF_FILTERS[@]}")" \
    --enable-indev="$(join "${FF_INDEVS[@]}")"
}

# --- Steps ----------------------------------------------------------------------------------------

install_build_deps() {
  # nasm: FFmpeg's x86 SIMD (without it the CPU benchmark would be meaningless); libdav1d-dev:
  # AV1 on the CPU; libffmpeg-nvenc-dev: ffnvcodec (the CUDA hwaccel); patchelf: $ORIGIN rpaths.
  local missing=()
  for pkg in nasm libdav1d-dev libffmpeg-nvenc-dev patchelf dpkg-dev pkg-config; do
    dpkg-query -W -f '${Status}' "$pkg" 2>/dev/null | grep -q 'ok installed' || missing+=("$pkg")
  done
  if ((${#missing[@]})); then
    log "installing build dependencies: ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >&2
  fi
}

ffmpeg_source_version() {
  # The version of the system's FFmpeg, so the bundle decodes exactly as the CPU tests here do.
  dpkg-query -W -f '${Version}' libavcodec59
}

fetch_ffmpeg_source() {
  # apt-get source with a private sources list holding bookworm's deb-src lines (the system's
  # sources are left alone). Prints the unpacked source folder.
  local version apt_dir src
  version=$(ffmpeg_source_version)
  src=$(find "$WORK" -maxdepth 1 -type d -name 'ffmpeg-5.1*' 2>/dev/null | head -n1)
  if [[ -n $src && -f $WORK/.source-$version ]]; then echo "$src"; return; fi
  apt_dir=$WORK/apt
  mkdir -p "$apt_dir/lists/partial"
  cat >"$apt_dir/sources.list" <<'EOF'
deb-src http://deb.debian.org/debian bookworm main
deb-src http://deb.debian.org/debian bookworm-updates main
deb-src http://deb.debian.org/debian-security bookworm-security main
EOF
  local opts=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
              -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache::pkgcache="
              -o "Dir::Cache::srcpkgcache=")
  log "fetching Debian's ffmpeg $version source"
  apt-get "${opts[@]}" update -q >&2
  (cd "$WORK" && apt-get "${opts[@]}" source -q "ffmpeg=$version" >&2)
  touch "$WORK/.source-$version"
  find "$WORK" -maxdepth 1 -type d -name 'ffmpeg-5.1*' | head -n1
}

build_ffmpeg() {
  local src=$1 build=$WORK/build
  mkdir -p "$build"
  log "configuring FFmpeg in $build"
  mapfile -t args < <(ffmpeg_configure_args)
  (cd "$build" && "$src/configure" "${args[@]}" >configure.log 2>&1) || {
    tail -n 30 "$build/configure.log" >&2; tail -n 30 "$build/ffbuild/config.log" >&2; return 1; }
  check_configured_components "$build/config_components.h"
  log "building FFmpeg (nice -n 10 make -j$JOBS)"
  (cd "$build" && nice -n 10 make -j"$JOBS" >make.log 2>&1) || { tail -n 40 "$build/make.log" >&2; return 1; }
  rm -rf "$PREFIX"
  (cd "$build" && make install >install.log 2>&1)
}

check_configured_components() {
  # configure skips a component name it does not know without failing: every name listed above
  # must come out enabled (CONFIG_<NAME>_<KIND> 1), wildcards aside.
  local header=$1 kind name names missing=()
  local -A lists=([DECODER]="${FF_DECODERS[*]}" [HWACCEL]="${FF_HWACCELS[*]}" [DEMUXER]="${FF_DEMUXERS[*]}"
                  [PARSER]="${FF_PARSERS[*]}" [BSF]="${FF_BSFS[*]}" [PROTOCOL]="${FF_PROTOCOLS[*]}"
                  [ENCODER]="${FF_ENCODERS[*]}" [MUXER]="${FF_MUXERS[*]}" [FILTER]="${FF_FILTERS[*]}"
                  [INDEV]="${FF_INDEVS[*]}")
  for kind in "${!lists[@]}"; do
    read -ra names <<<"${lists[$kind]}"     # (read does not expand the pcm_* patterns)
    for name in "${names[@]}"; do
      [[ $name == *'*'* ]] && continue
      grep -q "^#define CONFIG_${name^^}_${kind} 1" "$header" || missing+=("$name ($kind)")
    done
  done
  if ((${#missing[@]})); then log "configure did not enable: ${missing[*]}"; return 1; fi
}

carry_runtime_libraries() {
  # libdav1d is the one library from this system the build links: carry it beside libavcodec.
  local dav1d
  dav1d=$(ldconfig -p | awk '/libdav1d\.so\.[0-9]+ .*x86-64/ {print $NF; exit}')
  cp -L "$dav1d" "$PREFIX/lib/$(basename "$dav1d")"
}

make_relocatable() {
  # $ORIGIN rpaths (libraries find their siblings, programs find ../lib) and pkg-config prefixes
  # relative to the .pc file, so .gpu/ffmpeg works wherever the working tree lands.
  local f
  for f in "$PREFIX"/lib/*.so.*; do
    [[ -L $f ]] || patchelf --set-rpath '$ORIGIN' "$f"
  done
  for f in "$PREFIX"/bin/ffmpeg "$PREFIX"/bin/ffprobe; do
    patchelf --set-rpath '$ORIGIN/../lib' "$f"
  done
  sed -i "s|^prefix=.*|prefix=\${pcfiledir}/../..|" "$PREFIX"/lib/pkgconfig/*.pc
  sed -i "s|$PREFIX|\${prefix}|g" "$PREFIX"/lib/pkgconfig/*.pc
  rm -rf "$PREFIX/share"   # examples and presets
}

carry_ffnvcodec_headers() {
  # Apart from .gpu/ffmpeg: the GPU machine may have its own FFmpeg but not these headers.
  local dir=$BUNDLE/ffnvcodec version
  rm -rf "$dir"
  mkdir -p "$dir/include/ffnvcodec" "$dir/lib/pkgconfig"
  cp /usr/include/ffnvcodec/*.h "$dir/include/ffnvcodec/"
  version=$(pkg-config --modversion ffnvcodec)
  cat >"$dir/lib/pkgconfig/ffnvcodec.pc" <<EOF
prefix=\${pcfiledir}/../..
includedir=\${prefix}/include

Name: ffnvcodec
Description: FFmpeg version of Nvidia Codec SDK headers
Version: $version
Cflags: -I\${includedir}
EOF
}

carry_pkg_config() {
  # pkgconf (Debian's pkg-config) and its library: meson needs a pkg-config to find FFmpeg, and
  # the GPU machine may have none.
  local dir=$BUNDLE/pkgconf lib
  rm -rf "$dir"
  mkdir -p "$dir/bin" "$dir/lib"
  cp -L "$(command -v pkgconf)" "$dir/bin/pkg-config"
  lib=$(ldd "$dir/bin/pkg-config" | awk '/libpkgconf/ {print $3}')
  cp -L "$lib" "$dir/lib/"
  patchelf --set-rpath '$ORIGIN/../lib' "$dir/bin/pkg-config"
}

check_foreign_libraries() {
  # Every library the bundle needs is either in it or part of glibc (present everywhere).
  local f needed bad=0
  for f in "$PREFIX"/lib/*.so.* "$PREFIX"/bin/ffmpeg "$PREFIX"/bin/ffprobe "$BUNDLE"/pkgconf/bin/*; do
    [[ -L $f ]] && continue
    for needed in $(patchelf --print-needed "$f"); do
      case $needed in
        libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux-x86-64.so.*) ;;
        *) [[ -e $PREFIX/lib/$needed || -e $BUNDLE/pkgconf/lib/$needed ]] ||
             { log "$f needs $needed, not carried"; bad=1; } ;;
      esac
    done
  done
  return $bad
}

smoke_test_ffmpeg() {
  # The carried CLI runs from its own folder with the system's FFmpeg hidden from it.
  local out
  out=$(env -u LD_LIBRARY_PATH "$PREFIX/bin/ffmpeg" -hide_banner -nostdin -v error \
        -i "$BUNDLE/media/h264_bframes.mp4" -f null - 2>&1) || { log "ffmpeg smoke test: $out"; return 1; }
  "$PREFIX/bin/ffmpeg" -hide_banner -hwaccels | grep -q cuda || { log "no cuda hwaccel"; return 1; }
  ldd "$PREFIX/bin/ffmpeg" | grep -q "$PREFIX/bin/../lib/libavcodec" \
    || { log "ffmpeg does not load the bundle's libavcodec"; return 1; }
}

download_wheels() {
  # Pure-Python wheels (any platform); meson and Cython pinned to this repository's environment
  # (the GPU machine has some meson and Cython, versions unknown: ours are known to build it).
  local dir=$BUNDLE/wheels venv_py=$REPO/.venv/bin/python pins=()
  mkdir -p "$dir"
  if [[ -x $venv_py ]]; then
    pins=("meson==$("$venv_py" -c 'import mesonbuild.coredata as c; print(c.version)')"
          "Cython==$("$venv_py" -c 'import Cython; print(Cython.__version__)')")
  else
    pins=("meson>=1.2" "Cython>=3.0.8")
  fi
  log "downloading wheels: meson-python pyproject-metadata ${pins[*]}"
  "$PYTHON" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform any -d "$dir" \
    "meson-python>=0.18" pyproject-metadata "${pins[@]}" >&2
}

media_names() {
  # The test corpus (every non-benchmark file) and the two 1080p video benchmark clips.
  "$PYTHON" - "$REPO/tools" <<'EOF'
import sys
sys.path.insert(0, sys.argv[1])
import make_media
print("\n".join(make_media.default_names() + ["bench_1080p_h264.mp4", "bench_1080p_hevc.mp4"]))
EOF
}

make_media() {
  # Current files of the repository's cache are reused (make_media checks their recipes); what is
  # missing or stale is made with this machine's ffmpeg (the carried one has almost no encoders).
  # Anything else in .gpu/media is removed.
  local dir=$BUNDLE/media names name
  mapfile -t names < <(media_names)
  mkdir -p "$dir"
  for name in "${names[@]}"; do
    if [[ ! -e $dir/$name && -e $REPO/media-cache/$name ]]; then
      cp -p "$REPO/media-cache/$name" "$REPO/media-cache/$name.recipe.json" "$dir/" 2>/dev/null || true
    fi
  done
  log "making the media corpus and benchmark clips in $dir"
  "$PYTHON" "$REPO/tools/make_media.py" --out "$dir" -j "$JOBS" "${names[@]}" >&2
  for name in "$dir"/*; do
    name=$(basename "$name" .recipe.json)
    printf '%s\n' "${names[@]}" | grep -qxF "$name" || rm -f "$dir/$name" "$dir/$name.recipe.json"
  done
}

check_media_is_current() {
  # What the GPU machine's tests will ask for must be there with current recipes: there the
  # carried ffmpeg could not remake it (make_media's cache is keyed by recipe, not by ffmpeg build).
  "$PYTHON" - "$REPO/tools" "$BUNDLE/media" $(media_names) <<'EOF'
import pathlib, sys
sys.path.insert(0, sys.argv[1])
import make_media
stale = [n for n in sys.argv[3:] if not make_media.is_current(n, pathlib.Path(sys.argv[2]))]
sys.exit(f"stale or missing in {sys.argv[2]}: {stale}" if stale else 0)
EOF
}

abi_tag() {   # cpython-311-x86_64-linux-gnu: the extension suffix without its dots and .so
  "$1" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX").strip(".").removesuffix(".so"))'
}

carry_build() {
  # One install tree per Python that can build the package here (meson-python, Cython, meson,
  # ninja importable); each is checked to import with its kernels and driver loader.
  local py tag dest pythons
  pythons=${GPU_BUNDLE_PYTHONS:-"$REPO/.venv/bin/python python3.12"}
  for py in $pythons; do
    if ! command -v "$py" >/dev/null || ! "$py" -c 'import mesonpy, Cython' 2>/dev/null; then
      log "no carried build for $py (missing, or without meson-python and Cython)"
      continue
    fi
    tag=$(abi_tag "$py")
    dest=$BUNDLE/install/$tag
    log "building torchcodec for $tag into $dest (-Dcuda=enabled)"
    rm -rf "$dest"
    "$py" -m pip install -q --no-build-isolation --no-deps --no-cache-dir --target "$dest" \
      -Csetup-args=-Dcuda=enabled -Cbuild-dir="$REPO/build/carried-$tag" "$REPO" >&2
    # (an editable install of the repository in that Python would shadow the tree: its finder is dropped)
    PYTHONPATH=$dest "$py" -P -c '
import sys
sys.meta_path[:] = [f for f in sys.meta_path if not (type(f).__module__.startswith("_torchcodec") and "editable" in type(f).__module__)]
import torchcodec
from torchcodec._cuda import _build_config as b
assert torchcodec.__file__.startswith(sys.argv[1]), torchcodec.__file__
assert b.CUDA_KERNELS and b.CUDA_DRIVER, "built without CUDA"' "$dest"
    git -C "$REPO" rev-parse HEAD >"$dest/.commit"
  done
}

main() {
  mkdir -p "$BUNDLE" "$WORK"
  if ((BUILD_ONLY)); then carry_build; return; fi
  install_build_deps
  make_media
  if [[ ! -x $PREFIX/bin/ffmpeg ]]; then
    build_ffmpeg "$(fetch_ffmpeg_source)"
    carry_runtime_libraries
    make_relocatable
  fi
  [[ -f $BUNDLE/ffnvcodec/lib/pkgconfig/ffnvcodec.pc ]] || carry_ffnvcodec_headers
  [[ -x $BUNDLE/pkgconf/bin/pkg-config ]] || carry_pkg_config
  check_foreign_libraries
  check_media_is_current
  smoke_test_ffmpeg
  ls "$BUNDLE"/wheels/meson_python-*.whl >/dev/null 2>&1 || download_wheels
  carry_build
  local kib
  kib=$(du -sk "$BUNDLE" | cut -f1)
  du -sh "$BUNDLE"/* >&2
  echo "bundle: $BUNDLE $((kib / 1024)) MiB (limit $MAX_MIB MiB)"
  ((kib <= MAX_MIB * 1024)) || { log "the bundle is over $MAX_MIB MiB"; return 1; }
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then main; fi
