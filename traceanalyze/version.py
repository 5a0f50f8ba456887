"""The package's version (pyproject.toml's `version`): a leaf, so that the renderers that print it
need not import the package's public facade (`traceanalyze/__init__.py`), which sits above them."""

__version__ = "0.1.0"
