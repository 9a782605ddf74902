"""The installed distribution: its name, version and licence metadata; the checks made at import
(another distribution's files mixed in, the source tree shadowing the package, FFmpeg missing);
the public API's annotations as mypy reads them."""
from __future__ import annotations

import ctypes
import os
import pathlib
import shutil
import subprocess
import sys
import textwrap
from importlib import metadata

import pytest

import torchcodec
from torchcodec import _install

REPO = pathlib.Path(__file__).resolve().parent.parent


def test_distribution_has_its_own_name_and_the_version_of_the_api_it_implements():
    distribution = metadata.distribution("torchcodec-cython")
    assert distribution.version == torchcodec.__version__
    major, minor, release = torchcodec.__version__.split(".")
    assert (major, minor) == ("0", "17"), "0.17.N: TorchCodec 0.17's API"
    assert release.isdigit()
    assert distribution.metadata["Name"] != "torchcodec", "that is Meta's TorchCodec on the indexes"


def test_license_metadata_follows_pep_639():
    distribution = metadata.distribution("torchcodec-cython")
    assert distribution.metadata["License-Expression"] == "BSD-3-Clause"
    assert distribution.metadata.get_all("License-File") == ["LICENSE"]
    assert distribution.metadata.get_all("License") is None, "the legacy field is replaced"
    shipped = distribution.read_text("licenses/LICENSE")
    assert shipped is not None and shipped.startswith("BSD 3-Clause License")
    assert shipped == (REPO / "LICENSE").read_text()
    classifiers = distribution.metadata.get_all("Classifier")
    assert "Typing :: Typed" in classifiers and not any(c.startswith("License ::") for c in classifiers)


def test_console_script_is_declared():
    scripts = metadata.distribution("torchcodec-cython").entry_points.select(group="console_scripts")
    assert [(s.name, s.value) for s in scripts] == [("torchcodec", "torchcodec._cli:main")]


def _fake_distribution(site: pathlib.Path, name: str, version: str, files: list[str]) -> None:
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    record = [f"{path},sha256=x,1" for path in files] + [f"{info.name}/RECORD,,"]
    (info / "RECORD").write_text("\n".join(record) + "\n")


def test_foreign_distributions_are_those_that_installed_files_into_the_package(tmp_path):
    package = tmp_path / "torchcodec"
    package.mkdir()
    _fake_distribution(tmp_path, "torchcodec-cython", "0.17.0", ["torchcodec/__init__.py"])   # ours
    _fake_distribution(tmp_path, "torchcodec", "0.17.1", ["torchcodec/__init__.py", "torchcodec/_core/ops.py"])
    _fake_distribution(tmp_path, "torchcodec-xpu", "0.17.0", ["torchcodec_xpu/__init__.py"])  # its own folder
    _fake_distribution(tmp_path, "numpy", "2.0.0", ["numpy/__init__.py"])
    found = _install.foreign_distributions(str(package))
    assert found == [("torchcodec", "0.17.1")]
    message = _install.foreign_distribution_warning(found, str(package))
    assert str(package) in message and "torchcodec 0.17.1" in message
    assert "pip uninstall -y torchcodec torchcodec-cython && pip install torchcodec-cython" in message
    assert _install.foreign_distributions(str(tmp_path / "elsewhere" / "torchcodec")) == []
    assert _install.foreign_distribution_warning([]) is None


def test_import_check_warns_about_a_foreign_distribution(monkeypatch):
    monkeypatch.setattr(_install, "foreign_distributions", lambda: [("torchcodec", "0.17.1")])
    with pytest.warns(RuntimeWarning, match="another distribution \\(torchcodec 0.17.1\\)"):
        _install.check()


def test_installed_package_has_no_foreign_distribution():
    assert _install.foreign_distributions() == []


def test_import_from_the_source_tree_says_so(tmp_path):
    """Python started in a source tree (no compiled modules there) imports it before the installed
    package: the error says what happened and what to do. -S keeps the installed package (and its
    editable-install hook) off the path, as if it were installed elsewhere."""
    source = tmp_path / "checkout"
    shutil.copytree(REPO / "torchcodec", source / "torchcodec",
                    ignore=shutil.ignore_patterns("*.so", "__pycache__", "_version.py", "_build_config.py"))
    result = subprocess.run([sys.executable, "-S", "-c", "import torchcodec"], cwd=source, capture_output=True,
                            text=True, env={**os.environ, "PYTHONPATH": ""})
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: 'import torchcodec' found the source tree at "
                           f"{source / 'torchcodec'}, which has no compiled modules")
    assert "No module named 'torchcodec._core." in last and "python -P" in last
    assert "pip install --no-build-isolation -e ." in last


def _loader_error(library: str, major: int) -> str:
    """The dynamic loader's own message for a shared object that is not there."""
    with pytest.raises(OSError) as error:
        ctypes.CDLL(f"{library}.so.{major}")
    return str(error.value)


def _loader_error_for(path: pathlib.Path) -> str:
    with pytest.raises(OSError) as error:
        ctypes.CDLL(str(path))
    return str(error.value)


def test_missing_ffmpeg_library_message_names_it_and_what_to_install(tmp_path):
    loaded = {int(v.split(".")[0]) for v in [torchcodec.ffmpeg_versions()["libavformat"]]}
    major = next(m for m in (58, 60, 61, 62) if m not in loaded)     # FFmpeg 4, 6, 7, 8
    text = _loader_error("libavformat", major)
    assert f"libavformat.so.{major}" in text
    (tmp_path / "libavformat.so.57").write_bytes(b"")
    message = _install.ffmpeg_load_message(text, {"LD_LIBRARY_PATH": str(tmp_path)})
    release = {58: "4", 60: "6", 61: "7", 62: "8"}[major]
    assert message.startswith(f"torchcodec could not load FFmpeg's library libavformat.so.{major} (FFmpeg {release})")
    assert f"LD_LIBRARY_PATH={tmp_path}" in message
    assert f"Found instead: {tmp_path / 'libavformat.so.57'}" in message
    assert f"libavformat{major} " in message, "Debian's runtime package of that release"
    assert f"conda install -c conda-forge 'ffmpeg={release}'" in message


def test_ffmpeg_library_that_is_there_but_cannot_be_loaded(tmp_path):
    (tmp_path / "libavformat.so.59").write_bytes(b"")       # what the loader says of an empty file
    text = _loader_error_for(tmp_path / "libavformat.so.59")
    message = _install.ffmpeg_load_message(text, {"LD_LIBRARY_PATH": str(tmp_path)})
    assert f"Present but not loadable: {tmp_path / 'libavformat.so.59'}" in message
    assert "file too short" in message, "the loader's own words are kept"
    assert f"Found instead: {tmp_path}" not in message


def test_missing_ffmpeg_library_message_when_none_is_found():
    message = _install.ffmpeg_load_message("libswresample.so.4: cannot open shared object file: No such file or "
                                           "directory", {"LD_LIBRARY_PATH": "/nonexistent"})
    assert "(FFmpeg 5 or 6)" in message, "libswresample 4 ships with both"
    assert "LD_LIBRARY_PATH=/nonexistent" in message
    assert _install.ffmpeg_load_message("libfoo.so.1: cannot open shared object file") is None


def test_mypy_accepts_the_documented_calls(tmp_path, monkeypatch):
    """mypy rejected decoder[0] when __getitem__ was annotated with numbers.Integral."""
    mypy = pytest.importorskip("mypy.api")
    (tmp_path / "use.py").write_text(textwrap.dedent("""
        from torchcodec import Frame, FrameBatch
        from torchcodec.decoders import AudioDecoder, VideoDecoder

        decoder = VideoDecoder("video.mp4", seek_mode="approximate")
        first = decoder[0]
        last = decoder[-1]
        some = decoder[1:3]
        frame: Frame = decoder.get_frame_at(0)
        pts: float = frame.pts_seconds + frame.duration_seconds
        batch: FrameBatch = decoder.get_frames_at([0, 1])
        n: int = len(decoder)
        width = decoder.metadata.width
        assert width is not None
        area: int = width * 2
        samples = AudioDecoder("song.mp3").get_all_samples()
        rate: int = samples.sample_rate
        reveal_type(decoder.get_frame_at(0))
    """))
    package_root = pathlib.Path(torchcodec.__file__).resolve().parent.parent
    args = [str(tmp_path / "use.py"), "--follow-imports=silent", "--ignore-missing-imports", "--no-incremental",
            "--cache-dir", str(tmp_path / "mypy-cache"), "--python-executable", sys.executable]
    if package_root.name not in ("site-packages", "dist-packages"):   # an editable install
        monkeypatch.setenv("MYPYPATH", str(package_root))
    stdout, stderr, status = mypy.run(args)
    assert status == 0, stdout + stderr
    assert 'Revealed type is "torchcodec._frame.Frame"' in stdout, "mypy found the package (not all Any)"
