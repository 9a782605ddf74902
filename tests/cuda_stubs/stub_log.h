/* What the stub libraries of tests/cuda_stubs share: a text log of the calls they receive (tests
 * read it through each library's exported stub_*_log()), and failures named in an environment
 * variable. Included once by each library's C file; STUB_LOG_SIZE (bytes of the log, default
 * 64 KiB) may be defined before. */
#ifndef TORCHCODEC_STUB_LOG_H
#define TORCHCODEC_STUB_LOG_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef STUB_LOG_SIZE
#define STUB_LOG_SIZE (1 << 16)
#endif

static char call_log[STUB_LOG_SIZE];
static size_t call_log_used;

/* Append a printf-formatted line to the log (silently dropped once it is nearly full: tests read short logs). */
static void log_call(const char *format, ...)
{
    va_list args;
    int written;
    if (call_log_used >= sizeof(call_log) - 256)
        return;
    va_start(args, format);
    written = vsnprintf(call_log + call_log_used, sizeof(call_log) - call_log_used, format, args);
    va_end(args);
    if (written > 0)
        call_log_used += (size_t)written;
}

static void clear_call_log(void)
{
    call_log_used = 0;
    call_log[0] = 0;
}

/* Whether `name` is one of the comma-separated names of the environment variable `variable`. */
static int listed_in(const char *variable, const char *name)
{
    const char *names = getenv(variable);
    size_t length = strlen(name);
    for (const char *at = names ? strstr(names, name) : NULL; at; at = strstr(at + 1, name))
        if ((at == names || at[-1] == ',') && (at[length] == 0 || at[length] == ','))
            return 1;
    return 0;
}

#endif
