/* libpng reports errors by longjmp'ing to a setjmp of the caller's. C only allows setjmp as the
 * whole controlling expression of an if (or a comparison with a constant), which Cython code cannot
 * guarantee, so the setjmp sits here: tc_png_guard runs one step of libpng calls (a Cython
 * function without Python objects) and returns -1 when libpng longjmp'ed out of it. The step's
 * frame is discarded by the longjmp; its results go through `arg`, never through locals. */
#ifndef TORCHCODEC_PNGGUARD_H
#define TORCHCODEC_PNGGUARD_H

#include <setjmp.h>
#include <png.h>

typedef void (*tc_png_step)(png_structp png_ptr, void *arg);

static int tc_png_guard(png_structp png_ptr, tc_png_step step, void *arg)
{
    if (setjmp(png_jmpbuf(png_ptr)))
        return -1;
    step(png_ptr, arg);
    return 0;
}

#endif
