#!/usr/bin/env bash
# Coverage-guided fuzzing (atheris + libFuzzer) of one target of tools/fuzz/targets.py.
#
#   bash tools/fuzz.sh TARGET SECONDS [libFuzzer options...]   # e.g. bash tools/fuzz.sh video_bytes 600
#   bash tools/fuzz.sh all SECONDS                             # every target in turn (CI: 60 s each)
#   bash tools/fuzz.sh list
#
# First builds what it needs (tools/setup.sh with clang): .venv-fuzz holding atheris and a copy of
# the package built into build/fuzz/meson with -Dfuzz=true (coverage counters libFuzzer reads) and
# -Db_sanitize=address,undefined (memory errors and undefined behaviour stop the run instead of
# passing unseen); then the seed corpus (tools/fuzz/seeds.py: tiny clips of every codec and
# container). FUZZ_BUILD=0 skips the build step.
#
# Everything else lives in build/fuzz/: corpus/TARGET (inputs libFuzzer found interesting; kept
# between runs, so a long run continues where the last one stopped), crashes/TARGET (failing
# inputs, each minimised beside it as NAME.min). Exit status 1 when a target found a crash.
# A crash becomes a regression test: copy NAME.min to tests/regressions/ and add a test there.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.venv-fuzz
WORK=build/fuzz
PY="bash tools/fuzz/asan_run.sh $VENV/bin/python -P"

if [ "${FUZZ_BUILD:-1}" = 1 ]; then
  CC=clang VENV=$VENV BUILD_DIR=$WORK/meson EXTRA_APT=clang EXTRA_PIP="atheris==3.0.0" \
    MESON_ARGS="-Dfuzz=true -Db_sanitize=address,undefined -Dbuildtype=debugoptimized -Dcuda=disabled" \
    RUN_WITH="bash tools/fuzz/asan_run.sh" bash tools/setup.sh
fi
if [ "${1:-}" = list ]; then
  exec $PY tools/fuzz/run.py list
fi
if [ $# -lt 2 ]; then
  sed -n '2,8p' "$0" >&2
  exit 2
fi
target=$1 seconds=$2
shift 2
"$VENV/bin/python" -P tools/fuzz/run.py seeds "$WORK/seeds" >/dev/null
if [ "$target" = all ]; then
  targets=$($PY tools/fuzz/run.py list)
else
  targets=$target
fi

status=0
for t in $targets; do
  mkdir -p "$WORK/corpus/$t" "$WORK/crashes/$t"
  echo "== fuzzing $t for $seconds s (corpus: $(find "$WORK/corpus/$t" -type f | wc -l) inputs + $(find "$WORK/seeds/$t" -type f | wc -l) seeds)"
  # -timeout: an input running longer is a hang. -rss_limit_mb: ASan's shadow memory and Python
  # come to about 600 MB; more than 2.5 GB resident is a leak or an unbounded allocation.
  # -malloc_limit_mb: one allocation above 2.5 GB is a finding too, even if never touched: the
  # targets run under a 256 MB memory limit (tools/fuzz/targets.py), so the package must refuse
  # bigger requests before allocating, and size outputs from what it decodes, not from a header
  # (a few KB claiming days of audio once reserved gigabytes). 512 MB found one more such allocation,
  # libswresample's filter bank for a hostile pair of sample rates (755 MB), now sized and refused
  # beforehand (docs/reliability.md); lowering this again wants a run of every target with it.
  # -max_len: the largest seed is 10 KB; room to grow, small enough to stay fast.
  set +e
  $PY tools/fuzz/run.py fuzz "$t" "$WORK/corpus/$t" "$WORK/seeds/$t" \
    -max_total_time="$seconds" -timeout=30 -rss_limit_mb=2560 -malloc_limit_mb=2560 -max_len=20000 \
    -dict=tools/fuzz/media.dict -artifact_prefix="$WORK/crashes/$t/" -print_final_stats=1 "$@" \
    2>&1 | grep -v -e '^#[0-9]*[[:space:]]*\(NEW\|REDUCE\)' -e '^[[:space:]]*NEW_FUNC'
  rc=${PIPESTATUS[0]}
  set -e
  for crash in "$WORK/crashes/$t"/*; do
    [ -f "$crash" ] || continue
    case "$(basename "$crash")" in
      slow-unit-*) echo "   note: an input took over 10 s (not a failure; look at it): $crash"; continue ;;
      *.min|*.try) continue ;;
    esac
    [ -f "$crash.min" ] || $PY tools/fuzz/run.py minimize "$t" "$crash" "$crash.min" || true
    echo "!! $t crashed: $crash (minimised: $crash.min); replay: $PY tools/fuzz/run.py replay $t $crash.min"
    status=1
  done
  [ "$rc" -eq 0 ] || status=1
done
exit $status
