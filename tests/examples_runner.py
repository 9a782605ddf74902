"""Running and importing the programs of examples/ from the tests."""
from __future__ import annotations

import pathlib
import subprocess
import sys
from typing import Optional

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def run_example(name: str, *args: str, cwd: Optional[pathlib.Path] = None, timeout: float = 300) -> list[str]:
    """Run ``examples/<name>`` with ``args`` in this Python (``-P``); return its stdout's lines."""
    result = subprocess.run([sys.executable, "-P", str(EXAMPLES / name), *args], capture_output=True, text=True,
                            timeout=timeout, cwd=cwd)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def import_example(name: str):
    """Import ``examples/<name>.py`` as the module ``name``."""
    sys.path.insert(0, str(EXAMPLES))
    try:
        return __import__(name)
    finally:
        sys.path.remove(str(EXAMPLES))
