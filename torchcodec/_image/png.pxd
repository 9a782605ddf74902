# Declarations of libpng 1.6 (png.h); C names unchanged; only what torchcodec uses.

cdef extern from "png.h" nogil:
    const char *PNG_LIBPNG_VER_STRING

    ctypedef unsigned int png_uint_32
    ctypedef unsigned char png_byte
    ctypedef png_byte *png_bytep
    ctypedef const png_byte *png_const_bytep
    ctypedef const char *png_const_charp
    ctypedef void *png_voidp
    ctypedef size_t png_size_t

    struct png_struct_def:
        pass
    ctypedef png_struct_def png_struct
    ctypedef png_struct *png_structp
    ctypedef png_struct *png_structrp
    ctypedef const png_struct *png_const_structrp
    ctypedef png_structp *png_structpp
    struct png_info_def:
        pass
    ctypedef png_info_def png_info
    ctypedef png_info *png_infop
    ctypedef png_infop *png_infopp
    ctypedef png_info *png_inforp
    ctypedef const png_info *png_const_inforp

    ctypedef void (*png_error_ptr)(png_structp, png_const_charp)
    ctypedef void (*png_rw_ptr)(png_structp, png_bytep, size_t)
    ctypedef void (*png_flush_ptr)(png_structp)

    int PNG_COLOR_MASK_PALETTE
    int PNG_COLOR_MASK_COLOR
    int PNG_COLOR_MASK_ALPHA
    int PNG_COLOR_TYPE_GRAY
    int PNG_COLOR_TYPE_RGB
    int PNG_INTERLACE_NONE
    int PNG_INTERLACE_ADAM7
    int PNG_COMPRESSION_TYPE_DEFAULT
    int PNG_FILTER_TYPE_DEFAULT
    int PNG_FILLER_AFTER
    png_uint_32 PNG_INFO_tRNS
    png_uint_32 PNG_INFO_eXIf

    png_structp png_create_read_struct(const char *user_png_ver, png_voidp error_ptr, png_error_ptr error_fn,
                                       png_error_ptr warn_fn)
    png_structp png_create_write_struct(const char *user_png_ver, png_voidp error_ptr, png_error_ptr error_fn,
                                        png_error_ptr warn_fn)
    png_infop png_create_info_struct(png_const_structrp png_ptr)
    void png_destroy_read_struct(png_structpp png_ptr_ptr, png_infopp info_ptr_ptr, png_infopp end_info_ptr_ptr)
    void png_destroy_write_struct(png_structpp png_ptr_ptr, png_infopp info_ptr_ptr)

    void png_set_error_fn(png_structrp png_ptr, png_voidp error_ptr, png_error_ptr error_fn, png_error_ptr warning_fn)
    png_voidp png_get_error_ptr(png_const_structrp png_ptr)
    void png_error(png_const_structrp png_ptr, png_const_charp error_message)
    void png_longjmp(png_const_structrp png_ptr, int val)
    void png_set_read_fn(png_structrp png_ptr, png_voidp io_ptr, png_rw_ptr read_data_fn)
    void png_set_write_fn(png_structrp png_ptr, png_voidp io_ptr, png_rw_ptr write_data_fn,
                          png_flush_ptr output_flush_fn)
    png_voidp png_get_io_ptr(png_const_structrp png_ptr)

    void png_read_info(png_structrp png_ptr, png_inforp info_ptr)
    png_uint_32 png_get_IHDR(png_const_structrp png_ptr, png_const_inforp info_ptr, png_uint_32 *width,
                             png_uint_32 *height, int *bit_depth, int *color_type, int *interlace_method,
                             int *compression_method, int *filter_method)
    png_byte png_get_channels(png_const_structrp png_ptr, png_const_inforp info_ptr)
    png_uint_32 png_get_valid(png_const_structrp png_ptr, png_const_inforp info_ptr, png_uint_32 flag)
    png_uint_32 png_get_eXIf_1(png_const_structrp png_ptr, png_const_inforp info_ptr, png_uint_32 *num_exif,
                               png_bytep *exif)
    size_t png_get_rowbytes(png_const_structrp png_ptr, png_const_inforp info_ptr)

    void png_set_expand_gray_1_2_4_to_8(png_structrp png_ptr)
    int png_set_interlace_handling(png_structrp png_ptr)
    void png_set_palette_to_rgb(png_structrp png_ptr)
    void png_set_tRNS_to_alpha(png_structrp png_ptr)
    void png_set_strip_alpha(png_structrp png_ptr)
    void png_set_rgb_to_gray(png_structrp png_ptr, int error_action, double red, double green)
    void png_set_add_alpha(png_structrp png_ptr, png_uint_32 filler, int flags)
    void png_set_gray_to_rgb(png_structrp png_ptr)
    void png_set_expand_16(png_structrp png_ptr)
    void png_set_scale_16(png_structrp png_ptr)
    void png_set_swap(png_structrp png_ptr)
    void png_read_update_info(png_structrp png_ptr, png_inforp info_ptr)
    void png_read_row(png_structrp png_ptr, png_bytep row, png_bytep display_row)

    void png_set_IHDR(png_const_structrp png_ptr, png_inforp info_ptr, png_uint_32 width, png_uint_32 height,
                      int bit_depth, int color_type, int interlace_method, int compression_method,
                      int filter_method)
    void png_set_compression_level(png_structrp png_ptr, int level)
    void png_write_info(png_structrp png_ptr, png_const_inforp info_ptr)
    void png_write_row(png_structrp png_ptr, png_const_bytep row)
    void png_write_end(png_structrp png_ptr, png_inforp info_ptr)


cdef extern from "pngguard.h" nogil:
    # Runs step(png_ptr, arg) under a setjmp of png_ptr: returns -1 when libpng longjmp'ed out of
    # it (an error), 0 otherwise. setjmp must sit in C (see pngguard.h).
    ctypedef void (*tc_png_step)(png_structp png_ptr, void *arg) noexcept nogil
    int tc_png_guard(png_structp png_ptr, tc_png_step step, void *arg)
