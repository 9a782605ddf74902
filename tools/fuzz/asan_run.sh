#!/usr/bin/env bash
# Run a Python of a sanitizer build (tools/sanitize.sh, tools/fuzz.sh) with the ASan runtime preloaded.
#
#   bash tools/fuzz/asan_run.sh VENV/bin/python [arguments...]
#
# The extension modules are built with -fsanitize=address,undefined, but Python itself is not: the
# ASan runtime must be the first library loaded, hence LD_PRELOAD. Where atheris is installed in
# that Python (the fuzzing venv), its asan_with_fuzzer.so is used: the same runtime with libFuzzer
# linked in, so that the coverage counters of -Dfuzz=true reach libFuzzer rather than ASan's weak
# stand-ins. Otherwise clang's own runtime (clang -print-file-name). It includes UBSan's handlers.
#
# Options (each can be overridden from the environment):
#   detect_leaks=0              CPython keeps its interned objects and caches until exit, by design;
#                               LeakSanitizer would report them (not our allocations) at every exit.
#   allocator_may_return_null=1 an impossible allocation returns NULL (as glibc does), so that it
#                               surfaces as MemoryError instead of aborting the interpreter.
#   log_path                    with SANITIZER_LOG_DIR set (tools/sanitize.sh): every report, also from
#                               child processes, lands in SANITIZER_LOG_DIR/{asan,ubsan}.PID, which the
#                               caller checks; UBSan then goes on after a report, to list them all.
#                               Without it (fuzzing), reports go to stderr and the first UBSan report
#                               stops the process, so that libFuzzer records the input as a crash.
set -euo pipefail
python=$1
runtime=${ASAN_RUNTIME:-}
if [ -z "$runtime" ]; then
  atheris_dir=$("$python" -c "import importlib.util, os; s = importlib.util.find_spec('atheris'); print(os.path.dirname(os.path.dirname(s.origin)) if s else '')")
  if [ -n "$atheris_dir" ] && [ -f "$atheris_dir/asan_with_fuzzer.so" ]; then
    runtime=$atheris_dir/asan_with_fuzzer.so
  else
    runtime=$(clang -print-file-name=libclang_rt.asan-x86_64.so)
  fi
fi
if [ ! -f "$runtime" ]; then
  echo "asan_run.sh: ASan runtime $runtime not found (apt-get install clang libclang-rt-14-dev)" >&2
  exit 2
fi
export LD_PRELOAD="$runtime${LD_PRELOAD:+:$LD_PRELOAD}"
options="detect_leaks=0:allocator_may_return_null=1"
ubsan_options="print_stacktrace=1:report_error_type=1"
if [ -n "${SANITIZER_LOG_DIR:-}" ]; then
  mkdir -p "$SANITIZER_LOG_DIR"
  SANITIZER_LOG_DIR=$(cd "$SANITIZER_LOG_DIR" && pwd)
  options+=":log_path=$SANITIZER_LOG_DIR/asan"
  ubsan_options+=":log_path=$SANITIZER_LOG_DIR/ubsan:halt_on_error=0"
else
  ubsan_options+=":halt_on_error=1"
fi
export ASAN_OPTIONS=${ASAN_OPTIONS:-$options}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-$ubsan_options}
exec "$@"
