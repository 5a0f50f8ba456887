"""A cache of loaded traces' tables, so that a second `report`, `gate`, `diff` or `annotate` of
the same file reads its tables instead of parsing its JSON again (docs/cache.md).

One entry per trace file and load options: the file's `Trace` (every polars frame as Arrow IPC,
its `RankMeta` as JSON) in one file of the cache folder (`cache_directory`). An entry is used only
when everything it was made from still holds (`EntryKey`: the file's absolute path, size,
modification and change times, device and inode; our version, whose `fingerprint` changes
with any table schema; the load options that change the tables). Nothing read back is trusted: a
wrong magic, length, checksum (CRC-32 of the header and of every table), key, schema or row count
makes the entry a miss, and the trace is parsed and the entry written again. Entries are written
to a temporary file and renamed into place, so none is ever half written; a cache folder that
cannot be made, read or written is skipped (one debug log line), never an error. The folder is
bounded (`MAX_TOTAL_BYTES`, `MAX_DISK_SHARE`): after each write the least recently used entries
go first.

Layout of an entry: `MAGIC`, the tables one after another (Arrow IPC files, `COMPRESSION`), the
header (JSON: key, meta, each table's offset, length, rows and CRC-32), then the trailer: the
header's length (8 bytes) and CRC-32 (4 bytes), little-endian, and `MAGIC` again.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import logging
import os
import shutil
import stat
import struct
import sys
import tempfile
import time
import zlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, BinaryIO, Union

import msgspec
import polars as pl

from traceanalyze.load.assemble import constants_as_scalars
from traceanalyze import model
from traceanalyze.model import RankMeta, Trace
from traceanalyze.version import __version__

log = logging.getLogger(__name__)

CacheSetting = Union[bool, str, "os.PathLike[str]"]  # True: the default folder; False: none; a path: that folder

ENVIRONMENT_VARIABLE = "TRACEANALYZE_CACHE_DIR"
FORMAT = 1  # the entry layout below; bump it when the layout changes (table schemas are fingerprinted)
MAGIC = b"traceanalyze-tables\x00"
SUFFIX = ".tables"
TEMPORARY_PREFIX = ".tmp-"
COMPRESSION = "lz4"  # see docs/cache.md: as fast to read back as uncompressed, a fifth of the disk
MAX_TOTAL_BYTES = 10 << 30  # the folder's bound …
MAX_DISK_SHARE = 0.25  # … and at most this share of its disk's free space (the cache's own entries counted as free)
MIN_TRACE_BYTES = 8 << 20  # smaller traces (uncompressed, about) parse about as fast as an entry reads back
STALE_TEMPORARY_SECONDS = 3600  # a temporary file this old was left by a writer that died
_TRAILER = struct.Struct("<QI")
_MAX_HEADER_BYTES = 64 << 20

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
    digest = hashlib.sha256(msgspec.json.encode(described))
    for code in _loader_code():
        with contextlib.suppress(OSError):
            digest.update(code.name.encode() + b"\0" + code.read_bytes())
    return digest.hexdigest()[:16]


def _loader_code() -> list[Path]:
    """The files whose content decides what a trace's tables hold: the loader, the model and the
    compiled scanner (its sources and its built module)."""
    package = Path(model.__file__).parent
    found = [*(package / "load").glob("*.py"), *(package / name for name in ("model.py", "fields.py", "native.py")),
             *package.glob("_native*")]
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


class TableEntry(msgspec.Struct, frozen=True):
    name: str
    offset: int
    length: int
    rows: int
    crc32: int


class Header(msgspec.Struct, frozen=True):
    key: EntryKey
    meta: list[dict[str, Any]]
    tables: list[TableEntry]


def default_directory(environ: Mapping[str, str], platform: str, home: Path) -> Path:
    """The cache folder: `$TRACEANALYZE_CACHE_DIR` when set, else the platform's convention:
    `%LOCALAPPDATA%\\traceanalyze\\Cache` on Windows, `~/Library/Caches/traceanalyze` on macOS,
    `$XDG_CACHE_HOME/traceanalyze` (default `~/.cache/traceanalyze`) elsewhere."""
    if environ.get(ENVIRONMENT_VARIABLE):
        return Path(environ[ENVIRONMENT_VARIABLE])
    if platform.startswith("win"):
        base = environ.get("LOCALAPPDATA")
        return (Path(base) if base else home / "AppData" / "Local") / "traceanalyze" / "Cache"
    if platform == "darwin":
        return home / "Library" / "Caches" / "traceanalyze"
    base = environ.get("XDG_CACHE_HOME")
    return (Path(base) if base and Path(base).is_absolute() else home / ".cache") / "traceanalyze"


def cache_directory(setting: CacheSetting) -> Path | None:
    """The folder a `cache=` setting names: None for False, the default folder for True."""
    if setting is False:
        return None
    if setting is True:
        try:
            home = Path.home()
        except (RuntimeError, KeyError):  # no home folder known
            home = Path(tempfile.gettempdir())
        return default_directory(os.environ, sys.platform, home)
    return Path(setting)


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
    entry = directory / key.entry_name()
    try:
        handle = open(entry, "rb")
    except OSError:  # none, or no folder we may read: a miss (writing it will say why, once)
        return None
    try:
        with handle:
            trace = _read(handle, key, source)
    except (Exception, pl.exceptions.PanicException) as error:  # noqa: BLE001 - whatever an entry holds, it is a miss
        log.debug("cache entry %s ignored: %s", entry, error)
        return None
    if trace is None:
        log.debug("cache entry %s ignored: stale or corrupt", entry)
        return None
    with contextlib.suppress(OSError):
        os.utime(entry)  # recently used: evicted last
    return trace


def write_entry(directory: Path, key: EntryKey, trace: Trace, *, max_bytes: int | None = None) -> None:
    """Write the entry for `key` (whole or not at all), then evict the least recently used
    entries beyond the folder's bound. Any failure skips the cache (one debug line)."""
    temporary: str | None = None
    try:
        meta = [_meta_fields(m) for m in trace.meta]
        if msgspec.json.decode(msgspec.json.encode(meta)) != meta:
            log.debug("cache: %s not cached: its metadata does not survive JSON", key.path)
            return
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(prefix=TEMPORARY_PREFIX, suffix=".part", dir=directory)
        with os.fdopen(descriptor, "wb") as handle:
            _write(handle, key, meta, trace)
        os.replace(temporary, directory / key.entry_name())  # replaces a link itself, never what it points to
        temporary = None
        evict(directory, max_bytes=max_bytes)
    except (Exception, pl.exceptions.PanicException) as error:  # noqa: BLE001 - an unwritable cache is no cache
        log.debug("cache: %s not cached in %s: %s", key.path, directory, error)
    finally:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)


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


def evict(directory: Path, *, max_bytes: int | None = None) -> None:
    """Remove the least recently used entries until the folder holds at most `max_bytes` (default
    `MAX_TOTAL_BYTES`) and at most `MAX_DISK_SHARE` of the free space of its disk (counting its own
    entries as free), and temporary files left by writers that died."""
    entries: list[tuple[float, int, Path]] = []
    now = time.time()
    with os.scandir(directory) as found:
        for item in found:
            with contextlib.suppress(OSError):
                status = item.stat(follow_symlinks=False)
                if not stat.S_ISREG(status.st_mode):
                    continue
                if item.name.startswith(TEMPORARY_PREFIX) and now - status.st_mtime > STALE_TEMPORARY_SECONDS:
                    os.unlink(item.path)
                elif item.name.endswith(SUFFIX):
                    entries.append((status.st_mtime, status.st_size, Path(item.path)))
    total = sum(size for _, size, _ in entries)
    bound = min(MAX_TOTAL_BYTES if max_bytes is None else max_bytes,
                int((shutil.disk_usage(directory).free + total) * MAX_DISK_SHARE))
    for _, size, entry in sorted(entries, key=lambda e: e[0]):
        if total <= bound:
            break
        with contextlib.suppress(OSError):
            os.unlink(entry)
            total -= size


def _meta_fields(meta: RankMeta) -> dict[str, Any]:
    return {name: getattr(meta, name) for name in _META_FIELDS}


class _Checksummed:
    """A writable file that counts and checksums what goes through it (polars writes Arrow to it)."""

    def __init__(self, handle: BinaryIO) -> None:
        self.handle, self.crc32, self.length = handle, 0, 0

    def write(self, data: bytes) -> int:
        self.crc32 = zlib.crc32(data, self.crc32)
        self.length += len(data)
        return self.handle.write(data)

    def flush(self) -> None:
        self.handle.flush()


def _tables(trace: Trace) -> dict[str, pl.DataFrame]:
    frames = {name: getattr(trace, name) for name in TABLE_SCHEMAS}
    return {name: frame for name, frame in frames.items() if frame is not None}


def _write(handle: BinaryIO, key: EntryKey, meta: list[dict[str, Any]], trace: Trace) -> None:
    handle.write(MAGIC)
    tables = []
    for name, frame in _tables(trace).items():
        sink = _Checksummed(handle)
        offset = handle.tell()
        # one record batch: read back, the frame is one chunk, as the parse made it
        frame.write_ipc(sink, compression=COMPRESSION, record_batch_size=max(1, frame.height))  # type: ignore[arg-type]
        tables.append(TableEntry(name=name, offset=offset, length=sink.length, rows=frame.height, crc32=sink.crc32))
    header = msgspec.json.encode(Header(key=key, meta=meta, tables=tables))
    handle.write(header)
    handle.write(_TRAILER.pack(len(header), zlib.crc32(header)))
    handle.write(MAGIC)


def _read(handle: BinaryIO, key: EntryKey, source: Path) -> Trace | None:
    size = os.fstat(handle.fileno()).st_size
    tail = _TRAILER.size + len(MAGIC)
    if size < len(MAGIC) + tail or handle.read(len(MAGIC)) != MAGIC:
        return None
    handle.seek(size - tail)
    header_length, header_crc = _TRAILER.unpack(handle.read(_TRAILER.size))
    if handle.read(len(MAGIC)) != MAGIC or header_length > min(_MAX_HEADER_BYTES, size - len(MAGIC) - tail):
        return None
    header_start = size - tail - header_length
    handle.seek(header_start)
    raw = handle.read(header_length)
    if zlib.crc32(raw) != header_crc:
        return None
    header = msgspec.json.decode(raw, type=Header)
    if header.key != key or len(header.meta) != 1 or not _laid_out(header.tables, header_start):
        return None
    frames: dict[str, pl.DataFrame] = {}
    for table in header.tables:
        handle.seek(table.offset)
        data = handle.read(table.length)
        if zlib.crc32(data) != table.crc32:
            return None
        frame = pl.read_ipc(data)
        del data
        if frame.schema != TABLE_SCHEMAS[table.name] or frame.height != table.rows:
            return None
        frames[table.name] = constants_as_scalars(frame)  # as the parse leaves them: once, not per row
    meta = tuple(RankMeta(source=source, **fields) for fields in header.meta)
    if "python" not in frames and key.include_python:
        return None
    return Trace(**frames, meta=meta)  # type: ignore[arg-type]


def _laid_out(tables: list[TableEntry], header_start: int) -> bool:
    """Every table once, `python` optional, back to back from `MAGIC` to the header."""
    names = [t.name for t in tables]
    required = [name for name in TABLE_SCHEMAS if name != "python"]
    if sorted(names) not in (sorted(required), sorted(TABLE_SCHEMAS)):
        return False
    position = len(MAGIC)
    for table in tables:
        if table.offset != position or table.length < 0 or table.rows < 0:
            return False
        position += table.length
    return position == header_start
