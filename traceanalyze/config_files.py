"""Small files the user names besides traces: a gate config (`--config`, or the nearest
`pyproject.toml`, which a pull request can change) and a device file (`--device-file`). Either may
come from someone else, so each is read with two bounds, and refused with one line naming the file:

* **size**: `MAX_BYTES` (1 MiB; real ones are under 10 KB), read at most that + 1 byte, and only
  from a regular file (a FIFO or a device is refused, never read);
* **nesting**: arrays and tables (`[` `{`, outside strings and comments) `MAX_DEPTH` (64) deep at
  most, checked before the decoder sees the text: the TOML and JSON decoders recurse once per
  level, and 1,000 levels end in a RecursionError (real ones nest 3 deep). A RecursionError that
  gets through all the same is the same error line.

A leaf module: it imports only `traceanalyze.errors`.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from traceanalyze.errors import ConfigError

MAX_BYTES = 1 << 20
MAX_DEPTH = 64


def read_text(path: Path, what: str, *, max_bytes: int = MAX_BYTES) -> str:
    """The UTF-8 text of the `what` file `path` (e.g. "device file"), at most `max_bytes`; a
    `ConfigError` naming the file otherwise."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        descriptor = os.open(path, flags)
    except FileNotFoundError:
        raise ConfigError(f"{path}: cannot read {what} (no such file)") from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: is a folder, not a {what}") from None
    except OSError as error:
        raise ConfigError(f"{path}: cannot read {what} ({error.strerror or error})") from None
    with os.fdopen(descriptor, "rb") as handle:
        mode = os.fstat(descriptor).st_mode
        if stat.S_ISDIR(mode):
            raise ConfigError(f"{path}: is a folder, not a {what}")
        if not stat.S_ISREG(mode):
            raise ConfigError(f"{path}: not a regular file, not a {what}")
        os.set_blocking(descriptor, True)
        try:
            data = handle.read(max_bytes + 1)
        except OSError as error:
            raise ConfigError(f"{path}: cannot read {what} ({error.strerror or error})") from None
    if len(data) > max_bytes:
        raise ConfigError(f"{path}: a {what} of more than {max_bytes:,} bytes (real ones are a few KB)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not a UTF-8 text file") from None


def nesting_depth(text: str, *, comments: bool) -> int:
    """How deep `[` and `{` nest in `text`, outside strings (`"…"`, and `'…'` and `#` comments when
    `comments`, i.e. TOML; its `\"\"\"`/`'''` strings are strings too). An upper bound for TOML
    (a `[table]` header counts as one level), exact for JSON."""
    depth = deepest = 0
    index, length = 0, len(text)
    quotes = ('"', "'") if comments else ('"',)
    while index < length:
        char = text[index]
        if char in quotes:
            triple = comments and text.startswith(char * 3, index)
            closing = char * 3 if triple else char
            index += len(closing)
            while index < length and not text.startswith(closing, index):
                if text[index] == "\\" and char == '"':
                    index += 1
                elif text[index] == "\n" and not triple:
                    break
                index += 1
            index += len(closing)
            continue
        if comments and char == "#":
            newline = text.find("\n", index)
            index = length if newline < 0 else newline
            continue
        if char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth = max(0, depth - 1)
        index += 1
    return deepest


def check_nesting(text: str, path: Path, what: str, *, comments: bool, max_depth: int = MAX_DEPTH) -> None:
    """A `ConfigError` when `text` nests deeper than `max_depth` (`nesting_depth`)."""
    depth = nesting_depth(text, comments=comments)
    if depth > max_depth:
        raise ConfigError(f"{path}: a {what} nested {depth} deep (at most {max_depth}; real ones nest 3 deep)")


def too_deep(path: Path, what: str) -> ConfigError:
    """The error for a RecursionError of a decoder (nesting that `check_nesting` did not count)."""
    return ConfigError(f"{path}: a {what} nested too deeply for the decoder")
