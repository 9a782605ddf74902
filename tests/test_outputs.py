"""torchcodec._outputs: the one interface to array libraries (allocation, description of memory,
from_host views, recognition of a library's objects), with and without torch."""
from __future__ import annotations

import array
import gc
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import torchcodec
from torchcodec import _outputs


def _run(code: str) -> str:
    result = subprocess.run([sys.executable, "-P", "-c", textwrap.dedent(code)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def _grid(dtype_format: str = "B", shape: tuple[int, ...] = (2, 3, 4)) -> tuple[bytearray, memoryview]:
    """A bytearray holding 0, 1, 2, ... and a memoryview of it with ``shape`` and ``dtype_format``."""
    count = 1
    for extent in shape:
        count *= extent
    values = array.array(dtype_format, range(count))
    storage = bytearray(values.tobytes())
    return storage, memoryview(storage).cast("B").cast(dtype_format, shape)


# ---- the interface without any array library --------------------------------------------------------

def test_importing_the_interface_imports_no_array_library():
    out = _run("""
        import sys
        import torchcodec._outputs as outputs
        view = memoryview(bytearray(24)).cast("B", (2, 3, 4))
        memory = outputs.describe(view)
        assert (memory.shape, memory.strides, memory.dtype) == ((2, 3, 4), (12, 4, 1), "uint8")
        class Lookalike:            # a class that claims to be torch's: not recognised, torch not imported
            pass
        Lookalike.__module__ = "torch"
        assert outputs.adapter_of(Lookalike()) is None and outputs.adapter_of(1.5, "dtype") is None
        print(sorted(m for m in ("numpy", "torch", "jax", "cupy") if m in sys.modules))
    """)
    assert out == "[]"


def test_auto_is_resolved_in_one_place():
    assert _outputs.resolve("auto") == ("torch" if _has("torch") else "numpy")
    assert _outputs.resolve("jax") == "jax"
    assert _outputs.host_bridge("cupy") == "numpy" and _outputs.host_bridge("numpy") == "numpy"


@pytest.mark.parametrize("dtype", sorted(_outputs.CPU_DTYPES))
def test_allocate_gives_every_cpu_dtype_with_its_address_and_strides(dtype):
    memory = _outputs.allocate((2, 3), dtype, bridge="numpy")
    data = memory.finish()
    assert type(data) is np.ndarray and data.dtype.name == dtype and data.shape == (2, 3)
    assert memory.address == data.ctypes.data and memory.strides == data.strides
    assert memory.itemsize == _outputs.CPU_DTYPES[dtype] and memory.dtype == dtype and memory.device == "cpu"
    assert memory.stream is None


def test_allocate_refuses_unknown_dtypes_and_bridges_and_cpu_cupy():
    with pytest.raises(ValueError, match="CPU outputs are bool, uint8"):
        _outputs.allocate((2,), "complex64", bridge="numpy")
    with pytest.raises(ValueError, match="unknown bridge 'tensorflow'"):
        _outputs.allocate((2,), "uint8", bridge="tensorflow")
    with pytest.raises(ValueError, match="the cupy bridge gives CUDA frames"):
        _outputs.allocate((2,), "uint8", bridge="cupy")
    with pytest.raises(ValueError, match="CUDA outputs are uint8, uint16, float32, float64"):
        _outputs.allocate((2,), "int16", device_index=0, bridge="numpy")


def test_describe_reads_buffers_of_any_format_strides_and_access():
    storage, view = _grid("h", (2, 3))
    memory = _outputs.describe(view)
    assert (memory.dtype, memory.itemsize, memory.shape, memory.strides) == ("int16", 2, (2, 3), (6, 2))
    assert memory.address == np.frombuffer(storage, np.uint8).ctypes.data
    strided = _outputs.describe(memoryview(storage)[::-2], writable=False)
    assert strided.strides == (-2,) and strided.extent() == (strided.address - 2 * 5, strided.address + 1)
    with pytest.raises(ValueError, match="out= is read-only"):
        _outputs.describe(bytes(4))
    assert _outputs.describe(bytes(4), writable=False).shape == (4,)
    with pytest.raises(TypeError, match="must be a numpy array, a torch tensor or a writable buffer"):
        _outputs.describe([1, 2, 3])
    flags = _outputs.describe(array.array("d", [1.0]))
    assert flags.dtype == "float64" and flags.itemsize == 8


def test_describe_out_gives_nhwc_strides_and_says_whether_the_engine_writes_them():
    memory = np.zeros((2, 4, 5, 3), np.uint8)
    out = memory.transpose(0, 3, 1, 2)
    packed = _outputs.describe_out(out, (2, 4, 5, 3), "uint8", dimension_order="NCHW")
    assert packed.packed and packed.shape == (2, 4, 5, 3) and packed.strides == memory.strides
    assert packed.finish() is out, "the caller's array, as given"
    planar = _outputs.describe_out(np.zeros((2, 3, 4, 5), np.uint8), (2, 4, 5, 3), "uint8", dimension_order="NCHW")
    assert not planar.packed
    with pytest.raises(ValueError, match=r"needs \(2, 3, 4, 5\)"):
        _outputs.describe_out(memory, (2, 4, 5, 3), "uint8", dimension_order="NCHW")
    with pytest.raises(ValueError, match="dtype uint8; this decoder outputs float32"):
        _outputs.describe_out(memory, (2, 4, 5, 3), "float32")


def test_dtype_names_from_strings_numpy_and_python_types():
    assert _outputs.dtype_name("uint8") == "uint8"
    assert _outputs.dtype_name(np.float32) == "float32" and _outputs.dtype_name(np.dtype("uint16")) == "uint16"
    assert _outputs.dtype_name(float) == "float64"


def test_adapter_of_recognises_only_imported_libraries_objects():
    assert _outputs.adapter_of(np.zeros(2)).name == "numpy"
    assert _outputs.adapter_of(np.random.default_rng(0), "generator").name == "numpy"
    assert _outputs.adapter_of(np.zeros(2), "generator") is None
    assert _outputs.adapter_of(memoryview(b"ab")) is None and _outputs.adapter_of(object()) is None


# ---- from_host, numpy -------------------------------------------------------------------------------

def test_from_host_numpy_views_a_reshaped_memoryview_and_keeps_it_alive():
    storage, view = _grid("B", (2, 3, 4))
    data = _outputs.from_host(view, "numpy")
    assert data.shape == (2, 3, 4) and data.dtype == np.uint8 and data[1, 2, 3] == 23
    storage[0] = 99
    assert data[0, 0, 0] == 99, "a view, not a copy"
    del storage, view
    gc.collect()
    assert int(data.sum()) == sum(range(1, 24)) + 99


def test_from_host_numpy_of_a_strided_array_is_the_same_view():
    base = np.arange(24, dtype=np.int32).reshape(4, 6)
    strided = base[:, ::2]
    assert _outputs.from_host(strided, "numpy") is strided
    assert _outputs.float64_array(array.array("d", [0.5, 1.5]), "numpy").tolist() == [0.5, 1.5]
    assert _outputs.from_host(memoryview(b"\x01\x00"), "cupy").dtype == np.uint8   # CPU arrays are numpy's


# ---- from_host, torch -------------------------------------------------------------------------------

@pytest.fixture
def torch():
    return pytest.importorskip("torch")


@pytest.mark.parametrize("dtype_format,dtype", [("B", "uint8"), ("h", "int16"), ("H", "uint16"), ("i", "int32"),
                                                ("q", "int64"), ("f", "float32"), ("d", "float64")])
def test_from_host_torch_views_buffers_of_every_dtype(torch, dtype_format, dtype):
    storage, view = _grid(dtype_format, (2, 3))
    tensor = _outputs.from_host(view, "torch")
    assert isinstance(tensor, torch.Tensor) and tensor.dtype == getattr(torch, dtype) and tuple(tensor.shape) == (2, 3)
    assert tensor.flatten().tolist() == list(range(6))
    storage[:] = bytes(len(storage))
    assert not tensor.any(), "a view, not a copy"


def test_from_host_torch_of_bools_and_of_empty_buffers(torch):
    flags = _outputs.from_host(memoryview(bytearray(b"\x01\x00\x01")).cast("?"), "torch")
    assert flags.dtype == torch.bool and flags.tolist() == [True, False, True]
    assert tuple(_outputs.from_host(array.array("d"), "torch").shape) == (0,)


def test_from_host_torch_of_a_strided_view_keeps_its_owner_alive(torch):
    base = np.arange(24, dtype=np.int64).reshape(4, 6)
    base.flags.writeable = False                     # read-only: through the buffer where DLPack refuses it
    strided = base[1:, ::2]
    tensor = _outputs.from_host(strided, "torch")
    assert tensor.stride() == (6, 2) and tensor.tolist() == strided.tolist()
    del base, strided
    gc.collect()
    assert tensor.tolist() == [[6, 8, 10], [12, 14, 16], [18, 20, 22]]
    storage, view = _grid("B", (2, 6))
    sliced = _outputs.from_host(memoryview(storage)[1::3], "torch")
    assert sliced.tolist() == [1, 4, 7, 10]
    del storage, view
    gc.collect()
    assert sliced.tolist() == [1, 4, 7, 10]


def test_from_host_torch_refuses_negative_strides(torch):
    with pytest.raises(ValueError, match="negative"):
        _outputs.from_host(memoryview(bytearray(4))[::-1], "torch")


def test_from_host_and_float64_arrays_need_no_numpy_under_torch(torch):
    out = _run("""
        import array, sys
        sys.modules["numpy"] = None
        import torch
        from torchcodec import _outputs
        grid = memoryview(bytearray(range(12))).cast("B", (3, 4))
        tensor = _outputs.from_host(grid, "torch")
        assert tensor[2, 3].item() == 11 and _outputs.float64_array(array.array("d", [2.5]), "torch").tolist() == [2.5]
        memory = _outputs.allocate((2, 2), "int64", bridge="torch")
        assert memory.finish().dtype == torch.int64 and memory.strides == (16, 8)
        print("ok")
    """)
    assert out == "ok"


def test_torch_objects_are_recognised_by_type(torch):
    assert _outputs.adapter_of(torch.zeros(2)).name == "torch"
    assert _outputs.adapter_of(torch.uint8, "dtype").name == "torch" and _outputs.dtype_name(torch.uint16) == "uint16"
    assert _outputs.adapter_of(torch.Generator(), "generator").name == "torch"
    assert _outputs.batch_of_one(torch.zeros(3, 2)).shape == (1, 3, 2)
    assert _outputs.nchw(torch.zeros(1, 4, 5, 3)).shape == (1, 3, 4, 5)


# ---- jax ----------------------------------------------------------------------------------------------

def test_from_host_jax_and_jax_inputs():
    jnp = pytest.importorskip("jax.numpy")
    _, view = _grid("f", (2, 3))
    data = _outputs.from_host(view, "jax")
    assert "jax" in type(data).__module__ and np.asarray(data).tolist() == [[0, 1, 2], [3, 4, 5]]
    memory = _outputs.describe(jnp.arange(6, dtype=jnp.int32).reshape(2, 3), writable=False)
    assert memory.dtype == "int32" and memory.shape == (2, 3) and memory.strides == (12, 4)
    with pytest.raises(TypeError, match="jax arrays are immutable"):
        _outputs.describe(jnp.zeros(2))


def test_out_under_the_jax_bridge_is_filled_and_returned(h264):
    pytest.importorskip("jax")
    from torchcodec.decoders import VideoDecoder
    out = np.zeros((1, 240, 320, 3), np.uint8)
    with torchcodec.bridge("jax"):
        batch = VideoDecoder(h264, dimension_order="NHWC").get_frames_at([3], out=out)
    assert batch.data is out and out.any()


def _has(name: str) -> bool:
    import importlib.util
    return importlib.util.find_spec(name) is not None
