"""The allocator settings of `traceanalyze.allocator`: set before polars loads, never over a user's."""

from __future__ import annotations

import os
import subprocess
import sys

from traceanalyze import allocator

SHOW = "import os, traceanalyze.cli; print(os.environ.get('_RJEM_MALLOC_CONF'))"


def run(env: dict[str, str]) -> str:
    return subprocess.run([sys.executable, "-c", SHOW], env=env, capture_output=True, text=True, check=True).stdout.strip()


def test_jemalloc_decay_set_when_the_command_line_loads_polars():
    """polars puts its own defaults first; jemalloc takes the last value of each option: ours."""
    env = {k: v for k, v in os.environ.items() if k != "_RJEM_MALLOC_CONF"}
    assert run(env).endswith("," + allocator.JEMALLOC_CONF)


def test_a_setting_in_the_environment_wins():
    assert run({**os.environ, "_RJEM_MALLOC_CONF": "dirty_decay_ms:0"}).endswith(",dirty_decay_ms:0")


def test_nothing_set_once_polars_is_loaded():
    code = "import os, polars, traceanalyze.cli; print(os.environ.get('_RJEM_MALLOC_CONF'))"
    env = {k: v for k, v in os.environ.items() if k != "_RJEM_MALLOC_CONF"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout.strip()
    assert allocator.JEMALLOC_CONF not in out  # too late to matter: polars' allocator has read its settings


def test_returning_freed_memory_is_harmless():
    allocator.return_freed_memory()  # glibc: malloc_trim; elsewhere nothing; never raises
    assert allocator.JEMALLOC_CONF.startswith("dirty_decay_ms:")


def test_importing_the_library_sets_nothing():
    """`import traceanalyze` (and loading a trace through the API) leaves the environment alone:
    only the command line, whose process is ours, sets the allocator."""
    code = ("import os, traceanalyze; from traceanalyze import load_trace, Trace; "
            "print(os.environ.get('_RJEM_MALLOC_CONF'))")
    env = {k: v for k, v in os.environ.items() if k != "_RJEM_MALLOC_CONF"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout.strip()
    assert allocator.JEMALLOC_CONF not in out  # (polars writes its own defaults there when it loads)
