# The project's one FFmpeg configuration, and how it is built (sourced by tools/build_wheels.sh and
# tools/gpu_bundle.sh; tests/test_gpu_check.py reads the arrays through ffmpeg_configure_args).
#
# A minimal, LGPL-only FFmpeg: the decoders, demuxers and parsers of common media, the encoders and
# muxers that torchcodec's encoders and the tests' reference commands use, the CUDA hwaccel
# (libcuda is opened at run time), dav1d for AV1, LAME and Opus for audio encoding, zlib (PNG,
# compressed MP4 and Matroska headers). No GPL or nonfree part is enabled, and nothing of the
# build machine is linked unless named here (--disable-autodetect). Needs: PREFIX (where the
# libraries below are installed; FFmpeg goes there too), JOBS, log(), and CC/CXX/AR/RANLIB from
# tools/wheels/toolchain.sh.

FF_DECODERS=(h264 hevc vp8 vp9 mpeg4 mpeg1video mpeg2video av1 libdav1d h263 vc1 wmv3 theora
             mjpeg png prores dnxhd
             aac aac_latm mp3 mp3float mp2 mp2float flac opus vorbis alac ac3 eac3 dca wmav2 'pcm_*'
             rawvideo
             h264_cuvid hevc_cuvid vp8_cuvid vp9_cuvid mpeg1_cuvid mpeg2_cuvid mpeg4_cuvid av1_cuvid)
FF_HWACCELS=(h264_nvdec hevc_nvdec vp8_nvdec vp9_nvdec mpeg1_nvdec mpeg2_nvdec mpeg4_nvdec av1_nvdec)
FF_DEMUXERS=(mov matroska avi asf mpegts mpegps ogg wav mp3 aac ac3 eac3 flac ivf h264 hevc m4v
             mpegvideo rawvideo nut)
FF_PARSERS=(h264 hevc vp8 vp9 av1 mpeg4video mpegvideo h263 vc1 mjpeg png dnxhd
            aac aac_latm mpegaudio flac opus vorbis ac3 dca)
FF_BSFS=(h264_mp4toannexb hevc_mp4toannexb mpeg4_unpack_bframes null vp9_superframe_split
         extract_extradata aac_adtstoasc)
FF_PROTOCOLS=(file pipe)
# Encoders and muxers: torchcodec's VideoEncoder/AudioEncoder (MPEG-4 part 2 and NVENC for video;
# AAC, FLAC, MP3 (LAME), Opus, ALAC, MP2, PCM for audio), and what the tests' reference commands
# write (raw frames and samples, stream copies into containers).
FF_ENCODERS=(rawvideo wrapped_avframe mpeg4 h264_nvenc hevc_nvenc
             aac flac alac mp2 libmp3lame libopus 'pcm_*')
FF_MUXERS=(rawvideo null pcm_f32le pcm_s16le wav mov mp4 ipod matroska webm nut avi mpegts ivf h264
           hevc m4v adts flac mp3 ogg opus)
# Filters: the CLI's own plumbing, auto-rotation, the tests' -vf chains, lavfi sources (the
# buffer sources and sinks are always built).
FF_FILTERS=(format aformat scale aresample null anull
            copy crop transpose hflip vflip rotate setparams trim atrim fps select setpts
            testsrc testsrc2 mandelbrot aevalsrc)
FF_INDEVS=(lavfi)
# Parts that exist only in some FFmpeg releases or need newer ffnvcodec headers: enabled where
# both the source and the headers in use have them (ffmpeg_optional_components), never required.
FF_OPTIONAL=(encoder:av1_nvenc)

ff_join() { local IFS=,; echo "$*"; }

ffmpeg_configure_args() {
  # The configure line, one argument per output line (without --cc and friends, see build_ffmpeg).
  printf '%s\n' \
    --prefix="$PREFIX" --disable-everything --disable-autodetect \
    --enable-shared --disable-static --enable-pic --disable-doc --disable-ffplay --disable-network \
    --disable-postproc --enable-avdevice --enable-avfilter --enable-swscale --enable-swresample \
    --enable-ffnvcodec --enable-nvdec --enable-cuvid --enable-nvenc --enable-libdav1d \
    --enable-libmp3lame --enable-libopus --enable-zlib \
    --enable-decoder="$(ff_join "${FF_DECODERS[@]}")" \
    --enable-hwaccel="$(ff_join "${FF_HWACCELS[@]}")" \
    --enable-demuxer="$(ff_join "${FF_DEMUXERS[@]}")" \
    --enable-parser="$(ff_join "${FF_PARSERS[@]}")" \
    --enable-bsf="$(ff_join "${FF_BSFS[@]}")" \
    --enable-protocol="$(ff_join "${FF_PROTOCOLS[@]}")" \
    --enable-encoder="$(ff_join "${FF_ENCODERS[@]}")" \
    --enable-muxer="$(ff_join "${FF_MUXERS[@]}")" \
    --enable-filter="$(ff_join "${FF_FILTERS[@]}")" \
    --enable-indev="$(ff_join "${FF_INDEVS[@]}")"
}

ffnvcodec_has() {
  # ffnvcodec_has SYMBOL: the ffnvcodec headers in $PREFIX declare SYMBOL (a type or constant)
  grep -rqw "$1" "$PREFIX/include/ffnvcodec/"
}

ffmpeg_optional_components() {
  # ffmpeg_optional_components SRC: "kind:name" of each FF_OPTIONAL part this source and these
  # headers support; each left out is logged with the reason.
  local src=$1 entry kind name listed
  for entry in "${FF_OPTIONAL[@]}"; do
    kind=${entry%%:*} name=${entry#*:}
    listed=$("$src/configure" "--list-${kind}s" | tr -s ' \t' '\n')
    if ! grep -qx "$name" <<<"$listed"; then
      log "left out $name ($kind): FFmpeg $(ffmpeg_source_version "$src") has no such $kind"
    elif [[ $name == av1_nvenc ]] && ! ffnvcodec_has NV_ENC_PIC_PARAMS_AV1; then
      log "left out $name ($kind): the ffnvcodec headers ($(ffnvcodec_version)) lack AV1 encoding (12.0 or newer has it)"
    else
      echo "$entry"
    fi
  done
}

ffnvcodec_version() { PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig pkg-config --modversion ffnvcodec 2>/dev/null || echo unknown; }
ffmpeg_source_version() { cat "$1/VERSION" 2>/dev/null || cat "$1/RELEASE"; }

check_configured_components() {
  # check_configured_components HEADER [kind:name...]: configure skips a component name it does not
  # know without failing, so every name listed above (wildcards aside) and every optional part
  # chosen must come out enabled (CONFIG_<NAME>_<KIND> 1).
  local header=$1 kind name names missing=() entry
  shift
  local -A lists=([DECODER]="${FF_DECODERS[*]}" [HWACCEL]="${FF_HWACCELS[*]}" [DEMUXER]="${FF_DEMUXERS[*]}"
                  [PARSER]="${FF_PARSERS[*]}" [BSF]="${FF_BSFS[*]}" [PROTOCOL]="${FF_PROTOCOLS[*]}"
                  [ENCODER]="${FF_ENCODERS[*]}" [MUXER]="${FF_MUXERS[*]}" [FILTER]="${FF_FILTERS[*]}"
                  [INDEV]="${FF_INDEVS[*]}")
  for entry in "$@"; do lists[${entry%%:*}]+=" ${entry#*:}"; done
  for kind in "${!lists[@]}"; do
    read -ra names <<<"${lists[$kind]}"     # (read does not expand the pcm_* patterns)
    for name in "${names[@]}"; do
      [[ $name == *'*'* ]] && continue
      grep -q "^#define CONFIG_${name^^}_${kind^^} 1" "$header" || missing+=("$name ($kind)")
    done
  done
  if ((${#missing[@]})); then log "configure did not enable: ${missing[*]}"; return 1; fi
}

build_ffmpeg() {
  # build_ffmpeg SRC BUILD: configure in BUILD, check, make, install into PREFIX.
  local src=$1 build=$2 optional=() entry args
  mkdir -p "$build"
  mapfile -t optional < <(ffmpeg_optional_components "$src")
  mapfile -t args < <(ffmpeg_configure_args)
  for entry in "${optional[@]}"; do args+=("--enable-${entry%%:*}=${entry#*:}"); done
  log "configuring FFmpeg $(ffmpeg_source_version "$src") in $build"
  (cd "$build" && PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig "$src/configure" "${args[@]}" \
     --cc="$CC" --cxx="$CXX" --ar="$AR" --ranlib="$RANLIB" --pkg-config=pkg-config \
     --extra-cflags="-I$PREFIX/include" --extra-ldflags="-L$PREFIX/lib" >configure.log 2>&1) || {
    tail -n 30 "$build/configure.log" >&2; tail -n 30 "$build/ffbuild/config.log" >&2; return 1; }
  # configure finds sysctl() by linking, but glibc 2.32 removed <sys/sysctl.h> from its headers
  # (the toolchain's headers are new, its symbol set is 2.28's): FFmpeg must not include it.
  sed -i 's/^#define HAVE_SYSCTL 1$/#define HAVE_SYSCTL 0/' "$build/config.h"
  check_configured_components "$build/config_components.h" "${optional[@]}"
  log "building FFmpeg (make -j$JOBS)"
  (cd "$build" && nice -n 10 make -j"$JOBS" >make.log 2>&1) || { tail -n 40 "$build/make.log" >&2; return 1; }
  (cd "$build" && make install >install.log 2>&1)
}

stage_ffnvcodec_headers() {
  # stage_ffnvcodec_headers [DEST]: ffnvcodec's headers (Debian's libffmpeg-nvenc-dev) and a
  # relocatable .pc into DEST (default PREFIX). The toolchain sees no system header, and the GPU
  # machine has none: what FFmpeg, torchcodec and the tests' CUDA probes build against is a copy.
  local dest=${1:-$PREFIX} version
  [[ -f $dest/lib/pkgconfig/ffnvcodec.pc ]] && { echo "ffnvcodec headers in $dest"; return 0; }
  [[ -f /usr/include/ffnvcodec/dynlink_loader.h ]] ||
    { log "ffnvcodec's headers are missing: apt-get install libffmpeg-nvenc-dev"; return 1; }
  version=$(env -u PKG_CONFIG_LIBDIR -u PKG_CONFIG_PATH pkg-config --modversion ffnvcodec)
  mkdir -p "$dest/include/ffnvcodec" "$dest/lib/pkgconfig"
  cp /usr/include/ffnvcodec/*.h "$dest/include/ffnvcodec/"
  cat >"$dest/lib/pkgconfig/ffnvcodec.pc" <<PC
prefix=\${pcfiledir}/../..
includedir=\${prefix}/include

Name: ffnvcodec
Description: FFmpeg version of Nvidia Codec SDK headers
Version: $version
Cflags: -I\${includedir}
PC
  echo "ffnvcodec $version headers into $dest"
}
