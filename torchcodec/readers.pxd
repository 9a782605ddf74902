# torchcodec's readers for Cython extensions: `from torchcodec.readers cimport VideoReader, ...`.
#
# What VideoDecoder, AudioDecoder and WavDecoder run on: frames by timestamp (seeking and frame
# matching done for you) and sample ranges, decoded without the GIL straight into memory that the
# caller owns. A VideoReader is built from the blocks (torchcodec/blocks.pxd). See docs/cython_api.md.
from torchcodec._core._audio_reader cimport AudioReader
from torchcodec._core._video_reader cimport AT_OR_AFTER, PLAYED_AT, Match, VideoReader
from torchcodec._core._wav cimport WavReader
