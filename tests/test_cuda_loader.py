"""The CUDA driver loader (torchcodec._cuda._driver), tested without a GPU.

Each test compiles stand-ins for libcuda.so.1 / libnvcuvid.so.1 (tests/cuda_stubs/*.c, plus the
other symbols that ffnvcodec's loader requires, generated from the installed dynlink_loader.h as
functions returning CUDA_ERROR_NOT_SUPPORTED) with the system C compiler, and runs Python in a
subprocess whose LD_LIBRARY_PATH starts with the stub's directory. The stub counts context pushes,
pops, primary-context retains and releases, and records the image given to cuModuleLoadData.
"""
from __future__ import annotations

import importlib.util
import pathlib
import sys

import pytest

from torchcodec._cuda import _build_config

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "cuda_stubs"))
from stub_build import CC, build_stub, run_python  # noqa: E402



def test_cuda_available_never_raises_and_agrees_with_the_reason():
    import torchcodec
    from torchcodec._cuda import reason as cuda_unavailable_reason
    reason = cuda_unavailable_reason()
    assert torchcodec.cuda_available() is (reason is None)
    if not _build_config.CUDA_DRIVER:
        assert "this build of torchcodec has no CUDA support" in reason


@pytest.fixture(scope="module")
def stubs(tmp_path_factory):
    """Directories holding stub libraries: name -> path."""
    if not _build_config.CUDA_DRIVER:
        pytest.skip("this build has no CUDA driver loader (-Dcuda=disabled, or no ffnvcodec headers)")
    if CC is None:
        pytest.skip("no C compiler to build the stub libraries")
    root = tmp_path_factory.mktemp("cuda_stubs")
    cuda, cuvid = ("libcuda.so.1", "libcuda_stub.c", "cuda_load_functions"), \
                  ("libnvcuvid.so.1", "libnvcuvid_stub.c", "cuvid_load_functions")
    made = {
        "empty": root / "empty",
        "working": build_stub(root / "working", *cuda),
        "no_extras": build_stub(root / "no_extras", *cuda, defines=("STUB_NO_EXTRAS",)),
        "missing_symbol": build_stub(root / "missing_symbol", *cuda, defines=("STUB_WITHOUT_cuModuleLoadData",),
                                     omit=("cuModuleLoadData",)),
        "cuvid": build_stub(root / "cuvid", *cuvid),
        "cuvid_missing": build_stub(root / "cuvid_missing", *cuvid, omit=("cuvidCreateVideoParser",)),
    }
    made["empty"].mkdir()
    return made


def loadable(soname: str, libdir: pathlib.Path) -> bool:
    """Whether ``soname`` opens in a subprocess with libdir first on the library path."""
    code = f"""
        import ctypes, json
        try:
            ctypes.CDLL({soname!r}); found = True
        except OSError:
            found = False
        print(json.dumps({{"found": found}}))
    """
    return run_python(code, libdir)["found"]


STATUS = """
    import json, sys
    import torchcodec
    from torchcodec._cuda import reason as cuda_unavailable_reason
    from torchcodec.decoders import VideoDecoder
    try:
        VideoDecoder(b"", device="cuda")
    except (RuntimeError, ValueError) as error:
        decoder_error = f"{type(error).__name__}: {error}"
    print(json.dumps({"available": torchcodec.cuda_available(), "reason": cuda_unavailable_reason(),
                      "decoder_error": decoder_error, "again": cuda_unavailable_reason(),
                      "imported": [m for m in ("numpy", "torch") if m in sys.modules]}))
"""


def test_without_libcuda_cuda_is_unavailable_and_says_why(stubs):
    if loadable("libcuda.so.1", stubs["empty"]):
        pytest.skip("this machine has a real libcuda.so.1")
    out = run_python(STATUS, stubs["empty"])
    assert out["available"] is False
    assert "libcuda.so.1 could not be opened" in out["reason"]
    assert out["reason"] == out["again"]
    assert out["reason"] in out["decoder_error"] and "device='cpu'" in out["decoder_error"]
    assert out["imported"] == [] and out["stderr"] == ""


def test_a_libcuda_missing_a_required_function_names_it_without_printing(stubs):
    out = run_python(STATUS, stubs["missing_symbol"])
    assert out["available"] is False
    assert "lacks a function torchcodec needs (cuModuleLoadData)" in out["reason"]
    assert out["reason"] in out["decoder_error"]
    assert out["stderr"] == "", "the loader's message belongs in the exception, not on stderr"


@pytest.mark.parametrize("env", [{"STUB_CUINIT_RESULT": "100"}, {"STUB_DEVICE_COUNT": "0"}],
                         ids=["cuInit-no-device", "zero-devices"])
def test_a_driver_without_devices_says_so(stubs, env):
    out = run_python(STATUS, stubs["working"], **env)
    assert out["available"] is False
    assert "finds no CUDA device" in out["reason"]


def test_a_failing_cuinit_is_reported_with_the_drivers_error_name(stubs):
    out = run_python(STATUS, stubs["working"], STUB_CUINIT_RESULT="3")
    assert "cuInit failed: CUDA_ERROR_NOT_INITIALIZED: stub error text (CUDA error 3)" in out["reason"]


def test_with_a_working_driver_cuda_is_available_and_a_cuda_decoder_gets_as_far_as_the_source(stubs):
    out = run_python(STATUS, stubs["working"], STUB_DEVICE_COUNT="2")
    assert out["available"] is True and out["reason"] is None
    assert out["decoder_error"] == "ValueError: the in-memory source is empty (0 bytes)"
    assert out["imported"] == []


CONTEXT = """
    import ctypes, json
    from torchcodec._cuda import _driver
    stub = ctypes.CDLL("libcuda.so.1")
    def counter(name):
        return ctypes.c_int.in_dll(stub, name).value
    driver = _driver.load_driver()
    first = driver.context(0)
    out = {"same_driver": _driver.load_driver() is driver, "same_context": driver.context(0) is first,
           "device_count": driver.device_count, "name": first.name, "retains": counter("stub_retains")}
    try:
        driver.context(2)
    except ValueError as error:
        out["bad_index"] = str(error)
    module = first.load_module("copy")
    out["after_load"] = [counter("stub_pushes"), counter("stub_pops")]
    out["found"] = module.has_function("tc_copy_strided")
    try:
        module.function("no_such_kernel")
    except _driver.CudaError as error:
        out["lookup_error"] = [str(error), error.name]
    out["after_failure"] = [counter("stub_pushes"), counter("stub_pops"), counter("stub_stack_depth")]
    out["releases_before_exit"] = counter("stub_releases")
    print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def kernels():
    if not _build_config.CUDA_KERNELS:
        pytest.skip("this build has no CUDA kernels (no nvcc)")
    return importlib.import_module("torchcodec._cuda._kernels")


def test_primary_context_is_retained_once_and_pushes_and_pops_balance(stubs, kernels, tmp_path):
    report = tmp_path / "report.txt"
    out = run_python(CONTEXT, stubs["working"], STUB_DEVICE_COUNT="2", STUB_REPORT=str(report))
    assert out["same_driver"] and out["same_context"]
    assert out["device_count"] == 2 and out["name"] == "Stub GPU 0"
    assert out["retains"] == 1
    assert "cuda:2 does not exist" in out["bad_index"] and "2 CUDA device(s)" in out["bad_index"]
    pushes, pops = out["after_load"]
    assert pushes == pops >= 1
    assert out["found"] is True
    message, name = out["lookup_error"]
    assert name == "CUDA_ERROR_NOT_FOUND" and message.startswith("cuModuleGetFunction failed: CUDA_ERROR_NOT_FOUND")
    pushes, pops, depth = out["after_failure"]
    assert pushes == pops > out["after_load"][0] and depth == 0, "a call that raised inside the guard left a context pushed"
    assert out["releases_before_exit"] == 0
    counts = dict(item.split("=") for item in report.read_text().split())
    assert counts["retains"] == counts["releases"] == "1", "the primary context is released at exit"
    assert counts["pushes"] == counts["pops"]


FATBIN = """
    import ctypes, json
    from torchcodec._cuda import _driver, _kernels
    stub = ctypes.CDLL("libcuda.so.1")
    context = _driver.load_driver().context(0)
    out = {}
    for name, kernels in _kernels.KERNELS.items():
        module = context.load_module(name)
        out[name] = {"size": ctypes.c_size_t.in_dll(stub, "stub_image_size").value,
                     "head": bytes((ctypes.c_ubyte * 16).in_dll(stub, "stub_image_head")).hex(),
                     "hash": ctypes.c_ulonglong.in_dll(stub, "stub_image_hash").value,
                     "kernels": [module.has_function(kernel) for kernel in kernels]}
    print(json.dumps(out))
"""


def fnv1a(data: bytes) -> int:
    value = 1469598103934665603
    for byte in data:
        value = ((value ^ byte) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return value


def test_cuModuleLoadData_receives_exactly_the_embedded_fatbin(stubs, kernels):
    out = run_python(FATBIN, stubs["working"])
    for name in kernels.KERNELS:
        image = kernels.fatbin(name)
        assert out[name]["size"] == len(image)
        assert out[name]["head"] == image[:16].hex()
        assert out[name]["hash"] == fnv1a(image)
        assert all(out[name]["kernels"])


EXTRAS = """
    import json
    from torchcodec._cuda import _driver
    driver = _driver.load_driver()
    out = {"extras": driver.extras, "version": driver.driver_version}
    try:
        driver.require("cuStreamWaitEvent")
        out["require"] = None
    except _driver.CudaError as error:
        out["require"] = str(error)
    print(json.dumps(out))
"""


def test_driver_functions_outside_the_loaders_table_are_found_with_dlsym(stubs):
    out = run_python(EXTRAS, stubs["working"])
    assert out["extras"] == {"cuStreamWaitEvent": True, "cuMemAllocAsync": True, "cuMemFreeAsync": True,
                             "cuDriverGetVersion": True, "cuCtxSynchronize": True}
    assert out["version"] == 12040 and out["require"] is None


def test_a_driver_without_the_extra_functions_still_loads_and_says_what_is_missing(stubs):
    out = run_python(EXTRAS, stubs["no_extras"])
    assert not any(out["extras"].values())
    assert out["version"] is None
    assert "has no cuStreamWaitEvent" in out["require"]


NVCUVID = """
    import json
    from torchcodec._cuda import _driver
    try:
        _driver.load_nvcuvid()
        out = {"error": None}
    except _driver.CudaUnavailableError as error:
        out = {"error": str(error)}
    print(json.dumps(out))
"""


def test_nvcuvid_loading_reports_a_missing_function(stubs):
    assert run_python(NVCUVID, stubs["cuvid"])["error"] is None
    missing = run_python(NVCUVID, stubs["cuvid_missing"])
    assert "lacks a function torchcodec needs (cuvidCreateVideoParser)" in missing["error"]


def test_nvcuvid_loading_reports_a_missing_library(stubs):
    if loadable("libnvcuvid.so.1", stubs["empty"]):
        pytest.skip("a real libnvcuvid.so.1 is installed on this machine")
    assert "libnvcuvid.so.1 could not be opened" in run_python(NVCUVID, stubs["empty"])["error"]
