"""Ways to damage a cache entry file (`cache_files`: magic, frames, header, trailer), for the tests
of both levels of the cache: each must make the entry a miss, recomputed and rewritten."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

Damage = Callable[[Path], None]


def _flip(offset_of: Callable[[int], int]) -> Damage:
    def damage(entry: Path) -> None:
        data = bytearray(entry.read_bytes())
        data[offset_of(len(data))] ^= 0xFF
        entry.write_bytes(bytes(data))
    return damage


def damages(magic: bytes) -> dict[str, Damage]:
    """Name → damage, for entries that begin and end with `magic`."""
    return {
        "emptied": lambda entry: entry.write_bytes(b""),
        "truncated by one byte": lambda entry: entry.write_bytes(entry.read_bytes()[:-1]),
        "truncated to half": lambda entry: entry.write_bytes(entry.read_bytes()[: entry.stat().st_size // 2]),
        "a byte of the first frame": _flip(lambda size: len(magic) + 200),
        "a byte of a later frame": _flip(lambda size: size // 2),
        "a byte of the last frame": _flip(lambda size: size - 4000),
        "a byte of the header": _flip(lambda size: size - len(magic) - 20),
        "a byte of the trailer": _flip(lambda size: size - len(magic) - 2),
        "garbage": lambda entry: entry.write_bytes(os.urandom(entry.stat().st_size)),
        "bytes appended": lambda entry: entry.write_bytes(entry.read_bytes() + b"\0" * 16),
    }
