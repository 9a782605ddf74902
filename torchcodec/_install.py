"""Checks made once at import, so that a broken installation says what is wrong and what to do.

- Another distribution installed files into the same ``torchcodec/`` folder (Meta's TorchCodec is
  distributed as ``torchcodec``; so was this package before 0.17): a warning naming it.
- The source tree is imported instead of the installed package (``python`` started in the
  repository's root): an ImportError saying so, instead of "No module named 'torchcodec._core._audio'".
- FFmpeg's shared libraries cannot be loaded: an ImportError naming the library, where the loader
  looked, what was found instead and what to install.

Only the standard library is used, and nothing is read unless it could be a problem: the foreign
distribution check lists one directory and reads the RECORD of distributions named like torchcodec.
"""
from __future__ import annotations

import glob
import os
import re
import sys
import warnings
from collections.abc import Iterable, Mapping
from typing import Optional

DISTRIBUTION = "torchcodec-cython"
"""This package's distribution name (``pip install torchcodec-cython``); it imports as ``torchcodec``."""

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))

# The major version of each FFmpeg library's shared object, per FFmpeg release (Debian names the
# runtime packages after them: libavformat59).
_FFMPEG_MAJORS = {
    "4": {"libavutil": 56, "libavcodec": 58, "libavformat": 58, "libswscale": 5, "libswresample": 3},
    "5": {"libavutil": 57, "libavcodec": 59, "libavformat": 59, "libswscale": 6, "libswresample": 4},
    "6": {"libavutil": 58, "libavcodec": 60, "libavformat": 60, "libswscale": 7, "libswresample": 4},
    "7": {"libavutil": 59, "libavcodec": 61, "libavformat": 61, "libswscale": 8, "libswresample": 5},
    "8": {"libavutil": 60, "libavcodec": 62, "libavformat": 62, "libswscale": 9, "libswresample": 6},
}
_LOADER_ERROR = re.compile(r"(?P<library>lib(?:avutil|avcodec|avformat|swscale|swresample|avfilter|avdevice|postproc))"
                           r"\.(?:so\.(?P<major>\d+)|(?P<dylib_major>\d+)\.dylib)")


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def foreign_distributions(package_dir: str = _PACKAGE_DIR) -> list[tuple[str, str]]:
    """(name, version) of each distribution other than this one that installed files into
    ``package_dir``, as recorded in the ``*.dist-info`` folders beside it. Only distributions whose
    name contains "torchcodec" are read (Meta's ``torchcodec``, this package's own releases before
    it was renamed, forks), which keeps the check to one directory listing when there is none."""
    from importlib import metadata

    site_dir, package = os.path.split(os.path.abspath(package_dir))
    try:
        entries = os.listdir(site_dir)
    except OSError:
        return []
    ours = _normalize(DISTRIBUTION)
    found = []
    for entry in sorted(entries):
        stem, extension = os.path.splitext(entry)
        if extension != ".dist-info" or "torchcodec" not in _normalize(stem):
            continue
        if _normalize(stem.split("-")[0]) == ours:
            continue
        distribution = metadata.Distribution.at(os.path.join(site_dir, entry))
        files = distribution.files or []
        if any(file.parts and file.parts[0] == package for file in files):
            found.append((distribution.metadata["Name"] or stem.split("-")[0], distribution.version or "?"))
    return found


def foreign_distribution_warning(found: Iterable[tuple[str, str]], package_dir: str = _PACKAGE_DIR) -> Optional[str]:
    """The warning about ``found`` (from ``foreign_distributions``), or None when it is empty."""
    found = list(found)
    if not found:
        return None
    names = ", ".join(f"{name} {version}" for name, version in found)
    uninstall = " ".join(name for name, _ in found)
    return (f"{package_dir} also holds files installed by another distribution ({names}): it shares the import "
            f"name 'torchcodec' with this package ({DISTRIBUTION}), and their files are now mixed, so either "
            f"may misbehave. Meta's TorchCodec is distributed as 'torchcodec' (so was this package before "
            f"0.17). Keep one: pip uninstall -y {uninstall} {DISTRIBUTION} && pip install {DISTRIBUTION} "
            f"(or install them into separate virtual environments).")


def _installed_elsewhere() -> Optional[str]:
    """Where an installed torchcodec is, when the one being imported is the source tree."""
    from importlib.machinery import PathFinder

    cwd = os.getcwd()
    paths = [p for p in sys.path if os.path.abspath(p or cwd) != os.path.dirname(_PACKAGE_DIR)]
    spec = PathFinder.find_spec("torchcodec", paths)
    if spec is None or not spec.submodule_search_locations:
        return None
    return list(spec.submodule_search_locations)[0]


def source_tree_message(missing_module: str, package_dir: str = _PACKAGE_DIR) -> str:
    """What to say when ``missing_module`` (a compiled module) is absent because ``package_dir``
    is the source tree."""
    elsewhere = _installed_elsewhere()
    found = f" The installed package is at {elsewhere}." if elsewhere else ""
    return (f"'import torchcodec' found the source tree at {package_dir}, which has no compiled modules "
            f"(No module named {missing_module!r}), ahead of the installed package: Python puts the current "
            f"directory first on sys.path.{found} Run Python from another directory, or with 'python -P' "
            f"(Python 3.11+), or install the source tree in place: pip install --no-build-isolation -e .")


def _search_directories(environ: Mapping[str, str]) -> list[str]:
    """The directories the dynamic loader searches, in its order (LD_LIBRARY_PATH, then the
    directories of /etc/ld.so.conf, then the defaults); RUNPATHs apart."""
    directories = [d for d in environ.get("LD_LIBRARY_PATH", "").split(":") if d]
    conf_files = ["/etc/ld.so.conf"]
    while conf_files:
        try:
            with open(conf_files.pop(0)) as conf:
                lines = conf.read().splitlines()
        except OSError:
            continue
        for line in lines:
            line = line.split("#")[0].strip()
            if line.startswith("include "):
                conf_files.extend(sorted(glob.glob(line.split(None, 1)[1])))
            elif line:
                directories.append(line)
    directories += ["/lib", "/usr/lib", "/lib64", "/usr/lib64"]
    prefix = environ.get("CONDA_PREFIX")
    if prefix:
        directories.append(os.path.join(prefix, "lib"))
    unique = []
    for directory in directories:
        if directory not in unique:
            unique.append(directory)
    return unique


def ffmpeg_load_message(error_text: str, environ: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """What to say when loading a compiled module failed with ``error_text`` (the dynamic
    loader's message) because an FFmpeg library is missing; None when it is not about FFmpeg."""
    match = _LOADER_ERROR.search(error_text)
    if match is None:
        return None
    environ = os.environ if environ is None else environ
    library = match["library"]
    major = int(match["major"] or match["dylib_major"])
    soname = match.group(0)
    releases = [release for release, majors in _FFMPEG_MAJORS.items() if majors.get(library) == major]
    wanted = (f"FFmpeg {' or '.join(releases)}" if releases
              else f"the FFmpeg whose {library} has major version {major}")
    directories = _search_directories(environ)
    found, seen = [], set()
    for directory in directories:
        for path in sorted(glob.glob(os.path.join(directory, library + ".so.*"))):
            real = os.path.realpath(path)
            if re.fullmatch(re.escape(library) + r"\.so\.\d+", os.path.basename(path)) and real not in seen:
                seen.add(real)
                found.append(path)
    same = [path for path in found if os.path.basename(path) == soname]
    others = [path for path in found if os.path.basename(path) != soname]
    instead = ""
    if same:
        instead += (f" Present but not loadable: {', '.join(same)} (the loader's message says why: a damaged "
                    f"file, another architecture, or a library it needs is missing).")
    if others:
        instead += (f" Found instead: {', '.join(others)}: another FFmpeg than the one this torchcodec was built "
                    f"against. Install {wanted}'s libraries, or build torchcodec against the FFmpeg you have: "
                    f"pip install --no-binary {DISTRIBUTION} --force-reinstall {DISTRIBUTION}.")
    if not found:
        instead = f" No {library} was found there."
    ld_library_path = environ.get("LD_LIBRARY_PATH") or "(unset)"
    if releases:
        apt = " ".join(f"{name}{number}" for name, number in _FFMPEG_MAJORS[releases[-1]].items())
        conda = f"'ffmpeg={releases[-1]}'"
    else:
        apt, conda = "libavformat-dev libavcodec-dev libavutil-dev libswscale-dev libswresample-dev", "ffmpeg"
    return (f"torchcodec could not load FFmpeg's library {soname} ({wanted}): {error_text.strip()}. The loader "
            f"looked in LD_LIBRARY_PATH={ld_library_path}, the directories of /etc/ld.so.conf and the system's "
            f"({', '.join(directories)}).{instead} To install {wanted}: on Debian/Ubuntu, apt-get install {apt} "
            f"(or the -dev packages, which pull them in); with conda, conda install -c conda-forge "
            f"{conda}; else add the folder holding {soname} to LD_LIBRARY_PATH.")


def check() -> None:
    """Run at the start of ``import torchcodec``: warn about mixed installations, and turn a
    failure to load the compiled modules into an ImportError that says why."""
    message = foreign_distribution_warning(foreign_distributions())
    if message:
        warnings.warn(message, RuntimeWarning, stacklevel=3)
    try:
        # Between them these need all of FFmpeg's libraries that the package links.
        import torchcodec._core._info  # noqa: F401
        import torchcodec._core._resampler  # noqa: F401
    except ModuleNotFoundError as error:
        name = error.name or ""
        source = os.path.join(_PACKAGE_DIR, *name.split(".")[1:]) + ".pyx"
        if name.startswith("torchcodec.") and os.path.exists(source):
            raise ImportError(source_tree_message(name)) from None
        raise
    except ImportError as error:
        message = ffmpeg_load_message(str(error))
        if message is None:
            raise
        raise ImportError(message) from error
