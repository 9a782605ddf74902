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
    run tools/fuzz/run.py replay "$target" "${paths[@]}" || status=1
  done
  echo "== corpus: $((SECONDS - start)) s"
fi

count=$(find "$reports" -type f | wc -l)
if [ "$count" -ne 0 ]; then
  echo "!! $count sanitizer report file(s) in $reports:"
  grep -h "SUMMARY:" "$reports"/* | sort | uniq -c
  status=1
else
  echo "== zero sanitizer reports"
fi
exit $status
