#!/usr/bin/env bash
# Make .gpu/: everything tools/gpu_check.sh needs on the GPU machine that the machine lacks.
#
# Runs HERE (Debian 12). The GPU machine has Python 3.12, torch, cupy, cython, meson, ninja, nvcc
# and pytest, but no FFmpeg libraries, headers or CLI, no image libraries, no meson-python, and no
# way to download anything. So this script puts into the git-ignored folder .gpu/ (carried there
# with the working tree):
#
#   .gpu/ffmpeg/   the project's FFmpeg (tools/wheels/ffmpeg.sh's configuration, the one the wheels
#                  bundle, built for glibc 2.28 by tools/wheels/ with the libraries it and the image
#                  codecs use): shared libraries whose rpath is $ORIGIN, its headers, the ffmpeg and
#                  ffprobe CLI (the tests' references), pkg-config files whose prefix is
#                  ${pcfiledir}/../.. (relocatable)
#   .gpu/ffnvcodec/ ffnvcodec's headers and .pc (the CUDA loader torchcodec builds against)
#   .gpu/pkgconf/  a pkg-config (Debian's pkgconf, with its library) for meson to find FFmpeg
#   .gpu/wheels/   pure-Python wheels for Python 3.12: meson-python, pyproject-metadata, meson and
#                  Cython at the versions the wheels are built with (for a build there)
#   .gpu/media/    the test corpus and the 1080p benchmark clips (tools/make_media.py), so that
#                  nothing is encoded there (its ffmpeg has no encoders for most of the corpus)
#   .gpu/jpeg/     the JPEGs tools/gpu/jpeg_check.py decodes (--write-inputs), made here with Pillow,
#                  which the GPU machine may lack (made every time, in a venv of numpy and Pillow)
#   .gpu/install/<ABI>/  torchcodec built here with -Dcuda=enabled against .gpu/ffmpeg's FFmpeg, one
#                  per CPython of GPU_BUNDLE_PYTHONS (default "3.12", the GPU machine's), each found
#                  by tools/wheels/pythons.sh and built in its own virtual environment with the wheels'
#                  toolchain; gpu_check.sh imports it instead of building when its Python has that ABI
#                  (made every run: the sources change)
#
# The libraries and FFmpeg are built once in $WHEEL_WORK (default /tmp/torchcodec-wheel-build, the
# folder tools/build_wheels.sh uses too: either script reuses what the other built, while the
# scripts that made it are unchanged). Each part of .gpu/ but the media and the builds is kept when
# present (ffmpeg/ while made by the same scripts; delete a part to remake it); the media are
# brought up to date with tools/make_media.py's recipes every time. Prints the bundle's size at
# the end and fails if it is over GPU_BUNDLE_MAX_MIB (60). Any part that cannot be made fails the
# script (a bundle without a carried build would leave the GPU check nothing to import).
#
# Usage: bash tools/gpu_bundle.sh [--jobs N] [--build-only]     (as root, or with sudo for apt-get)
#        --build-only remakes .gpu/install only (no root needed; the rest must exist)
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUNDLE=$REPO/.gpu
WORK=${WHEEL_WORK:-/tmp/torchcodec-wheel-build}
PREFIX=$WORK/prefix
MAX_MIB=${GPU_BUNDLE_MAX_MIB:-60}
PYTHONS=${GPU_BUNDLE_PYTHONS:-3.12}
JOBS=2
PYTHON=${PYTHON:-python3}
CUDA=enabled

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
for part in toolchain sources libraries ffmpeg prefix pythons wheel; do
  # shellcheck source=/dev/null
  source "$REPO/tools/wheels/$part.sh"
done

carry_ffmpeg() {
  # The prefix's programs, shared libraries (FFmpeg's and every library it or the image codecs
  # link), headers and pkg-config files into .gpu/ffmpeg, made relocatable.
  local dest=$BUNDLE/ffmpeg f
  rm -rf "$dest"
  mkdir -p "$dest/bin" "$dest/lib"
  cp -P "$PREFIX"/lib/*.so* "$dest/lib/"
  cp -r "$PREFIX/lib/pkgconfig" "$dest/lib/"
  cp -r "$PREFIX/include" "$dest/"
  cp "$PREFIX/bin/ffmpeg" "$PREFIX/bin/ffprobe" "$dest/bin/"
  for f in "$dest"/lib/*.so*; do
    [[ -L $f ]] || { strip --strip-unneeded "$f"; patchelf --set-rpath '$ORIGIN' "$f"; }
  done
  for f in "$dest"/bin/ffmpeg "$dest"/bin/ffprobe; do strip "$f"; patchelf --set-rpath '$ORIGIN/../lib' "$f"; done
  sed -i "s|^prefix=.*|prefix=\${pcfiledir}/../..|; s|$PREFIX|\${prefix}|g" "$dest"/lib/pkgconfig/*.pc
  prefix_recipe >"$dest/.recipe"
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
  for f in "$BUNDLE"/ffmpeg/lib/*.so.* "$BUNDLE"/ffmpeg/bin/* "$BUNDLE"/pkgconf/bin/*; do
    [[ -L $f ]] && continue
    for needed in $(patchelf --print-needed "$f"); do
      case $needed in
        libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux-x86-64.so.*) ;;
        *) [[ -e $BUNDLE/ffmpeg/lib/$needed || -e $BUNDLE/pkgconf/lib/$needed ]] ||
             { log "$f needs $needed, not carried"; bad=1; } ;;
      esac
    done
  done
  return $bad
}

smoke_test_ffmpeg() {
  # The carried CLI runs from its own folder, and decodes a corpus clip.
  local out
  out=$(env -u LD_LIBRARY_PATH "$BUNDLE/ffmpeg/bin/ffmpeg" -hide_banner -nostdin -v error \
        -i "$BUNDLE/media/h264_bframes.mp4" -f null - 2>&1) || { log "ffmpeg smoke test: $out"; return 1; }
  # (outputs are read whole: grep -q would stop reading, and pipefail would fail the writer's SIGPIPE)
  out=$("$BUNDLE/ffmpeg/bin/ffmpeg" -hide_banner -hwaccels)
  [[ $out == *cuda* ]] || { log "no cuda hwaccel"; return 1; }
  out=$(ldd "$BUNDLE/ffmpeg/bin/ffmpeg")
  [[ $out == *"$BUNDLE/ffmpeg/bin/../lib/libavcodec"* ]] || { log "ffmpeg does not load the bundle's libavcodec"; return 1; }
}

download_wheels() {
  # Pure-Python wheels (any platform) for a build on the GPU machine, at the wheels' versions.
  local dir=$BUNDLE/wheels
  mkdir -p "$dir"
  log "downloading wheels: pyproject-metadata ${BUILD_PIP[*]:1}"
  "$PYTHON" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform any -d "$dir" pyproject-metadata "${BUILD_PIP[@]:1}" >&2
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
  local -A wanted=()
  mapfile -t names < <(media_names)
  for name in "${names[@]}"; do wanted[$name]=1; done
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
    [[ -n ${wanted[$name]:-} ]] || rm -f "$dir/$name" "$dir/$name.recipe.json"
  done
  check_media_is_current
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

make_jpeg_inputs() {
  # The nvJPEG check's JPEGs, by Pillow (libjpeg-turbo) in a venv of its own under $WORK.
  local venv=$WORK/jpeg-inputs
  [[ -x $venv/bin/python ]] || "$PYTHON" -m venv "$venv"
  "$venv/bin/python" -c 'import numpy, PIL' 2>/dev/null ||
    "$venv/bin/python" -m pip install -q --disable-pip-version-check numpy pillow >&2
  rm -rf "$BUNDLE/jpeg"
  "$venv/bin/python" -P "$REPO/tools/gpu/jpeg_check.py" --write-inputs "$BUNDLE/jpeg"
  log "JPEG inputs of tools/gpu/jpeg_check.py in $BUNDLE/jpeg ($(ls "$BUNDLE/jpeg" | wc -l) files)"
}

abi_tag() {   # cpython-312-x86_64-linux-gnu: the extension suffix without its dots and .so
  "$1" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX").strip(".").removesuffix(".so"))'
}

carry_builds() {
  # One install tree per CPython of PYTHONS, built against .gpu/ffmpeg (its headers and .pc
  # files, which are the prefix's) in that Python's own venv under $WORK/gpu-cp3N, then imported
  # with the system's FFmpeg out of the way (LD_LIBRARY_PATH=.gpu/ffmpeg/lib, as gpu_check.sh
  # runs it) and checked to have its kernels and driver loader.
  local minor python tag dest dir venv
  [[ -e $BUNDLE/ffmpeg/lib/pkgconfig/libavcodec.pc ]] || { log "no .gpu/ffmpeg: run without --build-only first"; return 1; }
  export PKG_CONFIG_LIBDIR=$BUNDLE/ffmpeg/lib/pkgconfig:$BUNDLE/ffnvcodec/lib/pkgconfig
  for minor in $PYTHONS; do
    python=$(find_python "$minor") || return 1
    tag=$(abi_tag "$python")
    dest=$BUNDLE/install/$tag dir=$WORK/gpu-cp${minor/./} venv=$WORK/gpu-cp${minor/./}/venv
    [[ -x $venv/bin/python ]] || "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check "${BUILD_PIP[@]}"
    log "building torchcodec for $tag into $dest (-Dcuda=enabled, with $python)"
    rm -rf "$dest"
    reusable_build_dir "$dir/build" -Dcuda=enabled
    PATH=$venv/bin:$PATH "$venv/bin/python" -m pip install -q --no-build-isolation --no-deps --no-cache-dir \
      --target "$dest" -Csetup-args=-Dcuda=enabled -Cbuild-dir="$dir/build" "$REPO" >&2
    # (run from $dest, not the checkout, whose torchcodec/ would be imported: 3.10 has no -P)
    (cd "$dest" && LD_LIBRARY_PATH=$BUNDLE/ffmpeg/lib "$venv/bin/python" -c '
import sys
import torchcodec
from torchcodec._cuda import _build_config as b
assert torchcodec.__file__.startswith(sys.argv[1]), torchcodec.__file__
assert b.CUDA_KERNELS and b.CUDA_DRIVER, "built without CUDA"
loaded = {line.split()[-1] for line in open("/proc/self/maps") if "libavcodec" in line}
assert loaded and all(p.startswith(sys.argv[2]) for p in loaded), loaded
print("carried build", sys.argv[1], "imports, FFmpeg", torchcodec.ffmpeg_version(), "from", sorted(loaded))' \
      "$dest" "$BUNDLE/ffmpeg/lib")
    git -C "$REPO" rev-parse HEAD >"$dest/.commit"
  done
}

main() {
  mkdir -p "$BUNDLE" "$WORK"
  toolchain_setup
  if ((BUILD_ONLY)); then carry_builds; return; fi
  system_packages
  check_cuda_toolkit "$CUDA"
  reuse_prefix_if_current
  build_libraries
  stage_ffnvcodec_headers
  build_ffmpeg_once
  make_media
  make_jpeg_inputs
  drop_unless_made_alike "$BUNDLE/ffmpeg/.recipe" "$(prefix_recipe)" "$BUNDLE/ffmpeg"
  [[ -x $BUNDLE/ffmpeg/bin/ffmpeg ]] || carry_ffmpeg
  [[ -f $BUNDLE/ffnvcodec/lib/pkgconfig/ffnvcodec.pc ]] || stage_ffnvcodec_headers "$BUNDLE/ffnvcodec"
  [[ -x $BUNDLE/pkgconf/bin/pkg-config ]] || carry_pkg_config
  check_foreign_libraries
  smoke_test_ffmpeg
  ls "$BUNDLE"/wheels/meson_python-*.whl >/dev/null 2>&1 || download_wheels
  carry_builds
  local kib
  kib=$(du -sk "$BUNDLE" | cut -f1)
  du -sh "$BUNDLE"/* >&2
  echo "bundle: $BUNDLE $((kib / 1024)) MiB (limit $MAX_MIB MiB)"
  ((kib <= MAX_MIB * 1024)) || { log "the bundle is over $MAX_MIB MiB"; return 1; }
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then main; fi
