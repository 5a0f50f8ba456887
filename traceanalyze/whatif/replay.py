"""Re-timing a rank's dependency graph: a discrete-event replay (docs/whatif.md, "The replay").

Each node, in topological order, starts at the latest of its start edges (the source's start or
end plus the edge's offset; a node without one keeps its recorded start) and ends `dur` later; a
blocking call ends `fixed` after the later of its start and the ends of the ops it waits on. On
the unmodified graph every recorded time comes back exactly.
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


def replay(graph: Graph) -> Timing:
    """The replayed times of every node of `graph`: O(nodes + edges), one pass in topological order."""
    n = graph.size
    by_dst = np.argsort(graph.dst, kind="stable")
    ptr = np.searchsorted(graph.dst[by_dst], np.arange(n + 1)).tolist()
    src = graph.src[by_dst].tolist()
    src_end = graph.src_end[by_dst].tolist()
    offset = graph.offset[by_dst].tolist()
    wait = graph.wait[by_dst].tolist()
    start = graph.start.tolist()  # sources inside a cycle (`graph.topological_order`) keep their recorded times
    end = graph.end.tolist()
    dur, fixed, blocking = graph.dur.tolist(), graph.fixed.tolist(), graph.blocking.tolist()
    for node in graph.order.tolist():
        begin = None
        waited = None
        for k in range(ptr[node], ptr[node + 1]):
            s = src[k]
            if wait[k]:
                t = end[s]
                if waited is None or t > waited:
                    waited = t
                continue
            t = (end[s] if src_end[k] else start[s]) + offset[k]
            if begin is None or t > begin:
                begin = t
        if begin is None:
            begin = start[node]
        start[node] = begin
        if blocking[node]:
            end[node] = (begin if waited is None or waited < begin else waited) + fixed[node]
        else:
            end[node] = begin + dur[node]
    return Timing(np.asarray(start, np.int64), np.asarray(end, np.int64))
