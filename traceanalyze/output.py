"""How traceanalyze writes files: whole or not at all, and never over one of its inputs.

Every output (`-o`, `--junit`, the GitHub step summary, calibrate's device file and chart,
capture's trace and run.json) is written to a temporary file in the target's own folder and then
renamed over the target (`os.replace`, atomic on POSIX). A failed write (disk full, a file-size
limit, Ctrl-C) removes the temporary file and leaves the previous output as it was: no truncated
file, ever. A target that is a symbolic link is written through: the file it points to is replaced
and the link stays.

`refuse_inputs_as_outputs` stops a command before it runs when an output path names one of its
inputs (the same file, through a symbolic link or a hard link: same device and inode), or when two
outputs name the same file.

A leaf module: it imports nothing from traceanalyze but `errors` (and isal's gzip, to compress).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from traceanalyze.errors import ConfigError

TEMP_PREFIX = ".tmp-"  # temporary files are hidden, and keep the target's name as their suffix


def write_atomically(path: str | os.PathLike[str], data: str | bytes, *, encoding: str = "utf-8",
                     mode: int | None = None) -> None:
    """Write `data` to `path` all at once: a temporary file in the same folder, flushed to disk,
    then renamed over `path`. On any failure (OSError, KeyboardInterrupt, ...) the temporary file
    is removed, `path` keeps its previous content, and the error propagates.

    >>> import tempfile, pathlib
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "report.txt"
    >>> write_atomically(target, "hello\\n")
    >>> target.read_text()
    'hello\\n'
    """
    payload = data.encode(encoding) if isinstance(data, str) else data
    with atomic_path(path, mode=mode) as temporary:
        with open(temporary, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())


def write_output(path: str | os.PathLike[str], data: str | bytes) -> None:
    """`write_atomically`, with a failure as one line (`ConfigError`, exit 2) naming the file."""
    try:
        write_atomically(path, data)
    except OSError as error:
        raise ConfigError(f"{path}: cannot write: {error.strerror or error}") from None


def write_pieces_output(path: str | os.PathLike[str], pieces: Iterable[bytes], *, compress: bool = False) -> None:
    """`write_output` of `b"".join(pieces)`, gzip-compressed when `compress`, written as the pieces
    come: the whole never needs to be in memory (an annotated trace is as large as its input)."""
    try:
        with atomic_path(path) as temporary:
            with open(temporary, "wb") as handle:
                if compress:
                    from isal import igzip

                    with igzip.GzipFile(fileobj=handle, mode="wb") as packed:
                        for piece in pieces:
                            packed.write(piece)
                else:
                    for piece in pieces:
                        handle.write(piece)
                handle.flush()
                os.fsync(handle.fileno())
    except OSError as error:
        raise ConfigError(f"{path}: cannot write: {error.strerror or error}") from None


def append_output(path: str | os.PathLike[str], text: str) -> None:
    """Append `text` to `path` (e.g. `$GITHUB_STEP_SUMMARY`) by writing the old content plus
    `text` to a new file and renaming it over `path`, so a failure leaves the old content whole."""
    try:
        with open(_write_target(Path(path)), "rb") as handle:
            before = handle.read()
    except FileNotFoundError:
        before = b""
    except OSError as error:
        raise ConfigError(f"{path}: cannot read: {error.strerror or error}") from None
    write_output(path, before + text.encode("utf-8"))


@contextmanager
def atomic_path(path: str | os.PathLike[str], *, mode: int | None = None) -> Iterator[Path]:
    """A fresh temporary path in `path`'s folder, for a writer that wants a file name (e.g.
    `torch.profiler`'s `export_chrome_trace`). When the block ends without an exception, the file
    written there replaces `path`; otherwise it is removed and `path` is untouched. The temporary
    name ends with `path`'s own name, so suffix-driven writers (`.json.gz` → gzip) behave the same.
    The file gets `mode` when given (0o600: capture's files, which may hold what a script saw),
    else the replaced file's permissions, else the umask's."""
    target = _write_target(Path(path))
    descriptor, name = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix="." + target.name, dir=target.parent)
    os.close(descriptor)
    temporary = Path(name)
    try:
        yield temporary
        os.chmod(temporary, _mode_for(target) if mode is None else mode)
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    _sync_folder(target.parent)


def refuse_inputs_as_outputs(outputs: Mapping[str, str | os.PathLike[str] | None],
                             inputs: Iterable[str | os.PathLike[str]]) -> None:
    """`ConfigError` (exit 2) when an output names an input file or another output.

    `outputs` maps how the user gave each output (e.g. "--junit") to its path (None: not given);
    `inputs` are the files the command reads. Files are compared by identity (device and inode,
    following symbolic links), so a link or a hard link to an input is caught; outputs that do not
    exist yet are compared by their resolved path.
    """
    seen_inputs = {}
    for source in inputs:
        identity = _identity(Path(source))
        if identity is not None:
            seen_inputs.setdefault(identity, Path(source))
    seen_outputs: dict[object, str] = {}
    for option, target in outputs.items():
        if target is None:
            continue
        path = Path(target)
        identity = _identity(path)
        if identity is not None and identity in seen_inputs:
            raise ConfigError(f"{path}: {option} would overwrite the input {seen_inputs[identity]}; "
                              "choose another file")
        key = identity if identity is not None else os.path.realpath(path)
        if key in seen_outputs:
            raise ConfigError(f"{path}: given to both {seen_outputs[key]} and {option}; choose another file")
        seen_outputs[key] = option


def _identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of the file `path` names (following links), or None when there is none."""
    try:
        status = os.stat(path)
    except (OSError, ValueError):
        return None
    return status.st_dev, status.st_ino


def _write_target(path: Path) -> Path:
    """The file to replace: `path`, or the file a symbolic link `path` points to (so the link stays)."""
    if path.is_symlink():
        return Path(os.path.realpath(path))
    return path


def _mode_for(target: Path) -> int:
    """The permission bits of the file being replaced, or those a new file gets under the umask."""
    try:
        return os.stat(target).st_mode & 0o7777
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


def _sync_folder(folder: Path) -> None:
    """Flush the rename itself to disk where the platform allows it (best effort)."""
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)
