"""VideoDecoder(device="cuda") end to end without a GPU: the public API over the stub libcuda.so.1
(tests/cuda_stubs/libcuda_stub.c, whose "device" memory is host memory, with the real kernels/*.cu
run on the CPU by kernel_emulation.cpp) and the stub libnvcuvid.so.1 (libnvcuvid_stub.c: a parser
that displays pictures in timestamp order, surfaces whose luma is 16 + timestamp % 219 and chroma 128).

What this proves: the engine drives NVDEC through the public methods (the right picture for every
request, in the caller's order, with the CPU decoder's timestamps), the CPU fallback and the FFmpeg
backend give the CPU decoder's pixels through the kernels, outputs are torchcodec's device buffers
when neither torch nor cupy is the bridge, and nothing leaks. tests/test_cuda_decoding.py does the
same on a real GPU.
"""
from __future__ import annotations

import os
import pathlib
import sys

import numpy as np
import pytest

import colour_probe

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "cuda_stubs"))
from stub_build import HOST_READ, build_decoding_stubs, run_python  # noqa: E402


@pytest.fixture(scope="module")
def stubs(tmp_path_factory, media):
    return build_decoding_stubs(tmp_path_factory.mktemp("cuda_decoding"))


PRELUDE = """
import ctypes, gc, json, pickle
import numpy as np
import torchcodec
from torchcodec.decoders import VideoDecoder, set_cuda_backend
torchcodec.set_bridge("numpy")
cuda = ctypes.CDLL("libcuda.so.1")
nvcuvid = ctypes.CDLL("libnvcuvid.so.1")
""" + HOST_READ + """
def counters():
    out = {name: ctypes.c_int.in_dll(cuda, "stub_" + name).value
           for name in ("pushes", "pops", "stack_depth", "events_created", "events_destroyed")}
    out["live_bytes"] = ctypes.c_longlong.in_dll(cuda, "stub_live_bytes").value
    for name in ("maps", "unmaps", "decoders_created", "decoders_destroyed", "map_failures"):
        out[name] = ctypes.c_int.in_dll(nvcuvid, "stub_nvdec_" + name).value
    return out

def finish(out):
    gc.collect()
    torchcodec.decoders.set_nvdec_cache_capacity(0)
    gc.collect()
    out["counters"] = counters()
    print(json.dumps(out))
"""


def run(stubs, code: str, **env: str) -> dict:
    return run_python(PRELUDE + code, stubs, **env)


def assert_balanced(counters: dict) -> None:
    assert counters["pushes"] == counters["pops"] > 0 and counters["stack_depth"] == 0
    assert counters["maps"] == counters["unmaps"] and counters["map_failures"] == 0
    assert counters["decoders_created"] == counters["decoders_destroyed"]
    assert counters["live_bytes"] == 0, "device memory left allocated"


@pytest.fixture(scope="module")
def grey(tmp_path_factory):
    """The RGB value of a stub surface (luma 16 + pts % 219, chroma 128), by colour.h on the CPU
    (tests/colour_probe.py) for the corpus's unspecified matrix (BT.601) and limited range."""
    formula = colour_probe.build(tmp_path_factory.mktemp("colour_probe"))

    def value(pts: int) -> int:
        y = np.full((2, 2), 16 + pts % 219, np.uint8)
        chroma = np.full((2, 2), 128, np.uint8)
        rgb = formula.rgb8(2, False, y, chroma, chroma)
        assert (rgb == rgb[0, 0, 0]).all()
        return int(rgb[0, 0, 0])
    return value


NVDEC_METHODS = """
path = {path!r}
cpu = VideoDecoder(path)
decoder = VideoDecoder(path, device="cuda")
out = {{"device": decoder.device, "fallback": bool(decoder.cpu_fallback), "status": str(decoder.cpu_fallback)}}
batch = decoder.get_frames_at([50, 3, 50, 0, 89])
out["type"] = type(batch.data).__name__
out["shape"] = list(batch.data.shape)
frames = host(batch.data)
out["channels_equal"] = bool((frames == frames[:, :1]).all())
out["values"] = [sorted(set(frames[k].ravel().tolist())) for k in range(len(frames))]
out["pts"] = [float(t) for t in batch.pts_seconds]
out["cpu_pts"] = [float(t) for t in cpu.get_frames_at([50, 3, 50, 0, 89]).pts_seconds]
tb = {tb}
out["ticks"] = [round(t / tb) for t in out["pts"]]
played = decoder.get_frames_played_at([1.5, 0.2])
out["played"] = [float(t) for t in played.pts_seconds]
out["cpu_played"] = [float(t) for t in cpu.get_frames_played_at([1.5, 0.2]).pts_seconds]
out["played_values"] = [sorted(set(f.ravel().tolist())) for f in host(played.data)]
out["single"] = sorted(set(host(decoder.get_frame_at(-1).data).ravel().tolist()))
out["last_tick"] = round(decoder.get_frame_at(-1).pts_seconds / tb)
out["iterated"] = [sorted(set(host(frame).ravel().tolist())) for _, frame in zip(range(3), decoder)]
out["first_ticks"] = [round(t / tb) for t in cpu.get_frames_in_range(0, 3).pts_seconds]
del decoder, batch, played
finish(out)
"""


def test_nvdec_gives_the_requested_pictures_in_the_callers_order(stubs, media, grey):
    path = media["h264_bframes.mp4"]
    out = run(stubs, NVDEC_METHODS.format(path=os.fspath(path), tb=1 / 15360))
    assert out["device"] == "cuda:0" and out["fallback"] is False
    assert out["status"] == "[NVDEC] Fallback status: No fallback required"
    assert out["type"] == "DeviceBuffer" and out["shape"] == [5, 3, 240, 320]
    assert out["channels_equal"]
    assert out["pts"] == out["cpu_pts"] and out["played"] == out["cpu_played"]
    assert out["values"] == [[grey(t)] for t in out["ticks"]]
    assert out["values"][0] == out["values"][2] and len({v[0] for v in out["values"]}) == 4
    assert out["played_values"] == [[grey(round(t * 15360))] for t in out["played"]]
    assert out["single"] == [grey(out["last_tick"])]
    assert out["iterated"] == [[grey(t)] for t in out["first_ticks"]]
    assert_balanced(out["counters"])


FALLBACK = """
path = {path!r}
with set_cuda_backend({backend!r}):
    decoder = VideoDecoder(path, device="cuda", dimension_order="NHWC")
out = {{"known_before": decoder.cpu_fallback.status_known}}
frames = host(decoder.get_frames_at([0, 30, 59, 30]).data)
out["fallback"] = bool(decoder.cpu_fallback)
out["status"] = str(decoder.cpu_fallback)
expected = VideoDecoder(path, dimension_order="NHWC").get_frames_at([0, 30, 59, 30]).data
out["max_diff"] = int(np.abs(frames.astype(int) - expected).max())
out["shape"] = list(frames.shape)
del decoder
finish(out)
"""


def test_a_stream_nvdec_refuses_is_decoded_on_the_cpu_and_converted_by_the_kernels(stubs, media):
    out = run(stubs, FALLBACK.format(path=os.fspath(media["h264_bt709.mp4"]), backend="nvdec"),
              STUB_NVDEC_UNSUPPORTED="h264")
    assert out["known_before"] is True and out["fallback"] is True
    assert "Falling back to the CPU decoder: NVDEC on Stub GPU 0 cannot decode h264 4:2:0 8-bit" in out["status"]
    assert out["shape"] == [4, 240, 320, 3]
    assert out["max_diff"] == 0, "8-bit 4:2:0: the kernels give swscale's bytes"
    assert_balanced(out["counters"])


def test_the_fallback_is_logged_at_info(stubs, media):
    # As TorchCodec's "ALL": the fallback and its reason are told through the "torchcodec" logger.
    out = run(stubs, f"""
import logging
messages = []
class Keep(logging.Handler):
    def emit(self, record):
        messages.append((record.levelname, record.getMessage()))
logging.getLogger().addHandler(Keep())
torchcodec.set_log_level("INFO")
decoder = VideoDecoder({os.fspath(media["h264_bt709.mp4"])!r}, device="cuda")
out = {{"messages": [m for m in messages if "NVDEC" in m[1]]}}
del decoder
finish(out)
""", STUB_NVDEC_UNSUPPORTED="h264")
    [(level, message)] = out["messages"]
    assert level == "INFO"
    assert message.startswith("Video stream not supported by NVDEC; falling back to CPU decoding: "
                              "NVDEC on Stub GPU 0 cannot decode h264 4:2:0 8-bit")


def test_the_ffmpeg_backend_reports_its_fallback_after_the_first_frame(stubs, media):
    """The stub's NVDEC cannot start FFmpeg's hwaccel (the stub parses nothing), so FFmpeg decodes on the
    CPU: the status is unknown until the first frame, then says so; pixels are the CPU decoder's."""
    out = run(stubs, FALLBACK.format(path=os.fspath(media["h264_bframes.mp4"]), backend="ffmpeg"))
    assert out["known_before"] is False
    assert out["fallback"] is True and "FFmpeg decoded it on the CPU" in out["status"]
    assert out["max_diff"] == 0


OUT_AND_PICKLE = """
from torchcodec._cuda import _driver, _device_buffer
path = {path!r}
decoder = VideoDecoder(path, device="cuda", dimension_order="NHWC")
context = _driver.load_driver().context(0)
target = _device_buffer.DeviceBuffer.empty(context, (2, 240, 320, 3), "uint8", 1)
result = decoder.get_frames_at([10, 20], out=target)
out = {{"same": result.data is target, "values": [sorted(set(f.ravel().tolist())) for f in host(target)]}}
out["ticks"] = [round(t * 15360) for t in result.pts_seconds]
try:
    decoder.get_frames_at([10], out=target)
except ValueError as error:
    out["wrong_shape"] = str(error)
copy = pickle.loads(pickle.dumps(decoder))
out["copy_device"] = copy.device
out["copy_values"] = [sorted(set(f.ravel().tolist())) for f in host(copy.get_frames_at([10, 20]).data)]
del decoder, copy, result, target
finish(out)
"""


def test_out_takes_a_device_buffer_and_a_pickled_decoder_stays_on_its_device(stubs, media, grey):
    out = run(stubs, OUT_AND_PICKLE.format(path=os.fspath(media["h264_bframes.mp4"])))
    assert out["same"] is True
    assert out["values"] == [[grey(t)] for t in out["ticks"]]
    assert "out= has shape (2, 240, 320, 3); this request needs (1, 240, 320, 3)" in out["wrong_shape"]
    assert out["copy_device"] == "cuda:0" and out["copy_values"] == out["values"]
    assert_balanced(out["counters"])


ROTATED = """
decoder = VideoDecoder({path!r}, device="cuda")
batch = decoder.get_frames_at([0, 1])
out = {{"shape": list(batch.data.shape), "cpu_shape": list(VideoDecoder({path!r}).get_frames_at([0, 1]).data.shape)}}
out["values"] = [sorted(set(f.ravel().tolist())) for f in host(batch.data)]
out["ticks"] = [round(t * 12800) for t in batch.pts_seconds]
del decoder, batch
finish(out)
"""


def test_rotation_gives_the_cpu_decoders_shape(stubs, media, grey):
    out = run(stubs, ROTATED.format(path=os.fspath(media["h264_rotate90.mp4"])))
    assert out["shape"] == out["cpu_shape"] == [2, 3, 320, 240]
    assert out["values"] == [[grey(t)] for t in out["ticks"]]
    assert_balanced(out["counters"])


SAMPLER = """
from torchcodec.samplers import clips_at_regular_indices
decoder = VideoDecoder({path!r}, device="cuda")
clips = clips_at_regular_indices(decoder, num_clips=3, num_frames_per_clip=2, num_indices_between_frames=5)
data = host(clips.data)
out = {{"type": type(clips.data).__name__, "shape": list(data.shape),
        "values": [[sorted(set(frame.ravel().tolist())) for frame in clip] for clip in data],
        "ticks": [[round(t * 15360) for t in clip] for clip in np.asarray(clips.pts_seconds).tolist()]}}
del decoder, clips
finish(out)
"""


def test_samplers_take_a_cuda_decoder_and_give_clips_of_device_frames(stubs, media, grey):
    out = run(stubs, SAMPLER.format(path=os.fspath(media["h264_bframes.mp4"])))
    assert out["type"] == "DeviceBuffer" and out["shape"] == [3, 2, 3, 240, 320]
    assert out["values"] == [[[grey(t)] for t in clip] for clip in out["ticks"]]
    assert_balanced(out["counters"])


FORK = """
import os
decoder = VideoDecoder({path!r}, device="cuda")
decoder.get_frame_at(0)
read, write = os.pipe()
pid = os.fork()
if pid == 0:
    try:
        decoder.get_frame_at(1)
        message = "decoded"
    except RuntimeError as error:
        message = str(error)
    os.write(write, message.encode())
    os._exit(0)
os.close(write)
os.waitpid(pid, 0)
out = {{"child": os.read(read, 4096).decode(), "parent": sorted(set(host(decoder.get_frame_at(1).data).ravel().tolist()))}}
del decoder
finish(out)
"""


def test_a_forked_child_is_told_to_use_spawn_and_the_parent_goes_on(stubs, media, grey):
    out = run(stubs, FORK.format(path=os.fspath(media["h264_bframes.mp4"])))
    assert "CUDA was initialised in the parent of this forked process" in out["child"]
    assert "'spawn'" in out["child"]
    assert len(out["parent"]) == 1
    assert_balanced(out["counters"])


NO_HOST_WAITS = """
cuda.stub_call_log.restype = ctypes.c_char_p
decoder = VideoDecoder({path!r}, device="cuda")
decoder.get_frame_at(0)
cuda.stub_clear_log()
before = {{name: ctypes.c_int.in_dll(cuda, "stub_" + name).value
          for name in ("event_syncs", "stream_syncs", "ctx_syncs", "event_not_ready")}}
batches = [decoder.get_frames_in_range(0, 45), decoder.get_frames_at([89, 60, 61, 30]),
           decoder.get_frames_in_range(46, 90, 2)]
waits = [line for line in cuda.stub_call_log().decode().splitlines()
         if line.startswith(("cuEventSynchronize", "cuStreamSynchronize", "cuCtxSynchronize"))]
after = {{name: ctypes.c_int.in_dll(cuda, "stub_" + name).value for name in before}}
out = {{"waits": waits, "counts": {{name: after[name] - before[name] for name in before}},
        "values": [[sorted(set(f.ravel().tolist())) for f in host(batch.data)] for batch in batches],
        "ticks": [[round(t * 15360) for t in batch.pts_seconds] for batch in batches],
        "decoded": sum(len(b.pts_seconds) for b in batches)}}
del decoder, batches
finish(out)
"""


@pytest.mark.parametrize("pending", ["0", "2"])
def test_decoding_through_the_public_api_waits_on_the_host_for_nothing(stubs, media, grey, pending):
    """No host synchronisation per frame (or at all) while NVDEC frames are decoded and converted:
    the converter's stream waits for the map's post-processing on the device (cuStreamWaitEvent),
    released surfaces are unmapped once cuEventQuery says their readers are done. With the stub's
    events answering "not ready" to their first two queries (readers still running), the released
    surfaces are polled again at later maps, and there are still enough of them: no host wait."""
    out = run(stubs, NO_HOST_WAITS.format(path=os.fspath(media["h264_bframes.mp4"])),
              STUB_EVENT_PENDING_QUERIES=pending)
    assert out["waits"] == [] and out["counts"]["event_syncs"] == out["counts"]["stream_syncs"] == 0
    assert out["counts"]["ctx_syncs"] == 0
    if pending != "0":
        assert out["counts"]["event_not_ready"] > 0, "readers were seen still running"
    for values, ticks in zip(out["values"], out["ticks"]):
        assert values == [[grey(t)] for t in ticks]
    assert_balanced(out["counters"])


TWO_STREAMS = """
from torchcodec._cuda import _driver, _device_buffer
cuda.stub_call_log.restype = ctypes.c_char_p
cuda.stub_event_covers.restype = ctypes.c_ulonglong
cuda.stub_stream_bit.restype = ctypes.c_ulonglong
context = _driver.load_driver().context(0)

class OnStream:
    '''Memory of a DeviceBuffer offered through a CUDA Array Interface v3 that names a stream.'''
    def __init__(self, stream):
        self.buffer = _device_buffer.DeviceBuffer.empty(context, (1, 240, 320, 3), "uint8", 1)
        self.__cuda_array_interface__ = {{"version": 3, "shape": (1, 240, 320, 3), "typestr": "|u1",
                                          "data": (self.buffer.ptr, False), "strides": None, "stream": stream}}

decoder = VideoDecoder({path!r}, device="cuda", dimension_order="NHWC")
first, second = OnStream(0x7000), OnStream(0x8000)
decoder.get_frames_at([40], out=first)
cuda.stub_clear_log()
decoder.get_frames_at([40], out=second)          # the engine's held frame, converted again elsewhere
calls = cuda.stub_call_log().decode().splitlines()
record = [line for line in calls if line.startswith("cuEventRecord")][-1]
done = int(record[len("cuEventRecord("):record.index(",")], 16)
covers = cuda.stub_event_covers(ctypes.c_void_p(done))
out = {{"calls": [line for line in calls if line.startswith(("cuStreamWaitEvent", "cuLaunchKernel", "cuEventRecord"))],
        "done": hex(done), "covers_both": all(covers & cuda.stub_stream_bit(ctypes.c_void_p(s)) for s in (0x7000, 0x8000)),
        "values": [sorted(set(host(o.buffer).ravel().tolist())) for o in (first, second)]}}
del decoder, first, second
finish(out)
"""


def test_a_frame_converted_again_on_another_stream_is_unmapped_after_both_reads(stubs, media, grey):
    """The video engine converts its held frame again when the same frame is asked for into memory
    written on another stream: that stream waits for the first read's `done` before recording it,
    so the event that gates the surface's unmap covers both streams' reads."""
    out = run(stubs, TWO_STREAMS.format(path=os.fspath(media["h264_bframes.mp4"])))
    waits = [line for line in out["calls"] if line.startswith("cuStreamWaitEvent(stream=0x8000")]
    assert len(waits) == 2 and waits[1] == f"cuStreamWaitEvent(stream=0x8000, {out['done']})"
    assert out["calls"][-1] == f"cuEventRecord({out['done']}, stream=0x8000)"
    assert out["covers_both"]
    assert out["values"][0] == out["values"][1] == [grey(40 * 512)]
    assert_balanced(out["counters"])


CODED_SIZE = """
decoder = VideoDecoder({path!r}, device="cuda", dimension_order="NHWC")
batch = decoder.get_frames_at([0, 7, 20])
frames = host(batch.data)
out = {{"shape": list(frames.shape), "values": [sorted(set(f.ravel().tolist())) for f in frames],
        "ticks": [round(t / {tb}) for t in batch.pts_seconds]}}
del decoder, batch
finish(out)
"""


@pytest.mark.parametrize("name, coded, tb", [("h264_1080p.mp4", "1920x1088", 1 / 15360),
                                             ("h264_350x198.mp4", "352x208", 1 / 15360)])
def test_frames_of_a_larger_coded_size_are_cropped_and_read_their_chroma_after_the_coded_rows(
        stubs, media, grey, name, coded, tb):
    """NVDEC surfaces hold the coded picture (1920x1088 for 1080p H.264): the chroma plane starts
    after the coded luma rows, not the displayed ones. Reading it from the displayed height would
    take luma samples for chroma, and the grey would turn to a colour."""
    from torchcodec.decoders import VideoDecoder as CpuDecoder
    width, height = (CpuDecoder(media[name]).metadata.width, CpuDecoder(media[name]).metadata.height)
    out = run(stubs, CODED_SIZE.format(path=os.fspath(media[name]), tb=tb), STUB_NVDEC_CODED=coded,
              STUB_NVDEC_DISPLAY=f"0,0,{width},{height}")
    assert out["shape"] == [3, height, width, 3]
    assert out["values"] == [[grey(t)] for t in out["ticks"]]
    assert_balanced(out["counters"])


APPROXIMATE = """
path = {path!r}
decoder = VideoDecoder(path, device="cuda", seek_mode="approximate")
cpu = VideoDecoder(path, seek_mode="approximate")
wanted = [0, 50, 10, 11, 89, 30]
batch = decoder.get_frames_at(wanted)
out = {{"pts": [float(t) for t in batch.pts_seconds],
        "cpu_pts": [float(t) for t in cpu.get_frames_at(wanted).pts_seconds],
        "values": [sorted(set(f.ravel().tolist())) for f in host(batch.data)],
        "played": [float(t) for t in decoder.get_frames_played_at([1.5, 0.3]).pts_seconds],
        "cpu_played": [float(t) for t in cpu.get_frames_played_at([1.5, 0.3]).pts_seconds]}}
del decoder, batch
finish(out)
"""


def test_approximate_mode_drives_nvdec_with_torchcodecs_cursor(stubs, media, grey):
    """Approximate mode's cursor asks the decoder how many frames it holds back (frames_in_flight:
    NVDEC's feed budget) to choose between decoding on and seeking; the frames are the CPU's."""
    out = run(stubs, APPROXIMATE.format(path=os.fspath(media["h264_bframes.mp4"])))
    assert out["pts"] == out["cpu_pts"] and out["played"] == out["cpu_played"]
    assert out["values"] == [[grey(round(t * 15360))] for t in out["pts"]]
    assert_balanced(out["counters"])
