"""How the process hands memory back, set before the tables are built.

Loading a large trace frees a great deal as it goes (each chunk's scanned columns, the chunks of a
table once they are joined, unsorted copies). Left to their defaults, the allocators keep those
pages: polars' jemalloc for 0.5 s and then, lazily freed, 1 s more; glibc's per-thread arenas
until trimmed. The resident size
then stays near the most ever allocated, not what is in use. These settings hand the pages back
sooner; they change no result.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import sys

# polars' jemalloc reads this once, when polars is first imported. polars' own defaults
# (dirty_decay_ms:500,muzzy_decay_ms:1000, built with background_thread:true) come first and the
# last value of an option wins: freed pages go back after 0.3 s, and straight away rather than
# first "muzzy" (lazily freed pages still count as resident until the kernel needs them). The
# threads that free pages hand them back themselves, as they allocate, instead of a background
# thread that wakes at most every 0.1 s and, on a few busy cores, later: 1 GB a100 traces peaked
# 585-599 instead of 622-633 MB (median of three runs), for 0.2-0.3 s more; in a slower hour, when
# the thread kept up, both peaked alike in the same time (docs/performance.md#decisions-and-why).
# A value set in the environment wins over this.
JEMALLOC_CONF = "dirty_decay_ms:300,muzzy_decay_ms:0,background_thread:false"
# jemalloc gives threads arenas of their own (four per core by default): the pages one thread frees
# wait there for that thread, while the next one (a decoding thread, an analysis thread, polars'
# own pool) takes fresh pages. On a few cores one arena serves them all: `report --format json`
# of the 1 GB traces on 2 cores peaked 20-60 MB lower in the same or less time (a100-nccl 742-756
# MB against 800-806, three runs each). With more cores, the threads contending for one arena
# were not measured: jemalloc's default stays there.
ONE_ARENA_MAX_CORES = 4


# glibc gives each thread that allocates its own arena, whose freed top (up to 64 MB each, the
# loader's 16 MB blocks and texts) malloc_trim does not hand back; one arena, the main one, it
# does. The decoding threads allocate little through glibc (polars uses jemalloc), so they do not
# wait on each other for it (1 GB traces: the same CPU time, up to 110 MB less after loading).
GLIBC_ARENAS = 1
M_ARENA_MAX = -8  # mallopt's parameter number (malloc.h)


def jemalloc_conf(cores: int) -> str:
    """The jemalloc settings for a process that may use `cores` cores (`JEMALLOC_CONF`, and one
    arena up to `ONE_ARENA_MAX_CORES`)."""
    return JEMALLOC_CONF + (",narenas:1" if cores <= ONE_ARENA_MAX_CORES else "")


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the platform tells it)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def configure_before_polars() -> None:
    """The jemalloc settings above (`jemalloc_conf`), unless polars is already imported or the
    variable is set; and glibc's arenas (`GLIBC_ARENAS`), unless MALLOC_ARENA_MAX is set."""
    if "polars" not in sys.modules:
        os.environ.setdefault("_RJEM_MALLOC_CONF", jemalloc_conf(usable_cores()))
    if "MALLOC_ARENA_MAX" not in os.environ and _decodes_in_c():
        _glibc_call("mallopt", M_ARENA_MAX, GLIBC_ARENAS)


def _decodes_in_c() -> bool:
    """Whether the compiled scanner will decode traces: the one-arena setting is measured for it.
    Without it, the msgspec fallback builds Python objects in several threads, and one arena then
    fragments (a gzip bomb of repeated events peaked at 567 MB instead of under 500 MB)."""
    if os.environ.get("TRACEANALYZE_NO_NATIVE", "") not in ("", "0"):
        return False
    try:
        return importlib.util.find_spec("traceanalyze._native") is not None
    except (ImportError, ValueError):
        return False


def return_freed_memory() -> None:
    """Give the pages glibc keeps in its arenas back to the system (glibc only; else nothing)."""
    _glibc_call("malloc_trim", 0)


def _glibc_call(name: str, *arguments: int) -> None:
    """glibc's `name(*arguments)` on Linux; nothing elsewhere or without glibc (musl has neither
    malloc_trim nor these mallopt parameters)."""
    if not sys.platform.startswith("linux"):
        return
    libc = _libc()
    try:
        getattr(libc, name)(*arguments)
    except AttributeError:  # not glibc
        pass


@functools.cache
def _libc():
    """The C library, opened once: by glibc's name, else as `ctypes.util` finds it (which runs
    `ldconfig`: 8 ms of every start, for a name glibc always has)."""
    import ctypes

    try:
        return ctypes.CDLL("libc.so.6")
    except OSError:
        pass
    import ctypes.util

    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name) if name else None
    except OSError:
        return None
