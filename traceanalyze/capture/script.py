"""Running the user's script the way `python SCRIPT ARGS…` would: as `__main__`, with its own
`sys.argv` and `sys.path[0]`, and its traceback shown as its own. No torch here."""

from __future__ import annotations

import os
import runpy
import sys
import traceback
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType

from traceanalyze.errors import CaptureError

PYTHON_SUFFIXES = (".py", ".pyw")
_OUR_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the traceanalyze package


def resolve_script(script: Path) -> str:
    """The absolute path of a runnable Python script, or `CaptureError` (exit 2) saying why not.

    Accepts what `python SCRIPT` accepts: a `.py` file, a folder or zip holding `__main__.py`, or
    any other text file that compiles as Python (an extension-less file with a python shebang).

    >>> resolve_script(Path("no/such/train.py"))
    Traceback (most recent call last):
    traceanalyze.errors.CaptureError: no/such/train.py: no such file
    """
    path = os.path.abspath(script)
    if not os.path.exists(path):
        raise CaptureError(f"{script}: no such file")
    if os.path.isdir(path):
        if os.path.isfile(os.path.join(path, "__main__.py")):
            return path
        raise CaptureError(f"{script}: is a folder without __main__.py, not a Python script")
    if path.endswith(PYTHON_SUFFIXES):
        if not os.access(path, os.R_OK):
            raise CaptureError(f"{script}: cannot be read (permission denied)")
        return path
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            if "__main__.py" in archive.namelist():
                return path
        raise CaptureError(f"{script}: is a zip file without __main__.py, not a Python script")
    try:
        source = Path(path).read_bytes()
    except OSError as error:
        raise CaptureError(f"{script}: cannot be read ({error.strerror or error})") from None
    if b"\0" in source:
        raise CaptureError(f"{script}: is a binary file, not a Python script")
    try:
        compile(source, path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        raise CaptureError(f"{script}: is not a Python script (expected a .py file)") from None
    return path


@contextmanager
def as_main(path: str, argv0: str, args: tuple[str, ...]) -> Iterator[None]:
    """Sets `sys.argv` and `sys.path[0]` as `python argv0 args…` would, and restores them after."""
    saved_argv, saved_path = sys.argv, list(sys.path)
    script_dir = path if (os.path.isdir(path) or zipfile.is_zipfile(path)) else os.path.dirname(path)
    sys.argv = [argv0, *args]
    if sys.path:
        sys.path[0] = script_dir
    else:
        sys.path.append(script_dir)
    try:
        yield
    finally:
        sys.argv = saved_argv
        sys.path[:] = saved_path


def run_as_main(path: str) -> None:
    """Runs the script as `__main__` (inside `as_main`); its exceptions propagate unchanged."""
    runpy.run_path(path, run_name="__main__")


def script_traceback(error: BaseException) -> str:
    """The traceback Python would print for the script's uncaught `error`, without our frames
    (traceanalyze and runpy) in front of the script's own."""
    entries: list[TracebackType] = []
    tb: TracebackType | None = error.__traceback__
    while tb is not None:
        entries.append(tb)
        tb = tb.tb_next
    runpy_at = [i for i, entry in enumerate(entries) if _is_runpy(entry.tb_frame.f_code.co_filename)]
    if runpy_at:  # the script's frames start right after runpy's run_path machinery
        start = runpy_at[0]
        while start < len(entries) and _is_runpy(entries[start].tb_frame.f_code.co_filename):
            start += 1
    else:  # e.g. a failure while compiling: skip our own frames
        start = 0
        while start < len(entries) and entries[start].tb_frame.f_code.co_filename.startswith(_OUR_DIR + os.sep):
            start += 1
    first = entries[start] if start < len(entries) else None
    return "".join(traceback.format_exception(type(error), error, first))


def _is_runpy(filename: str) -> bool:
    return filename == "<frozen runpy>" or os.path.basename(filename) == "runpy.py"


def system_exit_code(error: SystemExit) -> tuple[int, str | None]:
    """(exit code, message to print) for `SystemExit`, as the interpreter maps it: None → 0,
    an int → itself, anything else → printed to stderr and 1."""
    code = error.code
    if code is None:
        return 0, None
    if isinstance(code, int):
        return code, None
    return 1, str(code)
