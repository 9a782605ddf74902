#!/usr/bin/env python3
"""Benchmark torchcodec against its peers (TorchCodec 0.17, PyAV, OpenCV, decord, the ffmpeg CLI).

    python tools/bench.py [options]        # video decoding workloads (python tools/bench.py --help)
    python tools/bench.py targets          # the speed and memory targets, each with its verdict
    python tools/bench.py encode | images | decode-work | threads | resize-routes [options]

The benchmarks live in tools/bench/ (this file is their command line: tools/bench/cli.py).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))      # tools/, for the bench package

from bench.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
