# One wheel: built for one Python, repaired to manylinux_2_28, its bundled libraries' licences
# added, then proved. Sourced by tools/build_wheels.sh; needs REPO, WORK, PREFIX, OUT, CUDA, log()
# and the toolchain's environment (tools/wheels/toolchain.sh).

# (pip first: an older one, such as pyenv's 3.10's, has no -C for meson-python's settings)
BUILD_PIP=("pip==25.3" "meson-python==0.22.1" "meson==1.12.1" "ninja==1.13.2" "Cython==3.3.1")
PLATFORM=manylinux_2_28_x86_64
# Every image codec the libraries provide is required (a missing one fails the build); AVIF's
# library is not among them (tools/wheels/libraries.sh says why).
CODEC_OPTIONS=(-Djpeg=enabled -Dpng=enabled -Dwebp=enabled -Dgif=enabled -Dheif=enabled -Davif=disabled)

reusable_build_dir() {
  # reusable_build_dir DIR SETTING...: keeps the meson build folder DIR only when it was set up
  # from this checkout with the same settings. meson-python reconfigures a folder it finds, and
  # meson keeps the libraries it found there: a folder set up from another checkout or against
  # another FFmpeg links against paths that may be gone.
  local dir=$1 settings
  shift
  settings=$(printf '%s\n' "$REPO" "PKG_CONFIG_LIBDIR=${PKG_CONFIG_LIBDIR-}" "PKG_CONFIG_PATH=${PKG_CONFIG_PATH-}" "CC=${CC-}" "$@")
  drop_unless_made_alike "$dir.settings" "$settings" "$dir"
  printf '%s\n' "$settings" >"$dir.settings"
}

build_wheel() {
  # build_wheel PYTHON DIR: venv, meson build folder and wheels of this Python all under DIR (so
  # that no build of another Python is reused); the wheel's path is written to DIR/wheel.
  local python=$1 dir=$2 venv=$2/venv raw repaired option args=()
  [[ -x $venv/bin/python ]] || "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "${BUILD_PIP[@]}"
  rm -rf "$dir/raw" "$dir/repaired" && mkdir -p "$dir/raw" "$dir/repaired"
  for option in "-Dcuda=$CUDA" "${CODEC_OPTIONS[@]}"; do args+=("-Csetup-args=$option"); done
  reusable_build_dir "$dir/build" "${args[@]}"
  log "building the wheel for $("$python" --version) in $dir/build"
  PATH=$venv/bin:$PATH "$venv/bin/python" -m pip wheel -q --no-deps --no-build-isolation -w "$dir/raw" \
    -Cbuild-dir="$dir/build" "${args[@]}" "$REPO"
  raw=$(ls "$dir"/raw/torchcodec_cython-*.whl)
  # auditwheel refuses the tag when anything inside needs newer symbols than glibc 2.28 has: the
  # tag is earned, not written.
  LD_LIBRARY_PATH=$PREFIX/lib auditwheel repair --plat "$PLATFORM" --only-plat -w "$dir/repaired" "$raw"
  repaired=$(ls "$dir"/repaired/torchcodec_cython-*.whl)
  add_licences "$repaired" "$OUT"
  echo "$OUT/$(basename "$repaired")" >"$dir/wheel"
}

add_licences() {
  # add_licences WHEEL DEST: the wheel again, in DEST, with .dist-info/licenses/bundled/ holding
  # each bundled library's licence and BUNDLED.md (what, which version, which licence, which
  # Debian source package: where to get the corresponding source).
  local wheel=$1 dest=$2 unpacked entry name package marker spdx files file src info folder
  unpacked=$(mktemp -d)
  wheel unpack -d "$unpacked" "$wheel" >/dev/null
  folder=$(ls -d "$unpacked"/*/)
  info=$(ls -d "$folder"*.dist-info)/licenses/bundled
  mkdir -p "$info"
  {
    echo "# Libraries bundled in this wheel (torchcodec_cython.libs/)"
    echo
    echo "Each is built from the Debian 12 source package named, unmodified apart from Debian's own"
    echo "patches, as a shared library (replaceable, as the LGPL asks). No GPL or nonfree part is included."
    echo
    echo "| library | version | licence | Debian source package |"
    echo "| --- | --- | --- | --- |"
    for entry in "${LIBRARIES[@]}" "ffmpeg ffmpeg lib/libavcodec.so LGPL-2.1-or-later COPYING.LGPLv2.1,LICENSE.md"; do
      read -r name package marker spdx files <<<"$entry"
      src=$(cat "$SOURCES_DIR/.$package")
      echo "| $name | $(basename "$src" | sed "s/^$package-//") | $spdx | $package |"
      for file in ${files//,/ }; do cp "$src/$file" "$info/$name-$file"; done
    done
  } >"$info/BUNDLED.md"
  grep -q '^#define CONFIG_GPL 0' "$WORK/ffmpeg-build/config.h" && grep -q '^#define CONFIG_NONFREE 0' "$WORK/ffmpeg-build/config.h" ||
    { log "FFmpeg was configured with GPL or nonfree parts: refusing to bundle it"; return 1; }
  wheel pack -d "$dest" "$folder" >/dev/null
  rm -rf "$unpacked"
}

describe_wheels() {
  # describe_wheels WHEEL...: tag, size, bundled libraries and their licences, auditwheel's verdict
  local wheel
  for wheel in "$@"; do
    echo "$(basename "$wheel")  $(du -h "$wheel" | cut -f1)"
    python3 - "$wheel" <<'PY'
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
libs = sorted(n.split("/")[-1] for n in names if ".libs/" in n)
print("  bundles:", ", ".join(libs))
table = next(n for n in names if n.endswith("bundled/BUNDLED.md"))
rows = [line for line in zipfile.ZipFile(sys.argv[1]).read(table).decode().splitlines() if line.startswith("| ") and "---" not in line][1:]
print("  licences:", "; ".join(" ".join(cell.strip() for cell in row.strip("|").split("|")[:3]) for row in rows))
PY
  done
  [[ $# -gt 0 ]] && { echo; echo "auditwheel show $(basename "$1"):"; auditwheel show "$1"; }
}

prove_wheel() {
  # prove_wheel PYTHON WHEEL DIR: a fresh venv installs the wheel; the references are made with
  # the system's tools; then tools/wheels/proof.py checks the wheel with the system's FFmpeg,
  # image and codec libraries hidden (each bind-mounted over by an empty file, in a private
  # mount namespace, so the system is untouched).
  local python=$1 wheel=$2 dir=$3 hidden
  rm -rf "$dir" && mkdir -p "$dir"
  "$python" -m venv "$dir/venv"
  "$dir/venv/bin/python" -m pip install -q --disable-pip-version-check "$wheel" numpy
  "$dir/venv/bin/python" -I "$REPO/tools/wheels/proof.py" references "$dir"   # (-I: 3.10 has no -P)
  mapfile -t hidden < <(ls /usr/lib/x86_64-linux-gnu/lib{avformat,avcodec,avutil,avfilter,avdevice,swscale,swresample,postproc,dav1d,turbojpeg,jpeg,png16,webp,webpdemux,webpmux,sharpyuv,gif,avif,heif,de265,mp3lame,opus,vpx,x264,x265,aom}.so* 2>/dev/null)
  : >"$dir/empty"
  # shellcheck disable=SC2016  # expanded by the inner shell
  unshare -m bash -euo pipefail -c '
    dir=$1; shift
    for f in "$@"; do mount --bind "$dir/empty" "$f"; done
    echo "   hidden: $# system libraries (FFmpeg, image and codec libraries)"
    "$dir/venv/bin/python" -I "$0" check "$dir"
    "$dir/venv/bin/torchcodec" info | sed "s/^/   | /"
  ' "$REPO/tools/wheels/proof.py" "$dir" "${hidden[@]}"
}
