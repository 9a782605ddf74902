# Declarations of libheif (libheif/heif.h, 1.13 and later); C names unchanged; only what torchcodec uses.
from libc.stdint cimport uint8_t, uint32_t


cdef extern from "libheif/heif.h" nogil:
    enum heif_error_code:
        heif_error_Ok

    struct heif_error:
        heif_error_code code
        const char *message

    struct heif_context:
        pass
    struct heif_image_handle:
        pass
    struct heif_image:
        pass
    struct heif_decoding_options:
        pass
    struct heif_init_params:
        pass

    ctypedef uint32_t heif_item_id

    enum heif_colorspace:
        heif_colorspace_RGB

    enum heif_chroma:
        heif_chroma_interleaved_RGB
        heif_chroma_interleaved_RGBA
        heif_chroma_interleaved_RRGGBB_LE
        heif_chroma_interleaved_RRGGBBAA_LE

    enum heif_channel:
        heif_channel_interleaved

    heif_error heif_init(heif_init_params *params)
    heif_context *heif_context_alloc()
    void heif_context_free(heif_context *ctx)
    heif_error heif_context_read_from_memory_without_copy(heif_context *ctx, const void *mem, size_t size,
                                                          const void *options)
    int heif_context_get_number_of_top_level_images(heif_context *ctx)
    int heif_context_get_list_of_top_level_image_IDs(heif_context *ctx, heif_item_id *ID_array, int count)
    heif_error heif_context_get_image_handle(heif_context *ctx, heif_item_id id, heif_image_handle **handle)
    void heif_image_handle_release(const heif_image_handle *handle)
    int heif_image_handle_get_width(const heif_image_handle *handle)
    int heif_image_handle_get_height(const heif_image_handle *handle)
    int heif_image_handle_get_luma_bits_per_pixel(const heif_image_handle *handle)
    int heif_image_handle_has_alpha_channel(const heif_image_handle *handle)
    heif_error heif_decode_image(const heif_image_handle *in_handle, heif_image **out_img,
                                 heif_colorspace colorspace, heif_chroma chroma,
                                 const heif_decoding_options *options)
    void heif_image_release(const heif_image *img)
    int heif_image_get_width(const heif_image *img, heif_channel channel)
    int heif_image_get_height(const heif_image *img, heif_channel channel)
    const uint8_t *heif_image_get_plane_readonly(const heif_image *img, heif_channel channel, int *out_stride)
