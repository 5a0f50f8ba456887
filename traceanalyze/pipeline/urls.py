"""Rank files named by URL (`s3://bucket/job/`, `gs://…`, `file:///shared/job/`; fsspec):

* `SourceUrl`: a URL where the reports keep a `Path` (`source`): `str()` gives the URL intact
  (`s3://…`, never `s3:/…` as `Path` folds it) and without its `user:password@`, so no output (JSON,
  Markdown, HTML, terminal, errors) carries the credentials a URL may hold;
* `download`: a rank file copied to a local file under a cap in bytes and in seconds, and under the
  loader's limits as it arrives (`url_limits.StreamedLimits`: a gzip bomb stops at its inflation, an
  endless body at the first limit it breaks): refused with one line, before it fills the disk; the
  copy also stops while the disk's free space would fall under `MIN_FREE_BYTES`.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from traceanalyze.errors import TraceFormatError
from traceanalyze.load.limits import LoadLimits
from traceanalyze.pipeline.failures import without_credentials
from traceanalyze.pipeline.url_limits import StreamedLimits

CHUNK_BYTES = 1 << 20
MIN_FREE_BYTES = 1 << 30  # a download stops before the disk holds less than this


class SourceUrl(PurePosixPath):
    """A URL standing where a path is expected: `name`, `suffix`, `parent` as for its path;
    `str()`, `os.fspath()` and a pickle give the URL itself, credentials removed.

    >>> str(SourceUrl("s3://key:secret@bucket/job/rank0.json.gz")), SourceUrl("http://h:80/a/b.json").name
    ('s3://bucket/job/rank0.json.gz', 'b.json')
    """

    _url: str

    def __new__(cls, url: str) -> SourceUrl:
        shown = without_credentials(str(url))
        self = super().__new__(cls, shown.split("://", 1)[-1])
        self._url = shown
        return self

    def __str__(self) -> str:
        return getattr(self, "_url", None) or super().__str__()

    def __fspath__(self) -> str:
        return str(self)

    def __repr__(self) -> str:
        return f"SourceUrl({str(self)!r})"

    def __reduce__(self):  # type: ignore[override]
        return (SourceUrl, (str(self),))


def download(source: BinaryIO, target: BinaryIO, url: str, *, max_bytes: int, max_seconds: float,
             clock: Callable[[], float] = time.monotonic, free_bytes: Callable[[], int] | None = None,
             limits: LoadLimits | None = None) -> int:
    """Copy `source` (the opened `url`) into `target`, chunk by chunk: at most `max_bytes`, for
    at most `max_seconds`, and never while `free_bytes()` (the target disk's) is under
    `MIN_FREE_BYTES`; with `limits`, each chunk also passes the loader's limits as it arrives
    (`url_limits.StreamedLimits`: inflation, event size, events), before it is written. Returns the
    bytes copied; a `TraceFormatError` naming the URL (credentials removed) otherwise."""
    shown = without_credentials(url)
    copied = 0
    deadline = clock() + max_seconds
    checks = StreamedLimits(url, limits) if limits is not None else None
    while chunk := source.read(CHUNK_BYTES):
        copied += len(chunk)
        if copied > max_bytes:
            raise TraceFormatError(f"{shown}: more than {max_bytes >> 20:,} MB to download; a limit against endless "
                                   "or hostile URLs (raise it with --max-download-mb if the file is a trace you trust)")
        if clock() > deadline:
            raise TraceFormatError(f"{shown}: not downloaded within {max_seconds:.0f} s ({copied >> 20:,} MB so far)")
        if free_bytes is not None and free_bytes() - len(chunk) < MIN_FREE_BYTES:
            raise TraceFormatError(f"{shown}: downloading it would fill the disk of the temporary folder")
        if checks is not None:
            checks.feed(chunk)
        target.write(chunk)
    return copied


def disk_free(folder: Path) -> Callable[[], int]:
    """The free bytes of `folder`'s disk, asked anew at each call."""
    return lambda: shutil.disk_usage(folder).free


