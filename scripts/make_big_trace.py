"""Make a large Kineto trace (or a folder of rank traces) from a real one, for benchmarks.

The base trace's events are written K times (as many as the target size needs, the last copy cut at
an event boundary), each copy shifted in time by a whole number of microseconds past the end of the
previous one, with its correlation ids, External ids, flow ids and ProfilerStep numbers offset so
that every copy links only to itself. Each event keeps the exact text the base trace wrote for it
(layout, key order, number format), except for the numbers that change; metadata (`ph: "M"`) events
are written once. The output is streamed: memory holds the base trace, never the output.

    python scripts/make_big_trace.py --size 1G -o /tmp/big_1g.json.gz
    python scripts/make_big_trace.py BASE.json.gz --size 200M --ranks 4 -o /tmp/ranks/

Generated traces belong under /tmp, never in the repository.
"""

from __future__ import annotations

import argparse
import gzip
import re
import sys
from pathlib import Path
from typing import BinaryIO, Iterator

import msgspec

REPO = Path(__file__).resolve().parents[1]
DEFAULT_BASE = REPO.parent / "shared" / "traces" / "hta_a100_80gb_record_shapes_cudagraph.json.gz"

NUMBER = rb"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"
# the numeric fields a copy changes; group 1: the key, group 2: the number as written
_FIELDS = re.compile(rb'"(ts|id|correlation|External id|external id)"(\s*:\s*)(' + NUMBER + rb")")
_STEP = re.compile(rb'"(ProfilerStep#)(\d+)"')
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


class _Document(msgspec.Struct):
    traceEvents: list[msgspec.Raw] = []


class _Head(msgspec.Struct):
    ph: str | None = None
    ts: int | float | None = None
    dur: int | float | None = None
    id: int | str | None = None


def parse_size(text: str) -> int:
    """`"1G"`, `"100M"`, `"512k"`, `"2.5GB"` or a plain byte count → bytes."""
    match = _SIZE.match(text)
    if not match:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 100M, 1G)")
    return int(float(match.group(1)) * _UNITS[match.group(2).lower()])


def _read(path: Path) -> bytes:
    raw = path.read_bytes()
    return gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw


class Template:
    """The base trace split into the parts every copy shares and the numbers it changes."""

    def __init__(self, raw: bytes):
        document = msgspec.json.decode(raw, type=_Document)
        top = msgspec.json.decode(raw)
        if not isinstance(top, dict) or not isinstance(top.get("traceEvents"), list):
            raise SystemExit("the base trace must be a JSON object with a traceEvents list")
        keys = list(top)
        at = keys.index("traceEvents")
        self.before = {k: top[k] for k in keys[:at]}
        self.after = {k: top[k] for k in keys[at + 1:]}
        self.metadata: list[bytes] = []
        self.events: list[list[bytes | tuple[bytes, bytes]]] = []  # text pieces and (field, number)
        starts: list[float] = []
        ends: list[float] = []
        max_id = {b"correlation": 0, b"external": 0, b"id": 0}
        steps: list[int] = []
        for raw_event in document.traceEvents:
            text = bytes(raw_event)
            try:
                head = msgspec.json.decode(text, type=_Head)
            except msgspec.ValidationError:
                head = _Head()
            if head.ph == "M":
                self.metadata.append(text)
                continue
            if isinstance(head.ts, (int, float)):
                starts.append(head.ts)
                ends.append(head.ts + (head.dur if isinstance(head.dur, (int, float)) else 0))
            pieces: list[bytes | tuple[bytes, bytes]] = []
            position = 0
            for match in _FIELDS.finditer(text):
                key = match.group(1)
                field = {b"External id": b"external", b"external id": b"external"}.get(key, key)
                number = match.group(3)
                if field != b"ts" and not number.lstrip(b"-").isdigit():
                    continue
                pieces.append(text[position:match.start(3)])
                pieces.append((field, number))
                position = match.end(3)
                if field != b"ts":
                    max_id[field] = max(max_id[field], abs(int(number)))
            for match in _STEP.finditer(text):
                steps.append(int(match.group(2)))
            pieces.append(text[position:])
            self.events.append(self._split_steps(pieces))
        if not starts:
            raise SystemExit("the base trace has no timed events")
        # copies sit one after another, 1 ms apart
        self.period_us = int(max(ends) - min(starts)) + 1000
        self.id_step = {field: value + 1 for field, value in max_id.items()}
        self.step_span = (max(steps) - min(steps) + 1) if steps else 0
        self.bytes_per_copy = sum(len(b"".join(p for p in e if isinstance(p, bytes))) + 12 for e in self.events)

    @staticmethod
    def _split_steps(pieces: list[bytes | tuple[bytes, bytes]]) -> list[bytes | tuple[bytes, bytes]]:
        out: list[bytes | tuple[bytes, bytes]] = []
        for piece in pieces:
            if not isinstance(piece, bytes) or b"ProfilerStep#" not in piece:
                out.append(piece)
                continue
            position = 0
            for match in _STEP.finditer(piece):
                out.append(piece[position:match.start(2)])
                out.append((b"step", match.group(2)))
                position = match.end(2)
            out.append(piece[position:])
        return out

    def copy(self, k: int) -> Iterator[bytes]:
        """The events of copy `k` (0 = the base itself), as text."""
        shift_us = k * self.period_us
        offsets = {field: k * step for field, step in self.id_step.items()}
        offsets[b"step"] = k * self.step_span
        for pieces in self.events:
            out = []
            for piece in pieces:
                if isinstance(piece, bytes):
                    out.append(piece)
                    continue
                field, number = piece
                if field == b"ts":
                    out.append(_shift_time(number, shift_us))
                else:
                    value = int(number)
                    out.append(str(value + offsets[field] if value >= 0 else value - offsets[field]).encode())
            yield b"".join(out)


def _shift_time(number: bytes, shift_us: int) -> bytes:
    """A µs timestamp as written, plus a whole number of µs, keeping its decimals exactly."""
    if not shift_us:
        return number
    if b"e" in number or b"E" in number:
        return repr(float(number) + shift_us).encode()
    whole, dot, fraction = number.partition(b".")
    return str(int(whole) + shift_us).encode() + dot + fraction


def _with_rank(before: dict, after: dict, rank: int | None) -> tuple[dict, dict]:
    """The top-level keys with `distributedInfo.rank` set to `rank` (added when missing)."""
    if rank is None:
        return before, after
    before, after = dict(before), dict(after)
    holder = after if "distributedInfo" in after else before
    info = holder.get("distributedInfo")
    holder["distributedInfo"] = {**(info if isinstance(info, dict) else {}), "rank": rank}
    return before, after


def write_trace(template: Template, out: BinaryIO, target_bytes: int, *,
                rank: int | None = None) -> tuple[int, int, int]:
    """Write copies until `target_bytes` of JSON are written → (bytes, events, copies)."""
    before, after = _with_rank(template.before, template.after, rank)
    head = b"{\n" + b"".join(msgspec.json.encode(k) + b": " + msgspec.json.encode(v) + b",\n"
                             for k, v in before.items())
    head += b'"traceEvents": [\n'
    tail = b"\n]"
    tail += b"".join(b",\n" + msgspec.json.encode(k) + b": " + msgspec.json.encode(v) for k, v in after.items())
    tail += b"\n}\n"
    written = len(head) + len(tail)
    out.write(head)
    first = True
    events = 0
    buffer: list[bytes] = []
    buffered = 0

    def emit(text: bytes) -> None:
        nonlocal first, written, buffered, events
        piece = text if first else b",\n" + text
        first = False
        buffer.append(piece)
        buffered += len(piece)
        written += len(piece)
        events += 1
        if buffered > 1 << 22:
            out.write(b"".join(buffer))
            buffer.clear()
            buffered = 0

    for text in template.metadata:
        emit(text)
    copies = 0
    while written < target_bytes or copies == 0:
        for text in template.copy(copies):
            emit(text)
            if written >= target_bytes and copies > 0:
                break
        copies += 1
    out.write(b"".join(buffer))
    out.write(tail)
    return written, events, copies


def _open(path: Path, level: int) -> BinaryIO:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.name.endswith(".gz"):
        return gzip.GzipFile(path, "wb", compresslevel=level, mtime=0)  # type: ignore[return-value]
    return open(path, "wb")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base", nargs="?", type=Path, default=DEFAULT_BASE,
                        help=f"the real trace to replicate (default: {DEFAULT_BASE.name})")
    parser.add_argument("--size", type=parse_size, default=parse_size("100M"),
                        help="uncompressed size of each output trace (e.g. 100M, 1G; default 100M)")
    parser.add_argument("-o", "--output", type=Path, required=True,
                        help="output .json or .json.gz (a folder with --ranks)")
    parser.add_argument("--ranks", type=int, default=0,
                        help="write a folder of this many rank traces (rank<i>.json.gz)")
    parser.add_argument("--level", type=int, default=6, help="gzip level for .gz outputs (default 6)")
    args = parser.parse_args(argv)
    if not args.output.resolve().is_relative_to(Path("/tmp")) and args.output.resolve().is_relative_to(REPO):
        parser.error("write generated traces outside the repository (e.g. under /tmp)")
    template = Template(_read(args.base))
    targets = [(args.output, None)] if args.ranks <= 0 else [(args.output / f"rank{r}.json.gz", r)
                                                             for r in range(args.ranks)]
    for path, rank in targets:
        with _open(path, args.level) as out:
            written, events, copies = write_trace(template, out, args.size, rank=rank)
        print(f"{path}: {written / 1e6:.0f} MB of JSON, {events:,} events, {copies} copies of {args.base.name}"
              f" ({path.stat().st_size / 1e6:.0f} MB on disk)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
