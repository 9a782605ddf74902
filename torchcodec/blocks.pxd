# torchcodec's building blocks for Cython extensions: `from torchcodec.blocks cimport Demuxer, ...`.
#
# The same classes as torchcodec.decoders' Demuxer, packet decoders and converters (the engine's
# own: VideoDecoder and AudioDecoder are built from them), with C-level methods for the hot calls,
# which run without the GIL. What is stable, and how to build against it: docs/cython_api.md.
from torchcodec._core._audio_converter cimport AudioConverter
from torchcodec._core._color_converter cimport ColorConverter, clockwise_rotation, cpu_color_converter
from torchcodec._core._demuxer cimport AudioStream, DemuxedStream, Demuxer, Packet, VideoStream, open_demuxer
from torchcodec._core._frame_index cimport FrameEntry, FrameIndex
from torchcodec._core._packet_decoder cimport (AudioPacketDecoder, PacketDecoder, VideoPacketDecoder,
                                               open_audio_decoder, open_video_decoder)
from torchcodec._core._raw_frames cimport RawAudioSamples, RawFrame
