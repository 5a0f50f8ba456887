"""A finding's action as a change of the dependency graph: one function per `Remedy` kind
(docs/whatif.md, "Transformations"). Each returns a new graph, or raises `Unmodelled` when the
remedy names something the graph does not hold (an op not in this rank's trace).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

import numpy as np

from traceanalyze.analysis.findings.finding import Remedy
from traceanalyze.whatif.graph import CALL, GPU, Graph


class Unmodelled(ValueError):
    """The remedy cannot be applied to this graph; the message says why."""


@dataclass
class _Arrays:
    """The mutable copies a transformation edits."""

    dur: np.ndarray
    fixed: np.ndarray
    blocking: np.ndarray
    offset: np.ndarray

    def graph(self, graph: Graph) -> Graph:
        return replace(graph, dur=self.dur, fixed=self.fixed, blocking=self.blocking, offset=self.offset)


def apply(graph: Graph, remedies: Iterable[Remedy]) -> Graph:
    """`graph` with every remedy applied, in order (several findings' together: their effects
    overlap in the replay, not in a sum)."""
    arrays = _Arrays(graph.dur.copy(), graph.fixed.copy(), graph.blocking.copy(), graph.offset.copy())
    index = _Index(graph)
    for remedy in remedies:
        TRANSFORMS[remedy.kind](graph, index, arrays, remedy)
    return arrays.graph(graph)


class _Index:
    """Lookups shared by the transformations: GPU ops by (device, stream, start_ns), each node's
    incoming edges by kind, the launch call of each GPU op."""

    def __init__(self, graph: Graph) -> None:
        gpu = np.flatnonzero(graph.kind == GPU)
        self.gpu = {(graph.lanes[graph.lane[i]][1], graph.lanes[graph.lane[i]][2], int(graph.start[i])): int(i)
                    for i in gpu}
        same_lane = graph.lane[graph.src] == graph.lane[graph.dst]
        launch = (~graph.wait) & ~graph.src_end & (graph.kind[graph.dst] == GPU) & (graph.kind[graph.src] == CALL)
        self.lane_edge = np.full(graph.size, -1, np.int64)  # the edge from the node's predecessor on its lane
        chain = np.flatnonzero(same_lane & ~graph.wait & graph.src_end)
        self.lane_edge[graph.dst[chain]] = chain
        self.lane_next = np.full(graph.size, -1, np.int64)  # the node after it on its lane
        self.lane_next[graph.src[chain]] = graph.dst[chain]
        host = graph.kind != GPU
        self.host_edge = host[graph.src] & host[graph.dst] & graph.src_end & ~graph.wait  # CPU work between calls
        self.launch_edge = np.full(graph.size, -1, np.int64)
        launches = np.flatnonzero(launch)
        self.launch_edge[graph.dst[launches]] = launches

    def ops(self, remedy: Remedy) -> np.ndarray:
        missing = [key for key in remedy.gpu_ops if tuple(key) not in self.gpu]
        if missing:
            device, stream, start = missing[0]
            raise Unmodelled(f"no GPU op on device {device} stream {stream} at {start} ns in this rank's trace")
        return np.array([self.gpu[tuple(key)] for key in remedy.gpu_ops], np.int64)

    def launcher(self, graph: Graph, op: int) -> int:
        edge = self.launch_edge[op]
        return int(graph.src[edge]) if edge >= 0 else -1


def _durations(remedy: Remedy, count: int) -> list[float]:
    if len(remedy.durations_ns) != count:
        raise Unmodelled(f"{remedy.kind}: {count} ops but {len(remedy.durations_ns)} durations")
    return list(remedy.durations_ns)


def retime(graph: Graph, index: _Index, arrays: _Arrays, remedy: Remedy) -> None:
    """Each op takes its new duration (a faster format or layout; 0 removes its time)."""
    ops = index.ops(remedy)
    arrays.dur[ops] = np.rint(np.maximum(_durations(remedy, len(ops)), 0)).astype(np.int64)


def _remove_op(graph: Graph, index: _Index, arrays: _Arrays, op: int) -> None:
    """An op that no longer runs: no time, no gap before it on its stream, no launch latency; its
    launch call takes no time."""
    arrays.dur[op] = 0
    for edge in (index.lane_edge[op], index.launch_edge[op]):
        if edge >= 0:
            arrays.offset[edge] = min(int(arrays.offset[edge]), 0)
    call = index.launcher(graph, op)
    if call >= 0 and not arrays.blocking[call]:
        arrays.dur[call] = 0


def merge(graph: Graph, index: _Index, arrays: _Arrays, remedy: Remedy) -> None:
    """The ops become one op of `durations_ns[0]` where the first ran (fusion, one SDPA kernel);
    the others and their launch calls are gone (the CPU time between the launches stays)."""
    ops = index.ops(remedy)
    if len(ops) == 0 or len(remedy.durations_ns) < 1:
        raise Unmodelled("merge: no ops or no duration")
    first = ops[np.argmin(graph.start[ops])]
    arrays.dur[first] = round(max(remedy.durations_ns[0], 0))
    for op in ops:
        if op != first:
            _remove_op(graph, index, arrays, int(op))


def graph_launch(graph: Graph, index: _Index, arrays: _Arrays, remedy: Remedy) -> None:
    """The launches become one graph launch (as long as the rank's graph launches take, or the
    first launch when it has none) where the first was; the CPU time between the first and the last
    launch goes (what was captured runs no Python), blocking calls in between stay; the kernels
    run back to back (each as soon as the one before it ends and the graph launch returned)."""
    ops = index.ops(remedy)
    calls = sorted({index.launcher(graph, int(op)) for op in ops} - {-1}, key=lambda c: graph.start[c])
    if not calls:
        raise Unmodelled("graph: the ops have no launch calls in this trace")
    first_call, last_call = calls[0], calls[-1]
    graph_calls = np.flatnonzero(graph.graph_call)
    arrays.dur[first_call] = int(np.median(graph.dur[graph_calls])) if len(graph_calls) else arrays.dur[first_call]
    lane = graph.lane[first_call]
    between = np.flatnonzero((graph.lane == lane) & (graph.start > graph.start[first_call]) &
                             (graph.start <= graph.start[last_call]))
    for node in between:
        edge = index.lane_edge[node]
        if edge >= 0:
            arrays.offset[edge] = min(int(arrays.offset[edge]), 0)
        if not arrays.blocking[node]:
            arrays.dur[node] = 0
    first_op = ops[np.argmin(graph.start[ops])]
    captured = set(ops.tolist())
    for op in ops:
        if op == first_op:
            continue
        edge = index.lane_edge[op]
        if edge >= 0 and int(graph.src[edge]) in captured:
            arrays.offset[edge] = 0
        if index.launch_edge[op] >= 0:  # submitted when the graph launch returns
            arrays.offset[index.launch_edge[op]] = 0


def remove_cpu(graph: Graph, index: _Index, arrays: _Arrays, remedy: Remedy) -> None:
    """The CPU time of the spans leaves their thread: the CPU work before each node (its thread
    edge, or the wake edge from the steps' thread) shrinks by its overlap with the spans, a call
    inside them takes its time less the overlap, and a blocking call in them waits no more (only
    its own cost, less the overlap, is left). Spans of one thread are taken as their union, all at
    once (a `cpu-bound-gaps` finding can name 100 k gaps)."""
    if not remedy.cpu_spans:
        raise Unmodelled("remove_cpu: no CPU spans")
    host = graph.kind != GPU
    spans = np.array(remedy.cpu_spans, np.int64).reshape(-1, 3)
    for tid in np.unique(spans[:, 0]):
        lanes = [i for i, (is_stream, _, lane_tid) in enumerate(graph.lanes) if not is_stream and lane_tid == tid]
        if not lanes:
            raise Unmodelled(f"remove_cpu: no thread {tid} in this rank's trace")
        covered = _Coverage(spans[spans[:, 0] == tid, 1:])
        on_thread = host & np.isin(graph.lane, lanes)
        into = np.flatnonzero(index.host_edge & on_thread[graph.dst])
        overlap = covered.between(graph.end[graph.src[into]], graph.start[graph.dst[into]])
        shrink = (overlap > 0) & (arrays.offset[into] > 0)
        arrays.offset[into[shrink]] = np.maximum(arrays.offset[into[shrink]] - overlap[shrink], 0)
        calls = np.flatnonzero(on_thread & (graph.kind == CALL))
        inside = covered.between(graph.start[calls], graph.end[calls])
        calls, inside = calls[inside > 0], inside[inside > 0]
        # a blocking call no longer waits: only its own cost (after what it waited on) is left of it,
        # less the spans' overlap (a sync whose gap part is removed no longer waits for the copy before)
        own = np.where(arrays.blocking[calls], np.minimum(arrays.fixed[calls], graph.end[calls] - graph.start[calls]),
                       graph.end[calls] - graph.start[calls])
        arrays.blocking[calls] = False
        arrays.dur[calls] = np.maximum(own - inside, 0)


class _Coverage:
    """The union of intervals `(start, end)`: how much of it lies in `[a, b]`, vectorised."""

    def __init__(self, intervals: np.ndarray) -> None:
        intervals = intervals[intervals[:, 1] > intervals[:, 0]]
        intervals = intervals[np.argsort(intervals[:, 0], kind="stable")]
        starts, ends = intervals[:, 0], np.maximum.accumulate(intervals[:, 1]) if len(intervals) else intervals[:, 1]
        # merge overlapping intervals: a new one begins where its start passes every earlier end
        new = np.ones(len(starts), bool)
        new[1:] = starts[1:] > ends[:-1]
        group = np.cumsum(new) - 1
        self.start = starts[new]
        self.end = np.zeros(len(self.start), np.int64)
        np.maximum.at(self.end, group, ends)
        self.before = np.concatenate([[0], np.cumsum(self.end - self.start)])  # covered before interval i

    def upto(self, t: np.ndarray) -> np.ndarray:
        """How much of the union lies before each time of `t`."""
        i = np.searchsorted(self.start, t, side="right") - 1
        inside = np.clip(t - self.start[np.maximum(i, 0)], 0, (self.end - self.start)[np.maximum(i, 0)])
        return np.where(i >= 0, self.before[np.maximum(i, 0)] + inside, 0)

    def between(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if len(self.start) == 0:
            return np.zeros(len(a), np.int64)
        return np.maximum(self.upto(b) - self.upto(a), 0)


def async_copy(graph: Graph, index: _Index, arrays: _Arrays, remedy: Remedy) -> None:
    """The copies no longer hold the CPU: each copy call takes only its own cost (the time it took
    after its copy ended), and the blocking call right after it on its thread that waited on the
    copy (the stream synchronisation a `.to(device)` from pageable memory makes, which
    `non_blocking=True` leaves out) waits no more, taking its own cost; with `durations_ns`, the
    copies take them (pinned bandwidth)."""
    ops = index.ops(remedy)
    if remedy.durations_ns:
        arrays.dur[ops] = np.rint(np.maximum(_durations(remedy, len(ops)), 0)).astype(np.int64)
    waits = np.flatnonzero(graph.wait & np.isin(graph.src, ops))
    waited_by = set(zip(graph.src[waits].tolist(), graph.dst[waits].tolist()))
    for op in ops:
        call = index.launcher(graph, int(op))
        if call < 0:
            continue
        after = int(index.lane_next[call])
        for node in (call, after):
            if node >= 0 and arrays.blocking[node] and (node == call or (int(op), node) in waited_by):
                arrays.blocking[node] = False
                arrays.dur[node] = min(int(arrays.fixed[node]), int(graph.dur[node]))


def rank_delay(graph: Graph, index: _Index, arrays: _Arrays, remedy: Remedy) -> None:
    """A late rank no longer holds this one: each named collective op is shorter by the delay
    (`durations_ns[0]`), no shorter than 0."""
    ops = index.ops(remedy)
    if not remedy.durations_ns:
        raise Unmodelled("rank_delay: no delay")
    delay = round(remedy.durations_ns[0])
    arrays.dur[ops] = np.maximum(arrays.dur[ops] - delay, 0)


def unqueue(graph: Graph, index: _Index, arrays: _Arrays, remedy: Remedy) -> None:
    """Each op, launched ahead of time, starts as soon as its stream's previous op ended (no gap
    after it) and the rank's typical launch latency after its launch (no more than that)."""
    ops = index.ops(remedy)
    for op in ops:
        lane, launch = index.lane_edge[op], index.launch_edge[op]
        if lane >= 0:
            arrays.offset[lane] = min(int(arrays.offset[lane]), 0)
        if launch >= 0:
            arrays.offset[launch] = min(int(arrays.offset[launch]), graph.launch_latency_ns)


TRANSFORMS = {"retime": retime, "merge": merge, "remove_cpu": remove_cpu, "graph": graph_launch,
              "async_copy": async_copy, "rank_delay": rank_delay, "unqueue": unqueue}
