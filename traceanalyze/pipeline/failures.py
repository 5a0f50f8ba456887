"""An executor that fails is one line naming it, exit 2, never a traceback: a local worker process
killed (`BrokenProcessPool`), a Dask scheduler that does not answer, an address of an unknown
scheme, `ray://` without Ray's client, a local Ray that cannot start. Our own errors (bad input,
raised in a worker and carried back) pass as they are. Credentials in an address are never shown
(`without_credentials`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from traceanalyze.errors import TraceAnalyzeError
from traceanalyze.sources import USERINFO, without_credentials

Result = TypeVar("Result")



class ExecutorError(TraceAnalyzeError):
    """The executor (local processes, Ray, Dask) failed, not the input."""


def _described(error: BaseException, address: str | None) -> str:
    text = " ".join(str(error).split()) or "no message"
    found = USERINFO.match(address or "")
    if found:  # the executor may quote the address without its scheme: 'user:pw@host:port'
        text = text.replace(found.group("userinfo"), "")
    if len(text) > 300:
        text = text[:300] + "…"
    return f"{type(error).__name__}: {without_credentials(text)}"


def _hint(executor: str, address: str | None, error: BaseException) -> str:
    if type(error).__name__ == "BrokenProcessPool":
        return "a worker process died (killed, or out of memory?); try --workers 1"
    if executor == "ray" and (isinstance(error, ImportError) or "ray[client]" in str(error)):
        return "ray:// needs Ray's client: pip install 'ray[client]' (or 'traceanalyze[ray]')"
    if address is None:
        return {"ray": "a local Ray could not start", "dask": "a local Dask cluster could not start"}.get(
            executor, "a worker failed")
    if isinstance(error, (OSError, TimeoutError)):
        return f"cannot reach {without_credentials(address)}"
    if isinstance(error, (ValueError, RuntimeError)):
        return f"cannot use the address {without_credentials(address)}"
    return f"failed with {without_credentials(address)}"


def guarded(executor: str, address: str | None, run: Callable[[], Result]) -> Result:
    """`run()`, with any failure that is not one of our own errors made an `ExecutorError`:
    "--executor dask: cannot reach tcp://10.0.0.9:8786 (OSError: Timed out trying to connect …)"."""
    try:
        return run()
    except TraceAnalyzeError:
        raise
    except (Exception, SystemExit) as error:  # noqa: BLE001 - whatever the executor raised: one line, exit 2
        raise ExecutorError(f"--executor {executor}: {_hint(executor, address, error)} "
                            f"({_described(error, address)})") from None
