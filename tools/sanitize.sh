#!/usr/bin/env bash
# The test suite and the fuzz corpus on a build with AddressSanitizer and UndefinedBehaviorSanitizer.
#
#   bash tools/sanitize.sh                          # every test, then the corpus
#   bash tools/sanitize.sh tests/test_wav.py -x     # pytest arguments instead of the whole suite
#   SANITIZE_CORPUS=0 bash tools/sanitize.sh ...    # the tests only
#
# Builds (tools/setup.sh, with clang) a copy of the package into build/sanitize/meson with
# -Db_sanitize=address,undefined, installed in .venv-sanitize; SANITIZE_BUILD=0 skips that step.
# Python is not instrumented, so tools/fuzz/asan_run.sh preloads the ASan runtime and writes every
# report, also from child processes, into build/sanitize/reports/. The corpus is what the fuzz
# targets replay (tools/fuzz/run.py replay): their seeds, the inputs tools/fuzz.sh has collected in
# build/fuzz/corpus/, and tests/regressions/.
#
# Succeeds only when the tests pass, no corpus input escapes its target, and there are zero
# sanitizer reports. Timings: docs/reliability.md (the whole suite: about 7 min of CPU).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.venv-sanitize
WORK=build/sanitize
export TORCHCODEC_MEDIA_DIR=${TORCHCODEC_MEDIA_DIR:-$PWD/media-cache}

if [ "${SANITIZE_BUILD:-1}" = 1 ]; then
  CC=clang VENV=$VENV BUILD_DIR=$WORK/meson EXTRA_APT=clang \
    MESON_ARGS="-Db_sanitize=address,undefined -Dbuildtype=debugoptimized" \
    RUN_WITH="bash tools/fuzz/asan_run.sh" bash tools/setup.sh
fi
runtime=$(clang -print-file-name=libclang_rt.asan-x86_64.so)
if [ ! -f "$runtime" ]; then        # clang's runtimes are a separate package where recommends are off
  major=$(clang -dumpversion | cut -d. -f1)
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "libclang-rt-$major-dev" >/dev/null
fi
"$VENV/bin/python" tools/make_media.py >/dev/null
"$VENV/bin/python" -P tools/fuzz/run.py seeds build/fuzz/seeds >/dev/null

reports=$WORK/reports
rm -rf "$reports"
mkdir -p "$reports"
run() { SANITIZER_LOG_DIR=$reports bash tools/fuzz/asan_run.sh "$VENV/bin/python" -P "$@"; }

# A replay that died (a sanitizer report, a signal) leaves the input it was running named in
# $WORK/replaying: kept in $WORK/crashes/ and printed in base64, so that a run on another machine
# (CI) can be reproduced from its log alone (base64 -d > input; tools/fuzz/run.py replay TARGET input).
keep_replayed_input() {
  local input
  input=$(cat "$WORK/replaying" 2>/dev/null) || return 0
  [ -f "$input" ] || return 0
  mkdir -p "$WORK/crashes"
  cp "$input" "$WORK/crashes/$1-$(basename "$input")"
  echo "!! $1 stopped on $input ($(stat -c %s "$input") bytes), kept in $WORK/crashes/; base64:"
  base64 -w 100 "$input" | head -n 200
}

status=0
start=$SECONDS
echo "== tests under ASan + UBSan"
run -m pytest "${@:-tests}" -q -p no:cacheprovider || status=1
echo "== tests: $((SECONDS - start)) s"
if [ "${SANITIZE_CORPUS:-1}" = 1 ]; then
  start=$SECONDS
  echo "== fuzz corpus under ASan + UBSan"
  for target in $(run tools/fuzz/run.py list); do
    paths=(build/fuzz/seeds/"$target")
    [ -d build/fuzz/corpus/"$target" ] && paths+=(build/fuzz/corpus/"$target")
    compgen -G "tests/regressions/$target-*" >/dev/null && paths+=(tests/regressions/"$target"-*)
    FUZZ_REPLAY_TRACE=$WORK/replaying run tools/fuzz/run.py replay "$target" "${paths[@]}" || {
      status=1
      keep_replayed_input "$target"
    }
  done
  echo "== corpus: $((SECONDS - start)) s"
fi

count=$(find "$reports" -type f | wc -l)
if [ "$count" -ne 0 ]; then
  echo "!! $count sanitizer report file(s) in $reports:"
  grep -h "SUMMARY:" "$reports"/* | sort | uniq -c
  for report in "$reports"/*; do      # each report's first lines: the error and its stack
    echo "-- $report"
    head -n 60 "$report"
  done
  status=1
else
  echo "== zero sanitizer reports"
fi
exit $status
