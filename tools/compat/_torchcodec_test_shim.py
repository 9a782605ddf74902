"""pytest plugin for tools/compat/run_torchcodec_tests.py: lets TorchCodec's test files import, and sorts outcomes.

Loaded with ``-p _torchcodec_test_shim`` before TorchCodec's conftest. It reads the ``torchcodec``
imports of every file in TorchCodec's test folder (``$TORCHCODEC_TEST_SHIM_TESTS``) and gives each
name this package lacks a stand-in: a class that raises ``NotInThisPackage`` (a BaseException, so
that no ``except Exception`` or ``pytest.raises(Exception)`` in a test can swallow it) as soon as
it is called. Missing modules become modules of such stand-ins.
Names this package has are left alone. Each test's outcome goes to ``$TORCHCODEC_TEST_SHIM_REPORT``
as JSON: passed, failed (with the message), skipped, or "needs a missing part" (with its name).

It is also imported at the start of the Python processes that those tests start themselves
(``_torchcodec_test_site/sitecustomize.py``), the test process included, so pytest must not try to
rewrite it: PYTEST_DONT_REWRITE.
"""
from __future__ import annotations

import ast
import importlib
import json
import os
import sys
import types
from pathlib import Path
from typing import Any

import pytest


class NotInThisPackage(BaseException):
    """A test used a part of TorchCodec that this package does not provide."""


class ImageDecoderNotInThisPackage(RuntimeError, NotInThisPackage):
    """What a missing image decoder raises when TorchCodec's ``utils.*_is_available`` probe calls it
    (while conftest collects): also a RuntimeError naming the image libraries, so that the probe
    says "not available" and the image tests are skipped; they are then reported as missing."""


class _Missing(type):
    """The type of stand-ins: calling one raises NotInThisPackage; its public attributes are stand-ins
    too (``ImageReadMode.RGB`` in a parametrize list must not stop collection), its private ones do
    not exist (pytest and mock look for some while collecting)."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if sys._getframe(1).f_code.co_name.endswith("_is_available"):
            raise ImageDecoderNotInThisPackage(f"{cls._missing_name} (libjpeg, libpng, libwebp, libavif, libheif)")
        raise NotInThisPackage(cls._missing_name)

    def __getattr__(cls, attribute: str) -> Any:
        if attribute.startswith("_"):
            raise AttributeError(attribute)
        return _stand_in(f"{cls._missing_name}.{attribute}")

    def _refuse(cls, *args: Any) -> Any:
        raise NotInThisPackage(cls._missing_name)

    __getitem__ = __iter__ = __len__ = __lt__ = __le__ = __gt__ = __ge__ = __contains__ = _refuse


def _stand_in(qualified_name: str) -> type:
    return _Missing(qualified_name.rsplit(".", 1)[-1], (), {"_missing_name": qualified_name})


class _MissingModule(types.ModuleType):
    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("__") or attribute == "_mock_name":
            raise AttributeError(attribute)
        return _stand_in(f"{self.__name__}.{attribute}")


def _module(name: str) -> types.ModuleType:
    """The module ``name``: ours when it exists, else a module of stand-ins (registered)."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError:
        parent_name, _, child = name.rpartition(".")
        module = _MissingModule(name)
        sys.modules[name] = module
        if parent_name:
            setattr(_module(parent_name), child, module)
        return module


def _install_stand_ins(test_dir: Path) -> None:
    for path in sorted(test_dir.glob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "torchcodec":
                module = _module(node.module)
                for alias in node.names:
                    if alias.name == "*" or hasattr(module, alias.name):
                        continue
                    try:
                        importlib.import_module(f"{node.module}.{alias.name}")
                    except ModuleNotFoundError:
                        setattr(module, alias.name, _stand_in(f"{node.module}.{alias.name}"))
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == "torchcodec":
                        _module(alias.name)
            elif isinstance(node, ast.Attribute) and _dotted(node).startswith("torchcodec."):
                _attribute_chain(_dotted(node))


def _dotted(node: ast.expr) -> str:
    """``a.b.c`` of an attribute chain on a name, else ""."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join([node.id, *reversed(parts)]) if isinstance(node, ast.Name) else ""


def _attribute_chain(dotted: str) -> None:
    """Make ``torchcodec.x.y`` resolvable: missing private submodules (``torchcodec._core._metadata``)
    become modules of stand-ins. Missing public names are left to fail, as they would for a user."""
    parts = dotted.split(".")
    obj: Any = _module("torchcodec")
    for depth in range(1, len(parts)):
        if not isinstance(obj, types.ModuleType):
            return
        name = parts[depth]
        if not hasattr(obj, name):
            try:
                importlib.import_module(".".join(parts[:depth + 1]))
            except ModuleNotFoundError:
                if not name.startswith("_"):
                    return
                setattr(obj, name, _module(".".join(parts[:depth + 1])))
        obj = getattr(obj, name)


# TorchCodec's development tests reach the building blocks by their pre-0.17 private names: the
# adapter gives them those names over this package's public 0.17 blocks.
import _torchcodec_blocks_adapter  # noqa: E402
sys.modules["torchcodec.decoders._blocks"] = _torchcodec_blocks_adapter
_install_stand_ins(Path(os.environ["TORCHCODEC_TEST_SHIM_TESTS"]))
_OUTCOMES: dict[str, dict[str, Any]] = {}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Any:
    outcome = yield
    report = outcome.get_result()
    if call.excinfo is None:
        return
    error = call.excinfo.value
    if isinstance(error, NotInThisPackage):
        report.user_properties.append(("missing", str(error)))
    elif isinstance(error, AttributeError) and (getattr(error, "name", None) or "").startswith("_"):
        # A private attribute of one of our objects (``decoder._get_key_frame_indices``): an
        # internal of TorchCodec's that its tests reach into, not public API.
        owner = getattr(error.obj, "__name__", None) or type(error.obj).__name__
        report.user_properties.append(("missing", f"private {owner}.{error.name}"))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    previous = _OUTCOMES.get(report.nodeid)
    if previous is not None and previous["kind"] != "passed":
        return                                  # the first problem of a test decides its outcome
    missing = dict(report.user_properties).get("missing")
    if missing is not None:
        entry = {"kind": "needs a missing part", "missing": missing if missing.startswith("private ") else _part(missing)}
    elif report.failed:
        entry = {"kind": "failed", "message": _message(report)}
    elif report.skipped and "support not available" in str(report.longrepr):
        entry = {"kind": "needs a missing part", "missing": "torchcodec.decoders image decoders"}
    elif report.skipped:
        entry = {"kind": "skipped", "reason": str(report.longrepr)[-200:]}
    else:
        entry = {"kind": "passed"}
    if report.when == "call" or entry["kind"] != "passed" or previous is None:
        _OUTCOMES[report.nodeid] = dict(entry, test=report.nodeid)


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if report.failed:
        _OUTCOMES[report.nodeid] = {"kind": "failed", "test": report.nodeid, "message": "collection: " + _message(report)}


def pytest_sessionfinish(session: pytest.Session) -> None:
    Path(os.environ["TORCHCODEC_TEST_SHIM_REPORT"]).write_text(json.dumps(list(_OUTCOMES.values())))


def _part(name: str) -> str:
    """The missing part a name belongs to: its module and first attribute (``torchcodec.encoders.VideoEncoder``)."""
    parts = name.split(".")
    for depth in range(len(parts), 0, -1):
        module = sys.modules.get(".".join(parts[:depth]))
        if module is not None:
            return ".".join(parts[:depth + 1])
    return name


def _message(report: Any) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None:
        return crash.message.splitlines()[0][:400] if crash.message else ""
    return str(report.longrepr).strip().splitlines()[-1][:400]
