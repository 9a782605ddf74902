"""How far GPU frames may be from CPU frames, per corpus file: one table for tools/gpu_check.py and
tests/test_cuda_decoding.py.

Each video file of the corpus (tools/make_media.py) has an entry: the largest absolute difference
of a uint8 RGB value between ``VideoDecoder(device="cuda")`` and the CPU decoder, a bound on the
mean absolute difference, why, and whether NVDEC must decode the file on any GPU that has NVDEC.
The kernels compute the CPU path's conversion exactly (include/torchcodec/swscale_rgb.h: swscale's
routes for 8- to 16-bit 4:2:0 and 4:4:4, every matrix and range, odd sizes and rotations; checked
against the CPU on random frames through the kernel emulation, tests/test_cuda_exact.py), and
NVDEC decodes H.264, HEVC, VP8, VP9 and AV1 bit-exactly: their frames are equal. Only MPEG-2 and
MPEG-4 part 2, whose inverse DCT is not defined bit-exactly, may differ.

``nvdec``: "required" where every NVIDIA GPU with NVDEC decodes the stream (H.264 and HEVC, 8-bit
4:2:0): a CPU fallback there is a failure, whatever its reason; "caps" where the GPU's
cuvidGetDecoderCaps decides (10-bit, 4:4:4, VP8, VP9, AV1, MPEG-2, MPEG-4 vary by generation): a
refusal falls back to the CPU and is reported, not failed; "never" where torchcodec itself
refuses NVDEC (4:2:2: the kernels have no 4:2:2 layout). A fallback because libnvcuvid.so.1 is
missing is a failure for every file: on a machine with a GPU, NVDEC must be there.
"""
from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Tolerance:
    max_abs: int            # largest |GPU - CPU| of a uint8 RGB value
    mean_abs: float         # bound on the mean |GPU - CPU|
    reason: str
    nvdec: str = "required"  # "required", "caps" or "never" (see the module doc)

    @property
    def exact(self) -> bool:
        return self.max_abs == 0


EXACT = Tolerance(0, 0.0, "8-bit 4:2:0 of even height, bit-exact codec: the kernels give swscale's bytes")
EXACT_CAPS = dataclasses.replace(EXACT, nvdec="caps")
TEN_BIT = Tolerance(0, 0.0, "10-bit 4:2:0: the kernels compute swscale's general scaler (bicubic chroma), "
                            "its bytes", "caps")
YUV444 = Tolerance(0, 0.0, "4:4:4: the kernels compute swscale's yuv2rgb_write_full, its bytes", "caps")
# MPEG-2 and MPEG-4 part 2 fix the inverse DCT's accuracy (IEEE 1180), not its bits, and a difference
# drifts along the predictions of a GOP. libavcodec's own int and xvid IDCTs differ from its default by
# max 6-7, mean 0.03-0.04 on these two files: NVDEC's is allowed about twice that, to be measured.
IDCT = Tolerance(16, 0.25, "MPEG-2/MPEG-4 part 2: the inverse DCT is not bit-exact across decoders "
                 "(libavcodec's own IDCTs differ by max 7, mean 0.04 here)", "caps")

TOLERANCES: dict[str, Tolerance] = {
    "h264_25fps_2s.mp4": EXACT,
    "h264_bframes.mp4": EXACT,
    "h264_editlist.mp4": EXACT,
    "h264_10bit.mp4": TEN_BIT,
    "h264_yuv444.mp4": YUV444,
    "h264_yuv422.mp4": Tolerance(0, 0.0, "4:2:2: decoded on the CPU, converted by swscale, uploaded", "never"),
    "h264_yuv444_161x121.mp4": dataclasses.replace(YUV444, reason="4:4:4 at an odd size: swscale's bytes"),
    "h264_rotate90.mp4": EXACT,
    "h264_rotate180.mp4": EXACT,
    "h264_rotate270.mp4": EXACT,
    "h264_vfr.mkv": EXACT,
    "h264_offset2.5s.mkv": EXACT,
    "h264_offset2.5s.mp4": EXACT,
    "h264_bframes.ts": EXACT,
    "h264_fullrange.mp4": EXACT,
    "h264_bt709.mp4": EXACT,
    "h264_sar4_3.mp4": dataclasses.replace(EXACT, reason="anamorphic 240x240 (SAR 4:3): decoded at its "
                                                         "coded size, like the CPU: byte-equal"),
    "h264_bt709_fullrange.mp4": EXACT,
    "h264_bt709_fullrange_yuv444.mp4": YUV444,
    "h264_bt601_10bit_fullrange.mp4": dataclasses.replace(TEN_BIT, reason=TEN_BIT.reason + ", full range"),
    "hevc_bt709_fullrange.mp4": EXACT,
    "hevc_bt2020_10bit.mp4": TEN_BIT,
    "hevc_bt2020_10bit_fullrange.mp4": dataclasses.replace(TEN_BIT, reason=TEN_BIT.reason + ", BT.2020 full range"),
    "h264_aac.mp4": EXACT,
    "h264_aac_audio_first.mp4": EXACT,
    "two_video_streams.mkv": EXACT,
    "h264_1080p.mp4": dataclasses.replace(EXACT, reason="coded 1920x1088: crop and chroma offset; byte-equal"),
    "hevc_1080p.mp4": dataclasses.replace(EXACT, reason="1920x1080 HEVC: crop and chroma offset; byte-equal"),
    "h264_350x198.mp4": dataclasses.replace(EXACT, reason="coded 352x208, cropped by 2 and 10: byte-equal"),
    "h264_interlaced.mp4": dataclasses.replace(EXACT, reason="interlaced H.264, woven (no deinterlacing) "
                                                             "as libavcodec outputs it: byte-equal"),
    "hevc_bframes.mp4": EXACT,
    "hevc_10bit.mp4": TEN_BIT,
    "hevc_temporal_layers.mp4": dataclasses.replace(EXACT, reason="HEVC with two temporal sub-layers: byte-equal"),
    "vp9.webm": EXACT_CAPS,
    "vp9_161x121.webm": dataclasses.replace(EXACT_CAPS, reason="odd size 4:2:0: swscale's general scaler "
                                                              "(chroma interpolated both ways), its bytes"),
    "vp9_161x120.webm": dataclasses.replace(EXACT_CAPS, reason="odd width, even height 4:2:0: swscale's "
                                                              "table converter, its last column as the CPU "
                                                              "path computes it: its bytes"),
    "vp8.webm": EXACT_CAPS,
    "av1.mp4": EXACT_CAPS,
    "mpeg4_bframes.avi": IDCT,
    "mpeg2_mp2.mpg": IDCT,
}

# The 1080p clips of the GPU check's frame step (step 4): coded size != display size, 30 frames each.
CODED_SIZE_CLIPS = ("h264_1080p.mp4", "hevc_1080p.mp4")


def tolerance(name: str) -> Tolerance:
    """The entry of corpus file ``name``; KeyError for a file the table does not know (a new corpus
    video file must be classified here)."""
    return TOLERANCES[name]


def judge(name: str, max_abs: float, mean_abs: float, fallback: str, on_gpu: bool) -> tuple[str, str]:
    """("ok" or "FAIL", why) for a file's GPU-vs-CPU differences and its CPU-fallback reason ("" when
    NVDEC decoded it). ``on_gpu`` False (a dry run) asks for equality and ignores fallbacks."""
    if not on_gpu:
        return ("ok", "") if max_abs == 0 else ("FAIL", f"max difference {max_abs:g} (the dry run must give 0)")
    entry = tolerance(name)
    problems = []
    if max_abs > entry.max_abs:
        problems.append(f"max difference {max_abs:g} > {entry.max_abs}")
    if mean_abs > entry.mean_abs:
        problems.append(f"mean difference {mean_abs:.4f} > {entry.mean_abs}")
    if fallback and "libnvcuvid" in fallback:
        problems.append("NVDEC is missing on a machine with a GPU (libnvcuvid.so.1)")
    elif fallback and entry.nvdec == "required":
        problems.append("fell back to the CPU although every NVDEC decodes this stream")
    elif not fallback and entry.nvdec == "never":
        problems.append("NVDEC took a stream torchcodec should refuse")
    return ("FAIL", "; ".join(problems)) if problems else ("ok", "")
