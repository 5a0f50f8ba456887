"""Write the bundled synthetic fixtures and their ground truth.

    python scripts/make_fixtures.py     # writes fixtures/*.json.gz and fixtures/README.md, prints the truth

`fixtures/synthetic_training.json.gz` is a small training-like trace built with `tests/builder.py`:
one A100, four `ProfilerStep`s of a bf16 block (linear/addmm, relu, gelu, add, layer_norm, softmax,
and an mm on a second stream), an HtoD copy at the start of each step, a CUDA-graph optimizer step,
and `loss.item()` (DtoH copy + `cudaStreamSynchronize`) at the end of each step; in step 2 a long
python function stalls the host.

How it is made: the host side is a tree of ops (`Op`). `layout` walks it once with a simulated clock,
placing every op, every launch call near the end of its op, and every GPU item at
``max(launch start + LATENCY_NS, when its stream frees up)``; a sync call lasts until its stream
drains. `write` then emits the tree parent-first through the builder, so each launch carries the
External id of the op around it. The ground truth is measured afterwards from the written JSON,
in integer nanoseconds (`ground_truth`), and rendered into `fixtures/README.md`.
"""

from __future__ import annotations

import gzip
import json
import sys
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from builder import DEFAULT_BASE_US, TraceBuilder  # noqa: E402
from raw_counts import raw_counts  # noqa: E402

FIXTURES = REPO / "fixtures"
TRAINING = "synthetic_training.json.gz"

MAIN, SIDE = 7, 20  # CUDA streams
LATENCY_NS = 7_500  # earliest GPU start after the start of its launch call
LAUNCH_NS = 4_500  # cudaLaunchKernel
MEMCPY_CALL_NS = 5_800  # cudaMemcpyAsync
GRAPH_CALL_NS = 9_200  # cudaGraphLaunch
SYNC_RETURN_NS = 2_800  # cudaStreamSynchronize returns this long after the stream drains
PAD_NS = 1_500  # a parent op's time before its first child and after its last
GAP_NS = 1_000  # host time between sibling ops
STALL_NS = 1_080_000  # the python function stalling the host in step 2
STALL_NAME = "train.py(63): log_activation_stats"
NEXT_BATCH_NAME = "dataloader.py(712): __next__"
NEXT_BATCH_NS = 24_000

BF16 = "c10::BFloat16"
TOKENS = 64 * 256  # batch 64 x sequence 256, hidden 512
X_DIMS, X_STRIDES = [64, 256, 512], [131072, 512, 1]

GEMM_ADDMM = "ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_stages_64x4_tn"
GEMM_MM = "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_nn"
_CLAMP = ("at::native::(anonymous namespace)::launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar, "
          "c10::Scalar, at::native::detail::ClampLimits)::{lambda()#1}::operator()() const::{lambda()#14}::"
          "operator()() const::{lambda(c10::BFloat16)#1}")
RELU = (f"void at::native::vectorized_elementwise_kernel<4, {_CLAMP}, at::detail::Array<char*, 2> >"
        f"(int, {_CLAMP}, at::detail::Array<char*, 2>)")
_GELU = ("at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::"
         "operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}")
GELU = (f"void at::native::vectorized_elementwise_kernel<4, {_GELU}, at::detail::Array<char*, 2> >"
        f"(int, {_GELU}, at::detail::Array<char*, 2>)")
_ADD = "at::native::CUDAFunctor_add<c10::BFloat16>"
ADD = (f"void at::native::vectorized_elementwise_kernel<4, {_ADD}, at::detail::Array<char*, 3> >"
       f"(int, {_ADD}, at::detail::Array<char*, 3>)")
LAYER_NORM = ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, "
              "float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, "
              "c10::BFloat16*)")
SOFTMAX = ("void at::native::(anonymous namespace)::cunn_SoftMaxForward<8, c10::BFloat16, float, c10::BFloat16, "
           "at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(c10::BFloat16*, c10::BFloat16 const*, int)")
GRAPH_ID = 1  # the same captured graph is replayed every step
ELEMENTWISE_GRID = (TOKENS * 512 // (4 * 128), 1, 1)
ROW_GRID = (TOKENS, 1, 1)


# ------------------------------------------------------------------------------------ the model

@dataclass
class Item:
    """One piece of GPU work: a kernel, or a copy (``copy`` = "HtoD"/"DtoH")."""

    name: str
    dur_ns: int
    grid: tuple[int, int, int] = ELEMENTWISE_GRID
    copy: str | None = None
    nbytes: int = 0
    start: int = 0  # set by layout


@dataclass
class Call:
    """A runtime call made by an op: a launch of ``items``, or a stream sync (``items`` empty)."""

    api: str
    call_ns: int
    items: list[Item] = field(default_factory=list)
    stream: int = MAIN
    start: int = 0  # set by layout
    end: int = 0


@dataclass
class Op:
    """A host event: ``cpu_op``, ``user_annotation``, ``step`` or ``python_function``."""

    name: str
    kind: Literal["cpu_op", "user_annotation", "step", "python_function"] = "cpu_op"
    self_ns: int = 0
    children: list[Op] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    shapes: dict[str, Any] = field(default_factory=dict)
    start: int = 0  # set by layout
    end: int = 0


def shapes(dims: list, types: list[str], strides: list, concrete: list[str]) -> dict[str, Any]:
    return {"input_dims": dims, "input_types": types, "input_strides": strides, "concrete_inputs": concrete}


def us(ns: int) -> float:
    """Integer ns -> the µs the builder takes; exact, since it has at most 3 decimals."""
    return ns / 1000


def launch(item: Item, stream: int = MAIN) -> Call:
    return Call("cudaLaunchKernel", LAUNCH_NS, [item], stream)


def kernel_op(name: str, self_ns: int, item: Item, op_shapes: dict[str, Any], stream: int = MAIN) -> Op:
    return Op(name, self_ns=self_ns, calls=[launch(item, stream)], shapes=op_shapes)


def training_step(n: int) -> Op:
    """``ProfilerStep#n``: input copy, forward, graphed optimizer step, ``loss.item()``."""
    scalar = shapes([[]], ["float"], [[]], [""])
    forward = [
        kernel_op("aten::mm", 11_200, Item(GEMM_MM, 48_064, grid=(4, 128, 1)),
                  shapes([[TOKENS, 512], [512, 512]], [BF16, BF16], [[512, 1], [1, 512]], ["", ""]), stream=SIDE),
        Op("aten::linear", shapes=shapes([X_DIMS, [512, 512], [512]], [BF16] * 3,
                                         [X_STRIDES, [512, 1], [1]], ["", "", ""]), children=[
            Op("aten::t", self_ns=3_200, shapes=shapes([[512, 512]], [BF16], [[512, 1]], [""])),
            kernel_op("aten::addmm", 14_000, Item(GEMM_ADDMM, 46_208, grid=(8, 128, 1)),
                      shapes([[512], [TOKENS, 512], [512, 512], [], []], [BF16, BF16, BF16, "Scalar", "Scalar"],
                             [[1], [512, 1], [1, 512], [], []], ["", "", "", "1", "1"])),
        ]),
        kernel_op("aten::relu", 9_000, Item(RELU, 22_592), shapes([X_DIMS], [BF16], [X_STRIDES], [""])),
        kernel_op("aten::gelu", 9_400, Item(GELU, 23_744), shapes([X_DIMS, []], [BF16, ""], [X_STRIDES, []], ["", ""])),
        *([Op(STALL_NAME, kind="python_function", self_ns=STALL_NS)] if n == 2 else []),
        kernel_op("aten::add", 10_100, Item(ADD, 33_856),
                  shapes([X_DIMS, X_DIMS, []], [BF16, BF16, "Scalar"], [X_STRIDES, X_STRIDES, []], ["", "", "1"])),
        Op("aten::layer_norm", shapes=shapes(
            [X_DIMS, [], [512], [512], [], []], [BF16, "ScalarList", BF16, BF16, "Scalar", "Scalar"],
            [X_STRIDES, [], [1], [1], [], []], ["", "[512]", "", "", "1.0000000000000001e-05", "True"]), children=[
            kernel_op("aten::native_layer_norm", 10_300, Item(LAYER_NORM, 24_832, grid=ROW_GRID), shapes(
                [X_DIMS, [], [512], [512], []], [BF16, "ScalarList", BF16, BF16, "Scalar"],
                [X_STRIDES, [], [1], [1], []], ["", "[512]", "", "", "1.0000000000000001e-05"])),
        ]),
        Op("aten::softmax", shapes=shapes([X_DIMS, [], []], [BF16, "Scalar", ""], [X_STRIDES, [], []],
                                          ["", "-1", ""]), children=[
            kernel_op("aten::_softmax", 8_800, Item(SOFTMAX, 25_536, grid=ROW_GRID),
                      shapes([X_DIMS, [], []], [BF16, "Scalar", "Scalar"], [X_STRIDES, [], []], ["", "-1", "False"])),
        ]),
    ]
    graph = [Item("triton_red_fused__foreach_norm_0", 8_224), Item("triton_poi_fused__foreach_mul_1", 5_152),
             Item("triton_poi_fused__foreach_addcdiv_sqrt_2", 9_568)]
    return Op(f"ProfilerStep#{n}", kind="step", children=[
        Op("aten::to", shapes=shapes([[64, 256], [], [], [], [], []], ["long int", "", "", "", "Scalar", "Scalar"],
                                     [[256, 1], [], [], [], [], []], ["", "", "", "", "True", "False"]), children=[
            Op("aten::copy_", self_ns=9_000, shapes=shapes([[64, 256], [64, 256], []],
                                                           ["long int", "long int", "Scalar"],
                                                           [[256, 1], [256, 1], []], ["", "", "True"]),
               calls=[Call("cudaMemcpyAsync", MEMCPY_CALL_NS, [Item("", 3_104, copy="HtoD", nbytes=TOKENS * 8)])]),
        ]),
        Op("## forward ##", kind="user_annotation", children=forward),
        Op("Optimizer.step#AdamW.step", kind="user_annotation", self_ns=16_000,
           calls=[Call("cudaGraphLaunch", GRAPH_CALL_NS, graph)]),
        Op("aten::item", shapes=scalar, children=[
            Op("aten::_local_scalar_dense", self_ns=4_000, shapes=scalar, calls=[
                Call("cudaMemcpyAsync", MEMCPY_CALL_NS, [Item("", 1_920, copy="DtoH", nbytes=4)]),
                Call("cudaStreamSynchronize", 2_000),
            ]),
        ]),
    ])


def training_program(steps: int = 4) -> list[Op]:
    program: list[Op] = []
    for n in range(1, steps + 1):
        if n > 1:
            program.append(Op(NEXT_BATCH_NAME, kind="python_function", self_ns=NEXT_BATCH_NS))
        program.append(training_step(n))
    return program


# --------------------------------------------------------------------------- layout and writing

def layout(ops: list[Op], start: int, stream_free: dict[int, int]) -> int:
    """Place ``ops`` one after another from ``start`` (ns); returns the end of the last one."""
    now = start
    for op in ops:
        op.start = now
        if op.children:
            op.end = layout(op.children, now + PAD_NS, stream_free) + PAD_NS
        else:
            op.end = _place_calls(op, stream_free)
        now = op.end + GAP_NS
    return now - GAP_NS


def _place_calls(op: Op, stream_free: dict[int, int]) -> int:
    """Launches sit at the end of their op (after its dispatch time); GPU items queue per stream."""
    launch_ns = sum(call.call_ns for call in op.calls)
    t = op.start + max(PAD_NS, op.self_ns - launch_ns - PAD_NS)
    for call in op.calls:
        call.start = t
        if call.items:
            gpu = max(t + LATENCY_NS, stream_free.get(call.stream, 0))
            for item in call.items:
                item.start, gpu = gpu, gpu + item.dur_ns
            stream_free[call.stream] = gpu
            call.end = t + call.call_ns
        else:  # a stream sync: returns once the stream has drained
            call.end = max(t + call.call_ns, stream_free.get(call.stream, 0) + SYNC_RETURN_NS)
        t = call.end + 500
    return max(op.start + op.self_ns, t - 500 + PAD_NS) if op.calls else op.start + op.self_ns


def write(ops: list[Op], b: TraceBuilder, parent_external: int | None = None) -> None:
    """Emit ``ops`` parent-first; launches carry the External id of the op they sit in."""
    for op in ops:
        start, dur = us(op.start), us(op.end - op.start)
        external = parent_external
        if op.kind == "cpu_op":
            external = b.cpu_op(op.name, start, dur, **op.shapes)
        elif op.kind == "user_annotation":
            external = b.annotation(op.name, start, dur)
        elif op.kind == "step":
            external = b.step(int(op.name.split("#")[1]), start, dur)
        else:
            b.python_function(op.name, start, dur)
        for call in op.calls:
            call_start, call_dur = us(call.start), us(call.end - call.start)
            if not call.items:
                b.sync_call(call_start, call_dur, name=call.api, stream=call.stream, external_id=external)
            elif call.api == "cudaGraphLaunch":
                b.graph_launch(call_start, call_dur, [(us(i.start), us(i.dur_ns), i.name) for i in call.items],
                               stream=call.stream, external_id=external, graph_id=GRAPH_ID)
            else:
                corr = b.launch(call_start, call_dur, name=call.api, external_id=external)
                for item in call.items:
                    if item.copy:
                        b.memcpy(corr, us(item.start), us(item.dur_ns), kind=item.copy, bytes=item.nbytes,
                                 stream=call.stream)
                    else:
                        b.kernel(corr, us(item.start), us(item.dur_ns), name=item.name, stream=call.stream,
                                 grid=item.grid)
        write(op.children, b, external)


def build_training_trace() -> TraceBuilder:
    program = training_program()
    layout(program, 0, {})
    b = TraceBuilder(device_name="NVIDIA A100-SXM4-80GB", num_sms=108)
    write(program, b)
    return b


# -------------------------------------------------------------------------------- ground truth

GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}


def _ns(value: int | float) -> int:
    return int(Decimal(value if isinstance(value, int) else repr(value)) * 1000)


def _union(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[list[int]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(s, e) for s, e in merged]


def _clip(intervals: list[tuple[int, int]], lo: int, hi: int) -> list[tuple[int, int]]:
    return [(max(s, lo), min(e, hi)) for s, e in intervals if min(e, hi) > max(s, lo)]


def ground_truth(trace: dict[str, Any], base_us: float = DEFAULT_BASE_US) -> dict[str, Any]:
    """Window, busy, idle, gaps and steps of device 0, in ns relative to ``base_us``, computed from
    the JSON itself with plain Python — a second implementation of docs/metrics.md.

    Busy is the union of kernel/memcpy/memset intervals over all streams; the window runs from the
    first GPU start to the last GPU end; a gap is an idle stretch between two busy ones. A gap's
    cause: ``sync`` when a blocking runtime call overlaps it; ``other`` when the GPU op ending it
    has no launch; ``host`` when that op's launch began after the gap began; else ``launch``.
    A step's GPU window runs from the first start of the GPU ops launched inside its CPU span to
    the next step's first start (the last step: to its last end).
    """
    base = _ns(base_us)
    xs = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    span = lambda e: (_ns(e["ts"]) - base, _ns(e["ts"]) - base + _ns(e["dur"]))  # noqa: E731
    gpu_events = [e for e in xs if e["cat"] in GPU_CATS]
    gpu = [(span(e), e["args"]["stream"]) for e in gpu_events]
    busy = _union([iv for iv, _ in gpu])
    window = (busy[0][0], busy[-1][1])
    runtime = [e for e in xs if e["cat"] in ("cuda_runtime", "cuda_driver")]
    launch_start = {e["args"]["correlation"]: span(e)[0] for e in runtime
                    if any(k in e["name"] for k in ("LaunchKernel", "GraphLaunch", "Memcpy", "Memset"))}
    blocking = [span(e) for e in runtime if e["name"] in ("cudaStreamSynchronize", "cudaDeviceSynchronize",
                                                          "cudaEventSynchronize", "cudaMemcpy")]
    steps = [(span(e), e["name"]) for e in xs if e["name"].startswith("ProfilerStep#")]

    def cause(lo: int, hi: int) -> str:
        if any(s < hi and e > lo for s, e in blocking):
            return "sync"
        starting = [e for e in gpu_events if span(e)[0] == hi]
        launches = [launch_start[e["args"]["correlation"]] for e in starting
                    if e["args"]["correlation"] in launch_start]
        if not launches:
            return "other"
        return "host" if min(launches) > lo else "launch"

    def step_of(t: int) -> str:
        return next((name for (s, e), name in steps if s <= t < e), "between steps")

    gaps = [{"start": a_end, "end": b_start, "dur": b_start - a_end, "step": step_of(a_end),
             "cause": cause(a_end, b_start)}
            for (_, a_end), (b_start, _) in zip(busy, busy[1:])]
    launched_in = {}
    for e in gpu_events:
        launched = launch_start.get(e["args"]["correlation"])
        name = next((n for (s, t), n in steps if launched is not None and s <= launched < t), None)
        if name is not None:
            launched_in.setdefault(name, []).append(span(e))
    per_step = []
    names = [name for _, name in steps if name in launched_in]
    for i, name in enumerate(names):
        first = min(s for s, _ in launched_in[name])
        end = (min(s for s, _ in launched_in[names[i + 1]]) if i + 1 < len(names)
               else max(e for _, e in launched_in[name]))
        inside = _clip(busy, first, end)
        step_busy = sum(b - a for a, b in inside)
        per_step.append({"step": name, "start": first, "end": end, "dur": end - first, "busy": step_busy,
                         "idle": (end - first) - step_busy, "gpu_ops": len(launched_in[name])})
    streams = sorted({stream for _, stream in gpu})
    busy_ns = sum(e - s for s, e in busy)
    trace_span = next(span(e) for e in xs if e["cat"] == "Trace")
    return {
        "base_us": base_us,
        "trace_span": trace_span,
        "window": window,
        "window_dur": window[1] - window[0],
        "busy": busy_ns,
        "idle": window[1] - window[0] - busy_ns,
        "gpu_dur_sum": sum(e - s for (s, e), _ in gpu),
        "stream_busy": {st: sum(e - s for s, e in _union([iv for iv, x in gpu if x == st])) for st in streams},
        "gaps": gaps,
        "steps": per_step,
    }


# ------------------------------------------------------------------------------------ the README

def _us(ns: int) -> str:
    return f"{Decimal(ns) / 1000:.3f}"


def render_readme(truth: dict[str, Any], counts: dict[str, Any]) -> str:
    gaps = sorted(truth["gaps"], key=lambda g: g["start"])
    overlap = truth["gpu_dur_sum"] - truth["busy"]
    lines = [
        "# Fixtures",
        "",
        "Generated by `scripts/make_fixtures.py` (do not edit by hand: run the script, which rewrites this",
        "file too). Built with `tests/builder.py`; `tests/test_builder.py` checks that the files match the",
        "script and that `tests/raw_counts.py` gives the counts below.",
        "",
        f"## `{TRAINING}`",
        "",
        "A small training-like trace (2024 schema, float µs timestamps with ns fractions), one",
        "`NVIDIA A100-SXM4-80GB` (108 SMs), host pid 1000 / tid 1000. Four `ProfilerStep#1..4`, each:",
        "",
        "- `aten::to` → `aten::copy_` → `cudaMemcpyAsync` → `Memcpy HtoD` of 131,072 bytes (stream 7);",
        "- `## forward ##` (user annotation) with `aten::linear` → (`aten::t`, `aten::addmm` → gemm),",
        "  `aten::relu`, `aten::gelu`, `aten::add`, `aten::layer_norm` → `aten::native_layer_norm`,",
        "  `aten::softmax` → `aten::_softmax`, and `aten::mm` whose gemm runs on **stream 20**, overlapping",
        "  stream 7; bf16 shapes (`[64, 256, 512]` activations, `[512, 512]` weights) with `Input type`,",
        "  `Input Strides` and `Concrete Inputs`;",
        "- `Optimizer.step#AdamW.step` (user annotation) → one `cudaGraphLaunch` → 3 kernels sharing its",
        "  correlation (the same `graph id` 1 every step; kernels back to back);",
        "- `aten::item` → `aten::_local_scalar_dense` → `cudaMemcpyAsync` (`Memcpy DtoH`, 4 bytes) and a",
        "  `cudaStreamSynchronize` (+ its `cuda_sync` event) that returns 2.8 µs after stream 7 drains.",
        "",
        f"Between steps a `python_function` `{NEXT_BATCH_NAME}` ({_us(NEXT_BATCH_NS)} µs). In step 2,",
        f"after `aten::gelu`, the host runs `python_function` `{STALL_NAME}` for {_us(STALL_NS)} µs",
        "with no launches. Every launch sits inside its op on the same tid and carries that op's External",
        "id; every kernel starts at max(launch start + 7.5 µs, its stream's previous end).",
        "",
        "### Counts (`tests/raw_counts.py`)",
        "",
        "| " + " | ".join(k for k in counts if k != "gpu_by_kind") + " |",
        "|" + "---|" * (len(counts) - 1),
        "| " + " | ".join(str(v) for k, v in counts.items() if k != "gpu_by_kind") + " |",
        "",
        "GPU events by kind: " + ", ".join(f"{k} {v}" for k, v in counts["gpu_by_kind"].items()) + ".",
        "",
        "### Ground truth (device 0)",
        "",
        f"All times in µs relative to `base_us` = {truth['base_us']!r} (absolute `ts` = base + t).",
        "Busy = union of kernel/memcpy/memset intervals over both streams; window = first GPU start to",
        "last GPU end; idle = window − busy; gaps = idle stretches between busy ones.",
        "",
        "| quantity | µs |",
        "|---|---|",
        f"| `Trace` span | {_us(truth['trace_span'][0])} – {_us(truth['trace_span'][1])} |",
        f"| GPU window | {_us(truth['window'][0])} – {_us(truth['window'][1])} ({_us(truth['window_dur'])}) |",
        f"| busy (union) | {_us(truth['busy'])} |",
        f"| idle | {_us(truth['idle'])} |",
        f"| sum of GPU durations | {_us(truth['gpu_dur_sum'])} (stream overlap {_us(overlap)}) |",
        *[f"| busy on stream {st} | {_us(v)} |" for st, v in truth["stream_busy"].items()],
        f"| gaps | {len(gaps)}, total {_us(sum(g['dur'] for g in gaps))} |",
        "",
        "Idle gaps, with the cause defined in docs/metrics.md (`sync`: a blocking call overlaps the gap;",
        "`host`: the next GPU op's launch began after the gap began; `launch`: it began before):",
        "",
        "| step | start | end | µs | cause |",
        "|---|---|---|---|---|",
        *[f"| {g['step']} | {_us(g['start'])} | {_us(g['end'])} | {_us(g['dur'])} | {g['cause']} |" for g in gaps],
        "",
        "Per step (GPU ops belong to the step whose CPU span holds their launch; the step's GPU window",
        "runs from its first op's start to the next step's first op's start, the last to its last end):",
        "",
        "| step | GPU ops | start | end | window | busy | idle |",
        "|---|---|---|---|---|---|---|",
        *[f"| {s['step']} | {s['gpu_ops']} | {_us(s['start'])} | {_us(s['end'])} | {_us(s['dur'])} "
          f"| {_us(s['busy'])} | {_us(s['idle'])} |" for s in truth["steps"]],
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    FIXTURES.mkdir(exist_ok=True)
    path = build_training_trace().write(FIXTURES / TRAINING)
    truth = ground_truth(json.loads(gzip.decompress(path.read_bytes())))
    counts = raw_counts(path)
    readme = render_readme(truth, counts)
    (FIXTURES / "README.md").write_text(readme)
    print(f"wrote {path.relative_to(REPO)} ({path.stat().st_size:,} bytes) and fixtures/README.md\n")
    print(readme)


if __name__ == "__main__":
    main()
