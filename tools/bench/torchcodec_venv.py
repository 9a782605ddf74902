"""TorchCodec 0.17 in its own venv (it has our import name), driven over a pipe through
bench/torchcodec_worker.py."""
from __future__ import annotations

import contextlib
import dataclasses
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.measure import Prepared, SavedFrames, log
from bench.peers import Peer, TorchCodecApiPeer
from bench.workloads import (FrameRecorder, Measurement, RunSettings, TC_PIP_REQUIREMENTS, VideoJob,
                             WORKER_SCRIPT, Workload)


# --------------------------------------------------------------------------------------------
# TorchCodec in its own venv, driven through a worker process
# --------------------------------------------------------------------------------------------


def ensure_tc_venv(venv: Path) -> Path:
    """Python of a venv with TorchCodec 0.17; creates it (minutes: torch is large) when missing."""
    python = venv / "bin" / "python"
    if python.exists() and _venv_has_torchcodec(python):
        return python
    log_path = venv.parent / "install.log"
    venv.parent.mkdir(parents=True, exist_ok=True)
    log(f"creating TorchCodec venv {venv} ({' '.join(TC_PIP_REQUIREMENTS)}); log: {log_path}")
    with open(log_path, "a") as log_file:
        if not python.exists():
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True,
                           stdout=log_file, stderr=subprocess.STDOUT)
        subprocess.run([str(venv / "bin" / "pip"), "install", *TC_PIP_REQUIREMENTS], check=True,
                       stdout=log_file, stderr=subprocess.STDOUT)
    if not _venv_has_torchcodec(python):
        raise RuntimeError(f"torchcodec still not importable in {venv}; see {log_path}")
    return python


def _venv_has_torchcodec(python: Path) -> bool:
    probe = subprocess.run([str(python), "-c", "import torchcodec.decoders"],
                           capture_output=True, cwd=tempfile.gettempdir())
    return probe.returncode == 0


class WorkerConnection:
    """JSON lines to and from tools/_bench_torchcodec_worker.py running in the TorchCodec venv."""

    def __init__(self, python: Path, cwd: Path):
        # cwd away from the repository, so that 'import torchcodec' there is TorchCodec's
        self._proc = subprocess.Popen([str(python), str(WORKER_SCRIPT)], cwd=cwd, text=True,
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def request(self, message: dict[str, Any]) -> dict[str, Any]:
        assert self._proc.stdin is not None and self._proc.stdout is not None
        try:
            self._proc.stdin.write(json.dumps(message) + "\n")
            self._proc.stdin.flush()
            line = self._proc.stdout.readline()
        except (BrokenPipeError, ValueError):  # ValueError: pipe already closed
            line = ""
        if not line:
            raise RuntimeError(f"TorchCodec worker exited (status {self._proc.wait()}); see stderr")
        reply = json.loads(line)
        if "error" in reply:
            raise RuntimeError(reply["error"])
        return reply

    def kill(self) -> None:
        self._proc.kill()

    def close(self) -> None:
        """End the worker: it exits at end of input; killed if it does not within a minute."""
        with contextlib.suppress(OSError):
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self._proc.kill()


class RemotePeer(Peer):
    """A TorchCodec peer that lives in the worker, which builds, warms up and times its tasks."""

    key = "torchcodec"

    def __init__(self, connection: WorkerConnection, spec: dict[str, Any], description: str):
        self._connection = connection
        self.name = spec["name"]
        self.seek_mode = spec["seek_mode"]
        self._workloads = set(spec["workloads"])
        self._description = description

    def describe(self) -> str:
        return self._description

    def shows(self, workload: Workload) -> bool:
        return workload.name in self._workloads

    def prepare(self, workload: Workload, job: VideoJob, threads: int, settings: RunSettings,
                record_frames: FrameRecorder | None) -> Prepared:
        prepared = Prepared(Measurement(workload.name, threads, self.name, self.seek_mode))
        try:
            reply = self._connection.request({"cmd": "prepare", "peer": self.name,
                                              "workload": workload.name, "threads": threads})
        except Exception as exc:
            prepared.fail(exc)
            return prepared
        prepared.row = Measurement.from_json(reply["row"])
        prepared.remote_id, prepared.repeats = reply["id"], reply["repeats"]
        saved = prepared.row.check or {}
        if "frames_file" in saved and record_frames is not None:
            frames = SavedFrames(saved["frames_file"], saved["shape"])
            prepared.row.check = record_frames(self, workload.name, threads, frames)
        return prepared

    def repeat(self, prepared: Prepared) -> None:
        prepared.done += 1
        try:
            reply = self._connection.request({"cmd": "repeat", "id": prepared.remote_id})
            prepared.row.status = reply["status"]  # "error" ends the repeats; finish says why
        except Exception as exc:
            prepared.fail(exc)
            prepared.remote_id = None

    def finish(self, prepared: Prepared) -> Measurement:
        if prepared.remote_id is None:
            return prepared.row
        try:
            reply = self._connection.request({"cmd": "finish", "id": prepared.remote_id})
        except Exception as exc:
            prepared.fail(exc)
            return prepared.row
        row = Measurement.from_json(reply["row"])
        row.check = prepared.row.check  # compared here, not in the worker
        return row


def unavailable_torchcodec_peers(reason: str) -> list[Peer]:
    def fail() -> Any:
        raise RuntimeError(reason)

    return [TorchCodecApiPeer("torchcodec", "TorchCodec", mode, fail) for mode in ("exact", "approximate")]


def start_torchcodec(venv: Path, job: VideoJob, settings: RunSettings,
                     scratch: Path) -> tuple[WorkerConnection | None, list[Peer]]:
    """Start the worker; its peers, or stand-ins that report why TorchCodec is n/a."""
    try:
        python = ensure_tc_venv(venv)
        log(f"starting the TorchCodec worker ({python})")
        connection = WorkerConnection(python, scratch)
        reply = connection.request({"cmd": "init", "job": dataclasses.asdict(job),
                                    "settings": dataclasses.asdict(settings), "frames_dir": str(scratch)})
    except Exception as exc:
        return None, unavailable_torchcodec_peers(f"venv {venv}: {type(exc).__name__}: {exc}")
    return connection, [RemotePeer(connection, spec, reply["describe"]) for spec in reply["peers"]]
