# NVCUVID (NVDEC's API) as ffnvcodec's loader exposes it: CuvidFunctions, filled by
# cuvid_load_functions from libnvcuvid.so.1. The decoder's function fields are declared by the
# NVDEC work that calls them; for now only the table and its loading.

cdef extern from "torchcodec/cuda_loader.h" nogil:
    ctypedef struct CuvidFunctions:
        void *lib

    int cuvid_load_functions(CuvidFunctions **functions, void *logctx)
    void cuvid_free_functions(CuvidFunctions **functions)
