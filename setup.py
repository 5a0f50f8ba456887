"""The one compiled piece: the loader's helpers in C (traceanalyze/load/_native.c: the columnar event
scanner and the op nesting). It is optional:
without a C compiler the package installs without it and loads traces with msgspec alone."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "traceanalyze.load._native",
            sources=["traceanalyze/load/_native.c"],
            extra_compile_args=["-O3", "-std=c99", "-Wall", "-Wno-unused-function"],
            optional=True,
        )
    ]
)
