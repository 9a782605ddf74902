"""The public CUDA-decoding API that works without a GPU: backend choice, NVDEC cache capacity,
the CPU-fallback report, device parsing. Decoding on a GPU: tests/test_cuda_decoding.py."""
from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from torchcodec.decoders import (CpuFallbackStatus, VideoDecoder, get_nvdec_cache_capacity, set_cuda_backend,
                                 set_nvdec_cache_capacity)
from torchcodec import _cuda
from torchcodec._core._devices import parse_device, register_device


def test_the_default_backend_is_nvdec_and_the_block_sets_and_restores_it():
    assert _cuda.current_backend() == "nvdec"
    with set_cuda_backend("ffmpeg"):
        assert _cuda.current_backend() == "ffmpeg"
        with set_cuda_backend("NVDEC"):
            assert _cuda.current_backend() == "nvdec"
        assert _cuda.current_backend() == "ffmpeg"
    assert _cuda.current_backend() == "nvdec"


def test_beta_is_torchcodecs_old_name_for_nvdec():
    with set_cuda_backend("beta"):
        assert _cuda.current_backend() == "nvdec"


def test_an_unknown_backend_is_refused_before_the_block_runs():
    ran = []
    with pytest.raises(ValueError, match="Invalid CUDA backend \\(vaapi\\).*'nvdec' and 'ffmpeg'"):
        with set_cuda_backend("vaapi"):
            ran.append(1)
    assert ran == [] and _cuda.current_backend() == "nvdec"


def test_the_backend_is_per_thread():
    seen = {}
    started, release = threading.Event(), threading.Event()

    def other():
        seen["before"] = _cuda.current_backend()
        started.set()
        release.wait(5)
        seen["after"] = _cuda.current_backend()

    with set_cuda_backend("ffmpeg"):
        thread = threading.Thread(target=other)
        thread.start()
        started.wait(5)
        release.set()
        thread.join(5)
    assert seen == {"before": "nvdec", "after": "nvdec"}


def test_nvdec_cache_capacity_defaults_to_20_and_is_validated():
    assert get_nvdec_cache_capacity() == 20
    try:
        set_nvdec_cache_capacity(0)
        assert get_nvdec_cache_capacity() == 0
        set_nvdec_cache_capacity(3)
        assert get_nvdec_cache_capacity() == 3
        with pytest.raises(ValueError, match="must be non-negative"):    # also a RuntimeError
            set_nvdec_cache_capacity(-1)
        for bad in (2.5, "4", True, None):
            with pytest.raises(TypeError, match="must be an int"):            # also a RuntimeError
                set_nvdec_cache_capacity(bad)
        assert get_nvdec_cache_capacity() == 3
    finally:
        set_nvdec_cache_capacity(20)


def test_setting_the_cache_capacity_does_not_open_the_driver():
    set_nvdec_cache_capacity(20)
    assert "torchcodec._cuda._nvdec" not in sys.modules


def test_fallback_status_reads_as_falsy_without_a_fallback_and_says_why_with_one():
    none = CpuFallbackStatus(backend="NVDEC")
    assert not none and none.reason is None
    assert str(none) == "[NVDEC] Fallback status: No fallback required"
    fallback = CpuFallbackStatus(reason="NVDEC on Stub GPU cannot decode hevc 4:2:2 10-bit", backend="NVDEC")
    assert fallback and "Falling back to the CPU decoder: NVDEC on Stub GPU cannot decode hevc 4:2:2" in str(fallback)
    unknown = CpuFallbackStatus(status_known=False, backend="FFmpeg CUDA")
    assert not unknown and "Unknown" in str(unknown)


def test_a_cpu_decoder_is_on_the_cpu_and_never_falls_back(h264):
    decoder = VideoDecoder(h264)
    assert decoder.device == "cpu"
    assert not decoder.cpu_fallback and "No fallback required" in str(decoder.cpu_fallback)


@pytest.mark.parametrize("device", ["cuda:x", "cuda:-1", "gpu", "cuda0", ":0"])
def test_malformed_devices_are_value_errors(h264, device):
    with pytest.raises(ValueError, match="Invalid device"):
        VideoDecoder(h264, device=device)


@pytest.mark.parametrize("device, parsed", [(None, ("cpu", None)), ("cpu", ("cpu", None)), ("cuda", ("cuda", 0)),
                                            ("cuda:0", ("cuda", 0)), ("cuda:3", ("cuda", 3))])
def test_device_names_parse_to_a_name_and_an_index(device, parsed):
    assert parse_device(device) == parsed



def test_a_cpu_decode_loads_nothing_of_the_cuda_wing_beyond_its_gate(media):
    # A fresh interpreter: decoding on the CPU, through the decoders and the building blocks, must
    # import torchcodec._cuda (the gate, which registers the device) and none of its modules.
    code = f"""
import sys
from torchcodec.decoders import AudioDecoder, ColorConverter, Demuxer, VideoDecoder
decoder = VideoDecoder({str(media["h264_aac.mp4"])!r})
decoder.get_frames_at([0, 5]); decoder[1]; str(decoder.cpu_fallback)
AudioDecoder({str(media["h264_aac.mp4"])!r}).get_all_samples()
demuxer = Demuxer({str(media["h264_bframes.mp4"])!r})
stream = demuxer.streams[0]
packet_decoder = stream.make_decoder(device="cpu")
frames = [frame for packet in demuxer for frame in packet_decoder.decode(packet)][:2]
ColorConverter(device="cpu").convert(frames[0]); frames[1].planes
print("gate" if "torchcodec._cuda" in sys.modules else "no gate")
print(sorted(name for name in sys.modules if name.startswith("torchcodec._cuda.")))
"""
    out = subprocess.run([sys.executable, "-P", "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.split("\n")[:2] == ["gate", "[]"]


def test_the_cuda_wing_registers_its_device_once():
    with pytest.raises(ValueError, match="cannot register the device 'cuda'"):
        register_device("cuda", lambda: None)
    with pytest.raises(ValueError, match="Invalid device 'tpu'.*use None, 'cpu', 'cuda' or 'cuda:N'"):
        parse_device("tpu")
