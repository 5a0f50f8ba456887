"""The annotated trace (`traceanalyze annotate`): the original Chrome trace with the diagnosis
drawn on its timeline, for Perfetto UI or chrome://tracing (docs/annotate.md).

Added, in a process of its own named "traceanalyze" (pid one above the largest integer pid of the
trace):
* one track per device with its idle gaps, each a slice named `idle: <cause>`;
* one track per finding, each evidence interval a slice named by the finding's title;
and, on every GPU op the roofline judged, `args["traceanalyze"]` = {bound, roof,
intensity_flop_per_byte, roof_fraction}. Every other event and top-level key is kept as it was.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import msgspec
import polars as pl
from isal import igzip

from traceanalyze.errors import TraceFormatError
from traceanalyze.load.chrome import read_bytes
from traceanalyze.report.model import Report

CATEGORY = "traceanalyze"  # `cat` of every added event
PROCESS_NAME = "traceanalyze"
GAP_TRACK_TID = 1  # + device: one idle-gap track per (rank, device)
FINDING_TRACK_TID = 1000  # + index of the finding: one track per finding


def _us(ns: int) -> float:
    return ns / 1000


def _complete(name: str, pid: int, tid: int, start_ns: int, end_ns: int, args: dict[str, Any]) -> dict[str, Any]:
    return {"ph": "X", "cat": CATEGORY, "name": name, "pid": pid, "tid": tid, "ts": _us(start_ns),
            "dur": _us(end_ns - start_ns), "args": args}


def _metadata(name: str, pid: int, tid: int, value: str) -> dict[str, Any]:
    return {"ph": "M", "name": name, "pid": pid, "tid": tid, "args": {"name": value}}


def added_events(report: Report, pid: int) -> list[dict[str, Any]]:
    """The idle-gap and finding tracks of `report`, under process `pid`."""
    events = [_metadata("process_name", pid, 0, PROCESS_NAME)]
    tracks: set[tuple[int, int]] = set()
    finding_index = 0
    for rank in report.ranks:
        gaps = rank.gaps.select("device", "start_ns", "end_ns", "cause", "cpu_op", "annotation", "step", "sync_call")
        for gap in gaps.iter_rows(named=True):
            tid = GAP_TRACK_TID + gap["device"] + 10_000 * rank.rank  # ranks of a folder never share a track
            if (rank.rank, gap["device"]) not in tracks:
                tracks.add((rank.rank, gap["device"]))
                events.append(_metadata("thread_name", pid, tid, f"idle gaps: rank {rank.rank} device {gap['device']}"))
            args = {key: gap[key] for key in ("cause", "cpu_op", "annotation", "step", "sync_call") if gap[key] is not None}
            events.append(_complete(f"idle: {gap['cause']}", pid, tid, gap["start_ns"], gap["end_ns"], args))
        job_found = report.job.findings.filter(pl.col("rank") == rank.rank)  # the straggler etc., on its own clock
        for finding in pl.concat([rank.findings, job_found]).iter_rows(named=True):
            tid = FINDING_TRACK_TID + finding_index
            finding_index += 1
            events.append(_metadata("thread_name", pid, tid, f"finding: {finding['id']} (rank {rank.rank})"))
            args = {key: finding[key] for key in ("id", "regime", "evidence", "action", "gain_ns", "confidence")}
            for span in finding["spans"]:
                events.append(_complete(finding["title"], pid, tid, span["start_ns"], span["end_ns"], args))
    return events


def _kernel_args(report: Report) -> dict[tuple[int, str], list[dict[str, Any]]]:
    """(correlation, name) → the roofline figures of those GPU ops, in start order."""
    by_key: dict[tuple[int, str], list[dict[str, Any]]] = defaultdict(list)
    for rank in report.ranks:
        frame = rank.roofline
        if frame.is_empty():
            continue
        rows = frame.filter(pl.col("correlation").is_not_null()).sort("start_ns").select(
            "correlation", "name", pl.col("regime").cast(pl.String).alias("bound"), "roof",
            pl.col("intensity").alias("intensity_flop_per_byte"), pl.col("pct_of_roof").alias("roof_fraction"))
        for row in rows.iter_rows(named=True):
            key = (row.pop("correlation"), row.pop("name"))
            by_key[key].append({name: value for name, value in row.items() if value is not None})
    return by_key


def _with_kernel_args(events: list[Any], report: Report) -> list[Any]:
    """`events` with args["traceanalyze"] on each GPU op the roofline has (matched by correlation
    and name, in time order)."""
    figures = _kernel_args(report)
    if not figures:
        return events
    candidates: dict[tuple[int, str], list[int]] = defaultdict(list)
    for index, event in enumerate(events):
        if not isinstance(event, dict) or event.get("ph") != "X" or not isinstance(event.get("args"), dict):
            continue
        correlation = event["args"].get("correlation")
        if isinstance(correlation, int) and (correlation, event.get("name")) in figures:
            candidates[(correlation, event["name"])].append(index)
    out = list(events)
    for key, indices in candidates.items():
        indices.sort(key=lambda i: events[i].get("ts") or 0)
        for index, values in zip(indices, figures[key]):
            event = dict(events[index])
            event["args"] = {**event["args"], CATEGORY: values}
            out[index] = event
    return out


def annotated_trace(path: Path, report: Report, *, compress: bool) -> bytes:
    """`annotated_document`, gzip-compressed when `compress` (for an output named `*.gz`)."""
    document = annotated_document(path, report)
    return igzip.compress(document) if compress else document


def annotated_document(path: Path, report: Report) -> bytes:
    """The trace file at `path` (its whole document) with `report`'s tracks and kernel figures, as JSON."""
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
    pids = [e["pid"] for e in events if isinstance(e, dict) and isinstance(e.get("pid"), int)]
    pid = max(pids, default=0) + 1
    document["traceEvents"] = _with_kernel_args(events, report) + added_events(report, pid)
    return msgspec.json.encode(document)
