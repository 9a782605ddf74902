"""nvJPEG, opened at run time: nothing links libnvjpeg (nor libcudart, which it carries inside).

``load_nvjpeg()`` finds libnvjpeg once per process, the first time it is asked (thread-safe), and
looks up the functions of ``torchcodec/_cuda/nvjpeg.pxd`` with ``dlsym``. ``$TORCHCODEC_NVJPEG_LIBRARY``
names the library file to use, and nothing else is tried. Otherwise it looks, newest major version
first (13, 12, 11), skipping the majors that the driver is too old for, in:

1. the ``nvidia-nvjpeg`` wheels in every ``sys.path`` entry: ``nvidia/cu13/lib/libnvjpeg.so.13``
   (nvidia-nvjpeg, CUDA 13), ``nvidia/nvjpeg/lib/libnvjpeg.so.12`` (nvidia-nvjpeg-cu12) and
   ``.so.11`` (nvidia-nvjpeg-cu11);
2. the CUDA toolkit of ``$CUDA_HOME`` / ``$CUDA_PATH`` (``lib64``) and the environment's
   ``sys.prefix/lib`` (conda's libnvjpeg);
3. the dynamic linker's own search (``LD_LIBRARY_PATH``, ``/etc/ld.so.cache``: a system toolkit).

A failure raises :class:`CudaUnavailableError` naming every place looked in (or the function a
library lacks), and the same error is raised again on later calls (``reason()``, in
torchcodec._cuda._jpeg, is the gate that says it without raising).

``NvjpegDevice`` is a device's library handles, created once per device in its primary context
(``device(context)``): the decoding handle with nvJPEG's hardware backend where the GPU has JPEG
engines (A100, H100, H200...; ``hardware``), else the default backend; the encoding handle with
the default backend. nvJPEG handles are thread-safe; its states are not, and belong to the
decoders and encoders of torchcodec._cuda._nvjpeg_codec. The handles are destroyed before the
driver releases the contexts (``add_release_hook``).
"""
import os
import sys
import threading

from posix.dlfcn cimport RTLD_LOCAL, RTLD_NOW, dlclose, dlerror, dlopen, dlsym

from torchcodec._cuda cimport nvjpeg as nj
from torchcodec._cuda._driver cimport CudaContext

from torchcodec._cuda._driver import CudaUnavailableError, add_release_hook, load_driver

#: The nvJPEG functions torchcodec uses; a library lacking one of them is refused.
FUNCTIONS = ("nvjpegGetProperty", "nvjpegCreateEx", "nvjpegDestroy", "nvjpegJpegStateCreate",
             "nvjpegJpegStateDestroy", "nvjpegGetImageInfo", "nvjpegDecode", "nvjpegDecodeBatchedInitialize",
             "nvjpegDecodeBatched", "nvjpegJpegStreamCreate", "nvjpegJpegStreamDestroy",
             "nvjpegJpegStreamParseHeader", "nvjpegDecodeBatchedSupported", "nvjpegEncoderStateCreate",
             "nvjpegEncoderStateDestroy", "nvjpegEncoderParamsCreate", "nvjpegEncoderParamsDestroy",
             "nvjpegEncoderParamsSetQuality", "nvjpegEncoderParamsSetSamplingFactors", "nvjpegEncodeImage",
             "nvjpegEncodeRetrieveBitstream")
#: major version -> the folder of the nvidia-nvjpeg wheel of that CUDA major, under a sys.path entry.
WHEEL_FOLDERS = {13: "nvidia/cu13/lib", 12: "nvidia/nvjpeg/lib", 11: "nvidia/nvjpeg/lib"}
#: major version -> the pip package that installs it.
WHEELS = {13: "nvidia-nvjpeg", 12: "nvidia-nvjpeg-cu12", 11: "nvidia-nvjpeg-cu11"}
STATUS_NAMES = {
    nj.NVJPEG_STATUS_SUCCESS: "NVJPEG_STATUS_SUCCESS",
    nj.NVJPEG_STATUS_NOT_INITIALIZED: "NVJPEG_STATUS_NOT_INITIALIZED",
    nj.NVJPEG_STATUS_INVALID_PARAMETER: "NVJPEG_STATUS_INVALID_PARAMETER",
    nj.NVJPEG_STATUS_BAD_JPEG: "NVJPEG_STATUS_BAD_JPEG",
    nj.NVJPEG_STATUS_JPEG_NOT_SUPPORTED: "NVJPEG_STATUS_JPEG_NOT_SUPPORTED",
    nj.NVJPEG_STATUS_ALLOCATOR_FAILURE: "NVJPEG_STATUS_ALLOCATOR_FAILURE",
    nj.NVJPEG_STATUS_EXECUTION_FAILED: "NVJPEG_STATUS_EXECUTION_FAILED",
    nj.NVJPEG_STATUS_ARCH_MISMATCH: "NVJPEG_STATUS_ARCH_MISMATCH",
    nj.NVJPEG_STATUS_INTERNAL_ERROR: "NVJPEG_STATUS_INTERNAL_ERROR",
    nj.NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED: "NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED",
    nj.NVJPEG_STATUS_INCOMPLETE_BITSTREAM: "NVJPEG_STATUS_INCOMPLETE_BITSTREAM",
}


class NvjpegError(RuntimeError):
    """An nvJPEG call failed. ``status`` is the nvjpegStatus_t, ``name`` its name."""

    def __init__(self, message: str, status: int = 0, name: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.name = name


cdef object nvjpeg_error(nj.nvjpegStatus_t status, str where):
    """The NvjpegError for the failure ``status`` of the nvJPEG function ``where``."""
    name = STATUS_NAMES.get(status, "unknown nvjpegStatus_t")
    return NvjpegError(f"{where} failed: {name} ({status})", status, name)


cdef int check_nvjpeg(nj.nvjpegStatus_t status, const char *where) except -1 nogil:
    """Return 0 for NVJPEG_STATUS_SUCCESS, else raise NvjpegError naming ``where`` (takes the GIL to raise)."""
    if status != nj.NVJPEG_STATUS_SUCCESS:
        with gil:
            raise nvjpeg_error(status, where.decode())
    return 0


# ---- finding and opening the library ----------------------------------------------------------------

#: The environment variable that names the libnvjpeg file to use.
ENVIRONMENT_VARIABLE = "TORCHCODEC_NVJPEG_LIBRARY"


def candidates(driver_version=None) -> tuple:
    """(places, skipped): the libraries to try, in order, as (major, path or soname, description),
    and a sentence per major version skipped because the driver (its CUDA version as an int, 12040
    for 12.4; None: unknown) is older than it."""
    places, skipped = [], []
    chosen = os.environ.get(ENVIRONMENT_VARIABLE)
    if chosen:
        return [(0, os.path.abspath(chosen), f"${ENVIRONMENT_VARIABLE}")], skipped
    folders = [entry for entry in sys.path if entry and os.path.isdir(entry)]
    toolkits = [os.path.join(os.environ[name], "lib64") for name in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(name)]
    toolkits.append(os.path.join(sys.prefix, "lib"))
    for major in (13, 12, 11):
        soname = f"libnvjpeg.so.{major}"
        if driver_version is not None and driver_version < major * 1000:
            skipped.append(f"{soname} needs a CUDA {major} driver (this one supports CUDA "
                           f"{driver_version // 1000}.{driver_version % 1000 // 10})")
            continue
        for folder in folders:
            places.append((major, os.path.join(folder, WHEEL_FOLDERS[major], soname), f"the {WHEELS[major]} wheel"))
        for folder in toolkits:
            places.append((major, os.path.join(folder, soname), "a CUDA toolkit"))
        places.append((major, soname, "the library path"))
    return places, skipped


cdef class NvjpegLibrary:
    """libnvjpeg's functions (use :func:`load_nvjpeg`)."""

    def __cinit__(self):
        self.lib = NULL

    def __dealloc__(self):
        if self.lib != NULL:
            dlclose(self.lib)

    cdef int bind(self) except -1:
        """Fill the function table from the opened library (its fields are FUNCTIONS' pointers, in
        that order); CudaUnavailableError naming a missing function."""
        cdef void **table = <void **>&self.f
        cdef void *symbol
        cdef Py_ssize_t k
        assert sizeof(nj.NvjpegFunctions) == len(FUNCTIONS) * sizeof(void *)
        for k, name in enumerate(FUNCTIONS):
            symbol = dlsym(self.lib, name.encode())
            if symbol == NULL:
                raise CudaUnavailableError(f"{self.path} was opened but lacks {name}, which torchcodec needs: this "
                                           f"nvJPEG is too old (CUDA 11 or newer is needed)")
            table[k] = symbol
        cdef int major = 0, minor = 0, patch = 0
        self.f.nvjpegGetProperty(nj.MAJOR_VERSION, &major)
        self.f.nvjpegGetProperty(nj.MINOR_VERSION, &minor)
        self.f.nvjpegGetProperty(nj.PATCH_LEVEL, &patch)
        self.version = (major, minor, patch)
        return 0


cdef NvjpegLibrary open_library():
    """The first library of :func:`candidates` that opens and has every function, or
    CudaUnavailableError saying where it looked and what it found."""
    cdef NvjpegLibrary library
    cdef void *lib
    cdef const char *error
    try:
        driver_version = load_driver().driver_version
    except CudaUnavailableError:
        driver_version = None
    places, skipped = candidates(driver_version)
    refused, looked = [], []
    for major, place, description in places:
        if os.sep in place:
            folder = os.path.dirname(place)
            if folder not in looked:
                looked.append(folder)
            if not os.path.exists(place):
                continue
        lib = dlopen(place.encode(), RTLD_NOW | RTLD_LOCAL)
        if lib == NULL:
            error = dlerror()
            if os.sep in place:          # a file that exists but does not load: say why
                refused.append(f"{place}: {error.decode('utf-8', 'replace') if error != NULL else 'dlopen failed'}")
            continue
        library = NvjpegLibrary.__new__(NvjpegLibrary)
        library.lib = lib
        library.path = place
        library.bind()
        return library
    sonames = ", ".join(f"libnvjpeg.so.{major}" for major in (13, 12, 11))
    message = (f"nvJPEG's library ({sonames}) could not be found: looked in {', '.join(looked) or 'no folder'}, "
               f"and on the library path (LD_LIBRARY_PATH, /etc/ld.so.cache)")
    if refused:
        message += "; found but could not load " + "; ".join(refused)
    if skipped:
        message += "; skipped " + "; ".join(skipped)
    message += (". Install it with pip install nvidia-nvjpeg-cu12 (CUDA 12 drivers) or nvidia-nvjpeg (CUDA 13), "
                "or a CUDA toolkit")
    raise CudaUnavailableError(message)


_lock = threading.Lock()
_library = None      # the NvjpegLibrary, once loaded
_failure = None      # or the CudaUnavailableError that loading it raised
_devices = {}        # CudaContext -> NvjpegDevice
_devices_lock = threading.Lock()   # held while a device's handles are created: one set per device


def load_nvjpeg() -> NvjpegLibrary:
    """The process's NvjpegLibrary, loaded on first call; CudaUnavailableError (the same each time)
    when it cannot be (including when the CUDA driver itself cannot be used)."""
    global _library, _failure
    with _lock:
        if _library is None and _failure is None:
            try:
                load_driver()
                _library = open_library()
            except CudaUnavailableError as error:
                _failure = error
        if _failure is not None:
            raise CudaUnavailableError(str(_failure))
        return _library


def device(CudaContext context not None) -> NvjpegDevice:
    """The nvJPEG handles of ``context``'s device, created on first use."""
    library = load_nvjpeg()
    with _devices_lock:
        found = _devices.get(context)
        if found is None:
            found = _devices[context] = NvjpegDevice(context, library)
        return found


cdef class NvjpegDevice:
    """``NvjpegDevice(context, library)``: nvJPEG's library handles on one device (use :func:`device`)."""

    def __cinit__(self, CudaContext context not None, NvjpegLibrary library not None):
        cdef nj.nvjpegStatus_t status
        self.decode_handle = self.encode_handle = NULL
        self.context, self.driver, self.library = context, context.driver, library
        self.lock = threading.Lock()
        context.enter()
        try:
            with nogil:
                status = library.f.nvjpegCreateEx(nj.NVJPEG_BACKEND_HARDWARE, NULL, NULL, nj.NVJPEG_FLAGS_DEFAULT,
                                                  &self.decode_handle)
            self.hardware = status == nj.NVJPEG_STATUS_SUCCESS
            if status in (nj.NVJPEG_STATUS_ARCH_MISMATCH, nj.NVJPEG_STATUS_JPEG_NOT_SUPPORTED,
                          nj.NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED):
                # No JPEG engine on this GPU (before A100): the default backend decodes everything.
                with nogil:
                    status = library.f.nvjpegCreateEx(nj.NVJPEG_BACKEND_DEFAULT, NULL, NULL, nj.NVJPEG_FLAGS_DEFAULT,
                                                      &self.decode_handle)
            check_nvjpeg(status, b"nvjpegCreateEx")
        finally:
            context.exit()

    cdef int open_encoding(self) except -1:
        """Create the encoding handle (default backend) on first use."""
        cdef nj.nvjpegStatus_t status
        with self.lock:
            if self.encode_handle != NULL:
                return 0
            self.context.enter()
            try:
                with nogil:
                    status = self.library.f.nvjpegCreateEx(nj.NVJPEG_BACKEND_DEFAULT, NULL, NULL,
                                                           nj.NVJPEG_FLAGS_DEFAULT, &self.encode_handle)
                check_nvjpeg(status, b"nvjpegCreateEx")
            finally:
                self.context.exit()
        return 0

    @property
    def library_path(self) -> str:
        return self.library.path

    def close(self) -> None:
        """Destroy the handles (at exit, before the context is released)."""
        if self.context.ptr == NULL or (self.decode_handle == NULL and self.encode_handle == NULL):
            return
        self.context.enter()
        try:
            if self.decode_handle != NULL:
                self.library.f.nvjpegDestroy(self.decode_handle)
                self.decode_handle = NULL
            if self.encode_handle != NULL:
                self.library.f.nvjpegDestroy(self.encode_handle)
                self.encode_handle = NULL
        finally:
            self.context.exit()


_release_hooks = []  # torchcodec._cuda._nvjpeg_codec's pools register theirs here, run before the handles go


def add_close_hook(hook) -> None:
    """Call ``hook()`` before the devices' handles are destroyed at exit (states first, then handles)."""
    if hook not in _release_hooks:
        _release_hooks.append(hook)


def _release_before_context() -> None:
    for hook in list(_release_hooks):
        hook()
    with _devices_lock:
        devices = list(_devices.values())
        _devices.clear()
    for found in devices:
        found.close()


add_release_hook(_release_before_context)
