"""The loader's limits: how much a trace file may make it read, inflate, hold and decode.

Traces come from colleagues, CI artifacts and issue attachments, so the loader bounds its memory
and time whatever the file holds: a gzip bomb, gigabytes of whitespace between two events, a device
file such as `/dev/zero`. Each limit has a default far above what real traces need (docs/limits.md
says how far) and a command-line flag to raise it; crossing one is a `LimitError`: one line naming
the file, the limit and the flag, exit code 2.

To add a limit: a field here (with its default), its flag in `FLAGS`, a check where the loader
meets the quantity raising `exceeded(...)`, a case in tests/hostile/, and a line in docs/limits.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from traceanalyze.errors import TraceFormatError

MIB = 1 << 20


class LimitError(TraceFormatError):
    """A trace crosses one of the loader's limits (`LoadLimits`)."""


@dataclass(frozen=True)
class LoadLimits:
    """How far the loader goes before refusing a file (exit 2).

    Parameters
    ----------
    event_bytes
        Uncompressed bytes the reader may hold without finding the end of an event: the size of
        one event, or of what lies between two events (whitespace, say). Real events are a few
        KB; the largest seen, under 1 MB.
    events
        Events per trace file. A 1 GB trace holds about 4.5 million.
    inflation
        Uncompressed bytes per compressed byte of a `.json.gz` (checked once `INFLATION_FLOOR`
        bytes are inflated). Kineto traces gzip 8 to 30 times; a gzip bomb, 250 to 1000 times.
    op_depth
        How deep CPU ops (and annotations) may nest on one thread. Analyses walk up the op tree
        from each launch (its enclosing op, step, annotation), so their time grows with points ×
        depth: bounded, it stays linear in the trace. Real traces nest 1 to 10 deep.
    download_bytes, download_seconds
        A rank file named by URL (a folder's URL): the most bytes copied from it, and the longest
        time taken, before the loader reads it (an endless HTTP body would fill the disk).
    """

    event_bytes: int = 256 * MIB
    events: int = 50_000_000
    inflation: float = 100.0
    op_depth: int = 1000
    download_bytes: int = 16 << 30
    download_seconds: float = 3600.0


INFLATION_FLOOR = 64 * MIB  # below this much inflated, any ratio is fine (small files compress well)

# the command-line flag that raises each limit (cli/options.py), and how its value is written there
FLAGS = {"event_bytes": "--max-event-mb", "events": "--max-events", "inflation": "--max-inflation",
         "op_depth": "--max-op-depth", "download_bytes": "--max-download-mb"}


def exceeded(path: Path, what: str, limit: str, value: str) -> LimitError:
    """The one-line error for crossing `limit` (a `LoadLimits` field), e.g. `exceeded(path,
    "more than 50000000 events", "events", "100000000")`."""
    return LimitError(f"{path}: {what}; a limit of the loader against hostile files "
                      f"(raise it with {FLAGS[limit]} {value} if the file is a trace you trust)")


def check_op_depth(path: Path, cpu_ops, limits: LoadLimits) -> None:
    """Refuse a trace whose CPU ops nest deeper than `limits.op_depth` (their `depth` column: 0
    for an op with no parent)."""
    if cpu_ops.height == 0:
        return
    deepest = cpu_ops["depth"].max()
    if deepest is not None and deepest + 1 > limits.op_depth:
        raise exceeded(path, f"CPU ops nested {deepest + 1} deep (more than {limits.op_depth})", "op_depth",
                       str(deepest + 1))
