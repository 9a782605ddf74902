# Declarations of the CUDA driver API (driver.pxd) and NVCUVID (nvcuvid.pxd), both reached through
# ffnvcodec's dlopen loader: nothing here links libcuda or libnvcuvid.
