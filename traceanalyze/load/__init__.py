"""Load a Kineto trace file, or a folder of per-rank trace files, into a `Trace`."""

from __future__ import annotations

import re
from pathlib import Path

from traceanalyze.errors import EmptyTraceError, TraceFormatError
from traceanalyze.load.chrome import decode_document, read_bytes
from traceanalyze.load.tables import as_int, build_trace
from traceanalyze.model import Trace, concat_traces

TRACE_SUFFIXES = (".json", ".json.gz")
_RANK_IN_NAME = re.compile(r"rank[_\-.]?(\d+)", re.IGNORECASE)


def trace_files(folder: Path) -> list[Path]:
    """The trace files directly inside a folder, in name order."""
    return sorted(
        p for p in folder.iterdir() if p.is_file() and p.name.lower().endswith(TRACE_SUFFIXES)
    )


def load_trace(path: str | Path, *, include_python: bool = False) -> Trace:
    """Load a `.json`/`.json.gz` Kineto trace, or a folder of per-rank traces, into a `Trace`.

    Parameters
    ----------
    path
        A trace file, or a folder whose `.json`/`.json.gz` files are one rank each.
    include_python
        Keep `python_function` events (dropped by default: they are often half of a trace and no
        analysis needs them).

    Examples
    --------
    >>> trace = load_trace("fixtures/synthetic_training.json.gz")  # doctest: +SKIP
    >>> trace.gpu.height  # doctest: +SKIP
    """
    path = Path(path)
    if path.is_dir():
        files = trace_files(path)
        if not files:
            raise TraceFormatError(f"{path}: folder holds no .json or .json.gz trace files")
        return _load_ranks(files, include_python=include_python)
    if not path.exists():
        raise TraceFormatError(f"{path}: no such file or folder")
    return load_file(path, include_python=include_python)


def load_file(path: Path, *, include_python: bool = False, rank: int | None = None,
              rank_source: str | None = None) -> Trace:
    """One trace file → a single-rank `Trace`. The rank comes from `distributedInfo.rank`
    unless given."""
    document, malformed = decode_document(read_bytes(path), path)
    if not document.traceEvents:
        raise EmptyTraceError(f"{path}: the trace holds no events")
    if rank is None:
        info = document.distributedInfo if isinstance(document.distributedInfo, dict) else {}
        declared = as_int(info.get("rank"))
        rank, rank_source = (declared, "distributedInfo") if declared is not None else (0, "default")
    return build_trace(document, path=path, rank=rank, rank_source=rank_source or "given",
                       malformed=malformed, include_python=include_python)


def declared_rank(path: Path) -> int | None:
    """The rank a file's name gives (`rank3.json.gz`, `trace_rank_3.json`), if any."""
    match = _RANK_IN_NAME.search(path.name)
    return int(match.group(1)) if match else None


def _load_ranks(files: list[Path], *, include_python: bool) -> Trace:
    """Ranks from `distributedInfo.rank`, else from file names, else from file order; the first
    source that gives every file a distinct rank wins."""
    traces = [load_file(f, include_python=include_python) for f in files]
    from_info = [t.meta[0].rank if t.meta[0].rank_source == "distributedInfo" else None for t in traces]
    from_names = [declared_rank(f) for f in files]
    for ranks, source in ((from_info, "distributedInfo"), (from_names, "file name")):
        if None not in ranks and len(set(ranks)) == len(ranks):
            break
    else:
        ranks, source = list(range(len(files))), "file order"
    if any(t.meta[0].rank != r or t.meta[0].rank_source != source for t, r in zip(traces, ranks)):
        traces = [_relabel(t, r, source) for t, r in zip(traces, ranks)]
    order = sorted(range(len(traces)), key=lambda i: ranks[i])
    return concat_traces([traces[i] for i in order])


def _relabel(trace: Trace, rank: int, source: str) -> Trace:
    from dataclasses import replace

    import polars as pl

    def set_rank(frame: pl.DataFrame) -> pl.DataFrame:
        return frame.with_columns(pl.lit(rank, dtype=pl.Int32).alias("rank"))

    return replace(
        trace,
        gpu=set_rank(trace.gpu),
        runtime=set_rank(trace.runtime),
        cpu_ops=set_rank(trace.cpu_ops),
        steps=set_rank(trace.steps),
        flows=set_rank(trace.flows),
        sync=set_rank(trace.sync),
        devices=set_rank(trace.devices),
        skipped=set_rank(trace.skipped),
        meta=(replace(trace.meta[0], rank=rank, rank_source=source),),
        python=None if trace.python is None else set_rank(trace.python),
    )
