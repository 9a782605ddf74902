# Turning FFmpeg return codes into Python exceptions: the one place where this happens.

cdef int check_av(int ret, const char *where, object subject=*) except -1
cdef str av_error_string(int ret)
cdef object av_exception(int ret, str message)
cdef bint is_again_or_eof(int ret) noexcept nogil
