# Declarations of the CUDA driver API (cuda.pxd) and NVCUVID (nvcuvid.pxd), both reached through
# ffnvcodec's dlopen loader (ffnvcodec.pxd, build-time only): nothing here links libcuda or
# libnvcuvid, and no installed declaration needs ffnvcodec's headers.
