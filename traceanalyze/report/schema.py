"""The JSON report's schema (docs/report-json.md) as msgspec structs: `ReportV1` and the structs it
holds. `jsonout` fills and encodes them; `gate` and `diff` decode saved reports with them, so a
field of the wrong type is refused with its path (`$.ranks[0].devices`).

Fields are encoded in the order they are declared here: that order is the JSON's key order. Times
are in µs (`_us`), fractions in [0, 1]. A field with a default may be absent from a saved report
(hand-written baselines in tests and CI); the encoder always writes every field.

To add a field: declare it here (where it should appear), fill it in `jsonout`, document it in
docs/report-json.md; a field that changes the meaning of an existing one bumps `SCHEMA_VERSION`.
"""

from __future__ import annotations

from typing import Optional

import msgspec

from traceanalyze.renderers.escape import json_text

SCHEMA_VERSION = "1.2"  # 1.1: the `findings` array; 1.2: `bound_us`, and `gain_us` the time a finding names
KNOWN_SCHEMA_VERSIONS = ("1.0", "1.1", SCHEMA_VERSION)
KERNEL_LIMIT = 50  # kernels (and ops) listed per report and per rank, the longest in total first
COLLECTIVE_LIMIT = 50  # collectives listed, the most waited on first (then in order)

Number = float  # a JSON number: msgspec accepts an integer for it when decoding


class Struct(msgspec.Struct, kw_only=True, omit_defaults=False):
    """Base of the schema's structs: keyword-only fields, every field always encoded."""


class Tool(Struct, kw_only=True):
    name: str
    version: str


class Options(Struct, kw_only=True):
    window: Optional[str] = None
    max_gaps: Optional[int] = None
    skip_steps: Optional[int] = None  # absent from reports written before --skip-steps existed


class LatencyStats(Struct, kw_only=True):
    """Launch-latency percentiles in µs over `count` launched GPU ops (None when there are none)."""

    count: int = 0
    mean: Optional[Number] = None
    p50: Optional[Number] = None
    p90: Optional[Number] = None
    p99: Optional[Number] = None
    max: Optional[Number] = None


class LaunchLatency(Struct, kw_only=True):
    """The five launch-latency measures (docs/metrics.md), one `LatencyStats` each."""

    launch_to_start_us: LatencyStats = msgspec.field(default_factory=LatencyStats)
    queue_wait_us: LatencyStats = msgspec.field(default_factory=LatencyStats)
    launch_overhead_us: LatencyStats = msgspec.field(default_factory=LatencyStats)
    launch_cpu_us: LatencyStats = msgspec.field(default_factory=LatencyStats)
    launch_delay_us: LatencyStats = msgspec.field(default_factory=LatencyStats)


class SmallKernelRun(Struct, kw_only=True):
    stream: int
    kernels: int
    span_us: Number
    busy_us: Number
    first_kernel: Optional[str]


class SmallKernels(Struct, kw_only=True):
    count: int = 0
    kernels_with_launch: int = 0
    gpu_time_us: Number = 0.0
    share_of_kernel_time: Number = 0.0
    runs: list[SmallKernelRun] = msgspec.field(default_factory=list)


class ReplayStep(Struct, kw_only=True):
    """One step of a rank, recorded and replayed (docs/whatif.md)."""

    step: int
    measured_us: Number
    replayed_us: Number
    relative_error: Number


class Replay(Struct, kw_only=True):
    """The trace replayed (docs/whatif.md): the recorded window against the unmodified replay's,
    the mean step time, and the top findings' actions predicted together."""

    measured_us: Optional[Number] = None
    replayed_us: Optional[Number] = None
    relative_error: Optional[Number] = None
    step_us: Optional[Number] = None
    replayed_step_us: Optional[Number] = None
    predicted_window_us: Optional[Number] = None  # None: no finding's action could be modelled
    predicted_step_us: Optional[Number] = None
    predicted_findings: list[str] = msgspec.field(default_factory=list)  # the ids applied together
    steps: list[ReplayStep] = msgspec.field(default_factory=list)  # a rank's; empty in the report's summary


class SummaryFields(Struct, kw_only=True):
    """The summary figures a report and each rank share (see `report.summaries` for definitions):
    window, busy and idle are means over device windows, `idle_fraction` the ratio of their sums."""

    window_us: Optional[Number] = None
    gpu_busy_us: Optional[Number] = None
    gpu_idle_us: Optional[Number] = None
    idle_fraction: Optional[Number] = None
    device_windows: int = 0
    attribution: Optional[dict[str, Number]] = None  # regime → share of the window
    attribution_us: Optional[dict[str, Optional[Number]]] = None
    model_coverage: Optional[Number] = None
    modelled_busy_us: Optional[Number] = None
    modelable_busy_us: Optional[Number] = None
    communication_busy_us: Optional[Number] = None
    idle_by_cause_us: dict[str, Optional[Number]] = msgspec.field(default_factory=dict)
    launch_to_start_us: LatencyStats = msgspec.field(default_factory=LatencyStats)
    queue_wait_us: LatencyStats = msgspec.field(default_factory=LatencyStats)
    launch_overhead_us: LatencyStats = msgspec.field(default_factory=LatencyStats)
    launch_cpu_us: LatencyStats = msgspec.field(default_factory=LatencyStats)
    launch_delay_us: LatencyStats = msgspec.field(default_factory=LatencyStats)
    replay: Optional[Replay] = None  # absent in reports made before the replay (docs/whatif.md)


class Summary(SummaryFields, kw_only=True):
    """The report's summary, over every rank."""

    ranks: int = 0


class RankSummary(SummaryFields, kw_only=True):
    small_kernels: SmallKernels = msgspec.field(default_factory=SmallKernels)
    steps: int = 0


class Gap(Struct, kw_only=True):
    rank: int
    device: int
    start_us: Number  # from the start of its device's window
    trace_ts_us: Number
    duration_us: Number
    share_of_window: Number
    cause: str
    cpu_op: Optional[str]
    annotation: Optional[str]
    step: Optional[int]
    sync_call: Optional[str]
    previous_gpu_op: Optional[str]
    next_gpu_op: Optional[str]


class Peak(Struct, kw_only=True):
    device: int
    name: Optional[str]
    matched: Optional[str]
    source: str
    memory_bandwidth_bytes_per_s: Optional[Number]
    peak_flops_per_s: Optional[dict[str, Number]]  # "dtype:unit" → FLOP/s


class RooflineFields(Struct, kw_only=True):
    """What a per-kernel and a per-op entry share: totals, rates and the roof used."""

    count: int
    total_us: Number
    flops: Optional[int | float] = None
    bytes: Optional[int | float] = None
    intensity: Optional[Number] = None  # FLOP per byte
    achieved_flops_per_s: Optional[Number] = None
    achieved_bytes_per_s: Optional[Number] = None
    bound: Optional[str] = None
    roof: Optional[str] = None
    compute_dtype: Optional[str] = None
    math_unit: Optional[str] = None
    peak_flops_per_s: Optional[Number] = None
    peak_bytes_per_s: Optional[Number] = None
    ridge_flops_per_byte: Optional[Number] = None
    pct_of_roof: Optional[Number] = None  # a fraction of the roof, despite the name
    pct_of_peak: Optional[Number] = None  # the same number, kept for readers of schema 1.0
    no_roof_reason: Optional[str] = None
    recoverable_us: Optional[Number] = None
    unmodeled_reason: Optional[str] = None
    tf32_peak_flops_per_s: Optional[Number] = None  # FP32 matmul-like work on SIMT: the TF32 tensor-core roof
    tf32_roof_fraction: Optional[Number] = None  # achieved FLOP/s ÷ that roof


# A kernel names itself before the shared fields, an op entry is its op: the field lists are
# RooflineFields' own, so a roofline field is declared once.
_ROOFLINE_FIELDS = [
    (f.name, f.type, msgspec.NODEFAULT if f.required else f.default)
    for f in msgspec.structs.fields(RooflineFields)
]
Kernel = msgspec.defstruct(
    "Kernel", [("name", str), ("op", Optional[str], None), *_ROOFLINE_FIELDS], bases=(Struct,), kw_only=True,
    module=__name__,
)
Op = msgspec.defstruct("Op", [("op", Optional[str]), *_ROOFLINE_FIELDS], bases=(Struct,), kw_only=True, module=__name__)


class Device(Struct, kw_only=True):
    device: int
    name: Optional[str]
    window_us: Optional[Number]
    gpu_busy_us: Optional[Number]
    gpu_idle_us: Optional[Number]
    idle_fraction: Optional[Number]
    gpu_ops: int


class Stream(Struct, kw_only=True):
    device: int
    stream: int
    gpu_ops: int
    busy_us: Number
    idle_fraction: Optional[Number]


class Step(Struct, kw_only=True):
    device: Optional[int] = None
    step: int
    cpu_duration_us: Optional[Number] = None
    window_us: Optional[Number] = None
    gpu_busy_us: Optional[Number] = None
    gpu_idle_us: Optional[Number] = None
    idle_fraction: Optional[Number] = None
    gpu_ops: Optional[int] = None
    attribution: Optional[dict[str, Optional[Number]]] = None  # regime → share of the step's window


class CpuStep(Struct, kw_only=True):
    step: int
    duration_us: Number


class KernelLatency(Struct, kw_only=True):
    name: Optional[str]
    count: int
    mean: Optional[Number]
    p50: Optional[Number]
    p90: Optional[Number]
    p99: Optional[Number]
    max: Optional[Number]


class Fusion(Struct, kw_only=True):
    ops: str
    annotation: Optional[str]
    occurrences: int
    kernels: int
    duration_us: Number
    bytes_saved: int | float
    time_saved_us: Number


class Queue(Struct, kw_only=True):
    device: int
    stream: int
    max_depth: int
    mean_depth: Number
    time_at_full_us: Number


class Health(Struct, kw_only=True):
    finding: str
    count: int
    affects: str = ""
    detail: str = ""


class Rank(Struct, kw_only=True):
    rank: Optional[int] = None
    source: str = ""
    world_size: Optional[int] = None
    device_family: str = "none"  # CUDA, ROCm, MTIA, accelerator or none (model.DEVICE_FAMILIES)
    has_gpu_events: bool = True
    notes: list[str] = msgspec.field(default_factory=list)
    summary: RankSummary = msgspec.field(default_factory=RankSummary)
    devices: list[Device] = msgspec.field(default_factory=list)
    streams: list[Stream] = msgspec.field(default_factory=list)
    steps: list[Step]
    cpu_steps: list[CpuStep] = msgspec.field(default_factory=list)
    idle_gaps: list[Gap] = msgspec.field(default_factory=list)
    device: Optional[Peak] = None
    peaks: list[Peak] = msgspec.field(default_factory=list)
    launch_latency_by_kind: dict[str, LaunchLatency] = msgspec.field(default_factory=dict)
    launch_latency_by_kernel: list[KernelLatency] = msgspec.field(default_factory=list)
    kernels: list[Kernel] = msgspec.field(default_factory=list)  # type: ignore[valid-type]
    kernels_total: int = 0
    ops: list[Op] = msgspec.field(default_factory=list)  # type: ignore[valid-type]
    ops_total: int = 0
    fusion_opportunities: list[Fusion] = msgspec.field(default_factory=list)
    recoverable_us: dict[str, Optional[Number]] = msgspec.field(default_factory=dict)  # regime → µs
    queue: list[Queue] = msgspec.field(default_factory=list)
    health: list[Health]


class CollectiveRank(Struct, kw_only=True):
    rank: int
    arrival_us: Number  # after the collective's first arrival (aligned clocks)
    wait_us: Number
    transfer_us: Number
    duration_us: Number


class Collective(Struct, kw_only=True):
    process_group: str
    seq: int
    collective: str
    algorithm: Optional[str] = None
    protocol: Optional[str] = None
    ranks: int
    message_bytes: Optional[int] = None
    first_arrival_ts_us: Number  # trace time on the reference rank's clock
    last_arrival_us: Number  # after the first arrival
    last_rank: int
    wait_us: Number  # summed over the ranks
    max_wait_us: Number
    transfer_us: Number
    algbw_bytes_per_s: Optional[Number] = None
    busbw_bytes_per_s: Optional[Number] = None
    link_peak_bytes_per_s: Optional[Number] = None
    link_fraction: Optional[Number] = None
    consistent: bool = True
    per_rank: list[CollectiveRank] = msgspec.field(default_factory=list)


class StragglerStep(Struct, kw_only=True):
    step: int
    slowest_rank: int
    behind_us: Number
    others_wait_us: Number
    collectives_last: int
    ranks: int
    cause: Optional[str] = None
    cause_us: Optional[Number] = None


class RankStep(Struct, kw_only=True):
    rank: int
    device: int
    step: int
    step_us: Number
    compute_us: Number
    comm_us: Number
    idle_us: Number
    wait_us: Number
    work_us: Number


class WaitCaused(Struct, kw_only=True):
    rank: int
    caused_wait_us: Number
    collectives_last: int


class Stragglers(Struct, kw_only=True):
    slowest_rank: Optional[int] = None
    waits_caused: list[WaitCaused] = msgspec.field(default_factory=list)
    steps: list[StragglerStep] = msgspec.field(default_factory=list)
    rank_steps: list[RankStep] = msgspec.field(default_factory=list)


class Overlap(Struct, kw_only=True):
    rank: int
    communication_us: Number
    overlapped_us: Number
    exposed_us: Number
    overlap_fraction: Optional[Number] = None
    wait_us: Optional[Number] = None  # its collective waits (null: none of its collectives matched)
    hideable_us: Optional[Number] = None  # at most this much of exposed_us is transfer that overlap could hide


class ClockOffset(Struct, kw_only=True):
    rank: int
    reference_rank: int
    offset_us: Number
    collectives: int
    residual_median_abs_us: Optional[Number] = None
    residual_max_abs_us: Optional[Number] = None
class Finding(Struct, kw_only=True):
    """One diagnosis (docs/findings.md): what to change and an upper bound on what it gains."""

    rank: Optional[int] = None
    id: str
    regime: str
    title: str
    evidence: str
    action: str
    gain_us: Optional[Number] = None  # None: not estimated (a note, a change of recording)
    saving_us: Optional[Number] = None  # the replay's predicted saving; None: not modelled (docs/whatif.md)
    bound_us: Optional[Number] = None  # the most the action can save (≥ gain_us; docs/whatif.md, "Bounds")
    confidence: str


class ReportV1(Struct, kw_only=True):
    """The whole JSON report, schema 1.x."""

    schema_version: str
    tool: Optional[Tool] = None
    source: str = ""
    options: Options = msgspec.field(default_factory=Options)
    notes: list[str] = msgspec.field(default_factory=list)
    summary: Summary
    # every rank's, largest expected saving first (docs/findings.md)
    findings: list[Finding] = msgspec.field(default_factory=list)
    idle_gaps: list[Gap] = msgspec.field(default_factory=list)
    device: Optional[Peak] = None
    kernels: list[Kernel] = msgspec.field(default_factory=list)  # type: ignore[valid-type]
    kernels_total: int = 0
    ops: list[Op] = msgspec.field(default_factory=list)  # type: ignore[valid-type]
    ops_total: int = 0
    ranks: list[Rank]
    # across ranks (docs/metrics.md, "Multi-GPU jobs"): empty for one rank
    collectives: list[Collective] = msgspec.field(default_factory=list)
    collectives_total: int = 0
    stragglers: Stragglers = msgspec.field(default_factory=Stragglers)
    overlap: list[Overlap] = msgspec.field(default_factory=list)
    clock_offsets: list[ClockOffset] = msgspec.field(default_factory=list)


def encode_report(report: ReportV1) -> str:
    """The report as indented JSON text, ending in a newline."""
    return json_text(msgspec.json.format(msgspec.json.encode(report), indent=2).decode()) + "\n"


def report_from_builtins(document: object) -> ReportV1:
    """A report given as Python objects (a decoded JSON document) checked against the schema;
    raises `msgspec.ValidationError` naming the first wrong field."""
    return msgspec.convert(document, ReportV1)
