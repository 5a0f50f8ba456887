"""The one compiled piece: traceanalyze/_native.c (the columnar event scanner, the op nesting and
interval merging). It is optional: without a C compiler the package installs without it, loads
traces with msgspec and runs the polars versions of the others."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "traceanalyze._native",
            sources=["traceanalyze/_native.c"],
            extra_compile_args=["-O3", "-std=c99", "-Wall", "-Wno-unused-function"],
            optional=True,
        )
    ]
)
