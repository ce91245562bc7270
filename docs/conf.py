"""Sphinx configuration of the dpreg documentation site.

Build:  sphinx-build -W docs docs/_build   (CI does, warnings as errors)

The algorithm list and the config-key list are generated at build time from
the registry and from the config schema (their one source), never written
by hand.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from _generate import write_generated  # noqa: E402

import dpreg  # noqa: E402

project = "dpreg"
author = "The dpreg authors"
copyright = "2026, The dpreg authors"  # noqa: A001 (Sphinx's name)
release = dpreg.__version__
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build"]
myst_heading_anchors = 3
napoleon_numpy_docstring = True
napoleon_google_docstring = False
autodoc_default_options = {
    "members": True,
    "show-inheritance": False,
    # scikit-learn's generated metadata-routing and parameter methods
    "exclude-members": (
        "set_fit_request,set_predict_request,set_score_request,set_transform_request,"
        "set_output,get_metadata_routing"
    ),
}
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autosummary_generate = True
autosummary_imported_members = False
# numpydoc sections name types in prose ("array of shape (n, d)"): do not try to
# resolve every word as a cross-reference
nitpicky = False
suppress_warnings = ["ref.python", "myst.xref_missing", "autodoc.import_object"]
html_theme = "furo"
html_title = f"dpreg {release}"


# before autosummary reads the pages (it generates its stubs when the builder starts)
write_generated(HERE / "_generated", ROOT)
