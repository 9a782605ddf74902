/* Differences between libavif versions (Debian 12 has 0.11; conda-forge and Debian 13 have 1.x). */
#ifndef TORCHCODEC_AVIFCOMPAT_H
#define TORCHCODEC_AVIFCOMPAT_H

#include <avif/avif.h>

/* The mirror axis of an image's 'imir' property: 0 when its top and bottom are exchanged, 1 when its
 * left and right are. libavif 0.x names the field `mode`; 1.x renamed it back to `axis`. */
static inline uint8_t tc_avif_imir_axis(const avifImage *image)
{
#if AVIF_VERSION_MAJOR >= 1
    return image->imir.axis;
#else
    return image->imir.mode;
#endif
}

#endif
