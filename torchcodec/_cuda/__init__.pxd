# Declarations of the CUDA driver API (cuda.pxd) and NVCUVID (nvcuvid.pxd), both reached through
# ffnvcodec's dlopen loader: nothing here links libcuda or libnvcuvid.
