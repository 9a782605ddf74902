"""What NVDEC is fed, prepared with FFmpeg alone (issue 5, points 4 and 7): no GPU needed.

For each container of the corpus, ``NvdecInput`` chooses the bitstream filter, produces the
sequence header that a CUVID parser gets after a flush or a seek, and filters the packets. The
references are the ffmpeg CLI decoding the resulting elementary stream (header + packets) and the
original file: their frames must be byte-equal. The input is driven as the NVDEC decoder drives it
(packets read from the demuxer and pushed through, filtered packets taken out) by a small test
extension, tests/cuda_stubs/nvdec_input_probe.pyx, built here against the package's .pxd files.
"""
from __future__ import annotations

import json
import os
import pathlib
import shutil
import struct
import subprocess
import sys

import numpy as np
import pytest

import reference
from torchcodec._core._avio import MemorySource
from torchcodec._core._demuxer import Demuxer
from torchcodec._cuda._nvdec_input import NvdecInput

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "cuda_stubs"))
from stub_build import CC, build_helper  # noqa: E402

# (corpus file or remux of one, NVDEC codec, bitstream filter)
CHOICES = [
    ("h264_bframes.mp4", "h264", "h264_mp4toannexb"),
    ("h264_vfr.mkv", "h264", "h264_mp4toannexb"),
    ("h264_bframes.ts", "h264", None),
    ("hevc_bframes.mp4", "hevc", "hevc_mp4toannexb"),
    ("hevc_bframes.mkv", "hevc", "hevc_mp4toannexb"),
    ("hevc_bframes.ts", "hevc", None),
    ("av1.mp4", "av1", None),
    ("vp9.webm", "vp9", None),
    ("vp8.webm", "vp8", None),
    ("mpeg4_bframes.avi", "mpeg4", "mpeg4_unpack_bframes"),
    ("mpeg2_mp2.mpg", "mpeg2", None),
]

# Elementary-stream files the ffmpeg CLI recognises by their extension.
ES_EXTENSIONS = {"h264": ".h264", "hevc": ".hevc", "mpeg4": ".m4v", "mpeg2": ".m2v"}

START_CODE = b"\x00\x00\x01"


@pytest.fixture(scope="session")
def corpus(media, tmp_path_factory) -> dict[str, pathlib.Path]:
    """The corpus, plus the HEVC clip remuxed (no re-encoding) into Matroska and MPEG-TS, and the
    3 s H.264 clip (3 GOPs) into MPEG-TS."""
    files = dict(media)
    out = tmp_path_factory.mktemp("nvdec_input")
    remuxes = {"hevc_bframes.mkv": "hevc_bframes.mp4", "hevc_bframes.ts": "hevc_bframes.mp4",
               "h264_bframes_3s.ts": "h264_bframes.mp4"}
    for name, source in remuxes.items():
        path = out / name
        reference._run([reference.FFMPEG, "-hide_banner", "-nostdin", "-v", "error",
                        "-i", os.fspath(media[source]), "-map", "0:v", "-c", "copy",
                        os.fspath(path)])
        files[name] = path
    return files


@pytest.fixture(scope="module", autouse=True)
def probe(tmp_path_factory):
    """The test extension that drives an NvdecInput (tests/cuda_stubs/nvdec_input_probe.pyx)."""
    global PROBE
    if CC is None or shutil.which("pkg-config") is None:
        pytest.skip("no C compiler or pkg-config to build the test helper")
    directory = build_helper("nvdec_input_probe", tmp_path_factory.mktemp("nvdec_input_probe"))
    sys.path.insert(0, str(directory))
    import nvdec_input_probe
    PROBE = nvdec_input_probe
    yield nvdec_input_probe
    sys.path.remove(str(directory))


PROBE = None


class Input:
    """An NvdecInput and the demuxer that feeds it, driven by the test extension as the decoder does."""

    def __init__(self, demuxer: Demuxer, stream_index: int) -> None:
        self.demuxer = demuxer
        self.nvdec = NvdecInput(demuxer, stream_index)

    def __getattr__(self, name: str):
        return getattr(self.nvdec, name)

    def sequence_header(self) -> bytes:
        return PROBE.sequence_header(self.nvdec)

    def filtered_packets(self, max_count: int = -1) -> list:
        return PROBE.filtered_packets(self.nvdec, self.demuxer, max_count)

    def seek(self, pts=None, position: int = -1) -> None:
        PROBE.seek_input(self.nvdec, self.demuxer, pts, position)


def open_input(path, stream_index: int | None = None) -> Input:
    if stream_index is None:
        stream_index = reference.best_stream(path)
    demuxer = Demuxer(os.fspath(path), streams=stream_index)
    return Input(demuxer, stream_index)


def nal_units(data: bytes) -> list[bytes]:
    """The NAL units of an Annex B byte stream (start codes removed)."""
    units, start = [], None
    i = 0
    while i + 3 <= len(data):
        if data[i:i + 3] == START_CODE:
            if start is not None:
                units.append(data[start:i].rstrip(b"\x00"))
            i += 3
            start = i
        else:
            i += 1
    if start is not None:
        units.append(data[start:])
    return units


def h264_nal_types(data: bytes) -> list[int]:
    return [unit[0] & 0x1F for unit in nal_units(data) if unit]


def hevc_nal_types(data: bytes) -> list[int]:
    return [(unit[0] >> 1) & 0x3F for unit in nal_units(data) if unit]


def decode_elementary_stream(path: pathlib.Path) -> tuple[bytes, str]:
    """Frames (raw, native pixel format) and stderr of the ffmpeg CLI decoding a raw ES file."""
    proc = subprocess.run(
        [reference.FFMPEG, "-hide_banner", "-nostdin", "-v", "error", "-i", os.fspath(path),
         "-fps_mode", "passthrough", "-c:v", "rawvideo", "-f", "rawvideo", "-"],
        stdin=subprocess.DEVNULL, capture_output=True, check=False)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    return proc.stdout, proc.stderr.decode(errors="replace")


def frame_bytes(path) -> int:
    """Bytes of one raw frame of the stream (4:2:0 8-bit: w*h*3/2)."""
    stream = reference.ffprobe_stream(path, reference.best_stream(path))
    width, height = int(stream["width"]), int(stream["height"])
    assert stream["pix_fmt"] == "yuv420p", stream["pix_fmt"]
    return width * height + 2 * ((width + 1) // 2) * ((height + 1) // 2)


def split_frames(data: bytes, size: int) -> list[bytes]:
    assert len(data) % size == 0
    return [data[i:i + size] for i in range(0, len(data), size)]


def write_elementary_stream(tmp_path, nvdec: Input, packets) -> pathlib.Path:
    path = tmp_path / f"stream{ES_EXTENSIONS[nvdec.nvdec_codec]}"
    path.write_bytes(nvdec.sequence_header() + b"".join(data for data, _, _ in packets))
    return path


# ------------------------------------------------------------------------------------------------
# Choice of codec and bitstream filter


@pytest.mark.parametrize("name, codec, bsf", CHOICES, ids=[c[0] for c in CHOICES])
def test_bitstream_filter_is_chosen_per_codec_and_container(corpus, name, codec, bsf):
    nvdec = open_input(corpus[name])
    assert (nvdec.nvdec_codec, nvdec.bsf_name, nvdec.unsupported_reason) == (codec, bsf, None)


def test_audio_stream_is_unsupported_with_a_reason_and_refuses_packets(media):
    nvdec = open_input(media["h264_aac.mp4"], stream_index=1)
    assert nvdec.nvdec_codec == "unsupported"
    assert "not a video stream" in nvdec.unsupported_reason and "aac" in nvdec.unsupported_reason
    assert nvdec.bsf_name is None
    with pytest.raises(ValueError, match="NVDEC cannot take stream 1: stream 1 is not a video"):
        nvdec.filtered_packets(1)
    with pytest.raises(ValueError, match="NVDEC cannot take stream 1"):
        nvdec.sequence_header()


def test_stream_index_out_of_range_is_a_value_error(media):
    with pytest.raises(ValueError, match="stream index 5 is not a stream"):
        NvdecInput(Demuxer(os.fspath(media["vp9.webm"])), 5)


# ------------------------------------------------------------------------------------------------
# Sequence headers and filtered packets


@pytest.mark.parametrize("name", ["h264_bframes.mp4", "h264_vfr.mkv", "h264_bframes.ts"])
def test_h264_sequence_header_is_annex_b_sps_and_pps(corpus, name):
    header = open_input(corpus[name]).sequence_header()
    assert header.startswith(START_CODE) or header.startswith(b"\x00" + START_CODE)
    types = h264_nal_types(header)
    assert 7 in types and 8 in types, types
    assert types.index(7) < types.index(8)
    assert set(types) <= {7, 8, 13}                   # parameter sets only


@pytest.mark.parametrize("name", ["hevc_bframes.mp4", "hevc_bframes.mkv", "hevc_bframes.ts"])
def test_hevc_sequence_header_is_annex_b_vps_sps_and_pps(corpus, name):
    header = open_input(corpus[name]).sequence_header()
    assert header.startswith(START_CODE) or header.startswith(b"\x00" + START_CODE)
    types = hevc_nal_types(header)
    assert {32, 33, 34} <= set(types), types
    assert types.index(32) < types.index(33) < types.index(34)
    # parameter sets only: x265's settings SEI (2 KB in the hvcC) is left out, so the header fits
    # CUVIDEOFORMATEX.raw_seqhdr_data (1024 bytes)
    assert set(types) == {32, 33, 34} and len(header) < 1024


@pytest.mark.parametrize("name", ["h264_bframes.mp4", "h264_vfr.mkv", "h264_bframes.ts"])
def test_filtered_h264_packets_are_annex_b_with_idr_in_key_packets(corpus, name):
    packets = open_input(corpus[name]).filtered_packets()
    expected = reference.ffprobe_packets(corpus[name], reference.best_stream(corpus[name]))
    assert len(packets) == len(expected)
    assert [key for _, _, key in packets] == [p["key"] for p in expected]
    for data, _, key in packets:
        assert data.startswith(START_CODE) or data.startswith(b"\x00" + START_CODE)
        types = h264_nal_types(data)
        assert (5 in types) == key, types
        if key:   # in-band parameter sets before every IDR: a parser can start there
            assert 7 in types and 8 in types, types


@pytest.mark.parametrize("name", ["hevc_bframes.mp4", "hevc_bframes.mkv", "hevc_bframes.ts"])
def test_filtered_hevc_packets_are_annex_b_with_irap_in_key_packets(corpus, name):
    packets = open_input(corpus[name]).filtered_packets()
    assert packets[0][2]
    for data, _, key in packets:
        assert data.startswith(START_CODE) or data.startswith(b"\x00" + START_CODE)
        types = hevc_nal_types(data)
        if key:   # IDR_W_RADL, IDR_N_LP or CRA, with the parameter sets in band
            assert {19, 20, 21} & set(types), types
            assert {32, 33, 34} <= set(types), types


def test_filtered_packets_keep_the_demuxer_pts(corpus):
    path = corpus["h264_bframes.mp4"]
    packets = open_input(path).filtered_packets()
    assert [pts for _, pts, _ in packets] == [p["pts"] for p in reference.ffprobe_packets(path, 0)]


def test_filtered_packets_respects_max_count_and_continues(corpus):
    nvdec = open_input(corpus["h264_bframes.mp4"])
    first = nvdec.filtered_packets(5)
    rest = nvdec.filtered_packets()
    assert len(first) == 5 and len(first) + len(rest) == 90
    assert nvdec.filtered_packets() == []


ES_CASES = ["h264_bframes.mp4", "h264_vfr.mkv", "h264_bframes.ts", "hevc_bframes.mp4",
            "hevc_bframes.mkv", "hevc_bframes.ts", "mpeg4_bframes.avi", "mpeg2_mp2.mpg"]


@pytest.mark.parametrize("name", ES_CASES)
def test_sequence_header_and_packets_decode_like_the_file(corpus, tmp_path, name):
    path = corpus[name]
    nvdec = open_input(path)
    es = write_elementary_stream(tmp_path, nvdec, nvdec.filtered_packets())
    frames, errors = decode_elementary_stream(es)
    assert errors == ""
    assert frames == reference.ffmpeg_raw_video(path)


SEEK_CASES = ["h264_bframes.mp4", "h264_vfr.mkv", "h264_bframes.ts", "hevc_bframes.mp4",
              "hevc_bframes.mkv", "hevc_bframes.ts"]


@pytest.mark.parametrize("name", SEEK_CASES)
def test_after_seek_and_flush_sequence_header_and_packets_decode(corpus, tmp_path, name):
    """Seek to the second key frame mid-stream: the parser starts there from the sequence header,
    with no missing-parameter-set errors, and gives the file's frames from that key frame on."""
    path = corpus[name]
    index = reference.best_stream(path)
    expected_packets = reference.ffprobe_packets(path, index)
    keys = [p for p in expected_packets if p["key"]]
    assert len(keys) >= 2
    target = keys[1]["pts"]

    nvdec = open_input(path)
    nvdec.filtered_packets(7)      # read (and leave the filter holding state) before seeking
    if name.endswith(".ts"):       # timestamp seeks land only near the target there: use bytes,
        nvdec.seek(position=keys[1]["pos"])   # as the CPU decoder does with its frame index
    else:
        nvdec.seek(target)
    packets = nvdec.filtered_packets()
    assert packets[0][2] and packets[0][1] == target
    es = write_elementary_stream(tmp_path, nvdec, packets)
    frames, errors = decode_elementary_stream(es)
    assert errors == ""

    size = frame_bytes(path)
    all_frames = split_frames(reference.ffmpeg_raw_video(path), size)
    after_key = sum(1 for p in expected_packets if p["pts"] is not None and p["pts"] >= target)
    got = split_frames(frames, size)
    assert len(got) == after_key      # leading pictures that reference earlier frames are dropped
    assert got == all_frames[len(all_frames) - after_key:]


def test_after_a_seek_that_lands_mid_gop_packets_start_at_the_next_key_packet(corpus):
    path = corpus["h264_bframes_3s.ts"]
    keys = [p for p in reference.ffprobe_packets(path, 0) if p["key"]]
    nvdec = open_input(path)
    nvdec.seek(keys[1]["pts"])     # MPEG-TS: lands a few packets after the key packet
    data, pts, key = nvdec.filtered_packets(1)[0]
    assert key and pts == keys[2]["pts"]
    assert 5 in h264_nal_types(data)


def test_seek_to_start_replays_the_same_packets(corpus):
    nvdec = open_input(corpus["hevc_bframes.mp4"])
    first = nvdec.filtered_packets()
    nvdec.seek()
    assert nvdec.filtered_packets() == first


# ------------------------------------------------------------------------------------------------
# MPEG-4, AV1, VP8, VP9


def test_mpeg4_sequence_header_is_the_vol_and_unpacked_streams_pass_through(corpus):
    path = corpus["mpeg4_bframes.avi"]
    nvdec = open_input(path)
    header = nvdec.sequence_header()
    # visual object sequence (B0), then a video object layer (20..2F), and no VOP (B6)
    assert header.startswith(b"\x00\x00\x01\xb0")
    assert any(header[i:i + 3] == START_CODE and 0x20 <= header[i + 3] <= 0x2F
               for i in range(len(header) - 3))
    assert b"\x00\x00\x01\xb6" not in header
    assert [data for data, _, _ in nvdec.filtered_packets()] == ffprobe_packet_data(path)


VOP = b"\x00\x00\x01\xb6"
N_VOP = VOP + b"\x50\x00\x00"            # a placeholder chunk (<= 19 bytes) after a packed pair
DIVX_PACKED = b"\x00\x00\x01\xb2DivX503b1393p\x00"   # user data that marks a packed stream


def hexdump_bytes(dump: str) -> bytes:
    """The bytes of one of ffprobe's ``-show_data`` hex dumps."""
    return bytes.fromhex("".join(line[10:50].replace(" ", "") for line in dump.splitlines()))


def ffprobe_packet_data(path) -> list[bytes]:
    """The bytes of every video packet, from ffprobe's hex dumps (independent of the package)."""
    raw = reference._run([reference.FFPROBE, "-v", "error", "-select_streams", "v:0",
                          "-show_entries", "packet=data", "-show_data", "-of", "json",
                          os.fspath(path)])
    return [hexdump_bytes(packet["data"]) for packet in json.loads(raw)["packets"]]


def ffprobe_extradata(path) -> bytes:
    raw = reference._run([reference.FFPROBE, "-v", "error", "-select_streams", "v:0",
                          "-show_entries", "stream=extradata", "-show_data", "-of", "json",
                          os.fspath(path)])
    return hexdump_bytes(json.loads(raw)["streams"][0]["extradata"])


def write_avi(path, width: int, height: int, extradata: bytes, chunks: list[bytes],
              keys: list[bool], fps: int = 30) -> None:
    """A minimal AVI (one MPEG-4 'FMP4' video stream, idx1 index) holding ``chunks`` as they are."""
    def chunk(fourcc: bytes, data: bytes) -> bytes:
        return fourcc + struct.pack("<I", len(data)) + data + b"\x00" * (len(data) & 1)

    def listed(kind: bytes, body: bytes) -> bytes:
        return chunk(b"LIST", kind + body)

    avih = struct.pack("<14I", 1_000_000 // fps, 0, 0, 0x10, len(chunks), 0, 1, 0, width, height,
                       0, 0, 0, 0)
    strh = struct.pack("<4s4sIHHIIIIIIII4h", b"vids", b"FMP4", 0, 0, 0, 0, 1, fps, 0, len(chunks),
                       0, 0xFFFFFFFF, 0, 0, 0, width, height)
    strf = struct.pack("<IiiHH4sIiiII", 40 + len(extradata), width, height, 1, 24, b"FMP4",
                       width * height * 3, 0, 0, 0, 0) + extradata
    hdrl = listed(b"hdrl", chunk(b"avih", avih) + listed(b"strl", chunk(b"strh", strh)
                                                          + chunk(b"strf", strf)))
    movi_body, index, offset = b"", b"", 4          # offsets count from the 'movi' fourcc
    for data, key in zip(chunks, keys):
        index += struct.pack("<4sIII", b"00dc", 0x10 if key else 0, offset, len(data))
        piece = chunk(b"00dc", data)
        movi_body += piece
        offset += len(piece)
    body = b"AVI " + hdrl + listed(b"movi", movi_body) + chunk(b"idx1", index)
    path.write_bytes(b"RIFF" + struct.pack("<I", len(body)) + body)


@pytest.fixture(scope="module")
def packed_mpeg4(tmp_path_factory):
    """(packed AVI, the unpacked AVI it was made from): MPEG-4 with 1 B-frame, DivX-style packed
    (each P/I VOP shares its chunk with the B VOP after it in decode order, then an N-VOP chunk)."""
    out = tmp_path_factory.mktemp("packed_mpeg4")
    unpacked = out / "unpacked.avi"
    reference._run([reference.FFMPEG, "-hide_banner", "-nostdin", "-v", "error", "-f", "lavfi",
                    "-i", "testsrc=size=160x120:rate=30:duration=1", "-c:v", "mpeg4", "-bf", "1",
                    "-g", "12", "-q:v", "4", "-flags", "+bitexact", "-fflags", "+bitexact",
                    os.fspath(unpacked)])
    packets = ffprobe_packet_data(unpacked)
    stream = reference.ffprobe_stream(unpacked, 0)
    extradata = ffprobe_extradata(unpacked)
    vop_types = [p[p.index(VOP) + 4] >> 6 for p in packets]      # 0 I, 1 P, 2 B
    assert 2 in vop_types
    chunks, keys, i = [], [], 0
    while i < len(packets):
        if i + 1 < len(packets) and vop_types[i] != 2 and vop_types[i + 1] == 2:
            chunks += [packets[i] + packets[i + 1], N_VOP]
            keys += [vop_types[i] == 0, False]
            i += 2
        else:
            chunks.append(packets[i])
            keys.append(vop_types[i] == 0)
            i += 1
    packed = out / "packed.avi"
    write_avi(packed, int(stream["width"]), int(stream["height"]), extradata + DIVX_PACKED,
              chunks, keys)
    return packed, unpacked


def test_packed_mpeg4_b_frames_are_unpacked(packed_mpeg4, tmp_path):
    packed, unpacked = packed_mpeg4
    # FFmpeg's own decoder sees the file as packed (and unpacks it itself)
    proc = subprocess.run([reference.FFMPEG, "-hide_banner", "-nostdin", "-i", os.fspath(packed),
                           "-f", "null", "-"], capture_output=True, check=False)
    assert proc.returncode == 0 and b"packed B-frames" in proc.stderr

    nvdec = open_input(packed)
    assert nvdec.bsf_name == "mpeg4_unpack_bframes"
    header = nvdec.sequence_header()
    assert b"DivX503b1393\x00" in header and b"DivX503b1393p" not in header   # marker removed
    packets = nvdec.filtered_packets()
    assert [data for data, _, _ in packets] == ffprobe_packet_data(unpacked)   # one VOP each
    frames, errors = decode_elementary_stream(write_elementary_stream(tmp_path, nvdec, packets))
    assert errors == ""
    assert frames == reference.ffmpeg_raw_video(unpacked)


def test_packed_mpeg4_flush_forgets_the_held_b_frame(packed_mpeg4):
    packed, unpacked = packed_mpeg4
    nvdec = open_input(packed)
    nvdec.filtered_packets(2)        # the second chunk is P+B: the filter now holds the B VOP
    nvdec.seek()
    assert [data for data, _, _ in nvdec.filtered_packets(3)] == ffprobe_packet_data(unpacked)[:3]


def test_av1_sequence_header_is_one_sequence_header_obu(corpus):
    nvdec = open_input(corpus["av1.mp4"])
    header = nvdec.sequence_header()
    obu_type = (header[0] >> 3) & 0x0F
    has_size = header[0] & 0x02
    assert obu_type == 1 and has_size
    assert len(header) == 2 + header[1]   # obu_size (one leb128 byte here) covers the rest
    assert nvdec.filtered_packets(1)[0][2]


def ivf_frames(path) -> list[tuple[bytes, int]]:
    """(data, pts) of every frame that ``ffmpeg -c copy -f ivf`` writes: the packets as demuxed."""
    data = reference._run([reference.FFMPEG, "-hide_banner", "-nostdin", "-v", "error",
                           "-i", os.fspath(path), "-map", "0:v", "-c", "copy", "-f", "ivf", "-"])
    header_size = int.from_bytes(data[6:8], "little")
    frames, pos = [], header_size
    while pos < len(data):
        size = int.from_bytes(data[pos:pos + 4], "little")
        pts = int.from_bytes(data[pos + 4:pos + 12], "little", signed=True)
        frames.append((data[pos + 12:pos + 12 + size], pts))
        pos += 12 + size
    return frames


@pytest.mark.parametrize("name", ["vp9.webm", "vp8.webm"])
def test_vp8_vp9_packets_pass_through_unchanged(corpus, name):
    nvdec = open_input(corpus[name])
    assert nvdec.sequence_header() == b""
    packets = nvdec.filtered_packets()
    assert [(data, pts) for data, pts, _ in packets] == ivf_frames(corpus[name])


def test_av1_packets_pass_through_unchanged(corpus):
    path = corpus["av1.mp4"]
    packets = open_input(path).filtered_packets()
    expected = reference.ffprobe_packets(path, 0)
    assert [(len(d), pts, key) for d, pts, key in packets] == [
        (p["size"], p["pts"], p["key"]) for p in expected]


# ------------------------------------------------------------------------------------------------
# Damaged input


def test_corrupt_avcc_extradata_is_a_clear_error(media):
    data = bytearray(media["h264_vfr.mkv"].read_bytes())
    avcc = bytes.fromhex("0164000dffe10019")        # avcC header, 1 SPS of 25 bytes
    at = data.find(avcc)
    assert at > 0
    data[at + 6:at + 8] = b"\xff\xff"              # the SPS now claims 65535 bytes
    demuxer = Demuxer(MemorySource(bytes(data)))
    with pytest.raises(RuntimeError, match="av_bsf_init failed for the 'h264_mp4toannexb' filter"):
        NvdecInput(demuxer, 0)


def test_unrecognised_h264_extradata_is_unsupported_with_a_reason(media):
    data = bytearray(media["h264_vfr.mkv"].read_bytes())
    at = data.find(bytes.fromhex("0164000dffe10019"))
    data[at] = 0x07                                 # neither avcC (1) nor a start code
    nvdec = Input(Demuxer(MemorySource(bytes(data))), 0)
    assert nvdec.nvdec_codec == "unsupported"
    assert "neither avcC/hvcC nor Annex B" in nvdec.unsupported_reason
    with pytest.raises(ValueError, match="neither avcC/hvcC nor Annex B"):
        nvdec.filtered_packets()


def test_truncated_stream_gives_the_packets_before_the_cut(media):
    data = media["h264_bframes.ts"].read_bytes()
    whole = open_input(media["h264_bframes.ts"]).filtered_packets()
    cut = Input(Demuxer(MemorySource(data[:len(data) // 2])), 0).filtered_packets()
    assert 0 < len(cut) < len(whole)
    assert [d for d, _, _ in cut[:-1]] == [d for d, _, _ in whole[:len(cut) - 1]]


def garbled(path, start: int, size: int) -> bytes:
    """The file with ``size`` random bytes from ``start`` on."""
    data = bytearray(path.read_bytes())
    rng = np.random.default_rng(5)
    data[start:start + size] = rng.integers(0, 256, size, dtype=np.uint8).tobytes()
    return bytes(data)


def test_packets_the_filter_cannot_parse_are_dropped(media):
    path = media["h264_bframes.mp4"]                       # moov at the end: mdat first
    data = path.read_bytes()
    whole = open_input(path).filtered_packets()
    start = data.find(b"mdat") + 30_000
    packets = Input(Demuxer(MemorySource(garbled(path, start, 20_000))), 0).filtered_packets()
    assert 0 < len(packets) < len(whole)
    assert packets[0] == whole[0] and packets[-1] == whole[-1]


def test_a_stream_of_garbage_is_a_clear_error(media):
    path = media["h264_bframes.mp4"]
    data = path.read_bytes()
    start = data.find(b"mdat") + 8
    nvdec = Input(Demuxer(MemorySource(garbled(path, start, data.find(b"moov") - start - 8))), 0)
    with pytest.raises(RuntimeError, match=r"bitstream filter 'h264_mp4toannexb' refused the packets"
                                           r" of stream 0: .*Invalid data.*17 errors in a row"):
        nvdec.filtered_packets()


def test_garbage_after_the_header_of_an_annex_b_stream_passes_through(media):
    data = garbled(media["h264_bframes.ts"], 20_000, media["h264_bframes.ts"].stat().st_size - 20_000)
    packets = Input(Demuxer(MemorySource(data)), 0).filtered_packets()
    assert packets and packets[0][2]
