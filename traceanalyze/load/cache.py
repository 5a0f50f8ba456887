"""A cache of loaded traces' tables, so that a second `report`, `gate`, `diff` or `annotate` of
the same file reads its tables instead of parsing its JSON again (docs/cache.md).

One entry per trace file and load options: the file's `Trace` (every polars frame as Arrow IPC,
its `RankMeta` as JSON) in one file of the cache folder (`cache_files.cache_directory`). An entry
is used only when everything it was made from still holds (`EntryKey`: the file's absolute path,
size, modification and change times, device and inode; our version, whose `fingerprint` changes
with any table schema; the load options that change the tables). Nothing read back is trusted: a
wrong magic, length, checksum (CRC-32 of the header and of every table), key, schema or row count
makes the entry a miss, and the trace is parsed and the entry written again.

The folder, the entry file's layout, atomic writes and the bound (least recently used entries go
first) are `cache_files`', shared with the cache of analysed ranks (`pipeline/results_cache.py`).
An entry (`cache_files.write_frames`): `MAGIC`, the tables one after another (Arrow IPC files,
`COMPRESSION`), the header (JSON `Header`: key, meta, each table's offset, length, rows and
CRC-32), then the trailer.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import logging
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

import msgspec
import polars as pl

from traceanalyze import cache_files, model
from traceanalyze.cache_files import FrameEntry
from traceanalyze.load.assemble import constants_as_scalars
from traceanalyze.model import RankMeta, Trace
from traceanalyze.version import __version__

log = logging.getLogger(__name__)

FORMAT = 1  # the entry layout below; bump it when the layout changes (table schemas are fingerprinted)
MAGIC = b"traceanalyze-tables\x00"
SUFFIX = ".tables"
COMPRESSION = "lz4"  # see docs/cache.md: as fast to read back as uncompressed, a fifth of the disk
MIN_TRACE_BYTES = 8 << 20  # smaller traces (uncompressed, about) parse about as fast as an entry reads back

# every table of a `Trace`, with the schema it must have when read back (`python` may be absent)
TABLE_SCHEMAS: dict[str, pl.Schema] = {
    "gpu": model.GPU_SCHEMA,
    "runtime": model.RUNTIME_SCHEMA,
    "cpu_ops": model.CPU_OPS_SCHEMA,
    "steps": model.STEPS_SCHEMA,
    "flows": model.FLOWS_SCHEMA,
    "sync": model.SYNC_SCHEMA,
    "devices": model.DEVICES_SCHEMA,
    "skipped": model.SKIPPED_SCHEMA,
    "python": model.PYTHON_SCHEMA,
}
_META_FIELDS = tuple(f.name for f in dataclasses.fields(RankMeta) if f.name != "source")


def fingerprint() -> str:
    """A digest of everything an entry's content depends on besides the file: every table's
    column names and types (enum categories included), `RankMeta`'s fields, `FORMAT`, the polars
    version that writes and reads the Arrow, and the code that makes the tables (`_loader_code`),
    so that any change to either makes older entries misses."""
    described: list[Any] = [FORMAT, pl.__version__, list(_META_FIELDS)]
    described += [[name, [[column, repr(dtype)] for column, dtype in schema.items()]]
                  for name, schema in TABLE_SCHEMAS.items()]
    return cache_files.files_digest(described, _loader_code())


def _loader_code() -> list[Path]:
    """The files whose content decides what a trace's tables hold: the loader, the model and the
    compiled scanner (its sources and its built module), and the entry file's layout."""
    package = Path(model.__file__).parent
    found = [
        *(package / "load").glob("*.py"),
        *(package / name for name in ("model.py", "fields.py", "native.py", "cache_files.py", "scalar_columns.py")),
        *package.glob("_native*"),
    ]
    return sorted(path for path in found if path.is_file())


@functools.cache
def cache_version() -> str:
    """Our version as the cache sees it: the package version and the `fingerprint`, computed once
    per process when the first trace worth caching is loaded (a millisecond or two: a command
    that caches nothing never pays it)."""
    return f"{__version__}+{fingerprint()}"


class EntryKey(msgspec.Struct, frozen=True):
    """What an entry was made from; the entry is used only when all of it is equal now."""

    path: str  # absolute, as given (links are not resolved: the stat below is of the file they lead to)
    size: int
    mtime_ns: int
    ctime_ns: int
    device: int
    inode: int
    version: str
    include_python: bool
    include_flows: bool

    def entry_name(self) -> str:
        """The entry's file name: one per path, version and options, so that a stale entry is
        replaced, not kept beside the new one."""
        named = msgspec.json.encode([self.path, self.version, self.include_python, self.include_flows])
        return hashlib.sha256(named).hexdigest()[:40] + SUFFIX


class Header(msgspec.Struct, frozen=True):
    key: EntryKey
    meta: list[dict[str, Any]]
    frames: list[FrameEntry]  # the tables


def entry_key(path: Path, *, include_python: bool, include_flows: bool,
              min_bytes: int | None = None) -> EntryKey | None:
    """The key of `path` now, or None when it is not to be cached: not a regular file (a pipe, a
    device), one we may not read (its tables are not served from the cache either), or smaller
    than `min_bytes` (default `MIN_TRACE_BYTES`; uncompressed, about: Kineto JSON gzips about
    tenfold)."""
    try:
        status = os.stat(path)
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(status.st_mode) or not os.access(path, os.R_OK):
        return None
    smallest = MIN_TRACE_BYTES if min_bytes is None else min_bytes
    if status.st_size * (10 if path.name.lower().endswith(".gz") else 1) < smallest:
        return None
    return EntryKey(path=os.path.abspath(path), size=status.st_size, mtime_ns=status.st_mtime_ns,
                    ctime_ns=status.st_ctime_ns, device=status.st_dev, inode=status.st_ino,
                    version=cache_version(), include_python=include_python, include_flows=include_flows)


def read_entry(directory: Path, key: EntryKey, source: Path) -> Trace | None:
    """The `Trace` the entry for `key` holds (its `source` set to `source`, the path as given
    now), or None when there is none, or it is stale, truncated or corrupt."""
    return cache_files.read_entry_file(directory, key.entry_name(), lambda handle: _read(handle, key, source))


def write_entry(directory: Path, key: EntryKey, trace: Trace, *, max_bytes: int | None = None) -> None:
    """Write the entry for `key` (whole or not at all), then evict the least recently used
    entries beyond the folder's bound. Any failure skips the cache (one debug line)."""
    meta = [_meta_fields(m) for m in trace.meta]
    try:
        survives = msgspec.json.decode(msgspec.json.encode(meta)) == meta
    except (TypeError, msgspec.MsgspecError):
        survives = False
    if not survives:
        log.debug("cache: %s not cached: its metadata does not survive JSON", key.path)
        return
    cache_files.write_entry_file(
        directory, key.entry_name(), max_bytes=max_bytes,
        write=lambda handle: cache_files.write_frames(handle, MAGIC, _tables(trace),
                                                      lambda frames: Header(key=key, meta=meta, frames=frames),
                                                      COMPRESSION))


def load_cached(path: Path, directory: Path | None, load: Callable[[], Trace], *, include_python: bool,
                include_flows: bool, max_events: int) -> Trace:
    """`load()` (the parse of `path`), or the cached tables of `path` when an entry matches; a
    parsed trace is cached (`lookup`, then `store`)."""
    cached, key = lookup(path, directory, include_python=include_python, include_flows=include_flows,
                         max_events=max_events)
    if cached is not None:
        return cached
    trace = load()
    store(path, directory, key, trace)
    return trace


def lookup(path: Path, directory: Path | None, *, include_python: bool, include_flows: bool,
           max_events: int) -> tuple[Trace | None, EntryKey | None]:
    """The cached `Trace` of `path` (None on a miss) and the key to `store` its parse under (None
    when it is not to be cached). An entry of more events than `max_events` (`LoadLimits.events`)
    is not used, so that the parse refuses the file as it would without a cache."""
    if directory is None:
        return None, None
    key = entry_key(path, include_python=include_python, include_flows=include_flows)
    cached = None if key is None else read_entry(directory, key, path)
    if cached is not None and any(m.event_count > max_events for m in cached.meta):
        cached = None
    return cached, key


def store(path: Path, directory: Path | None, key: EntryKey | None, trace: Trace) -> None:
    """Cache the parse of `path` under `key` (from `lookup`), unless the file changed while it
    was parsed."""
    if directory is None or key is None:
        return
    if entry_key(path, include_python=key.include_python, include_flows=key.include_flows) == key:
        write_entry(directory, key, trace)


def _meta_fields(meta: RankMeta) -> dict[str, Any]:
    return {name: getattr(meta, name) for name in _META_FIELDS}


def _tables(trace: Trace) -> dict[str, pl.DataFrame]:
    frames = {name: getattr(trace, name) for name in TABLE_SCHEMAS}
    return {name: frame for name, frame in frames.items() if frame is not None}


def _read(handle: BinaryIO, key: EntryKey, source: Path) -> Trace | None:
    header = cache_files.read_header(handle, MAGIC, Header)
    if header is None or header.key != key or len(header.meta) != 1:
        return None
    names = sorted(frame.name for frame in header.frames)
    if names not in (sorted(TABLE_SCHEMAS), sorted(name for name in TABLE_SCHEMAS if name != "python")):
        return None  # every table once, `python` optional
    if "python" not in names and key.include_python:
        return None
    frames = cache_files.read_frames(handle, header.frames, TABLE_SCHEMAS)
    if frames is None:
        return None
    frames = {name: constants_as_scalars(frame) for name, frame in frames.items()}  # as the parse leaves them
    meta = tuple(RankMeta(source=source, **fields) for fields in header.meta)
    return Trace(**frames, meta=meta)  # type: ignore[arg-type]
