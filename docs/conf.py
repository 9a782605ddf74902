"""Sphinx configuration of the torchcodec-cython documentation site (built by tools/build_docs.sh).

The user guide and the existing notes are Markdown (MyST-Parser); the API reference is generated
by autodoc + napoleon from the docstrings of the installed package, so build it with the
environment that has torchcodec installed (the source tree has no compiled modules).
"""
from __future__ import annotations

import torchcodec

project = "torchcodec-cython"
author = "the torchcodec-cython authors"
copyright = "the torchcodec-cython authors, BSD-3-Clause"
release = torchcodec.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]

myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3
# Pygments' meson lexer stumbles on `x[0]` in docs/cython_api.md's meson.build (it then highlights
# in relaxed mode): not a documentation error. Every other warning fails the build.
suppress_warnings = ["misc.highlighting_failure"]

autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": False}
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_typehints_format = "short"
autodoc_docstring_signature = True       # the Cython classes embed their signature (embedsignature=True)
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False
napoleon_use_ivar = True           # Attributes: sections as fields, not duplicates of autodoc's members

html_theme = "furo"
html_title = f"torchcodec-cython {release}"
html_static_path: list[str] = []
nitpicky = False
