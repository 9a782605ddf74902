# ffnvcodec's dlopen loader (ffnvcodec/dynlink_loader.h, through torchcodec/_cuda/ffnvcodec_loader.h,
# which keeps the loader's messages). C names kept; only what is used.
#
# Build-time only: cimported by torchcodec's own .pyx files (never by a .pxd) and not installed, so
# that ffnvcodec's headers stay out of every downstream extension (ARCHITECTURE decision 7). A .pyx
# that reads the driver's tables (CudaFunctions, CuvidFunctions) or uses NVCUVID's types by value
# cimports this module for their C definitions, even when it calls nothing declared here.
from torchcodec._cuda.cuda cimport CudaFunctions
from torchcodec._cuda.nvcuvid cimport CuvidFunctions


cdef extern from "ffnvcodec_loader.h" nogil:
    ctypedef struct tc_loader_log:
        char text[256]              # the loader's last message ("Cannot load libcuda.so.1"), "" when none

    int cuda_load_functions(CudaFunctions **functions, void *logctx)
    void cuda_free_functions(CudaFunctions **functions)
    int cuvid_load_functions(CuvidFunctions **functions, void *logctx)
    void cuvid_free_functions(CuvidFunctions **functions)
