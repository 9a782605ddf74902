# Source packages from Debian 12 (bookworm): the only source of third-party code a build here may
# use (no other download). Sourced by tools/build_wheels.sh; needs WORK and log().
#
# apt-get source with a private sources list and private lists under $WORK/apt: the system's own
# apt configuration is left alone, and no deb-src line needs to be enabled.

SOURCES_DIR=${SOURCES_DIR:-$WORK/src}

apt_source_opts() {
  local dir=$WORK/apt
  printf '%s\n' -o "Dir::Etc::SourceList=$dir/sources.list" -o "Dir::Etc::SourceParts=/dev/null" \
    -o "Dir::State::Lists=$dir/lists" -o "Dir::Cache::pkgcache=" -o "Dir::Cache::srcpkgcache="
}

apt_source_update() {
  local dir=$WORK/apt opts
  [[ -f $dir/updated ]] && return 0
  mkdir -p "$dir/lists/partial"
  cat >"$dir/sources.list" <<'LIST'
deb-src http://deb.debian.org/debian bookworm main
deb-src http://deb.debian.org/debian bookworm-updates main
deb-src http://deb.debian.org/debian-security bookworm-security main
LIST
  mapfile -t opts < <(apt_source_opts)
  log "reading Debian 12's source package lists"
  apt-get "${opts[@]}" update -q >"$dir/update.log" 2>&1 || { cat "$dir/update.log" >&2; return 1; }
  touch "$dir/updated"
}

fetch_source() {
  # fetch_source PACKAGE [PREFERRED_VERSION]: unpack the source package into $SOURCES_DIR (once)
  # and print its folder. Versions are tried newest first, PREFERRED_VERSION before all: a
  # version whose files a mirror lacks (a security update not mirrored) gives way to the next.
  local package=$1 preferred=${2:-} opts versions version folder
  mkdir -p "$SOURCES_DIR"
  folder=$(cat "$SOURCES_DIR/.$package" 2>/dev/null) && [[ -d $folder ]] && { echo "$folder"; return 0; }
  apt_source_update
  mapfile -t opts < <(apt_source_opts)
  mapfile -t versions < <({ [[ -n $preferred ]] && echo "$preferred"
                            apt-cache "${opts[@]}" showsrc "$package" | awk '/^Version:/ {print $2}' | sort -Vr; } | awk '!seen[$0]++')
  ((${#versions[@]})) || { log "Debian 12 has no source package $package"; return 1; }
  for version in "${versions[@]}"; do
    rm -rf "$SOURCES_DIR/.get" && mkdir -p "$SOURCES_DIR/.get"
    if (cd "$SOURCES_DIR/.get" && apt-get "${opts[@]}" source -q "$package=$version" >../.get.log 2>&1); then
      folder=$(find "$SOURCES_DIR/.get" -mindepth 1 -maxdepth 1 -type d | head -n1)
      rm -rf "$SOURCES_DIR/${folder##*/}"
      mv "$folder" "$SOURCES_DIR/"
      folder=$SOURCES_DIR/${folder##*/}
      echo "$folder" >"$SOURCES_DIR/.$package"
      log "source: $package $version"
      echo "$folder"
      return 0
    fi
    log "source: $package $version could not be fetched ($(grep -m1 -o 'Failed to fetch.*' "$SOURCES_DIR/.get.log" || tail -n1 "$SOURCES_DIR/.get.log"))"
  done
  return 1
}
