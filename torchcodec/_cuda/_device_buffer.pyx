"""Device memory that torchcodec allocates itself, exported through DLPack and the CUDA Array Interface.

Used for CUDA outputs when neither torch nor cupy provides the memory (docs/cuda_outputs.md).
``DeviceBuffer.empty(context, shape, dtype, stream)`` allocates a C-contiguous array in the device's
primary context, in ``stream``'s order (``cuMemAllocAsync``; ``cuMemAlloc`` where the driver or the
device lacks it). The producer writes on a stream, then calls ``record(stream)``: the buffer's
ready event is recorded there, and every consumer is ordered after it:

- ``__dlpack__(stream=s)`` makes the consumer's stream ``s`` wait on the event (``cuStreamWaitEvent``,
  no host wait) and returns a capsule: "dltensor_versioned" (DLPack 1.x) when the consumer's
  ``max_version`` allows, else the legacy "dltensor". The capsule holds a reference to the buffer
  until its deleter runs (exactly once: by the consumer, or by the capsule when nobody consumed it).
- ``__cuda_array_interface__`` (v3) cannot know the consumer's stream, so the getter waits on the host
  for the event (``cuEventSynchronize``) and reports ``stream: None``.

The memory is freed when the buffer, its views (``permuted``) and every exported capsule are gone:
``cuMemFreeAsync`` on the allocation stream after the ready event, or ``cuMemFree``.
"""
import numbers
import operator

from cpython.pycapsule cimport PyCapsule_GetPointer, PyCapsule_IsValid, PyCapsule_New
from cpython.ref cimport PyObject
from libc.stdint cimport int64_t, uintptr_t
from libc.stdlib cimport free, malloc

from torchcodec._cuda cimport cuda as cu
from torchcodec._cuda cimport ffnvcodec   # the C definitions of the driver's tables
from torchcodec._cuda._driver cimport CudaContext, CudaDriver, check_cu, check_cu_nogil, stream_wait_event


cdef tuple element_strides(shape):
    """The strides, in elements, of a C-contiguous array of ``shape`` (an extent of 0 counts as 1,
    as DLPack producers write them); this module imports nothing of the package above the wing."""
    cdef list steps = [1] * len(shape)
    cdef Py_ssize_t k, step = 1
    for k in range(len(shape) - 1, -1, -1):
        steps[k] = step
        step *= max(<Py_ssize_t>shape[k], 1)
    return tuple(steps)


cdef extern from "Python.h":
    void Py_IncRef(PyObject *o)
    void Py_DecRef(PyObject *o)
    int Py_IsInitialized() nogil

#: dtype name -> (DLPack type code, bits, __cuda_array_interface__ typestr)
DTYPES = {"uint8": (kDLUInt, 8, "|u1"), "uint16": (kDLUInt, 16, "<u2"), "float32": (kDLFloat, 32, "<f4"),
          "float64": (kDLFloat, 64, "<f8")}
#: The largest buffer empty() allocates (1 TiB: more than any GPU has); larger requests are refused
#: before the driver is asked, as are more than MAX_NDIM dimensions.
MAX_NBYTES = 1 << 40
MAX_NDIM = 32
#: Stream handles the driver understands without a stream object (cuda.h: CU_STREAM_LEGACY,
#: CU_STREAM_PER_THREAD); they are also DLPack's stream values 1 and 2 for CUDA.
STREAM_LEGACY = cu.TC_STREAM_LEGACY
STREAM_PER_THREAD = cu.TC_STREAM_PER_THREAD

cdef cu.CUresult CUDA_ERROR_OUT_OF_MEMORY = 2
cdef cu.CUresult CUDA_ERROR_NOT_SUPPORTED = 801

# The layouts are the ABI: a C compiler lays these out as dlpack.h's structs.
assert sizeof(DLDevice) == 8 and sizeof(DLDataType) == 4 and sizeof(DLTensor) == 48
assert sizeof(DLManagedTensor) == 64 and sizeof(DLManagedTensorVersioned) == 80


cdef inline cu.CUstream as_stream(uintptr_t handle) noexcept nogil:
    return <cu.CUstream>handle


def _as_int(value, what: str) -> int:
    """An integer argument (int, numpy integer: anything with __index__, but not bool) as an int."""
    if isinstance(value, bool):
        raise TypeError(f"{what} must be an int, not bool")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{what} must be an int, not {type(value).__name__}") from None


def _stream_handle(stream, what: str) -> int:
    """``stream`` as a CUstream handle (an int, 0 to 2**64 - 1); TypeError/ValueError otherwise."""
    stream = _as_int(stream, what)
    if not 0 <= stream < 1 << 64:
        raise ValueError(f"{what}={stream} is not a CUstream handle (an int from 0 to 2**64 - 1)")
    return stream


def _checked_shape(shape, dtype: str) -> tuple:
    """(``shape`` as a tuple of ints, its size in bytes), after refusing bad dtypes, ranks, extents
    and absurd sizes."""
    if dtype not in DTYPES:
        raise ValueError(f"dtype {dtype!r} is not supported; use one of {', '.join(DTYPES)}")
    try:
        dims = tuple(operator.index(extent) for extent in shape)
    except (TypeError, AttributeError):
        raise TypeError(f"shape must be a tuple of ints, not {shape!r}") from None
    if len(dims) > MAX_NDIM:
        raise ValueError(f"shape {dims} has {len(dims)} dimensions; at most {MAX_NDIM} are supported")
    if any(extent < 0 for extent in dims):
        raise ValueError(f"shape {dims} has a negative extent")
    nbytes = DTYPES[dtype][1] // 8
    for extent in dims:
        nbytes *= extent
    if nbytes > MAX_NBYTES:
        raise MemoryError(f"a {dtype} buffer of shape {dims} would take {nbytes} bytes; torchcodec refuses "
                          f"device buffers over {MAX_NBYTES} bytes")
    return dims, nbytes


cdef int check_alloc(CudaDriver driver, cu.CUresult ret, const char *where, size_t nbytes, int index) except -1:
    """check_cu, with the driver's out-of-memory error as a MemoryError."""
    if ret == CUDA_ERROR_OUT_OF_MEMORY:
        raise MemoryError(f"{where.decode()} could not allocate {nbytes} bytes on cuda:{index} "
                          f"(CUDA_ERROR_OUT_OF_MEMORY)")
    return check_cu(driver, ret, where)


cdef class DeviceMemory:
    """One allocation in a device's primary context with its ready event (see the .pxd); made by
    DeviceBuffer.empty only."""

    def __init__(self, *args, **kwargs):
        raise TypeError("DeviceMemory is made by DeviceBuffer.empty only")

    def __cinit__(self):
        self.ptr = 0
        self.nbytes = 0
        self.ready = NULL
        self.stream_ordered = False

    cdef int allocate(self, CudaContext context, size_t nbytes, cu.CUstream stream) except -1:
        cdef CudaDriver driver = context.driver
        cdef cu.CUdeviceptr ptr = 0
        cdef cu.CUresult ret = CUDA_ERROR_NOT_SUPPORTED
        self.context = context
        self.stream = stream
        context.enter()
        try:
            check_cu(driver, driver.ptr.cuEventCreate(&self.ready, cu.CU_EVENT_DISABLE_TIMING), "cuEventCreate")
            if nbytes:
                if driver.cuMemAllocAsync != NULL and driver.cuMemFreeAsync != NULL:
                    with nogil:
                        ret = driver.cuMemAllocAsync(&ptr, nbytes, stream)
                    self.stream_ordered = ret != CUDA_ERROR_NOT_SUPPORTED   # no memory pools on this device
                    if self.stream_ordered:
                        check_alloc(driver, ret, "cuMemAllocAsync", nbytes, context.index)
                if not self.stream_ordered:
                    with nogil:
                        ret = driver.ptr.cuMemAlloc(&ptr, nbytes)
                    check_alloc(driver, ret, "cuMemAlloc", nbytes, context.index)
                self.ptr = ptr
                self.nbytes = nbytes
            # Consumers on other streams are ordered after the allocation through the event, as after writes.
            check_cu(driver, driver.ptr.cuEventRecord(self.ready, stream), "cuEventRecord")
        finally:
            context.exit()
        return 0

    def __dealloc__(self):
        # Never raises. Nothing to free once the context was released (the driver freed it with the context).
        cdef CudaDriver driver
        if self.context is None or self.context.ptr == NULL or self.context.driver.ptr == NULL:
            return
        driver = self.context.driver
        if driver.ptr.cuCtxPushCurrent(self.context.ptr) != cu.CUDA_SUCCESS:
            return
        with nogil:
            if self.ptr and self.stream_ordered:
                if self.ready != NULL and driver.cuStreamWaitEvent != NULL:
                    driver.cuStreamWaitEvent(self.stream, self.ready, 0)
                driver.cuMemFreeAsync(self.ptr, self.stream)
            elif self.ptr:
                driver.ptr.cuMemFree(self.ptr)
            if self.ready != NULL:
                driver.ptr.cuEventDestroy(self.ready)
            driver.ptr.cuCtxPopCurrent(NULL)


# ---- DLPack export -------------------------------------------------------------------------------

cdef void release_export(void *owner, void *block) noexcept nogil:
    """Drop the capsule's reference to its DeviceBuffer and free the exported struct (any thread)."""
    if owner != NULL and Py_IsInitialized():
        with gil:
            Py_DecRef(<PyObject *>owner)
    free(block)


cdef void delete_legacy(DLManagedTensor *tensor) noexcept nogil:
    release_export(tensor.manager_ctx, tensor)


cdef void delete_versioned(DLManagedTensorVersioned *tensor) noexcept nogil:
    release_export(tensor.manager_ctx, tensor)


cdef void destroy_legacy_capsule(object capsule) noexcept:
    # A consumer renames the capsule ("used_dltensor") when it takes ownership: then it calls the deleter.
    cdef DLManagedTensor *tensor
    if PyCapsule_IsValid(capsule, b"dltensor"):
        tensor = <DLManagedTensor *>PyCapsule_GetPointer(capsule, b"dltensor")
        tensor.deleter(tensor)


cdef void destroy_versioned_capsule(object capsule) noexcept:
    cdef DLManagedTensorVersioned *tensor
    if PyCapsule_IsValid(capsule, b"dltensor_versioned"):
        tensor = <DLManagedTensorVersioned *>PyCapsule_GetPointer(capsule, b"dltensor_versioned")
        tensor.deleter(tensor)


cdef int fill_tensor(DLTensor *tensor, DeviceBuffer buffer, int64_t *sizes) except -1:
    """Describe ``buffer`` in ``tensor``; shape and strides (elements) go to ``sizes`` (2 * ndim)."""
    code, bits, _ = DTYPES[buffer._dtype]
    cdef int ndim = len(buffer._shape)
    cdef int i
    # data is element 0 itself and byte_offset 0, as torch exports views: consumers that ignore
    # byte_offset (older torch releases, cuda.core) would otherwise read the allocation's start.
    tensor.data = <void *><uintptr_t>(buffer.memory.ptr + buffer._offset * buffer.itemsize) if buffer.memory.ptr else NULL
    tensor.device.device_type = kDLCUDA
    tensor.device.device_id = buffer.memory.context.index
    tensor.ndim = ndim
    tensor.dtype.code = code
    tensor.dtype.bits = bits
    tensor.dtype.lanes = 1
    tensor.shape = sizes
    tensor.strides = sizes + ndim
    tensor.byte_offset = 0
    for i in range(ndim):
        sizes[i] = buffer._shape[i]
        sizes[ndim + i] = buffer._strides[i]
    return 0


cdef object export_capsule(DeviceBuffer buffer, bint versioned):
    """A new DLPack capsule viewing ``buffer`` and holding a reference to it."""
    cdef size_t ndim = len(buffer._shape)
    cdef size_t header = sizeof(DLManagedTensorVersioned) if versioned else sizeof(DLManagedTensor)
    cdef void *block = malloc(header + 2 * max(ndim, 1) * sizeof(int64_t))
    cdef DLManagedTensor *legacy = <DLManagedTensor *>block
    cdef DLManagedTensorVersioned *modern = <DLManagedTensorVersioned *>block
    if block == NULL:
        raise MemoryError("could not allocate a DLPack tensor description")
    try:
        if versioned:
            modern.version.major = DLPACK_MAJOR_VERSION
            modern.version.minor = DLPACK_MINOR_VERSION
            modern.flags = 0                       # writable, not a copy
            modern.manager_ctx = NULL
            modern.deleter = delete_versioned
            fill_tensor(&modern.dl_tensor, buffer, <int64_t *>(<char *>block + header))
            capsule = PyCapsule_New(block, b"dltensor_versioned", destroy_versioned_capsule)
        else:
            legacy.manager_ctx = NULL
            legacy.deleter = delete_legacy
            fill_tensor(&legacy.dl_tensor, buffer, <int64_t *>(<char *>block + header))
            capsule = PyCapsule_New(block, b"dltensor", destroy_legacy_capsule)
    except BaseException:
        free(block)
        raise
    # The capsule owns the block from here; the reference to the buffer goes with it.
    Py_IncRef(<PyObject *>buffer)
    if versioned:
        modern.manager_ctx = <PyObject *>buffer
    else:
        legacy.manager_ctx = <PyObject *>buffer
    return capsule


def _consumer_stream(stream) -> int:
    """DLPack's ``stream`` argument for CUDA as the stream handle to order, or -1 for none."""
    if stream is None:
        return STREAM_LEGACY                       # "None: the legacy default stream"
    stream = _as_int(stream, "__dlpack__(stream=...) for CUDA")
    if stream == 0:
        raise ValueError("__dlpack__(stream=0) is ambiguous and DLPack disallows it for CUDA: pass 1 (legacy "
                         "default stream), 2 (per-thread default stream), a CUstream handle, or -1 (no "
                         "synchronisation)")
    if stream == -1:
        return -1
    return _stream_handle(stream, "__dlpack__(stream=...)")


cdef DeviceBuffer make_view(DeviceMemory memory, tuple shape, tuple strides, str dtype, Py_ssize_t itemsize,
                            Py_ssize_t offset=0):
    cdef DeviceBuffer buffer = DeviceBuffer.__new__(DeviceBuffer)
    buffer.memory = memory
    buffer._offset = offset
    buffer._shape = shape
    buffer._strides = strides
    buffer._dtype = dtype
    buffer.itemsize = itemsize
    return buffer



cdef class DeviceBuffer:
    """An array in device memory that torchcodec allocated: shape, dtype, strides and a ready event.

    Make one with :meth:`empty`; :meth:`permuted` gives views sharing the memory. Exported through
    ``__dlpack__`` / ``__dlpack_device__`` and ``__cuda_array_interface__`` (v3), so that torch,
    cupy, jax, numba and others take it without a copy.
    """

    def __init__(self, *args, **kwargs):
        raise TypeError("DeviceBuffer cannot be constructed directly: use DeviceBuffer.empty(context, shape, "
                        "dtype, stream)")

    @staticmethod
    def empty(CudaContext context not None, shape, dtype: str, stream) -> DeviceBuffer:
        """An uninitialised C-contiguous array of ``shape`` and ``dtype`` ("uint8", "uint16",
        "float32", "float64") on ``context``'s device, allocated in ``stream``'s order (a CUstream handle as an
        int; 0 or 1: the legacy default stream, 2: the per-thread default stream). The stream must
        outlive the buffer: the memory is freed on it. ValueError/TypeError for bad arguments,
        MemoryError for sizes over MAX_NBYTES or when the device is out of memory."""
        dims, nbytes = _checked_shape(shape, dtype)
        handle = _stream_handle(stream, "stream")
        itemsize = DTYPES[dtype][1] // 8
        memory = DeviceMemory.__new__(DeviceMemory)
        (<DeviceMemory>memory).allocate(context, nbytes, as_stream(handle))
        return make_view(memory, dims, element_strides(dims), dtype, itemsize)

    # ---- synchronisation ----------------------------------------------------------------------

    cdef int record_ready(self, cu.CUstream stream) except -1 nogil:
        self.memory.context.enter()
        try:
            check_cu_nogil(self.memory.context.driver, self.memory.context.driver.ptr.cuEventRecord(
                self.memory.ready, stream), "cuEventRecord")
        finally:
            self.memory.context.exit()
        return 0

    cdef int wait_ready(self, cu.CUstream stream) except -1 nogil:
        self.memory.context.enter()
        try:
            stream_wait_event(self.memory.context.driver, stream, self.memory.ready)
        finally:
            self.memory.context.exit()
        return 0

    cdef int wait_ready_host(self) except -1 nogil:
        self.memory.context.enter()
        try:
            check_cu_nogil(self.memory.context.driver, self.memory.context.driver.ptr.cuEventSynchronize(
                self.memory.ready), "cuEventSynchronize")
        finally:
            self.memory.context.exit()
        return 0

    def record(self, stream) -> None:
        """The producer finished writing on ``stream`` (a CUstream handle as an int): consumers are
        ordered after the work queued there so far (the ready event is recorded on it)."""
        cdef uintptr_t handle = _stream_handle(stream, "stream")
        with nogil:
            self.record_ready(as_stream(handle))

    def synchronize(self) -> None:
        """Wait on the host until the last recorded writes are done."""
        with nogil:
            self.wait_ready_host()

    # ---- views ------------------------------------------------------------------------------

    def permuted(self, axes) -> DeviceBuffer:
        """A view of the same memory with the dimensions reordered: ``axes[i]`` is the dimension of
        this buffer that the view's dimension ``i`` is (numpy's ``transpose(axes)``). NHWC viewed as
        NCHW is ``permuted((0, 3, 1, 2))``."""
        axes = tuple(axes)
        if sorted(axes) != list(range(len(self._shape))):
            raise ValueError(f"axes {axes} is not a permutation of the {len(self._shape)} dimensions "
                             f"of a buffer of shape {self._shape}")
        return make_view(self.memory, tuple(self._shape[a] for a in axes),
                         tuple(self._strides[a] for a in axes), self._dtype, self.itemsize, self._offset)

    def as_strided(self, shape, strides, *, dtype=None, offset=0) -> DeviceBuffer:
        """A view of the same memory with any layout: ``shape``, ``strides`` in bytes (multiples of
        the view's item size, negative allowed), element 0 at ``offset`` bytes from this buffer's,
        items of ``dtype`` (default: this buffer's; "uint8", "uint16", "float32" or "float64"). The
        planes of a CUDA RawFrame are such views of its storage. ValueError for a view that reaches
        outside the allocation or is misaligned for its dtype."""
        dtype = self._dtype if dtype is None else dtype
        if dtype not in DTYPES:
            raise ValueError(f"dtype {dtype!r} is not supported; use one of {', '.join(DTYPES)}")
        itemsize = DTYPES[dtype][1] // 8
        dims = tuple(operator.index(extent) for extent in shape)
        steps = tuple(operator.index(stride) for stride in strides)
        if len(dims) != len(steps) or len(dims) > MAX_NDIM or any(extent < 0 for extent in dims):
            raise ValueError(f"shape {dims} and strides {steps} do not describe an array")
        start = self._offset * self.itemsize + operator.index(offset)
        if start % itemsize or any(step % itemsize for step in steps):
            raise ValueError(f"offset {offset} and strides {steps} must be multiples of the {dtype} item size "
                             f"({itemsize} bytes)")
        if all(dims):
            low = start + sum(min(0, (extent - 1) * step) for extent, step in zip(dims, steps))
            high = start + sum(max(0, (extent - 1) * step) for extent, step in zip(dims, steps)) + itemsize
            if low < 0 or high > self.memory.nbytes:
                raise ValueError(f"a view of shape {dims} and strides {steps} at byte {start} reaches outside "
                                 f"the {self.memory.nbytes}-byte allocation")
        return make_view(self.memory, dims, tuple(step // itemsize for step in steps), dtype, itemsize,
                         start // itemsize)

    def reshape(self, shape) -> DeviceBuffer:
        """A view with another shape: any shape of the same size when the buffer is C-contiguous; else
        only the first dimension split or merged (a batch of frames viewed as clips of frames, as the
        samplers do), whatever the layout of the others. ValueError otherwise: copy through a library."""
        dims = tuple(operator.index(extent) for extent in shape)
        count = 1
        for extent in dims:
            if extent < 0:
                raise ValueError(f"cannot reshape to {dims}: negative extent")
            count *= extent
        if count != self.size:
            raise ValueError(f"cannot reshape a buffer of shape {self._shape} ({self.size} elements) to {dims}")
        if self.is_c_contiguous:
            return make_view(self.memory, dims, element_strides(dims), self._dtype, self.itemsize, self._offset)
        rest = self._shape[1:]
        lead = len(dims) - len(rest)
        if lead >= 1 and dims[lead:] == rest:
            strides = [0] * lead
            step = self._strides[0]
            for k in range(lead - 1, -1, -1):
                strides[k] = step
                step *= dims[k]
            return make_view(self.memory, dims, tuple(strides) + self._strides[1:], self._dtype, self.itemsize,
                             self._offset)
        raise ValueError(f"a non-contiguous buffer of shape {self._shape} can only be reshaped along its first "
                         f"dimension, not to {dims}: hand it to torch or cupy (DLPack) to copy it")

    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() of a 0-d DeviceBuffer")
        return self._shape[0]

    def __getitem__(self, index) -> DeviceBuffer:
        """``buffer[i]``: a view of element ``i`` of the first dimension (negative counts from the end),
        as a frame of a batch. Only integer indices: copy to a library array for anything else."""
        if isinstance(index, bool) or not isinstance(index, numbers.Integral):
            raise TypeError(f"DeviceBuffer indices must be integers, not {type(index).__name__}; hand the "
                            f"buffer to torch or cupy (DLPack) for slicing")
        if not self._shape:
            raise IndexError("a 0-d DeviceBuffer cannot be indexed")
        n = self._shape[0]
        i = int(index) + n if index < 0 else int(index)
        if not 0 <= i < n:
            raise IndexError(f"index {index} is out of range for a first dimension of {n}")
        return make_view(self.memory, self._shape[1:], self._strides[1:], self._dtype, self.itemsize,
                         self._offset + i * self._strides[0])

    # ---- properties -------------------------------------------------------------------------

    @property
    def shape(self) -> tuple:
        return self._shape

    @property
    def dtype(self) -> str:
        """"uint8", "uint16", "float32" or "float64"."""
        return self._dtype

    @property
    def strides(self) -> tuple:
        """Strides in bytes (as numpy and cupy give them)."""
        return tuple(stride * self.itemsize for stride in self._strides)

    @property
    def ndim(self) -> int:
        return len(self._shape)

    @property
    def size(self) -> int:
        """The number of elements."""
        count = 1
        for extent in self._shape:
            count *= extent
        return count

    @property
    def nbytes(self) -> int:
        """Bytes of the elements this buffer views."""
        return self.size * self.itemsize

    @property
    def ptr(self) -> int:
        """The device address of element 0 (0 for an empty buffer)."""
        return self.memory.ptr + self._offset * self.itemsize if self.memory.ptr else 0

    @property
    def device(self) -> int:
        """The CUDA device index."""
        return self.memory.context.index

    @property
    def stream(self) -> int:
        """The CUstream handle the memory was allocated (and will be freed) on."""
        return <uintptr_t>self.memory.stream

    @property
    def is_c_contiguous(self) -> bool:
        return self.size == 0 or all(stride == expected for stride, expected, extent
                                     in zip(self._strides, element_strides(self._shape), self._shape) if extent > 1)

    def __repr__(self) -> str:
        order = "" if self.is_c_contiguous else f", strides={self.strides}"
        return f"DeviceBuffer(shape={self._shape}, dtype={self._dtype}, device=cuda:{self.device}{order})"

    # ---- exchange protocols -----------------------------------------------------------------

    def __dlpack_device__(self) -> tuple:
        """(kDLCUDA, device index)."""
        return (kDLCUDA, self.memory.context.index)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule of this buffer (Python array API standard).

        ``stream``: the consumer's stream, ordered after the buffer's last recorded writes with
        cuStreamWaitEvent: None or 1 = legacy default stream, 2 = per-thread default stream, another
        int = a CUstream handle, -1 = no ordering; 0 is invalid (ValueError). ``max_version``: a
        (major, minor) of 1.0 or later gives a "dltensor_versioned" capsule (DLPack 1.0), else a
        legacy "dltensor" one. ``dl_device`` other than ``__dlpack_device__()`` and ``copy=True``
        raise BufferError: the buffer is exported in place only.
        """
        if copy:
            raise BufferError("DeviceBuffer exports its memory in place only (copy=True is not supported); "
                              "copy in the consumer's library instead")
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError(f"DeviceBuffer lives on {self.__dlpack_device__()} (kDLCUDA, device index) and "
                              f"cannot be exported to {tuple(dl_device)}")
        consumer = _consumer_stream(stream)
        versioned = max_version is not None and tuple(max_version)[0] >= 1
        cdef uintptr_t handle
        if consumer != -1:
            handle = consumer
            with nogil:
                self.wait_ready(as_stream(handle))
        return export_capsule(self, versioned)

    @property
    def __cuda_array_interface__(self) -> dict:
        """The CUDA Array Interface, version 3. It cannot know its consumer's stream, so reading it
        waits on the host for the buffer's last recorded writes and reports ``stream: None``."""
        typestr = DTYPES[self._dtype][2]
        with nogil:
            self.wait_ready_host()
        return {"version": 3, "shape": self._shape, "typestr": typestr, "descr": [("", typestr)],
                "data": (self.ptr, False),
                "strides": None if self.is_c_contiguous else self.strides, "stream": None}


def synchronize_context(CudaContext context not None) -> None:
    """Wait on the host for all work queued in ``context`` (cuCtxSynchronize): the defensive wait
    before writing into foreign memory whose producer stream is unknown."""
    cdef CudaDriver driver = context.driver
    cdef cu.CUresult ret
    driver.require("cuCtxSynchronize")
    context.enter()
    try:
        with nogil:
            ret = driver.cuCtxSynchronize()
        check_cu(driver, ret, "cuCtxSynchronize")
    finally:
        context.exit()


def synchronize_stream(CudaContext context not None, stream) -> None:
    """Wait on the host for the work queued on ``stream`` (a CUstream handle as an int)."""
    cdef uintptr_t handle = _stream_handle(stream, "stream")
    cdef CudaDriver driver = context.driver
    cdef cu.CUresult ret
    context.enter()
    try:
        with nogil:
            ret = driver.ptr.cuStreamSynchronize(as_stream(handle))
        check_cu(driver, ret, "cuStreamSynchronize")
    finally:
        context.exit()
