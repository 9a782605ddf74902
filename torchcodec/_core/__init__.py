"""The engine: Cython modules over FFmpeg. Their .pxd files are the package's cimport API."""
