"""Reading NVDEC frames back for tests: the planes of a frame that tests/cuda_stubs/nvdec_probe.pyx's
``decode_frames`` describes, copied to the host with the driver (cuMemcpyDtoH through ctypes, in device 0's primary
context), and the same planes of the ffmpeg CLI's raw frames, to compare sample by sample.

Used in-process by the GPU tests and, against the stub libcuda (whose device memory is host
memory), in a subprocess by the stub tests that check this reading itself.
"""
from __future__ import annotations

import ctypes

import numpy as np

# FFmpeg pixel formats of NVDEC frames -> (bytes per sample, chroma subsampled 2x2, planes)
LAYOUTS = {"nv12": (1, True, 2), "p016le": (2, True, 2), "yuv444p": (1, False, 3), "yuv444p16le": (2, False, 3)}


class DeviceMemory:
    """cuMemcpyDtoH from device 0, with its primary context pushed around each copy."""

    def __init__(self) -> None:
        self.cu = ctypes.CDLL("libcuda.so.1")
        self.device = ctypes.c_int()
        self.context = ctypes.c_void_p()
        self.check(self.cu.cuDeviceGet(ctypes.byref(self.device), 0), "cuDeviceGet")
        self.check(self.cu.cuDevicePrimaryCtxRetain(ctypes.byref(self.context), self.device), "retain")

    @staticmethod
    def check(status: int, what: str) -> None:
        assert status == 0, f"{what} failed with CUresult {status}"

    def plane(self, address: int, pitch: int, rows: int, row_bytes: int) -> np.ndarray:
        """``rows`` rows of ``row_bytes`` bytes, ``pitch`` apart from ``address``: (rows, row_bytes) uint8."""
        size = pitch * (rows - 1) + row_bytes      # not past the last row's samples
        out = np.zeros(pitch * rows, np.uint8)
        self.check(self.cu.cuCtxPushCurrent_v2(self.context), "cuCtxPushCurrent")
        try:
            self.check(self.cu.cuMemcpyDtoH_v2(out.ctypes.data_as(ctypes.c_void_p), ctypes.c_uint64(address),
                                               ctypes.c_size_t(size)), "cuMemcpyDtoH")
        finally:
            self.check(self.cu.cuCtxPopCurrent_v2(ctypes.byref(ctypes.c_void_p())), "cuCtxPopCurrent")
        return out.reshape(rows, pitch)[:, :row_bytes]

    def frame_planes(self, frame: dict) -> list[np.ndarray]:
        """Y, U, V of the frame's display area (uint8, or uint16 MSB-aligned samples)."""
        bps, subsampled, _ = LAYOUTS[frame["format"]]
        dtype = np.uint8 if bps == 1 else np.dtype("<u2")
        width, height, left, top = frame["width"], frame["height"], frame["crop_left"], frame["crop_top"]
        data, pitches = frame["data"], frame["linesizes"]
        luma = self.plane(data[0] + top * pitches[0] + left * bps, pitches[0], height, width * bps).view(dtype)
        if not subsampled:
            return [luma] + [self.plane(data[i] + top * pitches[i] + left * bps, pitches[i], height,
                                        width * bps).view(dtype) for i in (1, 2)]
        rows, columns = (height + 1) // 2, (width + 1) // 2
        pairs = self.plane(data[1] + top // 2 * pitches[1] + left // 2 * 2 * bps, pitches[1], rows,
                           columns * 2 * bps).view(dtype).reshape(rows, columns, 2)
        return [luma, pairs[..., 0], pairs[..., 1]]

    def close(self) -> None:
        self.cu.cuDevicePrimaryCtxRelease(self.device)


def raw_frames(raw: bytes, pix_fmt: str, width: int, height: int) -> list[list[np.ndarray]]:
    """The ffmpeg CLI's raw frames (its native pixel format) as [Y, U, V] per frame."""
    dtype = np.uint8 if bit_depth(pix_fmt) == 8 else np.dtype("<u2")
    if pix_fmt.startswith("yuv444"):
        shapes = [(height, width)] * 3
    else:
        shapes = [(height, width)] + [((height + 1) // 2, (width + 1) // 2)] * 2
    samples = np.frombuffer(raw, dtype)
    per_frame = sum(h * w for h, w in shapes)
    assert samples.size % per_frame == 0, "the raw video is not a whole number of frames"
    frames = []
    for start in range(0, samples.size, per_frame):
        planes, offset = [], start
        for h, w in shapes:
            planes.append(samples[offset:offset + h * w].reshape(h, w))
            offset += h * w
        frames.append(planes)
    return frames


def bit_depth(pix_fmt: str) -> int:
    """Bits per sample of the 4:2:0 / 4:4:4 YUV formats of the corpus (yuv420p10le: 10)."""
    return 8 if pix_fmt in ("yuv420p", "yuvj420p", "yuv444p") else int(pix_fmt.removesuffix("le")[-2:])
