"""Run the fuzz targets of tools/fuzz/targets.py: under atheris, over files, or to shrink a crash.

    python -P tools/fuzz/run.py list
    python -P tools/fuzz/run.py seeds [FOLDER]                      # seed folders, one per target
    python -P tools/fuzz/run.py fuzz TARGET [libFuzzer arguments]   # atheris (tools/fuzz.sh sets it up)
    python -P tools/fuzz/run.py replay TARGET PATH...               # each file (or folder's files) once
    python -P tools/fuzz/run.py minimize TARGET CRASH [OUT]         # the smallest input that still fails

``fuzz`` and the native half of ``minimize`` need the instrumented build and its runtime
preloaded: run them through tools/fuzz.sh, or ``bash tools/fuzz/asan_run.sh .venv-fuzz/bin/python -P ...``.
``replay`` needs neither: it is how the sanitizer build (tools/sanitize.sh) and the regression
tests go over a corpus. It prints one line per input that escapes and exits 1 if any did.
"""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import time
import traceback

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import seeds  # noqa: E402  (no torchcodec import: safe before atheris instruments it)


def _targets():
    import targets
    targets.set_mapped_videos([seeds.media()[name] for name in seeds.MAPPED_VIDEOS])
    return targets


def _inputs(paths: list[str]) -> list[pathlib.Path]:
    files: list[pathlib.Path] = []
    for path in map(pathlib.Path, paths):
        files += sorted(p for p in path.iterdir() if p.is_file()) if path.is_dir() else [path]
    return files


def fuzz(target: str, libfuzzer_args: list[str]) -> None:
    import atheris
    with atheris.instrument_imports(include=["torchcodec"]):
        targets = _targets()
    atheris.Setup([sys.argv[0], *libfuzzer_args], targets.TARGETS[target])
    atheris.Fuzz()


def replay(target: str, paths: list[str], quiet: bool = False) -> int:
    run = _targets().TARGETS[target]
    files = _inputs(paths)
    escaped = 0
    start = time.perf_counter()
    # FUZZ_REPLAY_TRACE: a file that names the input being replayed while it is, removed at the
    # end, so that the caller can tell which input a process killed by a sanitizer (or a signal)
    # was running (tools/sanitize.sh).
    trace = os.environ.get("FUZZ_REPLAY_TRACE")
    for path in files:
        if trace:
            pathlib.Path(trace).write_text(f"{path}\n")
        try:
            run(path.read_bytes())
        except Exception:
            escaped += 1
            print(f"ESCAPED {target} {path}:\n{traceback.format_exc()}", flush=True)
    if trace:
        pathlib.Path(trace).unlink()        # ended: no input left named (escapes are printed above)
    if not quiet:
        print(f"{target}: {len(files)} inputs, {escaped} escaped, {time.perf_counter() - start:.1f} s", flush=True)
    return 1 if escaped else 0


def _python_failure(run, data: bytes) -> str | None:
    """The type of the exception that ``run(data)`` lets escape and the package function it left
    from (the innermost frame in torchcodec), else None."""
    try:
        run(data)
    except Exception as e:       # noqa: BLE001  (any escape is the finding)
        frames = [f for f in traceback.extract_tb(e.__traceback__)
                  if "/torchcodec/" in f.filename and "/tools/fuzz/" not in f.filename]
        return f"{type(e).__name__} in {frames[-1].name if frames else '?'}"
    return None


def _native_failure(target: str, data: bytes, scratch: pathlib.Path) -> str | None:
    """Replay ``data`` in a child process; the sanitizer's SUMMARY line (or the signal) if it dies."""
    scratch.write_bytes(data)
    child = subprocess.run([sys.executable, "-P", __file__, "replay", target, str(scratch)],
                           capture_output=True, text=True, env=os.environ)
    if child.returncode == 0:
        return None
    summaries = [line for line in child.stderr.splitlines() if line.startswith("SUMMARY:")]
    if summaries:
        return summaries[-1].split(" in ")[0]          # "SUMMARY: AddressSanitizer: heap-buffer-overflow file:line"
    if "ESCAPED" in child.stdout:
        return "python:" + child.stdout.strip().splitlines()[-1].split(":")[0]
    return f"exit status {child.returncode}"


def minimize(target: str, crash: pathlib.Path, out: pathlib.Path, max_runs: int = 2000) -> int:
    """Delta debugging: drop ever smaller chunks while the input fails in the same way."""
    data = crash.read_bytes()
    run = _targets().TARGETS[target]
    failure = _python_failure(run, data)
    if failure is not None:
        def fails(candidate: bytes) -> bool:
            return _python_failure(run, candidate) == failure
    else:
        scratch = out.with_name(out.name + ".try")
        failure = _native_failure(target, data, scratch)
        if failure is None:
            print(f"{crash} does not fail", file=sys.stderr)
            return 1

        def fails(candidate: bytes) -> bool:
            return _native_failure(target, candidate, scratch) == failure
    print(f"minimizing {crash} ({len(data)} bytes): {failure}", flush=True)
    runs, chunk = 0, max(1, len(data) // 2)
    while chunk >= 1 and runs < max_runs:
        start, shrunk = 0, False
        while start < len(data) and runs < max_runs:
            candidate = data[:start] + data[start + chunk:]
            runs += 1
            if candidate and fails(candidate):
                data, shrunk = candidate, True
            else:
                start += chunk
        if not shrunk:
            chunk //= 2
    out.write_bytes(data)
    pathlib.Path(str(out) + ".try").unlink(missing_ok=True)
    print(f"{out}: {len(data)} bytes after {runs} runs ({failure})", flush=True)
    return 0


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    command, args = argv[0], argv[1:]
    if command == "list":
        print("\n".join(_targets().TARGETS))
        return 0
    if command == "seeds":
        folders = seeds.write_seed_dirs(pathlib.Path(args[0]) if args else seeds.DEFAULT_DIR / "seeds")
        for target, folder in folders.items():
            print(f"{target}: {folder} ({len(list(folder.iterdir()))} files)")
        return 0
    if command == "fuzz":
        fuzz(args[0], args[1:])
        return 0
    if command == "replay":
        return replay(args[0], args[1:])
    if command == "minimize":
        crash = pathlib.Path(args[1])
        return minimize(args[0], crash, pathlib.Path(args[2]) if len(args) > 2 else crash.with_name(crash.name + ".min"))
    print(f"unknown command {command!r}\n{__doc__}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
