# Device memory that torchcodec allocates itself (when neither torch nor cupy gives the output), and
# the DLPack ABI it exports through: DLPack 1.x structs as the spec lays them out (dlpack.h is not
# needed: the layout is the ABI), and DeviceBuffer, which exports DLPack and __cuda_array_interface__.
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t

from torchcodec._cuda cimport cuda as cu
from torchcodec._cuda._driver cimport CudaContext


# ---- DLPack 1.x (https://dmlc.github.io/dlpack/latest/c_api.html) -----------------------------
cdef enum:
    kDLCUDA = 2
    kDLUInt = 1
    kDLFloat = 2
    DLPACK_MAJOR_VERSION = 1
    DLPACK_MINOR_VERSION = 0

cdef struct DLDevice:
    int32_t device_type             # DLDeviceType, a C enum (int)
    int32_t device_id

cdef struct DLDataType:
    uint8_t code                    # DLDataTypeCode
    uint8_t bits
    uint16_t lanes

cdef struct DLTensor:
    void *data
    DLDevice device
    int32_t ndim
    DLDataType dtype
    int64_t *shape
    int64_t *strides                # in elements, not bytes
    uint64_t byte_offset

cdef struct DLManagedTensor:        # the legacy ("dltensor") capsule's content
    DLTensor dl_tensor
    void *manager_ctx
    void (*deleter)(DLManagedTensor *) noexcept nogil

cdef struct DLPackVersion:
    uint32_t major
    uint32_t minor

cdef struct DLManagedTensorVersioned:   # the "dltensor_versioned" capsule's content
    DLPackVersion version
    void *manager_ctx
    void (*deleter)(DLManagedTensorVersioned *) noexcept nogil
    uint64_t flags                  # DLPACK_FLAG_BITMASK_READ_ONLY (1), _IS_COPIED (2)
    DLTensor dl_tensor


# ---- torchcodec's own device memory --------------------------------------------------------------
cdef class DeviceMemory:
    # One allocation in a device's primary context, freed when the last DeviceBuffer viewing it and
    # the last exported capsule are gone: cuMemFreeAsync on ``stream`` (after ``ready``) when it came
    # from cuMemAllocAsync, else cuMemFree. ``ready`` is recorded where the producer finished writing.
    cdef CudaContext context
    cdef cu.CUdeviceptr ptr               # 0 for an empty (zero-byte) buffer
    cdef size_t nbytes
    cdef cu.CUstream stream               # allocated (and freed) in this stream's order
    cdef cu.CUevent ready
    cdef bint stream_ordered              # from cuMemAllocAsync
    cdef int allocate(self, CudaContext context, size_t nbytes, cu.CUstream stream) except -1


cdef class DeviceBuffer:
    # A strided view of a DeviceMemory: shape and strides (in elements) of one dtype.
    cdef DeviceMemory memory
    cdef tuple _shape
    cdef tuple _strides
    cdef Py_ssize_t _offset             # elements from the allocation's start to element 0
    cdef str _dtype
    cdef readonly Py_ssize_t itemsize
    # record_ready: the producer finished writing on ``stream``: record the ready event there.
    # wait_ready: make ``stream`` wait for the ready event (no host wait; the host waits when the
    #   driver lacks cuStreamWaitEvent). wait_ready_host: the host waits for it (cuEventSynchronize).
    cdef int record_ready(self, cu.CUstream stream) except -1 nogil
    cdef int wait_ready(self, cu.CUstream stream) except -1 nogil
    cdef int wait_ready_host(self) except -1 nogil
