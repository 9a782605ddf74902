"""The CUDA device's parts, which torchcodec._cuda registers with the engine's device registry
(torchcodec._core._devices): the packet decoder and colour converter of a CUDA VideoDecoder, the
building blocks' CUDA decoders and converters, and the CPU-fallback report.

A CUDA VideoDecoder is the CPU decoder's reader (torchcodec._core._video_reader.VideoReader:
seeking, frame matching, batching) over two other blocks: the VideoPacketDecoder (NVIDIA's NVDEC
through torchcodec._cuda._nvdec, or libavcodec with FFmpeg's CUDA hwaccel, or libavcodec on the
CPU when neither can decode the stream) and a ColorConverter over the CUDA converter
(torchcodec._cuda._converter: the colour kernels, writing device memory on the output library's
stream). The compiled CUDA modules are imported when a part is asked for, after the gate
(torchcodec._cuda.reason) said they exist.
"""
from __future__ import annotations

from typing import Any

from torchcodec import _cuda, _outputs
from torchcodec._core._color_converter import converter_over
from torchcodec._core._devices import CpuFallbackStatus, parse_device
from torchcodec._core._packet_decoder import cuda_hwaccel_unavailable_reason, make_video_decoder
from torchcodec._logging import _LOGGER


def choose_decoder(context: Any, demuxer: Any, stream_index: int, num_threads: int) -> tuple[Any, CpuFallbackStatus]:
    """The VideoPacketDecoder that decodes ``stream_index`` for cuda:``context.index`` and its
    fallback status: NVDEC's (the "nvdec" backend) or libavcodec with FFmpeg's CUDA hwaccel (the
    "ffmpeg" backend), or libavcodec on the CPU where NVDEC cannot decode the stream."""
    if _cuda.current_backend() == "ffmpeg":
        reason = cuda_hwaccel_unavailable_reason()
        if reason is not None:
            raise RuntimeError(f"the 'ffmpeg' CUDA backend is unavailable: {reason}; use the default "
                               f"'nvdec' backend")
        decoder = make_video_decoder(demuxer, stream_index, num_threads, context.index, context.handle)
        return decoder, CpuFallbackStatus(status_known=False, backend="FFmpeg CUDA")
    from torchcodec._cuda import _driver, _nvdec, _nvdec_caps
    try:
        decoder, reason = _nvdec.NvdecDecoder(demuxer, stream_index, context), None
    except (_nvdec_caps.NvdecUnsupportedError, _driver.CudaUnavailableError) as error:
        decoder, reason = None, str(error)       # CudaUnavailableError: no libnvcuvid.so.1
    if decoder is None:
        _LOGGER.info("Video stream not supported by NVDEC; falling back to CPU decoding: %s", reason)
        decoder = make_video_decoder(demuxer, stream_index, num_threads)
    return decoder, CpuFallbackStatus(reason=reason, backend="NVDEC")


class CudaVideoParts:
    """The packet decoder and colour converter of one CUDA VideoDecoder, and its fallback status."""

    def __init__(self, device_index: int, demuxer: Any, stream_index: int, num_threads: int) -> None:
        from torchcodec._cuda import _converter, _driver     # built in every CUDA build (see the gate)
        self.context = _driver.load_driver().context(device_index)
        self.device_converter = _converter.CudaConverter(self.context)
        self.converter = converter_over(self.device_converter, f"cuda:{device_index}")
        self.decoder, self.status = choose_decoder(self.context, demuxer, stream_index, num_threads)

    def set_stream(self, stream: int) -> None:
        self.device_converter.set_stream(stream)

    def fallback_status(self) -> CpuFallbackStatus:
        """The status, settled for the ffmpeg backend once its first frame told whether CUDA decoded it."""
        if not self.status.status_known:            # the ffmpeg backend, before its first frame
            used = self.decoder.hwaccel_used
            if used is not None:
                self.status.status_known = True
                self.status.reason = None if used else (
                    "FFmpeg's CUDA hwaccel could not decode this stream (codec, profile, bit depth or size "
                    "unsupported by NVDEC on this GPU), so FFmpeg decoded it on the CPU")
        return self.status


class CudaDevice:
    """The CUDA device's parts (torchcodec._core._devices.DeviceParts)."""

    def check_usable(self, device: Any) -> None:
        """Raise RuntimeError saying why when CUDA decoding cannot be used for ``device``."""
        reason = _cuda.reason()
        if reason is not None:
            raise RuntimeError(f"device={str(device)!r}: CUDA decoding is not available: {reason}; use device='cpu'")

    def video_parts(self, index: int, demuxer: Any, stream_index: int, num_threads: int) -> CudaVideoParts:
        return CudaVideoParts(index, demuxer, stream_index, num_threads)

    def packet_decoder(self, demuxer: Any, stream_index: int, index: int, num_threads: int) -> Any:
        """The packet decoder of a stream's ``make_decoder(device="cuda:N")``: the one a CUDA
        VideoDecoder would choose (NVDEC, FFmpeg's CUDA hwaccel, or the CPU fallback), whose
        RawFrames own a copy of their picture in device memory (torchcodec._cuda._device_frame: no
        NVDEC surface or FFmpeg pool frame stays pinned by a frame the caller keeps; CPU-fallback
        frames are uploaded)."""
        self.check_usable(f"cuda:{index}")
        from torchcodec._cuda import _device_frame, _driver
        context = _driver.load_driver().context(index)
        decoder, _ = choose_decoder(context, demuxer, stream_index, num_threads)
        decoder._upload_to(_device_frame.FrameUploader(context), f"cuda:{index}")
        return decoder

    def device_converter(self, index: int) -> Any:
        """The CUDA converter (kernels) of ``ColorConverter(device="cuda:N")``."""
        self.check_usable(f"cuda:{index}")
        from torchcodec._cuda import _converter, _driver
        return _converter.CudaConverter(_driver.load_driver().context(index))

    def convert_raw_frame(self, converter: Any, raw_frame: Any, rotation: int, width: int, height: int,
                          dtype: str) -> Any:
        """``ColorConverter.convert`` on CUDA: the device RawFrame turned ``rotation`` degrees
        clockwise, as a new (height, width, 3) array of the bridge's library on the converter's
        device, written on that library's current stream (the frame's copy is waited for there, on
        the device)."""
        from torchcodec._cuda import _converter
        _, index = parse_device(converter.device)
        output = _outputs.allocate((height, width, 3), dtype, device_index=index)
        converter.impl.set_stream(output.stream)
        _converter.convert_raw_frame(converter.impl, raw_frame, rotation, output.address, output.strides[0], width,
                                     height, dtype == "float32")
        return output.finish()

    def device_planes(self, raw_frame: Any, views: list) -> tuple:
        from torchcodec._cuda import _device_frame
        return _device_frame.device_planes(raw_frame, views)


CUDA = CudaDevice()
