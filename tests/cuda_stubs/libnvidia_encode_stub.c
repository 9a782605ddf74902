/* A libnvidia-encode.so.1 for the tests: NVENC's two entry points and, of the API they hand out,
 * the encode session's open and destroy, so that each way NVENC can be missing is the same on every
 * machine (the real library, where a GPU machine has one, is never reached by the stub tests):
 *
 *   STUB_NVENC_VERSION      what NvEncodeAPIGetMaxSupportedVersion reports (major << 4 | minor;
 *                           default: the version of the headers, NVENCAPI_MAJOR/MINOR_VERSION)
 *   STUB_NVENC_OPEN_STATUS  what nvEncOpenEncodeSessionEx returns (default
 *                           NV_ENC_ERR_UNSUPPORTED_DEVICE, what an H200, which has no NVENC
 *                           engine, answers); NV_ENC_SUCCESS hands out a session (only
 *                           torchcodec's own probe may be given one: nothing else is modelled)
 *   STUB_WITHOUT_NvEncodeAPICreateInstance   (build_stub's omit) a library lacking that entry point
 *
 * Every call is logged (stub_nvenc_log(), with the session parameters it was given), and the
 * sessions opened and destroyed are counted. */
#include <stdint.h>
#include <string.h>

#include <ffnvcodec/nvEncodeAPI.h>

#include "stub_log.h"

#ifndef STUB_NVENC_VERSION
#define STUB_NVENC_VERSION ((NVENCAPI_MAJOR_VERSION << 4) | NVENCAPI_MINOR_VERSION)
#endif
#ifndef STUB_NVENC_OPEN_STATUS
#define STUB_NVENC_OPEN_STATUS NV_ENC_ERR_UNSUPPORTED_DEVICE
#endif

int stub_nvenc_opened, stub_nvenc_destroyed;
static int session;     /* its address is the one session handed out */

const char *stub_nvenc_log(void) { return call_log; }

static NVENCSTATUS NVENCAPI open_session(NV_ENC_OPEN_ENCODE_SESSION_EX_PARAMS *params, void **encoder)
{
    log_call("nvEncOpenEncodeSessionEx(version=%#x, deviceType=%d, device=%p, apiVersion=%#x) -> %d\n",
             params->version, (int)params->deviceType, params->device, params->apiVersion,
             (int)STUB_NVENC_OPEN_STATUS);
    *encoder = NULL;
    if (STUB_NVENC_OPEN_STATUS != NV_ENC_SUCCESS)
        return STUB_NVENC_OPEN_STATUS;
    stub_nvenc_opened++;
    *encoder = &session;
    return NV_ENC_SUCCESS;
}

static NVENCSTATUS NVENCAPI destroy_encoder(void *encoder)
{
    log_call("nvEncDestroyEncoder(%s)\n", encoder == &session ? "session" : "unknown");
    stub_nvenc_destroyed += encoder == &session;
    return encoder == &session ? NV_ENC_SUCCESS : NV_ENC_ERR_INVALID_PTR;
}

NVENCSTATUS NVENCAPI NvEncodeAPIGetMaxSupportedVersion(uint32_t *version)
{
    log_call("NvEncodeAPIGetMaxSupportedVersion() -> %#x\n", (unsigned)STUB_NVENC_VERSION);
    *version = STUB_NVENC_VERSION;
    return NV_ENC_SUCCESS;
}

#ifndef STUB_WITHOUT_NvEncodeAPICreateInstance
NVENCSTATUS NVENCAPI NvEncodeAPICreateInstance(NV_ENCODE_API_FUNCTION_LIST *functions)
{
    log_call("NvEncodeAPICreateInstance(version=%#x)\n", functions->version);
    if (functions->version != NV_ENCODE_API_FUNCTION_LIST_VER)
        return NV_ENC_ERR_INVALID_VERSION;
    memset((char *)functions + sizeof(functions->version), 0, sizeof(*functions) - sizeof(functions->version));
    functions->nvEncOpenEncodeSessionEx = open_session;
    functions->nvEncDestroyEncoder = destroy_encoder;
    return NV_ENC_SUCCESS;
}
#endif
