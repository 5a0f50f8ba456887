"""Synthetic Kineto (PyTorch profiler) traces with exact, known timings, for tests.

`TraceBuilder` writes the JSON that ``torch.profiler`` writes (2024 schema by default, or the 2021
one with ``schema="2021"``), with every time given in microseconds relative to ``base_us``.
Times may carry a nanosecond fraction (``12.345`` is 12,345 ns); the builder works in integer
nanoseconds and refuses any time it could not write exactly, so a test can compare the loaded
``start_ns`` with ``base_ns + 12_345`` and nothing else.

Event shapes (argument names, pids/tids, flows, metadata events) copy real traces; see
``../shared/design/KINETO_FORMAT.md``.

Examples
--------
>>> b = TraceBuilder()
>>> op = b.cpu_op("aten::relu", 0, 20)
>>> corr = b.launch(5, 4, external_id=op)
>>> _ = b.kernel(corr, 12.5, 3.25)
>>> [e.get("cat") for e in b.to_dict()["traceEvents"]][:5]
['cpu_op', 'cuda_runtime', 'ac2g', 'kernel', 'ac2g']
"""

from __future__ import annotations

import copy
import gzip
import json
import math
import numbers
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal, Sequence

DEFAULT_BASE_US = 1_700_000_000_000.0
DEFAULT_KERNEL = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
    "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)"
)

Schema = Literal["2024", "2021"]

# 2024 category name -> the name PyTorch 1.8/1.9 wrote. Categories absent here are the same in both.
_OLD_CATEGORIES = {
    "cpu_op": "Operator",
    "cuda_runtime": "Runtime",
    "cuda_driver": "Runtime",
    "kernel": "Kernel",
    "gpu_memcpy": "Memcpy",
    "gpu_memset": "Memset",
}

# CUPTI callback ids, as seen in real traces.
_CBID = {
    "cudaMemcpy": 31,
    "cudaMemcpyAsync": 41,
    "cudaMemsetAsync": 51,
    "cudaStreamSynchronize": 131,
    "cudaEventRecord": 135,
    "cudaEventSynchronize": 137,
    "cudaStreamWaitEvent": 147,
    "cudaDeviceSynchronize": 165,
    "cudaLaunchKernel": 211,
    "cuLaunchKernel": 307,
    "cudaGraphLaunch": 311,
    "cudaLaunchKernelExC": 430,
    "cuLaunchKernelEx": 652,
}

# runtime call -> (cuda_sync_kind, whether the GPU-side event sits on the stream's row)
_SYNC_KINDS = {
    "cudaStreamSynchronize": ("Stream Sync", True),
    "cudaStreamWaitEvent": ("Stream Wait Event", True),
    "cudaEventSynchronize": ("Event Sync", False),
    "cudaDeviceSynchronize": ("Context Sync", False),
}

_MEMCPY_NAMES = {
    "HtoD": "Memcpy HtoD (Pinned -> Device)",
    "DtoH": "Memcpy DtoH (Device -> Pinned)",
    "DtoD": "Memcpy DtoD (Device -> Device)",
}

_NCCL_KERNELS = {
    "allreduce": "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
    "allgather": "ncclDevKernel_AllGather_RING_LL",
    "reduce_scatter": "ncclDevKernel_ReduceScatter_Sum_f32_RING_LL",
    "broadcast": "ncclDevKernel_Broadcast_RING_LL",
}
_NCCL_SIGNATURE = "(ncclDevComm*, unsigned long, ncclWork*)"

_FIRST_EXTERNAL_ID = 1
_FIRST_CORRELATION = 100_001  # far from External ids, so a join on the wrong key finds nothing
_GPU_PROCESS_SORT_BASE = 5_000_000


@dataclass
class _Entry:
    """One event, and which end of an ac2g flow it may carry ("s" on a launch, "f" on GPU work)."""

    event: dict[str, Any]
    flow: Literal["s", "f"] | None = None
    raw: bool = False


def _decimal(value: float) -> Decimal:
    """A number as the decimal its shortest repr spells (12.345 -> Decimal("12.345"), not the
    binary float's exact expansion); numpy scalars included."""
    if isinstance(value, numbers.Integral):
        return Decimal(int(value))
    return Decimal(repr(float(value)))


def _ns(value_us: float, what: str) -> int:
    """Microseconds (as typed, e.g. 12.345) -> exact integer nanoseconds."""
    if isinstance(value_us, bool) or not isinstance(value_us, numbers.Real):
        raise TypeError(f"{what} must be a number of microseconds, got {value_us!r}")
    if not math.isfinite(value_us):
        raise ValueError(f"{what} must be finite, got {value_us!r}")
    exact = _decimal(value_us) * 1000
    if exact != exact.to_integral_value():
        raise ValueError(f"{what}={value_us!r} µs is finer than one nanosecond")
    return int(exact)


class TraceBuilder:
    """Builds a Kineto trace event by event; `to_dict` / `write` produce the JSON.

    Parameters
    ----------
    device_name, num_sms, total_memory, compute_capability
        What ``deviceProperties`` says about every device.
    devices
        Number of GPUs listed in ``deviceProperties`` (and the highest ``device`` + 1 allowed).
    properties_ids
        The ``id`` each ``deviceProperties`` entry carries (default ``0 … devices-1``, the ids GPU
        events use): other ids make a trace whose events and properties are numbered differently.
    rank, world_size
        When ``rank`` is given, a ``distributedInfo`` block is written.
    pid, tid
        Host process and default host thread.
    base_us
        Absolute timestamp that every ``*_us`` time is relative to.
    integer_us
        Write ``ts``/``dur`` as integers (pre-2024 traces); then every time must be whole µs.
    schema
        ``"2024"`` (``cpu_op``, ``cuda_runtime``, ``kernel``, ``ac2g`` …) or ``"2021"``
        (``Operator``, ``Runtime``, ``Kernel``, ``Memcpy``, ``Memset``, flows ``async``,
        ``external id`` on runtime/GPU events, string tids, no ``deviceProperties``,
        no ``cuda_sync`` events).

    Examples
    --------
    >>> b = TraceBuilder(base_us=1_000_000.0)
    >>> corr = b.launch_kernel(launch_us=0, start_us=10.5, dur_us=2)
    >>> [e["ts"] for e in b.to_dict()["traceEvents"] if e.get("cat") == "kernel"]
    [1000010.5]
    """

    def __init__(
        self,
        *,
        device_name: str = "NVIDIA A100-SXM4-80GB",
        num_sms: int = 108,
        total_memory: int = 85899345920,
        compute_capability: tuple[int, int] = (8, 0),
        devices: int = 1,
        properties_ids: Sequence[int] | None = None,
        rank: int | None = None,
        world_size: int | None = None,
        pid: int = 1000,
        tid: int = 1000,
        base_us: float = DEFAULT_BASE_US,
        integer_us: bool = False,
        schema: Schema = "2024",
    ) -> None:
        if schema not in ("2024", "2021"):
            raise ValueError(f"schema must be '2024' or '2021', got {schema!r}")
        if devices < 1:
            raise ValueError(f"devices must be >= 1, got {devices}")
        self.schema: Schema = schema
        self.device_name = device_name
        self.num_sms = num_sms
        self.total_memory = total_memory
        self.compute_capability = compute_capability
        self.devices = devices
        self.properties_ids = list(properties_ids) if properties_ids is not None else list(range(devices))
        self.rank = rank
        self.world_size = world_size
        self.pid = pid
        self.tid = tid
        self.integer_us = integer_us
        self.base_ns = _ns(base_us, "base_us")
        self._time_value(0, "base_us")  # refuse a base too large to carry nanoseconds
        self._entries: list[_Entry] = []
        self._launch_external: dict[int, int | None] = {}
        self._host_tids: list[int] = [tid]
        self._gpu_rows: list[tuple[int, int]] = []
        self._next_external = _FIRST_EXTERNAL_ID
        self._next_correlation = _FIRST_CORRELATION
        self._next_graph = 1
        self._next_python = 1
        self._next_ev_idx = 0

    # ----------------------------------------------------------------------------------- CPU side

    def cpu_op(
        self,
        name: str,
        start_us: float,
        dur_us: float,
        *,
        tid: int | None = None,
        input_dims: Sequence[Sequence[int]] | None = None,
        input_types: Sequence[str] | None = None,
        input_strides: Sequence[Sequence[int]] | None = None,
        concrete_inputs: Sequence[str] | None = None,
        category: str = "cpu_op",
    ) -> int:
        """An operator (``cpu_op``; ``Operator`` in 2021); returns its new External id."""
        shapes = {
            "Concrete Inputs": concrete_inputs,
            "Input type": input_types,
            "Input Strides": input_strides,
            "Input Dims": input_dims,
        }
        # a JSON round trip deep-copies and turns tuples into the lists Kineto writes
        args = {key: json.loads(json.dumps(value)) for key, value in shapes.items() if value is not None}
        return self._host_op(self._category(category), name, start_us, dur_us, tid, args)

    def annotation(self, name: str, start_us: float, dur_us: float, *, tid: int | None = None) -> int:
        """A ``record_function`` region (``user_annotation``); returns its External id."""
        return self._host_op("user_annotation", name, start_us, dur_us, tid, {})

    def step(self, n: int, start_us: float, dur_us: float, *, tid: int | None = None) -> int:
        """``ProfilerStep#n`` (``user_annotation``; ``Operator`` in 2021); returns its External id."""
        category = "Operator" if self.schema == "2021" else "user_annotation"
        return self._host_op(category, f"ProfilerStep#{n}", start_us, dur_us, tid, {})

    def python_function(self, name: str, start_us: float, dur_us: float, *, tid: int | None = None) -> None:
        """A ``python_function`` frame (what ``with_stack=True`` records)."""
        args = {"Python parent id": None, "Python id": self._next_python}
        self._next_python += 1
        self._add(self._complete("python_function", name, self.pid, self._host_tid(tid),
                                 start_us, dur_us, self._with_ev_idx(args)))

    # ------------------------------------------------------------------------------ runtime calls

    def launch(
        self,
        start_us: float,
        dur_us: float,
        *,
        name: str = "cudaLaunchKernel",
        tid: int | None = None,
        external_id: int | None = None,
        category: str | None = None,
    ) -> int:
        """A runtime/driver call on the host; returns its new correlation id.

        ``category`` defaults to ``cuda_driver`` for driver API names (``cuLaunchKernel``,
        ``cuLaunchKernelEx``) and ``cuda_runtime`` otherwise. A 2024 name given here is
        translated for ``schema="2021"``; anything else is written as given.
        """
        if category is None:
            category = "cuda_driver" if name.startswith("cu") and not name.startswith("cuda") else "cuda_runtime"
        correlation = self._new_correlation()
        args: dict[str, Any] = {}
        if external_id is not None:
            args[self._external_key] = external_id
        if name in _CBID:
            args["cbid"] = _CBID[name]
        args["correlation"] = correlation
        event = self._complete(self._category(category), name, self.pid, self._host_tid(tid),
                               start_us, dur_us, args)
        self._add(event, flow="s")
        self._launch_external[correlation] = external_id
        return correlation

    def sync_call(
        self,
        start_us: float,
        dur_us: float,
        *,
        name: str = "cudaStreamSynchronize",
        stream: int = 7,
        device: int = 0,
        tid: int | None = None,
        external_id: int | None = None,
    ) -> int:
        """A blocking runtime call plus, in 2024 traces, its ``cuda_sync`` GPU-side event.

        The ``cuda_sync`` event covers the same interval as the call. Returns the correlation.
        """
        if name not in _SYNC_KINDS:
            raise ValueError(f"unknown sync call {name!r}; expected one of {sorted(_SYNC_KINDS)}")
        correlation = self.launch(start_us, dur_us, name=name, tid=tid, external_id=external_id)
        if self.schema == "2021":
            return correlation
        kind, on_stream = _SYNC_KINDS[name]
        args: dict[str, Any] = {}
        if external_id is not None:
            args["External id"] = external_id
        args["cuda_sync_kind"] = kind
        if kind == "Event Sync":
            args["wait_on_stream"] = stream
        args.update(stream=stream if on_stream else -1, correlation=correlation, device=device, context=1)
        row = stream if on_stream else -1
        self._add(self._complete("cuda_sync", kind, device, self._gpu_tid(device, row),
                                 start_us, dur_us, args))
        return correlation

    # ------------------------------------------------------------------------------ GPU activity

    def kernel(
        self,
        correlation: int,
        start_us: float,
        dur_us: float,
        *,
        name: str = DEFAULT_KERNEL,
        stream: int = 7,
        device: int = 0,
        grid: tuple[int, int, int] = (1, 1, 1),
        block: tuple[int, int, int] = (128, 1, 1),
        external_id: int | None = None,
        graph_id: int | None = None,
        graph_node_id: int | None = None,
        flow: bool = True,
        extra_args: dict[str, Any] | None = None,
    ) -> int:
        """A kernel. External id defaults to that of the launch with this correlation (if
        already added). ``flow`` writes the ``ac2g`` pair. Returns ``correlation``."""
        args = self._kernel_args(grid, block)
        if graph_id is not None:
            args["graph id"] = graph_id
        if graph_node_id is not None:
            args["graph node id"] = graph_node_id
        args.update(extra_args or {})
        return self._gpu_op("kernel", name, correlation, start_us, dur_us, stream=stream, device=device,
                            external_id=external_id, flow=flow, args=args, leading={"queued": 0})

    def memcpy(
        self,
        correlation: int,
        start_us: float,
        dur_us: float,
        *,
        kind: Literal["HtoD", "DtoH", "DtoD"] = "HtoD",
        bytes: int = 1_048_576,
        stream: int = 7,
        device: int = 0,
        external_id: int | None = None,
        flow: bool = True,
    ) -> int:
        """A copy (``gpu_memcpy``); returns ``correlation``."""
        if kind not in _MEMCPY_NAMES:
            raise ValueError(f"memcpy kind must be one of {sorted(_MEMCPY_NAMES)}, got {kind!r}")
        return self._gpu_op("gpu_memcpy", _MEMCPY_NAMES[kind], correlation, start_us, dur_us,
                            stream=stream, device=device, external_id=external_id, flow=flow,
                            args=self._copy_args(bytes, dur_us))

    def memset(
        self,
        correlation: int,
        start_us: float,
        dur_us: float,
        *,
        bytes: int = 1_048_576,
        stream: int = 7,
        device: int = 0,
        external_id: int | None = None,
        flow: bool = True,
    ) -> int:
        """A memset (``gpu_memset``); returns ``correlation``."""
        return self._gpu_op("gpu_memset", "Memset (Device)", correlation, start_us, dur_us,
                            stream=stream, device=device, external_id=external_id, flow=flow,
                            args=self._copy_args(bytes, dur_us))

    def nccl_kernel(
        self,
        correlation: int,
        start_us: float,
        dur_us: float,
        *,
        collective: str = "allreduce",
        name: str | None = None,
        stream: int = 7,
        device: int = 0,
        nelems: int = 1_048_576,
        dtype: str = "Float",
        group_size: int | None = None,
        external_id: int | None = None,
        flow: bool = True,
    ) -> int:
        """An NCCL collective kernel with the args newer traces carry (``Collective name`` …).

        ``name`` defaults to the NCCL kernel for ``collective``; ``group_size`` to
        ``world_size`` (or 2). Returns ``correlation``.
        """
        if name is None:
            if collective not in _NCCL_KERNELS:
                raise ValueError(f"no default kernel name for collective {collective!r}; pass name=")
            name = _NCCL_KERNELS[collective] + _NCCL_SIGNATURE
        size = group_size if group_size is not None else (self.world_size or 2)
        nccl_args = {
            "Collective name": collective,
            "In msg nelems": nelems,
            "Out msg nelems": nelems,
            "Group size": size,
            "dtype": dtype,
            "In split size": "[]",
            "Out split size": "[]",
            "Process Group Name": "0",
            "Process Group Description": "default_pg",
            "Process Group Ranks": str(list(range(size))),
        }
        return self.kernel(correlation, start_us, dur_us, name=name, stream=stream, device=device,
                           grid=(8, 1, 1), block=(544, 1, 1), external_id=external_id, flow=flow,
                           extra_args=nccl_args)

    # ------------------------------------------------------------------------------ conveniences

    def launch_kernel(
        self,
        *,
        launch_us: float,
        start_us: float,
        dur_us: float,
        launch_dur_us: float = 5.0,
        stream: int = 7,
        device: int = 0,
        name: str = DEFAULT_KERNEL,
        launch_name: str = "cudaLaunchKernel",
        tid: int | None = None,
        external_id: int | None = None,
        grid: tuple[int, int, int] = (1, 1, 1),
        block: tuple[int, int, int] = (128, 1, 1),
    ) -> int:
        """A launch call and the kernel it launched; returns the correlation."""
        correlation = self.launch(launch_us, launch_dur_us, name=launch_name, tid=tid, external_id=external_id)
        return self.kernel(correlation, start_us, dur_us, name=name, stream=stream, device=device,
                           grid=grid, block=block)

    def graph_launch(
        self,
        start_us: float,
        dur_us: float,
        kernels: Sequence[tuple[float, float, str]],
        *,
        stream: int = 7,
        device: int = 0,
        tid: int | None = None,
        external_id: int | None = None,
        graph_id: int | None = None,
    ) -> int:
        """One ``cudaGraphLaunch`` and its ``(start_us, dur_us, name)`` kernels, all sharing its
        correlation. ``graph_id`` (a new one when None; pass the same one to replay a graph) goes
        into each kernel's ``graph id``, with ``graph node id`` 1, 2, …. Returns the correlation."""
        correlation = self.launch(start_us, dur_us, name="cudaGraphLaunch", tid=tid, external_id=external_id)
        if graph_id is None:
            graph_id = self._next_graph
            self._next_graph += 1
        for node, (k_start, k_dur, k_name) in enumerate(kernels, start=1):
            self.kernel(correlation, k_start, k_dur, name=k_name, stream=stream, device=device,
                        graph_id=graph_id, graph_node_id=node)
        return correlation

    def orphan_kernel(
        self,
        start_us: float,
        dur_us: float,
        *,
        name: str = DEFAULT_KERNEL,
        stream: int = 7,
        device: int = 0,
    ) -> int:
        """A kernel whose correlation no runtime event carries (and with no flow)."""
        return self.kernel(self._new_correlation(), start_us, dur_us, name=name, stream=stream,
                           device=device, flow=False)

    def raw_event(self, event: dict[str, Any]) -> None:
        """Add ``event`` exactly as given (a copy): for malformed or unusual events."""
        self._entries.append(_Entry(copy.deepcopy(event), raw=True))

    # ------------------------------------------------------------------------------------ output

    def to_dict(self) -> dict[str, Any]:
        """The whole trace as the JSON object Kineto writes (a fresh copy each call)."""
        events = self._events_with_flows()
        events += self._metadata_events()
        events += self._trace_span()
        trace: dict[str, Any] = {"schemaVersion": 1}
        if self.schema == "2024":
            trace["deviceProperties"] = [self._device_properties(i) for i in self.properties_ids]
        if self.rank is not None:
            trace["distributedInfo"] = {"backend": "nccl", "rank": self.rank,
                                        "world_size": self.world_size if self.world_size is not None else 1}
        if self.schema == "2024":
            trace.update(cupti_version=24, cuda_runtime_version=12040, cuda_driver_version=12090,
                         record_shapes=1, profile_memory=0, with_stack=0, with_flops=0)
        trace["traceEvents"] = events
        if self.schema == "2024":
            trace.update(traceName="synthetic.pt.trace.json", displayTimeUnit="ms")
        return trace

    def write(self, path: str | Path) -> Path:
        """Write the trace to ``path`` (``.json`` or ``.json.gz``, chosen by suffix)."""
        path = Path(path)
        text = json.dumps(self.to_dict())
        if path.name.endswith(".json.gz"):
            path.write_bytes(gzip.compress(text.encode(), mtime=0))
        elif path.name.endswith(".json"):
            path.write_text(text)
        else:
            raise ValueError(f"{path}: the file name must end in .json or .json.gz")
        return path

    # ---------------------------------------------------------------------- one helper per shape

    def _complete(self, cat: str, name: str, pid: int | str, tid: int | str,
                  start_us: float, dur_us: float, args: dict[str, Any]) -> dict[str, Any]:
        """An ``X`` event."""
        return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid,
                "ts": self._time_value(_ns(start_us, "start_us"), "start_us"),
                "dur": self._duration_value(_ns(dur_us, "dur_us")), "args": args}

    def _host_op(self, cat: str, name: str, start_us: float, dur_us: float,
                 tid: int | None, shape_args: dict[str, Any]) -> int:
        external_id = self._next_external
        self._next_external += 1
        args = {"External id": external_id}
        if self.schema == "2024":
            args["Record function id"] = 0
        args.update(shape_args)
        self._add(self._complete(cat, name, self.pid, self._host_tid(tid), start_us, dur_us,
                                 self._with_ev_idx(args)))
        return external_id

    def _gpu_op(self, cat: str, name: str, correlation: int, start_us: float, dur_us: float, *,
                stream: int, device: int, external_id: int | None, flow: bool,
                args: dict[str, Any], leading: dict[str, Any] | None = None) -> int:
        """Kernel/memcpy/memset: the common args first, then the shape-specific ones."""
        if not 0 <= device < self.devices:
            raise ValueError(f"device {device} is not one of the {self.devices} listed devices")
        if external_id is None:
            external_id = self._launch_external.get(correlation)
        common: dict[str, Any] = {}
        if external_id is not None:
            common[self._external_key] = external_id
        common.update(leading or {})
        common.update(device=device, context=1, stream=stream, correlation=correlation)
        event = self._complete(self._category(cat), name, device,
                               self._gpu_tid(device, stream), start_us, dur_us, common | args)
        self._add(event, flow="f" if flow else None)
        return correlation

    def _flow_event(self, phase: Literal["s", "f"], at: dict[str, Any]) -> dict[str, Any]:
        """One end of a launch→GPU flow, placed on ``at`` (the launch or the GPU event)."""
        cat, name = ("async", "launch") if self.schema == "2021" else ("ac2g", "ac2g")
        pid, tid = at["pid"], at["tid"]
        if self.schema == "2021" and phase == "s":
            tid = int(tid)  # 2021 writes the host tid as a string on X events, an int on flows
        event = {"ph": phase, "id": at["args"]["correlation"], "pid": pid, "tid": tid,
                 "ts": at["ts"], "cat": cat, "name": name}
        if phase == "f":
            event["bp"] = "e"
        return event

    @staticmethod
    def _metadata_event(name: str, ts: int | float, pid: int | str, tid: int | str,
                        args: dict[str, Any]) -> dict[str, Any]:
        """A ``process_*`` / ``thread_*`` metadata event."""
        return {"name": name, "ph": "M", "ts": ts, "pid": pid, "tid": tid, "args": args}

    # ----------------------------------------------------------------------------- assembling

    def _events_with_flows(self) -> list[dict[str, Any]]:
        """Events in the order added, each launch followed by its flow start and each GPU event
        by its flow finish, when some GPU event with that correlation asked for a flow."""
        wanted = {e.event["args"]["correlation"] for e in self._entries if e.flow == "f"}
        out: list[dict[str, Any]] = []
        for entry in self._entries:
            out.append(copy.deepcopy(entry.event))
            if entry.flow and entry.event["args"]["correlation"] in wanted:
                out.append(self._flow_event(entry.flow, entry.event))
        return out

    def _metadata_events(self) -> list[dict[str, Any]]:
        """Process and thread names (and, since ~2022, sort indices) for every row used."""
        ts = self._time_value(self._span()[0] - self.base_ns, "span")
        sort = self.schema == "2024"
        rows: list[tuple[str, int, int | str, Any]] = [
            ("process_name", self.pid, 0, {"name": "python3"}),
            ("process_labels", self.pid, 0, {"labels": "CPU"}),
            ("process_sort_index", self.pid, 0, {"sort_index": self.pid}),
        ]
        for device in range(self.devices):
            rows += [
                ("process_name", device, 0, {"name": "python3"}),
                ("process_labels", device, 0, {"labels": f"GPU {device}"}),
                ("process_sort_index", device, 0, {"sort_index": _GPU_PROCESS_SORT_BASE + device}),
            ]
        for tid in self._host_tids:
            rows += [
                ("thread_name", self.pid, self._host_tid(tid), {"name": f"thread {tid} (python3)"}),
                ("thread_sort_index", self.pid, tid, {"sort_index": tid}),
            ]
        for device, row in self._gpu_rows:
            label = f"stream {row} " if row >= 0 else f"Device {device}"
            rows += [
                ("thread_name", device, self._gpu_tid(device, row), {"name": label}),
                ("thread_sort_index", device, row, {"sort_index": row}),
            ]
        return [self._metadata_event(name, ts, pid, tid, args)
                for name, pid, tid, args in rows if sort or not name.endswith("_sort_index")]

    def _trace_span(self) -> list[dict[str, Any]]:
        """The ``Trace`` span covering every event, and the instant that marks its start."""
        start_ns, end_ns = self._span()
        ts = self._time_value(start_ns - self.base_ns, "span")
        pid = "Traces" if self.schema == "2021" else "Spans"
        return [
            {"ph": "X", "cat": "Trace", "ts": ts, "dur": self._duration_value(end_ns - start_ns),
             "pid": pid, "tid": "PyTorch Profiler", "name": "PyTorch Profiler (0)", "args": {"Op count": 0}},
            {"name": "Iteration Start: PyTorch Profiler", "ph": "i", "s": "g", "pid": "Traces",
             "tid": "Trace PyTorch Profiler", "ts": ts},
        ]

    def _span(self) -> tuple[int, int]:
        """[first start, last end] in absolute ns over the builder's own X events (base if none)."""
        bounds = [(self._value_ns(e.event["ts"]), self._value_ns(e.event["ts"]) + self._value_ns(e.event["dur"]))
                  for e in self._entries if not e.raw]
        if not bounds:
            return self.base_ns, self.base_ns
        return min(s for s, _ in bounds), max(end for _, end in bounds)

    def _device_properties(self, device: int) -> dict[str, Any]:
        major, minor = self.compute_capability
        return {
            "id": device, "name": self.device_name, "totalGlobalMem": self.total_memory,
            "computeMajor": major, "computeMinor": minor, "maxThreadsPerBlock": 1024,
            "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536, "regsPerMultiprocessor": 65536,
            "warpSize": 32, "sharedMemPerBlock": 49152, "sharedMemPerMultiprocessor": 167936,
            "numSms": self.num_sms, "sharedMemPerBlockOptin": 166912,
        }

    def _kernel_args(self, grid: Sequence[int], block: Sequence[int]) -> dict[str, Any]:
        blocks = math.prod(grid)
        warps_per_block = math.ceil(math.prod(block) / 32)
        warps_per_sm = blocks * warps_per_block / self.num_sms
        return {
            "registers per thread": 32, "shared memory": 0,
            "blocks per SM": round(blocks / self.num_sms, 6), "warps per SM": round(warps_per_sm, 5),
            "grid": list(grid), "block": list(block),
            "est. achieved occupancy %": min(100, round(100 * warps_per_sm / 64)),
        }

    @staticmethod
    def _copy_args(nbytes: int, dur_us: float) -> dict[str, Any]:
        dur_ns = _ns(dur_us, "dur_us")
        return {"bytes": nbytes, "memory bandwidth (GB/s)": nbytes / dur_ns if dur_ns > 0 else 0.0}

    # --------------------------------------------------------------------------------- small bits

    def _add(self, event: dict[str, Any], flow: Literal["s", "f"] | None = None) -> None:
        self._entries.append(_Entry(event, flow))

    @property
    def _external_key(self) -> str:
        """Runtime and GPU events spell it ``external id`` in 2021 (operators never do)."""
        return "external id" if self.schema == "2021" else "External id"

    def _category(self, category: str) -> str:
        return _OLD_CATEGORIES.get(category, category) if self.schema == "2021" else category

    def _new_correlation(self) -> int:
        self._next_correlation += 1
        return self._next_correlation - 1

    def _with_ev_idx(self, args: dict[str, Any]) -> dict[str, Any]:
        if self.schema == "2024":
            args["Ev Idx"] = self._next_ev_idx
            self._next_ev_idx += 1
        return args

    def _host_tid(self, tid: int | None) -> int | str:
        tid = self.tid if tid is None else tid
        if tid not in self._host_tids:
            self._host_tids.append(tid)
        return str(tid) if self.schema == "2021" else tid

    def _gpu_tid(self, device: int, row: int) -> int | str:
        if (device, row) not in self._gpu_rows:
            self._gpu_rows.append((device, row))
        return f"stream {row}" if self.schema == "2021" else row

    def _time_value(self, relative_ns: int, what: str) -> int | float:
        """What to write as ``ts`` for ``base + relative_ns``; refuses what JSON would not carry."""
        absolute_ns = self.base_ns + relative_ns
        if self.integer_us:
            if absolute_ns % 1000:
                raise ValueError(f"{what}: {absolute_ns} ns is not a whole µs (integer_us=True)")
            return absolute_ns // 1000
        value = absolute_ns / 1000
        if _decimal(value) * 1000 != absolute_ns:
            raise ValueError(f"{what}: {absolute_ns} ns cannot be written exactly as a float of µs; "
                             "use a smaller base_us")
        return value

    def _duration_value(self, dur_ns: int) -> int | float:
        if self.integer_us:
            if dur_ns % 1000:
                raise ValueError(f"dur_us: {dur_ns} ns is not a whole µs (integer_us=True)")
            return dur_ns // 1000
        return dur_ns / 1000

    @staticmethod
    def _value_ns(value: int | float) -> int:
        return int(_decimal(value) * 1000)
