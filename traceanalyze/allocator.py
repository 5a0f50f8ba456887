"""How the process hands memory back, set before the tables are built.

Loading a large trace frees a great deal as it goes (each chunk's scanned columns, the chunks of a
table once they are joined, unsorted copies). Left to their defaults, the allocators keep those
pages: polars' jemalloc for 0.5 s and then, lazily freed, 1 s more; glibc's per-thread arenas
until trimmed. The resident size
then stays near the most ever allocated, not what is in use. These settings hand the pages back
sooner; they change no result.
"""

from __future__ import annotations

import os
import sys

# polars' jemalloc reads this once, when polars is first imported. polars' own defaults
# (dirty_decay_ms:500,muzzy_decay_ms:1000) come first and the last value of an option wins: freed
# pages go back after 0.3 s, and straight away rather than first "muzzy" (lazily freed pages still
# count as resident until the kernel needs them). A value set in the environment wins over this.
JEMALLOC_CONF = "dirty_decay_ms:300,muzzy_decay_ms:0"


def configure_before_polars() -> None:
    """The jemalloc setting above, unless polars is already imported or the variable is set."""
    if "polars" not in sys.modules:
        os.environ.setdefault("_RJEM_MALLOC_CONF", JEMALLOC_CONF)


def return_freed_memory() -> None:
    """Give the pages glibc keeps in its arenas back to the system (glibc only; else nothing)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim(0)
    except (OSError, AttributeError):  # not glibc (musl has no malloc_trim)
        pass
