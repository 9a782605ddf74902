"""The other peers: PyAV, OpenCV, decord and the ffmpeg CLI, each with the FFmpeg it bundles."""
from __future__ import annotations

import bisect
import re
import shutil
import subprocess
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from bench.peers import Peer, _try_import
from bench.workloads import BATCH_SIZE, NUM_SAMPLED_FRAMES, NotApplicable, RESIZE_SIZE, Task, VideoJob, Workload


class PyAVPeer(Peer):
    """PyAV (bundles its own FFmpeg build in its wheels)."""

    key = "pyav"
    name = "PyAV"

    def __init__(self) -> None:
        self._av, self._reason = _try_import("av")

    def unavailable_reason(self) -> str | None:
        return self._reason

    def describe(self) -> str:
        if self._av is None:
            return f"n/a ({self._reason})"
        bundled = getattr(self._av, "ffmpeg_version_info", None)
        lavc = self._av.library_versions.get("libavcodec")
        ffmpeg = f"FFmpeg {bundled}" if bundled else ffmpeg_release_of_lavc(lavc)
        return f"PyAV {self._av.__version__}, bundled {ffmpeg} (its own build, not the system's)"

    def _open(self, job: VideoJob, threads: int) -> tuple[Any, Any]:
        container = self._av.open(job.path)
        stream = container.streams.video[0]
        stream.codec_context.thread_type = "AUTO"
        stream.codec_context.thread_count = threads
        return container, stream

    def sequential(self, job: VideoJob, threads: int) -> Task:
        def run() -> Any:
            container, stream = self._open(job, threads)
            with container:
                rgb = None
                for frame in container.decode(stream):
                    rgb = frame.to_ndarray(format="rgb24")
                return rgb

        return run

    def batch(self, job: VideoJob, threads: int) -> Task:
        raise NotApplicable("no batch API")

    def _frames_at(self, job: VideoJob, threads: int, indices: list[int], seek_each: bool) -> list[Any]:
        container, stream = self._open(job, threads)
        with container:
            return pyav_frames_at(container, stream, indices, seek_each)

    def _indexed_variants(self, job: VideoJob, threads: int, indices: list[int]) -> dict[str, Task]:
        return {
            "seek only past the GOP, else decode on": lambda: self._frames_at(job, threads, indices, False),
            "seek to keyframe before each target": lambda: self._frames_at(job, threads, indices, True),
        }

    def uniform10(self, job: VideoJob, threads: int) -> dict[str, Task]:
        return self._indexed_variants(job, threads, job.uniform_indices)

    def random10(self, job: VideoJob, threads: int) -> dict[str, Task]:
        return self._indexed_variants(job, threads, job.random_indices)

    def clips(self, job: VideoJob, threads: int) -> dict[str, Task]:
        return self._indexed_variants(job, threads, job.clip_indices())

    def timestamp(self, job: VideoJob, threads: int) -> Task:
        def run() -> Any:
            container, stream = self._open(job, threads)
            with container:
                return pyav_frame_played_at(container, stream, job.timestamp_s).to_ndarray(format="rgb24")

        return run

    def first_frames(self, job: VideoJob, threads: int) -> Task:
        def run() -> Any:
            container, stream = self._open(job, threads)
            with container:
                frames = []
                for frame in container.decode(stream):
                    frames.append(frame.to_ndarray(format="rgb24"))
                    if len(frames) == NUM_SAMPLED_FRAMES:
                        break
                return frames

        return run

    def open(self, job: VideoJob, threads: int) -> Task:
        def run() -> Any:
            container, stream = self._open(job, threads)
            with container:
                ctx = stream.codec_context
                return stream.frames, ctx.width, ctx.height, stream.duration

        return run

    def resize256(self, job: VideoJob, threads: int) -> dict[str, Task]:
        def run(convert: Callable[[Any], Any]) -> Any:
            container, stream = self._open(job, threads)
            with container:
                last = None
                for frame in container.decode(stream):
                    last = convert(frame)
                return last

        size = (RESIZE_SIZE, RESIZE_SIZE)
        variants = {"to_ndarray(width, height): swscale bilinear":
                    lambda: run(lambda f: f.to_ndarray(width=size[1], height=size[0], format="rgb24",
                                                       interpolation="BILINEAR"))}
        cv2, _ = _try_import("cv2")
        if cv2 is not None:
            variants["rgb24 then cv2.resize INTER_AREA"] = lambda: run(
                lambda f: cv2.resize(f.to_ndarray(format="rgb24"), size[::-1], interpolation=cv2.INTER_AREA))
        return variants

    def rgb_nhwc(self, result: Any) -> Any:
        import numpy as np

        return np.stack(result)

    def audio_whole(self, job: VideoJob, threads: int) -> Task:
        def run() -> Any:
            with self._av.open(job.audio_path) as container:
                return pyav_audio_samples(container.decode(container.streams.audio[0]))

        return run

    def audio_ranges(self, job: VideoJob, threads: int) -> Task:
        def run() -> Any:
            with self._av.open(job.audio_path) as container:
                stream = container.streams.audio[0]
                return [pyav_audio_range(container, stream, start, stop) for start, stop in job.audio_ranges]

        return run


def pyav_audio_samples(frames: Iterable[Any]) -> Any:
    """float32 (channels, samples) of decoded frames, converted the way the frames' format needs."""
    import numpy as np

    arrays = [pyav_frame_float32(frame) for frame in frames]
    return np.concatenate(arrays, axis=1) if arrays else np.zeros((0, 0), np.float32)


def pyav_frame_float32(frame: Any) -> Any:
    """One PyAV audio frame as float32 (channels, samples), scaled like libswresample."""
    import numpy as np

    data = frame.to_ndarray()
    if not frame.format.is_planar:
        data = data.reshape(-1, len(frame.layout.channels)).T
    if data.dtype == np.uint8:
        return (data.astype(np.float32) - 128) / 128
    if data.dtype.kind == "i":
        return data.astype(np.float32) / (np.iinfo(data.dtype).max + 1)
    return data.astype(np.float32, copy=False)


def pyav_audio_range(container: Any, stream: Any, start: float, stop: float) -> Any:
    """Samples in [start, stop): seek to the key frame before start, decode, trim by frame pts."""
    import numpy as np

    time_base = float(stream.time_base)
    container.seek(int(start / time_base), stream=stream)
    pieces, first_pts = [], None
    for frame in container.decode(stream):
        begin = frame.pts * time_base
        if begin >= stop:
            break
        if begin + frame.samples / frame.sample_rate <= start:
            continue
        if first_pts is None:
            first_pts = begin
        pieces.append(pyav_frame_float32(frame))
    if not pieces:
        return np.zeros((stream.channels, 0), np.float32)
    data = np.concatenate(pieces, axis=1)
    rate = stream.sample_rate
    first = max(0, int(round((start - first_pts) * rate)))
    return data[:, first:first + int(round((stop - start) * rate))]


def pyav_scan_packets(container: Any, stream: Any) -> tuple[list[int], list[int]]:
    """pts of every packet (= frame i's pts in presentation order) and of every keyframe."""
    all_pts: list[int] = []
    key_pts: list[int] = []
    for packet in container.demux(stream):
        if packet.pts is None:  # the empty flush packet at the end
            continue
        all_pts.append(packet.pts)
        if packet.is_keyframe:
            key_pts.append(packet.pts)
    return sorted(all_pts), sorted(key_pts)


def pyav_needs_seek(key_pts: list[int], current_pts: int | None, target_pts: int) -> bool:
    """Seek when the target is behind us, or a keyframe lies between us and the target."""
    if current_pts is None or target_pts <= current_pts:
        return True
    last_key = bisect.bisect_right(key_pts, target_pts) - 1
    return last_key >= 0 and key_pts[last_key] > current_pts


def pyav_decode_until(frames: Iterable[Any], target_pts: int) -> Any:
    for frame in frames:
        if frame.pts is not None and frame.pts >= target_pts:
            return frame
    raise RuntimeError(f"PyAV: no frame at pts {target_pts}")


def pyav_frames_at(container: Any, stream: Any, indices: list[int], seek_each: bool) -> list[Any]:
    """Exact frames at indices (any order) as RGB arrays, PyAV's way: packet scan, seeks, decode."""
    all_pts, key_pts = pyav_scan_packets(container, stream)
    decoded: dict[int, Any] = {}
    frames: Iterable[Any] | None = None
    current_pts: int | None = None
    for index in sorted(set(indices)):
        target_pts = all_pts[index]
        if frames is None or seek_each or pyav_needs_seek(key_pts, current_pts, target_pts):
            container.seek(target_pts, backward=True, any_frame=False, stream=stream)
            frames = container.decode(stream)
        frame = pyav_decode_until(frames, target_pts)
        current_pts = frame.pts
        decoded[index] = frame.to_ndarray(format="rgb24")
    return [decoded[i] for i in indices]


def pyav_frame_played_at(container: Any, stream: Any, seconds: float) -> Any:
    """The frame with pts <= t < pts + duration."""
    target_pts = int(seconds / stream.time_base)
    container.seek(target_pts, backward=True, any_frame=False, stream=stream)
    for frame in container.decode(stream):
        if frame.pts is not None and frame.pts + max(frame.duration or 0, 1) > target_pts:
            return frame
    raise RuntimeError(f"PyAV: no frame played at {seconds} s")


class OpenCVPeer(Peer):
    """OpenCV's FFmpeg backend (bundled FFmpeg); output is BGR, which we do not convert."""

    key = "opencv"
    name = "OpenCV"

    def __init__(self) -> None:
        self._cv2, self._reason = _try_import("cv2")

    def unavailable_reason(self) -> str | None:
        return self._reason

    def describe(self) -> str:
        if self._cv2 is None:
            return f"n/a ({self._reason})"
        info = self._cv2.getBuildInformation()
        match = re.search(r"avcodec:\s+YES \(([\d.]+)\)", info)
        ffmpeg = ffmpeg_release_of_lavc(match.group(1)) if match else "unknown"
        return f"OpenCV {self._cv2.__version__}, bundled {ffmpeg}; BGR output, not converted"

    def _open(self, job: VideoJob, threads: int) -> Any:
        cv2 = self._cv2
        params = [] if threads == 0 else [cv2.CAP_PROP_N_THREADS, threads]
        capture = cv2.VideoCapture(job.path, cv2.CAP_FFMPEG, params)
        if not capture.isOpened():
            raise RuntimeError(f"OpenCV cannot open {job.path}")
        return capture

    def _read_all(self, job: VideoJob, threads: int, convert: Callable[[Any], Any] | None = None) -> Any:
        """Every frame in order (through ``convert`` when given); returns the last one."""
        capture = self._open(job, threads)
        last = None
        while True:
            ok, frame = capture.read()
            if not ok:
                break
            last = frame if convert is None else convert(frame)
        capture.release()
        return last

    def sequential(self, job: VideoJob, threads: int) -> Task:
        return lambda: self._read_all(job, threads)

    def batch(self, job: VideoJob, threads: int) -> Task:
        raise NotApplicable("no batch API")

    def _frames_at(self, job: VideoJob, threads: int, indices: list[int], use_seek: bool) -> list[Any]:
        capture = self._open(job, threads)
        decoded: dict[int, Any] = {}
        position = 0  # index of the next frame read() returns
        for index in sorted(set(indices)):
            if use_seek and index != position:
                capture.set(self._cv2.CAP_PROP_POS_FRAMES, index)
            else:
                for _ in range(index - position):
                    capture.grab()
            ok, frame = capture.read()
            if not ok:
                raise RuntimeError(f"OpenCV: cannot read frame {index}")
            decoded[index] = frame
            position = index + 1
        capture.release()
        return [decoded[i] for i in indices]

    def _indexed_variants(self, job: VideoJob, threads: int, indices: list[int]) -> dict[str, Task]:
        return {
            "grab() forward, no seek": lambda: self._frames_at(job, threads, indices, False),
            "CAP_PROP_POS_FRAMES seeks (approximate semantics)":
                lambda: self._frames_at(job, threads, indices, True),
        }

    def uniform10(self, job: VideoJob, threads: int) -> dict[str, Task]:
        return self._indexed_variants(job, threads, job.uniform_indices)

    def random10(self, job: VideoJob, threads: int) -> dict[str, Task]:
        return self._indexed_variants(job, threads, job.random_indices)

    def timestamp(self, job: VideoJob, threads: int) -> dict[str, Task]:
        def run() -> Any:
            capture = self._open(job, threads)
            capture.set(self._cv2.CAP_PROP_POS_MSEC, job.timestamp_s * 1000.0)
            ok, frame = capture.read()
            capture.release()
            return frame

        return {"CAP_PROP_POS_MSEC seek (approximate semantics)": run}

    def resize256(self, job: VideoJob, threads: int) -> dict[str, Task]:
        cv2 = self._cv2

        def run(interpolation: int) -> Any:
            return self._read_all(job, threads,
                                  lambda frame: cv2.resize(frame, (RESIZE_SIZE, RESIZE_SIZE), interpolation=interpolation))

        return {"cv2.resize INTER_AREA": lambda: run(cv2.INTER_AREA),
                "cv2.resize INTER_LINEAR (no antialiasing)": lambda: run(cv2.INTER_LINEAR)}

    def open(self, job: VideoJob, threads: int) -> Task:
        def run() -> Any:
            capture = self._open(job, threads)
            cv2 = self._cv2
            props = (cv2.CAP_PROP_FRAME_COUNT, cv2.CAP_PROP_FRAME_WIDTH, cv2.CAP_PROP_FRAME_HEIGHT,
                     cv2.CAP_PROP_FPS)
            values = tuple(capture.get(p) for p in props)
            capture.release()
            return values

        return run

    def rgb_nhwc(self, result: Any) -> Any:
        import numpy as np

        return np.stack(result)[..., ::-1]  # BGR -> RGB


class DecordPeer(Peer):
    """decord (bundles an old FFmpeg build in its wheels)."""

    key = "decord"
    name = "decord"

    def __init__(self) -> None:
        self._decord, self._reason = _try_import("decord")

    def unavailable_reason(self) -> str | None:
        return self._reason

    def describe(self) -> str:
        if self._decord is None:
            return f"n/a ({self._reason})"
        return f"decord {self._decord.__version__}, bundled {self._bundled_ffmpeg()}"

    def _bundled_ffmpeg(self) -> str:
        libs = Path(self._decord.__file__).parent.parent / "decord.libs"
        for lib in sorted(libs.glob("libavcodec*.so.*")):
            return ffmpeg_release_of_lavc(lib.name.split(".so.", 1)[1])
        return "unknown (system libs?)"

    def _open(self, job: VideoJob, threads: int) -> Any:
        return self._decord.VideoReader(job.path, num_threads=threads)

    def sequential(self, job: VideoJob, threads: int) -> Task:
        def run() -> Any:
            reader = self._open(job, threads)
            frame = None
            for _ in range(len(reader)):
                frame = reader.next().asnumpy()
            return frame

        return run

    def batch(self, job: VideoJob, threads: int) -> Task:
        def run() -> Any:
            reader = self._open(job, threads)
            count = len(reader)
            batch = None
            for start in range(0, count, BATCH_SIZE):
                batch = reader.get_batch(list(range(start, min(start + BATCH_SIZE, count)))).asnumpy()
            return batch

        return run

    def uniform10(self, job: VideoJob, threads: int) -> Task:
        return lambda: self._open(job, threads).get_batch(job.uniform_indices).asnumpy()

    def random10(self, job: VideoJob, threads: int) -> Task:
        return lambda: self._open(job, threads).get_batch(job.random_indices).asnumpy()

    def timestamp(self, job: VideoJob, threads: int) -> Task:
        def run() -> Any:
            reader = self._open(job, threads)
            starts = reader.get_frame_timestamp(list(range(len(reader))))[:, 0]
            index = max(0, bisect.bisect_right(starts.tolist(), job.timestamp_s) - 1)
            return reader[index].asnumpy()

        return run

    def open(self, job: VideoJob, threads: int) -> Task:
        def run() -> Any:
            reader = self._open(job, threads)
            return len(reader), reader.get_avg_fps()

        return run

    def rgb_nhwc(self, result: Any) -> Any:
        return result


class FFmpegCliPeer(Peer):
    """The ffmpeg command line, net of process start (a 1-frame run is subtracted)."""

    key = "ffmpeg"
    in_process = False  # a child process: its memory is not this process's

    def __init__(self, to_rgb: bool):
        self.to_rgb = to_rgb
        self.name = "ffmpeg CLI +rgb24" if to_rgb else "ffmpeg CLI decode"
        self._ffmpeg = shutil.which("ffmpeg")

    def unavailable_reason(self) -> str | None:
        return None if self._ffmpeg else "no ffmpeg on PATH"

    def describe(self) -> str:
        if not self._ffmpeg:
            return "n/a (no ffmpeg on PATH)"
        return f"{ffmpeg_cli_version()} ({self._ffmpeg})"

    def _command(self, job: VideoJob, threads: int, one_frame: bool) -> list[str]:
        cmd = [self._ffmpeg, "-nostdin", "-hide_banner", "-loglevel", "error",
               "-threads", str(threads), "-i", job.path, "-map", "0:v:0"]
        if one_frame:
            cmd += ["-frames:v", "1"]
        if self.to_rgb:
            cmd += ["-vf", "format=rgb24"]
        return cmd + ["-f", "null", "-"]

    def shows(self, workload: Workload) -> bool:
        return super().shows(workload) and (workload.media == "video" or not self.to_rgb)

    def _audio_command(self, job: VideoJob, one_frame: bool) -> list[str]:
        cmd = [self._ffmpeg, "-nostdin", "-hide_banner", "-loglevel", "error", "-i", job.audio_path,
               "-map", "0:a:0"]
        if one_frame:
            cmd += ["-frames:a", "1"]
        return cmd + ["-c:a", "pcm_f32le", "-f", "f32le", "-"]

    def audio_whole(self, job: VideoJob, threads: int) -> Task:
        return self._run(self._audio_command(job, one_frame=False))

    def _task(self, job: VideoJob, threads: int, one_frame: bool) -> Task:
        return self._run(self._command(job, threads, one_frame))

    @staticmethod
    def _run(cmd: list[str]) -> Task:
        return lambda: subprocess.run(cmd, check=True, stdin=subprocess.DEVNULL,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def sequential(self, job: VideoJob, threads: int) -> Task:
        return self._task(job, threads, one_frame=False)

    def batch(self, job: VideoJob, threads: int) -> Task:
        return self._task(job, threads, one_frame=False)

    def overhead_task(self, workload: Workload, job: VideoJob, threads: int) -> Task | None:
        if workload.media == "audio":
            return self._run(self._audio_command(job, one_frame=True))
        return self._task(job, threads, one_frame=True)


def ffmpeg_release_of_lavc(version: Any) -> str:
    """'62.28.101' or (62, 28, 101) -> 'libavcodec 62.28.101 = FFmpeg 8.x'."""
    if version is None:
        return "unknown"
    parts = [int(p) for p in (version.split(".") if isinstance(version, str) else version)]
    release = {56: "3.x", 57: "3.x", 58: "4.x", 59: "5.x", 60: "6.x", 61: "7.x", 62: "8.x"}
    text = ".".join(str(p) for p in parts)
    return f"FFmpeg {release.get(parts[0], '?')} (libavcodec {text})"


def ffmpeg_cli_version() -> str:
    try:
        out = subprocess.run(["ffmpeg", "-version"], capture_output=True, text=True, check=True)
        return out.stdout.splitlines()[0].split(" Copyright")[0]
    except (OSError, subprocess.CalledProcessError, IndexError):
        return "unknown"
