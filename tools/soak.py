#!/usr/bin/env python3
"""Soak test: many threads making random calls on shared decoders for a long time.

    python -P tools/soak.py --threads 8 --decoders 6 --minutes 10 [--corpus DIR|FILE ...]

A pool of ``--decoders`` decoders (VideoDecoder, AudioDecoder, WavDecoder with random options)
over the corpus (default: tools/make_media.py's clips) is shared by ``--threads`` threads. Each
thread picks a decoder and one of its methods at random: every VideoDecoder method (indexing,
slices, iteration, by index, by time, ranges with and without fps, metadata), the four clip
samplers (seeded), every AudioDecoder/WavDecoder method, pickling. Every ``--replace-every``
calls a thread closes a decoder and opens a new one in its place (open/close cycles are where
leaks show).

Results are checked against a sequential reference: the first time a call is seen (same file,
same decoder options, same arguments) it is also run on a fresh decoder that no other thread
sees, from its initial state, and the digest of its output (data bytes, pts, durations, or the
exception type) is kept; that result and every later result of the call, from any thread, any
decoder of the pool and whatever that decoder did before, must equal it. Options that must not
change results (dimension order, FFmpeg threads) share references. Arguments come from a coarse
grid (10 indices and 20 times per stream, a few counts and fps) so that calls repeat and most
results are checked against a reference made earlier. Decoders in approximate mode are exercised
but not compared: what that mode returns may depend on where the decoder was (video: where seeks
land inexactly, MPEG-PS/TS, in TorchCodec 0.17 as here; audio: a range that continues the last one
is read on without a seek).

RSS and open file descriptors are sampled every ``--sample-seconds``. The summary lists calls by
method, errors by type (documented errors for out-of-range requests are expected; anything else is
a failure), mismatches, references, RSS start/peak/end and fds. Exit status 1 on any mismatch or
unexpected error.
"""
from __future__ import annotations

import argparse
import collections
import ctypes
import gc
import hashlib
import itertools
import os
import pathlib
import pickle
import random
import sys
import threading
import time
import traceback
from typing import Any, Callable

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tools"))

import make_media  # noqa: E402

import torchcodec  # noqa: E402
from torchcodec import samplers  # noqa: E402
from torchcodec.decoders import AudioDecoder, VideoDecoder, WavDecoder  # noqa: E402

# Errors the API documents for requests outside a stream (a time past the end, a sampler range
# too short...): results like any other, compared with the reference.
EXPECTED = (IndexError, ValueError, RuntimeError)
GRID = 20


# ---- the corpus and what each file is ----------------------------------------------------------

class Media:
    """One corpus file and what the soak needs to know of it (from a first, sequential open)."""

    def __init__(self, path: pathlib.Path) -> None:
        self.path = path
        self.video = self.audio = False
        self.wav = path.suffix == ".wav"
        try:
            d = VideoDecoder(path)
            self.video, self.num_frames = True, len(d)
            self.begin, self.end = d.metadata.begin_stream_seconds, d.metadata.end_stream_seconds
        except (ValueError, RuntimeError):
            pass
        try:
            a = AudioDecoder(path)
            self.audio = True
            self.audio_begin = a.metadata.begin_stream_seconds_from_header or 0.0
            self.audio_duration = a.metadata.duration_seconds_from_header or 1.0
        except (ValueError, RuntimeError):
            pass

    def kinds(self) -> list[str]:
        return (["video"] if self.video else []) + (["audio"] if self.audio else []) + (["wav"] if self.wav else [])


def load_corpus(paths: list[str]) -> list[Media]:
    if paths:
        files = [f for p in map(pathlib.Path, paths)
                 for f in (sorted(p.iterdir()) if p.is_dir() else [p]) if f.is_file() and not f.name.endswith(".json")]
    else:
        files = list(make_media.ensure_media().values())
    corpus = [m for m in map(Media, files) if m.kinds()]
    if not corpus:
        raise SystemExit("no decodable file in the corpus")
    return corpus


# ---- decoders and calls -----------------------------------------------------------------------

# Options that must not change results: the reference of a call is shared by their values.
NEUTRAL_OPTIONS = ("dimension_order", "num_ffmpeg_threads")


def open_decoder(media: Media, kind: str, options: tuple) -> Any:
    if kind == "video":
        return VideoDecoder(media.path, **dict(options))
    if kind == "audio":
        return AudioDecoder(media.path, **dict(options))
    return WavDecoder(media.path)


def random_options(kind: str, rng: random.Random) -> tuple:
    if kind == "video":
        return (("seek_mode", rng.choice(("exact", "exact", "approximate"))),
                ("dimension_order", rng.choice(("NCHW", "NHWC"))),
                ("num_ffmpeg_threads", rng.choice((1, 1, 2))),
                ("output_dtype", rng.choice(("uint8", "uint8", "float32"))))
    if kind == "audio":
        return (("sample_rate", rng.choice((None, None, 16000))), ("num_channels", rng.choice((None, None, 1))),
                ("seek_mode", rng.choice(("exact", "approximate"))))
    return ()


def video_call(media: Media, rng: random.Random) -> tuple[str, tuple]:
    """(method, arguments) of a random VideoDecoder call, arguments on a coarse grid."""
    n, span = media.num_frames, (media.end - media.begin)

    def t(k: int) -> float:
        return media.begin + span * k / GRID

    def i() -> int:
        return round(rng.randrange(10) * (n - 1) / 9)

    k = rng.randrange(GRID)
    method = rng.choice((
        "getitem", "getitem", "slice", "iter", "get_frame_at", "get_frames_at", "get_frames_in_range",
        "get_frame_played_at", "get_frames_played_at", "get_frames_played_in_range", "played_in_range_fps",
        "get_all_frames", "metadata", "clips_at_random_indices", "clips_at_regular_indices",
        "clips_at_random_timestamps", "clips_at_regular_timestamps", "pickle"))
    if method in ("getitem", "get_frame_at", "pickle"):
        return method, (rng.choice((i(), i() - n, n)),)
    if method == "slice":
        return method, (i(), i() + rng.choice((1, 4)), rng.choice((1, 2)))
    if method == "iter":
        return method, (rng.randint(1, 4),)
    if method == "get_frames_at":
        return method, tuple(i() for _ in range(rng.randint(1, 4)))
    if method == "get_frames_in_range":
        start = i()
        return method, (start, start + rng.choice((0, 3, 8)), rng.choice((1, 3)))
    if method == "get_frame_played_at":
        return method, (t(k) if rng.random() < 0.95 else media.end + 1,)
    if method == "get_frames_played_at":
        return method, tuple(t(rng.randrange(GRID)) for _ in range(rng.randint(1, 5)))
    if method == "get_frames_played_in_range":
        return method, (t(k), t(min(GRID, k + rng.randint(0, 3))))
    if method == "played_in_range_fps":
        return method, (t(k), t(min(GRID, k + rng.randint(0, 3))), rng.choice((1.0, 7.5, 30.0)))
    if method == "get_all_frames":
        return (method, (rng.choice((None, 5.0)),)) if n <= 100 else ("metadata", ())
    if method == "metadata":
        return method, ()
    if method.endswith("indices"):
        return method, (rng.randint(1, 3), rng.randint(1, 4), rng.randrange(4))
    return method, (rng.randint(1, 3), rng.randint(1, 4), rng.randrange(4))


def audio_call(media: Media, rng: random.Random) -> tuple[str, tuple]:
    def t(k: int) -> float:
        return media.audio_begin + media.audio_duration * k / GRID

    method = rng.choice(("get_all_samples", "range", "range", "range_open", "metadata", "pickle"))
    if method == "range":
        k = rng.randrange(GRID)
        return method, (t(k), t(min(GRID + 1, k + rng.randint(0, 5))))
    if method == "range_open":
        return method, (t(rng.randrange(GRID)),)
    return method, ()


def perform(decoder: Any, method: str, args: tuple) -> Any:
    """Run one call; returns what is compared (FrameBatch, Frame, AudioSamples, metadata...)."""
    if method == "getitem":
        return decoder[args[0]]
    if method == "slice":
        return decoder[args[0]:args[1]:args[2]]
    if method == "iter":
        return list(itertools.islice(iter(decoder), args[0]))
    if method == "get_frame_at":
        return decoder.get_frame_at(args[0])
    if method == "get_frames_at":
        return decoder.get_frames_at(list(args))
    if method == "get_frames_in_range":
        return decoder.get_frames_in_range(*args)
    if method == "get_frame_played_at":
        return decoder.get_frame_played_at(*args)
    if method == "get_frames_played_at":
        return decoder.get_frames_played_at(list(args))
    if method == "get_frames_played_in_range":
        return decoder.get_frames_played_in_range(*args)
    if method == "played_in_range_fps":
        return decoder.get_frames_played_in_range(args[0], args[1], fps=args[2])
    if method == "get_all_frames":
        return decoder.get_all_frames(fps=args[0])
    if method == "metadata":
        return repr(decoder.metadata), len(decoder) if isinstance(decoder, VideoDecoder) else None
    if method == "pickle":
        clone = pickle.loads(pickle.dumps(decoder))
        return clone[args[0]] if isinstance(clone, VideoDecoder) else clone.get_samples_played_in_range(0.0, 0.05)
    if method == "clips_at_random_indices":
        return samplers.clips_at_random_indices(decoder, num_clips=args[0], num_frames_per_clip=args[1],
                                                num_indices_between_frames=1 + args[2], generator=args[2])
    if method == "clips_at_regular_indices":
        return samplers.clips_at_regular_indices(decoder, num_clips=args[0], num_frames_per_clip=args[1],
                                                 num_indices_between_frames=1 + args[2])
    if method == "clips_at_random_timestamps":
        return samplers.clips_at_random_timestamps(decoder, num_clips=args[0], num_frames_per_clip=args[1],
                                                   seconds_between_frames=0.05 * (1 + args[2]), generator=args[2])
    if method == "clips_at_regular_timestamps":
        return samplers.clips_at_regular_timestamps(decoder, seconds_between_clip_starts=0.25 * args[0],
                                                    num_frames_per_clip=args[1],
                                                    seconds_between_frames=0.05 * (1 + args[2]))
    if method == "get_all_samples":
        return decoder.get_all_samples()
    if method == "range":
        return decoder.get_samples_played_in_range(*args)
    if method == "range_open":
        return decoder.get_samples_played_in_range(args[0])
    raise AssertionError(method)


def digest(result: Any, nchw: bool = False) -> str:
    """A digest of everything a result holds: array bytes, shapes, dtypes, floats, strings.

    ``nchw``: frames are (..., 3, H, W); they are digested as (..., H, W, 3), so that a decoder's
    dimension order does not change the digest (the reference is shared by both orders)."""
    h = hashlib.blake2b(digest_size=16)

    def feed(value: Any) -> None:
        is_tensor = type(value).__module__.split(".")[0] == "torch"
        if hasattr(value, "__array_interface__") or is_tensor:
            array = value.numpy() if is_tensor else value
            if nchw and array.ndim >= 3 and array.shape[-3] == 3:
                array = array.swapaxes(-3, -2).swapaxes(-2, -1)
            h.update(f"{array.shape}{array.dtype}".encode())
            h.update(array.tobytes())
        elif isinstance(value, (list, tuple)):
            h.update(b"[")
            for item in value:
                feed(item)
            h.update(b"]")
        elif hasattr(value, "__dataclass_fields__"):
            for name in value.__dataclass_fields__:
                feed(getattr(value, name))
        else:
            h.update(repr(value).encode())

    feed(result)
    return h.hexdigest()


def outcome(decoder: Any, method: str, args: tuple) -> str:
    """The digest of the call's result, or the type of the documented error it raised."""
    nchw = getattr(decoder, "_dimension_order", None) == "NCHW"
    try:
        return digest(perform(decoder, method, args), nchw)
    except EXPECTED as e:
        return f"error:{type(e).__name__}"


# ---- the run ----------------------------------------------------------------------------------

class Stats:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.calls: collections.Counter[str] = collections.Counter()
        self.errors: collections.Counter[str] = collections.Counter()
        self.unexpected: collections.Counter[str] = collections.Counter()
        self.mismatches: list[str] = []
        self.references = self.checked = self.opened = self.unchecked = 0
        self.reference_lock = threading.Lock()
        self.reference: dict[tuple, str] = {}
        self.samples: list[tuple[float, float, int]] = []    # (seconds, RSS MB, fds)
        self.failures: list[str] = []
        self.after_close: tuple[float, float | bool] = (0.0, False)


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def malloc_trim() -> bool:
    """glibc's malloc_trim(0): return freed heap memory to the system; False where unavailable."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        return False
    return True


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


class Slot:
    """One decoder of the pool, replaced now and then (under its own lock only while swapping)."""

    def __init__(self, media: Media, kind: str, options: tuple) -> None:
        self.media, self.kind, self.options = media, kind, options
        self.decoder = open_decoder(media, kind, options)


def new_slot(corpus: list[Media], rng: random.Random) -> Slot:
    media = rng.choice(corpus)
    kind = rng.choice(media.kinds())
    return Slot(media, kind, random_options(kind, rng))


def worker(number: int, pool: list[Slot], corpus: list[Media], stats: Stats, deadline: float,
           seed: int, replace_every: int) -> None:
    rng = random.Random(seed * 1000 + number)
    for count in itertools.count(1):
        if time.monotonic() >= deadline:
            return
        position = rng.randrange(len(pool))
        if count % replace_every == 0:
            pool[position] = new_slot(corpus, rng)       # the old decoder is freed when its last call ends
            with stats.lock:
                stats.opened += 1
            continue
        slot = pool[position]
        method, args = (video_call if slot.kind == "video" else audio_call)(slot.media, rng)
        key = (str(slot.media.path), slot.kind, tuple(o for o in slot.options if o[0] not in NEUTRAL_OPTIONS),
               method, args)
        try:
            got = outcome(slot.decoder, method, args)
        except Exception:                                   # noqa: BLE001  (reported, the run goes on)
            with stats.lock:
                stats.calls[f"{slot.kind}.{method}"] += 1
                stats.unexpected[traceback.format_exc().strip().splitlines()[-1][:160]] += 1
            continue
        if ("seek_mode", "approximate") in slot.options:
            # Not compared: approximate mode's result may depend on where the decoder was, so a
            # shared decoder legitimately differs from a fresh one. Video: where seeks land
            # inexactly (MPEG-PS/TS), as in TorchCodec 0.17. Audio: a range that continues the last
            # one is read on without a seek (_core/_audio.pyx). Crashes and error types still count.
            with stats.lock:
                stats.calls[f"{slot.kind}.{method}"] += 1
                stats.unchecked += 1
                if got.startswith("error:"):
                    stats.errors[got[6:]] += 1
            continue
        with stats.reference_lock:
            expected = stats.reference.get(key)
        fresh = expected is None
        if fresh:                                           # the same call on a fresh decoder of its own
            try:
                expected = outcome(open_decoder(slot.media, slot.kind, slot.options), method, args)
            except Exception:                               # noqa: BLE001
                expected = "reference failed: " + traceback.format_exc()[-300:]
            with stats.reference_lock:
                expected = stats.reference.setdefault(key, expected)
        with stats.lock:
            stats.calls[f"{slot.kind}.{method}"] += 1
            if got.startswith("error:"):
                stats.errors[got[6:]] += 1
            stats.references += fresh
            stats.checked += not fresh
            if got != expected:
                stats.mismatches.append(f"{slot.media.path.name} {slot.kind} {dict(slot.options)} "
                                        f"{method}{args}: {got} != reference {expected}")


def sampler(stats: Stats, stop: threading.Event, every: float, start: float) -> None:
    while True:
        with stats.lock:
            stats.samples.append((time.monotonic() - start, rss_mb(), open_fds()))
        if stop.wait(every):
            return


def summary(stats: Stats, args: argparse.Namespace, elapsed: float, corpus: list[Media]) -> str:
    total = sum(stats.calls.values())
    rss = [s[1] for s in stats.samples]
    fds = [s[2] for s in stats.samples]
    lines = [
        f"soak: {args.threads} threads x {args.decoders} decoders, {elapsed / 60:.1f} min, "
        f"{len(corpus)} files, bridge {torchcodec.get_bridge()}, seed {args.seed}",
        f"calls: {total} ({total / elapsed:.1f}/s); decoders opened: {args.decoders + stats.opened}",
        f"checked against a reference: {stats.checked}; references computed: {stats.references}; "
        f"not compared (approximate mode): {stats.unchecked}",
        f"mismatches: {len(stats.mismatches)}",
        f"documented errors (results, compared too): {dict(stats.errors) or 0}",
        f"unexpected errors: {sum(stats.unexpected.values())}",
        f"RSS MB: start {rss[0]:.0f}, peak {max(rss):.0f}, end {rss[-1]:.0f} "
        f"(after the first quarter: {_after_quarter(stats.samples)})",
        f"RSS MB with every decoder closed: {stats.after_close[0]:.0f}; after malloc_trim: "
        f"{format(stats.after_close[1], '.0f') if stats.after_close[1] else 'n/a'}",
        f"open fds: start {fds[0]}, peak {max(fds)}, end {fds[-1]}",
        "calls by method:",
    ]
    lines += [f"  {name:<42} {n}" for name, n in sorted(stats.calls.items())]
    lines += [f"MISMATCH {m}" for m in stats.mismatches[:20]]
    lines += [f"UNEXPECTED x{n}: {e}" for e, n in stats.unexpected.most_common(20)]
    return "\n".join(lines)


def _after_quarter(samples: list[tuple[float, float, int]]) -> str:
    """RSS at the end of the first quarter and at the end: growth after warm-up is what leaks show."""
    if len(samples) < 4:
        return "too few samples"
    quarter = samples[len(samples) // 4][1]
    return f"{quarter:.0f} -> {samples[-1][1]:.0f} MB"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--decoders", type=int, default=6, help="decoders in the shared pool")
    parser.add_argument("--minutes", type=float, default=1.0)
    parser.add_argument("--corpus", nargs="*", default=[], help="files or folders (default: tools/make_media.py's)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--replace-every", type=int, default=50, help="a thread reopens a decoder every N calls")
    parser.add_argument("--sample-seconds", type=float, default=5.0)
    parser.add_argument("--bridge", default="numpy", choices=("numpy", "torch"))
    args = parser.parse_args(argv)
    torchcodec.set_bridge(args.bridge)

    corpus = load_corpus(args.corpus)
    rng = random.Random(args.seed)
    pool = [new_slot(corpus, rng) for _ in range(args.decoders)]
    stats = Stats()
    start = time.monotonic()
    stop = threading.Event()
    sampling = threading.Thread(target=sampler, args=(stats, stop, args.sample_seconds, start), daemon=True)
    sampling.start()
    deadline = start + args.minutes * 60
    threads = [threading.Thread(target=worker, args=(i, pool, corpus, stats, deadline, args.seed, args.replace_every))
               for i in range(args.threads)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stop.set()
    sampling.join()
    elapsed = time.monotonic() - start
    # Every decoder closed, and the memory glibc keeps for reuse handed back: what stays is a leak
    # (or the libraries' caches), not the fragmentation of 8 threads' arenas that RSS also shows.
    pool.clear()
    gc.collect()
    stats.after_close = (rss_mb(), malloc_trim() and rss_mb())
    print(summary(stats, args, elapsed, corpus), flush=True)
    return 1 if stats.mismatches or stats.unexpected else 0


if __name__ == "__main__":
    sys.exit(main())
