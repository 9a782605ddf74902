/* A libnvidia-encode.so.1 without NVENC's entry points (NvEncodeAPICreateInstance,
 * NvEncodeAPIGetMaxSupportedVersion): FFmpeg's nvenc encoders load it and fail at avcodec_open2 as
 * on a machine whose driver lacks NVENC, the same way on every machine (the real library, where a
 * GPU machine has one, is never reached by the stub tests). NVENC itself is not modelled. */
int stub_nvenc_absent(void) { return 1; }
