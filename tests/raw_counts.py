"""An independent count of a Kineto trace's events, straight from the raw JSON.

Tests compare the loader's table sizes with these numbers, so this module must not share code with
the loader: stdlib ``json``/``gzip`` only, no polars, no ``traceanalyze`` import. The rules below are
the loader's contract.

Counting rules
--------------
- Categories are compared case-insensitively; category counts use ``ph == "X"`` events only.
- ``gpu``: cat in {kernel, gpu_memcpy, memcpy, gpu_memset, memset}.
- ``runtime``: cat in {cuda_runtime, runtime, cuda_driver}.
- ``cpu_ops``: cat in {cpu_op, operator, user_annotation}.
- ``steps``: the counted ``cpu_ops`` whose name matches ``^ProfilerStep#\\d+$``.
- ``sync``: cat ``cuda_sync``; ``python``: cat ``python_function`` (no validity check on either).
- ``flows``: ``ph`` in {s, f} with cat in {ac2g, async, async_gpu, async_cpu_to_gpu}.
- ``malformed``: X events of the gpu/runtime/cpu_ops categories left out of those counts because
  ``ts`` is missing, or ``dur`` is missing, negative, or over one day (86,400,000,000 µs). A value
  that is not a JSON number (null, a string, a bool) counts as missing.
- ``gpu_by_kind``: the ``gpu`` events split into ``kernel`` / ``memcpy`` / ``memset`` /
  ``communication`` (a kernel whose name contains ``nccl``, ``rccl``, ``allreduce``/``all_reduce``,
  ``allgather``/``all_gather``, ``reducescatter``/``reduce_scatter``, ``alltoall``/``all_to_all`` or
  ``cross_device_reduce``, any case); the four add up
  to ``gpu``, so ``kernel`` excludes communication kernels.
- ``launches``: counted ``runtime`` events whose name contains ``LaunchKernel``,
  ``LaunchCooperativeKernel`` or ``ModuleLaunch`` (any case) and not ``GraphLaunch``;
  ``graph_launches``: counted ``runtime`` events whose name contains ``GraphLaunch`` (any case).
- ``events``: every entry of ``traceEvents``, whatever it is.

Examples
--------
>>> counts = raw_counts("fixtures/synthetic_training.json.gz")  # doctest: +SKIP
>>> counts["gpu"], counts["gpu_by_kind"]["kernel"]  # doctest: +SKIP
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from typing import Any

ONE_DAY_US = 86_400_000_000

GPU_CATEGORIES = {"kernel": "kernel", "gpu_memcpy": "memcpy", "memcpy": "memcpy",
                  "gpu_memset": "memset", "memset": "memset"}
RUNTIME_CATEGORIES = {"cuda_runtime", "runtime", "cuda_driver"}
CPU_OP_CATEGORIES = {"cpu_op", "operator", "user_annotation"}
FLOW_CATEGORIES = {"ac2g", "async", "async_gpu", "async_cpu_to_gpu"}
STEP_NAME = re.compile(r"^ProfilerStep#\d+$")
COMMUNICATION_NAME = re.compile(
    r"nccl|rccl|allreduce|all_reduce|allgather|all_gather|reducescatter|reduce_scatter|alltoall|all_to_all"
    r"|cross_device_reduce",
    re.IGNORECASE,
)
LAUNCH_NAME = re.compile(r"LaunchKernel|LaunchCooperativeKernel|ModuleLaunch", re.IGNORECASE)
GRAPH_LAUNCH_NAME = re.compile(r"GraphLaunch", re.IGNORECASE)


def raw_counts(path: str | Path) -> dict[str, Any]:
    """Count the events of the trace at ``path`` (``.json`` or gzip-compressed) by the rules above.

    Returns ``{"events", "gpu", "runtime", "cpu_ops", "steps", "sync", "python", "flows",
    "malformed", "launches", "graph_launches": int, "gpu_by_kind": {"kernel", "memcpy", "memset",
    "communication": int}}``.
    """
    events = _read_events(Path(path))
    counts: dict[str, Any] = dict.fromkeys(
        ("events", "gpu", "runtime", "cpu_ops", "steps", "sync", "python", "flows", "malformed",
         "launches", "graph_launches"), 0)
    by_kind = dict.fromkeys(("kernel", "memcpy", "memset", "communication"), 0)
    counts["events"] = len(events)
    for event in events:
        if not isinstance(event, dict):
            continue
        phase, cat = event.get("ph"), event.get("cat")
        cat = cat.lower() if isinstance(cat, str) else None
        name = event.get("name") if isinstance(event.get("name"), str) else ""
        if phase in ("s", "f"):
            counts["flows"] += cat in FLOW_CATEGORIES
            continue
        if phase != "X" or cat is None:
            continue
        if cat == "cuda_sync":
            counts["sync"] += 1
            continue
        if cat == "python_function":
            counts["python"] += 1
            continue
        if cat not in GPU_CATEGORIES and cat not in RUNTIME_CATEGORIES and cat not in CPU_OP_CATEGORIES:
            continue
        if not _well_timed(event):
            counts["malformed"] += 1
        elif cat in GPU_CATEGORIES:
            counts["gpu"] += 1
            kind = GPU_CATEGORIES[cat]
            if kind == "kernel" and COMMUNICATION_NAME.search(name):
                kind = "communication"
            by_kind[kind] += 1
        elif cat in RUNTIME_CATEGORIES:
            counts["runtime"] += 1
            if GRAPH_LAUNCH_NAME.search(name):
                counts["graph_launches"] += 1
            elif LAUNCH_NAME.search(name):
                counts["launches"] += 1
        else:
            counts["cpu_ops"] += 1
            counts["steps"] += bool(STEP_NAME.match(name))
    counts["gpu_by_kind"] = by_kind
    return counts


def _read_events(path: Path) -> list[Any]:
    """``traceEvents`` of a trace file; gzip is recognised by its magic bytes, not the suffix."""
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    trace = json.loads(data)
    if isinstance(trace, list):  # the Chrome trace "JSON array" form
        return trace
    return trace.get("traceEvents", [])


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _well_timed(event: dict[str, Any]) -> bool:
    dur = event.get("dur")
    return _is_number(event.get("ts")) and _is_number(dur) and 0 <= dur <= ONE_DAY_US
