#!/usr/bin/env python3
"""Run TorchCodec's own public-API test files against this package, and sort the outcomes.

    python tools/compat/run_torchcodec_tests.py CHECKOUT [--python PY] [--files test_decoders.py ...] [-- PYTEST ARGS]

CHECKOUT is a checkout of meta-pytorch/torchcodec outside this repository (``fetch`` it, then
``git --git-dir=... archive HEAD | tar -x -C DIR``). Its tests run from that checkout, with a
Python in which this package and torch (and torchvision, for the transform tests) are installed
(``--python``, default: this repository's ``.venv-torch``), exactly as a user who swapped the
packages would run them.

TorchCodec's test files import, at their top, parts of TorchCodec that this package does not have
(encoders, image decoders, the building-block API, private helpers such as ``torchcodec._core.ops``).
So that the files can be collected at all, a pytest plugin (``_torchcodec_test_shim.py``, beside
this script) gives each such missing name a stand-in that raises ``NotInThisPackage`` when used.
A test that fails with that exception needs something this package does not provide; it is
reported under that name, apart from real failures. Nothing else is changed: the tests, their
reference data and their assertions are TorchCodec's own.

Prints the counts (passed, failed, skipped, needs a missing part) and every real failure; exit
status 0 when nothing failed for real.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

COMPAT = Path(__file__).resolve().parent
REPO = COMPAT.parent.parent
PUBLIC_API_FILES = ("test_decoders.py", "test_samplers.py", "test_transform_ops.py", "test_frame_dataclasses.py",
                    "test_metadata.py", "test_policy.py", "test_logging.py", "test_version.py")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkout", type=Path, help="a checkout of meta-pytorch/torchcodec")
    parser.add_argument("--python", type=lambda p: Path(p).absolute(), default=REPO / ".venv-torch" / "bin" / "python",
                        help="a Python with this package, torch and torchvision installed")
    parser.add_argument("--files", nargs="+", default=list(PUBLIC_API_FILES), help="test files to run")
    parser.add_argument("--show-missing", action="store_true", help="list every test that needs a missing part")
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:split])
    args.pytest_args = argv[split + 1:]             # after --: passed to pytest as they are
    checkout = args.checkout.resolve()
    if REPO in checkout.parents or checkout == REPO:
        raise SystemExit("run TorchCodec's tests from a checkout outside this repository")
    if not (checkout / "test" / "conftest.py").exists():
        raise SystemExit(f"{checkout} has no test/conftest.py: not a checkout of meta-pytorch/torchcodec")
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "outcomes.json"
        path = [str(COMPAT), str(COMPAT / "_torchcodec_test_site"), os.environ.get("PYTHONPATH")]   # see its sitecustomize
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, path)),
                   TORCHCODEC_TEST_SHIM_REPORT=str(report), TORCHCODEC_TEST_SHIM_TESTS=str(checkout / "test"))
        extra = args.pytest_args
        command = [str(args.python), "-m", "pytest", "-p", "_torchcodec_test_shim", "-q", "-rN", "--tb=line",
                   "-p", "no:cacheprovider", *[f"test/{name}" for name in args.files], *extra]
        print("$ " + " ".join(command), flush=True)
        subprocess.run(command, cwd=checkout, env=env)
        if not report.exists():
            raise SystemExit("pytest ended before the plugin wrote its report")
        outcomes = json.loads(report.read_text())
    return summarize(outcomes, args.show_missing)


def summarize(outcomes: list[dict], show_missing: bool) -> int:
    counts: dict[str, int] = {}
    missing: dict[str, list[str]] = {}
    failures = []
    for outcome in outcomes:
        kind = outcome["kind"]
        counts[kind] = counts.get(kind, 0) + 1
        if kind == "needs a missing part":
            missing.setdefault(outcome["missing"], []).append(outcome["test"])
        elif kind == "failed":
            failures.append(outcome)
    print()
    for outcome in failures:
        print(f"FAILED {outcome['test']}\n    {outcome['message']}")
    print("\nNeeds a part this package does not have:")
    for name, tests in sorted(missing.items(), key=lambda item: -len(item[1])):
        print(f"  {len(tests):4}  {name}")
        if show_missing:
            for test in tests:
                print(f"          {test}")
    print("\n" + ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items())))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
