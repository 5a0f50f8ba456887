"""The cache folder and its entry files, shared by the two levels of the cache (docs/cache.md):
the loaded tables of a trace file (`load/cache.py`) and the analysed `RankReport` of one
(`pipeline/results_cache.py`).

- Where: `cache_directory` (`$TRACEANALYZE_CACHE_DIR`, else the platform's convention).
- Entry files of polars frames: `MAGIC` of the level, each frame as an Arrow IPC file (one record
  batch, so a frame comes back as one chunk), a JSON header (a `msgspec.Struct` of the level that
  lists the frames as `FrameEntry`s: offset, length, rows, CRC-32), then the trailer: the header's
  length (8 bytes) and CRC-32 (4 bytes), little-endian, and `MAGIC` again. `write_frames` and
  `read_header` / `read_frame`; nothing read back is trusted (magic, lengths, checksums, layout).
- Whole or not at all: `write_entry_file` writes to a temporary file in the folder and renames it
  into place (a link there is replaced, never written through), then `evict`s the least recently
  used entries of both levels beyond the folder's bound (`MAX_TOTAL_BYTES`, `MAX_DISK_SHARE`);
  `read_entry_file` counts a hit as a use. A folder that cannot be made, read or written is no
  cache: one debug line, never an error.
"""

from __future__ import annotations

import contextlib
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
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import BinaryIO, Protocol, TypeVar, Union

import msgspec
import polars as pl

log = logging.getLogger(__name__)

CacheSetting = Union[bool, str, "os.PathLike[str]"]  # True: the default folder; False: none; a path: that folder

ENVIRONMENT_VARIABLE = "TRACEANALYZE_CACHE_DIR"
ENTRY_SUFFIXES = (".tables", ".results")  # the entries of each level: the bound counts them all
TEMPORARY_PREFIX = ".tmp-"
MAX_TOTAL_BYTES = 10 << 30  # the folder's bound …
MAX_DISK_SHARE = 0.25  # … and at most this share of its disk's free space (the cache's own entries counted as free)
STALE_TEMPORARY_SECONDS = 3600  # a temporary file this old was left by a writer that died
_TRAILER = struct.Struct("<QI")
_MAX_HEADER_BYTES = 64 << 20

Read = TypeVar("Read")


class FrameEntry(msgspec.Struct, frozen=True):
    """Where one frame of an entry file lies, and what it must be."""

    name: str
    offset: int
    length: int
    rows: int
    crc32: int


class FramedHeader(Protocol):
    frames: list[FrameEntry]


Header = TypeVar("Header", bound=FramedHeader)


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


def files_digest(described: object, files: Iterable[Path]) -> str:
    """A digest of `described` (anything msgspec encodes) and of the name and content of each of
    `files` (one that cannot be read counts as absent): what a level's version is made of."""
    digest = hashlib.sha256(msgspec.json.encode(described))
    for path in files:
        with contextlib.suppress(OSError):
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def open_regular(path: Path) -> BinaryIO | None:
    """`path` opened for reading only when it is a regular file, else None. It is opened without
    blocking and without following a last link (`O_NONBLOCK | O_NOFOLLOW`), then checked with
    `fstat`: a FIFO someone put at an entry's path would block a plain `open` forever, a device
    would be read without end."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    try:
        descriptor = os.open(path, flags)
    except OSError:  # none, a link, or no folder we may read (writing it will say why, once)
        return None
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            os.close(descriptor)
            return None
        if hasattr(os, "set_blocking"):
            os.set_blocking(descriptor, True)
        return os.fdopen(descriptor, "rb")
    except OSError:
        os.close(descriptor)
        return None


def read_entry_file(directory: Path, name: str, read: Callable[[BinaryIO], Read | None]) -> Read | None:
    """`read(handle)` of the entry `name`, or None when there is none or `read` finds it stale or
    corrupt (returns None or raises anything: whatever an entry holds, it is a miss). A hit is
    recorded as the entry's latest use (evicted last)."""
    entry = directory / name
    handle = open_regular(entry)
    if handle is None:  # none, no folder we may read, or not a regular file: a miss
        return None
    try:
        with handle:
            found = read(handle)
    except (Exception, pl.exceptions.PanicException) as error:  # noqa: BLE001 - whatever an entry holds, it is a miss
        log.debug("cache entry %s ignored: %s", entry, error)
        return None
    if found is None:
        log.debug("cache entry %s ignored: stale or corrupt", entry)
        return None
    with contextlib.suppress(OSError):
        os.utime(entry)  # recently used: evicted last
    return found


def write_entry_file(directory: Path, name: str, write: Callable[[BinaryIO], None], *,
                     max_bytes: int | None = None) -> bool:
    """Write the entry `name` with `write(handle)` (whole or not at all), then evict the least
    recently used entries beyond the folder's bound. Any failure skips the cache (one debug line,
    False)."""
    temporary: str | None = None
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(prefix=TEMPORARY_PREFIX, suffix=".part", dir=directory)
        with os.fdopen(descriptor, "wb") as handle:
            write(handle)
        os.replace(temporary, directory / name)  # replaces a link itself, never what it points to
        temporary = None
        evict(directory, max_bytes=max_bytes)
        return True
    except (Exception, pl.exceptions.PanicException) as error:  # noqa: BLE001 - an unwritable cache is no cache
        log.debug("cache: %s not written in %s: %s", name, directory, error)
        return False
    finally:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)


def evict(directory: Path, *, max_bytes: int | None = None) -> None:
    """Remove the least recently used entries (of every level) until the folder holds at most
    `max_bytes` (default `MAX_TOTAL_BYTES`) and at most `MAX_DISK_SHARE` of the free space of its
    disk (counting its own entries as free), and temporary files left by writers that died."""
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
                elif item.name.endswith(ENTRY_SUFFIXES):
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


def write_frames(handle: BinaryIO, magic: bytes, frames: Mapping[str, pl.DataFrame],
                 header: Callable[[list[FrameEntry]], msgspec.Struct], compression: str) -> None:
    """An entry file: `magic`, each frame (Arrow IPC, `compression`), `header(frame entries)` as
    JSON, the trailer."""
    handle.write(magic)
    written = []
    for name, frame in frames.items():
        sink = _Checksummed(handle)
        offset = handle.tell()
        # one record batch: read back, the frame is one chunk, as it was made
        frame.write_ipc(sink, compression=compression, record_batch_size=max(1, frame.height))  # type: ignore[arg-type]
        written.append(FrameEntry(name=name, offset=offset, length=sink.length, rows=frame.height, crc32=sink.crc32))
    encoded = msgspec.json.encode(header(written))
    handle.write(encoded)
    handle.write(_TRAILER.pack(len(encoded), zlib.crc32(encoded)))
    handle.write(magic)


def read_header(handle: BinaryIO, magic: bytes, header_type: type[Header]) -> Header | None:
    """The header of an entry file, decoded as `header_type`, or None when the magic, the trailer,
    the header's checksum or the frames' layout (back to back from `magic` to the header, each
    name once) is wrong."""
    size = os.fstat(handle.fileno()).st_size
    tail = _TRAILER.size + len(magic)
    if size < len(magic) + tail or handle.read(len(magic)) != magic:
        return None
    handle.seek(size - tail)
    header_length, header_crc = _TRAILER.unpack(handle.read(_TRAILER.size))
    if handle.read(len(magic)) != magic or header_length > min(_MAX_HEADER_BYTES, size - len(magic) - tail):
        return None
    header_start = size - tail - header_length
    handle.seek(header_start)
    raw = handle.read(header_length)
    if zlib.crc32(raw) != header_crc:
        return None
    header = msgspec.json.decode(raw, type=header_type)
    position = len(magic)
    for frame in header.frames:
        if frame.offset != position or frame.length < 0 or frame.rows < 0:
            return None
        position += frame.length
    names = [frame.name for frame in header.frames]
    return header if position == header_start and len(set(names)) == len(names) else None


def read_frames(handle: BinaryIO, frames: list[FrameEntry],
                schemas: Mapping[str, pl.Schema]) -> dict[str, pl.DataFrame] | None:
    """Every frame of `frames` (`read_frame` against its schema in `schemas`) by name, or None
    when one is not what it must be."""
    found: dict[str, pl.DataFrame] = {}
    for frame in frames:
        read = read_frame(handle, frame, schemas[frame.name])
        if read is None:
            return None
        found[frame.name] = read
    return found


def read_frame(handle: BinaryIO, frame: FrameEntry, schema: pl.Schema) -> pl.DataFrame | None:
    """The frame `frame` locates, or None when its checksum, row count or `schema` (column names,
    order and types, enum categories included) is not what it must be."""
    handle.seek(frame.offset)
    data = handle.read(frame.length)
    if zlib.crc32(data) != frame.crc32:
        return None
    read = pl.read_ipc(data)
    del data
    return read if read.schema == schema and read.height == frame.rows else None
