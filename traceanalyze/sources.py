"""Trace sources as the commands take and show them: a URL stays a string (`Path` folds its `//`)
and is shown without its `user:password@`. A leaf module: it imports nothing from traceanalyze,
so the CLI can use it without importing the jobs.
"""

from __future__ import annotations

import re
from pathlib import Path

USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*://)(?P<userinfo>[^/@\s?#]*@)")


def without_credentials(text: str) -> str:
    """`text` with the `user:password@` of every URL in it removed (`s3://k:s@bucket/x` →
    `s3://bucket/x`); everything else as it is.

    >>> without_credentials("http://alice:pw@127.0.0.1:8000/job/ and tcp://10.0.0.1:8786")
    'http://127.0.0.1:8000/job/ and tcp://10.0.0.1:8786'
    """
    return USERINFO.sub(r"\g<scheme>", text)


def source_argument(text: str) -> Path | str:
    """A command's trace argument: a URL (`scheme://…`) stays a string (`Path` would fold its
    `//`), anything else is a path."""
    scheme, sep, _ = text.partition("://")
    return text if sep and scheme.isidentifier() else Path(text)


def local_path(source: Path | str | None) -> Path | None:
    """`source` when it is a local path, else None (a URL is no file to protect from overwriting)."""
    return source if isinstance(source, Path) else None


def shown_source(source: Path | str) -> str:
    """How a source is shown: a URL without its `user:password@`."""
    return without_credentials(str(source))
