/* ffnvcodec's dlopen loader (ffnvcodec/dynlink_loader.h), with its messages kept instead of printed.
 *
 * The loader reports what failed ("Cannot load libcuda.so.1", "Cannot load cuLinkCreate") through
 * FFNV_LOG_FUNC, which by default prints to stderr. Here the message goes to the tc_loader_log that
 * the caller passes as the loader's logctx, so that torchcodec can put it in the exception it raises.
 * Include this header instead of ffnvcodec/dynlink_loader.h (torchcodec/_cuda/ffnvcodec.pxd does).
 *
 * A build-time header of torchcodec's own CUDA modules, not installed: the installed headers and the
 * .pxd files a downstream extension cimports need no ffnvcodec (ARCHITECTURE decision 7).
 */
#ifndef TORCHCODEC_CUDA_LOADER_H
#define TORCHCODEC_CUDA_LOADER_H

#include <stdarg.h>
#include <stdio.h>

typedef struct tc_loader_log {
    char text[256];   /* the last message, "" when none */
} tc_loader_log;

static inline void tc_loader_log_message(void *logctx, const char *format, ...)
{
    va_list args;
    if (!logctx)
        return;
    va_start(args, format);
    vsnprintf(((tc_loader_log *)logctx)->text, sizeof(((tc_loader_log *)logctx)->text), format, args);
    va_end(args);
}

#define FFNV_LOG_FUNC(logctx, msg, ...) tc_loader_log_message((logctx), (msg), __VA_ARGS__)
#define FFNV_DEBUG_LOG_FUNC(logctx, msg, ...)

#include <ffnvcodec/dynlink_loader.h>

#endif
