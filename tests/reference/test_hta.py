"""Reference tests: our idle time and launch delay against HolisticTraceAnalysis (HTA) 0.5.0 on the
real traces in ../shared/traces (docs/hta.md explains every difference and tabulates the results).

HTA defines both numbers differently from us. So each test recomputes HTA's number *from our
tables* with HTA's rules and requires exact equality (in ns); a second test undoes those rules one
at a time and checks that they account for the whole difference to our own default number.

HTA's rules, read from its source (hta/common/trace_parser.py, common/trace.py,
analyzers/breakdown_analysis.py, analyzers/cuda_kernel_analysis.py):

- Rounding: if pandas parses the `ts` column as float (an event has a fractional `ts`, or none),
  every event becomes `ts = ceil(ts)`, `end = floor(ts + dur)` (float µs); otherwise times stay as
  written (integer `ts`, `dur` possibly fractional).
- Last step: if the trace holds two or more distinct `ProfilerStep*` names, CPU-side events that
  start at or after the last step's start are dropped, and so is GPU work whose correlation then
  matches no CPU-side event (the last step's kernels, and orphans anywhere).
- Busy: every remaining event whose `args.stream` parses as an int other than -1, on any device of
  the rank: kernels, memcpy, memset, but also `cuda_sync` events and CPU ops that carry a `stream`
  arg (Inductor's Triton launcher ops). Window: first busy start to last busy end.
- Launch delay: `ts_gpu − (ts_cpu + dur_cpu)` clipped at 0, only for correlations launched by
  `cudaLaunchKernel`, `cudaLaunchKernelExC`, `cudaMemcpyAsync` or `cudaMemsetAsync`.

HTA's parse is the cost (≈ 15 s for all traces): each file is parsed once per module (`cases`).
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass, replace
from pathlib import Path

import polars as pl
import pytest

from shared_traces import SHARED_TRACES_DIR, real_trace_params, shared_trace, trace_id

import traceanalyze
from traceanalyze.analysis import idle
from traceanalyze.analysis.idle import idle_summary
from traceanalyze.analysis.intervals import union_intervals
from traceanalyze.analysis.launch import launch_latency
from traceanalyze.hta.rules import hta_times, raw_facts
from traceanalyze.model import GPU_SCHEMA, Trace

pytest.importorskip("hta", reason="HolisticTraceAnalysis (the dev extra) is not installed")

pytestmark = pytest.mark.filterwarnings("ignore")  # HTA's pandas FutureWarnings

# the runtime calls whose correlations get_cuda_kernel_launch_stats reads (the last one is MTIA's)
HTA_LAUNCH_NAMES = (
    "cudaLaunchKernel", "cudaLaunchKernelExC", "cudaMemcpyAsync", "cudaMemsetAsync",
    "runFunction - job_prep_and_submit_for_execution",
)
# cuda_sync events that HTA's GPUKernelFilter treats as GPU work whatever their stream
HTA_GPU_SYNC_NAMES = ("Event Sync", "Context Sync")
GPU_CATEGORIES = frozenset({"kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset"})
BUSY_SCHEMA = {"source": pl.String, "name": pl.String, "stream": pl.Int64, "correlation": pl.Int64,
               "start_ns": pl.Int64, "end_ns": pl.Int64}
LAUNCH_SCHEMA = {"correlation": pl.Int64, "cpu_duration_ns": pl.Int64, "gpu_duration_ns": pl.Int64,
                 "launch_delay_ns": pl.Int64}
RANKS_FOLDER = "param_v100_dlrm_4ranks"

# --- running HTA --------------------------------------------------------------------------------

@dataclass(frozen=True)
class HtaRun:
    """What HTA computed for one rank, in absolute int ns (HTA's own µs rounding kept)."""

    rank: int
    busy: pl.DataFrame  # BUSY_SCHEMA: the rows its temporal breakdown counts as busy
    idle_ns: int | None
    window_ns: int | None
    breakdown_error: str | None  # get_temporal_breakdown's exception, if it raised
    launch: pl.DataFrame  # LAUNCH_SCHEMA: get_cuda_kernel_launch_stats


def _ns(value_us) -> int:
    return round(float(value_us) * 1000)


def _source(category: str) -> str:
    lowered = category.lower()
    if lowered in GPU_CATEGORIES:
        return "gpu"
    return "sync" if lowered == "cuda_sync" else category


def run_hta(folder: Path) -> dict[int, HtaRun]:
    """`TraceAnalysis(trace_dir=folder)`, its temporal breakdown and launch stats for every rank."""
    from hta.configs.config import logger as hta_logger
    from hta.trace_analysis import TraceAnalysis

    level = hta_logger.level
    hta_logger.setLevel(logging.ERROR)
    try:
        with pytest.MonkeyPatch.context() as env:
            env.delenv("HTA_DISABLE_NS_ROUNDING", raising=False)  # this switch changes HTA's numbers
            analyzer = TraceAnalysis(trace_dir=str(folder))
            ranks = sorted(analyzer.t.traces)
            try:
                breakdown, breakdown_error = analyzer.get_temporal_breakdown(visualize=False), None
            except Exception as error:  # HTA's own failure: reported as the skip reason
                breakdown, breakdown_error = None, f"{type(error).__name__}: {error}"
            launch_stats = analyzer.get_cuda_kernel_launch_stats(ranks=ranks, visualize=False)
    finally:
        hta_logger.setLevel(level)

    symbols = analyzer.t.symbol_table.get_sym_table()
    min_ts_ns = int(analyzer.t.min_ts) * 1000  # HTA shifts `ts` (not `end`) by min_ts; whole µs here
    runs = {}
    for rank in ranks:
        frame = analyzer.t.traces[rank]
        rows = frame[frame["stream"].ne(-1)]
        busy = pl.DataFrame(
            {
                "source": [_source(symbols[c]) for c in rows["cat"]],
                "name": [symbols[n] for n in rows["name"]],
                "stream": [int(s) for s in rows["stream"]],
                "correlation": [int(c) for c in rows["correlation"]],
                "start_ns": [min_ts_ns + _ns(t) for t in rows["ts"]],
                "end_ns": [min_ts_ns + _ns(t + d) for t, d in zip(rows["ts"], rows["dur"])],
            },
            schema=BUSY_SCHEMA,
        )
        idle_ns = window_ns = None
        if breakdown is not None:
            row = breakdown[breakdown["rank"] == rank].iloc[0]
            idle_ns, window_ns = _ns(row["idle_time(us)"]), _ns(row["kernel_time(us)"])
        stats = launch_stats[rank]
        launch = pl.DataFrame(
            {
                "correlation": [int(c) for c in stats["correlation"]],
                "cpu_duration_ns": [_ns(v) for v in stats["cpu_duration"]],
                "gpu_duration_ns": [_ns(v) for v in stats["gpu_duration"]],
                "launch_delay_ns": [_ns(v) for v in stats["launch_delay"]],
            },
            schema=LAUNCH_SCHEMA,
        )
        runs[rank] = HtaRun(rank, busy, idle_ns, window_ns, breakdown_error, launch)
    return runs


def hta_rounds(path: Path) -> bool:
    """Whether HTA rounds this trace to whole µs (read from the raw file, not from HTA)."""
    return raw_facts(path).rounds


@dataclass(frozen=True)
class Case:
    path: Path
    trace: Trace  # one rank
    hta: HtaRun | None
    hta_error: str | None  # TraceAnalysis itself raised
    rounds: bool


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    """`cases(path)` → `Case`, computed once per trace for the whole module."""
    cache: dict[Path, Case] = {}

    def get(path: Path) -> Case:
        if path not in cache:
            folder = tmp_path_factory.mktemp("hta")
            (folder / path.name).symlink_to(path)  # HTA reads every .json/.gz in a folder
            try:
                (run,) = run_hta(folder).values()
                error = None
            except Exception as failure:
                run, error = None, f"{type(failure).__name__}: {failure}"
            cache[path] = Case(path, traceanalyze.load_trace(path), run, error, hta_rounds(path))
        return cache[path]

    return get


def hta_case(cases, path: Path) -> Case:
    case = cases(path)
    if case.hta is None:
        pytest.skip(f"HTA cannot load {trace_id(path)}: {case.hta_error}")
    return case


# traces on which HTA's get_temporal_breakdown fails its own `assert non_compute_time >= 0`
# (torch.compile traces our capture recorded on an H100, torch 2.11: Inductor's launcher ops
# carry a stream and count as compute kernels); test_hta_breakdown_fails_where_ours_does_not
HTA_BREAKDOWN_ASSERTS = ("h100_transformer_compiled_train.json.gz", "h100_transformer_cuda_graphs_train.json.gz")


def breakdown_case(cases, path: Path) -> Case:
    """A case where HTA's get_temporal_breakdown ran; where it raised, that is because the trace
    has no GPU work (checked) or is one HTA fails on (`HTA_BREAKDOWN_ASSERTS`), and the test
    skips with HTA's error."""
    case = hta_case(cases, path)
    if case.hta.breakdown_error is not None and path.name in HTA_BREAKDOWN_ASSERTS:
        pytest.skip(f"HTA's get_temporal_breakdown fails on {path.name}: {case.hta.breakdown_error}")
    if case.hta.breakdown_error is not None:
        assert case.trace.gpu.is_empty() and idle_summary(case.trace).is_empty()
        pytest.skip(f"HTA's get_temporal_breakdown fails without GPU events: {case.hta.breakdown_error}")
    return case


# traces our capture recorded on an H100 (fixtures/recorded/README.md): checked like the shared ones
RECORDED_DIR = Path(__file__).resolve().parents[2] / "fixtures" / "recorded"
RECORDED_PARAMS = [pytest.param(path, id=f"recorded/{path.name}") for path in sorted(RECORDED_DIR.glob("*.json.gz"))]


def params(xfail: dict[str, str] | None = None) -> list:
    """`real_trace_params()` and the recorded fixtures, with strict xfail marks on the named trace ids."""
    xfail = xfail or {}
    return [
        pytest.param(*p.values, id=p.id, marks=[*p.marks, pytest.mark.xfail(strict=True, reason=xfail[p.id])])
        if p.id in xfail else p
        for p in real_trace_params() + RECORDED_PARAMS
    ]


# --- HTA's rules applied to our tables ----------------------------------------------------------

def hta_cutoff_ns(trace: Trace, rounds: bool) -> int | None:
    """The last ProfilerStep's start (HTA-rounded) when HTA drops that step: only if the trace
    holds two or more distinct step names."""
    if trace.steps["name"].n_unique() < 2:
        return None
    return max([hta_times(trace.steps, rounds)["start_ns"].max(), *gpu_step_annotation_starts(trace, rounds)])


def gpu_step_annotation_starts(trace: Trace, rounds: bool) -> list[int]:
    """HTA-rounded starts of the `gpu_user_annotation` events named `ProfilerStep#N` (not in our
    tables): HTA's last step starts at the last of any non-GPU event of that name, and where the GPU
    runs behind the CPU (an H100 trace of 8192² FP32 matmuls), that is the GPU-side copy."""
    return [math.ceil(value) * 1000 if rounds else round(value * 1000)
            for value in _gpu_step_annotation_ts(trace.source)]


def _gpu_step_annotation_ts(path: Path) -> tuple[float, ...]:
    return raw_facts(path).step_annotation_ts


def hta_busy_from_ours(trace: Trace, extras: pl.DataFrame, rounds: bool, *, rounding: bool = True,
                       non_gpu: bool = True, last_step: bool = True) -> pl.DataFrame:
    """The rows HTA's temporal breakdown counts as busy, built from our tables (BUSY_SCHEMA).
    `extras`: the CPU-side events HTA counts (CPU ops with a `stream` arg), located in our tables.
    Each keyword, set False, undoes one of HTA's rules."""
    columns = ["name", "stream", "correlation", "start_ns", "end_ns"]

    def tagged(frame: pl.DataFrame, source: str) -> pl.DataFrame:
        return frame.select(pl.lit(source).alias("source"), *columns).cast(BUSY_SCHEMA)  # type: ignore[arg-type]

    parts = [tagged(trace.gpu, "gpu")]
    if non_gpu:
        parts += [tagged(trace.sync, "sync"), extras]
    rounds = rounds and rounding
    rows = hta_times(pl.concat(parts), rounds)
    cutoff = hta_cutoff_ns(trace, rounds) if last_step else None
    if cutoff is not None:
        cpu_side = hta_times(trace.runtime.filter(pl.col("correlation").is_not_null()), rounds)
        kept = cpu_side.filter(pl.col("start_ns") < cutoff)["correlation"].unique().implode()
        gpu_work = ((pl.col("stream") >= 0) & (pl.col("correlation") >= 0)).fill_null(False) | pl.col(
            "name"
        ).is_in(HTA_GPU_SYNC_NAMES)
        rows = rows.filter(
            pl.when(gpu_work).then(pl.col("correlation").is_in(kept)).otherwise(pl.col("start_ns") < cutoff)
        )
    return rows.filter(pl.col("stream").fill_null(-1) != -1)


def locate_extras(trace: Trace, hta: HtaRun, rounds: bool) -> pl.DataFrame:
    """HTA's busy rows that are neither GPU ops nor cuda_sync events, located in our CPU-side
    tables by name and HTA-rounded start (each must be found exactly once); times from our tables."""
    wanted = hta.busy.filter(~pl.col("source").is_in(["gpu", "sync"]))
    if wanted.is_empty():
        return pl.DataFrame(schema=BUSY_SCHEMA)
    cpu_side = pl.concat([trace.cpu_ops.select("name", "start_ns", "end_ns"),
                          trace.runtime.select("name", "start_ns",
                                               "end_ns")]).with_columns(pl.col("name").cast(pl.String))
    ours = cpu_side.with_columns(hta_times(cpu_side, rounds)["start_ns"].alias("hta_start_ns"))
    found = wanted.select("source", "name", "stream", "correlation", pl.col("start_ns").alias("hta_start_ns")).join(
        ours, on=["name", "hta_start_ns"], how="left"
    )
    assert found.height == wanted.height and found["start_ns"].null_count() == 0, found
    return found.select(list(BUSY_SCHEMA)).cast(BUSY_SCHEMA)  # type: ignore[arg-type]


def our_idle(trace: Trace, busy: pl.DataFrame) -> tuple[int, int, int]:
    """`(idle_ns, window_ns, negative)` from our `idle_summary` with `busy` as the GPU work, on one
    device (HTA merges every device of a rank). `negative`: merged intervals of negative length,
    which only HTA's rounding makes (a sub-µs op inside one µs becomes [ceil, floor], −1 µs): HTA
    counts each as −1 µs of busy time, our clipping as 0, so HTA's idle is ours + 1 µs each."""
    rank = trace.ranks[0]
    gpu = busy.select(
        pl.lit(rank, pl.Int32).alias("rank"), pl.lit(0, pl.Int32).alias("device"), "stream",
        pl.lit("kernel").cast(GPU_SCHEMA["kind"]).alias("kind"), "name", "start_ns", "end_ns",
        (pl.col("end_ns") - pl.col("start_ns")).alias("duration_ns"), "correlation",
    )
    gpu = gpu.with_columns(
        pl.lit(None, dtype).alias(column) for column, dtype in GPU_SCHEMA.items() if column not in gpu.columns
    ).select(list(GPU_SCHEMA)).cast(GPU_SCHEMA)  # type: ignore[arg-type]
    summary = idle_summary(replace(trace, gpu=gpu))
    merged = union_intervals(gpu, ["rank"])
    negative = merged.filter(pl.col("end_ns") < pl.col("start_ns"))
    assert (negative["start_ns"] - negative["end_ns"] == 1000).all()
    return summary["gpu_idle_ns"].item(), summary["window_ns"].item(), negative.height


def hta_style_idle(trace: Trace, busy: pl.DataFrame) -> int:
    idle_ns, _, negative = our_idle(trace, busy)
    return idle_ns + 1000 * negative


def _rows(frame: pl.DataFrame) -> list[tuple]:
    return sorted(frame.select("source", "name", "correlation", "start_ns", "end_ns").rows(), key=repr)


# --- temporal breakdown: idle time --------------------------------------------------------------

@pytest.mark.parametrize("path", params())
def test_hta_counts_the_events_its_rules_select_from_ours(cases, path):
    """HTA's busy rows (after its rounding and last-step filter) are exactly the rows our tables
    give under HTA's rules: the same events with the same rounded times."""
    case = hta_case(cases, path)
    extras = locate_extras(case.trace, case.hta, case.rounds)
    assert _rows(hta_busy_from_ours(case.trace, extras, case.rounds)) == _rows(case.hta.busy)


@pytest.mark.parametrize("path", params())
def test_idle_time_equals_hta(cases, path):
    """Our idle computation over HTA's busy rows equals HTA's `idle_time(us)` and its window
    `kernel_time(us)` exactly, in ns."""
    case = breakdown_case(cases, path)
    extras = locate_extras(case.trace, case.hta, case.rounds)
    idle_ns, window_ns, negative = our_idle(case.trace, hta_busy_from_ours(case.trace, extras, case.rounds))
    assert window_ns == case.hta.window_ns
    assert idle_ns + 1000 * negative == case.hta.idle_ns
    assert case.rounds or negative == 0


@pytest.mark.parametrize("path", params())
def test_difference_to_our_idle_is_explained_by_hta_rules(cases, path):
    """From HTA's number to our default `idle_summary`, undoing HTA's rules one at a time:
    (1) µs rounding, (2) non-GPU events counted as busy (cuda_sync, CPU ops with a stream arg),
    (3) dropping the last ProfilerStep's and orphan GPU work. The chain starts at HTA's number and
    ends at ours, and a rule that has nothing to act on in a trace changes nothing."""
    case = breakdown_case(cases, path)
    trace, rounds = case.trace, case.rounds
    extras = locate_extras(trace, case.hta, rounds)
    default = idle_summary(trace)
    assert default.height == 1, "HTA merges a rank's devices; every trace here has one device per rank"

    def idle(**undo) -> int:
        return hta_style_idle(trace, hta_busy_from_ours(trace, extras, rounds, **undo))

    with_hta_rules = idle()
    unrounded = idle(rounding=False)
    gpu_only = idle(rounding=False, non_gpu=False)
    all_gpu = idle(rounding=False, non_gpu=False, last_step=False)
    assert with_hta_rules == case.hta.idle_ns
    assert all_gpu == default["gpu_idle_ns"].item()

    frames = (trace.gpu, trace.sync, trace.steps, trace.runtime)
    times = pl.concat([frame.select("start_ns", "end_ns") for frame in frames])
    whole_us = ((times["start_ns"] % 1000 == 0) & (times["end_ns"] % 1000 == 0)).all()
    if not rounds or whole_us:
        assert unrounded == with_hta_rules
    if trace.sync.filter(pl.col("stream") != -1).is_empty() and extras.is_empty():
        assert gpu_only == unrounded
    if hta_cutoff_ns(trace, False) is None:
        assert all_gpu == gpu_only


@pytest.mark.parametrize("name", ["hta_a100_alexnet.json.gz", "hta_a100_simple_add.json.gz"])
def test_hta_counts_cuda_sync_events_as_busy(cases, name):
    """Stream Sync, Stream Wait Event and Context Sync (stream 4294967295, uint32 −1, which is not
    HTA's −1) are waits, yet HTA counts them as GPU busy time and they widen its window."""
    case = breakdown_case(cases, shared_trace(name))
    syncs = case.hta.busy.filter(pl.col("source") == "sync")
    assert set(syncs["name"]) == {"Stream Sync", "Stream Wait Event", "Context Sync"}
    assert 4294967295 in set(syncs["stream"])
    assert case.hta.window_ns > idle_summary(case.trace)["window_ns"].item()


def test_hta_counts_a_triton_cpu_op_as_gpu_busy(cases):
    """Inductor's Triton launcher op is a `cpu_op` with `args.stream = 0`; HTA's `stream != -1`
    makes it GPU work, so its window is that CPU op's 94 µs, not the one kernel's 1.76 µs."""
    case = breakdown_case(cases, shared_trace("hta_a100_triton.json.gz"))
    extras = case.hta.busy.filter(~pl.col("source").is_in(["gpu", "sync"]))
    assert extras.select("source", "name").rows() == [("cpu_op", "triton_poi_fused_add_cos_sin_0")]
    assert (case.hta.window_ns, case.hta.idle_ns) == (94_000, 0)
    assert idle_summary(case.trace)["window_ns"].item() == 1_760


# --- launch delay -------------------------------------------------------------------------------

@pytest.mark.parametrize("path", params())
def test_launch_delay_equals_hta(cases, path):
    """HTA's per-correlation launch delay (and CPU and GPU duration) equal ours with HTA's rounding,
    over exactly the correlations HTA's rules select from ours: launched by one of
    HTA_LAUNCH_NAMES, before the last ProfilerStep when HTA drops it. The rest we keep and HTA
    does not: driver-API `cuLaunchKernel*`, HIP, `cudaGraphLaunch`, synchronous copies, the last step."""
    case = hta_case(cases, path)
    trace, rounds, hta = case.trace, case.rounds, case.hta
    assert hta.launch["correlation"].is_unique().all(), "HTA returned several rows for one correlation"

    ours = launch_latency(trace)
    launch = hta_times(
        ours.select(pl.col("launch_start_ns").alias("start_ns"), pl.col("launch_end_ns").alias("end_ns")), rounds
    )
    gpu = hta_times(ours.select("start_ns", "end_ns"), rounds)
    ours = ours.with_columns(
        launch["start_ns"].alias("hta_launch_start_ns"), launch["end_ns"].alias("hta_launch_end_ns"),
        gpu["start_ns"].alias("hta_start_ns"), gpu["end_ns"].alias("hta_end_ns"),
    )
    selected = ours.filter(pl.col("launch_name").is_in(HTA_LAUNCH_NAMES))
    cutoff = hta_cutoff_ns(trace, rounds)
    if cutoff is not None:
        selected = selected.filter(pl.col("hta_launch_start_ns") < cutoff)
    assert set(hta.launch["correlation"]) == set(selected["correlation"])

    joined = selected.join(hta.launch, on="correlation", how="inner", suffix="_hta")
    hta_delay = pl.max_horizontal(pl.col("hta_start_ns") - pl.col("hta_launch_end_ns"), pl.lit(0))
    mismatched = joined.filter(
        (pl.col("launch_delay_ns_hta") != hta_delay)
        | (pl.col("cpu_duration_ns") != pl.col("hta_launch_end_ns") - pl.col("hta_launch_start_ns"))
        | (pl.col("gpu_duration_ns") != pl.col("hta_end_ns") - pl.col("hta_start_ns"))
    )
    assert mismatched.is_empty(), mismatched.select("correlation", "launch_delay_ns", "launch_delay_ns_hta")
    # HTA rounds the GPU start up and the launch end down: its delay is ours plus [0, 2) µs
    excess = joined["launch_delay_ns_hta"] - joined["launch_delay_ns"]
    if rounds:
        assert excess.is_empty() or (excess.min() >= 0 and excess.max() < 2000)
    else:
        assert (excess == 0).all()


def test_hta_ignores_driver_and_hip_launches(cases):
    """`cuLaunchKernel` (Triton) and the HIP launch calls are not in HTA's list: it has no rows."""
    for name, launch_names in [
        ("hta_a100_triton.json.gz", {"cuLaunchKernel"}),
        ("hta_mi250_rocm.json.gz", {"hipLaunchKernel", "hipExtModuleLaunchKernel", "hipMemcpyWithStream"}),
    ]:
        case = hta_case(cases, shared_trace(name))
        assert case.hta.launch.is_empty()
        assert set(launch_latency(case.trace)["launch_name"]) == launch_names


# --- a folder of ranks --------------------------------------------------------------------------

def test_folder_of_ranks_matches_each_file(cases):
    """HTA on the 4-rank folder (rank from the first `"rank": N` in each file) finds the ranks our
    loader reads from distributedInfo, and per rank the idle time of that file alone."""
    folder = SHARED_TRACES_DIR / RANKS_FOLDER
    if not folder.is_dir():
        pytest.skip(f"real traces not found: {folder}")
    runs = run_hta(folder)
    trace = traceanalyze.load_trace(folder)
    assert sorted(runs) == trace.ranks
    for rank in trace.ranks:
        single = cases(folder / f"rank{rank}.json.gz")
        assert single.hta is not None and single.hta.rank == rank
        assert (runs[rank].idle_ns, runs[rank].window_ns) == (single.hta.idle_ns, single.hta.window_ns)
        one = trace.for_rank(rank)
        busy = hta_busy_from_ours(one, pl.DataFrame(schema=BUSY_SCHEMA), single.rounds)
        assert hta_style_idle(one, busy) == runs[rank].idle_ns


# --- HTA behaviours pinned on hand-made traces --------------------------------------------------

def _kernel(ts, dur, correlation):
    return {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": ts, "dur": dur,
            "args": {"device": 0, "stream": 7, "correlation": correlation}}


def _launch(ts, dur, correlation):
    return {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": ts,
            "dur": dur, "args": {"correlation": correlation}}


def _step(number, ts, dur):
    return {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{number}", "pid": 1, "tid": 1,
            "ts": ts, "dur": dur, "args": {}}


def _write(folder: Path, name: str, rank: int, events: list, **dump) -> Path:
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text(json.dumps({"distributedInfo": {"rank": rank}, "traceEvents": events}, **dump))
    return path


def test_hta_counts_a_sub_microsecond_op_as_minus_one_microsecond(tmp_path):
    """A 0.6 µs kernel at 10.2 µs rounds to [11, 10]: HTA reports its GPU duration as −1 µs and
    counts it as −1 µs of busy time (idle 2 µs in a 4 µs window, where the exact answer is 1.2 µs
    in 4.8 µs). `our_idle` reproduces that with the `negative` count."""
    path = _write(tmp_path / "t", "t.json", 0, [_launch(1.0, 1.0, 1), _launch(2.0, 1.0, 2),
                                                _kernel(10.2, 0.6, 1), _kernel(12.0, 3.0, 2)])
    (run,) = run_hta(path.parent).values()
    assert (run.idle_ns, run.window_ns) == (2_000, 4_000)
    assert dict(run.launch.select("correlation", "gpu_duration_ns").iter_rows()) == {1: -1_000, 2: 3_000}

    trace = traceanalyze.load_trace(path)
    assert hta_style_idle(trace, hta_busy_from_ours(trace, pl.DataFrame(schema=BUSY_SCHEMA), True)) == 2_000
    assert idle_summary(trace).select("gpu_idle_ns", "window_ns").row(0) == (1_200, 4_800)


def test_hta_counts_step_names_across_ranks(tmp_path):
    """HTA drops the last step when the *union* of all ranks' symbols holds two step names: two
    ranks with one step each, numbered differently, lose all their GPU work and the breakdown
    raises. We keep each rank's work."""
    folder = tmp_path / "ranks"
    for rank, step in ((0, 3), (1, 4)):
        _write(folder, f"rank{rank}.json", rank, [_step(step, 0, 100), _launch(1, 1, 1), _kernel(10, 5, 1)])
    runs = run_hta(folder)
    assert all(run.busy.is_empty() and run.breakdown_error and "IndexError" in run.breakdown_error
               for run in runs.values())
    assert idle_summary(traceanalyze.load_trace(folder))["gpu_ops"].to_list() == [1, 1]


def test_hta_reads_the_rank_only_from_spaced_json(tmp_path):
    """HTA finds the rank with the regex `"rank":\\s+(\\d+)`: compact JSON (`"rank":5`) falls back
    to rank 0. We read `distributedInfo.rank` as JSON."""
    path = _write(tmp_path / "t", "t.json", 5, [_launch(1, 1, 1), _kernel(10, 5, 1)], separators=(",", ":"))
    assert list(run_hta(path.parent)) == [0]
    assert traceanalyze.load_trace(path).ranks == [5]


# --- a loader bug found by these comparisons ----------------------------------------------------

def test_float_timestamps_convert_to_exact_ns(tmp_path):
    """`"ts": 4458676569036.363` is 4458676569036363 ns. float64 holds it as …036.36279296875;
    × 1000 rounds to …036363.5 and round() makes …364. Any ts in [2^42 µs, 2^52 ns) can be hit."""
    path = _write(tmp_path / "t", "t.json", 0, [_launch(4458676569036.363, 7.636, 1),
                                                _kernel(4458676569046.123, 84.254, 1)])
    trace = traceanalyze.load_trace(path)
    assert trace.runtime.select("start_ns", "end_ns").row(0) == (4458676569036363, 4458676569043999)


@pytest.mark.parametrize("name", HTA_BREAKDOWN_ASSERTS)
def test_hta_breakdown_fails_where_ours_does_not(cases, name):
    """HTA's temporal breakdown raises on these real GPU traces (its own assertion); ours gives
    the idle time, and its gaps add up to it."""
    path = RECORDED_DIR / name
    case = hta_case(cases, path)
    assert case.hta.breakdown_error is not None and "AssertionError" in case.hta.breakdown_error
    summary = idle_summary(case.trace).row(0, named=True)
    assert summary["gpu_busy_ns"] > 0 and summary["gpu_idle_ns"] > 0
    assert idle.idle_gaps(case.trace)["duration_ns"].sum() == summary["gpu_idle_ns"]

