"""Hostile inputs, each built small: bombs are streamed into gzip, never stored inflated.

Each case is `(name, build, expected, extra)`: `build(folder)` writes the input and returns its
path; `expected` is a fragment the one-line error must hold (or a tuple of alternatives); `extra`
are command-line options (a lowered limit, so that a small file can cross it)."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
from typing import Callable

EVENT = {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1.0, "dur": 2.0,
         "args": {"device": 0, "stream": 7, "correlation": 1}}
EVENT_TEXT = json.dumps(EVENT).encode()
DEEP = 100_000
MIB = 1 << 20


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def _trace(events: list[dict], **top) -> bytes:
    return json.dumps({"traceEvents": events, **top}).encode()


def _deep() -> bytes:
    return b"[" * DEEP + b"]" * DEEP


def deep_in(key: str, category: str = "cpu_op") -> Callable[[Path], Path]:
    def build(folder: Path) -> Path:
        event = json.dumps({"ph": "X", "cat": category, "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1,
                            "args": {key: 0}}).encode().replace(b"0}", b"%s}" % _deep(), 1)
        return _write(folder / f"deep_{key.replace(' ', '_')}.json", b'{"traceEvents": [%s]}' % event)
    return build


def deep_top(folder: Path) -> Path:
    return _write(folder / "deep_top.json", b'{"traceEvents": [%s], "extra": %s}' % (EVENT_TEXT, _deep()))


def bad_utf8(gzipped: bool) -> Callable[[Path], Path]:
    def build(folder: Path) -> Path:
        text = _trace([EVENT, {**EVENT, "name": "k\u00e9"}]).replace(b"k\\u00e9", b"k\xff")
        if gzipped:
            return _write(folder / "bad_utf8.json.gz", gzip.compress(text))
        return _write(folder / "bad_utf8.json", text)
    return build


def huge_rank(folder: Path) -> Path:
    return _write(folder / "huge_rank.json", _trace([EVENT], distributedInfo={"rank": 10**30, "world_size": 8}))


def whitespace_bomb(folder: Path) -> Path:
    """128 MB of whitespace inside `traceEvents` (about 130 KB gzipped)."""
    path = folder / "whitespace_bomb.json.gz"
    with gzip.open(path, "wb", compresslevel=9) as out:
        out.write(b'{"traceEvents": [%s,' % EVENT_TEXT)
        block = b" " * MIB
        for _ in range(128):
            out.write(block)
        out.write(b"%s]}" % EVENT_TEXT)
    return path


def event_bomb(folder: Path) -> Path:
    """Repeated valid events: 96 MB inflated from about 400 KB."""
    path = folder / "event_bomb.json.gz"
    block = b"%s," % EVENT_TEXT * (MIB // (len(EVENT_TEXT) + 1))
    with gzip.open(path, "wb", compresslevel=9) as out:
        out.write(b'{"traceEvents": [')
        for _ in range(96):
            out.write(block)
        out.write(b"%s]}" % EVENT_TEXT)
    return path


def gap_between_events(folder: Path, megabytes: int = 40) -> Path:
    """40 MB of whitespace between two events (gzipped: its inflation is checked apart)."""
    path = folder / "gap.json.gz"
    with gzip.open(path, "wb", compresslevel=1) as out:
        out.write(b'{"traceEvents": [%s,' % EVENT_TEXT)
        block = b"\n" * MIB
        for _ in range(megabytes):
            out.write(block)
        out.write(b"%s]}" % EVENT_TEXT)
    return path


def many_events(folder: Path) -> Path:
    return _write(folder / "many_events.json", _trace([{**EVENT, "ts": float(i)} for i in range(1000)]))


def nested_ops(depth: int) -> list[dict]:
    """`depth` CPU ops each inside the one before, then a kernel launched from the innermost."""
    ops = [{"ph": "X", "cat": "cpu_op", "name": f"op{i}", "pid": 1, "tid": 1, "ts": float(i),
            "dur": float(4 * depth - 2 * i),
            "args": {"External id": i}} for i in range(depth)]
    launch = {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": float(depth),
              "dur": 1.0, "args": {"correlation": 1}}
    return [*ops, launch, {**EVENT, "ts": float(depth + 2)}]


def deep_ops(folder: Path) -> Path:
    return _write(folder / "deep_ops.json", _trace(nested_ops(101)))


def device(name: str) -> Callable[[Path], Path]:
    return lambda folder: Path(name)


def fifo(folder: Path) -> Path:
    path = folder / "fifo.json"
    os.mkfifo(path)
    return path


def sparse_not_json(folder: Path) -> Path:
    """3 GB on paper, nothing on disk: must be refused from its first bytes."""
    path = folder / "sparse.json"
    with open(path, "wb") as out:
        out.truncate(3 << 30)
    return path


def sparse_after_brace(folder: Path) -> Path:
    path = folder / "sparse_brace.json"
    with open(path, "wb") as out:
        out.write(b'{"traceEvents": [')
        out.truncate(3 << 30)
    return path


def encoded(encoding: str, bom: bool = True) -> Callable[[Path], Path]:
    def build(folder: Path) -> Path:
        text = _trace([EVENT]).decode()
        data = text.encode(encoding) if bom else text.encode(encoding + "-le")
        return _write(folder / f"{encoding}{'' if bom else '_nobom'}.json", data)
    return build


def zip_archive(folder: Path) -> Path:
    """A trace zipped (as a chat or a ticket attaches it) but named .json.gz."""
    import zipfile

    path = folder / "zipped.json.gz"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("trace.json", _trace([EVENT]))
    return path


def whitespace_only(gzipped: bool) -> Callable[[Path], Path]:
    def build(folder: Path) -> Path:
        data = b" \n\t" * (1 << 18)
        if gzipped:
            return _write(folder / "blank.json.gz", gzip.compress(data))
        return _write(folder / "blank.json", data)
    return build


def symlink_loop(folder: Path) -> Path:
    path = folder / "loop.json"
    os.symlink(path.name, path)
    return path


CASES = [
    ("deep_args", deep_in("shapes"), "nested too deeply", ()),
    ("deep_input_dims", deep_in("Input Dims"), "nested too deeply", ()),
    ("deep_grid", deep_in("grid", "kernel"), "nested too deeply", ()),
    ("deep_top_level", deep_top, "nested too deeply", ()),
    ("invalid_utf8", bad_utf8(False), "invalid UTF-8", ()),
    ("invalid_utf8_gzip", bad_utf8(True), "invalid UTF-8", ()),
    ("huge_rank", huge_rank, "distributedInfo.rank", ()),
    ("whitespace_bomb", whitespace_bomb, "--max-inflation", ()),
    ("event_bomb", event_bomb, "--max-inflation", ()),
    ("gap_between_events", gap_between_events, "--max-event-mb", ("--max-event-mb", "16", "--max-inflation", "1e6")),
    ("too_many_events", many_events, "--max-events", ("--max-events", "100")),
    ("ops_nested_too_deep", deep_ops, "--max-op-depth 101", ("--max-op-depth", "100")),
    ("dev_zero", device("/dev/zero"), "not a regular file", ()),
    ("dev_urandom", device("/dev/urandom"), "not a regular file", ()),
    ("fifo", fifo, "not a regular file (a FIFO)", ()),
    ("sparse_not_json", sparse_not_json, "not JSON", ()),
    ("sparse_after_brace", sparse_after_brace, "not JSON", ()),
    ("utf16_bom", encoded("utf-16"), "UTF-16", ()),
    ("utf16_no_bom", encoded("utf-16", bom=False), "UTF-16", ()),
    ("utf32_bom", encoded("utf-32"), "UTF-32", ()),
    ("zip_archive", zip_archive, "not JSON but a zip archive (only gzip is read)", ()),
    ("whitespace_only", whitespace_only(False), "only whitespace", ()),
    ("whitespace_only_gzip", whitespace_only(True), "only whitespace", ()),
    ("symlink_loop", symlink_loop, "symbolic link loop", ()),
]


def huge_saved_report(folder: Path) -> Path:
    """A saved report's first key, then 300 MB of nothing (sparse): refused before it is read."""
    path = folder / "report.json"
    with open(path, "wb") as out:
        out.write(b'{"schema_version": "1.0", ')
        out.truncate(300 * MIB)
    return path


# gate and diff read it as a saved report; report and info as a trace
CASES.append(("huge_saved_report", huge_saved_report, ("too large for a saved traceanalyze JSON report", "not JSON"),
              ()))


def renamed_fixture(fixture: Path, *, device: str, kernel: str, annotation: str) -> bytes:
    """`fixture` (a gzipped trace) with its device, first kernel name and annotations renamed:
    the hostile strings every output must escape."""
    trace = json.loads(gzip.decompress(fixture.read_bytes()))
    trace["deviceProperties"][0]["name"] = device
    first = min(e["name"] for e in trace["traceEvents"] if e.get("cat") == "kernel")
    for event in trace["traceEvents"]:
        if event.get("cat") == "kernel" and event["name"] == first:
            event["name"] = kernel
        elif event.get("cat") == "user_annotation":
            event["name"] = annotation
    return gzip.compress(json.dumps(trace).encode())
