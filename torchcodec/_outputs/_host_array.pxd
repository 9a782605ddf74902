# HostArray: a strided view of host memory that another object owns (a decoded frame's planes),
# exported through the buffer protocol and __array_interface__, so that numpy, torch and jax wrap
# it without a copy; the host counterpart of the CUDA wing's DeviceBuffer.
cdef enum:
    HOST_ARRAY_MAX_NDIM = 4


cdef class HostArray:
    cdef object base                    # owns the memory, kept alive
    cdef char *data                     # element 0
    cdef int ndim
    cdef Py_ssize_t dims[HOST_ARRAY_MAX_NDIM]
    cdef Py_ssize_t steps[HOST_ARRAY_MAX_NDIM]      # bytes between elements of each dimension
    cdef Py_ssize_t itemsize
    cdef bytes format                   # the buffer protocol's format: b"B", b"H", b"h", b"i", b"q", b"f", b"d"
    cdef readonly str dtype             # "uint8", "uint16", ...
    cdef readonly bint readonly


cdef HostArray host_array(object owner, char *data, int ndim, const Py_ssize_t *shape,
                          const Py_ssize_t *strides, str dtype, bint readonly)
