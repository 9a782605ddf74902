"""The NVDEC decoder (torchcodec._cuda._nvdec), tested without a GPU (issue 5, point 4).

Each test runs Python in a subprocess against stand-ins for libcuda.so.1 (tests/cuda_stubs/
libcuda_stub.c: counted context pushes and pops, events) and libnvcuvid.so.1
(tests/cuda_stubs/libnvcuvid_stub.c: a parser that reorders pictures by timestamp, decoders whose
"device" surfaces are host memory filled with 16 + timestamp % 219, and that refuse to map a
surface reused before it was read or more surfaces than the decoder has output slots). The stub
parses nothing: the test tells it the stream's format through STUB_NVDEC_* variables. The libcuda
stub counts host waits (cuEventSynchronize, cuStreamSynchronize) and can hold events "not ready"
for a number of queries (STUB_EVENT_PENDING_QUERIES), as work still running on a GPU. References:
the CPU decoder's frames and packets as ffprobe lists them (tests/reference.py).

The decoder is a VideoPacketDecoder: the tests drive it through PacketDecoder.next_frame, the loop
the video reader runs, with tests/cuda_stubs/nvdec_probe.pyx (a test extension built here against
the package's .pxd files), which also describes the frames it fills (their mapped surfaces).
"""
from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

import reference
from nvdec_frames import DeviceMemory, bit_depth, raw_frames
from torchcodec._cuda import _build_config

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "cuda_stubs"))
from stub_build import CC, build_helper, build_stub, run_python  # noqa: E402

CUDA = ("libcuda.so.1", "libcuda_stub.c", "cuda_load_functions")
NVCUVID = ("libnvcuvid.so.1", "libnvcuvid_stub.c", "cuvid_load_functions")


@pytest.fixture(scope="module")
def stubs(tmp_path_factory):
    """Directories holding stub libraries: "nvdec" (libcuda + libnvcuvid), "no_nvcuvid" (libcuda only),
    "old_driver" (a libnvcuvid without the optional cuvidGetDecoderCaps)."""
    if not _build_config.CUDA_DRIVER:
        pytest.skip("this build has no CUDA driver loader (-Dcuda=disabled, or no ffnvcodec headers)")
    if CC is None or shutil.which("pkg-config") is None:
        pytest.skip("no C compiler or pkg-config to build the stub libraries and the test helper")
    root = tmp_path_factory.mktemp("nvdec_stubs")
    nvdec = build_stub(root / "nvdec", *CUDA)
    build_stub(nvdec, *NVCUVID)
    old_driver = build_stub(root / "old_driver", *CUDA)
    build_stub(old_driver, *NVCUVID, omit=("cuvidGetDecoderCaps",))
    directories = {"nvdec": nvdec, "no_nvcuvid": build_stub(root / "no_nvcuvid", *CUDA), "old_driver": old_driver}
    helper = next(build_helper("nvdec_probe", root / "probe").glob("nvdec_probe*.so"))
    for directory in directories.values():      # each subprocess runs in its stubs' directory
        shutil.copy(helper, directory)
    return directories


# Run in the subprocess before each test's code: handles on the stubs, their counters, and a
# decoder opened on a file (its best video stream).
PRELUDE = """
import ctypes, gc, json, os, sys
sys.path.insert(0, ".")
import nvdec_probe
from torchcodec import _cuda
from torchcodec._cuda import _driver, _nvdec, _nvdec_cache, _nvdec_caps
from torchcodec._core._demuxer import Demuxer
cuda = ctypes.CDLL("libcuda.so.1")
nvcuvid = ctypes.CDLL("libnvcuvid.so.1")
nvcuvid.stub_nvcuvid_log.restype = ctypes.c_char_p
context = _driver.load_driver().context(0)

def counters():
    names = ("caps_queries", "decoders_created", "decoders_destroyed", "parsers_created", "parsers_destroyed", "sequences",
             "decodes", "maps", "unmaps", "map_failures", "max_mapped", "no_context", "destroyed_while_mapped",
             "last_decode_surfaces", "last_output_surfaces", "last_output_format", "last_width", "last_height")
    out = {name: ctypes.c_int.in_dll(nvcuvid, "stub_nvdec_" + name).value for name in names}
    for name in ("pushes", "pops", "stack_depth", "events_created", "events_destroyed", "event_syncs",
                 "streams_created", "streams_destroyed", "stream_syncs", "event_queries", "event_not_ready"):
        out[name] = ctypes.c_int.in_dll(cuda, "stub_" + name).value
    return out

def log():
    return nvcuvid.stub_nvcuvid_log().decode()

class Opened:
    # an NvdecDecoder and its demuxer, driven through next_frame by the test helper
    def __init__(self, demuxer, decoder):
        self.demuxer, self.decoder = demuxer, decoder
    def __getattr__(self, name):
        return getattr(self.decoder, name)
    def decode_frames(self, count=-1, peek=None, alive=2):
        return nvdec_probe.decode_frames(self.decoder, self.demuxer, count, peek, alive)
    def seek(self, pts=None):
        nvdec_probe.seek(self.decoder, self.demuxer, pts)

def open_decoder(path, stream_index):
    demuxer = Demuxer(path, streams=stream_index)
    return Opened(demuxer, _nvdec.NvdecDecoder(demuxer, stream_index, context))

def reason(path, stream_index):
    return _nvdec_caps.nvdec_unsupported_reason(Demuxer(path), stream_index, context)

def samples(bytes_per_sample):
    # peek: the first displayed luma sample and the chroma sample there, read as host memory (stub only)
    def read(frame):
        return [int.from_bytes(ctypes.string_at(frame[plane], bytes_per_sample), "little")
                for plane in ("luma", "chroma")]
    return read

def finish(out):
    # drop every decoder, empty the cache, and report the counters with the test's output
    gc.collect()
    _cuda.set_nvdec_cache_capacity(0)
    out["counters"] = counters()
    print(json.dumps(out))
"""


def run(stubs, code: str, directory: str = "nvdec", **env: str) -> dict:
    return run_python(PRELUDE + code, stubs[directory], **env)


def assert_balanced(counters: dict, frames: int | None = None) -> None:
    """Contexts pushed as often as popped, every map unmapped, every decoder and event destroyed."""
    assert counters["pushes"] == counters["pops"] > 0 and counters["stack_depth"] == 0
    assert counters["no_context"] == 0, "a CUVID call ran without the context pushed"
    assert counters["maps"] == counters["unmaps"] and counters["map_failures"] == 0
    assert counters["decoders_created"] == counters["decoders_destroyed"]
    assert counters["destroyed_while_mapped"] == 0
    assert counters["parsers_created"] == counters["parsers_destroyed"]
    assert counters["events_created"] == counters["events_destroyed"]
    assert counters["streams_created"] == counters["streams_destroyed"]
    assert counters["stream_syncs"] == 0, "the map's post-processing is waited for on the device"
    if frames is not None:
        assert counters["maps"] == frames


def packet_durations(path, stream_index) -> dict[int, int]:
    return {p["pts"] if p["pts"] is not None else p["dts"]: p["duration"]
            for p in reference.ffprobe_packets(path, stream_index)}


DECODE_ALL = """
decoder = open_decoder({path!r}, {stream_index})
frames = decoder.decode_frames(peek=samples({bps}))
out = {{"frames": frames, "surfaces": decoder.surface_counts, "log": log()}}
del decoder
finish(out)
"""


@pytest.mark.parametrize("name", ["h264_bframes.mp4", "h264_bframes.ts", "h264_vfr.mkv", "hevc_bframes.mp4",
                                  "vp9.webm", "vp8.webm", "av1.mp4"])
def test_frames_come_out_in_presentation_order_with_the_cpu_decoders_pts(stubs, media, name):
    path = media[name]
    stream_index = reference.best_stream(path)
    stream = reference.ffprobe_stream(path, stream_index)
    expected = reference.ffprobe_frames(path, stream_index)
    durations = packet_durations(path, stream_index)
    out = run(stubs, DECODE_ALL.format(path=os.fspath(path), stream_index=stream_index, bps=1))
    frames = out["frames"]
    assert [f["pts"] for f in frames] == [f["pts"] for f in expected]
    assert all(f["bits"] == 8 for f in frames)
    assert [f["duration"] for f in frames] == [durations[f["pts"]] for f in frames]
    for frame in frames:
        assert frame["format"] == "nv12" and frame["has_event"]
        assert (frame["width"], frame["height"]) == (int(stream["width"]), int(stream["height"]))
        assert frame["peek"] == [16 + frame["pts"] % 219, 128], "not the surface of this picture"
    counters = out["counters"]
    assert counters["decoders_created"] == 1 and counters["sequences"] == 1
    assert counters["caps_queries"] == 1, "asked once per (codec, chroma, depth): by the check, then cached"
    assert out["surfaces"] == [5 + 4, 4] and counters["last_decode_surfaces"] == 9
    assert counters["max_mapped"] <= 3, "two frames alive, and a released one until its reader is seen done"
    parser = next(line for line in out["log"].splitlines() if line.startswith("parser("))
    ticks = stream["time_base"].denominator // stream["time_base"].numerator
    assert parser.endswith(f"surfaces=1, delay=0, clock={ticks})"), \
        "the sequence callback sets the surfaces; the clock is the stream's time base"
    assert_balanced(counters, frames=len(expected))


def test_mpeg4_in_avi_gives_every_frame_with_the_packets_timestamps(stubs, media):
    """AVI packets carry only a dts, which becomes each picture's CUVID timestamp (the engine matches
    such frames by position: FrameIndex.pts_from_dts)."""
    path = media["mpeg4_bframes.avi"]
    stream_index = reference.best_stream(path)
    packets = reference.ffprobe_packets(path, stream_index)
    out = run(stubs, DECODE_ALL.format(path=os.fspath(path), stream_index=stream_index, bps=1))
    assert [f["pts"] for f in out["frames"]] == sorted(p["dts"] for p in packets)
    assert len(out["frames"]) == len(reference.ffprobe_frames(path, stream_index))
    assert_balanced(out["counters"], frames=len(packets))


@pytest.mark.parametrize("name, env, surface, bps, format_name", [
    ("hevc_10bit.mp4", {"STUB_NVDEC_DEPTH": "10"}, 1, 2, "p016le"),
    ("h264_10bit.mp4", {"STUB_NVDEC_DEPTH": "10"}, 1, 2, "p016le"),
    ("h264_yuv444.mp4", {"STUB_NVDEC_CHROMA": "3"}, 2, 1, "yuv444p"),
])
def test_deep_and_444_streams_get_16_bit_or_planar_surfaces(stubs, media, name, env, surface, bps, format_name):
    path = media[name]
    stream_index = reference.best_stream(path)
    expected = reference.ffprobe_frames(path, stream_index)
    out = run(stubs, DECODE_ALL.format(path=os.fspath(path), stream_index=stream_index, bps=bps), **env)
    frames = out["frames"]
    assert [f["pts"] for f in frames] == [f["pts"] for f in expected]
    assert out["counters"]["last_output_format"] == surface     # cudaVideoSurfaceFormat_P016 / _YUV444
    shift = 8 if bps == 2 else 0                                # MSB-aligned 16-bit samples
    for frame in frames:
        assert frame["format"] == format_name and frame["bits"] == int(env.get("STUB_NVDEC_DEPTH", 8))
        assert frame["peek"] == [(16 + frame["pts"] % 219) << shift, 128 << shift]
    assert_balanced(out["counters"], frames=len(expected))


def test_the_decoder_is_made_at_the_coded_size_and_the_display_area_becomes_the_crop(stubs, media):
    path = media["h264_bframes.mp4"]
    stream_index = reference.best_stream(path)
    code = DECODE_ALL.format(path=os.fspath(path), stream_index=stream_index, bps=1)
    out = run(stubs, code, STUB_NVDEC_CODED="336x256", STUB_NVDEC_DISPLAY="8,8,328,248")
    counters = out["counters"]
    assert (counters["last_width"], counters["last_height"]) == (336, 256)
    create = next(line for line in out["log"].splitlines() if line.startswith("create("))
    assert "target=336x256, display=0,0,336,256, flags=4, deinterlace=0)" in create, \
        "the whole coded picture, unscaled, PreferCUVID, Weave: the converter crops"
    frame = out["frames"][0]
    assert (frame["width"], frame["height"]) == (320, 240)
    assert (frame["crop_left"], frame["crop_top"], frame["crop_right"], frame["crop_bottom"]) == (8, 8, 8, 8)
    assert frame["linesizes"][0] >= 336
    assert frame["peek"] == [16 + frame["pts"] % 219, 128]
    assert_balanced(counters)


def test_a_size_change_mid_stream_takes_a_second_decoder_and_maps_the_first_ones_pictures(stubs, media):
    """At the change the parser displays what it holds, then calls the sequence callback: those
    pictures are mapped from the replaced decoder, which goes back to the cache afterwards."""
    path = media["h264_bframes.mp4"]
    expected = [f["pts"] for f in reference.ffprobe_frames(path, 0)]
    out = run(stubs, DECODE_ALL.format(path=os.fspath(path), stream_index=0, bps=1), STUB_NVDEC_CHANGE_AT="30:160x128")
    frames = out["frames"]
    assert [f["pts"] for f in frames] == expected
    assert [(f["width"], f["height"]) for f in frames] == [(320, 240)] * 30 + [(160, 128)] * 60
    assert all(f["peek"] == [16 + f["pts"] % 219, 128] for f in frames)
    counters = out["counters"]
    assert counters["decoders_created"] == 2 and counters["sequences"] == 2
    assert (counters["last_width"], counters["last_height"]) == (160, 128)
    assert_balanced(counters, frames=90)


def test_interlaced_sequences_are_woven_not_deinterlaced(stubs, media):
    """Weave (0), as TorchCodec: the fields stay woven as coded, which is what libavcodec outputs, so
    interlaced content gives the CPU decoder's frames (Adaptive, 2, would interpolate)."""
    path = media["h264_bframes.mp4"]
    out = run(stubs, DECODE_ALL.format(path=os.fspath(path), stream_index=0, bps=1), STUB_NVDEC_INTERLACED="1")
    lines = out["log"].splitlines()
    assert "deinterlace=0)" in next(line for line in lines if line.startswith("create("))
    maps = [line for line in lines if line.startswith("map(")]
    assert len(maps) == 90 and all("progressive=0)" in line for line in maps)
    assert_balanced(out["counters"], frames=90)


SEEK = """
decoder = open_decoder({path!r}, {stream_index})
first = decoder.decode_frames(10)
before = len(log())
decoder.seek({key})
after_key = decoder.decode_frames()
flush_log = log()[before:]
decoder.seek(None)
from_start = decoder.decode_frames(5)
out = {{"first": [f["pts"] for f in first], "after_key": [f["pts"] for f in after_key],
        "from_start": [f["pts"] for f in from_start], "flush_log": flush_log,
        "header": decoder.codec_name}}
del decoder
finish(out)
"""


@pytest.mark.parametrize("name", ["h264_bframes.mp4", "vp9.webm"])
def test_a_flush_after_a_seek_restarts_at_the_key_frame_with_the_sequence_header(stubs, media, name):
    from torchcodec._core._demuxer import Demuxer
    from torchcodec._cuda._nvdec_input import NvdecInput
    path = media[name]
    stream_index = reference.best_stream(path)
    expected = [f["pts"] for f in reference.ffprobe_frames(path, stream_index)]
    key = [p["pts"] for p in reference.ffprobe_packets(path, stream_index) if p["key"]][1]
    header = NvdecInput(Demuxer(os.fspath(path)), stream_index).header
    out = run(stubs, SEEK.format(path=os.fspath(path), stream_index=stream_index, key=key))
    assert out["first"] == expected[:10]
    assert out["after_key"] == [pts for pts in expected if pts >= key]
    assert out["from_start"] == expected[:5]
    calls = [line for line in out["flush_log"].splitlines() if line.startswith("parse(")]
    assert calls[0].startswith("parse(size=0, flags=5,"), "the parser is flushed: ENDOFSTREAM | DISCONTINUITY"
    if header:
        assert calls[1] == f"parse(size={len(header)}, flags=0, ts=-1, head={header[:8].hex()})"
        assert f"ts={key}," in calls[2]
    else:                                             # VP9: every key frame carries its header
        assert f"ts={key}," in calls[1]
    counters = out["counters"]
    assert counters["sequences"] == 3 and counters["decoders_created"] == 1, "same format: the decoder is kept"
    assert counters["caps_queries"] == 1
    assert_balanced(counters)


def test_frames_of_discarded_packets_are_dropped_by_pts(stubs, media):
    path = media["h264_editlist.mp4"]
    stream_index = reference.best_stream(path)
    expected = [f["pts"] for f in reference.ffprobe_frames(path, stream_index)]
    discarded = [p["pts"] for p in reference.ffprobe_packets(path, stream_index) if p["discard"]]
    code = """
decoder = open_decoder({path!r}, {stream_index})
frames = decoder.decode_frames()
out = {{"pts": [f["pts"] for f in frames], "dropped": decoder.frames_dropped}}
del decoder
finish(out)
""".format(path=os.fspath(path), stream_index=stream_index)
    out = run(stubs, code)
    assert discarded and out["dropped"] == len(discarded)
    assert out["pts"] == expected and not set(out["pts"]) & set(discarded)
    assert_balanced(out["counters"], frames=len(expected))


REFUSAL = """
out = {{"reason": reason({path!r}, {stream_index})}}
try:
    open_decoder({path!r}, {stream_index})
except RuntimeError as error:
    out["error"] = str(error)
finish(out)
"""


@pytest.mark.parametrize("name, env, message", [
    ("hevc_bframes.mp4", {"STUB_NVDEC_UNSUPPORTED": "vp9,hevc"}, "NVDEC on Stub GPU 0 cannot decode hevc 4:2:0 8-bit"),
    ("h264_10bit.mp4", {"STUB_NVDEC_MAX_WIDTH": "256"},
     "NVDEC on Stub GPU 0: h264 4:2:0 10-bit at 320x240 exceeds the maximum 256x4096"),
    ("av1.mp4", {"STUB_NVDEC_MIN_HEIGHT": "256"}, "av1 4:2:0 8-bit at 320x240 is below the minimum 16x256"),
    ("vp9.webm", {"STUB_NVDEC_MAX_MB": "299"}, "vp9 4:2:0 8-bit at 320x240 has 300 macroblocks, more than the maximum 299"),
    ("mpeg2_mp2.mpg", {"STUB_NVDEC_UNSUPPORTED": "mpeg2"}, "cannot decode mpeg2 4:2:0 8-bit"),
])
def test_what_the_decoder_caps_refuse_is_said_in_a_sentence(stubs, media, name, env, message):
    path = media[name]
    stream_index = reference.best_stream(path)
    out = run(stubs, REFUSAL.format(path=os.fspath(path), stream_index=stream_index), **env)
    assert message in out["reason"]
    assert out["error"] == out["reason"]
    counters = out["counters"]
    assert counters["parsers_created"] == 0 and counters["decoders_created"] == 0
    assert counters["pushes"] == counters["pops"] > 0 and counters["stack_depth"] == 0


def test_streams_nvdec_cannot_take_and_a_missing_libnvcuvid_give_the_reason(stubs, media):
    video = media["h264_aac.mp4"]
    audio_index = reference.best_stream(video, "audio")
    out = run(stubs, REFUSAL.format(path=os.fspath(video), stream_index=audio_index))
    assert "is not a video stream" in out["reason"] and out["error"] == out["reason"]
    code = """
print(json.dumps({{"reason": reason({path!r}, 0)}}))
""".format(path=os.fspath(media["h264_bframes.mp4"]))
    missing = run_python(PRELUDE.replace('nvcuvid = ctypes.CDLL("libnvcuvid.so.1")', "nvcuvid = None")
                         .replace("nvcuvid.stub_nvcuvid_log.restype = ctypes.c_char_p", "") + code,
                         stubs["no_nvcuvid"])
    if missing["reason"] is None or "libnvcuvid.so.1 could not be opened" not in missing["reason"]:
        pytest.skip("a libnvcuvid.so.1 is on this machine's library path")


def test_a_driver_without_cuvidGetDecoderCaps_is_refused_with_the_reason(stubs, media):
    path = media["h264_bframes.mp4"]
    out = run(stubs, REFUSAL.format(path=os.fspath(path), stream_index=0), directory="old_driver")
    assert out["reason"] == ("this driver's libnvcuvid.so.1 has no cuvidGetDecoderCaps "
                             "(the NVIDIA driver is too old)")
    assert out["error"] == out["reason"]


def test_more_frames_kept_alive_than_output_surfaces_is_a_clear_error(stubs, media):
    code = """
decoder = open_decoder({path!r}, 0)
out = {{"four": [f["pts"] for f in decoder.decode_frames(5, alive=4)]}}
try:
    decoder.decode_frames(6, alive=5)
except RuntimeError as error:
    out["five"] = str(error)
out["maps"] = counters()["maps"]
out["next"] = [f["pts"] for f in decoder.decode_frames(2)]
del decoder
finish(out)
""".format(path=os.fspath(media["h264_bframes.mp4"]))
    out = run(stubs, code)
    assert out["four"] == [512 * i for i in range(5)]
    assert out["five"] == ("all 4 NVDEC output surfaces are mapped: release decoded frames (av_frame_unref) "
                           "before decoding more")
    assert out["maps"] == 5 + 4
    assert out["next"] == [512 * 9, 512 * 10], "the picture that found no surface is still queued"
    assert out["counters"]["map_failures"] == 0, "refused before asking the driver"
    assert_balanced(out["counters"])


def test_a_format_the_parser_finds_unsupported_raises_after_the_parse_call(stubs, media):
    """FFmpeg says 4:2:0, the bitstream (the stub's sequence) says 4:2:2: the sequence callback's
    refusal is raised by next_frame, again by the next call (the decoder stays refused), with the
    context stack left balanced."""
    path = media["h264_bframes.mp4"]
    code = """
decoder = open_decoder({path!r}, 0)
out = {{}}
for attempt in ("first", "second"):
    try:
        decoder.decode_frames(1)
        out[attempt] = ["no error", ""]
    except Exception as error:
        out[attempt] = [type(error).__name__, str(error)]
del decoder
finish(out)
""".format(path=os.fspath(path))
    out = run(stubs, code, STUB_NVDEC_CHROMA="2")
    refusal = ["NvdecUnsupportedError", "torchcodec's CUDA colour conversion does not handle h264 4:2:2 8-bit "
                                        "(only 4:2:0 and 4:4:4)"]
    assert out["first"] == out["second"] == refusal
    assert out["counters"]["decoders_created"] == 0
    assert_balanced(out["counters"])


CACHE = """
path_of = {paths!r}
def decode(name, count=3):
    decoder = open_decoder(path_of[name], 0)
    decoder.decode_frames(count)
    return decoder

def created_by_codec():
    made = {{}}
    for line in log().splitlines():
        if line.startswith("create("):
            made[line.split(" -> ")[1]] = line[len("create("):].split(",")[0]
    return made

def destroyed_codecs():
    made = created_by_codec()
    return [made[line[len("destroy("):-1]] for line in log().splitlines() if line.startswith("destroy(")]

out = {{"default": _cuda.get_nvdec_cache_capacity()}}
try:
    _cuda.set_nvdec_cache_capacity(-1)
except ValueError as error:
    out["negative"] = str(error)
"""


def cache_paths(media) -> dict[str, str]:
    return {name: os.fspath(media[name]) for name in ("h264_bframes.mp4", "hevc_bframes.mp4", "vp9.webm")}


def test_a_second_decoder_of_the_same_format_reuses_the_cached_one(stubs, media):
    code = CACHE.format(paths=cache_paths(media)) + """
first = decode("h264_bframes.mp4")
del first
second = decode("h264_bframes.mp4", 90)
out["created"] = counters()["decoders_created"]
out["destroyed_while_used"] = counters()["decoders_destroyed"]
del second
out["destroyed_after"] = counters()["decoders_destroyed"]
finish(out)
"""
    out = run(stubs, code)
    assert out["default"] == 20
    assert "must be non-negative, got -1" in out["negative"]
    assert out["created"] == 1 and out["destroyed_while_used"] == 0
    assert out["destroyed_after"] == 0, "an idle decoder stays in the cache"
    assert out["counters"]["parsers_created"] == 2
    assert_balanced(out["counters"])


def test_capacity_zero_destroys_decoders_when_their_user_goes(stubs, media):
    code = CACHE.format(paths=cache_paths(media)) + """
_cuda.set_nvdec_cache_capacity(0)
decoder = decode("h264_bframes.mp4")
out["live"] = counters()["decoders_destroyed"]
del decoder
out["gone"] = counters()["decoders_destroyed"]
decode("h264_bframes.mp4")
out["created"] = counters()["decoders_created"]
finish(out)
"""
    out = run(stubs, code)
    assert (out["live"], out["gone"], out["created"]) == (0, 1, 2)
    assert_balanced(out["counters"])


def test_the_least_recently_used_decoder_is_evicted_beyond_the_capacity(stubs, media):
    code = CACHE.format(paths=cache_paths(media)) + """
_cuda.set_nvdec_cache_capacity(2)
for name in ("h264_bframes.mp4", "hevc_bframes.mp4", "vp9.webm"):
    decode(name)                       # each returned to the cache when the decoder goes
out["evicted"] = destroyed_codecs()
decode("hevc_bframes.mp4")             # still cached: reused
out["created_after_hevc"] = counters()["decoders_created"]
decode("h264_bframes.mp4")             # evicted: made again, and vp9 is now the least recently used
out["created_after_h264"] = counters()["decoders_created"]
out["evicted_after"] = destroyed_codecs()
_cuda.set_nvdec_cache_capacity(1)
out["shrunk"] = destroyed_codecs()
finish(out)
"""
    out = run(stubs, code)
    assert out["evicted"] == ["h264"]
    assert out["created_after_hevc"] == 3 and out["created_after_h264"] == 4
    assert out["evicted_after"] == ["h264", "vp9"]
    assert out["shrunk"] == ["h264", "vp9", "hevc"]
    assert_balanced(out["counters"])


def test_a_decoder_returned_while_the_cache_is_busy_is_filed_later_without_waiting(stubs, media):
    """A deallocator (maybe inside a garbage collection on the thread that holds the cache's lock)
    never waits for the lock: its decoder is queued and filed by the next cache operation."""
    code = CACHE.format(paths=cache_paths(media)) + """
decoder = decode("h264_bframes.mp4")
_nvdec_cache.cache.lock.acquire()
del decoder                            # would deadlock if it waited for the lock
out["queued"] = len(_nvdec_cache.cache.returned)
_nvdec_cache.cache.lock.release()
decode("h264_bframes.mp4")             # files the queued decoder, then takes it
out["queued_after"] = len(_nvdec_cache.cache.returned)
out["created"] = counters()["decoders_created"]
finish(out)
"""
    out = run(stubs, code)
    assert (out["queued"], out["queued_after"], out["created"]) == (1, 0, 1)
    assert_balanced(out["counters"])


PIPELINE = """
decoder = open_decoder({path!r}, 0)
frames = decoder.decode_frames({count}, peek={peek})
before = counters()
out = {{"pts": [f["pts"] for f in frames], "peek": [f["peek"] for f in frames],
        "host_waits": decoder.host_waits, "early_maps": decoder.early_maps, "budget": decoder.feed_budget,
        "high_water": decoder.queue_high_water, "before": before, "log": log()}}
del decoder, frames
finish(out)
"""


def test_released_frames_are_unmapped_by_later_maps_without_any_host_wait(stubs, media):
    """Releasing a frame (av_frame_unref) calls no driver function: its slot is unmapped by a later
    map once the slot's `done` event has passed (cuEventQuery, no wait). Maps are followed by
    events on the decoder's stream, not by a synchronisation: no host wait at all."""
    path = media["h264_bframes.mp4"]
    out = run(stubs, PIPELINE.format(path=os.fspath(path), count=90, peek=None))
    assert out["pts"] == [f["pts"] for f in reference.ffprobe_frames(path, 0)]
    before = out["before"]
    assert out["host_waits"] == 0 and before["event_syncs"] == 0 and before["stream_syncs"] == 0
    assert before["event_queries"] >= 90 - 4, "released slots are polled"
    assert before["maps"] == 90 and before["unmaps"] >= 90 - 4, "and unmapped as soon as they are free"
    assert before["events_created"] == 8, "ready and done per output slot, made once"
    assert_balanced(out["counters"], frames=90)


def test_the_host_waits_only_when_every_output_surface_is_taken(stubs, media):
    """Readers that never finish (the stub's events stay "not ready"): the first four maps take the
    free slots; from then on each map must get a surface back, and waits on the host for the slot
    released first, once per map, the only host waits."""
    path = media["h264_bframes.mp4"]
    out = run(stubs, PIPELINE.format(path=os.fspath(path), count=30, peek=None), STUB_EVENT_PENDING_QUERIES="1000000")
    assert out["pts"] == [f["pts"] for f in reference.ffprobe_frames(path, 0)][:30]
    assert out["host_waits"] == 30 - 4 == out["before"]["event_syncs"]
    assert out["before"]["stream_syncs"] == 0
    assert out["before"]["event_not_ready"] > 0
    assert_balanced(out["counters"])


def test_the_parser_is_kept_ahead_by_the_decode_surface_budget(stubs, media):
    """Packets are fed while fewer than two displayed pictures wait (the decode surfaces beyond the
    parser's minimum hold them): the first frame is mapped only after two pictures were displayed,
    and the parser, which takes its surfaces in turn, never decodes into a waiting picture's
    surface."""
    path = media["h264_bframes.mp4"]
    out = run(stubs, PIPELINE.format(path=os.fspath(path), count=90, peek="samples(1)"))
    assert [p for p in out["peek"]] == [[16 + pts % 219, 128] for pts in out["pts"]]
    assert out["budget"] == 2 and out["high_water"] >= 2 and out["early_maps"] == 0
    lines = out["log"].splitlines()
    first_map = next(i for i, line in enumerate(lines) if line.startswith("map("))
    timed = [line for line in lines[:first_map] if line.startswith("parse(") and ", ts=-1," not in line]
    assert len(timed) >= 4 + 2, "the reorder window (4) and two waiting pictures before the first map"
    assert out["counters"]["map_failures"] == 0
    assert_balanced(out["counters"], frames=90)


def test_a_parser_that_reuses_a_waiting_pictures_surface_gets_that_picture_mapped_first(stubs, media):
    """A parser that takes the lowest free surface decodes into the surface of a picture just
    displayed: the decode callback maps that picture first (the stub would refuse to map an
    overwritten surface), and from then on the parser is fed only when no picture waits."""
    path = media["h264_bframes.mp4"]
    out = run(stubs, PIPELINE.format(path=os.fspath(path), count=90, peek="samples(1)"), STUB_NVDEC_ALLOC="lowest")
    assert out["pts"] == [f["pts"] for f in reference.ffprobe_frames(path, 0)]
    assert [p for p in out["peek"]] == [[16 + pts % 219, 128] for pts in out["pts"]], "every picture intact"
    assert out["early_maps"] > 0 and out["budget"] == 1
    assert out["counters"]["map_failures"] == 0
    assert_balanced(out["counters"], frames=90)


def test_interpolated_timestamps_come_back_in_the_streams_time_base(stubs, media):
    """ulClockRate is the stream's time base (1/12800 -> 12800 Hz): a parser that interpolates the
    timestamps of packets without one (the stub, told to ignore the packets' timestamps) returns
    them in the stream's units, here the CPU decoder's pts (25 fps: 512 ticks per frame)."""
    path = media["h264_25fps_2s.mp4"]
    code = PIPELINE.format(path=os.fspath(path), count=-1, peek=None).replace("del decoder, frames", """
out["clocks"] = [nvdec_probe.clock_rate(*tb) for tb in ((1, 12800), (1, 90000), (2, 90000), (1001, 30000), (0, 1))]
del decoder, frames""")
    out = run(stubs, code, STUB_NVDEC_UNTIMED="1", STUB_NVDEC_FPS="25")
    assert "clock=12800)" in next(line for line in out["log"].splitlines() if line.startswith("parser("))
    assert out["pts"] == [f["pts"] for f in reference.ffprobe_frames(path, 0)] == [512 * k for k in range(50)]
    assert out["clocks"] == [12800, 90000, 45000, 0, 0], "den / num where integral, else the parser's default"
    assert_balanced(out["counters"], frames=50)


def test_decoders_and_surfaces_are_released_before_the_context_at_exit(stubs, media, tmp_path):
    """Interpreter exit with a decoder in use, a frame still mapped (the engine holds one), a decoder
    in the cache, and _nvdec imported before the driver was loaded (so its own exit handlers would
    run after the driver's): the driver's release hook destroys every decoder and unmaps every
    surface first; nothing pushes the released context afterwards."""
    path = media["h264_bframes.mp4"]
    frames = reference.ffprobe_frames(path, 0)
    time_base = reference.ffprobe_stream(path, 0)["time_base"]
    code = """
import sys
import numpy as np
sys.path.insert(0, ".")
import nvdec_probe
from torchcodec._cuda import _nvdec, _driver
from torchcodec._core._demuxer import Demuxer
from torchcodec._core._frame_index import FrameIndex
from torchcodec._core._video_reader import VideoReader
context = _driver.load_driver().context(0)
other = Demuxer({other!r})
cached = _nvdec.NvdecDecoder(other, 0, context)
nvdec_probe.decode_frames(cached, other, 3)
del cached                                       # its CUVID decoder goes to the cache
index = FrameIndex.from_lists({time_base!r}, {pts!r}, {durations!r}, {keys!r})
demuxer = Demuxer({path!r})
engine = VideoReader(demuxer, 0, index, 0, True, decoder=_nvdec.NvdecDecoder(demuxer, 0, context))
rgb = np.zeros((1, 240, 320, 3), np.uint8)
engine.decode_at(np.array([{target}], np.int64), 0, rgb.ctypes.data, rgb.strides[0], rgb.strides[1], 240, 320,
                 False, np.zeros(1), np.zeros(1))
print("{{}}")                                     # the engine keeps its last frame mapped until exit
""".format(path=os.fspath(path), other=os.fspath(media["hevc_bframes.mp4"]),
           time_base=(time_base.numerator, time_base.denominator),
           pts=[f["pts"] for f in frames], durations=[f["duration"] for f in frames],
           keys=[f["key_frame"] for f in frames], target=frames[40]["pts"])
    cuda_report, nvdec_report = tmp_path / "cuda.txt", tmp_path / "nvdec.txt"
    run_python(code, stubs["nvdec"], STUB_REPORT=str(cuda_report), STUB_NVDEC_REPORT=str(nvdec_report))
    cuda = dict(item.split("=") for item in cuda_report.read_text().split())
    nvdec = dict(item.split("=") for item in nvdec_report.read_text().split())
    assert cuda["retains"] == cuda["releases"] == "1"
    assert cuda["pushes_released"] == "0" and nvdec["after_release"] == "0", "the released context was used"
    assert nvdec["decoders_created"] == nvdec["decoders_destroyed"] == "2"
    assert nvdec["maps"] == nvdec["unmaps"] != "0" and nvdec["destroyed_while_mapped"] == "0"
    assert cuda["events_created"] == cuda["events_destroyed"]
    assert cuda["streams_created"] == cuda["streams_destroyed"] == "2"


def stub_surface_greys() -> np.ndarray:
    """The CLI's RGB grey level (swscale, BT.601 limited range) of an NV12 surface of luma 16 + k and
    chroma 128, for k = 0 .. 218: the stub's surface of a picture whose pts % 219 is k."""
    height = 2 * 219
    luma = np.repeat(16 + np.arange(219, dtype=np.uint8), 2)[:, None].repeat(64, axis=1)
    chroma = np.full((219, 64), 128, np.uint8)
    rgb = subprocess.run([reference.FFMPEG, "-v", "error", "-f", "rawvideo", "-pix_fmt", "nv12", "-s", f"64x{height}",
                          "-i", "-", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"],
                         input=luma.tobytes() + chroma.tobytes(), capture_output=True, check=True).stdout
    return np.frombuffer(rgb, np.uint8).reshape(height, 64, 3)[::2, 32, 0]


def test_the_video_engine_decodes_any_frames_through_nvdec_with_its_seeks(stubs, media):
    """VideoStream (exact mode) drives NvdecDecoder like the CPU decoder: frames asked out of order
    and repeated come from seeks, flushes and next_frame. The stub's surfaces are host memory, so the
    CPU Scaler can convert them: the grey level of a surface of luma 16 + pts % 219 names the frame."""
    path = media["h264_bframes.mp4"]
    frames = reference.ffprobe_frames(path, 0)
    time_base = reference.ffprobe_stream(path, 0)["time_base"]
    wanted = [50, 3, 3, 89, 0, 31, 60, 61]
    code = """
import numpy as np
from torchcodec._core._frame_index import FrameIndex
from torchcodec._core._video_reader import VideoReader
index = FrameIndex.from_lists({time_base!r}, {pts!r}, {durations!r}, {keys!r})
demuxer = Demuxer({path!r})
engine = VideoReader(demuxer, 0, index, 0, True, decoder=_nvdec.NvdecDecoder(demuxer, 0, context))
targets = np.array({targets!r}, dtype=np.int64)
rgb = np.zeros((len(targets), 240, 320, 3), np.uint8)
pts, durations = np.zeros(len(targets)), np.zeros(len(targets))
engine.decode_at(targets, 0, rgb.ctypes.data, rgb.strides[0], rgb.strides[1], 240, 320, False, pts, durations)
out = {{"grey": rgb[:, 120, 160, 0].tolist(), "flat": bool((rgb == rgb[:, :1, :1, :1]).all()),
        "pts": pts.tolist(), "seeks": engine.seeks}}
del engine
finish(out)
""".format(time_base=(time_base.numerator, time_base.denominator), pts=[f["pts"] for f in frames],
           durations=[f["duration"] for f in frames], keys=[f["key_frame"] for f in frames],
           path=os.fspath(path), targets=[frames[i]["pts"] for i in wanted])
    out = run(stubs, code)
    targets = [frames[i]["pts"] for i in wanted]
    assert out["pts"] == pytest.approx([t * time_base for t in targets])
    assert out["flat"]
    assert out["grey"] == [stub_surface_greys()[pts % 219] for pts in targets]
    assert out["seeks"] >= 3
    assert_balanced(out["counters"])


READ_BACK = """
import sys
sys.path.insert(0, {tests!r})
from nvdec_frames import DeviceMemory
memory = DeviceMemory()
decoder = open_decoder({path!r}, {stream_index})

def summary(frame):
    planes = memory.frame_planes(frame)
    return [[list(plane.shape), sorted(set(plane.ravel().tolist()))] for plane in planes]

out = {{"frames": [(f["pts"], f["peek"]) for f in decoder.decode_frames(4, peek=summary)]}}
memory.close()
del decoder
finish(out)
"""


@pytest.mark.parametrize("name, env, shift, luma_shape, chroma_shape", [
    ("h264_bframes.mp4", {"STUB_NVDEC_CODED": "336x256", "STUB_NVDEC_DISPLAY": "8,8,328,248"}, 0, [240, 320],
     [120, 160]),
    ("h264_1080p.mp4", {"STUB_NVDEC_CODED": "1920x1088", "STUB_NVDEC_DISPLAY": "0,0,1920,1080"}, 0,
     [1080, 1920], [540, 960]),
    ("h264_350x198.mp4", {"STUB_NVDEC_CODED": "352x208", "STUB_NVDEC_DISPLAY": "0,0,350,198"}, 0,
     [198, 350], [99, 175]),
    ("hevc_10bit.mp4", {"STUB_NVDEC_DEPTH": "10"}, 8, [240, 320], [120, 160]),
    ("h264_yuv444.mp4", {"STUB_NVDEC_CHROMA": "3"}, 0, [240, 320], [240, 320]),
])
def test_the_gpu_tests_read_a_frames_display_area_back_through_the_driver(stubs, media, name, env, shift,
                                                                          luma_shape, chroma_shape):
    """tests/nvdec_frames.py, which the GPU tests compare frames with, run against the stub: every
    sample of the display area read back, and nothing of the crop's margin."""
    code = READ_BACK.format(tests=os.fspath(pathlib.Path(__file__).parent), path=os.fspath(media[name]),
                            stream_index=0)
    out = run(stubs, code, **env)
    for pts, (luma, cb, cr) in out["frames"]:
        assert luma == [luma_shape, [(16 + pts % 219) << shift]]
        assert cb == cr == [chroma_shape, [128 << shift]]
    assert_balanced(out["counters"], frames=4)


# ---- on a GPU (the cuda marker; tools/gpu_check.sh runs them) ----------------------------------

@pytest.fixture(scope="module")
def gpu(tmp_path_factory):
    """(device 0's CudaContext, DeviceMemory, the nvdec_probe test helper), or a skip without a usable
    NVIDIA GPU. A GPU without libnvcuvid.so.1 fails: NVDEC comes with the driver, and its absence
    must not pass as skips."""
    import torchcodec
    if not _build_config.CUDA_DRIVER or not torchcodec.cuda_available():
        pytest.skip("no usable NVIDIA GPU")
    from torchcodec._cuda import _driver
    try:
        _driver.load_nvcuvid()
    except _driver.CudaUnavailableError as error:
        pytest.fail(f"a GPU without NVDEC: {error}")
    directory = build_helper("nvdec_probe", tmp_path_factory.mktemp("nvdec_probe"))
    sys.path.insert(0, str(directory))
    import nvdec_probe
    memory = DeviceMemory()
    yield _driver.load_driver().context(0), memory, nvdec_probe
    memory.close()
    sys.path.remove(str(directory))


class ProbedDecoder:
    """An NvdecDecoder and its demuxer, driven through next_frame by the test helper."""

    def __init__(self, probe, demuxer, decoder) -> None:
        self.probe, self.demuxer, self.decoder = probe, demuxer, decoder

    def __getattr__(self, name: str):
        return getattr(self.decoder, name)

    def decode_frames(self, count: int = -1, peek=None, alive: int = 2) -> list[dict]:
        return self.probe.decode_frames(self.decoder, self.demuxer, count, peek, alive)

    def seek(self, pts=None) -> None:
        self.probe.seek(self.decoder, self.demuxer, pts)


def gpu_decoder(gpu, path, stream_index: int) -> ProbedDecoder:
    """An NvdecDecoder on the real device, or a skip saying why NVDEC cannot take the stream there."""
    from torchcodec._cuda import _nvdec, _nvdec_caps
    from torchcodec._core._demuxer import Demuxer
    context, _, probe = gpu
    demuxer = Demuxer(os.fspath(path), streams=stream_index)
    reason = _nvdec_caps.nvdec_unsupported_reason(demuxer, stream_index, context)
    if reason is not None:
        pytest.skip(reason)
    return ProbedDecoder(probe, demuxer, _nvdec.NvdecDecoder(demuxer, stream_index, context))


def cpu_frames(path, stream_index: int) -> tuple[list[list[np.ndarray]], int]:
    """The CLI's decoded planes of every frame, and their bit depth."""
    stream = reference.ffprobe_stream(path, stream_index)
    raw = reference.ffmpeg_raw_video(path, stream_index=stream_index)
    return (raw_frames(raw, stream["pix_fmt"], int(stream["width"]), int(stream["height"])),
            bit_depth(stream["pix_fmt"]))


def assert_same_samples(frames: list[dict], expected: list[list[np.ndarray]], depth: int, name: str) -> None:
    """NVDEC's planes (MSB-aligned when deeper than 8 bits) equal the CPU decoder's, sample by sample."""
    assert len(frames) == len(expected)
    for number, (frame, planes) in enumerate(zip(frames, expected)):
        for plane, got, want in zip("YUV", frame["peek"], planes):
            got = got >> (16 - depth) if depth > 8 else got
            np.testing.assert_array_equal(got, want, err_msg=f"{name}: frame {number} ({frame['pts']}), {plane}")


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["h264_bframes.mp4", "h264_1080p.mp4", "hevc_1080p.mp4", "h264_350x198.mp4",
                                  "h264_interlaced.mp4", "h264_bframes.ts", "h264_vfr.mkv", "h264_editlist.mp4",
                                  "h264_10bit.mp4", "h264_yuv444.mp4", "h264_yuv444_161x121.mp4",
                                  "hevc_bframes.mp4", "hevc_10bit.mp4", "vp9.webm", "vp9_161x121.webm",
                                  "vp8.webm", "av1.mp4"])
def test_on_the_gpu_nvdec_frames_equal_the_cpu_decoders(gpu, media, name, record_property):
    """Bit-exact codecs: the same pts in the same order, the same samples in every plane (1080p: the
    display area of a 1088-row surface; interlaced H.264: woven fields, as libavcodec gives them).
    How the real parser took its surfaces goes into the JUnit report: early_maps > 0 means it
    decoded into a waiting picture's surface (handled, but the feed budget's assumption failed)."""
    _, memory, _ = gpu
    path = media[name]
    stream_index = reference.best_stream(path)
    decoder = gpu_decoder(gpu, path, stream_index)
    frames = decoder.decode_frames(peek=memory.frame_planes)
    record_property("early_maps", decoder.early_maps)
    record_property("host_waits", decoder.host_waits)
    record_property("surfaces", str(decoder.surface_counts))
    assert [f["pts"] for f in frames] == [f["pts"] for f in reference.ffprobe_frames(path, stream_index)]
    expected, depth = cpu_frames(path, stream_index)
    assert_same_samples(frames, expected, depth, name)


@pytest.mark.cuda
def test_on_the_gpu_mpeg4_in_avi_decodes_every_frame_close_to_the_cpu(gpu, media):
    """MPEG-4 part 2 does not define its inverse DCT bit-exactly: NVDEC and libavcodec may differ a little."""
    _, memory, _ = gpu
    path = media["mpeg4_bframes.avi"]
    decoder = gpu_decoder(gpu, path, 0)
    frames = decoder.decode_frames(peek=memory.frame_planes)
    expected, _ = cpu_frames(path, 0)
    assert len(frames) == len(expected)
    for frame, planes in zip(frames, expected):
        for got, want in zip(frame["peek"], planes):
            assert np.abs(got.astype(int) - want).mean() < 1.0


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["h264_bframes.mp4", "h264_1080p.mp4", "hevc_bframes.mp4", "hevc_1080p.mp4",
                                  "vp9.webm", "av1.mp4"])
def test_on_the_gpu_a_flush_after_a_seek_gives_the_cpu_frames_from_the_key_frame_on(gpu, media, name):
    """hevc_bframes.mp4's second key frame is a CRA followed by a RASL picture: after the seek the
    parser must skip it, as libavcodec does (the pts list and the planes say so)."""
    _, memory, _ = gpu
    path = media[name]
    stream_index = reference.best_stream(path)
    pts = [f["pts"] for f in reference.ffprobe_frames(path, stream_index)]
    key = [p["pts"] for p in reference.ffprobe_packets(path, stream_index) if p["key"]][1]
    expected, depth = cpu_frames(path, stream_index)
    decoder = gpu_decoder(gpu, path, stream_index)
    assert [f["pts"] for f in decoder.decode_frames(10)] == pts[:10]
    decoder.seek(key)
    frames = decoder.decode_frames(peek=memory.frame_planes)
    assert [f["pts"] for f in frames] == [p for p in pts if p >= key]
    assert_same_samples(frames, expected[pts.index(key):], depth, name)
    decoder.seek(None)
    assert [f["pts"] for f in decoder.decode_frames(5)] == pts[:5]


@pytest.mark.cuda
def test_on_the_gpu_exit_with_decoders_and_frames_alive_is_clean(gpu, media):
    """A process that exits with a CUDA decoder in use, its frames alive and a decoder in the cache:
    the release hook tears NVDEC down before the primary context goes; nothing is reported."""
    import subprocess
    code = f"""
import torchcodec
from torchcodec.decoders import VideoDecoder
torchcodec.set_bridge("numpy")
cached = VideoDecoder({os.fspath(media["hevc_bframes.mp4"])!r}, device="cuda")
cached.get_frames_at([0, 5])
del cached
decoder = VideoDecoder({os.fspath(media["h264_1080p.mp4"])!r}, device="cuda")
frames = decoder.get_frames_at([3, 20])
print("decoded")
"""
    result = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and result.stdout.strip() == "decoded", result.stderr
    assert result.stderr == "", result.stderr

