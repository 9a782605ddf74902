"""Build the stand-ins for libcuda.so.1 / libnvcuvid.so.1 that the CUDA tests run against.

``build_stub`` compiles the given sources (C with ``cc``, C++ with ``c++``) plus generated
stand-ins for every other symbol that ffnvcodec's loader requires (functions returning
CUDA_ERROR_NOT_SUPPORTED) into ``directory/soname``. ``run_python`` runs code in a subprocess
whose library path starts with that directory, so that the loader opens the stub.
"""
from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import sysconfig
import textwrap

STUBS = pathlib.Path(__file__).resolve().parent
REPO = STUBS.parent.parent
CC = shutil.which(os.environ.get("CC", "cc"))
CXX = shutil.which(os.environ.get("CXX", "c++"))


def ffnvcodec_cflags() -> list[str]:
    """pkg-config's compiler flags for ffnvcodec's headers ([] where pkg-config does not know it:
    then the compiler's own search path must have them, as with Debian's libffmpeg-nvenc-dev)."""
    if shutil.which("pkg-config") is None:
        return []
    result = subprocess.run(["pkg-config", "--cflags", "ffnvcodec"], capture_output=True, text=True)
    return result.stdout.split() if result.returncode == 0 else []


def loader_header() -> str:
    """The path of the ffnvcodec/dynlink_loader.h that the compiler finds."""
    result = subprocess.run([CC, *ffnvcodec_cflags(), "-M", "-x", "c", "-"], input="#include <ffnvcodec/dynlink_loader.h>\n",
                            capture_output=True, text=True, check=True)
    return next(path for path in result.stdout.replace("\\\n", " ").split() if path.endswith("dynlink_loader.h"))


def loader_symbols(function: str) -> list[str]:
    """The symbols that ffnvcodec's ``function`` (cuda_load_functions, ...) looks up."""
    text = pathlib.Path(loader_header()).read_text()
    body = text[text.index(f"static inline int {function}("):]
    body = body[:body.index("GENERIC_LOAD_FUNC_FINALE")]
    return re.findall(r'LOAD_SYMBOL(?:_OPT)?\(\w+, \w+, "(\w+)"\)', body)


def build_stub(directory: pathlib.Path, soname: str, sources: str | tuple[str, ...], loader_function: str,
               defines: tuple[str, ...] = (), omit: tuple[str, ...] = ()) -> pathlib.Path:
    """Compile ``sources`` (file names in tests/cuda_stubs) plus generated stand-ins for the loader's
    other symbols into directory/soname; ``omit`` leaves loader symbols out entirely (sources that
    define one guard it with ``#ifndef STUB_WITHOUT_<name>``)."""
    sources = (sources,) if isinstance(sources, str) else tuple(sources)
    directory.mkdir(parents=True, exist_ok=True)
    written = "\n".join((STUBS / source).read_text() for source in sources)
    generated = [f"int {name}(void) {{ return 801; }}  /* CUDA_ERROR_NOT_SUPPORTED */"
                 for name in dict.fromkeys(loader_symbols(loader_function))
                 if name not in omit and not re.search(rf"\b{name}\(", written)]
    rest = directory / "generated.c"
    rest.write_text("\n".join(generated) + "\n")
    flags = ["-fPIC", "-O1", "-I", str(REPO / "include"), *ffnvcodec_cflags(), *(f"-D{d}" for d in defines),
             *(f"-DSTUB_WITHOUT_{name}" for name in omit)]
    objects = []
    for source in (*sources, rest):
        path = STUBS / source if not isinstance(source, pathlib.Path) else source
        cxx = path.suffix == ".cpp"
        obj = directory / (path.stem + ".o")
        subprocess.run([CXX if cxx else CC, "-c", *flags, *(["-std=c++17"] if cxx else []), "-o", str(obj),
                        str(path)], check=True)
        objects.append(str(obj))
    linker = CXX if any(source.endswith(".cpp") for source in sources) else CC
    subprocess.run([linker, "-shared", "-o", str(directory / soname), f"-Wl,-soname,{soname}", *objects],
                   check=True)
    return directory


def build_emulating_libcuda(directory: pathlib.Path) -> pathlib.Path:
    """The stub libcuda.so.1 with kernel_emulation.cpp linked in (launches run kernels/*.cu on the CPU)."""
    return build_stub(directory, "libcuda.so.1", ("libcuda_stub.c", "kernel_emulation.cpp"), "cuda_load_functions")


def build_decoding_stubs(directory: pathlib.Path) -> pathlib.Path:
    """The stubs that CUDA decoding runs on end to end, in ``directory``: the emulating libcuda.so.1
    and the stub libnvcuvid.so.1. Skips the calling test when this build has no CUDA driver loader
    or kernels, or when no C/C++ compiler or pkg-config is there to build them (or test helpers)."""
    import pytest
    from torchcodec._cuda import _build_config
    if not (_build_config.CUDA_DRIVER and _build_config.CUDA_KERNELS):
        pytest.skip("this build has no CUDA driver loader or no kernels (-Dcuda=disabled, no ffnvcodec, no nvcc)")
    if CC is None or CXX is None or shutil.which("pkg-config") is None:
        pytest.skip("no C/C++ compiler or pkg-config to build the stub libraries")
    build_emulating_libcuda(directory)
    return build_stub(directory, "libnvcuvid.so.1", "libnvcuvid_stub.c", "cuvid_load_functions")


def build_converting_stub(directory: pathlib.Path) -> pathlib.Path:
    """The emulating libcuda.so.1 and the device_frames helper, in ``directory``: what the tests of
    the CUDA converter run against. Skips the calling test as build_decoding_stubs does."""
    import pytest
    from torchcodec._cuda import _build_config
    if not (_build_config.CUDA_DRIVER and _build_config.CUDA_KERNELS):
        pytest.skip("this build has no CUDA driver loader or no kernels (-Dcuda=disabled, no ffnvcodec, no nvcc)")
    if CC is None or CXX is None or shutil.which("pkg-config") is None:
        pytest.skip("no C/C++ compiler or pkg-config to build the stub library and the test helper")
    build_emulating_libcuda(directory)
    return build_helper("device_frames", directory)


# Python for the subprocesses of the stub tests: ``host(array)`` reads a DeviceBuffer (or any view
# of one) through its CUDA array interface, as host memory, which the stub's device memory is.
HOST_READ = """
def host(array):
    interface = array.__cuda_array_interface__
    itemsize = np.dtype(interface["typestr"]).itemsize
    shape, strides = interface["shape"], interface["strides"]
    if strides is None:
        strides = tuple(int(np.prod(shape[k + 1:], dtype=np.int64)) * itemsize for k in range(len(shape)))
    span = sum((n - 1) * s for n, s in zip(shape, strides)) + itemsize
    raw = np.frombuffer((ctypes.c_ubyte * span).from_address(interface["data"][0]), np.uint8)
    return np.lib.stride_tricks.as_strided(raw.view(interface["typestr"]), shape, strides).copy()
"""


FFMPEG_PACKAGES = ("libavformat", "libavcodec", "libavutil", "libswscale")


def build_helper(name: str, directory: pathlib.Path, folder: pathlib.Path = STUBS,
                 packages: tuple[str, ...] | None = None) -> pathlib.Path:
    """Compile the test helper <folder>/<name>.pyx (default: tests/cuda_stubs) into ``directory``
    against the installed package's .pxd files and headers (as a downstream extension would):
    Cython, then the C compiler with pkg-config's flags for ``packages`` (default: FFmpeg's, and
    ffnvcodec's when the helper includes its headers, as helpers that read the driver's tables do:
    the package's own .pxd files need no ffnvcodec). Import it with ``directory`` on sys.path.
    A failing step raises RuntimeError with its output."""
    import torchcodec
    directory.mkdir(parents=True, exist_ok=True)
    package_parent = pathlib.Path(torchcodec.__file__).resolve().parent.parent
    source = folder / f"{name}.pyx"
    if packages is None:
        packages = FFMPEG_PACKAGES + (("ffnvcodec",) if "ffnvcodec/" in source.read_text() else ())
    c_file = directory / f"{name}.c"
    _run([sys.executable, "-m", "cython", "-3", "-I", str(package_parent), "-o", str(c_file), str(source)])
    flags = _run(["pkg-config", "--cflags", "--libs", *packages]).split() if packages else []
    _run([CC, "-shared", "-fPIC", "-O1", "-I", torchcodec.get_include(), "-I", sysconfig.get_paths()["include"],
          str(c_file), *flags, "-o", str(directory / (name + sysconfig.get_config_var("EXT_SUFFIX")))])
    return directory


def _run(command: list) -> str:
    """Run a build command; its stdout, or RuntimeError with what it printed."""
    result = subprocess.run([str(part) for part in command], capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, command))} failed (exit {result.returncode}):\n"
                           f"{result.stdout[-4000:]}{result.stderr[-4000:]}")
    return result.stdout


def run_python(code: str, libdir: pathlib.Path, **env: str) -> dict:
    """Run ``code`` with libdir first on the library path; it prints one JSON object, returned here."""
    environ = dict(os.environ, **env)
    environ["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [str(libdir), os.environ.get("LD_LIBRARY_PATH")]))
    result = subprocess.run([sys.executable, "-P", "-c", textwrap.dedent(code)], env=environ, cwd=libdir,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"subprocess failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
    output = json.loads(result.stdout.strip().splitlines()[-1])
    output["stderr"] = result.stderr
    return output


def build_nvjpeg_stub(directory: pathlib.Path, soname: str = "libnvjpeg.so.12", defines: tuple[str, ...] = ()) -> pathlib.Path:
    """Compile tests/cuda_stubs/libnvjpeg_stub.c (nvJPEG's entry points over libjpeg-turbo) into
    directory/soname; returns the library's path. Skips the calling test without libturbojpeg."""
    import pytest
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "libturbojpeg"], capture_output=True, text=True)
    if CC is None or flags.returncode != 0:
        pytest.skip("no C compiler or no libturbojpeg (pkg-config) to build the stub libnvjpeg")
    directory.mkdir(parents=True, exist_ok=True)
    library = directory / soname
    subprocess.run([CC, "-shared", "-fPIC", "-O1", *(f"-D{d}" for d in defines), "-o", str(library),
                    f"-Wl,-soname,{soname}", str(STUBS / "libnvjpeg_stub.c"), *flags.stdout.split(), "-ldl"],
                   check=True)
    return library
