# RawFrames on a CUDA device: the decoded picture copied into device memory that the frame owns
# (NVDEC output surfaces and FFmpeg's hwaccel pool are released at once; CPU-fallback frames are
# uploaded), and the device arrays its planes view.
from libc.stdint cimport uint8_t
from torchcodec._core._raw_frames cimport RawFrame
from torchcodec._cuda._driver cimport CudaContext, CudaDriver, FrameSync
from torchcodec._cuda cimport cuda as cu
from torchcodec._ffmpeg.avutil cimport AVFrame

cdef enum:
    MAX_PLANES = 4


cdef struct PictureLayout:
    # The planes of a picture of ``format`` at width x height, as its rows are copied.
    int format                  # AVPixelFormat
    int width
    int height
    int num_planes
    int rows[MAX_PLANES]
    size_t row_bytes[MAX_PLANES]
    int shift_x[MAX_PLANES]     # log2 of each plane's subsampling (0 for luma, alpha, packed planes)
    int shift_y[MAX_PLANES]
    size_t element[MAX_PLANES]  # bytes per pixel position in the plane (for crop offsets; 0: unknown)


# Fill ``layout`` for ``format``: 0, or -1 for a format whose planes cannot be laid out (hardware
# formats, unknown ones).
cdef int picture_layout(int format, int width, int height, PictureLayout *layout) noexcept nogil


cdef class DeviceFrameMemory:
    # What a device RawFrame's AVFrame holds (through its buf[0]): the array from the output library
    # that holds the planes, and the FrameSync its AVFrame.opaque points at (``ready``: recorded on
    # the stream that wrote the planes; ``done``: recorded by the converters after their reads).
    cdef CudaContext context
    cdef FrameSync sync
    cdef readonly object storage
    cdef readonly size_t nbytes


cdef class FrameUploader:
    # A CUDA packet decoder's frames into device memory (VideoPacketDecoder._upload_to).
    cdef readonly CudaContext context
    cdef CudaDriver driver
    cdef cu.CUevent upstream_ready      # recorded on the legacy stream: FFmpeg wrote its hwaccel frame
    cdef cu.CUevent copied              # recorded after copying a hwaccel frame: FFmpeg may reuse it
    cdef uint8_t *staging               # host frames, laid out as their device copy (owned, grown)
    cdef size_t staging_size
    cdef int upload(self, RawFrame raw) except -1


# The converter's way back for a device copy whose format the kernels cannot read: the host waits
# for its ``ready`` event and copies its planes into ``host`` (allocated here, freed by the caller).
# The context must be pushed.
cdef int download_frame(CudaDriver driver, const AVFrame *src, AVFrame *host) except -1 nogil
