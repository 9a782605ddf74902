"""HostArray: host memory that another object owns, described as a strided array.

The building blocks hand out the decoder's own samples without a copy (``RawFrame.planes``): each
plane is a HostArray over the frame's buffer, holding a reference to the frame so that the memory
lives as long as any array made from it. The output adapters turn it into the bridge's array type
(numpy through the buffer protocol or ``__array_interface__``; torch over its byte ``extent``,
viewed with its strides; jax through numpy), so the result is a native array viewing FFmpeg's
memory.
"""
from cpython.buffer cimport PyBUF_FORMAT, PyBUF_ND, PyBUF_STRIDES, PyBUF_WRITABLE

DTYPES = {"uint8": (b"B", 1, "|u1"), "uint16": (b"H", 2, "<u2"), "int16": (b"h", 2, "<i2"), "int32": (b"i", 4, "<i4"),
          "int64": (b"q", 8, "<i8"), "float32": (b"f", 4, "<f4"), "float64": (b"d", 8, "<f8")}


cdef HostArray host_array(object owner, char *data, int ndim, const Py_ssize_t *shape,
                          const Py_ssize_t *strides, str dtype, bint readonly):
    """A HostArray of ``ndim`` dimensions (shape, byte strides) at ``data``, kept alive by ``owner``."""
    if not 0 < ndim <= HOST_ARRAY_MAX_NDIM:
        raise ValueError(f"a HostArray has 1 to {HOST_ARRAY_MAX_NDIM} dimensions, not {ndim}")
    cdef HostArray array = HostArray.__new__(HostArray)
    cdef int i
    array.base = owner
    array.data = data
    array.ndim = ndim
    array.format, array.itemsize, _ = DTYPES[dtype]
    array.dtype = dtype
    array.readonly = readonly
    for i in range(ndim):
        array.dims[i] = shape[i]
        array.steps[i] = strides[i]
    return array


cdef class HostArray:
    """A strided view of host memory owned by another object (see the module's documentation)."""

    def __init__(self, *args, **kwargs):
        raise TypeError("HostArray objects are made by torchcodec (e.g. RawFrame.planes), not directly")

    @property
    def shape(self):
        return tuple(self.dims[i] for i in range(self.ndim))

    @property
    def strides(self):
        """Bytes between consecutive elements along each dimension."""
        return tuple(self.steps[i] for i in range(self.ndim))

    @property
    def address(self):
        return <size_t>self.data

    @property
    def owner(self):
        """The object that owns the memory."""
        return self.base

    @property
    def extent(self):
        """(low, high): the byte addresses that the elements lie within (strides may be negative)."""
        cdef Py_ssize_t low = 0, high = 0, i
        for i in range(self.ndim):
            if self.dims[i] == 0:
                return <size_t>self.data, <size_t>self.data
            if self.steps[i] < 0:
                low += (self.dims[i] - 1) * self.steps[i]
            else:
                high += (self.dims[i] - 1) * self.steps[i]
        return <size_t>(self.data + low), <size_t>(self.data + high + self.itemsize)

    def bytes_view(self):
        """A 1-D uint8 HostArray over ``extent``, kept alive by the same owner (for libraries that
        wrap flat memory, then view it with this array's strides)."""
        low, high = self.extent
        cdef Py_ssize_t size = high - low
        cdef Py_ssize_t step = 1
        return host_array(self.base, <char *><size_t>low, 1, &size, &step, "uint8", self.readonly)

    def __len__(self):
        return self.dims[0]

    def __repr__(self):
        return f"HostArray(shape={self.shape}, strides={self.strides}, dtype={self.dtype})"

    @property
    def __array_interface__(self):
        return {"version": 3, "shape": self.shape, "typestr": DTYPES[self.dtype][2],
                "data": (<size_t>self.data, bool(self.readonly)), "strides": self.strides}

    def __getbuffer__(self, Py_buffer *view, int flags):
        cdef Py_ssize_t i, expected
        if (flags & PyBUF_WRITABLE) and self.readonly:
            raise BufferError("this HostArray is read-only")
        if (flags & PyBUF_STRIDES) != PyBUF_STRIDES:
            expected = self.itemsize               # without strides, the consumer assumes C order
            for i in range(self.ndim - 1, -1, -1):
                if self.dims[i] > 1 and self.steps[i] != expected:
                    raise BufferError("this HostArray is strided: ask for a strided buffer (PyBUF_STRIDES)")
                expected *= self.dims[i]
        view.buf = self.data
        view.obj = self
        view.len = self.itemsize
        for i in range(self.ndim):
            view.len *= self.dims[i]
        view.readonly = self.readonly
        view.itemsize = self.itemsize
        view.format = <char *>self.format if (flags & PyBUF_FORMAT) else NULL
        view.ndim = self.ndim
        view.shape = self.dims if (flags & PyBUF_ND) == PyBUF_ND else NULL
        view.strides = self.steps if (flags & PyBUF_STRIDES) == PyBUF_STRIDES else NULL
        view.suboffsets = NULL
        view.internal = NULL

    def __releasebuffer__(self, Py_buffer *view):
        pass
