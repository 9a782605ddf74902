"""tools/make_media.py (a script, not a package) loaded as the module ``make_media``."""
from __future__ import annotations

import importlib.util
import pathlib
import sys

TOOL = pathlib.Path(__file__).resolve().parent.parent / "tools" / "make_media.py"


def load(module_name: str = "make_media"):
    """Import tools/make_media.py under ``module_name`` (once)."""
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, TOOL)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # dataclasses look their module up while being created
    spec.loader.exec_module(module)
    return module


make_media = load()
