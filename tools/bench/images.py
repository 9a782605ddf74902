#!/usr/bin/env python3
"""Image decoding speed against TorchCodec 0.17, torchvision.io, Pillow and OpenCV, in one run.

    .venv/bin/python -P tools/bench/images.py [--repeats 3] [--threads 2] [--corpus DIR]
        [--tc-python /work/tcvenv/bin/python] [--only jpeg,png,webp] [--ceiling]

Workloads (the corpus is made once with ffmpeg and Pillow and cached in --corpus): 500 1080p JPEGs
at quality 90, 500 1080p PNGs (Pillow's default level), 100 1080p lossy WebPs (quality 80); each
decoded to (C, H, W) RGB uint8 from encoded bytes already in memory, first one image at a time on
one thread ("single"), then in batches of 32 on --threads threads ("batch": torchcodec's
decode_jpeg(list, num_threads=N) for JPEG, otherwise a thread pool of N calling each library's
decoder, which all release the GIL); outputs are dropped as they come. TorchCodec runs in its own venv, in a worker process driven
over stdin/stdout (both packages are imported as ``torchcodec``); the other peers run here. Every
peer's repeats are taken round-robin so that all see the same machine load; the table gives the
best of --repeats for each, images per second, and the time relative to torchcodec (this package), in wall time and in CPU time (this process's, which a loaded
machine inflates less than wall time).
"""
from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

FORMATS = {"jpeg": 500, "png": 500, "webp": 100}
DISTINCT = 25                          # distinct frames per format, repeated to the counts above
CHUNK = 32                             # images per batch call (as a data loader's batch)


def make_corpus(folder: Path, size: str = "1920x1080") -> dict[str, list[Path]]:
    """The benchmark images (cached): DISTINCT frames of ``size`` (1080p by default; another size
    in its own subfolder) of a textured Mandelbrot zoom, each saved as JPEG q90, PNG and WebP q80,
    then listed repeatedly up to the workload counts."""
    import numpy
    from PIL import Image
    if size != "1920x1080":
        folder = folder / size
    width, height = (int(side) for side in size.split("x"))
    folder.mkdir(parents=True, exist_ok=True)
    marker = folder / "done"
    if not marker.exists():
        raw = subprocess.run(
            ["ffmpeg", "-nostdin", "-loglevel", "error", "-f", "lavfi", "-i",
             f"mandelbrot=size={size}:rate=25,noise=alls=6:allf=t,hue=s=1.5", "-frames:v", str(DISTINCT),
             "-f", "rawvideo", "-pix_fmt", "rgb24", "-"], capture_output=True, check=True).stdout
        frames = numpy.frombuffer(raw, numpy.uint8).reshape(DISTINCT, height, width, 3)
        for k, frame in enumerate(frames):
            image = Image.fromarray(frame)
            image.save(folder / f"{k:03d}.jpg", quality=90)
            image.save(folder / f"{k:03d}.png")
            image.save(folder / f"{k:03d}.webp", quality=80)
        marker.touch()
    suffix = {"jpeg": ".jpg", "png": ".png", "webp": ".webp"}
    return {kind: [folder / f"{k % DISTINCT:03d}{suffix[kind]}" for k in range(count)]
            for kind, count in FORMATS.items()}


# ---- the peers ------------------------------------------------------------------------------

def ours(kind: str, threads: int) -> dict[str, Callable[[list[bytes]], Any]]:
    import torchcodec
    from torchcodec.decoders import decode_jpeg, decode_png, decode_webp
    torchcodec.set_bridge("numpy")
    one = {"jpeg": decode_jpeg, "png": decode_png, "webp": decode_webp}[kind]
    batch = in_chunks(lambda chunk: decode_jpeg(chunk, num_threads=threads)) if kind == "jpeg" else pool(one, threads)
    return {"single": singly(one), "batch": batch}


def singly(one: Callable[[bytes], Any]) -> Callable[[list[bytes]], None]:
    def run(items: list[bytes]) -> None:
        for item in items:
            one(item)
    return run


def in_chunks(decode_list: Callable[[list[bytes]], Any]) -> Callable[[list[bytes]], None]:
    def run(items: list[bytes]) -> None:
        for start in range(0, len(items), CHUNK):
            decode_list(items[start:start + CHUNK])
    return run


def pool(one: Callable[[bytes], Any], threads: int) -> Callable[[list[bytes]], None]:
    executor = ThreadPoolExecutor(threads)
    return in_chunks(lambda chunk: list(executor.map(one, chunk)))


def torchvision_peer(kind: str, threads: int) -> dict[str, Callable[[list[bytes]], Any]]:
    import torch
    import torchvision.io as tio
    torch.set_num_threads(1)
    decode = {"jpeg": tio.decode_jpeg, "png": tio.decode_png, "webp": tio.decode_webp}[kind]

    def one(data: bytes) -> Any:
        return decode(torch.frombuffer(bytearray(data), dtype=torch.uint8), mode=tio.ImageReadMode.RGB)
    batch = pool(one, threads)
    if kind == "jpeg":                  # torchvision's own list API
        batch = in_chunks(lambda chunk: tio.decode_jpeg([torch.frombuffer(bytearray(d), dtype=torch.uint8)
                                                         for d in chunk], mode=tio.ImageReadMode.RGB))
    return {"single": singly(one), "batch": batch}


def pillow_peer(kind: str, threads: int) -> dict[str, Callable[[list[bytes]], Any]]:
    import numpy
    from PIL import Image

    def one(data: bytes) -> Any:
        with Image.open(io.BytesIO(data)) as image:
            return numpy.asarray(image.convert("RGB")).transpose(2, 0, 1)
    return {"single": singly(one), "batch": pool(one, threads)}


def opencv_peer(kind: str, threads: int) -> dict[str, Callable[[list[bytes]], Any]]:
    import cv2
    import numpy
    cv2.setNumThreads(1)

    def one(data: bytes) -> Any:
        return cv2.imdecode(numpy.frombuffer(data, numpy.uint8), cv2.IMREAD_COLOR_RGB).transpose(2, 0, 1)
    return {"single": singly(one), "batch": pool(one, threads)}


def torchcodec_peer(kind: str, threads: int) -> dict[str, Callable[[list[bytes]], Any]]:
    """TorchCodec 0.17 (inside its venv, in the worker)."""
    import torch
    from torchcodec.decoders import decode_jpeg, decode_png, decode_webp
    torch.set_num_threads(1)
    decode = {"jpeg": decode_jpeg, "png": decode_png, "webp": decode_webp}[kind]

    def one(data: bytes) -> Any:
        return decode(torch.frombuffer(bytearray(data), dtype=torch.uint8))
    batch = pool(one, threads)
    if kind == "jpeg":                  # TorchCodec's own list API
        batch = in_chunks(lambda chunk: decode_jpeg([torch.frombuffer(bytearray(d), dtype=torch.uint8)
                                                     for d in chunk]))
    return {"single": singly(one), "batch": batch}


def read_all(files: list[Path]) -> list[bytes]:
    """The files' bytes, each distinct file read once (the lists repeat DISTINCT files)."""
    cache: dict[Path, bytes] = {}
    for path in files:
        if path not in cache:
            cache[path] = path.read_bytes()
    return [cache[path] for path in files]


def timed(function: Callable[[list[bytes]], Any], items: list[bytes]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) of one run."""
    start, cpu = time.perf_counter(), time.process_time()
    function(items)
    return time.perf_counter() - start, time.process_time() - cpu


def ceiling(kind: str, files: list[Path], processes: int) -> float:
    """How much faster `processes` separate processes decode the images than one, each decoding
    the whole list one image at a time (ours): the most that threads in one process could gain on
    this machine, whose cores may share caches, memory bandwidth or a physical core."""
    script = ("import sys, time\n"
              "from pathlib import Path\n"
              "from torchcodec.decoders import decode_image\n"
              "items = [Path(p).read_bytes() for p in sys.argv[1:]]\n"
              "import numpy\n"
              "decode_image(numpy.frombuffer(items[0], numpy.uint8))\n"
              "sys.stdout.write('ready\\n'); sys.stdout.flush(); sys.stdin.readline()\n"
              "start = time.perf_counter()\n"
              "for data in items:\n"
              "    decode_image(numpy.frombuffer(data, numpy.uint8))\n"
              "print(time.perf_counter() - start)\n")

    def run(count: int) -> float:
        children = [subprocess.Popen([sys.executable, "-P", "-c", script, *map(str, files)], text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE) for _ in range(count)]
        for child in children:          # all loaded and warm before any starts: they run together
            assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        start = time.perf_counter()
        for child in children:          # all started before any is waited for
            assert child.stdin is not None
            child.stdin.write("go\n")
            child.stdin.flush()
        for child in children:
            child.communicate()
        return time.perf_counter() - start

    one = min(run(1) for _ in range(2))
    together = min(run(processes) for _ in range(2))
    return processes * one / together


def kept_in_chunks(one: Callable[[bytes], Any]) -> Callable[[list[bytes]], None]:
    """One image at a time on one thread, each chunk's outputs kept until the chunk is done, as a
    batch call must keep them (fresh memory for every chunk instead of one reused buffer)."""
    def run(items: list[bytes]) -> None:
        for start in range(0, len(items), CHUNK):
            outputs = [one(item) for item in items[start:start + CHUNK]]
            del outputs
    return run


def thread_scaling(kind: str, items: list[bytes], threads: int, repeats: int) -> dict[str, float]:
    """Best wall seconds of ours: one at a time (outputs dropped), one at a time with each chunk's
    outputs kept, batches on 1 thread, batches on `threads` threads."""
    one = ours(kind, 1)["single"]
    decode_one = {"jpeg": "decode_jpeg", "png": "decode_png", "webp": "decode_webp"}[kind]
    import torchcodec.decoders
    tasks = {"single": one, "single, chunk kept": kept_in_chunks(getattr(torchcodec.decoders, decode_one)),
             "batch, 1 thread": ours(kind, 1)["batch"], f"batch, {threads} threads": ours(kind, threads)["batch"]}
    return {name: min(timed(task, items)[0] for _ in range(repeats)) for name, task in tasks.items()}


def worker() -> int:
    """Inside TorchCodec's venv: {"kind", "workload", "threads", "files"} per line in, seconds out."""
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    loaded: dict[tuple[str, int], tuple[dict, list[bytes]]] = {}
    for line in sys.stdin:
        request = json.loads(line)
        key = (request["kind"], request["threads"])
        if key not in loaded:
            items = read_all([Path(p) for p in request["files"]])
            functions = torchcodec_peer(request["kind"], request["threads"])
            for function in functions.values():
                function(items[:4])                         # warm up
            loaded[key] = (functions, items)
        functions, items = loaded[key]
        wall, cpu = timed(functions[request["workload"]], items)
        replies.write(json.dumps({"seconds": wall, "cpu": cpu}) + "\n")
        replies.flush()
    return 0


class Worker:
    def __init__(self, python: str) -> None:
        self.process = subprocess.Popen([python, str(Path(__file__).resolve()), "--worker"], text=True,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=tempfile.gettempdir())

    def time(self, kind: str, workload: str, threads: int, files: list[Path]) -> tuple[float, float]:
        self.process.stdin.write(json.dumps({"kind": kind, "workload": workload, "threads": threads,
                                             "files": [str(f) for f in files]}) + "\n")
        self.process.stdin.flush()
        reply = self.process.stdout.readline()
        if not reply:
            raise RuntimeError("the TorchCodec worker died (see its stderr above)")
        reply = json.loads(reply)
        return reply["seconds"], reply["cpu"]

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(60)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2, help="threads of the batch workloads")
    parser.add_argument("--corpus", type=Path, default=Path(os.environ.get("TORCHCODEC_MEDIA_DIR", "media-cache"))
                        / "bench_images")
    parser.add_argument("--tc-python", default="/work/tcvenv/bin/python", help="a Python with TorchCodec 0.17")
    parser.add_argument("--only", default="jpeg,png,webp")
    parser.add_argument("--ceiling", action="store_true",
                        help="also measure the machine's own limit (--threads processes decoding at once vs "
                             "one) and where the batch time goes (threads vs memory)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker()
    corpus = make_corpus(args.corpus.resolve())        # absolute: TorchCodec's worker runs elsewhere
    peers: dict[str, Callable] = {"torchcodec (ours)": ours, "TorchCodec 0.17": None,
                                  "torchvision.io": torchvision_peer, "Pillow": pillow_peer, "OpenCV": opencv_peer}
    tc = Worker(args.tc_python) if Path(args.tc_python).exists() else None
    if tc is None:
        del peers["TorchCodec 0.17"]
    import importlib

    import numpy
    print(f"CPUs usable: {len(os.sched_getaffinity(0))}; load average at start: "
          f"{' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    versions = [f"numpy {numpy.__version__}"]
    for name, module in {"torchvision.io": "torchvision", "Pillow": "PIL", "OpenCV": "cv2"}.items():
        try:                            # a peer that is not installed is reported, not fatal
            versions.append(f"{name} {importlib.import_module(module).__version__}")
        except ImportError as error:
            print(f"{name}: n/a ({error})")
            del peers[name]
    print(", ".join(versions))
    rows, speedups = [], []
    for kind in args.only.split(","):
        files = corpus[kind]
        items = read_all(files)
        functions = {}
        for name, make in peers.items():
            if make is not None:
                functions[name] = make(kind, args.threads)
                for function in functions[name].values():
                    function(items[:4])
        for workload in ("single", "batch"):
            best: dict[str, tuple[float, float]] = {}
            for _ in range(args.repeats):
                for name in peers:
                    if name == "TorchCodec 0.17":
                        wall, cpu = tc.time(kind, workload, args.threads, files)
                    else:
                        wall, cpu = timed(functions[name][workload], items)
                    previous = best.get(name, (float("inf"), float("inf")))
                    best[name] = (min(previous[0], wall), min(previous[1], cpu))
            mine = best["torchcodec (ours)"]
            for name, (wall, cpu) in best.items():
                rows.append((kind, len(files), workload, name, wall, cpu, wall / mine[0], cpu / mine[1]))
        single = next(r[4] for r in rows if r[0] == kind and r[2] == "single" and r[3] == "torchcodec (ours)")
        batch = next(r[4] for r in rows if r[0] == kind and r[2] == "batch" and r[3] == "torchcodec (ours)")
        speedups.append((kind, single / batch, ceiling(kind, files, args.threads) if args.ceiling else None,
                         thread_scaling(kind, items, args.threads, args.repeats) if args.ceiling else None))
    if tc is not None:
        tc.close()
    print(f"load average at end: {' '.join(f'{v:.2f}' for v in os.getloadavg())}\n")
    workload_name = {"single": "one at a time, 1 thread", "batch": f"batch, {args.threads} threads"}
    print("| format | images | workload | decoder | wall s | images/s | CPU s | wall vs ours | CPU vs ours |")
    print("|---|---|---|---|---|---|---|---|---|")
    for kind, count, workload, name, wall, cpu, wall_ratio, cpu_ratio in rows:
        print(f"| {kind} | {count} | {workload_name[workload]} | {name} | {wall:.3f} | {count / wall:.1f} | "
              f"{cpu:.3f} | {wall_ratio:.2f} | {cpu_ratio:.2f} |")
    print()
    for kind, speedup, limit, scaling in speedups:
        print(f"{kind}: torchcodec (ours) batch of {args.threads} threads vs one at a time: {speedup:.2f}x"
              + (f"; {args.threads} processes at once vs one (the machine's limit): {limit:.2f}x"
                 if limit is not None else ""))
        if scaling:
            names = list(scaling)
            print(f"  ours, wall s: " + ", ".join(f"{name} {scaling[name]:.3f}" for name in names)
                  + f"; threads vs the same batches on 1 thread: {scaling[names[2]] / scaling[names[3]]:.2f}x;"
                  f" keeping each chunk's outputs costs one-at-a-time {scaling[names[1]] / scaling[names[0]]:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
