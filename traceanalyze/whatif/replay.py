"""Re-timing a rank's dependency graph: a discrete-event replay (docs/whatif.md, "The replay").

Each node starts at the latest of its start edges (the source's start or end plus the edge's
offset; a node without one keeps its recorded start) and ends `dur` later; a blocking call ends
`fixed` after the later of its start and the ends (a collective: the starts) of what it waits on. Starts and ends are
computed in the graph's topological order. On the unmodified graph every recorded time comes back
exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from traceanalyze.whatif.graph import Graph


@dataclass(frozen=True)
class Timing:
    """Replayed `start` and `end` of every node of a graph (int64 ns, the trace's clock)."""

    start: np.ndarray
    end: np.ndarray


def _incoming(graph: Graph, select: np.ndarray) -> tuple[list[int], list[int], list[bool], list[int]]:
    """CSR lists of the selected edges by destination: pointers, sources, from-end flags, offsets."""
    dst = graph.dst[select]
    by_dst = np.argsort(dst, kind="stable")
    ptr = np.searchsorted(dst[by_dst], np.arange(graph.size + 1)).tolist()
    return ptr, graph.src[select][by_dst].tolist(), graph.src_end[select][by_dst].tolist(), \
        graph.offset[select][by_dst].tolist()


def reproduces_recording(graph: Graph) -> bool:
    """Whether replaying `graph` gives back its recorded times, checked edge by edge (vectorised):
    each node's recorded start is the latest of its start edges evaluated on the recorded times
    (or it has none), and its recorded end follows from its start (and waits). Then, by induction
    along the topological order, the replay reproduces every recorded time."""
    n = graph.size
    if n == 0:
        return True
    low = np.iinfo(np.int64).min
    starts = ~graph.wait
    source = np.where(graph.src_end[starts], graph.end[graph.src[starts]], graph.start[graph.src[starts]])
    latest = np.full(n, low)
    np.maximum.at(latest, graph.dst[starts], source + graph.offset[starts])
    start_ok = np.where(latest == low, True, latest == graph.start)
    waited = graph.start.copy()
    waits = graph.wait
    np.maximum.at(waited, graph.dst[waits], np.where(graph.src_end[waits], graph.end[graph.src[waits]],
                                                     graph.start[graph.src[waits]]))
    end = np.where(graph.blocking, waited + graph.fixed, graph.start + graph.dur)
    return bool(start_ok.all() and (end == graph.end).all())


def replay(graph: Graph, *, base: Timing | None = None, since: int = 0) -> Timing:
    """The replayed times of every node of `graph`: O(nodes + edges), one pass in topological
    order. With `base` (the times of a graph that differs from this one only at or after position
    `since` of the order), the pass starts there and earlier times are taken from `base`."""
    s_ptr, s_src, s_from_end, s_offset = _incoming(graph, ~graph.wait)
    w_ptr, w_src, w_from_end, _ = _incoming(graph, graph.wait)
    origin = base if base is not None else Timing(graph.start, graph.end)
    start = origin.start.tolist()  # a source cut out of a cycle keeps its recorded times
    end = origin.end.tolist()
    dur, fixed, blocking = graph.dur.tolist(), graph.fixed.tolist(), graph.blocking.tolist()
    for half in graph.order[since if base is not None else 0:].tolist():
        node = half >> 1
        if half & 1 == 0:
            begin = None
            for k in range(s_ptr[node], s_ptr[node + 1]):
                s = s_src[k]
                t = (end[s] if s_from_end[k] else start[s]) + s_offset[k]
                if begin is None or t > begin:
                    begin = t
            if begin is not None:
                start[node] = begin
            continue
        begin = start[node]
        if blocking[node]:
            for k in range(w_ptr[node], w_ptr[node + 1]):
                t = end[w_src[k]] if w_from_end[k] else start[w_src[k]]
                if t > begin:  # noqa: PLR1730 (the hot loop: no call)
                    begin = t
            end[node] = begin + fixed[node]
        else:
            end[node] = begin + dur[node]
    return Timing(np.asarray(start, np.int64), np.asarray(end, np.int64))
