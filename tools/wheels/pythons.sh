# Finding a CPython of a given minor version (3.10 ... 3.13) to build a wheel with. Sourced by
# tools/build_wheels.sh and tools/gpu_bundle.sh; needs log().
#
# Looked for, in order: PYTHON_<MAJOR>_<MINOR> (e.g. PYTHON_3_12=/opt/py312/bin/python3.12),
# python3.N on PATH, pyenv's versions (the newest 3.N.x), uv's managed Pythons. The one found must
# be that version and have venv and the Python headers (Python.h): the build needs them.

python_candidates() {   # python_candidates 3.N: possible interpreters, best first
  local minor=$1 override root
  override=PYTHON_${minor//./_}
  [[ -n ${!override:-} ]] && echo "${!override}"
  command -v "python$minor" 2>/dev/null
  root=$(pyenv root 2>/dev/null || echo "${PYENV_ROOT:-$HOME/.pyenv}")
  ls -d "$root"/versions/"$minor".*/bin/"python$minor" 2>/dev/null | sort -Vr
  command -v uv >/dev/null && uv python find "$minor" 2>/dev/null
  return 0
}

python_is_usable() {   # python_is_usable PATH 3.N
  [[ -x $1 ]] && "$1" - "$2" <<'PY' 2>/dev/null
import os, sys, sysconfig, venv
want = tuple(int(n) for n in sys.argv[1].split("."))
ok = sys.version_info[:2] == want and sys.implementation.name == "cpython"
ok = ok and os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h"))
sys.exit(0 if ok else 1)
PY
}

find_python() {   # find_python 3.N: prints the interpreter, or fails saying how to get one
  local minor=$1 candidate
  while read -r candidate; do
    [[ -n $candidate ]] && python_is_usable "$candidate" "$minor" && { echo "$candidate"; return 0; }
  done < <(python_candidates "$minor")
  log "no usable CPython $minor (with venv and Python.h) found: looked at \$PYTHON_${minor//./_}," \
      "python$minor on PATH, pyenv's versions ($(pyenv root 2>/dev/null || echo "${PYENV_ROOT:-$HOME/.pyenv}")/versions)" \
      "and uv's Pythons. Install one (pyenv install $minor, uv python install $minor, or Debian's" \
      "python$minor-dev and python$minor-venv where available) or name it: PYTHON_${minor//./_}=/path/to/python$minor"
  return 1
}
