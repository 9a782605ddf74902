"""ColorConverter: decoded frames (RawFrame) to RGB Frames, with the display rotation applied.

The same object converts for the video reader behind VideoDecoder (``convert_into``, at C level,
straight into the output batch) and for callers of the building-block API (``convert``, one
RawFrame into a new RGB array of the bridge's library). Not bound to a stream: everything it needs
(size, pixel format, colour matrix and range, rotation) comes with each frame. On the CPU the
pixels are swscale's, byte-equal to ``ffmpeg -vf format=rgb24`` (see _scaler.pyx). Decode-time
transforms (``transforms=``) apply to ``convert``'s frames as a VideoDecoder applies them, on
either device (the plan of each frame size made once, torchcodec.transforms' make_plan).
"""
from collections import namedtuple

from libc.math cimport round
from libc.stdint cimport uint8_t

from torchcodec._core._device_converter cimport DeviceConverter
from torchcodec._core._raw_frames cimport RawFrame
from torchcodec._core._scaler cimport Scaler
from torchcodec._ffmpeg.avutil cimport AVFrame

from torchcodec import _outputs
from torchcodec._core._devices import device_parts, parse_device
from torchcodec._frame import Frame
from torchcodec._memory import check_request
from torchcodec.transforms._decoder_transforms import Resize, convert_transforms, make_plan

OUTPUT_DTYPES = ("uint8", "float32", "auto")

# The transform plan of one frame size: the stages and the single_resize flag of set_stages, and
# the output (height, width).
Plan = namedtuple("Plan", "stages single_resize size")


def output_dtype_name(output_dtype) -> str:
    """``output_dtype`` as "uint8", "float32" or "auto" (numpy and torch dtypes accepted); ValueError
    for anything else, in TorchCodec's words."""
    name = "auto" if isinstance(output_dtype, str) and output_dtype == "auto" else _outputs.dtype_name(output_dtype)
    if name not in OUTPUT_DTYPES:
        raise ValueError(f"Invalid output_dtype ({output_dtype}). Supported values are uint8, float32, and 'auto'.")
    return name


cdef int clockwise_rotation(double counter_clockwise) noexcept:
    """The display matrix's counter-clockwise rotation as the clockwise turn applied to frames:
    0, 90, 180 or 270 (other angles: 0, as TorchCodec)."""
    cdef int turn = (-<int>round(counter_clockwise)) % 360
    if turn < 0:
        turn += 360
    return turn if turn in (90, 180, 270) else 0


cdef ColorConverter cpu_color_converter(object output_dtype):
    return converter_over(Scaler(), "cpu", output_dtype)


cdef class ColorConverter:
    """Turns a :class:`RawFrame` (typically YUV) into an RGB ``Frame``, rotation applied, as a
    VideoDecoder returns it::

        converter = ColorConverter()
        for packet in demuxer:
            for raw_frame in packet_decoder.decode(packet):
                frame = converter.convert(raw_frame)      # frame.data: uint8 (3, H, W), RGB

    Not tied to a stream: one converter converts frames of any video on its device.

    Args:
        device: "cpu", "cuda" or "cuda:N" (also a ``torch.device``); None: torch's default device
            when torch is in use, else the CPU. It must be the device of the frames (the decoder's):
            a frame on another device is refused rather than moved.
        output_dtype: uint8 (default, 0..255), float32 (0..1) or "auto" (uint8 for 8-bit sources,
            float32 for deeper ones, decided per frame). numpy/torch dtypes or their names.
        transforms: a sequence of ``torchcodec.transforms`` (Resize, CenterCrop, RandomCrop) or
            torchvision v2 Resize/CenterCrop/RandomCrop objects (an addition to TorchCodec's
            ColorConverter), applied in order to every frame after rotation, as a VideoDecoder with
            these transforms applies them, pixel for pixel; on CUDA they run fused into the colour
            conversion. The plan is made for the first frame of each size (after rotation): a
            RandomCrop draws its place then, once per size. ValueError for what cannot be applied.

    Passive and not thread-safe: one converter per thread. ``convert`` releases the GIL while it
    converts. Process-local (not picklable).
    """

    def __init__(self, device=None, output_dtype="uint8", transforms=None):
        self.output_dtype = output_dtype_name(output_dtype)
        self.transforms = convert_transforms(transforms)
        self.plans = {}
        self.plan = None
        name, index = parse_device(device)
        if index is None:
            self.impl = Scaler()
            self.device = "cpu"
        else:
            self.device = f"{name}:{index}"
            self.impl = device_parts(self.device).device_converter(index)

    def __reduce__(self):
        raise TypeError("ColorConverter cannot be pickled, copied or sent to another process: it is a handle to an "
                        "FFmpeg object that only exists in this one. Construct one in each process.")

    def __repr__(self):
        transforms = f", transforms={self.transforms!r}" if self.transforms is not None else ""
        return f"ColorConverter(device={self.device!r}, output_dtype={self.output_dtype!r}{transforms})"

    def _plan_for(self, int height, int width):
        """The output (height, width) of a frame of this size (after rotation), with the transforms'
        plan for that size set on the device converter (made for the first frame of the size)."""
        if self.transforms is None:
            return height, width
        plan = self.plans.get((height, width))
        if plan is None:
            applied, stages, size = make_plan(self.transforms, (height, width))
            plan = Plan(stages, len(applied) == 1 and isinstance(applied[0], Resize), size)
            self.plans[height, width] = plan
        if plan is not self.plan:
            self.impl.set_stages(plan.stages, plan.single_resize)
            self.plan = plan
        return plan.size

    cdef int convert_into(self, const AVFrame *frame, int rotation, uint8_t *dst, Py_ssize_t row_stride,
                          int width, int height, bint as_float) except -1 nogil:
        return self.impl.convert(frame, rotation, dst, row_stride, width, height, as_float)

    cdef int copy_output(self, uint8_t *dst, const uint8_t *src, Py_ssize_t row_stride, int width, int height,
                         bint as_float) except -1 nogil:
        return self.impl.copy_output(dst, src, row_stride, width, height, as_float)

    def convert(self, RawFrame raw_frame not None):
        """One RawFrame as an RGB ``Frame``: data (3, H, W) of the converter's dtype, upright
        (``raw_frame.rotation`` applied, so H and W are swapped for 90 and 270 degrees) and
        transformed (H, W: the last transform's size), with the frame's pts and duration.
        RuntimeError for a frame on another device; ValueError for a crop larger than the frame."""
        if raw_frame.device != self.device:
            raise RuntimeError(f"the frame is on {raw_frame.device} and this ColorConverter converts on "
                               f"{self.device}: convert on the frame's device (the decoder's), then move the RGB "
                               f"output if needed")
        cdef int rotation = clockwise_rotation(raw_frame.rotation)
        cdef int width = raw_frame.ptr.width, height = raw_frame.ptr.height
        if rotation in (90, 270):
            width, height = height, width
        if width <= 0 or height <= 0:
            raise RuntimeError(f"the frame has no size ({raw_frame.ptr.width}x{raw_frame.ptr.height})")
        height, width = self._plan_for(height, width)
        dtype = self.output_dtype
        if dtype == "auto":
            dtype = "float32" if raw_frame.bit_depth > 8 else "uint8"
        cdef bint as_float = dtype == "float32"
        if self.device != "cpu":
            data = device_parts(self.device).convert_raw_frame(self, raw_frame, rotation, width, height, dtype)
            return Frame(_outputs.nchw(data), raw_frame.pts_seconds, raw_frame.duration_seconds)
        check_request(f"converting a {width}x{height} frame to RGB {dtype}", frames=1, frame_size=(height, width),
                      itemsize=4 if as_float else 1)
        memory = _outputs.allocate((height, width, 3), dtype)
        cdef uint8_t *dst = <uint8_t *><size_t>memory.address
        cdef Py_ssize_t row_stride = memory.strides[0]
        with nogil:
            self.impl.convert(raw_frame.ptr, rotation, dst, row_stride, width, height, as_float)
        return Frame(memory.finish(_outputs.nchw(memory.data)), raw_frame.pts_seconds, raw_frame.duration_seconds)


def converter_over(DeviceConverter impl not None, device, output_dtype="uint8"):
    """A ColorConverter converting with ``impl`` (a DeviceConverter: a device's, such as the CUDA
    wing's CudaConverter) on ``device`` ("cuda:N")."""
    cdef ColorConverter converter = ColorConverter.__new__(ColorConverter)
    converter.impl = impl
    converter.device = device
    converter.output_dtype = output_dtype_name(output_dtype)
    converter.transforms = None
    converter.plans = {}
    return converter
