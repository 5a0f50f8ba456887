"""The one compiled piece, `traceanalyze._native`: traceanalyze/_native.c (the columnar event
scanner) and _native_ops.c (the op nesting, interval merging, enclosing-op walk). It is optional:
without a C compiler the package installs without it, loads traces with msgspec and runs the
polars versions of the others."""

import os

from setuptools import Extension, setup

# TRACEANALYZE_NO_NATIVE=1 installs without it (what a machine without a C compiler gets): CI tests
# the msgspec and polars fallbacks that way
SKIP_NATIVE = os.environ.get("TRACEANALYZE_NO_NATIVE", "") not in ("", "0")

setup(
    ext_modules=[] if SKIP_NATIVE else [
        Extension(
            "traceanalyze._native",
            sources=["traceanalyze/_native.c", "traceanalyze/_native_ops.c"],
            depends=["traceanalyze/_native.h"],
            extra_compile_args=["-O3", "-std=c99", "-Wall", "-Wno-unused-function"],
            optional=True,
        )
    ]
)
