"""Decode-time transforms on the GPU: the transform plan of a CudaConverter, run by the kernels of
kernels/resize.cu (launch interface: ``tc_resize_params`` in include/torchcodec/kernels.h; see
docs/cuda_kernels.md, "Transforms").

A plan is the CPU path's (torchcodec._core._scaler's Stage: crop the stage's input, then resize it
bilinearly, or not), and each stage gives the CPU path's pixels: stage 0 reads the decoded frame
through its colour conversion (the kernels compute the RGB pixels of the frame, as the CPU path
converts it whole, only where the stage's filters reach), later stages read the RGB image of the
stage before. One launch per stage, one thread per output pixel; only the output is written, and
the outputs of all but the last stage (plans of several resizes) go to two scratch images in
device memory. A crop that ends the plan is not a stage of its own: the stage before it writes that
window of its output straight into the destination.

The resizes give swscale's bytes for the CPU path's RGB-to-RGB resize (include/torchcodec/
swscale_resize.h): its filters, computed here once per plan on the host and kept in device memory
(``tables``), and the matrix the CPU path gives swscale (``resize_matrix``). uint8 output runs the
8-bit chain (RGB24 routes and images), float32 the 16-bit chain (RGB48, divided by 65535 at the end),
as the CPU path does.
"""
import threading

from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memset

from torchcodec._core._scaler cimport parse_stages, resize_matrix, stage_resizes
from torchcodec._cuda cimport cuda as cu
from torchcodec._cuda cimport ffnvcodec   # the C definitions of the driver's tables
from torchcodec._cuda._driver cimport CudaContext, CudaModule, launch_kernel
from torchcodec._cuda._scratch cimport (scratch_follow, scratch_free, scratch_init, scratch_read, scratch_take,
                                        scratch_upload)
from torchcodec._cuda.kernels cimport (TC_KERNEL_BLOCK_X, TC_KERNEL_BLOCK_Y, TC_RESIZE_CHAIN8, TC_RESIZE_CHAIN16,
                                       tc_resize_filter_table,
                                       tc_resize_half_chroma, tc_resize_params, tc_sws_coefficients,
                                       tc_sws_coeffs_for, tc_sws_rgb2yuv_table)


# The resize kernels, in the order of CudaTransforms.kernels: the frame as the source, an RGB image.
RESIZE_KERNELS = (b"tc_resize_frame", b"tc_resize_image")
# Alignment of each stage's table in `tables`, and of the scratch images' rows.
cdef int64_t ALIGN = 256

_modules_lock = threading.Lock()
_modules = {}       # (CudaContext, name) -> CudaModule: each fatbin loaded once per context


cpdef object cached_module(CudaContext context, str name):
    """The kernel module ``name`` (torchcodec._cuda._kernels.KERNELS) of ``context``, loaded on
    first use and kept for the process."""
    with _modules_lock:
        if (context, name) not in _modules:
            _modules[context, name] = context.load_module(name)
        return _modules[context, name]


cdef inline int64_t aligned(int64_t n) noexcept nogil:
    return (n + ALIGN - 1) // ALIGN * ALIGN


cdef inline unsigned blocks(int64_t count, int per_block) noexcept nogil:
    return <unsigned>((count + per_block - 1) // per_block)


cdef class CudaTransforms:
    """A transform plan run on ``context``'s device (see the module's docstring).

    ``stages``: the plan, as ``Scaler.set_stages`` takes it (``parse_stages``); ``single_resize``:
    it is one Resize and nothing else. ValueError for a plan that is not one.
    """

    def __cinit__(self, CudaContext context not None, stages, bint single_resize=False):
        cdef int k
        self.num_stages = parse_stages(stages, self.stages)
        if self.num_stages == 0:
            raise ValueError("a CudaTransforms plan needs at least one stage")
        self.single_resize = single_resize and self.num_stages == 1
        self.out_width = self.stages[self.num_stages - 1].out_w
        self.out_height = self.stages[self.num_stages - 1].out_h
        self.tables_ready = False
        self.context = context
        self.driver = context.driver
        self.module = cached_module(context, "resize")
        for k in range(NUM_RESIZE_KERNELS):
            self.kernels[k] = (<CudaModule>self.module).function_ptr(RESIZE_KERNELS[k])
        context.enter()
        try:
            scratch_init(self.driver, &self.tables)
            scratch_init(self.driver, &self.images)
        finally:
            context.exit()

    def __dealloc__(self):
        # The last launches that read the tables and images are waited for; nothing here raises.
        if self.context is None or self.context.ptr == NULL or self.driver.ptr == NULL:
            return
        if self.driver.ptr.cuCtxPushCurrent(self.context.ptr) != cu.CUDA_SUCCESS:
            return
        scratch_free(self.driver, &self.tables)
        scratch_free(self.driver, &self.images)
        self.driver.ptr.cuCtxPopCurrent(NULL)

    def __repr__(self):
        return f"CudaTransforms({self.num_stages} stages, output {self.out_width}x{self.out_height})"

    @property
    def scratch_bytes(self) -> tuple:
        """Device memory held: (the filter tables, the images between stages), in bytes."""
        return self.tables.size, self.images.size

    cdef int prepare_tables(self, cu.CUstream stream) except -1 nogil:
        """Have the filter tables of the stages that resize in ``tables``: computed and uploaded on
        ``stream`` the first time, then only waited for by another stream (scratch_follow). The
        context is pushed by the caller."""
        cdef void *parts[MAX_STAGES]
        cdef int64_t sizes[MAX_STAGES]
        cdef int64_t total = 0
        cdef uint8_t *host = NULL
        cdef int k, failed = 0
        cdef const Stage *stage
        if self.tables_ready:
            return scratch_follow(self.driver, stream, &self.tables)
        for k in range(self.num_stages):
            parts[k] = NULL
        try:
            for k in range(self.num_stages):
                stage = &self.stages[k]
                self.offsets[k] = total
                sizes[k] = 0
                if stage_resizes(stage):
                    if tc_resize_filter_table(stage.crop_w, stage.crop_h, stage.out_w, stage.out_h, &parts[k],
                                              &sizes[k], &self.taps[k][0], &self.taps[k][1], &self.taps[k][2]) < 0:
                        failed = 1
                        break
                    total += aligned(sizes[k])
            if not failed and total:
                host = <uint8_t *>malloc(total)
                failed = host == NULL
            if failed:
                with gil:
                    raise MemoryError("cannot compute the filters of the transforms' resizes")
            for k in range(self.num_stages):
                if parts[k] != NULL:
                    memcpy(host + self.offsets[k], parts[k], sizes[k])
            if total:
                scratch_upload(self.driver, stream, &self.tables, host, total)
        finally:
            free(host)
            for k in range(self.num_stages):
                free(parts[k])
        self.tables_ready = True
        return 0

    cdef int run(self, const tc_yuv_to_rgb_params *frame, cu.CUstream stream, int rotation, int frame_width,
                 uint8_t *dst, Py_ssize_t row_stride, bint as_float) except -1 nogil:
        """Queue the plan on ``stream`` (the context pushed by the caller), from the frame that
        ``frame`` describes (its planes, route and chroma filters for the frame as converted: after
        rotation, whose size is ``frame.width`` x ``frame.height``) into
        ``dst``: out_height rows of out_width packed RGB pixels, uint8 (or float32 when
        ``as_float``), ``row_stride`` bytes apart. ``rotation`` and ``frame_width`` (the width
        before rotation) choose the resizes' matrix as the CPU path does (resize_matrix). RuntimeError
        when stage 0 does not fit in the frame."""
        cdef int n = self.num_stages, k, runs
        cdef int matrix = resize_matrix(self.single_resize, rotation, frame_width, &self.stages[0])
        cdef Py_ssize_t elem = 2 if as_float else 1            # bytes of a scratch image's samples
        cdef bint fold = n >= 2 and not stage_resizes(&self.stages[n - 1])
        cdef const Stage *stage
        cdef const Stage *window
        cdef int64_t image_bytes = 0, stride
        cdef int32_t inv[4]
        cdef tc_resize_params p
        cdef uint64_t images
        if self.stages[0].x + self.stages[0].crop_w > frame.width or self.stages[0].y + self.stages[0].crop_h > frame.height:
            with gil:
                raise RuntimeError(f"cannot crop {self.stages[0].crop_w}x{self.stages[0].crop_h} at "
                                   f"({self.stages[0].x}, {self.stages[0].y}) from a {frame.width}x{frame.height} "
                                   f"frame (did the video change size?)")
        # A crop that ends the plan is a window of the stage before it.
        runs = n - 1 if fold else n
        for k in range(runs - 1):
            image_bytes = max(image_bytes, aligned(<int64_t>self.stages[k].out_w * 3 * elem) * self.stages[k].out_h)
        self.prepare_tables(stream)
        if runs > 1:
            scratch_take(self.driver, stream, &self.images, <size_t>(2 * image_bytes))
        memset(&p, 0, sizeof(p))
        tc_sws_coefficients(matrix, inv)
        tc_sws_rgb2yuv_table(inv, p.rgb2yuv)
        p.coeffs = tc_sws_coeffs_for(matrix, 0)       # swscale's internal YUV is limited range
        p.chain = TC_RESIZE_CHAIN16 if as_float else TC_RESIZE_CHAIN8
        p.frame = frame[0]
        images = self.images.ptr
        for k in range(runs):
            stage = &self.stages[k]
            if k == 0:
                p.image, p.image_width, p.image_height = 0, frame.width, frame.height
            else:
                p.image = images + <uint64_t>(((k - 1) % 2) * image_bytes)
                p.image_width, p.image_height = self.stages[k - 1].out_w, self.stages[k - 1].out_h
                p.image_row_stride = aligned(<int64_t>p.image_width * 3 * elem)
            p.crop_x, p.crop_y, p.crop_width, p.crop_height = stage.x, stage.y, stage.crop_w, stage.crop_h
            p.out_width, p.out_height = stage.out_w, stage.out_h
            p.window_x, p.window_y, p.window_width, p.window_height = 0, 0, stage.out_w, stage.out_h
            if fold and k == runs - 1:
                window = &self.stages[n - 1]
                p.window_x, p.window_y, p.window_width, p.window_height = window.x, window.y, window.crop_w, window.crop_h
            p.h_taps = p.c_taps = p.v_taps = 0
            p.filters = 0
            if stage_resizes(stage):
                p.filters = self.tables.ptr + <uint64_t>self.offsets[k]
                p.h_taps, p.c_taps, p.v_taps = self.taps[k][0], self.taps[k][1], self.taps[k][2]
                p.half_chroma = tc_resize_half_chroma(stage.crop_w, stage.out_w)
                p.rounding = 0 if p.v_taps == 2 else 512    # yuv2rgb24_full_2 has no rounding term
            if k == runs - 1:
                p.dst = <uint64_t><size_t>dst
                p.dst_row_stride = row_stride // (4 if as_float else 1)
                p.float_output = as_float
            else:
                stride = aligned(<int64_t>stage.out_w * 3 * elem)
                p.dst = images + <uint64_t>((k % 2) * image_bytes)
                p.dst_row_stride = stride // elem
                p.float_output = 0
            p.dst_col_stride, p.dst_chan_stride = 3, 1
            launch_kernel(self.driver, self.kernels[0 if k == 0 else 1],
                          blocks(p.window_width, TC_KERNEL_BLOCK_X), blocks(p.window_height, TC_KERNEL_BLOCK_Y),
                          stream, &p)
        if self.tables.ptr:
            scratch_read(self.driver, stream, &self.tables)
        if runs > 1:
            scratch_read(self.driver, stream, &self.images)
        return 0
