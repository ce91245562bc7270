"""The package version: written here only (pyproject.toml reads it as dpreg.__version__)."""

__version__ = "0.2.0"
