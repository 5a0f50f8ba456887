"""The loader's limits applied while a rank file named by URL is copied (`urls.download`), so that an
endless or hostile body stops at the first limit it breaks, not once it is on disk:

* gzip inflation (`LoadLimits.inflation`, past `INFLATION_FLOOR` inflated): the body is inflated as it
  arrives, in pieces of at most `PIECE_BYTES` (a bomb never sits inflated in memory);
* bytes without the end of an event (`event_bytes`): the longest run of inflated bytes holding no `}`
  (no event ends inside it, so the loader would hold at least as much);
* events (`events`): the keys `"ph"` met (one per event; the loader counts exactly once it reads the
  copy, this is the bound met while streaming);
* the uncompressed bytes (`WHOLE_DOCUMENT_LIMIT` aside): what `download_bytes` caps is the copy.

Each is the loader's own `LimitError` (`limits.exceeded`), naming the URL without credentials.
"""

from __future__ import annotations

import zlib

from traceanalyze.load.limits import INFLATION_FLOOR, LoadLimits, exceeded
from traceanalyze.pipeline.failures import without_credentials

PIECE_BYTES = 4 << 20  # inflated bytes produced at once from a compressed chunk
EVENT_KEY = b'"ph"'
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
        self.events = 0
        self.since_close = 0  # inflated bytes since the last `}`
        self.tail = b""  # the last bytes inflated, for a key cut between two pieces
        self.head = b""

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
        joined = self.tail + piece[:len(EVENT_KEY) - 1]
        self.events += piece.count(EVENT_KEY) + joined.count(EVENT_KEY)
        self.tail = (self.tail + piece[-(len(EVENT_KEY) - 1):])[-(len(EVENT_KEY) - 1):]
        if self.events > self.limits.events:
            raise exceeded(self.shown, f"more than {self.limits.events} events (counted as the file arrives)",
                           "events", str(2 * self.limits.events))
