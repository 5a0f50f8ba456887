"""The ranks of a job replayed together, joined at their collectives (docs/whatif.md, "Across
ranks").

Each rank's graph (`graph.build_graph`, with that rank's remedies applied) is kept as it is; the
k-th collective of a process group on each of its ranks is the same collective
(`analysis.collectives`: NCCL issues them in one order on every rank of a group), and its kernel
on each rank ends a fixed transfer time after the latest start of that collective on any rank: a
rank that arrives early waits for the last one, as it did. Clocks are taken as they are (each
rank's own, as recorded); the transfer is read from the recorded times so that the unmodified
joint replay gives back every recorded time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import polars as pl

from traceanalyze.analysis.collectives import rank_collectives
from traceanalyze.analysis.findings.finding import Remedy
from traceanalyze.model import Trace
from traceanalyze.whatif.graph import GPU, Graph, build_graph, topological_order
from traceanalyze.whatif.replay import replay, reproduces_recording
from traceanalyze.whatif.transform import apply


@dataclass(frozen=True)
class JobGraph:
    """The ranks' graphs as one (`graph`), each rank's nodes at `first[i]:first[i + 1]`, and
    how many collectives join them (`collectives`, counted once per collective)."""

    graph: Graph
    ranks: tuple[int, ...]
    first: tuple[int, ...]
    collectives: int


def _concatenated(graphs: Sequence[Graph]) -> tuple[dict[str, np.ndarray], list[int]]:
    first = [0]
    for g in graphs:
        first.append(first[-1] + g.size)
    nodes = {name: np.concatenate([getattr(g, name) for g in graphs]) for name in
             ("kind", "start", "end", "dur", "fixed", "blocking", "graph_call", "row")}
    edges = {name: np.concatenate([getattr(g, name) + first[i] for i, g in enumerate(graphs)])
             for name in ("src", "dst")}
    edges |= {name: np.concatenate([getattr(g, name) for g in graphs]) for name in ("src_end", "offset", "wait")}
    return {**nodes, **edges}, first


def _collective_nodes(trace: Trace, graph: Graph, base: int) -> pl.DataFrame:
    """One rank's collectives (`process_group`, `seq`) with their node in the joint graph."""
    found = rank_collectives(trace).select("process_group", "seq", "stream", "start_ns")
    gpu = np.flatnonzero(graph.kind == GPU)
    keys = pl.DataFrame({"stream": [graph.lanes[graph.lane[i]][2] for i in gpu],
                         "start_ns": graph.start[gpu], "node": gpu + base},
                        schema={"stream": pl.Int64, "start_ns": pl.Int64, "node": pl.Int64})
    return found.join(keys.unique(["stream", "start_ns"], keep="first"), on=["stream", "start_ns"], how="inner")


def job_graph(trace: Trace, remedies: Mapping[int, Sequence[Remedy]] | None = None) -> JobGraph:
    """Every rank of `trace` in one graph, each with its `remedies` (by rank) applied, its
    collectives joined (a group's collective matched on at least two ranks, and as many on each as
    the rank with the fewest holds)."""
    remedies = remedies or {}
    ranks = trace.split_by_rank()
    recorded = [build_graph(rank) for rank in ranks]
    graphs = [apply(g, remedies.get(r.meta[0].rank, ())) for g, r in zip(recorded, ranks, strict=True)]
    arrays, first = _concatenated(graphs)
    found = pl.concat([_collective_nodes(r, g, first[i]) for i, (r, g) in enumerate(zip(ranks, recorded, strict=True))],
                      how="vertical")
    # each collective on every rank of its group: a group seen on two ranks or more, as many of
    # its collectives as the rank with the fewest holds
    rank_of = np.searchsorted(np.asarray(first[1:]), found["node"].to_numpy(), side="right")
    found = found.with_columns(pl.Series("rank_index", rank_of))
    fewest = (found.group_by("process_group", "rank_index").len()
              .group_by("process_group").agg(pl.col("len").min().alias("fewest"), pl.len().alias("holders")))
    kept = (pl.col("holders") >= 2) & (pl.col("seq") < pl.col("fewest"))
    joined = found.join(fewest, on="process_group").filter(kept).group_by("process_group", "seq").agg(pl.col("node"))
    src, dst = [], []
    for nodes in joined["node"].to_list():
        for a in nodes:
            for b in nodes:
                if a != b:
                    src.append(b)
                    dst.append(a)
    src_a, dst_a = np.asarray(src, np.int64), np.asarray(dst, np.int64)
    start, end = arrays["start"], arrays["end"]
    blocking = arrays["blocking"].copy()
    fixed = arrays["fixed"].copy()
    members = np.unique(dst_a)
    blocking[members] = True
    latest = start.copy()
    np.maximum.at(latest, dst_a, start[src_a])
    fixed[members] = end[members] - latest[members]
    n = len(start)
    graph = replace(recorded[0], kind=arrays["kind"], start=start, end=end, dur=arrays["dur"], fixed=fixed,
                    blocking=blocking, graph_call=arrays["graph_call"], row=arrays["row"],
                    lane=np.zeros(n, np.int64), lanes=(), src=np.concatenate([arrays["src"], src_a]),
                    dst=np.concatenate([arrays["dst"], dst_a]),
                    src_end=np.concatenate([arrays["src_end"], np.zeros(len(src_a), bool)]),
                    offset=np.concatenate([arrays["offset"], np.zeros(len(src_a), np.int64)]),
                    wait=np.concatenate([arrays["wait"], np.ones(len(src_a), bool)]), order=np.zeros(0, np.int64))
    graph = replace(graph, order=topological_order(n, graph.src, graph.dst, graph.src_end, graph.wait, start, end))
    return JobGraph(graph, tuple(r.meta[0].rank for r in ranks), tuple(first), joined.height)


@dataclass(frozen=True)
class JobTiming:
    """Per rank (in `ranks` order): its window, recorded (`measured_ns`) and replayed."""

    ranks: tuple[int, ...]
    measured_ns: tuple[int, ...]
    replayed_ns: tuple[int, ...]

    @property
    def mean_replayed_ns(self) -> float:
        return float(np.mean(self.replayed_ns)) if self.replayed_ns else 0.0


def _windows(job: JobGraph, start: np.ndarray, end: np.ndarray) -> tuple[int, ...]:
    out = []
    for i in range(len(job.ranks)):
        nodes = np.arange(job.first[i], job.first[i + 1])
        gpu = nodes[job.graph.kind[nodes] == GPU]
        chosen = gpu if len(gpu) else nodes
        out.append(int(end[chosen].max() - start[chosen].min()) if len(chosen) else 0)
    return tuple(out)


def replay_job(trace: Trace, remedies: Mapping[int, Sequence[Remedy]] | None = None) -> JobTiming:
    """Each rank's window, recorded and replayed with the ranks joined at their collectives (and
    each rank's `remedies` applied)."""
    job = job_graph(trace, remedies)
    graph = job.graph
    if not remedies and reproduces_recording(graph):
        timing_start, timing_end = graph.start, graph.end
    else:
        timing = replay(graph)
        timing_start, timing_end = timing.start, timing.end
    return JobTiming(job.ranks, _windows(job, graph.start, graph.end), _windows(job, timing_start, timing_end))
