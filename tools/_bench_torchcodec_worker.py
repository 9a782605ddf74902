"""Measure TorchCodec 0.17 for tools/bench.py, inside TorchCodec's own venv.

TorchCodec and this package share the import name ``torchcodec``, so bench.py runs this script
with the venv's Python (never by hand)::

    TC_VENV/bin/python tools/_bench_torchcodec_worker.py REQUEST.json REPLY.json

REQUEST holds the job, the run settings and a folder for frames; REPLY gets
``{"describe": str, "rows": [measurement, ...]}`` or ``{"error": str}``. Frames of frame-checked
workloads are written as raw RGB bytes into that folder; bench.py compares them with the
reference. Timing uses bench.py's own code (imported from this folder), so both sides are measured
the same way. The venv has torch but not necessarily numpy; nothing here needs numpy.
"""

from __future__ import annotations

import json
import sys
import traceback
import warnings
from pathlib import Path
from typing import Any

TOOLS_DIR = Path(__file__).resolve().parent


def import_bench() -> Any:
    """bench.py from this folder; the repository root must not shadow TorchCodec's package."""
    sys.path[:] = [p for p in sys.path if p not in ("", ".")]
    sys.path.insert(0, str(TOOLS_DIR))
    import bench

    return bench


def load_torchcodec() -> Any:
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
    import torchcodec
    import torchcodec.decoders  # noqa: F401

    if hasattr(torchcodec, "set_bridge"):
        raise ImportError(f"{torchcodec.__file__} is this repository's package, not TorchCodec")
    return torchcodec


def frame_saver(bench: Any, frames_dir: Path) -> Any:
    """A FrameRecorder that writes the frames to a file for bench.py to compare."""

    def save(peer: Any, threads: int, frames: Any) -> dict[str, Any]:
        name = peer.name.replace(" ", "_")
        path = frames_dir / f"{name}-threads{threads}.rgb"
        shape = bench.write_raw_frames(frames, path)
        return {"frames_file": str(path), "shape": shape}

    return save


def measure(request: dict[str, Any]) -> dict[str, Any]:
    bench = import_bench()
    job = bench.VideoJob(**request["job"])
    settings = bench.RunSettings(**request["settings"])
    peers = [bench.TorchCodecApiPeer("torchcodec", "TorchCodec", mode, load_torchcodec)
             for mode in ("exact", "approximate")]
    reason = peers[0].unavailable_reason()
    if reason:
        return {"error": reason}
    record = frame_saver(bench, Path(request["frames_dir"]))
    rows = []
    for peer in peers:
        bench.log(f"measuring {peer.name}")
        rows += bench.run_peer(peer, job, settings, record)
    return {"describe": peers[0].describe(), "rows": [row.to_json() for row in rows]}


def main() -> int:
    request_path, reply_path = Path(sys.argv[1]), Path(sys.argv[2])
    try:
        reply = measure(json.loads(request_path.read_text()))
    except Exception as exc:
        traceback.print_exc()
        reply = {"error": f"worker failed: {type(exc).__name__}: {exc}"}
    reply_path.write_text(json.dumps(reply))
    return 0


if __name__ == "__main__":
    sys.exit(main())
