"""Bytes on disk → typed Chrome-trace events (msgspec), with every way a file can be bad turned
into a one-line `TraceFormatError` that names the file.

Two readers share the same event types (`events`):

- `EventChunks` streams a trace: a background thread reads (and gunzips) the file in blocks, the
  `traceEvents` array is cut at event boundaries into chunks of about `BLOCK_SIZE` bytes, and each
  chunk is decoded on its own. Memory holds a few blocks, never the whole document. It handles a
  JSON object with a `traceEvents` array (metadata before or after it) and a bare event array, in
  any layout (one event per line, Kineto's multi-line events, everything on one line).
- `reading.read_bytes` + `decode_document` decode a whole document at once. They define the behaviour for
  every input the streaming reader does not expect (not JSON, no `traceEvents` array, a document
  whose structure surprises it), and it falls back on them for files up to
  `WHOLE_DOCUMENT_LIMIT`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from traceanalyze.errors import EmptyTraceError, TraceFormatError
from traceanalyze.load.events import Args, Event, TraceDocument
from traceanalyze.load.limits import LoadLimits, exceeded
from traceanalyze.load.reading import BLOCK_SIZE, read_blocks
from traceanalyze.load.times import decode_hook, encode_hook

WHOLE_DOCUMENT_LIMIT = 512 << 20  # largest document decoded at once when streaming cannot be used
HEADER_LIMIT = 64 << 20  # how far into a document the start of `traceEvents` is looked for

# floats keep their text (`times.decode_hook`): exact times beyond 2^53 ns
_document_decoder = msgspec.json.Decoder(TraceDocument, float_hook=decode_hook)
_event_list_decoder = msgspec.json.Decoder(list[Event], float_hook=decode_hook)
_untyped_decoder = msgspec.json.Decoder(float_hook=decode_hook)
_encoder = msgspec.json.Encoder(enc_hook=encode_hook)  # floats in their own text, digit for digit


# archives and compressors other than gzip, by magic number: what to run to get the JSON out
_OTHER_FORMATS = ((b"BZh", "bzip2-compressed", "bunzip2"), (b"PK\x03\x04", "a zip archive", "unzip"),
                  (b"\xfd7zXZ\x00", "xz-compressed", "unxz"), (b"\x28\xb5\x2f\xfd", "zstd-compressed", "unzstd"),
                  (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive", "7z x"))


def not_json_message(head: bytes) -> str:
    """What to say about a document that does not start as JSON: the format when a magic number
    shows another compressor or archive (only gzip is read), the encoding when a byte-order mark
    or interleaved NUL bytes show one (a trace is UTF-8 JSON), else "not JSON"."""
    for magic, what, command in _OTHER_FORMATS:
        if head.startswith(magic):
            return f"not JSON but {what} (only gzip is read): extract the trace first, e.g. {command}"
    for mark, encoding in ((b"\x00\x00\xfe\xff", "UTF-32 BE"), (b"\xff\xfe\x00\x00", "UTF-32 LE"),
                           (b"\xfe\xff", "UTF-16 BE"), (b"\xff\xfe", "UTF-16 LE")):
        if head.startswith(mark):
            return f"{encoding} text (byte-order mark {mark.hex(' ')}): a trace is UTF-8 JSON; convert it, e.g. " \
                   f"iconv -f {encoding.replace(' ', '')} -t UTF-8"
    sample = head[:64] if len(head) % 2 == 0 else head[:63]
    for guess, zeros, text in (("UTF-16 LE", sample[1::2], sample[0::2]), ("UTF-16 BE", sample[0::2], sample[1::2])):
        if len(sample) >= 4 and not zeros.strip(b"\x00") and text.count(0) == 0:
            return f"looks like {guess} text (every other byte is NUL): a trace is UTF-8 JSON; convert it, e.g. " \
                   f"iconv -f {guess.replace(' ', '')} -t UTF-8"
    if b"\x00" in head[:64]:
        return f"not JSON (a NUL byte at byte {head.index(0)})"
    return "not JSON (a Chrome/Kineto trace is a JSON object)"


def decode_document(raw: bytes, path: Path) -> tuple[TraceDocument, int]:
    """Decode a trace; returns the document and how many malformed events were dropped.

    The fast path is one typed decode. If any event has a field of an unexpected type, that
    decode fails as a whole; then the file is decoded untyped and converted event by event,
    so one bad event is skipped (and counted) instead of losing the trace.
    """
    stripped = raw.lstrip()
    if stripped[:1] not in (b"{", b"[") or b"\x00" in stripped[:64]:
        raise TraceFormatError(f"{path}: {not_json_message(stripped)}")
    try:
        if stripped[:1] == b"[":
            return TraceDocument(traceEvents=_event_list_decoder.decode(raw)), 0
        document = _document_decoder.decode(raw)
    except msgspec.ValidationError:
        return _decode_tolerant(raw, path)
    except msgspec.DecodeError as error:
        raise TraceFormatError(f"{path}: invalid JSON ({error})") from None
    if document.traceEvents is None:
        raise TraceFormatError(f"{path}: JSON without 'traceEvents': not a Chrome/Kineto trace")
    return document, 0


def _decode_tolerant(raw: bytes, path: Path) -> tuple[TraceDocument, int]:
    try:
        untyped = _untyped_decoder.decode(raw)
    except msgspec.DecodeError as error:
        raise TraceFormatError(f"{path}: invalid JSON ({error})") from None
    except msgspec.ValidationError as error:  # a number out of range (1e400)
        raise TraceFormatError(f"{path}: invalid JSON ({error})") from None
    if isinstance(untyped, list):
        untyped = {"traceEvents": untyped}
    if not isinstance(untyped, dict) or not isinstance(untyped.get("traceEvents"), list):
        raise TraceFormatError(f"{path}: JSON without a 'traceEvents' list: not a Chrome/Kineto trace")
    raw_events = untyped.pop("traceEvents")
    known = {f for f in TraceDocument.__struct_fields__ if f != "traceEvents"}
    document = msgspec.convert(
        {k: v for k, v in untyped.items() if k in known}, TraceDocument, strict=False
    )
    document.traceEvents, malformed = events_tolerant(raw_events)
    return document, malformed


def events_tolerant(raw_events: list[Any]) -> tuple[list[Event], int]:
    """Untyped events → typed ones, one at a time: an event with a wrongly typed `args` value keeps
    its other args; one that cannot be kept at all is counted as malformed."""
    events: list[Event] = []
    malformed = 0
    event_decoder = msgspec.json.Decoder(Event, float_hook=decode_hook)
    for raw_event in raw_events:
        try:
            events.append(event_decoder.decode(_encoder.encode(raw_event)))
        except msgspec.ValidationError:
            repaired = _without_bad_args(raw_event)
            if repaired is None:
                malformed += 1
            else:
                events.append(repaired)
    return events, malformed


_args_decoder = msgspec.json.Decoder(Args)
_repaired_decoder = msgspec.json.Decoder(Event, float_hook=decode_hook)


def _without_bad_args(raw_event: Any) -> Event | None:
    """An event whose `args` hold a value of an unexpected type keeps its other args; an event
    that is not an object, or whose args are not an object, is malformed (None)."""
    if not isinstance(raw_event, dict) or not isinstance(raw_event.get("args"), dict):
        return None
    good_args = {}
    for key, value in raw_event["args"].items():
        try:
            _args_decoder.decode(_encoder.encode({key: value}))
        except msgspec.ValidationError:
            continue
        good_args[key] = value
    try:
        return _repaired_decoder.decode(_encoder.encode({**raw_event, "args": good_args}))
    except msgspec.ValidationError:
        return None


# ----------------------------------------------------------------------------------------------
# Streaming


class NotStreamable(Exception):
    """The document is not laid out as the streaming reader expects; decode it whole instead."""


_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
_BYTE_IN_ERROR = re.compile(r"\(byte (\d+)\)")
_SPACE = b" \t\r\n"
_BOUNDARY = re.compile(rb"\}\s*,(?=\s*\{)")

T = TypeVar("T")


class EventChunks:
    """Stream a trace's `traceEvents` array as chunks of complete events.

    A chunk is cut after a `}` that a `,` and then a `{` follow (whitespace between them), about
    every `block_size` bytes. Such a cut can still fall inside a string (a kernel name holding
    `}, {`); decoding the chunk then fails with a `msgspec.DecodeError` at its very end, while an
    error anywhere else means the JSON is invalid.

    `decode_each(decode)` calls `decode(text)` on the JSON text `[event, …]` of each chunk, in
    order, yields what it returns, and cuts again at an earlier boundary when a cut was wrong.
    `pieces()` yields the chunks' text without decoding them (for worker processes): a wrong cut
    then surfaces as a `DecodeError` in a worker, and the caller starts over with `decode_each`.
    When iteration ends, `document` holds the top-level metadata and `size` the number of
    uncompressed bytes.

    Raises `NotStreamable` when the document should be decoded whole instead (not an object
    with a `traceEvents` array or a bare array, or a structure that surprises the cutter), and
    `TraceFormatError` for an unreadable file or for invalid JSON in a document too large for that.
    """

    def __init__(self, path: Path, *, block_size: int = BLOCK_SIZE, limits: LoadLimits = LoadLimits()):
        self.path = path
        self.block_size = block_size
        self.limits = limits
        self.document: TraceDocument | None = None
        # after `decode_each`: the document's text before its events (up to the array's `[`) and
        # after them (from the closing `]`), as written
        self.before_events = b""
        self.after_events = b""
        self.size = 0  # uncompressed bytes read
        self.position = 0  # bytes of the file (on disk) read
        self.bare_array = False  # a bare array of events (no object around it)

    def decode_each(self, decode: Callable[[bytes], T]) -> Iterator[T]:
        blocks, header, data, offset = self._open()
        self.before_events = header
        for block, self.position in blocks:
            self.size += len(block)
            if len(data) + len(block) >= self.block_size:
                # the chunk: the rest of the last block and this one's head, cut in this block
                head = self._decode_head(data, block, decode, offset)
                if head is not None:
                    result, after = head
                    yield result
                    offset += len(data) + after
                    data = block[after:]
                    continue
                self._check_held(data, block)
            data = data + block if data else block
            if len(data) >= 2 * self.block_size:  # no cut in a whole block: cut anywhere in the data
                chunk, data, consumed = self._cut(data, decode, offset)
                offset += consumed
                if chunk is not None:
                    yield chunk
        yield from self._last(header, data, decode, offset)

    def pieces(self, front: int = 0) -> Iterator[tuple[bytes | memoryview, ...]]:
        """The chunks' events as JSON text without the enclosing brackets, cut but not decoded;
        each as the parts to join (the rest of the last block, the head of this one).

        `front`: each block is read after that many free bytes, where the rest of the last block
        goes when it fits (it is an event's head, a few hundred bytes): the chunk is then one
        piece of text, in the block's own memory, not two to be copied into a third."""
        blocks, header, data, _ = self._open(front)
        if len(data) >= self.block_size // 2:  # the first chunk from the first block: decoding starts a block sooner
            found = _boundary(data, len(data))
            if found is not None:
                yield (memoryview(data)[:found[0] + 1],)
                data = data[found[1]:]
        for block, self.position in blocks:
            content = memoryview(block)[front:] if front else block
            self.size += len(content)
            if len(data) + len(content) >= self.block_size:
                found = _boundary(block, len(block))
                if found is not None and found[0] >= front:
                    cut, after = found
                    if front and len(data) <= front:
                        start = front - len(data)
                        block[start:front] = data  # type: ignore[index]
                        yield (memoryview(block)[start:cut + 1],)
                    else:
                        yield data, memoryview(block)[front:cut + 1]
                    data = bytes(memoryview(block)[after:]) if front else block[after:]
                    continue
                self._check_held(data, content)
            data = data + content if data else bytes(content)
            if len(data) >= 2 * self.block_size:
                found = _boundary(data, len(data))
                if found is not None:
                    yield (memoryview(data)[:found[0] + 1],)
                    data = data[found[1]:]
        close, document = self._close(header, data, _valid_events)
        self.document = document
        events = data[:close]
        while len(events) > 2 * self.block_size:
            found = _boundary(events, 2 * self.block_size)
            if found is None:
                break
            yield (events[:found[0] + 1],)
            events = events[found[1]:]
        if events.strip(_SPACE):
            yield (events,)

    def _open(self, front: int = 0) -> tuple[Iterator[tuple[bytes | bytearray, int]], bytes, bytes, int]:
        """Read up to the start of the events → (the rest of the blocks, read with `front` free
        bytes before each (`read_blocks`), the document up to the events' `[`, the data after it,
        its offset in the document)."""
        blocks = read_blocks(self.path, self.block_size, limits=self.limits, front=front)
        data = b""
        blank = 0  # leading whitespace dropped (not held: a file may hold gigabytes of it)
        for block, self.position in blocks:
            content = memoryview(block)[front:] if front else block
            data += content
            self.size += len(content)
            if not data.strip(_SPACE):
                blank += len(data)
                data = b""
                continue
            start = self._events_start(data)
            if start is not None:
                return blocks, data[:start], data[start:], blank + start
            if len(data) > HEADER_LIMIT:
                self._give_up("no 'traceEvents' array near the start of the document")
        if not data:
            raise EmptyTraceError(f"{self.path}: holds only whitespace ({blank} bytes), no JSON")
        self._give_up("no 'traceEvents' array")
        raise AssertionError  # unreachable

    def _events_start(self, data: bytes) -> int | None:
        """Where the events of `traceEvents` begin (after its `[`), once `data` shows it."""
        first = data.lstrip(_SPACE)[:1]
        if not first:
            return None
        if b"\x00" in data[:64]:
            raise TraceFormatError(f"{self.path}: {not_json_message(data.lstrip(_SPACE))}")
        if first == b"[":
            self.bare_array = True
            return data.index(b"[") + 1
        if first != b"{":
            if first.isdigit() or first in b'"-tfn':
                self._give_up("not a JSON object")  # JSON, but no trace: the whole-document decode says so
            raise TraceFormatError(f"{self.path}: {not_json_message(data.lstrip(_SPACE))}")
        self.bare_array = False
        match = _EVENTS_KEY.search(data)
        return match.end() if match else None

    def _cut(self, data: bytes, decode: Callable[[bytes], T], offset: int) -> tuple[T | None, bytes, int]:
        """Decode the longest run of whole events at the start of `data` → (result, the rest,
        bytes consumed); (None, data, 0) when no cut works yet (more data is needed)."""
        head = self._decode_head(b"", data, decode, offset)
        if head is None:
            return None, data, 0
        result, after = head
        return result, data[after:], after

    def _decode_head(
        self, prefix: bytes, data: bytes, decode: Callable[[bytes], T], offset: int
    ) -> tuple[T, int] | None:
        """`prefix` and the longest run of whole events at the start of `data`, decoded → (result,
        where the rest of `data` starts); None when no cut decodes. A cut inside a string fails
        to decode at the very end of the text: the next earlier cut is tried."""
        end = len(data)
        for _ in range(64):
            found = _boundary(data, end)
            if found is None:
                return None
            cut, after = found
            text = b"".join((b"[", prefix, memoryview(data)[:cut + 1], b"]"))
            try:
                return decode(text), after
            except msgspec.DecodeError as error:
                if not self._at_end(error, len(text)):
                    self._invalid(error, offset - 1)
                end = cut
        return None

    def _last(self, header: bytes, data: bytes, decode: Callable[[bytes], T], offset: int) -> Iterator[T]:
        """The events left at the end of the document, its closing `]`, and what follows it."""
        results: list[T] = []

        def decode_rest(events: bytes) -> None:
            results.clear()
            position = offset
            # a long rest (small blocks, or no boundary found for a while) is cut as usual
            while len(events) > 2 * self.block_size:
                result, _, consumed = self._cut(events[: 2 * self.block_size], decode, position)
                if result is None:
                    break
                results.append(result)
                events = events[consumed:]
                position += consumed
            if events.strip(_SPACE):
                results.append(decode(b"".join((b"[", events, b"]"))))

        close, self.document = self._close(header, data, decode_rest)
        self.after_events = data[close:]
        yield from results

    def _close(self, header: bytes, data: bytes, check: Callable[[bytes], Any]) -> tuple[int, TraceDocument]:
        """The `]` closing the events: the last one after which the document goes on validly and
        before which `check(events)` raises no `DecodeError` → (its position, the metadata)."""
        end = len(data)
        first_error: msgspec.DecodeError | None = None
        for _ in range(64):
            close = data.rfind(b"]", 0, end)
            if close < 0:
                break
            end = close
            document = self._metadata(header, data[close + 1:])
            if document is None:
                continue
            try:
                check(data[:close])
            except msgspec.DecodeError as error:
                # that `]` may close a list in the last event or after the array: try the one before
                first_error = first_error or error
                continue
            return close, document
        if first_error is not None:
            self._invalid(first_error, self.size - len(data) - 1)
        self._give_up("the 'traceEvents' array is not closed (truncated file?)")
        raise AssertionError  # unreachable

    def _metadata(self, header: bytes, tail: bytes) -> TraceDocument | None:
        """The top-level document around an empty event list; None if `tail` cannot follow it."""
        if self.bare_array:
            return TraceDocument(traceEvents=[]) if not tail.strip(_SPACE) else None
        try:
            return _document_decoder.decode(b"".join((header, b"]", tail)))
        except (msgspec.DecodeError, msgspec.ValidationError):
            return None

    @staticmethod
    def _at_end(error: msgspec.DecodeError, length: int) -> bool:
        """Whether a decode error is at the end of the decoded text (a cut at a wrong place)."""
        found = _BYTE_IN_ERROR.search(str(error))
        return found is None or int(found.group(1)) >= length - 1

    def _invalid(self, error: msgspec.DecodeError, offset: int) -> None:
        if self.size <= WHOLE_DOCUMENT_LIMIT:
            raise NotStreamable(str(error))  # the whole-document decoder says what is wrong
        message = _BYTE_IN_ERROR.sub(lambda m: f"(byte {int(m.group(1)) + offset})", str(error))
        raise TraceFormatError(f"{self.path}: invalid JSON ({message})")

    def _give_up(self, why: str) -> None:
        raise NotStreamable(why)

    def _check_held(self, data: bytes, block: bytes) -> None:
        """Called when no event ends in `block`, nor in `data` (what is held since the last event
        that ended): refuse to hold more than `limits.event_bytes` so."""
        held = len(data) + len(block)
        if held > self.limits.event_bytes:
            raise exceeded(self.path, f"no end of an event in {held >> 20} MB (an event, or what lies "
                           f"between two, is larger than {self.limits.event_bytes >> 20} MB)",
                           "event_bytes", str(4 * (self.limits.event_bytes >> 20)))


_NEXT_EVENT = re.compile(rb"[ \t\r\n]*\{")
_raw_list_decoder = msgspec.json.Decoder(list[msgspec.Raw])


def _boundary(data: bytes, end: int) -> tuple[int, int] | None:
    """The last place before `end` where one event may end and the next begin: (position of its
    `}`, position after the `,`); None if there is none."""
    while True:
        cut = data.rfind(b"},", 0, end)
        if cut < 0:
            break
        if _NEXT_EVENT.match(data, cut + 2):
            return cut, cut + 2
        end = cut  # e.g. "{lambda()#1}, at::…" inside a kernel name
    found = None
    for found in _BOUNDARY.finditer(data, max(0, end - (4 << 20)), end):
        pass
    return (found.start(), found.end()) if found is not None else None


def _valid_events(events: bytes) -> None:
    """Raises `msgspec.DecodeError` unless `events` is valid JSON for the inside of an array."""
    if events.strip(_SPACE):
        _raw_list_decoder.decode(b"".join((b"[", events, b"]")))
