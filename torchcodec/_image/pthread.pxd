# Declarations of POSIX threads (pthread.h); C names unchanged; only what torchcodec uses.

cdef extern from "<pthread.h>" nogil:
    ctypedef struct pthread_t:
        pass
    ctypedef struct pthread_attr_t:
        pass
    ctypedef struct pthread_mutex_t:
        pass
    ctypedef struct pthread_mutexattr_t:
        pass

    int pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*start_routine)(void *) noexcept nogil,
                       void *arg)
    int pthread_join(pthread_t thread, void **retval)
    int pthread_mutex_init(pthread_mutex_t *mutex, const pthread_mutexattr_t *attr)
    int pthread_mutex_destroy(pthread_mutex_t *mutex)
    int pthread_mutex_lock(pthread_mutex_t *mutex)
    int pthread_mutex_unlock(pthread_mutex_t *mutex)
