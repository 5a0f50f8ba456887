"""The dependency graph of one rank, built from its recorded trace (docs/whatif.md, "The graph").

Nodes are the rank's runtime calls and ProfilerStep boundaries (in order on their host thread)
and its GPU ops (in order on their stream). Edges say what a node waits for:

- thread order: a call starts after the previous node of its thread ended, plus the recorded CPU
  time between them (`offset`: the CPU work in between);
- launch: a GPU op starts after the call that launched it started, plus a launch latency;
- stream order: a GPU op starts after the previous op of its stream ended, plus a small gap;
- stream waits (`cudaStreamWaitEvent`): the next op of the waiting stream starts after the last op
  of every other stream of the device launched before the wait call;
- blocking waits: a synchronising call (stream, event or device synchronisation, a copy or set
  that held the CPU until its own GPU op ended) ends after the GPU ops it waited on (`wait`
  edges), plus the call's own cost after them (`fixed`).

Each offset is read from the recorded times so that re-timing the unmodified graph gives back
the recorded times exactly (`replay.replay`); what the offsets assume where the binding edge
changes is said in docs/whatif.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from traceanalyze.model import RUNTIME_KINDS, Trace

CALL, MARK, GPU = 0, 1, 2  # node kinds: a runtime call, a step boundary, a GPU op
DEFAULT_LAUNCH_LATENCY_NS = 5_000  # when no kernel of the rank was clearly bound by its launch
WAIT_TOLERANCE_NS = 1_000  # a blocking call waited on an op that ended up to this much after it returned


@dataclass(frozen=True)
class Graph:
    """One rank's dependency graph: per node (`kind`, recorded `start`/`end`, `dur`, `fixed` for a
    blocking call's own cost after its waits, `thread`/`stream` keys, `row` in the trace's table),
    and per edge (`src` → `dst`, `src_end`: from the source's end rather than its start,
    `offset`, `wait`: an end constraint of a blocking call). `order` is a topological order of the
    nodes' starts (`2 * node`) and ends (`2 * node + 1`).
    Arrays are numpy; a transformation returns a new Graph (`dataclasses.replace`)."""

    kind: np.ndarray
    start: np.ndarray
    end: np.ndarray
    dur: np.ndarray
    fixed: np.ndarray
    blocking: np.ndarray  # bool: end = max(start, waits) + fixed
    graph_call: np.ndarray  # bool: a CUDA graph launch call
    row: np.ndarray  # row of trace.runtime (CALL), trace.steps (MARK: 2*step row + is_end), trace.gpu (GPU)
    lane: np.ndarray  # index of the node's thread (CALL, MARK) or stream (GPU) in `lanes`
    lanes: tuple[tuple[int, int, int], ...]  # (0, pid, tid) of a thread, (1, device, stream) of a stream
    src: np.ndarray
    dst: np.ndarray
    src_end: np.ndarray
    offset: np.ndarray
    wait: np.ndarray
    order: np.ndarray
    launch_latency_ns: int

    @property
    def size(self) -> int:
        return len(self.kind)


def _i64(series: pl.Series) -> np.ndarray:
    """An integer column as int64 numbers, -1 where null."""
    if not series.null_count():  # no polars query: a small rank's dozen columns took 1 ms
        return series.to_numpy().astype(np.int64, copy=True)
    return series.cast(pl.Int64).fill_null(-1).to_numpy().astype(np.int64, copy=True)


def _lane_index(keys: np.ndarray) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """Index of each row's (a, b) key among the distinct keys (in sorted order), and the keys."""
    if len(keys) == 0:
        return np.zeros(0, np.int64), []
    if len(keys) <= LANES_IN_NUMPY_MAX_ROWS:  # a small rank's rows: no query (numpy's row sort is slow on millions)
        distinct, index = np.unique(keys, axis=0, return_inverse=True)  # rows sorted by a, then b
        return index.reshape(-1).astype(np.int64), [(int(a), int(b)) for a, b in distinct]
    frame = pl.DataFrame({"a": keys[:, 0], "b": keys[:, 1]})
    index = frame.select(pl.struct("a", "b").rank("dense") - 1).to_series().to_numpy().astype(np.int64)
    distinct = frame.unique().sort("a", "b")
    return index, [(int(a), int(b)) for a, b in distinct.iter_rows()]


LANES_IN_NUMPY_MAX_ROWS = 4096


def _chain(lane: np.ndarray, start: np.ndarray, end: np.ndarray, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(previous, next) node pairs along each lane, nodes in (start, end) order within a lane."""
    if len(nodes) < 2:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    order = np.lexsort((nodes, end[nodes], start[nodes], lane[nodes]))
    ordered = nodes[order]
    same = lane[ordered[1:]] == lane[ordered[:-1]]
    return ordered[:-1][same], ordered[1:][same]


def build_graph(trace: Trace) -> Graph:
    """The dependency graph of a one-rank trace (`Trace.for_rank`).

    Examples
    --------
    >>> from traceanalyze.whatif import build_graph, replay  # doctest: +SKIP
    >>> timing = replay(build_graph(trace))  # doctest: +SKIP
    """
    gpu, steps = trace.gpu, trace.steps
    launch_rows = _launcher(trace, gpu.height)
    runtime, call_rows, launcher = _calls(trace.runtime, launch_rows)
    n_call, n_gpu, n_mark = runtime.height, gpu.height, 2 * steps.height
    kind = np.concatenate([np.full(n_call, CALL), np.full(n_mark, MARK), np.full(n_gpu, GPU)]).astype(np.int8)
    mark_times = np.stack([_i64(steps["start_ns"]), _i64(steps["end_ns"])], axis=1).reshape(-1)
    start = np.concatenate([_i64(runtime["start_ns"]), mark_times, _i64(gpu["start_ns"])])
    end = np.concatenate([_i64(runtime["end_ns"]), mark_times, _i64(gpu["end_ns"])])
    row = np.concatenate([call_rows, np.arange(n_mark), np.arange(n_gpu)]).astype(np.int64)
    gpu_ids = n_call + n_mark + np.arange(n_gpu)
    host_keys = np.stack([np.concatenate([_i64(runtime["pid"]), np.repeat(_i64(steps["pid"]), 2)]),
                          np.concatenate([_i64(runtime["tid"]), np.repeat(_i64(steps["tid"]), 2)])], axis=1)
    host_lane, threads = _lane_index(host_keys)
    stream_keys = np.stack([_i64(gpu["device"]), _i64(gpu["stream"])], axis=1)
    stream_lane, streams = _lane_index(stream_keys)
    lane = np.concatenate([host_lane, stream_lane + len(threads)])
    lanes = tuple((0, a, b) for a, b in threads) + tuple((1, a, b) for a, b in streams)
    edges = _Edges()
    host_nodes = np.arange(n_call + n_mark)
    prev, nxt = _chain(lane, start, end, host_nodes)
    main_lane = _main_lane(host_lane, n_call, n_mark)
    woken, waker = _wake_edges(prev, nxt, lane, start, end, host_nodes, main_lane)
    edges.add(prev, nxt, True, np.where(woken >= 0, 0, start[nxt] - end[prev]))
    chosen = woken >= 0
    edges.add(waker[chosen], nxt[chosen], True, start[nxt[chosen]] - end[waker[chosen]])
    launch_time = np.where(launcher >= 0, start[np.maximum(launcher, 0)], start[gpu_ids])
    waits = _stream_waits(trace, runtime, start, end, gpu_ids, launch_time, stream_lane, streams)
    prev, nxt = _chain(lane, start, end, gpu_ids)
    held_src, held_dst = np.concatenate([prev, waits[0]]), np.concatenate([nxt, waits[1]])
    held = np.full(len(start), np.iinfo(np.int64).min // 4)
    np.maximum.at(held, held_dst, end[held_src])
    latency = _launch_latency(start, gpu_ids, launcher, held)
    _stream_and_launch_edges(edges, start, end, gpu_ids, launcher, latency, held_src, held_dst, held)
    blocking = np.zeros(len(kind), bool)
    _blocking_edges(edges, trace, runtime, start, end, gpu_ids, launcher, launch_time, stream_lane, streams, blocking)
    src, dst, src_end, offset, wait = edges.arrays()
    fixed = fixed_costs(start, end, dst[wait], end[src[wait]], blocking)
    graph_call = np.zeros(len(kind), bool)
    graph_call[:n_call] = _kind_code(runtime) == RUNTIME_KINDS.index("graph_launch")
    return Graph(kind=kind, start=start, end=end, dur=end - start, fixed=fixed, blocking=blocking,
                 graph_call=graph_call, row=row,
                 lane=lane, lanes=lanes, src=src, dst=dst, src_end=src_end, offset=offset, wait=wait,
                 order=topological_order(len(kind), src, dst, src_end, wait, start, end), launch_latency_ns=latency)


def _main_lane(host_lane: np.ndarray, n_call: int, n_mark: int) -> int:
    """The thread that runs the steps: the step boundaries' thread, else the one with the most calls
    (-1 without host nodes)."""
    if n_mark:
        return int(host_lane[n_call])
    return int(np.bincount(host_lane).argmax()) if len(host_lane) else -1


def _wake_edges(prev, nxt, lane, start, end, host_nodes, main_lane) -> tuple[np.ndarray, np.ndarray]:
    """Where another thread (the autograd engine's, a worker's) is woken by the steps' thread: a
    node of another thread whose previous node on its thread ended before the main thread's last
    node that ended before it. Returns, per (prev, nxt) pair, 1 where that holds (else -1), and that
    main-thread node: the pair's thread edge then carries no offset, the main node's edge the
    recorded time after it (the waiting thread's own CPU work), so the woken thread follows the main
    one when the main one moves."""
    woken = np.full(len(nxt), -1, np.int64)
    waker = np.full(len(nxt), -1, np.int64)
    if main_lane < 0 or len(nxt) == 0:
        return woken, waker
    main = host_nodes[lane[host_nodes] == main_lane]
    if len(main) == 0:
        return woken, waker
    main = main[np.argsort(end[main], kind="stable")]
    at = np.searchsorted(end[main], start[nxt], side="right") - 1
    candidate = main[np.maximum(at, 0)]
    hit = (lane[nxt] != main_lane) & (at >= 0) & (end[candidate] > end[prev])
    woken[hit] = 1
    waker[hit] = candidate[hit]
    return woken, waker


class _Edges:
    def __init__(self) -> None:
        self.parts: list[tuple[np.ndarray, ...]] = []

    def add(self, src: np.ndarray, dst: np.ndarray, src_end: bool, offset: np.ndarray, wait: bool = False) -> None:
        n = len(src)
        self.parts.append((src.astype(np.int64), dst.astype(np.int64), np.full(n, src_end),
                           np.broadcast_to(offset, (n,)).astype(np.int64), np.full(n, wait)))

    def arrays(self) -> tuple[np.ndarray, ...]:
        if not self.parts:
            return (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, bool), np.zeros(0, np.int64),
                    np.zeros(0, bool))
        return tuple(np.concatenate([p[i] for p in self.parts]) for i in range(5))


def _kind_code(runtime: pl.DataFrame) -> np.ndarray:
    """Each call's `kind` as its index in `model.RUNTIME_KINDS` (the Enum's physical value)."""
    return _i64(runtime["kind"].to_physical())


def _calls(runtime: pl.DataFrame, launch_rows: np.ndarray) -> tuple[pl.DataFrame, np.ndarray, np.ndarray]:
    """The runtime calls the graph holds: launches, copies, sets, synchronisations and any call
    that launched a GPU op; a call of another kind (`cudaEventRecord`, `cudaStreamIsCapturing`,
    ...) neither launches nor waits, and its time stays in the CPU work between the calls kept
    (all calls are kept on a rank without GPU ops: they make its window).
    Returns those calls, their rows in `runtime`, and per GPU op its launch call's node (-1: none)."""
    # a rank without GPU ops keeps every call: its window is its host span
    keep = (_kind_code(runtime) != RUNTIME_KINDS.index("other")) | (len(launch_rows) == 0)
    keep[launch_rows[launch_rows >= 0]] = True
    rows = np.flatnonzero(keep)
    node_of_row = np.full(runtime.height, -1, np.int64)
    node_of_row[rows] = np.arange(len(rows))
    launcher = np.full(len(launch_rows), -1, np.int64)
    launched = launch_rows >= 0
    launcher[launched] = node_of_row[launch_rows[launched]]
    return runtime[rows], rows.astype(np.int64), launcher


def _launcher(trace: Trace, n_gpu: int) -> np.ndarray:
    """Per GPU op, the runtime row of its launch call, -1 for an orphan."""
    if n_gpu == 0:
        return np.zeros(0, np.int64)
    return _i64(trace.launch_rows)


def _launch_latency(start, gpu_ids, launcher, held) -> int:
    """The rank's typical launch latency: the median of (op start − launch start) over ops that
    nothing held when their launch began (their predecessor on the stream, and any op of another
    stream they waited on, had ended): the op waited for its launch alone."""
    launched = gpu_ids[launcher >= 0]
    calls = launcher[launcher >= 0]
    free = held[launched] <= start[calls]
    lat = start[launched][free] - start[calls][free]
    lat = lat[lat >= 0]
    return int(np.median(lat)) if len(lat) else DEFAULT_LAUNCH_LATENCY_NS


def _stream_and_launch_edges(edges, start, end, gpu_ids, launcher, latency, held_src, held_dst, held) -> None:
    """Stream order, stream wait and launch edges. An op that its stream held past the typical
    launch latency (its predecessor, or an op of another stream it waited on, ended later) was
    queued: it keeps its recorded gap after what held it, and at most the typical latency after
    its launch; any other op keeps its recorded latency after its launch, and follows what held
    it with no gap (exact either way on the recorded run)."""
    low = np.iinfo(np.int64).min // 4
    launch_start = np.where(launcher >= 0, start[np.maximum(launcher, 0)], low)
    ops = gpu_ids
    queued = held[ops] > launch_start + latency
    is_queued = np.zeros(len(start), bool)
    is_queued[ops] = queued
    gap = start[held_dst] - np.where(is_queued[held_dst], held[held_dst], end[held_src])
    edges.add(held_src, held_dst, True, np.where(is_queued[held_dst], gap, np.minimum(gap, 0)))
    lat = start[ops] - launch_start
    launch_offset = np.where(queued, np.minimum(lat, latency), lat)
    sel = launcher >= 0
    edges.add(launcher[sel], ops[sel], False, launch_offset[sel])


def _last_before(times: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Per `at`, the index of the last of the sorted `times` strictly before it (-1 if none)."""
    return np.searchsorted(times, at, side="left") - 1


def _per_stream(gpu_ids, launch_time, stream_lane, n_streams):
    """Per stream: its op nodes in launch order and their launch times."""
    out = []
    for s in range(n_streams):
        ops = gpu_ids[stream_lane == s]
        order = np.argsort(launch_time[ops - gpu_ids[0]] if len(ops) else ops, kind="stable")
        ops = ops[order]
        out.append((ops, launch_time[ops - gpu_ids[0]] if len(ops) else np.zeros(0, np.int64)))
    return out


def _sync_rows(trace: Trace) -> dict[int, tuple[str, int, int, int, int]]:
    """Per correlation of a `cuda_sync` event: (its name, device, stream, the correlation of the
    `cudaEventRecord` it waits on and that event's stream; -1 where not recorded)."""
    columns = [name if name in trace.sync.columns else pl.lit(None, pl.Int64).alias(name)
               for name in ("wait_on_record", "wait_on_stream")]
    rows = trace.sync.select("correlation", "name", "device", "stream", *columns).drop_nulls("correlation")
    return {int(c): (str(n), _or_none(d), _or_none(s), _or_none(r), _or_none(w))
            for c, n, d, s, r, w in rows.iter_rows()}


def _or_none(value: int | None) -> int:
    return int(value) if value is not None else -1


def _stream_waits(trace, runtime, start, end, gpu_ids, launch_time, stream_lane,
                  streams) -> tuple[np.ndarray, np.ndarray]:
    """`cudaStreamWaitEvent`: (sources, destinations). The waiting stream's next op starts after
    the last op launched before the call on each other stream of the device (that ended before
    it started). Which event, recorded on which stream, is not in the loaded tables."""
    names = runtime["name"].cast(pl.String)
    calls = np.flatnonzero((names == "cudaStreamWaitEvent").to_numpy()) if len(names) else np.zeros(0, np.int64)
    pairs: list[tuple[int, int]] = []
    if len(calls) == 0 or len(gpu_ids) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    sync = _sync_rows(trace)
    corr = _i64(runtime["correlation"])
    per_stream = _per_stream(gpu_ids, launch_time, stream_lane, len(streams))
    for call in calls:
        found = sync.get(int(corr[call]))
        if found is None or (found[1], found[2]) not in streams:
            continue  # which stream waited is not recorded (2021 traces)
        target = streams.index((found[1], found[2]))
        ops, times = per_stream[target]
        after = np.searchsorted(times, start[call], side="left")
        if after >= len(ops):
            continue
        waiter = ops[after]
        for s, (other, other_times) in enumerate(per_stream):
            if s == target or streams[s][0] != found[1]:
                continue
            last = _last_before(other_times, np.array([start[call]]))[0]
            if last >= 0 and end[other[last]] <= start[waiter]:
                pairs.append((int(other[last]), int(waiter)))
    if not pairs:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    found_pairs = np.array(pairs, np.int64)
    return found_pairs[:, 0], found_pairs[:, 1]


def _blocking_edges(edges, trace, runtime, start, end, gpu_ids, launcher, launch_time, stream_lane, streams,
                    blocking) -> None:
    """Wait edges of the calls that held the CPU until GPU work ended: synchronisations (on the
    stream the trace names, else every stream of the device, else every stream) and copies or
    sets whose own op ended before the call returned."""
    kinds = _kind_code(runtime)
    held = runtime["blocking"].fill_null(False).to_numpy().astype(bool)
    is_sync = (kinds == RUNTIME_KINDS.index("sync")) & held
    if len(gpu_ids):
        own = launcher >= 0
        ops, calls = gpu_ids[own], launcher[own]
        copying = np.isin(kinds[calls], (RUNTIME_KINDS.index("memcpy"), RUNTIME_KINDS.index("memset")))
        copy = copying & (end[ops] <= end[calls] + WAIT_TOLERANCE_NS) & (end[ops] > start[calls])
        edges.add(ops[copy], calls[copy], True, np.zeros(int(copy.sum()), np.int64), wait=True)
        blocking[calls[copy]] = True
    sync_calls = np.flatnonzero(is_sync)
    if len(sync_calls) == 0 or len(gpu_ids) == 0:
        blocking[sync_calls] = True
        return
    sync = _sync_rows(trace)
    corr = _i64(runtime["correlation"])
    found = [sync.get(int(corr[c])) for c in sync_calls]
    waited_at = _waited_at(found, trace.runtime, start, sync_calls)
    per_stream = _per_stream(gpu_ids, launch_time, stream_lane, len(streams))
    for s, (ops, times) in enumerate(per_stream):
        device, stream = streams[s]
        wanted = np.array([_waits_on(f, device, stream) for f in found], bool)
        calls = sync_calls[wanted]
        last = _last_before(times, waited_at[wanted])
        ok = last >= 0
        waited = ops[np.maximum(last, 0)]
        ok &= end[waited] <= end[calls] + WAIT_TOLERANCE_NS
        edges.add(waited[ok], calls[ok], True, np.zeros(int(ok.sum()), np.int64), wait=True)
    blocking[sync_calls] = True


def _waited_at(found: list, runtime: pl.DataFrame, start: np.ndarray, sync_calls: np.ndarray) -> np.ndarray:
    """Per synchronising call, the time before which the work it waits on was launched: the start
    of the `cudaEventRecord` (a call of `runtime`, the trace's, not the graph's) its `cuda_sync`
    event names, for an event synchronisation; else its own start."""
    records = {f[3] for f in found if f is not None and f[3] >= 0}
    named = runtime.filter(pl.col("correlation").is_in(list(records))) if records else runtime.clear()
    record_start = dict(zip(named["correlation"].to_list(), named["start_ns"].to_list()))
    return np.array([record_start.get(f[3], int(start[c])) if f is not None else int(start[c])
                     for f, c in zip(found, sync_calls)], np.int64)


def _waits_on(found: tuple[str, int, int, int, int] | None, device: int, stream: int) -> bool:
    """Whether a synchronising call (its `cuda_sync` event, if recorded) waits on the stream: a
    stream synchronisation on its stream, an event synchronisation on the stream its event was
    recorded on (where Kineto says it), anything else on every stream of its device."""
    if found is None:
        return True
    name, sync_device, sync_stream, _, event_stream = found
    if sync_device >= 0 and sync_device != device:
        return False
    if name == "Stream Sync" and sync_stream >= 0:
        return sync_stream == stream
    if name == "Event Sync" and event_stream >= 0:
        return event_stream == stream
    return True


def fixed_costs(start, end, wait_dst, wait_src_end, blocking) -> np.ndarray:
    """A blocking call's own cost: the time from the later of its start and the end of what it
    waited on, to its end (its whole duration when it waited on nothing)."""
    waited = np.full(len(start), np.iinfo(np.int64).min)
    np.maximum.at(waited, wait_dst, wait_src_end)
    fixed = end - np.maximum(start, waited)
    return np.where(blocking, fixed, end - start)


def _half_edges(n, src, dst, src_end, wait) -> tuple[np.ndarray, np.ndarray]:
    """The edges between starts (`2 * node`) and ends (`2 * node + 1`): each edge's, and each
    node's start before its end."""
    h_src = np.concatenate([2 * src + src_end.astype(np.int64), 2 * np.arange(n)])
    h_dst = np.concatenate([2 * dst + wait.astype(np.int64), 2 * np.arange(n) + 1])
    return h_src, h_dst


MAX_REPAIRS = 64  # rounds of pushing a start or end after its sources before Kahn's algorithm instead


def topological_order(n: int, src: np.ndarray, dst: np.ndarray, src_end: np.ndarray, wait: np.ndarray,
                      start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """The nodes' starts and ends (`2 * node` and `2 * node + 1`) in an order where each comes
    after what it depends on: a start after the sources of the node's start edges (their start or
    end), an end after the node's start and the ends its wait edges name.

    The recorded times are nearly such an order already: the starts and ends are sorted by them
    (vectorised), and each one found before a source is pushed just after it, a few rounds at
    most (zero-length nodes at one instant, the odd op recorded before its launch); a graph that
    does not settle so (a cycle) is ordered by `kahn_order`."""
    h_src, h_dst = _half_edges(n, src, dst, src_end, wait)
    key = np.empty(2 * n, np.int64)
    key[0::2] = start
    key[1::2] = end
    rank = np.argsort(np.argsort(key, kind="stable"), kind="stable").astype(np.int64)  # 0 … 2n − 1, distinct
    for _ in range(MAX_REPAIRS):
        late = rank[h_src] >= rank[h_dst]
        if not late.any():
            return np.argsort(rank, kind="stable")
        pushed = rank.astype(np.float64)
        after = np.full(2 * n, -np.inf)
        np.maximum.at(after, h_dst[late], pushed[h_src[late]] + 0.5)
        moved = after > pushed
        pushed[moved] = after[moved]
        rank = np.argsort(np.argsort(pushed, kind="stable"), kind="stable").astype(np.int64)
    return kahn_order(n, src, dst, src_end, wait, start)


def kahn_order(n: int, src: np.ndarray, dst: np.ndarray, src_end: np.ndarray, wait: np.ndarray,
                     start: np.ndarray) -> np.ndarray:
    """`topological_order` by Kahn's algorithm (ties by recorded start): a Python loop over every
    start and end, for the graphs the sorted order cannot settle. A cycle (a trace whose clocks
    disagree) is cut at its earliest start; the replay then reads the recorded time of a source
    not yet re-timed."""
    halves = 2 * n
    h_src, h_dst = _half_edges(n, src, dst, src_end, wait)
    indegree = np.bincount(h_dst, minlength=halves)
    by_src = np.argsort(h_src, kind="stable")
    ptr = np.searchsorted(h_src[by_src], np.arange(halves + 1)).tolist()
    targets = h_dst[by_src].tolist()
    deg = indegree.tolist()
    time = np.repeat(start, 2)
    ready = np.flatnonzero(indegree == 0)
    ready = ready[np.argsort(time[ready], kind="stable")].tolist()
    out: list[int] = []
    i = 0
    while True:
        while i < len(ready):
            half = ready[i]
            i += 1
            out.append(half)
            for k in range(ptr[half], ptr[half + 1]):
                t = targets[k]
                deg[t] -= 1
                if deg[t] == 0:
                    ready.append(t)
        if len(out) == halves:
            break
        done = np.zeros(halves, bool)
        done[out] = True
        left = np.flatnonzero(~done & (np.asarray(deg) > 0))
        first = int(left[np.argmin(time[left])])
        deg[first] = 0
        ready.append(first)
    return np.asarray(out, np.int64)
