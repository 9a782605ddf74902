#!/usr/bin/env python3
"""Decode frames on an NVIDIA GPU and hand them to torch (or any DLPack library), never via the CPU.

    python examples/gpu_decode.py video.mp4 --at 0 10 20 [--device cuda:0]

NVDEC decodes, the package's CUDA kernels convert to RGB straight into the output's memory. With
torch installed the frames are a CUDA ``torch.Tensor`` written on torch's current stream; here they
are normalised to float in [0, 1] on the GPU, as a model's input would be. Without torch (nor
cupy) they are torchcodec device buffers, which any library takes through DLPack or the CUDA Array
Interface. Prints what was decoded, where, and whether NVDEC decoded the stream or the CPU did
(``cpu_fallback``: a stream NVDEC cannot decode is decoded on the CPU, then converted on the GPU).
"""
from __future__ import annotations

import argparse
import sys

import torchcodec
from torchcodec.decoders import VideoDecoder


def decode_on_gpu(path: str, indices: list[int], device: str = "cuda"):
    """The frames at ``indices`` of ``path``, decoded and converted on ``device``: a FrameBatch."""
    decoder = VideoDecoder(path, device=device)
    return decoder, decoder.get_frames_at(indices)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("video")
    parser.add_argument("--at", type=int, nargs="+", default=[0], help="frame indices (default: 0)")
    parser.add_argument("--device", default="cuda", help='"cuda" or "cuda:N" (default: cuda)')
    args = parser.parse_args()
    if not torchcodec.cuda_available():
        print("no usable NVIDIA driver here: VideoDecoder(device='cuda') would raise RuntimeError saying why",
              file=sys.stderr)
        return 1
    decoder, batch = decode_on_gpu(args.video, args.at, args.device)
    frames = batch.data
    print(f"{len(args.at)} frames {tuple(frames.shape)} {type(frames).__module__}.{type(frames).__name__}, "
          f"pts {[round(t, 6) for t in batch.pts_seconds.tolist()]}")
    print(f"NVDEC: {'no, ' + str(decoder.cpu_fallback) if decoder.cpu_fallback else 'yes'}")
    if type(frames).__module__.split(".")[0] == "torch":      # the torch bridge: a CUDA torch.Tensor
        inputs = frames.float() / 255                  # on the GPU, on torch's current stream
        print(f"model input {tuple(inputs.shape)} {inputs.dtype} on {inputs.device}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
