# The prefix ($WORK/prefix) that wheels and the GPU bundle are built against: the libraries of
# tools/wheels/libraries.sh, ffnvcodec's headers and FFmpeg, all built here for glibc 2.28.
# Sourced by tools/build_wheels.sh and tools/gpu_bundle.sh after the other tools/wheels parts.

system_packages() {
  # The system packages a build needs (apt-get, with sudo when not root): nasm (the x86 SIMD of
  # FFmpeg, dav1d, libjpeg-turbo and LAME), pkg-config, dpkg-dev (apt-get source), ffnvcodec's
  # headers, the proof's references (the ffmpeg CLI, libjpeg-turbo's cjpeg/djpeg), unshare
  # (util-linux) and venv.
  local wanted=(nasm pkg-config dpkg-dev libffmpeg-nvenc-dev ffmpeg libjpeg-turbo-progs util-linux
                python3-venv) missing=() package sudo=""
  for package in "${wanted[@]}"; do
    dpkg-query -W -f '${Status}' "$package" 2>/dev/null | grep -q 'ok installed' || missing+=("$package")
  done
  ((${#missing[@]})) || { echo "present: ${wanted[*]}"; return 0; }
  [[ $(id -u) -ne 0 ]] && sudo=sudo
  log "installing: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}

check_cuda_toolkit() {   # check_cuda_toolkit enabled|disabled: nvcc is there when the kernels are wanted
  [[ $1 == disabled ]] && { echo "CUDA kernels: not built (--cuda disabled)"; return 0; }
  command -v nvcc >/dev/null || {
    log "nvcc is not on PATH: the build embeds the CUDA kernels (-Dcuda=enabled). Put the CUDA toolkit's" \
        "bin folder on PATH (no GPU is needed to build), or build without the kernels (--cuda disabled)."
    return 1; }
  echo "CUDA kernels: $(command -v nvcc) ($(nvcc --version | grep -o 'release [0-9.]*'))"
}

drop_unless_made_alike() {
  # drop_unless_made_alike STAMP KEY PATH...: a work folder outlives a run, and what it holds is
  # reused only when made the same way: where STAMP (written by whoever makes PATH) does not hold
  # KEY, the PATHs and STAMP are removed, to be made again.
  local stamp=$1 key=$2
  shift 2
  [[ $(cat "$stamp" 2>/dev/null) == "$key" ]] && return 0
  local path
  for path in "$@"; do
    [[ -e $path ]] && { log "$path was made by other scripts, from another checkout or with other settings: removing it"; break; }
  done
  rm -rf "$@" "$stamp"
}

prefix_recipe() {   # the hash of the scripts the prefix is made by: a new one means a new prefix
  cat "$REPO"/tools/wheels/{toolchain,sources,libraries,ffmpeg,prefix}.sh | sha256sum | cut -c1-16
}

reuse_prefix_if_current() {   # the prefix and FFmpeg's build folder, kept while the scripts are the same
  drop_unless_made_alike "$PREFIX/.recipe" "$(prefix_recipe)" "$PREFIX" "$WORK/ffmpeg-build"
  mkdir -p "$PREFIX"
  prefix_recipe >"$PREFIX/.recipe"
}

build_ffmpeg_once() {
  # FFmpeg from Debian's source of the system's own version where there is one (the tests here
  # compare with that version's CLI), else the newest Debian 12 has.
  [[ -e $PREFIX/lib/pkgconfig/libavcodec.pc ]] && { echo "FFmpeg: reusing $PREFIX's"; return 0; }
  build_ffmpeg "$(fetch_source ffmpeg "$(dpkg-query -W -f '${Version}' libavcodec59 2>/dev/null || true)")" \
    "$WORK/ffmpeg-build"
}
