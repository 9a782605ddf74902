"""Measure TorchCodec 0.17 for tools/bench.py, inside TorchCodec's own venv.

TorchCodec and this package share the import name ``torchcodec``, so bench.py starts this script
with the venv's Python (never run it by hand) and talks to it in JSON lines on stdin/stdout:

- ``{"cmd": "init", "job": ..., "settings": ..., "frames_dir": ...}`` →
  ``{"describe": str, "peers": [{"name", "seek_mode", "workloads"}, ...]}``
- ``{"cmd": "prepare", "peer": name, "workload": name, "threads": n}`` (build, warm up,
  save frames) → ``{"id": int, "repeats": int, "row": measurement so far}``
- ``{"cmd": "repeat", "id": id}`` (one timed run) → ``{"status": "ok" | "error"}``
- ``{"cmd": "finish", "id": id}`` → ``{"row": measurement}``
- any failure → ``{"error": str}``; end of input ends the worker.

bench.py takes the repeats of all peers round-robin, these included, so that all are timed under
the same machine load. Timing uses bench.py's own code (imported from this folder), so both sides
are measured the same way. Frames of frame-checked workloads are written as raw RGB
bytes into frames_dir for bench.py to compare. The venv has torch but maybe not numpy; nothing
here needs numpy. Anything that libraries print goes to stderr, never into the protocol.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
import types
import warnings
from pathlib import Path
from typing import Any, TextIO

TOOLS_DIR = Path(__file__).resolve().parent.parent


def import_bench() -> Any:
    """The bench package's modules (tools/bench/); the repository root must not shadow TorchCodec's
    package."""
    sys.path[:] = [p for p in sys.path if p not in ("", ".", str(Path(__file__).resolve().parent))]
    sys.path.insert(0, str(TOOLS_DIR))
    from bench import measure, peers, workloads

    return types.SimpleNamespace(VideoJob=workloads.VideoJob, RunSettings=workloads.RunSettings,
                                 WORKLOADS=workloads.WORKLOADS, TorchCodecApiPeer=peers.TorchCodecApiPeer,
                                 write_raw_frames=measure.write_raw_frames)


def load_torchcodec() -> Any:
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
    import torchcodec
    import torchcodec.decoders  # noqa: F401

    if hasattr(torchcodec, "set_bridge"):
        raise ImportError(f"{torchcodec.__file__} is this repository's package, not TorchCodec")
    return torchcodec


def protocol_streams() -> tuple[TextIO, TextIO]:
    """(requests in, replies out); fd 1 is pointed at stderr so stray prints cannot corrupt replies."""
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    return sys.stdin, replies


class Worker:
    """Holds the job and TorchCodec's peers between requests."""

    def __init__(self) -> None:
        self.bench = import_bench()
        self.job: Any = None
        self.settings: Any = None
        self.frames_dir = Path(".")
        self.peers: dict[str, Any] = {}
        self.prepared: dict[int, Any] = {}  # measurements under way, by id
        self._next_id = 0

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        if request["cmd"] == "init":
            return self.init(request)
        if request["cmd"] == "prepare":
            return self.prepare(request)
        if request["cmd"] == "repeat":
            prepared = self.prepared[request["id"]]
            prepared.run_once()
            return {"status": prepared.row.status}
        if request["cmd"] == "finish":
            return {"row": self.prepared.pop(request["id"]).row.to_json()}
        return {"error": f"unknown command {request['cmd']!r}"}

    def init(self, request: dict[str, Any]) -> dict[str, Any]:
        bench = self.bench
        self.job = bench.VideoJob(**request["job"])
        self.settings = bench.RunSettings(**request["settings"])
        self.frames_dir = Path(request["frames_dir"])
        peers = [bench.TorchCodecApiPeer("torchcodec", "TorchCodec", mode, load_torchcodec)
                 for mode in ("exact", "approximate")]
        reason = peers[0].unavailable_reason()
        if reason:
            return {"error": f"TorchCodec: {reason}"}
        self.peers = {peer.name: peer for peer in peers}
        specs = [{"name": p.name, "seek_mode": p.seek_mode,
                  "workloads": [w for w, workload in bench.WORKLOADS.items() if p.shows(workload)]}
                 for p in peers]
        return {"describe": peers[0].describe(), "peers": specs}

    def prepare(self, request: dict[str, Any]) -> dict[str, Any]:
        peer = self.peers[request["peer"]]
        workload = self.bench.WORKLOADS[request["workload"]]
        prepared = peer.prepare(workload, self.job, request["threads"], self.settings,
                                self.save_frames)
        key = self._next_id
        self._next_id += 1
        self.prepared[key] = prepared
        return {"id": key, "repeats": prepared.repeats, "row": prepared.row.to_json()}

    def save_frames(self, peer: Any, workload: str, threads: int, frames: Any) -> dict[str, Any]:
        """FrameRecorder: write the frames to a file that bench.py compares (and deletes)."""
        path = self.frames_dir / f"{peer.name.replace(' ', '_')}-{workload}-threads{threads}.rgb"
        saved = self.bench.write_raw_frames(frames, path)
        return {"frames_file": saved.path, "shape": saved.shape}


def serve(requests: TextIO, replies: TextIO) -> None:
    worker = None
    for line in requests:
        try:
            worker = worker or Worker()
            reply = worker.handle(json.loads(line))
        except Exception as exc:
            traceback.print_exc()
            reply = {"error": f"worker: {type(exc).__name__}: {exc}"}
        replies.write(json.dumps(reply) + "\n")
        replies.flush()


def main() -> int:
    serve(*protocol_streams())
    return 0


if __name__ == "__main__":
    sys.exit(main())
