"""Finding libnvjpeg at run time (torchcodec._cuda._nvjpeg), without a GPU: stub libraries
(tests/cuda_stubs/libnvjpeg_stub.c) laid out as the nvidia-nvjpeg wheels and a CUDA toolkit lay
theirs, found through sys.path (PYTHONPATH) and CUDA_HOME by a subprocess whose libcuda.so.1 is the
stub driver (CUDA 12.4, tests/cuda_stubs/libcuda_stub.c). Checked: where the library is taken from,
the majors the driver is too old for, the message that lists every place looked in, a library
lacking a function, the environment variable, and the gate's reason without a driver.
"""
from __future__ import annotations

import ctypes
import pathlib
import shutil
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "cuda_stubs"))
from stub_build import CC, build_nvjpeg_stub, build_stub, run_python  # noqa: E402


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    from torchcodec._cuda import _build_config
    if not _build_config.CUDA_DRIVER:
        pytest.skip("this build has no CUDA driver loader")
    if CC is None:
        pytest.skip("no C compiler to build the stub libraries")
    root = tmp_path_factory.mktemp("nvjpeg_loader")
    build_stub(root / "driver", "libcuda.so.1", "libcuda_stub.c", "cuda_load_functions")
    made = build_nvjpeg_stub(root / "made")
    incomplete = build_nvjpeg_stub(root / "incomplete", defines=("STUB_WITHOUT_nvjpegEncodeRetrieveBitstream",))
    for folder, soname, source in (("cu12/nvidia/nvjpeg/lib", "libnvjpeg.so.12", made),
                                   ("cu13/nvidia/cu13/lib", "libnvjpeg.so.13", made),
                                   ("toolkit/lib64", "libnvjpeg.so.12", made),
                                   ("old/nvidia/nvjpeg/lib", "libnvjpeg.so.12", incomplete)):
        (root / folder).mkdir(parents=True)
        shutil.copy(source, root / folder / soname)
    (root / "empty").mkdir()
    return root


def loadable(*sonames: str) -> bool:
    """Whether this process's library path has one of ``sonames`` (a real library)."""
    for soname in sonames:
        try:
            ctypes.CDLL(soname)
            return True
        except OSError:
            pass
    return False


def real_nvjpeg_installed() -> bool:
    return loadable("libnvjpeg.so.13", "libnvjpeg.so.12", "libnvjpeg.so.11")


LOAD = """
import json
from torchcodec._cuda import _jpeg, _nvjpeg
out = {}
try:
    library = _nvjpeg.load_nvjpeg()
    out["path"], out["version"] = library.path, list(library.version)
except Exception as error:
    out["error"] = f"{type(error).__name__}: {error}"
out["reason"] = _jpeg.reason()
out["again"] = _jpeg.reason()
print(json.dumps(out))
"""


def load(root: pathlib.Path, site: str, **env: str) -> dict:
    env.setdefault("CUDA_HOME", str(root / "nowhere"))
    return run_python(LOAD, root / "driver", PYTHONPATH=str(root / site), **env)


def test_the_cu12_wheel_in_sys_path_is_found(root):
    out = load(root, "cu12")
    assert out["path"] == str(root / "cu12" / "nvidia" / "nvjpeg" / "lib" / "libnvjpeg.so.12")
    assert out["version"] == [12, 4, 0] and out["reason"] is None


def test_a_cuda_toolkit_named_by_cuda_home_is_found(root):
    out = load(root, "empty", CUDA_HOME=str(root / "toolkit"))
    assert out["path"] == str(root / "toolkit" / "lib64" / "libnvjpeg.so.12")


def test_a_major_version_newer_than_the_driver_is_skipped_and_said(root):
    if real_nvjpeg_installed():
        pytest.skip("a real libnvjpeg is on this machine's library path")
    out = load(root, "cu13")
    assert "error" in out
    assert "skipped libnvjpeg.so.13 needs a CUDA 13 driver (this one supports CUDA 12.4)" in out["error"]
    assert str(root / "cu13" / "nvidia" / "cu13" / "lib") not in out["error"]


def test_a_missing_library_names_every_place_looked_in(root):
    if real_nvjpeg_installed():
        pytest.skip("a real libnvjpeg is on this machine's library path")
    out = load(root, "empty", CUDA_HOME=str(root / "nowhere"))
    error = out["error"]
    assert error.startswith("CudaUnavailableError: nvJPEG's library (libnvjpeg.so.13, libnvjpeg.so.12, "
                            "libnvjpeg.so.11) could not be found: looked in ")
    for folder in (root / "empty" / "nvidia" / "nvjpeg" / "lib", root / "nowhere" / "lib64"):
        assert str(folder) in error
    assert "on the library path (LD_LIBRARY_PATH, /etc/ld.so.cache)" in error
    assert "pip install nvidia-nvjpeg-cu12" in error and "nvidia-nvjpeg (CUDA 13)" in error
    assert out["reason"] == out["again"] == error.split(": ", 1)[1]


def test_a_library_lacking_a_function_is_refused_with_its_name(root):
    out = load(root, "old")
    assert out["error"] == (f"CudaUnavailableError: {root}/old/nvidia/nvjpeg/lib/libnvjpeg.so.12 was opened but "
                            f"lacks nvjpegEncodeRetrieveBitstream, which torchcodec needs: this nvJPEG is too old "
                            f"(CUDA 11 or newer is needed)")


def test_the_environment_variable_names_the_one_library_to_use(root):
    chosen = root / "toolkit" / "lib64" / "libnvjpeg.so.12"
    assert load(root, "cu12", TORCHCODEC_NVJPEG_LIBRARY=str(chosen))["path"] == str(chosen)
    missing = load(root, "cu12", TORCHCODEC_NVJPEG_LIBRARY=str(root / "nope.so"))
    assert f"looked in {root}," in missing["error"]


def test_without_a_driver_the_gate_gives_the_drivers_reason(root):
    if loadable("libcuda.so.1"):
        pytest.skip("this machine has a real libcuda")
    out = run_python(LOAD, root / "empty", PYTHONPATH=str(root / "cu12"))
    assert "libcuda.so.1 could not be opened" in out["reason"]
    assert "libcuda.so.1 could not be opened" in out["error"]
