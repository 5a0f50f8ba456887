"""The loader's limits applied while a rank file named by URL is copied (`urls.download`), so that an
endless or hostile body stops at the first limit it breaks, not once it is on disk:

* gzip inflation (`LoadLimits.inflation`, past `INFLATION_FLOOR` inflated): the body is inflated as it
  arrives, in pieces of at most `PIECE_BYTES` (a bomb never sits inflated in memory);
* bytes without the end of an event (`event_bytes`): the longest run of inflated bytes holding no `}`
  (no event ends inside it, so the loader would hold at least as much);
* events (`events`): the events of `traceEvents` met so far (`EventCount`: the objects directly in
  that array, or in a bare array; a `"ph"` key in an event's `args` is not one), as the loader
  counts them once it reads the copy;
* the uncompressed bytes (`WHOLE_DOCUMENT_LIMIT` aside): what `download_bytes` caps is the copy.

Each is the loader's own `LimitError` (`limits.exceeded`), naming the URL without credentials.
"""

from __future__ import annotations

import re
import zlib

import numpy as np

from traceanalyze.load.limits import INFLATION_FLOOR, LoadLimits, exceeded
from traceanalyze.pipeline.failures import without_credentials

PIECE_BYTES = 4 << 20  # inflated bytes produced at once from a compressed chunk
GZIP_MAGIC = b"\x1f\x8b"


class StreamedLimits:
    """`feed(chunk)` each chunk of a body as it is copied; raises the loader's `LimitError` at the
    first limit the body breaks."""

    def __init__(self, url: str, limits: LoadLimits) -> None:
        self.shown = without_credentials(url)
        self.limits = limits
        self.compressed: bool | None = None
        self.inflater = None
        self.copied = 0  # compressed (as sent) bytes
        self.inflated = 0
        self.counted = EventCount()
        self.since_close = 0  # inflated bytes since the last `}`
        self.head = b""

    @property
    def events(self) -> int:
        return self.counted.events

    def feed(self, chunk: bytes) -> None:
        self.copied += len(chunk)
        if self.compressed is None:  # gzip or not: told by the first two bytes, however they arrive
            self.head += chunk
            if len(self.head) < 2:
                return
            chunk, self.head = self.head, b""
            self.compressed = chunk[:2] == GZIP_MAGIC
            if self.compressed:
                self.inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        if self.compressed:
            self._inflate(chunk)
        else:
            self._scan(chunk)

    def _inflate(self, data: bytes) -> None:
        while data:
            inflater = self.inflater
            try:
                piece = inflater.decompress(data, PIECE_BYTES)
            except zlib.error:
                return  # corrupt gzip: the loader says so when it reads the copy
            data = inflater.unconsumed_tail
            if piece:
                self._scan(piece)
                self._check_inflation()
            if inflater.eof:  # another gzip member may follow (concatenated gzip)
                data = inflater.unused_data + data
                self.inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
                if not data:
                    return
                if not data.startswith(GZIP_MAGIC[:len(data)]):
                    return  # trailing bytes: the loader judges them
            elif not piece and not data:
                return

    def _check_inflation(self) -> None:
        if self.inflated > INFLATION_FLOOR and self.inflated > self.limits.inflation * max(self.copied, 1):
            raise exceeded(self.shown, f"inflates more than {self.limits.inflation:g} times its compressed size "
                           f"({self.inflated >> 20} MB from {max(self.copied, 1) >> 10} KB so far: a gzip bomb?)",
                           "inflation", f"{10 * self.limits.inflation:g}")

    def _scan(self, piece: bytes) -> None:
        self.inflated += len(piece)
        last = piece.rfind(b"}")
        if last < 0:
            self.since_close += len(piece)
        else:
            self.since_close = len(piece) - 1 - last
        if self.since_close > self.limits.event_bytes:
            raise exceeded(self.shown, f"no end of an event in {self.since_close >> 20} MB (an event, or what lies "
                           f"between two, is larger than {self.limits.event_bytes >> 20} MB)",
                           "event_bytes", str(4 * (self.limits.event_bytes >> 20)))
        self.counted.feed(piece)
        if self.events > self.limits.events:
            raise exceeded(self.shown, f"more than {self.limits.events} events (counted as the file arrives)",
                           "events", str(2 * self.limits.events))


STRUCTURE = np.zeros(256, dtype=np.int8)  # +1 for a byte that opens a container, -1 for one that closes it
STRUCTURE[list(b"{[")], STRUCTURE[list(b"}]")] = 1, -1
EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*$')
KEY_LOOKBACK = 4096  # bytes before an array opened in the document's object searched for its key


class EventCount:
    """The events of a JSON trace fed in pieces (`feed`), counted as the loader counts them: the
    objects directly inside the `traceEvents` array of the document's object (or directly inside a
    bare array), whatever they hold (a `"ph"` key in `args`, braces in a name). Depth-aware: the
    brackets of the text outside strings (quotes escaped by an odd run of backslashes are inside
    them), carried from piece to piece, in whole-piece array operations.

    A `traceEvents` key more than `KEY_LOOKBACK` bytes of blanks before its array is not seen (the
    events then counted by the loader only, once the copy is read)."""

    def __init__(self) -> None:
        self.events = 0
        self.depth = 0
        self.in_string = False
        self.backslashes = 0  # the backslashes that ended the last piece
        self.root = 0  # the document's first byte of structure: `[` or `{` (0: none yet)
        self.in_events = False  # whether the container open at depth 1 is the events array
        self.tail = b""  # the last bytes of the last piece (an array's key may lie there)

    def feed(self, piece: bytes) -> None:
        data = np.frombuffer(piece, dtype=np.uint8)
        quotes = self._unescaped_quotes(data)
        change = STRUCTURE[data]
        places = np.flatnonzero(change)
        outside = (np.searchsorted(quotes, places) + self.in_string) % 2 == 0
        places = places[outside]
        steps = change[places].astype(np.int64)
        before = self.depth + np.cumsum(steps) - steps  # the depth before each bracket
        if not self.root and places.size:
            self.root = int(data[places[0]])
        opens = steps > 0
        if self.root == ord("["):
            self.events += int(np.count_nonzero(opens & (before == 1)))
        elif self.root == ord("{"):
            self._count_events(piece, data, places, before, opens)
        self.depth += int(steps.sum())
        self.in_string = bool((len(quotes) + self.in_string) % 2)
        run = len(piece) - len(piece.rstrip(b"\\"))
        self.backslashes = run if run < len(piece) else self.backslashes + run
        self.tail = (self.tail + piece)[-KEY_LOOKBACK:]

    def _unescaped_quotes(self, data: np.ndarray) -> np.ndarray:
        """The places of the piece's quotes that open or close a string (not after an odd run of
        backslashes, counting those that ended the last piece)."""
        quotes = np.flatnonzero(data == ord('"'))
        slashes = np.flatnonzero(data == ord("\\"))
        if not quotes.size or not (slashes.size or self.backslashes):
            return quotes
        if not slashes.size:  # only a run that ended the last piece, before a first quote
            return quotes[(quotes > 0) | (self.backslashes % 2 == 0)]
        first = np.ones(slashes.size, dtype=bool)
        first[1:] = np.diff(slashes) != 1
        last = np.ones(slashes.size, dtype=bool)
        last[:-1] = first[1:]
        starts, ends = slashes[first], slashes[last]
        run = np.searchsorted(starts, quotes, side="right") - 1
        ending = (run >= 0) & (ends[np.maximum(run, 0)] == quotes - 1)
        length = np.where(ending, quotes - starts[np.maximum(run, 0)], 0)
        length += np.where((length == quotes) | (quotes == 0), self.backslashes, 0)  # a run from the last piece
        return quotes[length % 2 == 0]

    def _count_events(self, piece: bytes, data: np.ndarray, places: np.ndarray, before: np.ndarray,
                      opens: np.ndarray) -> None:
        """The objects opened at depth 2 inside the events array (the array of `traceEvents`)."""
        containers = places[opens & (before == 1)]  # what each value of the document's object opens
        is_events = [bool(data[at] == ord("[")) and EVENTS_KEY.search(self._before(piece, int(at))) is not None
                     for at in containers]
        objects = places[opens & (before == 2) & (data[places] == ord("{"))]
        owner = np.searchsorted(containers, objects) - 1
        flags = np.array([self.in_events, *is_events], dtype=bool)
        self.events += int(np.count_nonzero(flags[owner + 1]))
        if is_events:
            self.in_events = is_events[-1]

    def _before(self, piece: bytes, at: int) -> bytes:
        start = at - KEY_LOOKBACK
        return (self.tail[start:] if start < 0 else b"") + piece[max(start, 0):at]
