"""torchcodec's own device buffer (DLPack, CUDA Array Interface v3) and the CUDA output allocation.

Without a GPU: each test runs Python in a subprocess against the stub libcuda.so.1
(tests/cuda_stubs/libcuda_stub.c), whose "device memory" is host memory and which logs and counts
allocations, frees, events, stream waits and context pushes. The DLPack structs are read back through
ctypes structures defined here from the DLPack 1.x spec, independently of the package's .pxd.
GPU tests (``cuda`` marker) hand the buffer to torch and cupy on a real device.
"""
from __future__ import annotations

import importlib.util
import os
import pathlib
import sys
import textwrap

import pytest

import torchcodec
from torchcodec._cuda import _build_config

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "cuda_stubs"))
from stub_build import CC, build_stub, run_python  # noqa: E402

# The folder torchcodec is imported from: kept on the path of the subprocesses that clear PYTHONPATH
# (to hide the test's own stand-in modules), for a torchcodec found through PYTHONPATH (a
# pip --target build, as tools/gpu_check.sh makes).
TORCHCODEC_PARENT = str(pathlib.Path(torchcodec.__file__).resolve().parent.parent)


@pytest.fixture(scope="module")
def stubs(tmp_path_factory):
    """Stub libcuda.so.1 builds: "working" (every extra), "no_extras" (no dlsym'd functions)."""
    if not _build_config.CUDA_DRIVER:
        pytest.skip("this build has no CUDA driver loader (-Dcuda=disabled, or no ffnvcodec headers)")
    if CC is None:
        pytest.skip("no C compiler to build the stub library")
    root = tmp_path_factory.mktemp("device_buffer_stubs")
    cuda = ("libcuda.so.1", "libcuda_stub.c", "cuda_load_functions")
    return {"working": build_stub(root / "working", *cuda),
            "no_extras": build_stub(root / "no_extras", *cuda, defines=("STUB_NO_EXTRAS",))}


# The subprocess's helpers: the stub's counters and log, capsule access through the C API, and the
# DLPack 1.x ABI as ctypes structures (from dmlc.github.io/dlpack, not from the package).
PRELUDE = """
import ctypes, json, sys, threading
import numpy
from torchcodec._cuda import _driver
from torchcodec._cuda._device_buffer import DeviceBuffer
stub = ctypes.CDLL("libcuda.so.1")
stub.stub_call_log.restype = ctypes.c_char_p
def counter(name):
    return ctypes.c_int.in_dll(stub, name).value
def live_bytes():
    return ctypes.c_longlong.in_dll(stub, "stub_live_bytes").value
def pointer(name):
    return ctypes.c_void_p.in_dll(stub, name).value
def log():
    return stub.stub_call_log().decode().splitlines()
def clear():
    stub.stub_clear_log()
def balanced():
    return counter("stub_pushes") == counter("stub_pops") and counter("stub_stack_depth") == 0
context = _driver.load_driver().context(0)

class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]
class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]
class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]
class DLManagedTensor(ctypes.Structure):
    pass
LegacyDeleter = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", LegacyDeleter)]
class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]
class DLManagedTensorVersioned(ctypes.Structure):
    pass
VersionedDeleter = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensorVersioned))
DLManagedTensorVersioned._fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p),
                                     ("deleter", VersionedDeleter), ("flags", ctypes.c_uint64),
                                     ("dl_tensor", DLTensor)]

api = ctypes.pythonapi
api.PyCapsule_GetName.restype = ctypes.c_char_p
api.PyCapsule_GetName.argtypes = [ctypes.py_object]
api.PyCapsule_GetPointer.restype = ctypes.c_void_p
api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
USED = {b"dltensor": ctypes.c_char_p(b"used_dltensor"),
        b"dltensor_versioned": ctypes.c_char_p(b"used_dltensor_versioned")}   # kept alive: the capsule keeps the pointer

def managed(capsule):
    name = api.PyCapsule_GetName(capsule)
    kind = DLManagedTensorVersioned if name == b"dltensor_versioned" else DLManagedTensor
    return kind.from_address(api.PyCapsule_GetPointer(capsule, name))

def consume(capsule):
    '''What a consumer does: take the struct and rename the capsule; it calls the deleter later.'''
    name = api.PyCapsule_GetName(capsule)
    tensor = managed(capsule)
    api.PyCapsule_SetName(capsule, USED[name])
    return tensor

def describe(tensor):
    t = tensor.dl_tensor
    return {"data": t.data or 0, "device": [t.device.device_type, t.device.device_id], "ndim": t.ndim,
            "dtype": [t.dtype.code, t.dtype.bits, t.dtype.lanes], "shape": t.shape[:t.ndim],
            "strides": t.strides[:t.ndim], "byte_offset": t.byte_offset}

def host_view(address, shape, strides, dtype):
    '''The stub's device memory is host memory: a numpy view of it (numpy.from_dlpack refuses CUDA).'''
    dtype = numpy.dtype(dtype)
    extent = 1 + sum((n - 1) * s for n, s in zip(shape, strides)) + dtype.itemsize if all(shape) else 0
    raw = (ctypes.c_char * max(extent, 1)).from_address(address)
    return numpy.ndarray(shape, dtype, buffer=raw, strides=strides)
"""


def run(stubs, code: str, stub: str = "working", helpers: str = "", **env) -> dict:
    """Run ``code`` (indented as in the test) after PRELUDE and ``helpers`` against ``stub``."""
    return run_python(PRELUDE + helpers + textwrap.dedent(code), stubs[stub], **env)


# ---- allocation and freeing ---------------------------------------------------------------------

def test_empty_allocates_in_stream_order_and_frees_on_that_stream_after_the_last_writes(stubs):
    out = run(stubs, """
        clear()
        buffer = DeviceBuffer.empty(context, (2, 4, 5, 3), "uint8", 0x1234)
        allocated = log()
        live = live_bytes()
        buffer.record(0x1234)
        clear()
        del buffer
        print(json.dumps({"allocated": allocated, "live": live, "freed": log(), "after": live_bytes(),
                          "events": [counter("stub_events_created"), counter("stub_events_destroyed")],
                          "balanced": balanced()}))
    """)
    event = out["allocated"][0].split(" -> ")[1]
    assert out["allocated"] == [f"cuEventCreate(flags=2) -> {event}", "cuMemAllocAsync(120, stream=0x1234)",
                                f"cuEventRecord({event}, stream=0x1234)"]
    assert out["live"] == 120
    assert out["freed"] == [f"cuStreamWaitEvent(stream=0x1234, {event})", "cuMemFreeAsync(stream=0x1234)",
                            f"cuEventDestroy({event})"]
    assert out["after"] == 0 and out["events"] == [1, 1] and out["balanced"]


def test_without_stream_ordered_allocation_the_buffer_uses_cumemalloc_and_cumemfree(stubs):
    out = run(stubs, """
        clear()
        buffer = DeviceBuffer.empty(context, (3, 7), "float32", 1)
        live = live_bytes()
        del buffer
        print(json.dumps({"log": log(), "live": live, "after": live_bytes(), "balanced": balanced()}))
    """, stub="no_extras")
    calls = [line.split("(")[0] for line in out["log"]]
    assert calls == ["cuEventCreate", "cuMemAlloc", "cuEventRecord", "cuMemFree", "cuEventDestroy"]
    assert "cuMemAlloc(84)" in out["log"]
    assert out["live"] == 84 and out["after"] == 0 and out["balanced"]


def test_properties_and_repr_describe_a_c_contiguous_buffer(stubs):
    out = run(stubs, """
        buffer = DeviceBuffer.empty(context, (2, 4, 5, 3), "float32", 1)
        print(json.dumps({"shape": buffer.shape, "dtype": buffer.dtype, "strides": buffer.strides,
                          "nbytes": buffer.nbytes, "itemsize": buffer.itemsize, "ptr": buffer.ptr,
                          "device": buffer.device, "stream": buffer.stream, "live": live_bytes(),
                          "repr": repr(buffer), "contiguous": buffer.is_c_contiguous}))
    """)
    assert out["shape"] == [2, 4, 5, 3] and out["dtype"] == "float32" and out["itemsize"] == 4
    assert out["strides"] == [240, 60, 12, 4] and out["nbytes"] == 480 == out["live"]
    assert out["ptr"] != 0 and out["device"] == 0 and out["stream"] == 1 and out["contiguous"]
    assert out["repr"] == "DeviceBuffer(shape=(2, 4, 5, 3), dtype=float32, device=cuda:0)"


def test_a_permuted_view_shares_the_memory_and_keeps_it_alive(stubs):
    out = run(stubs, """
        buffer = DeviceBuffer.empty(context, (2, 4, 5, 3), "uint8", 1)
        ptr = buffer.ptr
        view = buffer.permuted((0, 3, 1, 2))
        del buffer
        alive = live_bytes()
        errors = []
        for axes in [(0, 1, 2), (0, 0, 1, 2), (0, 1, 2, 4)]:
            try:
                view.permuted(axes)
            except ValueError as error:
                errors.append(str(error))
        out = {"shape": view.shape, "strides": view.strides, "same": view.ptr == ptr, "alive": alive,
               "repr": repr(view), "contiguous": view.is_c_contiguous, "errors": errors,
               "back": view.permuted((0, 2, 3, 1)).strides}
        del view
        out["after"] = live_bytes()
        print(json.dumps(out))
    """)
    assert out["shape"] == [2, 3, 4, 5] and out["strides"] == [60, 1, 15, 3] and out["same"]
    assert out["alive"] == 120 and out["after"] == 0
    assert out["repr"] == "DeviceBuffer(shape=(2, 3, 4, 5), dtype=uint8, device=cuda:0, strides=(60, 1, 15, 3))"
    assert not out["contiguous"] and out["back"] == [60, 15, 3, 1]
    assert len(out["errors"]) == 3 and all("is not a permutation" in e for e in out["errors"])


def test_absurd_sizes_and_bad_arguments_are_refused_before_allocating(stubs):
    out = run(stubs, """
        from torchcodec._cuda._device_buffer import MAX_NBYTES
        results = {}
        cases = {"huge": ((1 << 20, 1 << 20, 3), "uint8", 1), "negative": ((2, -1), "uint8", 1),
                 "dtype": ((2, 2), "int16", 1), "shape": ((2, "x"), "uint8", 1), "stream": ((2, 2), "uint8", -3),
                 "stream_type": ((2, 2), "uint8", 1.5), "rank": ((1,) * 40, "uint8", 1),
                 "overflow": ((1 << 62, 1 << 62), "float64", 1)}
        for name, (shape, dtype, stream) in cases.items():
            try:
                DeviceBuffer.empty(context, shape, dtype, stream)
            except Exception as error:
                results[name] = [type(error).__name__, str(error)]
        from torchcodec._cuda._device_buffer import DeviceMemory
        for name, make in {"direct": DeviceBuffer, "memory": DeviceMemory}.items():
            try:
                make()
            except TypeError as error:
                results[name] = str(error)
        results["allocs"] = counter("stub_allocs") + counter("stub_async_allocs")
        results["events"] = counter("stub_events_created")
        print(json.dumps(results))
    """)
    assert out["huge"][0] == "MemoryError" and "refuses device buffers over 1099511627776 bytes" in out["huge"][1]
    assert out["overflow"][0] == "MemoryError"
    assert out["negative"][0] == "ValueError" and "negative extent" in out["negative"][1]
    assert out["dtype"][0] == "ValueError" and "uint8, uint16, float32, float64" in out["dtype"][1]
    assert out["shape"][0] == "TypeError" and out["stream_type"][0] == "TypeError"
    assert out["stream"][0] == "ValueError" and out["rank"][0] == "ValueError"
    assert "use DeviceBuffer.empty(" in out["direct"] and "DeviceBuffer.empty only" in out["memory"]
    assert out["allocs"] == 0 and out["events"] == 0


def test_out_of_device_memory_is_a_memory_error_and_leaks_nothing(stubs):
    # The stub refuses allocations over 64 GiB with CUDA_ERROR_OUT_OF_MEMORY, as a small GPU would.
    out = run(stubs, """
        try:
            DeviceBuffer.empty(context, (1 << 37,), "uint8", 1)
        except MemoryError as error:
            message = str(error)
        print(json.dumps({"message": message, "live": live_bytes(), "balanced": balanced(),
                          "events": [counter("stub_events_created"), counter("stub_events_destroyed")]}))
    """)
    assert "cuMemAllocAsync could not allocate 137438953472 bytes on cuda:0" in out["message"]
    assert out["live"] == 0 and out["events"] == [1, 1] and out["balanced"]


def test_an_empty_buffer_allocates_nothing_and_still_exports(stubs):
    out = run(stubs, """
        buffer = DeviceBuffer.empty(context, (0, 4, 5, 3), "uint8", 1)
        cai = buffer.__cuda_array_interface__
        capsule = buffer.__dlpack__(max_version=(1, 0))
        print(json.dumps({"ptr": buffer.ptr, "nbytes": buffer.nbytes, "data": cai["data"],
                          "tensor": describe(managed(capsule)),
                          "allocs": counter("stub_allocs") + counter("stub_async_allocs")}))
    """)
    assert out["ptr"] == 0 and out["nbytes"] == 0 and out["allocs"] == 0 and out["data"] == [0, False]
    assert out["tensor"]["shape"] == [0, 4, 5, 3] and out["tensor"]["data"] == 0


# ---- DLPack -------------------------------------------------------------------------------------

def test_dlpack_capsules_describe_the_buffer_in_both_versions(stubs):
    out = run(stubs, """
        result = {}
        for dtype in ("uint8", "float32", "float64"):
            buffer = DeviceBuffer.empty(context, (2, 4, 5, 3), dtype, 1)
            view = buffer.permuted((0, 3, 1, 2))
            for name, kwargs in {"none": {}, "old": {"max_version": (0, 8)}, "v1": {"max_version": (1, 0)},
                                 "v2": {"max_version": (2, 3)}}.items():
                capsule = view.__dlpack__(**kwargs)
                entry = {"name": api.PyCapsule_GetName(capsule).decode(), **describe(managed(capsule))}
                if entry["name"] == "dltensor_versioned":
                    tensor = managed(capsule)
                    entry["version"] = [tensor.version.major, tensor.version.minor]
                    entry["flags"] = tensor.flags
                entry["ptr"] = buffer.ptr
                result[f"{dtype}-{name}"] = entry
        print(json.dumps(result))
    """)
    for dtype, (code, bits) in {"uint8": (1, 8), "float32": (2, 32), "float64": (2, 64)}.items():
        for name in ("none", "old", "v1", "v2"):
            entry = out[f"{dtype}-{name}"]
            assert entry["name"] == ("dltensor_versioned" if name in ("v1", "v2") else "dltensor")
            assert entry["data"] == entry["ptr"] and entry["byte_offset"] == 0
            assert entry["device"] == [2, 0] and entry["ndim"] == 4 and entry["dtype"] == [code, bits, 1]
            assert entry["shape"] == [2, 3, 4, 5]
            assert entry["strides"] == [60, 1, 15, 3], "DLPack strides count elements, not bytes"
            if name in ("v1", "v2"):
                assert entry["version"] == [1, 0] and entry["flags"] == 0, "version 1.0, writable, not a copy"


def test_indexing_gives_a_frame_view_found_through_dlpack_and_the_array_interface(stubs):
    """A view's DLPack data is its element 0 and byte_offset 0 (what torch exports): a consumer that
    ignores byte_offset, as older torch releases and cuda.core did, still reads this frame."""
    out = run(stubs, """
        buffer = DeviceBuffer.empty(context, (3, 2, 5, 3), "uint8", 1)
        expected = numpy.arange(90, dtype=numpy.uint8).reshape(3, 2, 5, 3)
        ctypes.memmove(buffer.ptr, expected.ctypes.data, expected.nbytes)
        nchw = buffer.permuted((0, 3, 1, 2))
        frame = nchw[-1]
        capsule = frame.__dlpack__(max_version=(1, 0))
        t = managed(capsule).dl_tensor
        seen = host_view(t.data, tuple(t.shape[:3]), tuple(t.strides[:3]), numpy.uint8)
        interface = frame.__cuda_array_interface__
        errors = []
        for index in (3, -4, 1.0, slice(0, 1)):
            try:
                nchw[index]
            except (IndexError, TypeError) as error:
                errors.append(type(error).__name__)
        print(json.dumps({"shape": frame.shape, "len": len(nchw), "offset": t.byte_offset,
                          "data": t.data - buffer.ptr,
                          "dlpack": bool((seen == expected[2].transpose(2, 0, 1)).all()),
                          "cai_data": interface["data"][0] - buffer.ptr, "ptr": frame.ptr - buffer.ptr,
                          "cai_strides": interface["strides"], "errors": errors}))
    """)
    assert out["shape"] == [3, 2, 5] and out["len"] == 3
    assert out["offset"] == 0 and out["data"] == 60, "data is the frame's first element, byte_offset 0"
    assert out["dlpack"] and out["cai_data"] == out["ptr"] == 60 and out["cai_strides"] == [1, 15, 3]
    assert out["errors"] == ["IndexError", "IndexError", "TypeError", "TypeError"]


def test_reshape_views_contiguous_buffers_freely_and_others_along_the_first_dimension(stubs):
    out = run(stubs, """
        buffer = DeviceBuffer.empty(context, (6, 2, 5, 3), "uint8", 1)
        nchw = buffer.permuted((0, 3, 1, 2))
        clips = nchw.reshape((2, 3, 3, 2, 5))
        flat = buffer.reshape((60, 3))
        errors = []
        for view, shape in ((nchw, (6, 3, 10)), (buffer, (7, 2, 5, 3)), (buffer, (-6, -2, 5, 3))):
            try:
                view.reshape(shape)
            except ValueError as error:
                errors.append(str(error))
        print(json.dumps({"clips": [clips.shape, clips.strides], "flat": [flat.shape, flat.strides],
                          "second": clips[1].ptr - buffer.ptr, "errors": errors}))
    """)
    assert out["clips"] == [[2, 3, 3, 2, 5], [90, 30, 1, 15, 3]]
    assert out["flat"] == [[60, 3], [3, 1]]
    assert out["second"] == 90
    assert "only be reshaped along its first dimension" in out["errors"][0]
    assert "(180 elements) to (7, 2, 5, 3)" in out["errors"][1] and "negative" in out["errors"][2]



def test_as_strided_views_planes_of_another_dtype_inside_the_allocation(stubs):
    """What a CUDA RawFrame's planes are: strided views of its storage (uint8), uint16 for deep
    samples, at an offset; refused when they would reach outside the allocation or are misaligned."""
    out = run(stubs, """
        storage = DeviceBuffer.empty(context, (4096,), "uint8", 1)
        host = host_view(storage.ptr, (4096,), (1,), "uint8")
        host[:] = numpy.arange(4096) % 251
        luma = storage.as_strided((4, 6), (512, 1), offset=0)
        chroma_u = storage.as_strided((2, 3), (512, 2), offset=2048)
        deep = storage.as_strided((4, 6), (512, 2), dtype="uint16", offset=1024)
        interface = deep.__cuda_array_interface__
        capsule = deep.__dlpack__()
        tensor = describe(managed(capsule))
        del capsule
        errors = []
        for args, kwargs in ((((4, 6), (512, 1)), {"offset": 4000}), (((2, 2), (3, 2)), {"dtype": "uint16"}),
                             (((2, 2), (4, 2)), {"dtype": "uint16", "offset": 1}), (((2,), (1,)), {"dtype": "int8"}),
                             (((3,), (-1,)), {})):
            try:
                storage.as_strided(*args, **kwargs)
            except ValueError as error:
                errors.append(str(error))
        print(json.dumps({
            "luma": host_view(luma.ptr, luma.shape, luma.strides, "uint8").tolist(),
            "chroma_u": host_view(chroma_u.ptr, chroma_u.shape, chroma_u.strides, "uint8").tolist(),
            "deep": [deep.shape, deep.strides, deep.dtype, deep.ptr - storage.ptr, deep.itemsize],
            "deep_values": host_view(deep.ptr, deep.shape, deep.strides, "<u2")[0, :2].tolist(),
            "typestr": interface["typestr"], "cai_strides": interface["strides"],
            "dlpack": [tensor["dtype"], tensor["strides"], tensor["data"] - storage.ptr], "errors": errors}))
    """)
    assert out["luma"][1][:3] == [512 % 251, 513 % 251, 514 % 251]
    assert out["chroma_u"][1] == [(2048 + 512 + k) % 251 for k in (0, 2, 4)]
    assert out["deep"] == [[4, 6], [512, 2], "uint16", 1024, 2]
    assert out["deep_values"] == [(1024 % 251) | ((1025 % 251) << 8), (1026 % 251) | ((1027 % 251) << 8)]
    assert out["typestr"] == "<u2" and out["cai_strides"] == [512, 2]
    assert out["dlpack"] == [[1, 16, 1], [256, 1], 1024], "kDLUInt 16, strides in elements, data at element 0"
    assert len(out["errors"]) == 5
    assert "reaches outside the 4096-byte allocation" in out["errors"][0]
    assert "multiples of the uint16 item size" in out["errors"][1] and "multiples" in out["errors"][2]
    assert "not supported" in out["errors"][3] and "reaches outside" in out["errors"][4]

def test_dlpack_tensor_fields_locate_the_bytes_written_at_ptr(stubs):
    out = run(stubs, """
        buffer = DeviceBuffer.empty(context, (2, 3, 4, 3), "float32", 1)
        expected = numpy.arange(72, dtype=numpy.float32).reshape(2, 3, 4, 3)
        ctypes.memmove(buffer.ptr, expected.ctypes.data, expected.nbytes)    # stub device memory is host memory
        capsule = buffer.permuted((0, 3, 1, 2)).__dlpack__(max_version=(1, 0))   # keeps the struct alive
        t = managed(capsule).dl_tensor
        itemsize = t.dtype.bits // 8
        seen = host_view(t.data, tuple(t.shape[:4]), tuple(s * itemsize for s in t.strides[:4]), numpy.float32)
        print(json.dumps({"equal": bool((seen == expected.transpose(0, 3, 1, 2)).all())}))
    """)
    assert out["equal"]


def test_the_deleter_runs_exactly_once_whether_or_not_the_capsule_was_consumed(stubs):
    out = run(stubs, """
        buffer = DeviceBuffer.empty(context, (4, 4), "uint8", 1)
        base = sys.getrefcount(buffer)
        result = {}
        for name, max_version in (("legacy", None), ("versioned", (1, 0))):
            capsule = buffer.__dlpack__(max_version=max_version)
            held = sys.getrefcount(buffer)
            del capsule                                     # never consumed: the capsule runs the deleter
            unconsumed = sys.getrefcount(buffer)
            capsule = buffer.__dlpack__(max_version=max_version)
            tensor = consume(capsule)
            renamed = api.PyCapsule_GetName(capsule).decode()
            # The consumer calls the deleter: through ctypes, without the GIL, on another thread.
            worker = threading.Thread(target=tensor.deleter, args=(ctypes.pointer(tensor),))
            worker.start(); worker.join()
            after_deleter = sys.getrefcount(buffer)
            del capsule, tensor                             # a consumed capsule must not call it again
            consumed = sys.getrefcount(buffer)
            result[name] = [held - base, unconsumed - base, renamed, after_deleter - base, consumed - base]
        capsule = buffer.__dlpack__()
        del buffer
        result["alive_with_capsule"] = live_bytes()
        del capsule
        result["after"] = live_bytes()
        print(json.dumps(result))
    """)
    assert out["legacy"] == [1, 0, "used_dltensor", 0, 0]
    assert out["versioned"] == [1, 0, "used_dltensor_versioned", 0, 0]
    assert out["alive_with_capsule"] == 16 and out["after"] == 0, "freed after the last reference, not before"


@pytest.mark.parametrize("stream, waited", [("None", 0x1), ("1", 0x1), ("2", 0x2), ("0xBEEF", 0xBEEF), ("-1", None),
                                            ("numpy.int64(0xBEEF)", 0xBEEF)],
                         ids=["None-legacy", "1-legacy", "2-per-thread", "handle", "-1-no-sync", "numpy-int"])
def test_dlpack_stream_orders_the_consumer_after_the_recorded_writes(stubs, stream, waited):
    out = run(stubs, f"""
        buffer = DeviceBuffer.empty(context, (4, 4), "uint8", 1)
        buffer.record(0x77)
        event = log()[-1].split("(")[1].split(",")[0]
        clear()
        waits = counter("stub_stream_waits")
        capsule = buffer.__dlpack__(stream={stream})
        print(json.dumps({{"log": log(), "event": event, "waits": counter("stub_stream_waits") - waits,
                          "syncs": counter("stub_event_syncs"), "balanced": balanced()}}))
    """)
    assert out["syncs"] == 0, "DLPack never waits on the host"
    if waited is None:
        assert out["waits"] == 0 and out["log"] == []
    else:
        assert out["waits"] == 1 and out["log"] == [f"cuStreamWaitEvent(stream={waited:#x}, {out['event']})"]
    assert out["balanced"]


def test_dlpack_refuses_stream_zero_other_devices_and_copies(stubs):
    out = run(stubs, """
        second = _driver.load_driver().context(1)
        buffer = DeviceBuffer.empty(second, (4, 4), "uint8", 1)
        errors = {}
        for name, kwargs in {"zero": {"stream": 0}, "text": {"stream": "1"}, "bool": {"stream": True},
                             "negative": {"stream": -2}, "device": {"dl_device": (2, 0)},
                             "cpu": {"dl_device": (1, 0)}, "copy": {"copy": True}}.items():
            try:
                buffer.__dlpack__(**kwargs)
            except Exception as error:
                errors[name] = [type(error).__name__, str(error)]
        capsule = buffer.__dlpack__(dl_device=(2, 1), copy=False)
        print(json.dumps({"errors": errors, "device": buffer.__dlpack_device__(),
                          "same": api.PyCapsule_GetName(capsule).decode(),
                          "tensor_device": describe(managed(capsule))["device"],
                          "waits": counter("stub_stream_waits")}))
    """, STUB_DEVICE_COUNT="2")
    errors = out["errors"]
    assert errors["zero"][0] == "ValueError" and "stream=0) is ambiguous" in errors["zero"][1]
    assert errors["text"][0] == errors["bool"][0] == "TypeError" and errors["negative"][0] == "ValueError"
    assert errors["device"][0] == errors["cpu"][0] == errors["copy"][0] == "BufferError"
    assert out["device"] == [2, 1] and out["tensor_device"] == [2, 1] and out["same"] == "dltensor"
    assert out["waits"] == 1, "only the successful export waited"


def test_without_custreamwaitevent_dlpack_waits_on_the_host(stubs):
    out = run(stubs, """
        buffer = DeviceBuffer.empty(context, (4, 4), "uint8", 1)
        clear()
        buffer.__dlpack__(stream=5)
        print(json.dumps({"log": [line.split("(")[0] for line in log()]}))
    """, stub="no_extras")
    assert out["log"] == ["cuEventSynchronize"]


def test_driver_failures_raise_cuda_errors_and_leave_nothing_behind(stubs):
    out = run(stubs, """
        from torchcodec._cuda._driver import CudaError
        result = {}
        try:
            DeviceBuffer.empty(context, (4, 4), "uint8", 1)      # cuEventRecord fails after the allocation
        except CudaError as error:
            result["empty"] = [str(error), live_bytes(),
                               counter("stub_events_created") - counter("stub_events_destroyed")]
        print(json.dumps(result | {"balanced": balanced()}))
    """, STUB_FAIL="cuEventRecord")
    assert out["empty"][0].startswith("cuEventRecord failed: CUDA_ERROR_INVALID_VALUE")
    assert out["empty"][1:] == [0, 0] and out["balanced"]
    out = run(stubs, """
        from torchcodec._cuda._driver import CudaError
        buffer = DeviceBuffer.empty(context, (4, 4), "uint8", 1)
        base = sys.getrefcount(buffer)
        result = {}
        for name, read in {"dlpack": lambda: buffer.__dlpack__(stream=5),
                           "cai": lambda: buffer.__cuda_array_interface__}.items():
            try:
                read()
            except CudaError as error:
                result[name] = str(error)
        result["references"] = sys.getrefcount(buffer) - base
        print(json.dumps(result | {"balanced": balanced()}))
    """, STUB_FAIL="cuStreamWaitEvent,cuEventSynchronize")
    assert out["dlpack"].startswith("cuStreamWaitEvent failed") and out["cai"].startswith("cuEventSynchronize failed")
    assert out["references"] == 0, "no capsule was made"
    assert out["balanced"]


# ---- CUDA Array Interface -----------------------------------------------------------------------

def test_cuda_array_interface_v3_waits_for_the_writes_then_reports_no_stream(stubs):
    out = run(stubs, """
        result = {}
        for dtype in ("uint8", "float32", "float64"):
            buffer = DeviceBuffer.empty(context, (2, 3, 4, 3), dtype, 1)
            expected = numpy.arange(72).astype(dtype).reshape(2, 3, 4, 3)
            ctypes.memmove(buffer.ptr, expected.ctypes.data, expected.nbytes)
            buffer.record(0x99)
            clear()
            cai = buffer.__cuda_array_interface__
            waited = log()
            view = buffer.permuted((0, 3, 1, 2)).__cuda_array_interface__
            seen = host_view(view["data"][0], tuple(view["shape"]), tuple(view["strides"]), view["typestr"])
            cai["seen"] = bool((seen == expected.transpose(0, 3, 1, 2)).all())
            cai["view"] = {k: view[k] for k in ("shape", "strides", "stream", "version")}
            cai["waited"] = [line.split("(")[0] for line in waited]
            cai["ptr"] = buffer.ptr
            result[dtype] = cai
        print(json.dumps(result))
    """)
    for dtype, typestr in {"uint8": "|u1", "float32": "<f4", "float64": "<f8"}.items():
        cai = out[dtype]
        assert cai["version"] == 3 and cai["shape"] == [2, 3, 4, 3] and cai["typestr"] == typestr
        assert cai["descr"] == [["", typestr]] and cai["data"] == [cai["ptr"], False]
        assert cai["strides"] is None and cai["stream"] is None
        assert cai["waited"] == ["cuEventSynchronize"], "the getter waits on the host for the recorded writes"
        itemsize = int(typestr[2])
        assert cai["view"] == {"shape": [2, 3, 3, 4], "strides": [36 * itemsize, itemsize, 12 * itemsize,
                                                                  3 * itemsize], "stream": None, "version": 3}
        assert cai["seen"]


# ---- CUDA outputs per bridge (torchcodec._outputs) ----------------------------------------------

OUTPUTS = """
from torchcodec import _outputs
def describe_output(output):
    return {"type": type(output.data).__name__, "address": output.address, "strides": list(output.strides),
            "stream": output.stream, "packed": output.packed}
"""


def test_without_torch_or_cupy_the_numpy_bridge_gets_the_own_buffer_on_the_legacy_stream(stubs):
    out = run(stubs, helpers=OUTPUTS, code="""
        import importlib.util
        result = {}
        # "auto" is torch where torch is installed (test_torch_without_cuda_says_how_to_get_cuda_frames).
        for bridge in ("numpy", "auto") if importlib.util.find_spec("torch") is None else ("numpy",):
            output = _outputs.allocate((2, 4, 5, 3), "uint8", device_index=0, bridge=bridge)
            entry = describe_output(output)
            entry["ptr"] = output.data.ptr
            clear()
            finished = output.finish()
            entry["finish"] = log()
            entry["same"] = finished is output.data
            entry["nchw"] = [list(_outputs.nchw(finished).shape), list(_outputs.nchw(finished).strides)]
            result[bridge] = entry
            del output, finished
        result["imported"] = [name for name in ("torch", "cupy", "jax") if name in sys.modules]
        print(json.dumps(result))
    """, PYTHONPATH=TORCHCODEC_PARENT)
    assert "numpy" in out
    for bridge in ("numpy", "auto"):
        if bridge not in out:
            continue
        entry = out[bridge]
        assert entry["type"] == "DeviceBuffer" and entry["address"] == entry["ptr"] and entry["packed"]
        assert entry["strides"] == [60, 15, 3, 1] and entry["stream"] == 1
        assert len(entry["finish"]) == 1 and entry["finish"][0].startswith("cuEventRecord(")
        assert entry["finish"][0].endswith("stream=0x1)") and entry["same"]
        assert entry["nchw"] == [[2, 3, 4, 5], [60, 1, 15, 3]]
    assert out["imported"] == []


# A stand-in for cupy that records what torchcodec asks of it (host memory, stream 0x5151).
STAND_INS = str(pathlib.Path(__file__).resolve().parent / "cuda_stubs" / "stand_ins")


def test_the_numpy_bridge_prefers_cupy_and_writes_on_its_current_stream(stubs):
    out = run(stubs, helpers=OUTPUTS, code="""
        import cupy
        output = _outputs.allocate((2, 4, 5, 3), "float32", device_index=0, bridge="numpy")
        entry = describe_output(output)
        entry["finished_same"] = output.finish() is output.data
        entry["calls"] = list(cupy.calls)
        wrong = cupy.ndarray((2, 4, 5, 3), "float32", device=1)
        try:
            _outputs.describe_out(wrong, (2, 4, 5, 3), "float32", device_index=0)
        except ValueError as error:
            entry["wrong_device"] = str(error)
        entry["out"] = describe_output(_outputs.describe_out(cupy.ndarray((2, 4, 5, 3), "float32"),
                                                             (2, 4, 5, 3), "float32", device_index=0))
        entry["allocs"] = counter("stub_allocs") + counter("stub_async_allocs")
        print(json.dumps(entry))
    """, PYTHONPATH=os.pathsep.join([STAND_INS, TORCHCODEC_PARENT]))
    assert out["type"] == "ndarray" and out["stream"] == 0x5151 and out["packed"] and out["finished_same"]
    assert out["strides"] == [240, 60, 12, 4]
    assert out["calls"] == [["enter", 0], ["empty", [2, 4, 5, 3], "float32"], ["stream"], ["exit", 0]]
    assert "out= is on cuda:1; this decoder decodes on cuda:0" in out["wrong_device"]
    assert out["out"]["stream"] == 0x5151 and out["out"]["packed"]
    assert out["allocs"] == 0, "cupy's memory, not torchcodec's"


def test_missing_libraries_give_clear_errors(stubs):
    out = run(stubs, helpers=OUTPUTS, code="""
        import importlib.util
        errors = {}
        for bridge in ("cupy", "torch", "jax", "tensorflow"):
            if bridge != "tensorflow" and importlib.util.find_spec(bridge) is not None:
                continue
            try:
                _outputs.allocate((1, 2, 2, 3), "uint8", device_index=0, bridge=bridge)
            except Exception as error:
                errors[bridge] = [type(error).__name__, str(error)]
        try:
            _outputs.allocate((1, 2, 2, 3), "int16", device_index=0, bridge="numpy")
        except ValueError as error:
            errors["dtype"] = str(error)
        print(json.dumps(errors))
    """, PYTHONPATH=TORCHCODEC_PARENT)
    for bridge in ("cupy", "torch", "jax"):
        if bridge in out:
            assert out[bridge][0] == "ImportError" and f"pip install {bridge}" in out[bridge][1]
    assert out["tensorflow"][0] == "ValueError" and "unknown bridge 'tensorflow'" in out["tensorflow"][1]
    assert "CUDA outputs are uint8, uint16, float32, float64" in out["dtype"]


def test_torch_without_cuda_says_how_to_get_cuda_frames():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this torch can use CUDA")
    from torchcodec import _outputs
    for bridge in ("torch", "auto"):
        with pytest.raises(RuntimeError, match=r"torch.cuda.is_available\(\) is False.*install a CUDA build of torch"):
            _outputs.allocate((1, 2, 2, 3), "uint8", device_index=0, bridge=bridge)
    with pytest.raises(ValueError, match="out= is on cpu; this decoder decodes on cuda:0"):
        _outputs.describe_out(torch.empty((1, 2, 2, 3), dtype=torch.uint8), (1, 2, 2, 3), "uint8", device_index=0)


def test_jax_without_a_gpu_backend_says_so():
    jax = pytest.importorskip("jax")
    try:
        jax.devices("gpu")
        pytest.skip("this jax has a GPU backend")
    except RuntimeError:
        pass
    from torchcodec import _outputs
    with pytest.raises(RuntimeError, match="this jax has no GPU backend"):
        _outputs.allocate((1, 2, 2, 3), "uint8", device_index=0, bridge="jax")
    with pytest.raises(TypeError, match="jax arrays are immutable"):
        _outputs.describe_out(jax.numpy.zeros((1, 2, 2, 3), "uint8"), (1, 2, 2, 3), "uint8", device_index=0)


def test_describe_out_takes_device_buffers_in_both_dimension_orders(stubs):
    out = run(stubs, helpers=OUTPUTS, code="""
        result = {}
        nhwc = DeviceBuffer.empty(context, (2, 4, 5, 3), "uint8", 0x42)
        output = _outputs.describe_out(nhwc, (2, 4, 5, 3), "uint8", device_index=0)
        result["nhwc"] = describe_output(output)
        clear()
        result["finish_same"] = output.finish() is nhwc
        result["finish_log"] = log()
        result["nchw"] = describe_output(_outputs.describe_out(nhwc.permuted((0, 3, 1, 2)), (2, 4, 5, 3), "uint8",
                                                               dimension_order="NCHW", device_index=0))
        planar = DeviceBuffer.empty(context, (2, 3, 4, 5), "uint8", 1)
        result["planar_as_nhwc"] = describe_output(_outputs.describe_out(planar.permuted((0, 2, 3, 1)),
                                                                         (2, 4, 5, 3), "uint8", device_index=0))
        errors = {}
        second = DeviceBuffer.empty(_driver.load_driver().context(1), (2, 4, 5, 3), "uint8", 1)
        for name, args in {"shape": (nhwc, (2, 4, 6, 3), "uint8"), "nchw_shape": (nhwc, (2, 4, 5, 3), "uint8", "NCHW"),
                           "dtype": (nhwc, (2, 4, 5, 3), "float32"), "device": (second, (2, 4, 5, 3), "uint8"),
                           "numpy": (numpy.empty((2, 4, 5, 3), "uint8"), (2, 4, 5, 3), "uint8"),
                           "object": (object(), (2, 4, 5, 3), "uint8"),
                           "order": (nhwc, (2, 4, 5, 3), "uint8", "CHW")}.items():
            try:
                _outputs.describe_out(*args[:3], dimension_order=(args + ("NHWC",))[3], device_index=0)
            except (TypeError, ValueError) as error:
                errors[name] = [type(error).__name__, str(error)]
        result["errors"] = errors
        print(json.dumps(result))
    """, STUB_DEVICE_COUNT="2")
    assert out["nhwc"]["stream"] == 0x42 and out["nhwc"]["packed"] and out["nhwc"]["strides"] == [60, 15, 3, 1]
    assert out["finish_same"] and len(out["finish_log"]) == 1 and out["finish_log"][0].endswith("stream=0x42)")
    assert out["nchw"]["strides"] == [60, 15, 3, 1] and out["nchw"]["packed"]
    assert out["planar_as_nhwc"]["strides"] == [60, 5, 1, 20] and not out["planar_as_nhwc"]["packed"]
    errors = out["errors"]
    assert errors["shape"][0] == "ValueError" and "needs (2, 4, 6, 3)" in errors["shape"][1]
    assert "needs (2, 3, 4, 5)" in errors["nchw_shape"][1]
    assert "dtype uint8; this decoder outputs float32" in errors["dtype"][1]
    assert "out= is on cuda:1" in errors["device"][1]
    assert errors["numpy"][0] == "TypeError" and "device='cpu'" in errors["numpy"][1]
    assert errors["object"][0] == "TypeError" and errors["order"][0] == "ValueError"


FOREIGN = """
class Foreign:
    '''Another library's CUDA array, seen only through __cuda_array_interface__ (stub memory).'''
    def __init__(self, shape, typestr, version=3, stream=None, readonly=False, strides=None, device=None, **extra):
        self.memory = numpy.empty(shape, numpy.dtype(typestr))
        self.__cuda_array_interface__ = {"version": version, "shape": shape, "typestr": typestr,
                                         "data": (self.memory.ctypes.data, readonly), "strides": strides}
        if version >= 3:
            self.__cuda_array_interface__["stream"] = stream
        if device is not None:
            self.__dlpack_device__ = lambda: device
"""


def test_describe_out_writes_foreign_arrays_on_their_stream_or_after_a_defensive_sync(stubs):
    out = run(stubs, helpers=OUTPUTS + FOREIGN, code="""
        result = {}
        for name, kwargs in {"v3_stream": {"stream": 0x3333}, "v3_none": {}, "v2": {"version": 2},
                             "v3_zero": {"stream": 0}}.items():
            foreign = Foreign((2, 4, 5, 3), "<f4", **kwargs)
            clear()
            output = _outputs.describe_out(foreign, (2, 4, 5, 3), "float32", device_index=0)
            before = log()
            entry = describe_output(output)
            entry["address_ok"] = output.address == foreign.memory.ctypes.data
            clear()
            entry["finished_same"] = output.finish() is foreign
            entry["before"], entry["after"] = before, log()
            result[name] = entry
        strided = Foreign((2, 4, 5, 3), "|u1", stream=7, strides=(64, 16, 3, 1))
        result["strided"] = describe_output(_outputs.describe_out(strided, (2, 4, 5, 3), "uint8", device_index=0))
        errors = {}
        for name, foreign in {"readonly": Foreign((2, 4, 5, 3), "|u1", stream=7, readonly=True),
                              "device": Foreign((2, 4, 5, 3), "|u1", stream=7, device=(2, 1)),
                              "dtype": Foreign((2, 4, 5, 3), "<f8", stream=7)}.items():
            try:
                _outputs.describe_out(foreign, (2, 4, 5, 3), "uint8", device_index=0)
            except ValueError as error:
                errors[name] = str(error)
        result["errors"] = errors
        result["balanced"] = balanced()
        print(json.dumps(result))
    """, STUB_DEVICE_COUNT="2")
    v3 = out["v3_stream"]
    assert v3["stream"] == 0x3333 and v3["before"] == [] and v3["after"] == [] and v3["address_ok"]
    assert v3["strides"] == [240, 60, 12, 4] and v3["packed"] and v3["finished_same"]
    for name in ("v3_none", "v2", "v3_zero"):
        entry = out[name]
        assert entry["stream"] == 1 and entry["before"] == ["cuCtxSynchronize"], name
        assert entry["after"] == ["cuStreamSynchronize(0x1)"] and entry["finished_same"], name
    assert out["strided"]["strides"] == [64, 16, 3, 1] and out["strided"]["packed"]
    assert "read-only" in out["errors"]["readonly"] and "DLPack device (2, 1)" in out["errors"]["device"]
    assert "dtype float64" in out["errors"]["dtype"]
    assert out["balanced"]


def test_importing_the_output_module_imports_no_array_library():
    code = """
        import json, sys
        import torchcodec._outputs
        print(json.dumps([m for m in ("torch", "cupy", "jax", "numpy") if m in sys.modules]))
    """
    import subprocess
    result = subprocess.run([sys.executable, "-P", "-c", textwrap.dedent(code)], capture_output=True, text=True,
                            check=True)
    assert result.stdout.strip() == "[]"


# ---- on a GPU -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def gpu_context():
    import torchcodec
    if not torchcodec.cuda_available():
        pytest.skip("no CUDA device")
    from torchcodec._cuda import _driver
    return _driver.load_driver().context(0)


@pytest.mark.cuda
def test_torch_and_cupy_take_the_buffer_without_a_copy(gpu_context):
    from torchcodec._cuda._device_buffer import DeviceBuffer
    buffer = DeviceBuffer.empty(gpu_context, (2, 4, 5, 3), "uint8", 1)
    consumers = [name for name in ("torch", "cupy") if importlib.util.find_spec(name) is not None]
    if not consumers:
        pytest.skip("neither torch nor cupy installed")
    if "torch" in consumers:
        import torch
        if torch.cuda.is_available():
            tensor = torch.from_dlpack(buffer)
            assert tensor.device == torch.device("cuda:0") and tensor.data_ptr() == buffer.ptr
            tensor.copy_(torch.arange(120, dtype=torch.uint8, device="cuda:0").reshape(2, 4, 5, 3))
            view = torch.from_dlpack(buffer.permuted((0, 3, 1, 2)))
            assert view.stride() == (60, 1, 15, 3)
            assert torch.equal(view, tensor.permute(0, 3, 1, 2))
            torch.cuda.synchronize()
    if "cupy" in consumers:
        import cupy
        array = cupy.asarray(buffer)                    # through __cuda_array_interface__
        assert array.data.ptr == buffer.ptr and array.shape == (2, 4, 5, 3)
        array[...] = cupy.arange(120, dtype=cupy.uint8).reshape(2, 4, 5, 3)
        from_dlpack = cupy.from_dlpack(buffer.permuted((0, 3, 1, 2)))
        assert from_dlpack.strides == (60, 1, 15, 3)
        assert bool((from_dlpack == array.transpose(0, 3, 1, 2)).all())


@pytest.mark.cuda
def test_allocate_uses_the_bridge_library_on_its_current_stream(gpu_context):
    from torchcodec import _outputs
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("this torch cannot use CUDA")
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        output = _outputs.allocate((2, 4, 5, 3), "float32", device_index=0, bridge="torch")
    assert isinstance(output.data, torch.Tensor) and output.data.device == torch.device("cuda:0")
    assert output.stream == stream.cuda_stream and output.address == output.data.data_ptr()
    assert output.strides == (240, 60, 12, 4) and output.packed
