"""The CUDA driver, opened at run time: nothing links libcuda, libcudart or libnvcuvid.

``load_driver()`` opens libcuda.so.1 with ffnvcodec's loader (``cuda_load_functions``) once per
process, the first time it is asked (thread-safe), looks up with ``dlsym`` on the same handle the
driver functions that the loader's table lacks (``cuStreamWaitEvent``, ``cuMemAllocAsync``,
``cuMemFreeAsync``, ``cuDriverGetVersion``, ``cuCtxSynchronize``: optional, ``None``/absent on old drivers), and calls
``cuInit(0)``. A failure raises :class:`CudaUnavailableError` saying why (no libcuda.so.1, a
function missing from it, no device), and the same error is raised again on later calls.

``CudaDriver.context(index)`` retains the device's primary context (``cuDevicePrimaryCtxRetain``;
never a private context) once per process; every entry that needs it pushes it and pops it again
(``CudaContext.enter``/``exit``, balanced when the call in between raises). Contexts are released
by ``CudaDriver.close()``, which runs at interpreter exit; before it releases them it calls the hooks
registered with :func:`add_release_hook` (NVDEC destroys its decoders and unmaps its surfaces
there), whatever the order in which modules registered their own exit handlers.

Driver errors raise :class:`CudaError` with the C function's name and ``cuGetErrorName`` /
``cuGetErrorString``'s text.
"""
import atexit
import os
import sys
import threading
import types

from posix.dlfcn cimport dlsym

from torchcodec._cuda cimport cuda as cu
from torchcodec._cuda cimport ffnvcodec as ffnv
from torchcodec._cuda cimport nvcuvid as cuvid

#: The driver functions looked up with dlsym because ffnvcodec's table lacks them.
EXTRAS = ("cuStreamWaitEvent", "cuMemAllocAsync", "cuMemFreeAsync", "cuDriverGetVersion", "cuCtxSynchronize")


cdef extern from "torchcodec/kernels.h" nogil:
    enum:
        TC_KERNEL_BLOCK_X
        TC_KERNEL_BLOCK_Y

cdef int CUDA_ERROR_NO_DEVICE = 100


class CudaError(RuntimeError):
    """A CUDA driver call failed. ``code`` is the CUresult, ``name`` its name (``CUDA_ERROR_...``)."""

    def __init__(self, message: str, code: int = 0, name: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.name = name


class CudaUnavailableError(RuntimeError):
    """CUDA cannot be used in this process; the message says why."""


cdef object cuda_error(CudaDriver driver, cu.CUresult ret, const char *where):
    """The CudaError for the failure ``ret`` of ``where``, with the driver's name and text for it."""
    cdef const char *name = NULL
    cdef const char *text = NULL
    if driver is not None and driver.ptr != NULL:
        if driver.ptr.cuGetErrorName(ret, &name) != cu.CUDA_SUCCESS:
            name = NULL
        if driver.ptr.cuGetErrorString(ret, &text) != cu.CUDA_SUCCESS:
            text = NULL
    name_str = name.decode("utf-8", "replace") if name != NULL else f"CUresult {ret}"
    text_str = text.decode("utf-8", "replace") if text != NULL else "unknown CUDA error"
    return CudaError(f"{where.decode()} failed: {name_str}: {text_str} (CUDA error {ret})", ret, name_str)


cdef object stashed_cuda_error(int ret, const char *where):
    """The error builder of a CUresult stashed by a callback (torchcodec._core._error.stash_code)."""
    return cuda_error(_driver, <cu.CUresult>ret, where)


cdef int check_cu(CudaDriver driver, cu.CUresult ret, const char *where) except -1:
    """Return 0 when ``ret`` is CUDA_SUCCESS, else raise CudaError naming ``where``."""
    if ret == cu.CUDA_SUCCESS:
        return 0
    raise cuda_error(driver, ret, where)


cdef int check_cu_nogil(CudaDriver driver, cu.CUresult ret, const char *where) except -1 nogil:
    """check_cu for code without the GIL: it is taken only to raise."""
    if ret != cu.CUDA_SUCCESS:
        with gil:
            check_cu(driver, ret, where)
    return 0


cdef int stream_wait_event(CudaDriver driver, cu.CUstream stream, cu.CUevent event) except -1 nogil:
    """Make ``stream`` wait for ``event`` on the device (cuStreamWaitEvent; the host waits instead,
    cuEventSynchronize, where the driver lacks it). The event's context must be current."""
    if driver.cuStreamWaitEvent != NULL:
        return check_cu_nogil(driver, driver.cuStreamWaitEvent(stream, event, 0), "cuStreamWaitEvent")
    return check_cu_nogil(driver, driver.ptr.cuEventSynchronize(event), "cuEventSynchronize")


cdef int launch_kernel(CudaDriver driver, cu.CUfunction function, unsigned grid_x, unsigned grid_y,
                       cu.CUstream stream, void *params) except -1 nogil:
    """Launch ``function`` (a kernel of kernels/*.cu) on ``stream`` with its one by-value parameter
    struct ``params``, in blocks of TC_KERNEL_BLOCK_X x TC_KERNEL_BLOCK_Y threads; checked."""
    cdef void *args[1]
    args[0] = params
    return check_cu_nogil(driver, driver.ptr.cuLaunchKernel(function, grid_x, grid_y, 1, TC_KERNEL_BLOCK_X,
                                                            TC_KERNEL_BLOCK_Y, 1, 0, stream, args, NULL),
                          "cuLaunchKernel")


cdef str loader_message(ffnv.tc_loader_log *log):
    return log.text.decode("utf-8", "replace").strip()


cdef class CudaDriver:
    """libcuda.so.1's functions, loaded once per process (use :func:`load_driver`)."""

    def __cinit__(self):
        self.ptr = NULL
        self.contexts = {}
        self.lock = threading.Lock()

    cdef int open(self) except -1:
        cdef ffnv.tc_loader_log log
        cdef int count = 0
        cdef cu.CUresult ret
        log.text[0] = 0
        if ffnv.cuda_load_functions(&self.ptr, &log) < 0:
            self.ptr = NULL
            message = loader_message(&log)
            if message.startswith("Cannot load libcuda"):
                raise CudaUnavailableError(
                    "the NVIDIA driver's libcuda.so.1 could not be opened (no NVIDIA driver installed, or not "
                    "on the library path)")
            raise CudaUnavailableError(
                f"libcuda.so.1 was opened but lacks a function torchcodec needs ({message.replace('Cannot load ', '')}); "
                f"the NVIDIA driver is too old or not a real driver")
        self.cuStreamWaitEvent = <cu.tcuStreamWaitEvent>dlsym(self.ptr.lib, "cuStreamWaitEvent")
        self.cuMemAllocAsync = <cu.tcuMemAllocAsync>dlsym(self.ptr.lib, "cuMemAllocAsync")
        self.cuMemFreeAsync = <cu.tcuMemFreeAsync>dlsym(self.ptr.lib, "cuMemFreeAsync")
        self.cuDriverGetVersion = <cu.tcuDriverGetVersion>dlsym(self.ptr.lib, "cuDriverGetVersion")
        self.cuCtxSynchronize = <cu.tcuCtxSynchronize>dlsym(self.ptr.lib, "cuCtxSynchronize")
        with nogil:
            ret = self.ptr.cuInit(0)
        if ret == CUDA_ERROR_NO_DEVICE:
            raise CudaUnavailableError("the NVIDIA driver is installed but finds no CUDA device (cuInit: CUDA_ERROR_NO_DEVICE)")
        try:
            check_cu(self, ret, "cuInit")
            check_cu(self, self.ptr.cuDeviceGetCount(&count), "cuDeviceGetCount")
        except CudaError as error:
            raise CudaUnavailableError(f"the NVIDIA driver could not be initialised: {error}") from None
        if count <= 0:
            raise CudaUnavailableError("the NVIDIA driver is installed but finds no CUDA device")
        self.device_count = count
        return 0

    def __dealloc__(self):
        # Contexts hold a reference to their driver, so none is left here; the library is closed last.
        ffnv.cuda_free_functions(&self.ptr)

    @property
    def extras(self) -> dict:
        """Which of :data:`EXTRAS` this driver exports: ``{name: bool}``."""
        return {"cuStreamWaitEvent": self.cuStreamWaitEvent != NULL,
                "cuMemAllocAsync": self.cuMemAllocAsync != NULL,
                "cuMemFreeAsync": self.cuMemFreeAsync != NULL,
                "cuDriverGetVersion": self.cuDriverGetVersion != NULL,
                "cuCtxSynchronize": self.cuCtxSynchronize != NULL}

    def require(self, name: str) -> None:
        """Raise CudaError when the driver lacks the extra function ``name`` (one of :data:`EXTRAS`)."""
        if name not in EXTRAS:
            raise ValueError(f"{name!r} is not one of the optional driver functions {EXTRAS}")
        if not self.extras[name]:
            raise CudaError(f"this NVIDIA driver's libcuda.so.1 has no {name}; update the driver")

    @property
    def driver_version(self):
        """The driver's CUDA version as an int (12040 for 12.4), or None when it does not say."""
        cdef int version = 0
        if self.cuDriverGetVersion == NULL:
            return None
        check_cu(self, self.cuDriverGetVersion(&version), "cuDriverGetVersion")
        return version

    def context(self, index: int = 0) -> CudaContext:
        """The primary context of device ``index``, retained on first use and kept until close()."""
        cdef CudaContext context
        index = int(index)
        if not 0 <= index < self.device_count:
            raise ValueError(f"device cuda:{index} does not exist: this machine has {self.device_count} "
                             f"CUDA device(s), cuda:0 to cuda:{self.device_count - 1}")
        with self.lock:
            if index in self.contexts:
                return self.contexts[index]
            context = CudaContext.__new__(CudaContext)
            context.retain(self, index)
            self.contexts[index] = context
            return context

    def close(self) -> None:
        """Release every primary context retained through this driver, after running the release
        hooks (:func:`add_release_hook`) while the contexts are still alive. A hook that raises is
        reported as unraisable and the others still run."""
        for hook in list(_release_hooks):
            try:
                hook()
            except BaseException as error:     # at exit: report, never stop the release
                sys.unraisablehook(_unraisable(error, hook))
        with self.lock:
            contexts, self.contexts = list(self.contexts.values()), {}
        for context in contexts:
            context.close()


cdef class CudaContext:
    """A device's primary context, retained once; ``enter``/``exit`` push and pop it around a call."""

    def __cinit__(self):
        self.ptr = NULL

    cdef int retain(self, CudaDriver driver, int index) except -1:
        cdef cu.CUdevice device = 0
        cdef cu.CUcontext context = NULL
        check_cu(driver, driver.ptr.cuDeviceGet(&device, index), "cuDeviceGet")
        check_cu(driver, driver.ptr.cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain")
        self.driver = driver
        self.device = device
        self.index = index
        self.ptr = context
        return 0

    cdef int enter(self) except -1 nogil:
        if self.ptr == NULL:
            with gil:
                raise CudaError(f"the context of cuda:{self.index} was released (close() was called)")
        return check_cu_nogil(self.driver, self.driver.ptr.cuCtxPushCurrent(self.ptr), "cuCtxPushCurrent")

    cdef int exit(self) except -1 nogil:
        cdef cu.CUcontext popped = NULL
        check_cu_nogil(self.driver, self.driver.ptr.cuCtxPopCurrent(&popped), "cuCtxPopCurrent")
        if popped != self.ptr:
            with gil:
                raise CudaError(f"cuCtxPopCurrent returned another context than the one pushed for "
                                f"cuda:{self.index}; a caller left a context pushed")
        return 0

    def close(self) -> None:
        """Release the primary context (cuDevicePrimaryCtxRelease). Modules loaded in it become invalid."""
        if self.ptr != NULL:
            self.ptr = NULL
            check_cu(self.driver, self.driver.ptr.cuDevicePrimaryCtxRelease(self.device), "cuDevicePrimaryCtxRelease")

    def __dealloc__(self):
        if self.ptr != NULL and self.driver is not None and self.driver.ptr != NULL:
            self.driver.ptr.cuDevicePrimaryCtxRelease(self.device)

    @property
    def handle(self) -> int:
        """The CUcontext as an int (0 once released), for code that takes a context handle (FFmpeg)."""
        return <size_t>self.ptr

    @property
    def name(self) -> str:
        """The device's name, as the driver reports it."""
        cdef char buf[256]
        check_cu(self.driver, self.driver.ptr.cuDeviceGetName(buf, sizeof(buf), self.device), "cuDeviceGetName")
        return buf.decode("utf-8", "replace")

    def load_module(self, name: str) -> CudaModule:
        """Load the embedded fatbin ``name`` (see torchcodec._cuda._kernels.KERNELS) with cuModuleLoadData."""
        try:
            from torchcodec._cuda import _kernels
        except ImportError:
            raise CudaUnavailableError("this build of torchcodec has no CUDA kernels (built without nvcc)") from None
        cdef bytes image = _kernels.fatbin(name)
        cdef const char *data = image
        cdef cu.CUmodule module = NULL
        cdef cu.CUresult ret
        self.enter()
        try:
            with nogil:
                ret = self.driver.ptr.cuModuleLoadData(&module, data)
            check_cu(self.driver, ret, "cuModuleLoadData")
        finally:
            self.exit()
        result = CudaModule.__new__(CudaModule)
        (<CudaModule>result).context = self
        (<CudaModule>result).ptr = module
        (<CudaModule>result).name = name
        (<CudaModule>result).image = image
        return result


cdef class CudaModule:
    """A kernel module loaded from one embedded fatbin in a device's primary context."""

    def __cinit__(self):
        self.ptr = NULL

    cdef cu.CUfunction function_ptr(self, const char *name) except NULL:
        cdef cu.CUfunction function = NULL
        cdef cu.CUresult ret
        self.context.enter()
        try:
            ret = self.context.driver.ptr.cuModuleGetFunction(&function, self.ptr, name)
            check_cu(self.context.driver, ret, "cuModuleGetFunction")
        finally:
            self.context.exit()
        return function

    def has_function(self, name: str) -> bool:
        """Whether the module holds the kernel ``name`` (raises CudaError for other driver failures)."""
        try:
            self.function_ptr(name.encode())
        except CudaError as error:
            if error.name == "CUDA_ERROR_NOT_FOUND":
                return False
            raise
        return True

    def function(self, name: str) -> int:
        """The kernel ``name``'s CUfunction handle as an int; CudaError when the module lacks it."""
        return <size_t>self.function_ptr(name.encode())

    def __dealloc__(self):
        if (self.ptr != NULL and self.context is not None and self.context.ptr != NULL
                and self.context.driver.ptr.cuCtxPushCurrent(self.context.ptr) == cu.CUDA_SUCCESS):
            self.context.driver.ptr.cuModuleUnload(self.ptr)
            self.context.driver.ptr.cuCtxPopCurrent(NULL)


cdef class CuvidLibrary:
    """libnvcuvid.so.1's functions (NVDEC), loaded with ffnvcodec's cuvid_load_functions."""

    def __cinit__(self):
        self.ptr = NULL

    def __dealloc__(self):
        ffnv.cuvid_free_functions(&self.ptr)


_release_hooks = []  # called by CudaDriver.close() before the contexts are released


def add_release_hook(hook) -> None:
    """Call ``hook()`` when the driver releases its primary contexts (at interpreter exit), before
    the release: objects that hold raw driver handles (NVDEC decoders, mapped surfaces) free them
    there, while the context still exists. Each hook is registered once."""
    if hook not in _release_hooks:
        _release_hooks.append(hook)


def _unraisable(error, hook):
    return types.SimpleNamespace(exc_type=type(error), exc_value=error, exc_traceback=error.__traceback__,
                                 err_msg=f"Exception ignored in a CUDA release hook ({hook!r})", object=hook)


_lock = threading.Lock()
_pid = os.getpid()   # the process that may have initialised the driver
_driver = None       # the CudaDriver, once loaded
_failure = None      # or the CudaUnavailableError that loading it raised
_cuvid = None
_cuvid_failure = None


cpdef CudaDriver load_driver():
    """The process's CudaDriver, loaded on first call; CudaUnavailableError (the same each time) if it cannot be."""
    global _driver, _failure
    with _lock:
        if os.getpid() != _pid and _driver is not None:
            # CUDA initialised before fork() cannot be used in the child (the driver says
            # CUDA_ERROR_NOT_INITIALIZED at best); say what to do instead.
            raise CudaUnavailableError(
                "CUDA was initialised in the parent of this forked process, and the NVIDIA driver cannot be "
                "used after fork(): start worker processes with the 'spawn' or 'forkserver' method "
                "(e.g. DataLoader(..., multiprocessing_context='spawn'))")
        if _driver is None and _failure is None:
            driver = CudaDriver()
            try:
                driver.open()
            except CudaUnavailableError as error:
                _failure = error
            else:
                _driver = driver
                atexit.register(driver.close)
        if _failure is not None:
            raise CudaUnavailableError(str(_failure))
        return _driver


def load_nvcuvid() -> CuvidLibrary:
    """libnvcuvid.so.1 (NVDEC), loaded on first call; CudaUnavailableError saying why when it cannot be."""
    global _cuvid, _cuvid_failure
    cdef ffnv.tc_loader_log log
    cdef CuvidLibrary library
    with _lock:
        if _cuvid is None and _cuvid_failure is None:
            library = CuvidLibrary()
            log.text[0] = 0
            if ffnv.cuvid_load_functions(&library.ptr, &log) < 0:
                library.ptr = NULL
                message = loader_message(&log)
                if message.startswith("Cannot load libnvcuvid"):
                    _cuvid_failure = CudaUnavailableError(
                        "NVDEC's libnvcuvid.so.1 could not be opened (it comes with the NVIDIA driver; some "
                        "container images leave it out: NVIDIA_DRIVER_CAPABILITIES must include 'video')")
                else:
                    _cuvid_failure = CudaUnavailableError(
                        f"libnvcuvid.so.1 was opened but lacks a function torchcodec needs "
                        f"({message.replace('Cannot load ', '')}); the NVIDIA driver is too old")
            else:
                _cuvid = library
        if _cuvid_failure is not None:
            raise CudaUnavailableError(str(_cuvid_failure))
        return _cuvid
