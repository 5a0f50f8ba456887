"""HTA 0.5.0's reading of a trace, rebuilt from our tables: the events its analyses see.

`events(trace, rules)` gives, per rank, one frame in int64 ns of the rows HolisticTraceAnalysis keeps
(docs/hta.md, "Differences, and why"):

- Rounding: when pandas parses the `ts` column as float64 (some event has a JSON-float `ts`, or
  none), every event becomes `ts = ceil(ts)`, `end = floor(ts + dur)` in float64 µs.
- Busy rows: every event with an integer `args.stream` other than -1: GPU ops, `cuda_sync` events
  and CPU ops that carry a stream (Inductor's Triton launchers).
- Last step: when the names of all ranks together hold two or more `ProfilerStep` names, CPU-side
  events from the last step's start on are dropped, and so is GPU work whose correlation then
  matches no CPU-side event.

`HtaRules` switches each rule; `OURS` switches them all off (our exact definitions: GPU ops only,
every event kept, ns exact). The raw facts our tables do not keep (whether `ts` was written as a
float, the GPU-side `ProfilerStep` annotations, the stream of CPU ops) come from one light scan of
the file (`raw_facts`).
"""

from __future__ import annotations

import functools
import gzip
import math
from dataclasses import dataclass
from pathlib import Path

import msgspec
import numpy as np
import polars as pl

from traceanalyze.load.times import float_ns
from traceanalyze.model import Trace

# the launch calls HTA's queue length counts (TraceSymbolTable.get_runtime_launch_events_query)
QUEUE_LAUNCHES = ("cudaLaunchKernel", "cudaLaunchKernelExC", "runFunction - job_prep_and_submit_for_execution",
                  "cudaMemcpyAsync", "cudaMemsetAsync", "cuLaunchKernel", "hipLaunchKernel",
                  "hipExtModuleLaunchKernel", "hipMemcpyAsync", "hipMemsetAsync", "hipMemcpyWithStream")
QUEUE_LAUNCH_SET = frozenset(QUEUE_LAUNCHES)
# the cuda_sync events HTA's GPUKernelFilter treats as GPU work whatever their stream
GPU_SYNC_NAMES = ("Event Sync", "Context Sync")
EVENTS_SCHEMA = pl.Schema(
    {
        "rank": pl.Int32,
        "source": pl.String,  # gpu | sync | runtime | cpu_op (a CPU op with a stream arg)
        "name": pl.String,
        "kind": pl.String,  # a GPU op's kind (model.GPU_KINDS); null for the others
        "device": pl.Int64,  # a GPU op's device; null for the others
        "bytes": pl.Int64,  # a copy's or set's bytes; null for the others
        "memory_bw_gbps": pl.Float64,  # Kineto's bandwidth of a copy or set; null for the others
        "stream": pl.Int64,  # -1 on the CPU side, as HTA
        "correlation": pl.Int64,
        "start_ns": pl.Int64,
        "end_ns": pl.Int64,
    }
)


@dataclass(frozen=True)
class HtaRules:
    """Which of HTA's rules `events` applies. All on: HTA's numbers; all off (`OURS`): ours."""

    rounding: bool = True
    non_gpu_busy: bool = True
    last_step: bool = True
    include_last_step: bool = False  # HTA's `include_last_profiler_step`: every CPU event kept
    quirks: bool = True  # HTA's row 0 read as "no link", and its time zero (every rank shifted)


HTA = HtaRules()
EARLIEST, LATEST = -(2**62), 2**62
OURS = HtaRules(rounding=False, non_gpu_busy=False, last_step=False, quirks=False)


# --- the raw scan -------------------------------------------------------------------------------

class _Args(msgspec.Struct, gc=False):
    stream: object = None
    correlation: object = None


class _RawEvent(msgspec.Struct, gc=False):
    ts: object = None
    dur: object = None
    cat: object = None
    name: object = None
    pid: object = None
    tid: object = None
    args: _Args | None = None


class _RawDocument(msgspec.Struct):
    traceEvents: list[_RawEvent] = []


@dataclass(frozen=True)
class RawFacts:
    """What HTA reads from a file that our tables leave out."""

    rounds: bool  # pandas makes `ts` float64: HTA rounds every event
    step_annotation_ts: tuple[float, ...]  # gpu_user_annotation `ProfilerStep#N` starts, µs
    stream_cpu_ops: tuple[tuple[str, int, int, int], ...]  # (name, stream, start_ns, end_ns)
    # the first event when HTA keeps it (it has `dur` and `cat`, not "Trace"): its row label is 0,
    # which HTA's joins also read as "no linked event" (`first_event`): (start_ns, correlation, stream)
    first_event: tuple[int, int | None, int | None] | None = None
    # the earliest start HTA keeps (events with `dur` and `cat`, not "Trace"), ns; its time zero
    min_ts_ns: int | None = None
    min_ts_rounded_ns: int | None = None  # the same, rounded up to whole µs as HTA does when it rounds
    gpu_annotations: tuple[tuple[str, int, int], ...] = ()  # gpu_user_annotation (name, start_ns, end_ns)
    # HTA's row label (the position in `traceEvents`) of each event its queue length reads, and
    # the GPU event's own `pid`, `tid` (`linked_rows`)
    linked: tuple[tuple[int, int, bool, object, object], ...] = ()


def raw_facts(path: Path) -> RawFacts:
    """One scan of `path` (only `ts`, `dur`, `cat`, `name`, `args.stream`, `args.correlation` are
    decoded), memoised by the file's path, size and modification time."""
    status = path.stat()
    return _scan(path, status.st_size, status.st_mtime_ns)


@functools.lru_cache(maxsize=16)
def _scan(path: Path, size: int, mtime_ns: int) -> RawFacts:
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    events = msgspec.json.decode(raw, type=_RawDocument).traceEvents
    rounds, earliest = False, None
    steps: list[float] = []
    cpu_ops: list[tuple[str, int, int, int]] = []
    annotations: list[tuple[str, int, int]] = []
    linked: list[tuple[int, int, bool, object, object]] = []
    for index, event in enumerate(events):  # one pass: a 1 GB trace holds millions of events
        ts, cat, args = event.ts, event.cat, event.args
        numeric = type(ts) is int or type(ts) is float
        rounds = rounds or ts is None or type(ts) is float
        if numeric and event.dur is not None and cat is not None and cat != "Trace" \
                and (earliest is None or ts < earliest):  # type: ignore[operator]
            earliest = ts
        if cat == "gpu_user_annotation" and numeric:
            start = _ns(ts)
            annotations.append((str(event.name), start, start + (_ns(event.dur) or 0)))  # type: ignore[operator]
            if str(event.name).startswith("ProfilerStep#"):
                steps.append(float(ts))  # type: ignore[arg-type]
        if args is None:
            continue
        stream, correlation = args.stream, args.correlation
        on_stream = type(stream) is int and stream != -1
        if cat == "cpu_op" and on_stream and numeric:
            start = _ns(ts)
            end = start + (_ns(event.dur) or 0)  # type: ignore[operator]
            cpu_ops.append((str(event.name), stream, start, end))  # type: ignore[arg-type]
        if type(correlation) is int and correlation != -1 and (
                on_stream or (type(event.name) is str and event.name in QUEUE_LAUNCH_SET)):
            linked.append((index, correlation, on_stream, event.pid, event.tid))
    first = None
    if events and events[0].dur is not None and events[0].cat not in (None, "Trace") \
            and isinstance(events[0].ts, (int, float)):
        head, head_args = events[0], events[0].args or _Args()
        first = (_ns(head.ts), head_args.correlation if _is_stream(head_args.correlation) else None,
                 head_args.stream if _is_stream(head_args.stream) else None)
    min_rounded = None if earliest is None else math.ceil(earliest) * 1000
    return RawFacts(rounds, tuple(steps), tuple(cpu_ops), first, _ns(earliest), min_rounded, tuple(annotations),
                    tuple(linked))


def _ns(value_us: object) -> int | None:
    """A JSON number of µs → ns as our loader reads it (an integer exactly, whatever its size)."""
    if isinstance(value_us, bool) or not isinstance(value_us, (int, float)):
        return None
    return value_us * 1000 if isinstance(value_us, int) else float_ns(value_us)


def _is_stream(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# --- the rules ----------------------------------------------------------------------------------

def hta_times(frame: pl.DataFrame, rounds: bool) -> pl.DataFrame:
    """`start_ns`/`end_ns` as HTA sees them: `ceil(ts)` and `floor(ts + dur)` with `ts`, `dur` the
    float64 µs that JSON parsing gives (the correctly rounded quotient by 1000), back in ns;
    unchanged when HTA does not round. Below 2^53 ns a time converts to float64 exactly and one
    IEEE division is correctly rounded, so numpy computes it; beyond, Python's int / int."""
    if not rounds or frame.is_empty():
        return frame
    starts, ends = frame["start_ns"], frame["end_ns"]
    durations = ends - starts
    if max(abs(starts).max(), abs(durations).max()) < 2**53:  # type: ignore[arg-type]
        ts = starts.to_numpy().astype(np.float64) / 1000
        dur = durations.to_numpy().astype(np.float64) / 1000
        start_us, end_us = np.ceil(ts), np.floor(ts + dur)
    else:
        pairs = list(zip(starts.to_list(), durations.to_list()))
        start_us = np.array([math.ceil(s / 1000) for s, _ in pairs], dtype=np.float64)
        end_us = np.array([math.floor(s / 1000 + d / 1000) for s, d in pairs], dtype=np.float64)
    return frame.with_columns(pl.Series("start_ns", start_us.astype(np.int64) * 1000, pl.Int64),
                              pl.Series("end_ns", end_us.astype(np.int64) * 1000, pl.Int64))


def step_names(trace: Trace) -> int:
    """How many distinct `ProfilerStep` names HTA's symbol table holds (all ranks together)."""
    return trace.steps["name"].n_unique()


def cutoff_ns(trace: Trace, rounds: bool) -> int | None:
    """One rank's last ProfilerStep start (HTA-rounded), where HTA cuts when it drops the last
    step: any non-GPU event of that name, so the GPU-side annotation too where the GPU runs behind
    the CPU. None when the rank has no step (HTA then drops all of its events)."""
    annotations = [math.ceil(value) * 1000 if rounds else round(value * 1000)
                   for value in raw_facts(trace.source).step_annotation_ts] if one_file(trace) else []
    starts = [*hta_times(trace.steps, rounds)["start_ns"].to_list(), *annotations]
    return max(starts) if starts else None


def one_file(trace: Trace) -> bool:
    return len(trace.meta) == 1 and trace.meta[0].source.is_file()


def _tagged(frame: pl.DataFrame, source: str, stream: pl.Expr | None = None) -> pl.DataFrame:
    kind = pl.col("kind").cast(pl.String) if source == "gpu" else pl.lit(None, pl.String)
    device = pl.col("device").cast(pl.Int64) if source == "gpu" else pl.lit(None, pl.Int64)
    size = pl.col("bytes").cast(pl.Int64, strict=False) if source == "gpu" else pl.lit(None, pl.Int64)
    bandwidth = pl.col("memory_bw_gbps") if source == "gpu" else pl.lit(None, pl.Float64)
    return frame.select(
        "rank", pl.lit(source).alias("source"), pl.col("name").cast(pl.String), kind.alias("kind"),
        device.alias("device"), size.alias("bytes"), bandwidth.alias("memory_bw_gbps"),
        (pl.col("stream") if stream is None else stream).alias("stream"), "correlation", "start_ns", "end_ns",
    ).cast(EVENTS_SCHEMA)  # type: ignore[arg-type]


def rank_events(trace: Trace, rules: HtaRules, *, rounds: bool, several_steps: bool) -> pl.DataFrame:
    """One rank's events as HTA keeps them (EVENTS_SCHEMA). `rounds`: HTA rounds this file;
    `several_steps`: all ranks together name two or more ProfilerSteps."""
    parts = [_tagged(trace.gpu, "gpu"), _tagged(trace.runtime, "runtime", pl.lit(-1, pl.Int64))]
    if rules.non_gpu_busy:
        parts.append(_tagged(trace.sync, "sync"))
        if one_file(trace):
            extras = raw_facts(trace.source).stream_cpu_ops
            parts.append(pl.DataFrame(
                {"rank": [trace.ranks[0]] * len(extras), "source": ["cpu_op"] * len(extras),
                 "name": [e[0] for e in extras], "kind": [None] * len(extras),
                 "device": [None] * len(extras), "bytes": [None] * len(extras),
                 "memory_bw_gbps": [None] * len(extras), "stream": [e[1] for e in extras],
                 "correlation": [None] * len(extras), "start_ns": [e[2] for e in extras],
                 "end_ns": [e[3] for e in extras]}, schema=EVENTS_SCHEMA))
    rounds = rounds and rules.rounding
    rows = hta_times(pl.concat(parts), rounds)
    if rules.last_step and several_steps:
        cutoff = LATEST if rules.include_last_step else cutoff_ns(trace, rounds)
        cutoff = EARLIEST if cutoff is None else cutoff
        cpu_side = rows.filter(pl.col("source") == "runtime")
        kept = cpu_side.filter(pl.col("start_ns") < cutoff)["correlation"].drop_nulls().unique().implode()
        gpu_work = ((pl.col("stream") >= 0) & (pl.col("correlation") >= 0)).fill_null(False) | pl.col(
            "name").is_in(GPU_SYNC_NAMES)
        rows = rows.filter(
            pl.when(gpu_work).then(pl.col("correlation").is_in(kept)).otherwise(pl.col("start_ns") < cutoff)
        )
    return rows


def events(trace: Trace, rules: HtaRules) -> dict[int, pl.DataFrame]:
    """Every rank's events as HTA keeps them, by rank (EVENTS_SCHEMA, times in ns)."""
    several_steps = step_names(trace) >= 2
    result = {}
    for one in trace.split_by_rank():
        rounds = rules.rounding and hta_rounds(one)
        result[one.ranks[0]] = rank_events(one, rules, rounds=rounds, several_steps=several_steps)
    return result


def hta_rounds(trace: Trace) -> bool:
    """Whether HTA rounds this one-rank trace's times (a trace not read from a file: no)."""
    return one_file(trace) and raw_facts(trace.source).rounds


def first_event(trace: Trace, rules: HtaRules) -> tuple[int, int | None, int | None] | None:
    """HTA's row 0 of a one-rank trace (see `RawFacts.first_event`), its start HTA-rounded; None
    when the rules are ours or HTA does not keep that event."""
    if not (rules.quirks and one_file(trace)):
        return None
    first = raw_facts(trace.source).first_event
    if first is None:
        return None
    start = math.ceil(first[0] / 1000) * 1000 if rules.rounding and hta_rounds(trace) else first[0]
    return (start, first[1], first[2])


def linked_rows(trace: Trace, rules: HtaRules) -> pl.DataFrame | None:
    """HTA's row label (`index`: the event's position in the file) of one rank's launch calls
    (`gpu` false) and GPU events (`gpu` true) by `correlation`, with the GPU event's `pid` and
    `tid` as written (HTA's queue length shows them); None when the rules are ours or the trace
    was not read from one file."""
    if not (rules.quirks and one_file(trace)):
        return None
    rows = raw_facts(trace.source).linked
    return pl.DataFrame({"index": [r[0] for r in rows], "correlation": [r[1] for r in rows],
                         "gpu": [r[2] for r in rows], "pid": [r[3] for r in rows], "tid": [r[4] for r in rows]},
                        schema={"index": pl.Int64, "correlation": pl.Int64, "gpu": pl.Boolean,
                                "pid": pl.Object, "tid": pl.Object})


def time_zero_ns(trace: Trace, rules: HtaRules) -> int:
    """HTA's time zero: the earliest start of all ranks (HTA shifts every rank by it); 0 when the
    rules are ours (ranks keep their recorded clock) or the traces were not read from files."""
    if not rules.quirks or not all(one_file(one) for one in trace.split_by_rank()):
        return 0
    starts = []
    for one in trace.split_by_rank():
        facts = raw_facts(one.source)
        starts.append(facts.min_ts_rounded_ns if rules.rounding and facts.rounds else facts.min_ts_ns)
    return min((s for s in starts if s is not None), default=0)


def annotations(trace: Trace, rules: HtaRules, *, on_gpu: bool) -> dict[int, pl.DataFrame] | None:
    """Per rank, the user annotations HTA keeps (`name`, `start_ns`, `end_ns`): on the GPU
    timeline (`gpu_user_annotation`, from the scan) or on the CPU (`user_annotation`); None when
    no rank has any (HTA: the category is not among its symbols)."""
    several_steps = step_names(trace) >= 2
    result, found = {}, False
    for one in trace.split_by_rank():
        if on_gpu:
            rows = raw_facts(one.source).gpu_annotations if one_file(one) else ()
            frame = pl.DataFrame(rows, schema={"name": pl.String, "start_ns": pl.Int64, "end_ns": pl.Int64},
                                 orient="row")
        else:
            frame = one.cpu_ops.filter(pl.col("category") == "user_annotation").select(
                pl.col("name").cast(pl.String), "start_ns", "end_ns")
        found = found or not frame.is_empty()
        rounds = rules.rounding and hta_rounds(one)
        frame = hta_times(frame, rounds)
        if rules.last_step and several_steps and not rules.include_last_step:
            cutoff = cutoff_ns(one, rounds)
            frame = frame.filter(pl.col("start_ns") < (EARLIEST if cutoff is None else cutoff))
        result[one.ranks[0]] = frame
    return result if found else None


def busy(frame: pl.DataFrame) -> pl.DataFrame:
    """The rows HTA's analyses call GPU kernels: `stream != -1`."""
    return frame.filter(pl.col("stream").fill_null(-1) != -1)
