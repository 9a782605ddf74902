# The libraries a wheel bundles, each built from Debian 12's source package with the toolchain of
# tools/wheels/toolchain.sh (glibc 2.28 symbols) into PREFIX, shared, without their programs,
# tests or documentation. Sourced by tools/build_wheels.sh; needs PREFIX, JOBS, log(), CC, CXX, AR,
# RANLIB, fetch_source (tools/wheels/sources.sh), meson and ninja on PATH.
#
# Left out: libavif (AVIF images): Debian's mirror here serves no libavif source, so the wheel's
# decode_avif raises an error naming libavif (a build from a checkout with libavif-dev has it).

# name  Debian source package  a file that says it is installed  SPDX licence  licence files
LIBRARIES=(
  "zlib zlib lib/libz.so Zlib LICENSE"
  "libpng libpng1.6 lib/libpng16.so libpng-2.0 LICENSE"
  "libjpeg-turbo libjpeg-turbo lib/libturbojpeg.so IJG+BSD-3-Clause+Zlib LICENSE.md,README.ijg"
  "libwebp libwebp lib/libwebpdemux.so BSD-3-Clause COPYING"
  "giflib giflib lib/libgif.so MIT COPYING"
  "dav1d dav1d lib/libdav1d.so BSD-2-Clause COPYING"
  "libde265 libde265 lib/libde265.so LGPL-3.0-or-later COPYING"
  "libheif libheif lib/libheif.so LGPL-3.0-or-later COPYING"
  "lame lame lib/libmp3lame.so LGPL-2.0-or-later COPYING"
  "opus opus lib/libopus.so BSD-3-Clause COPYING"
)

cmake_install() {   # cmake_install SRC [cmake args...]: configure, build and install a CMake project
  local src=$1 build
  shift
  build=$src/_build
  rm -rf "$build"
  # (an absolute libdir: libjpeg-turbo resolves a relative one against the current folder)
  (cd "$src" && cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$PREFIX" \
    -DCMAKE_INSTALL_LIBDIR="$PREFIX/lib" -DCMAKE_PREFIX_PATH="$PREFIX" -DCMAKE_C_COMPILER="$CC" \
    -DCMAKE_CXX_COMPILER="$CXX" -DCMAKE_AR="$AR" -DCMAKE_RANLIB="$RANLIB" \
    -DBUILD_SHARED_LIBS=ON -DBUILD_TESTING=OFF "$@" >"$src/_cmake.log" 2>&1) ||
    { tail -n 30 "$src/_cmake.log" >&2; return 1; }
  ninja -C "$build" -j "$JOBS" install >"$src/_build.log" 2>&1 || { tail -n 30 "$src/_build.log" >&2; return 1; }
}

autotools_install() {   # autotools_install SRC [configure args...]
  local src=$1
  shift
  (cd "$src" && ./configure --prefix="$PREFIX" --libdir="$PREFIX/lib" --enable-shared --disable-static \
     CC="$CC" CXX="$CXX" AR="$AR" RANLIB="$RANLIB" CPPFLAGS="-I$PREFIX/include" LDFLAGS="-L$PREFIX/lib" \
     "$@" >_configure.log 2>&1) || { tail -n 30 "$src/_configure.log" "$src/config.log" >&2; return 1; }
  (cd "$src" && make -j"$JOBS" >_build.log 2>&1 && make install >_install.log 2>&1) ||
    { tail -n 30 "$src/_build.log" >&2; return 1; }
}

build_zlib() {
  (cd "$1" && CC="$CC" AR="$AR" RANLIB="$RANLIB" CFLAGS="-O2 -fPIC" ./configure --prefix="$PREFIX" \
     --libdir="$PREFIX/lib" --shared >_configure.log 2>&1 && make -j"$JOBS" >_build.log 2>&1 &&
   make install >_install.log 2>&1) || { tail -n 30 "$1/_configure.log" "$1/_build.log" >&2; return 1; }
  rm -f "$PREFIX/lib/libz.a"
}

build_libpng() {
  cmake_install "$1" -DPNG_SHARED=ON -DPNG_STATIC=OFF -DPNG_TESTS=OFF -DPNG_EXECUTABLES=OFF \
    -DZLIB_ROOT="$PREFIX" -DPNG_HARDWARE_OPTIMIZATIONS=ON
}

build_libjpeg-turbo() {
  cmake_install "$1" -DENABLE_STATIC=OFF -DENABLE_SHARED=ON -DWITH_TURBOJPEG=ON -DWITH_JAVA=OFF \
    -DREQUIRE_SIMD=ON
}

build_libwebp() {
  autotools_install "$1" --enable-libwebpdemux --disable-libwebpmux --disable-libwebpdecoder \
    --disable-gl --disable-sdl --disable-png --disable-jpeg --disable-tiff --disable-gif --disable-wic
}

build_giflib() {
  # giflib has a plain Makefile: its library, header and links, nothing else (its tools and
  # manual pages need xmlto).
  local src=$1 version
  make -C "$src" -j"$JOBS" CC="$CC" AR="$AR" OFLAGS="-O2" libgif.so >"$src/_build.log" 2>&1 ||
    { tail -n 30 "$src/_build.log" >&2; return 1; }
  version=$(awk -F= '/^LIBMAJOR=/ {m=$2} /^LIBMINOR=/ {n=$2} /^LIBPOINT=/ {p=$2} END {print m "." n "." p}' "$src/Makefile")
  install -m 644 "$src/gif_lib.h" "$PREFIX/include/"
  install -m 755 "$src/libgif.so" "$PREFIX/lib/libgif.so.$version"
  ln -sf "libgif.so.$version" "$PREFIX/lib/libgif.so.${version%%.*}"
  ln -sf "libgif.so.${version%%.*}" "$PREFIX/lib/libgif.so"
}

build_dav1d() {
  local src=$1
  rm -rf "$src/_build"
  (cd "$src" && CC="$CC" AR="$AR" meson setup _build --prefix="$PREFIX" --libdir=lib --buildtype=release \
     -Ddefault_library=shared -Denable_tools=false -Denable_tests=false >_configure.log 2>&1 &&
   ninja -C _build -j "$JOBS" install >_build.log 2>&1) || { tail -n 30 "$src/_configure.log" "$src/_build.log" >&2; return 1; }
}

build_libde265() {
  cmake_install "$1" -DENABLE_SDL=OFF -DENABLE_DECODER=OFF -DENABLE_ENCODER=OFF
}

build_libheif() {
  # HEVC through libde265, nothing else: no x265 (GPL), no AV1 or JPEG plug-ins, no plug-in loading.
  cmake_install "$1" -DWITH_LIBDE265=ON -DWITH_X265=OFF -DWITH_AOM_DECODER=OFF -DWITH_AOM_ENCODER=OFF \
    -DWITH_DAV1D=OFF -DWITH_RAV1E=OFF -DWITH_SvtEnc=OFF -DWITH_JPEG_DECODER=OFF -DWITH_JPEG_ENCODER=OFF \
    -DWITH_OpenJPEG_DECODER=OFF -DWITH_OpenJPEG_ENCODER=OFF -DWITH_EXAMPLES=OFF -DWITH_GDK_PIXBUF=OFF \
    -DENABLE_PLUGIN_LOADING=OFF -DWITH_FUZZERS=OFF
}

build_lame() {
  autotools_install "$1" --disable-frontend --disable-decoder --disable-gtktest --disable-analyzer-hooks \
    --enable-nasm
}

build_opus() {
  autotools_install "$1" --disable-doc --disable-extra-programs
}

build_libraries() {
  # Each library once: a library whose file is in PREFIX is kept (delete PREFIX to rebuild).
  local entry name package marker src began
  for entry in "${LIBRARIES[@]}"; do
    read -r name package marker _ <<<"$entry"
    [[ -e $PREFIX/$marker ]] && continue
    src=$(fetch_source "$package")
    began=$SECONDS
    log "building $name from $(basename "$src")"
    "build_$name" "$src" || { log "building $name failed"; return 1; }
    [[ -e $PREFIX/$marker ]] || { log "$name built, but $PREFIX/$marker is missing"; return 1; }
    log "$name: $((SECONDS - began)) s"
  done
}
