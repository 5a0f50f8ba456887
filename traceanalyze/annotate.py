"""The annotated trace (`traceanalyze annotate`): the original Chrome trace with the diagnosis
drawn on its timeline, for Perfetto UI or chrome://tracing (docs/annotate.md).

Added, in a process of its own named "traceanalyze" (pid one above the largest integer pid of the
trace):
* one track per device with its idle gaps, each a slice named `idle: <cause>`;
* one track per finding, each evidence interval a slice named by the finding's title;
and, on every GPU op the roofline judged, `args["traceanalyze"]` = {bound, roof,
intensity_flop_per_byte, roof_fraction}. Every other event and top-level key is kept as it was.

The file is read twice as a stream (`load.chrome.EventChunks`), never decoded whole: once to find
the GPU ops to mark and the largest pid, once to write each event's text as it was, or re-encoded
with its figures. The output is written as it is made (`output.write_pieces_output`): memory stays
that of one chunk and the report, whatever the trace's size (a 1 GB trace decoded whole took 7.5 GB).
A document the stream reader does not take (`NotStreamable`: small or unusual layouts) is decoded
whole, as before.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import polars as pl

from traceanalyze.errors import TraceFormatError
from traceanalyze.load.chrome import EventChunks, NotStreamable
from traceanalyze.load.reading import BLOCK_SIZE, read_bytes
from traceanalyze.load.limits import LoadLimits
from traceanalyze.units import ns_to_us as _us
from traceanalyze.report.model import Report

CATEGORY = "traceanalyze"  # `cat` of every added event
PROCESS_NAME = "traceanalyze"
GAP_TRACK_TID = 1  # + device: one idle-gap track per (rank, device)
FINDING_TRACK_TID = 1000  # + index of the finding: one track per finding
ADDED_BATCH = 10_000  # added events encoded at a time when streamed


def _complete(name: str, pid: int, tid: int, start_ns: int, end_ns: int, args: dict[str, Any]) -> dict[str, Any]:
    return {"ph": "X", "cat": CATEGORY, "name": name, "pid": pid, "tid": tid, "ts": _us(start_ns),
            "dur": _us(end_ns - start_ns), "args": args}


def _metadata(name: str, pid: int, tid: int, value: str) -> dict[str, Any]:
    return {"ph": "M", "name": name, "pid": pid, "tid": tid, "args": {"name": value}}


def added_events(report: Report, pid: int) -> list[dict[str, Any]]:
    """The idle-gap and finding tracks of `report`, under process `pid`."""
    return list(_added(report, pid))


def _added(report: Report, pid: int) -> Iterator[dict[str, Any]]:
    """`added_events`, one at a time (a 1 GB trace has some 400k idle gaps: as a list of dicts
    and then its JSON, they held 200 MB at once)."""
    yield _metadata("process_name", pid, 0, PROCESS_NAME)
    tracks: set[tuple[int, int]] = set()
    finding_index = 0
    for rank in report.ranks:
        gaps = rank.gaps.select("device", "start_ns", "end_ns", "cause", "cpu_op", "annotation", "step", "sync_call")
        for gap in gaps.iter_rows(named=True):
            tid = GAP_TRACK_TID + gap["device"] + 10_000 * rank.rank  # ranks of a folder never share a track
            if (rank.rank, gap["device"]) not in tracks:
                tracks.add((rank.rank, gap["device"]))
                yield _metadata("thread_name", pid, tid, f"idle gaps: rank {rank.rank} device {gap['device']}")
            args = {key: gap[key] for key in ("cause", "cpu_op", "annotation", "step", "sync_call")
                    if gap[key] is not None}
            yield _complete(f"idle: {gap['cause']}", pid, tid, gap["start_ns"], gap["end_ns"], args)
        job_found = report.job.findings.filter(pl.col("rank") == rank.rank)  # the straggler etc., on its own clock
        for finding in pl.concat([rank.findings, job_found]).iter_rows(named=True):
            tid = FINDING_TRACK_TID + finding_index
            finding_index += 1
            yield _metadata("thread_name", pid, tid, f"finding: {finding['id']} (rank {rank.rank})")
            args = {key: finding[key] for key in ("id", "regime", "evidence", "action", "gain_ns", "confidence")}
            for span in finding["spans"]:
                yield _complete(finding["title"], pid, tid, span["start_ns"], span["end_ns"], args)


def annotated_pieces(path: Path, report: Report, *, limits: LoadLimits = LoadLimits(),
                     block_size: int = BLOCK_SIZE,
                     progress: Callable[[int, int], None] | None = None) -> Iterator[bytes]:
    """The annotated trace's JSON text, in pieces to write one after the other (streamed, in
    chunks of about `block_size` bytes: see the module's docstring); the whole document's when the
    stream reader does not take the file. `progress(done, total)`: bytes of the file read over
    both passes, after each chunk."""
    size = path.stat().st_size

    def read(chunks: EventChunks, before: int) -> None:
        if progress is not None:
            progress(before + chunks.position, 2 * size)

    judged = _judged(report)
    try:
        marked, largest_pid = _marked_events(EventChunks(path, block_size=block_size, limits=limits), judged,
                                             lambda chunks: read(chunks, 0))
    except NotStreamable:
        yield annotated_document(path, report)
        return
    chunks = EventChunks(path, block_size=block_size, limits=limits)
    rows = marked.iter_rows()
    pending = next(rows, None)
    opened, written = False, 0
    for events in chunks.decode_each(_raw_events):
        texts: list[Any] = list(events)
        while pending is not None and pending[0] < written + len(texts):
            index = pending[0] - written
            texts[index] = msgspec.json.encode(_with_figures(msgspec.json.decode(texts[index]), pending[1:]))
            pending = next(rows, None)
        if not opened:  # the document up to its events, as written (known once the reading began)
            yield chunks.before_events if not chunks.bare_array else b'{"traceEvents":['
            opened = True
        if texts:
            yield (b"," if written else b"") + b",".join(texts)
            written += len(texts)
        read(chunks, size)
    if not opened:  # no events
        yield chunks.before_events if not chunks.bare_array else b'{"traceEvents":['
    for batch in _batches(_added(report, (largest_pid or 0) + 1), ADDED_BATCH):
        yield (b"," if written else b"") + msgspec.json.encode(batch)[1:-1]
        written += len(batch)
    yield chunks.after_events if not chunks.bare_array else b"]}"


_FIGURES = ("bound", "roof", "intensity_flop_per_byte", "roof_fraction")


def _batches(items: Iterator[Any], size: int) -> Iterator[list[Any]]:
    batch: list[Any] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


@dataclass(frozen=True)
class _Judged:
    """The GPU ops the roofline judged (with a correlation): `figures` holds each one's
    correlation, name (`name_id`, its number in `names`), place among the ops of that correlation
    and name in start order (`nth`), and figures. Names are numbers for the join: joined on
    300-character kernel names, 320k ops held some 300 MB."""

    figures: pl.DataFrame
    names: dict[str, int]


def _judged(report: Report) -> _Judged:
    # names stay categorical until the few distinct ones are numbered (as text, one per row, the
    # names of 400k kernels held 120 MB)
    frames = [rank.roofline.filter(pl.col("correlation").is_not_null()).sort("start_ns", maintain_order=True).select(
        "correlation", pl.col("name").cast(pl.Categorical), pl.col("regime").cast(pl.String).alias("bound"), "roof",
        pl.col("intensity").alias("intensity_flop_per_byte"), pl.col("pct_of_roof").alias("roof_fraction"))
        for rank in report.ranks if not rank.roofline.is_empty()]
    schema = {"correlation": pl.Int64, "name": pl.Categorical(), "bound": pl.String, "roof": pl.String,
              "intensity_flop_per_byte": pl.Float64, "roof_fraction": pl.Float64}
    figures = pl.concat(frames, how="vertical_relaxed") if frames else pl.DataFrame(schema=schema)
    distinct = figures.select(pl.col("name").unique().drop_nulls().cast(pl.String))["name"].to_list()
    names = {name: number for number, name in enumerate(sorted(distinct))}
    numbers = pl.DataFrame({"name": list(names), "name_id": list(names.values())},
                           schema={"name": pl.String, "name_id": pl.Int32},
                           ).with_columns(pl.col("name").cast(pl.Categorical))
    figures = (figures.join(numbers, on="name", how="left", maintain_order="left")
               .select("correlation", "name_id", *_FIGURES))
    return _Judged(figures.with_columns(pl.int_range(pl.len()).over("correlation", "name_id").alias("nth")), names)


class _ProbeArgs(msgspec.Struct):
    correlation: Any = None


class _Probe(msgspec.Struct):
    """What the first pass reads of an event (other keys are passed over)."""

    ph: Any = None
    name: Any = None
    ts: Any = None
    pid: Any = None
    args: _ProbeArgs | None | bool | int | float | str | list = None


_probe_decoder = msgspec.json.Decoder(list[_Probe | None | bool | int | float | str | list])
_raw_decoder = msgspec.json.Decoder(list[msgspec.Raw])


def _raw_events(text: bytes) -> list[msgspec.Raw]:
    return _raw_decoder.decode(text)


def _marked_events(chunks: EventChunks, judged: _Judged,
                   after_chunk: Callable[[EventChunks], None]) -> tuple[pl.DataFrame, int | None]:
    """First pass: the events that get figures → (a frame of event index and figures, sorted by
    index; the largest integer pid). An event is a GPU op of the roofline when it is complete
    (`ph` X), its args hold an integer `correlation` and its name is a judged op's: the k-th such
    event of a (correlation, name) in time order (`ts`, then file order) gets the k-th op's figures."""
    found: list[pl.DataFrame] = []
    largest_pid: int | None = None
    offset = 0
    for count, candidates, chunk_pid in chunks.decode_each(lambda text: _chunk_candidates(text, judged.names)):
        found.append(candidates.with_columns(pl.col("index") + offset))
        if chunk_pid is not None:
            largest_pid = chunk_pid if largest_pid is None else max(largest_pid, chunk_pid)
        offset += count
        after_chunk(chunks)
    return _matched(found, judged), largest_pid


def _chunk_candidates(text: bytes, names: dict[str, int]) -> tuple[int, pl.DataFrame, int | None]:
    """A chunk's events → (how many, the candidates (index in the chunk, correlation, name_id, ts),
    the largest integer pid); by the compiled scanner where it takes the chunk, else msgspec."""
    scanned = _scanned_candidates(text, names)
    if scanned is not None:
        return scanned
    events = _probe_decoder.decode(text)
    marked = [(index, event.args.correlation, names[event.name], _sort_time(event.ts))
              for index, event in enumerate(events)
              if type(event) is _Probe and event.ph == "X" and type(event.args) is _ProbeArgs
              and isinstance(event.args.correlation, int) and isinstance(event.name, str) and event.name in names
              and -(1 << 63) <= event.args.correlation < (1 << 63)]
    pids = [int(event.pid) for event in events if type(event) is _Probe and isinstance(event.pid, int)]
    return len(events), _candidates(marked), max(pids, default=None)


def _scanned_candidates(text: bytes, names: dict[str, int]) -> tuple[int, pl.DataFrame, int | None] | None:
    """`_chunk_candidates` by the compiled scanner; None where it does not take the chunk, or where
    a `pid` or `correlation` is a boolean (Python counts those as integers: msgspec decides)."""
    from traceanalyze.load import columnar

    scanned = columnar.scan(text)
    if scanned is None:
        return None
    import numpy as np

    fields, strings = scanned["fields"], scanned["strings"]

    def tags(field: str) -> Any:
        return np.frombuffer(fields[field][0], dtype=np.uint8)

    def values(field: str, dtype: Any = np.int64) -> Any:
        return np.frombuffer(fields[field][1 if dtype is np.int64 else -1], dtype=dtype)

    if (tags("pid") == columnar.BOOL).any() or (tags("correlation") == columnar.BOOL).any():
        return None
    name_ids = np.array([names.get(s, -1) for s in strings] + [-1], dtype=np.int32)
    is_x = np.array([s == "X" for s in strings] + [False])
    sentinel = len(strings)
    name_code = np.where(tags("name") == columnar.STR, values("name"), sentinel)
    phase_code = np.where(tags("ph") == columnar.STR, values("ph"), sentinel)
    chosen = np.flatnonzero(is_x[phase_code] & (name_ids[name_code] >= 0) & (tags("args") == columnar.OBJECT)
                            & (tags("correlation") == columnar.INT))
    ts_tags = tags("ts")[chosen]
    ts = np.where(ts_tags == columnar.INT, values("ts")[chosen].astype(np.float64),
                  np.where(ts_tags == columnar.FLOAT, values("ts", np.float64)[chosen], 0.0))
    candidates = pl.DataFrame({
        "index": chosen.astype(np.int64), "correlation": values("correlation")[chosen],
        "name_id": name_ids[name_code[chosen]], "ts": ts,
    }, schema=_CANDIDATES)
    integer_pids = values("pid")[tags("pid") == columnar.INT]
    return int(scanned["n"]), candidates, int(integer_pids.max()) if integer_pids.size else None


_CANDIDATES = {"index": pl.Int64, "correlation": pl.Int64, "name_id": pl.Int32, "ts": pl.Float64}


def _candidates(rows: list[tuple[int, int, int, float]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=_CANDIDATES, orient="row")


def _matched(found: list[pl.DataFrame], judged: _Judged) -> pl.DataFrame:
    """The candidate events (index, correlation, name_id, ts) → index and figures of those that get
    them: the k-th of a (correlation, name) in time order, then file order, gets the k-th op's."""
    candidates = pl.concat(found) if found else pl.DataFrame(schema=_CANDIDATES)
    return (candidates.sort("ts", "index")
            .with_columns(pl.int_range(pl.len()).over("correlation", "name_id").alias("nth"))
            .join(judged.figures, on=["correlation", "name_id", "nth"], how="inner")
            .select("index", *_FIGURES).sort("index"))


def _with_figures(event: dict[str, Any], values: tuple[Any, ...]) -> dict[str, Any]:
    figures = {name: value for name, value in zip(_FIGURES, values) if value is not None}
    return {**event, "args": {**event["args"], CATEGORY: figures}}


def _sort_time(ts: Any) -> float:
    """An event's `ts` as the first pass orders events by: a number, else 0."""
    if isinstance(ts, (int, float)):
        try:
            return float(ts)
        except OverflowError:
            return 0.0
    return 0.0


def annotated_document(path: Path, report: Report) -> bytes:
    """The trace file at `path` decoded whole, with `report`'s tracks and kernel figures, as JSON
    (what `annotated_pieces` gives for a document the stream reader does not take)."""
    raw = read_bytes(path)
    try:
        document = msgspec.json.decode(raw)
    except msgspec.DecodeError as error:
        raise TraceFormatError(f"{path}: invalid JSON ({error})") from None
    if isinstance(document, list):
        document = {"traceEvents": document}
    if not isinstance(document, dict) or not isinstance(document.get("traceEvents"), list):
        raise TraceFormatError(f"{path}: JSON without 'traceEvents': not a Chrome/Kineto trace")
    events = document["traceEvents"]
    judged = _judged(report)
    names = judged.names
    marked = [(index, event["args"]["correlation"], names[event["name"]], _sort_time(event.get("ts")))
              for index, event in enumerate(events)
              if isinstance(event, dict) and event.get("ph") == "X" and isinstance(event.get("args"), dict)
              and isinstance(event["args"].get("correlation"), int) and isinstance(event.get("name"), str)
              and event["name"] in names
              and -(1 << 63) <= event["args"]["correlation"] < (1 << 63)]
    for index, *values in _matched([_candidates(marked)], judged).iter_rows():
        events[index] = _with_figures(events[index], tuple(values))
    pids = [e["pid"] for e in events if isinstance(e, dict) and isinstance(e.get("pid"), int)]
    document["traceEvents"] = events + added_events(report, int(max(pids, default=0)) + 1)
    return msgspec.json.encode(document)
