"""The one compiled piece: the columnar event scanner (traceanalyze/load/_scan.c). It is optional:
without a C compiler the package installs without it and loads traces with msgspec alone."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "traceanalyze.load._scan",
            sources=["traceanalyze/load/_scan.c"],
            extra_compile_args=["-O3", "-std=c99", "-Wall", "-Wno-unused-function"],
            optional=True,
        )
    ]
)
