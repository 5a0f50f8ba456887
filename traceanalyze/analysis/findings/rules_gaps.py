"""Rules over idle gaps (the overhead regime): DataLoader waits, syncs, launch-bound runs, a late
CPU, and the warm-up time left out of every gain. Each reads the gaps `gap_buckets` assigned it."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from traceanalyze.analysis.findings.finding import Finding, Remedy, spans_of
from traceanalyze.analysis.findings.remedies import op_keys
from traceanalyze.analysis.findings.inputs import FindingInputs, format_ns, short_kernel_name
from traceanalyze.analysis.findings.run_context import compiled_names, run_context

# queued-kernel gaps under this share of the device windows stay silent: a GPU starts each queued
# kernel a microsecond or two after the previous one, in every trace
QUEUED_MIN_SHARE = 0.01
# a queued kernel that starts this late after the GPU fell idle waited on something, not on the launch path
QUEUED_LONG_NS = 1_000_000

# What a synchronising op is in Python, for the sync finding's evidence.
SYNC_SOURCES = {
    "aten::_local_scalar_dense": "`.item()` / `float(t)` / `bool(t)` / `if t:`",
    "aten::item": "`.item()`",
    "aten::nonzero": "`torch.nonzero` / boolean-mask indexing (the output size depends on the data)",
    "aten::masked_select": "boolean-mask indexing (the output size depends on the data)",
    "aten::unique": "`torch.unique` (the output size depends on the data)",
    "aten::_unique2": "`torch.unique` (the output size depends on the data)",
    "aten::to": "`.cpu()` / `.to('cpu')` / `.numpy()` (a blocking copy)",
    "aten::_to_copy": "`.cpu()` / `.to('cpu')` / `.numpy()` (a blocking copy)",
    "aten::copy_": "a blocking copy (`.copy_()` to or from the host)",
}


def _steps(gaps: pl.DataFrame) -> str:
    steps = gaps["step"].drop_nulls().unique().sort()
    if steps.is_empty():
        return ""
    if steps.len() == 1:
        return f" in step {steps[0]}"
    return f" in {steps.len()} steps ({steps[0]}–{steps[-1]})"


# the columns of a bucket's gaps the rules read: only these are copied by the filter that takes a
# bucket (most of 400 k gaps can be one bucket's); a rule that reads another fails its tests until
# it is named here
GAP_READ = ("start_ns", "end_ns", "duration_ns", "step", "cpu_op", "annotation", "sync_call", "next_gpu_op",
            "next_launch_start_ns", "in_outlier_step", "cpu_tid", "device")


def _cpu_spans(gaps: pl.DataFrame) -> tuple[tuple[int, int, int], ...]:
    """`(tid, start_ns, end_ns)` of each gap whose thread is known: the CPU time in it up to the
    launch of the work that ended it (that launch call stays: the work still has to be launched)."""
    if "cpu_tid" not in gaps.columns:
        return ()
    launch = pl.col("next_launch_start_ns") if "next_launch_start_ns" in gaps.columns else pl.lit(None, pl.Int64)
    end = pl.when(launch.is_not_null() & (launch > pl.col("start_ns")) & (launch < pl.col("end_ns")))
    known = gaps.filter(pl.col("cpu_tid").is_not_null()).select(
        "cpu_tid", "start_ns", end.then(launch).otherwise(pl.col("end_ns")).alias("end_ns"))
    return tuple((int(t), int(s), int(e)) for t, s, e in known.iter_rows())


@dataclass(frozen=True)
class GapBuckets:
    """A rank's idle gaps split by bucket (one pass, not a filter per rule), the columns the rules
    read (`GAP_READ`)."""

    parts: dict[str, pl.DataFrame]
    empty: pl.DataFrame

    def of(self, bucket: str) -> pl.DataFrame:
        """The gaps of `bucket`, in start order (the split keeps the order of the gaps: longest first)."""
        part = self.parts.get(bucket)
        return self.empty if part is None else part.sort("start_ns", maintain_order=True)


def split_buckets(bucketed: pl.DataFrame) -> GapBuckets:
    """`bucketed_gaps` → its `GapBuckets`."""
    read = [name for name in (*GAP_READ, "bucket") if name in bucketed.columns]
    narrow = bucketed.select(read)
    parts = narrow.partition_by("bucket", maintain_order=True, include_key=False, as_dict=True)
    return GapBuckets({key[0]: part for key, part in parts.items()}, narrow.clear().drop("bucket"))


def dataloader(inputs: FindingInputs, buckets: GapBuckets) -> list[Finding]:
    """GPU idle while the step waited for its next batch."""
    gaps = buckets.of("dataloader")
    if gaps.is_empty():
        return []
    total = int(gaps["duration_ns"].sum())
    context = gaps.sort("duration_ns", descending=True).row(0, named=True)
    annotation = context["annotation"]
    where = annotation if annotation and "ataLoader" in annotation else context["cpu_op"]
    return [Finding(
        id="dataloader-wait", regime="overhead", title=f"{run_context(inputs).device} waits for the DataLoader",
        evidence=f"{gaps.height} idle gap{'s' if gaps.height != 1 else ''}, {format_ns(total)}{_steps(gaps)}, "
                 f"inside `{where}`",
        action="load batches ahead: `DataLoader(..., num_workers=N, pin_memory=True, persistent_workers=True, "
               "prefetch_factor=2)`; move CPU-heavy transforms to the workers or the GPU",
        gain_ns=float(total), confidence="high", spans=spans_of(gaps),
        remedies=(Remedy(kind="remove_cpu", cpu_spans=_cpu_spans(gaps),
                         assumption="workers load the next batch while the step runs: the main thread no longer "
                                    "waits for it"),))]


def sync(inputs: FindingInputs, buckets: GapBuckets) -> list[Finding]:
    """GPU idle while the CPU sat in a blocking call: name the op and its context."""
    gaps = buckets.of("sync")
    if gaps.is_empty():
        return []
    total = int(gaps["duration_ns"].sum())
    by_site = (
        gaps.group_by(["cpu_op", "sync_call", "annotation"])
        .agg(pl.len().alias("gaps"), pl.col("duration_ns").sum().alias("total_ns"))
        .sort(["total_ns", "cpu_op"], descending=[True, False], nulls_last=True)
    )
    top = by_site.row(0, named=True)
    op = top["cpu_op"] or "(no op)"
    source = SYNC_SOURCES.get(top["cpu_op"] or "", "")
    site = f"`{top['sync_call'] or 'a blocking call'}` in `{op}`" + (f" = {source}" if source else "")
    site += f" under `{top['annotation']}`" if top["annotation"] else ""
    others = f" (+{by_site.height - 1} other site{'s' if by_site.height > 2 else ''})" if by_site.height > 1 else ""
    context = run_context(inputs)
    action = "remove the sync from the step: keep the value on the device, or read it every N steps / after the step"
    if context.cuda_api:
        action += "; find every sync with `torch.cuda.set_sync_debug_mode(\"warn\")`"
    return [Finding(
        id="sync-in-step", regime="overhead", title=f"The CPU waits for the {context.device} inside the step (sync)",
        evidence=f"{gaps.height} sync gap{'s' if gaps.height != 1 else ''}, {format_ns(total)}{_steps(gaps)}; "
                 f"{top['gaps']}× {site}, {format_ns(top['total_ns'])}{others}",
        action=action,
        gain_ns=float(total), confidence="high", spans=spans_of(gaps),
        remedies=(Remedy(kind="remove_cpu", cpu_spans=_cpu_spans(gaps),
                         assumption="the value stays on the device: the thread no longer blocks while the queue "
                                    "drains"),))]


def launch_bound(inputs: FindingInputs, buckets: GapBuckets) -> list[Finding]:
    """Runs of kernels shorter than their launch calls: the GPU drains faster than the CPU fills it."""
    gaps = buckets.of("launch_run")
    runs = inputs.small_kernel_runs
    if gaps.is_empty() or runs.is_empty():
        return []
    total = int(gaps["duration_ns"].sum())
    kernels = int(runs["kernels"].sum())
    top = runs.sort("kernels", descending=True).row(0, named=True)
    context = run_context(inputs)
    compiled = compiled_names(runs["first_kernel"])
    if not context.cuda_api:
        action = ("fewer, larger kernels: batch the small ops, or fuse them (`torch.compile(model)` where the "
                  f"{context.family} backend supports it); launch from a thread that does nothing else")
    elif compiled:
        action = ("these are Inductor's kernels (the model is compiled): compile with `mode=\"reduce-overhead\"` "
                  "to replay them as CUDA graphs, or `torch.cuda.graphs.make_graphed_callables` / "
                  "`torch.cuda.CUDAGraph`")
    else:
        action = ("capture the step in a CUDA graph: `torch.compile(model, mode=\"reduce-overhead\")`, or "
                  "`torch.cuda.graphs.make_graphed_callables` / `torch.cuda.CUDAGraph`; fewer, larger kernels "
                  "(`torch.compile` fusion) also help")
    return [Finding(
        id="launch-bound", regime="overhead", title="Kernels finish faster than the CPU launches them",
        evidence=f"{runs.height} run{'s' if runs.height != 1 else ''} of {kernels} kernels shorter than their "
                 f"launch calls, {format_ns(total)} idle between them{_steps(gaps)}; longest run: {top['kernels']} "
                 f"kernels from `{short_kernel_name(top['first_kernel'])}`",
        action=action, gain_ns=float(total), confidence="high", spans=spans_of(gaps),
        remedies=_graph_remedies(inputs, runs))]


def _graph_remedies(inputs: FindingInputs, runs: pl.DataFrame) -> tuple[Remedy, ...]:
    """One `graph` remedy per run of launch-bound kernels: its kernels (the roofline's, on its
    stream, from its first start to its last end) launched as one graph. One as-of join of the
    kernels onto the runs (by device and stream), not a filter per run (thousands of runs)."""
    if not {"device", "stream", "kind"} <= set(inputs.roofline.columns) or runs.is_empty():
        return ()
    spans = (runs.select(pl.int_range(pl.len(), dtype=pl.Int64).alias("_run"), "device", "stream",
                         "first_start_ns", "last_end_ns").sort("first_start_ns"))
    kernels = (inputs.roofline.filter(pl.col("kind") == "kernel").select("device", "stream", "start_ns", "end_ns")
               .sort("start_ns")
               .join_asof(spans, left_on="start_ns", right_on="first_start_ns", by=["device", "stream"],
                          strategy="backward", check_sortedness=False)
               .filter(pl.col("_run").is_not_null() & (pl.col("end_ns") <= pl.col("last_end_ns"))))
    remedies = []
    for _, rows in kernels.group_by("_run", maintain_order=True):
        remedies.append(Remedy(kind="graph", gpu_ops=op_keys(rows.sort("start_ns")),
                               assumption="one graph launch replays the run's kernels back to back"))
    return tuple(remedies)


def host_bound(inputs: FindingInputs, buckets: GapBuckets) -> list[Finding]:
    """The GPU idle because the next launch came late (CPU work between kernels)."""
    gaps = buckets.of("host")
    if gaps.is_empty():
        return []
    total = int(gaps["duration_ns"].sum())
    top = gaps.row(gaps["duration_ns"].arg_max(), named=True)  # the longest (the earliest of equals)
    where = " / ".join(f"`{part}`" for part in (top["annotation"], top["cpu_op"]) if part) or "no recorded op"
    context = run_context(inputs)
    if _replays_graphs(inputs):
        capture = ("bring it into the CUDA graphs the step already replays (these gaps lie outside them: e.g. "
                   "compile the optimizer step too) or make it cheaper")
    elif not context.cuda_api:
        capture = "make it cheaper (fewer, larger ops)"
    elif compiled_names(gaps["next_gpu_op"]):
        capture = ("replay the compiled step as CUDA graphs: compile with `mode=\"reduce-overhead\"` (the kernels are "
                   "Inductor's already)")
    else:
        capture = "capture the step with `torch.compile(model, mode=\"reduce-overhead\")` / CUDA graphs"
    return [Finding(
        id="cpu-bound-gaps", regime="overhead",
        title=f"The {context.device} waits for the CPU to launch the next kernel",
        evidence=f"{gaps.height} gap{'s' if gaps.height != 1 else ''} where the next launch came late, "
                 f"{format_ns(total)}{_steps(gaps)}; longest {format_ns(top['duration_ns'])} in {where} before "
                 f"`{short_kernel_name(top['next_gpu_op'] or 'the end')}`; the CPU work is not named (the replay "
                 "moves it off the step: the upper bound)",
        action="find the CPU work in the gap (record with `with_stack=True`): move it off the step, or " + capture,
        gain_ns=float(total), confidence="medium", spans=spans_of(gaps), remedies=_late_launch_remedies(gaps))]


def _late_launch_remedies(gaps: pl.DataFrame) -> tuple[Remedy, ...]:
    """The CPU time on the launching thread from each gap's start to its late launch's start, taken
    out of the thread (what moving that CPU work off the step could give at most)."""
    if not {"cpu_tid", "next_launch_start_ns"} <= set(gaps.columns):
        return ()
    late = gaps.filter(pl.col("cpu_tid").is_not_null() & pl.col("next_launch_start_ns").is_not_null()
                       & (pl.col("next_launch_start_ns") > pl.col("start_ns")))
    spans = tuple((int(t), int(s), int(e))
                  for t, s, e in late.select("cpu_tid", "start_ns", "next_launch_start_ns").iter_rows())
    if not spans:
        return ()
    return (Remedy(kind="remove_cpu", cpu_spans=spans,
                   assumption="the CPU work on the launching thread from the gap's start to the late launch moves off "
                              "the step (to a worker, into a CUDA graph, or gone): the upper bound of doing so"),)


def _replays_graphs(inputs: FindingInputs) -> bool:
    """Whether the trace launches CUDA graphs (health `cuda_graph_launches`): no advice to start."""
    if not inputs.health.height:
        return False
    return bool(inputs.health.filter(pl.col("finding") == "cuda_graph_launches")["count"].sum())


def queued(inputs: FindingInputs, buckets: GapBuckets) -> list[Finding]:
    """The GPU idle before work that was already launched: launch latency on the GPU side, or, for
    gaps of milliseconds, a wait on something the trace does not show."""
    gaps = buckets.of("queued")
    window = int(inputs.attribution["window_ns"].sum()) if inputs.attribution.height else 0
    total = int(gaps["duration_ns"].sum())
    if gaps.is_empty() or total < QUEUED_MIN_SHARE * window:
        return []
    top = gaps.row(gaps["duration_ns"].arg_max(), named=True)
    long = gaps.filter(pl.col("duration_ns") >= QUEUED_LONG_NS)
    evidence = (f"{gaps.height} gap{'s' if gaps.height != 1 else ''} before work launched ahead of time, "
                f"{format_ns(total)} = {total / window:.1%} of the window{_steps(gaps)}; median "
                f"{format_ns(float(gaps['duration_ns'].median()))}, longest {format_ns(top['duration_ns'])} before "
                f"`{short_kernel_name(top['next_gpu_op'] or 'the end')}`, launched "
                f"{format_ns(top['end_ns'] - top['next_launch_start_ns'])} before it started; what delays it is not "
                "known (the replay starts it as soon as its stream and launch allow: the upper bound)")
    context = run_context(inputs)
    compiled = compiled_names(gaps["next_gpu_op"])
    if compiled:
        action = "fewer, larger kernels: the kernels are Inductor's already; look for graph breaks between them"
    else:
        action = "fewer, larger kernels: fuse them with `torch.compile(model)`"
    if not _replays_graphs(inputs) and context.cuda_api:
        graph = ("compile with `mode=\"reduce-overhead\"`" if compiled
                 else "`torch.compile(model, mode=\"reduce-overhead\")`")
        action += f"; a CUDA graph ({graph}) starts queued kernels sooner"
    if long.height:
        evidence += f"; {long.height} of them over {format_ns(QUEUED_LONG_NS)} ({format_ns(long['duration_ns'].sum())})"
        action += ("; work queued in time that starts milliseconds late waited on something the trace does not show "
                   "(an event of another stream, device or process, a host node of a CUDA graph): find what it "
                   "depends on")
    return [Finding(
        id="queued-kernel-gaps", regime="overhead",
        title=f"Queued work starts late: the {context.device} idles before it",
        evidence=evidence, action=action, gain_ns=float(total), confidence="low", spans=spans_of(gaps),
        remedies=_unqueue_remedies(inputs, gaps))]


def _unqueue_remedies(inputs: FindingInputs, gaps: pl.DataFrame) -> tuple[Remedy, ...]:
    """The GPU op each gap preceded (the roofline's op that starts where the gap ends, on its
    device), started as soon as its stream and launch allow."""
    ops = inputs.roofline
    if not {"device", "stream", "start_ns"} <= set(ops.columns) or "device" not in gaps.columns:
        return ()
    device = pl.col("device").cast(pl.Int64)
    after = (gaps.select(device, pl.col("end_ns").alias("start_ns"))
             .join(ops.select(device, "stream", "start_ns").unique(["device", "start_ns"], keep="first"),
                   on=["device", "start_ns"], how="inner").sort("start_ns"))
    if after.is_empty():
        return ()
    return (Remedy(kind="unqueue", gpu_ops=op_keys(after),
                   assumption="what held the queued work is gone: it starts as soon as its stream and its launch "
                              "(the rank's typical latency after it) allow"),)


def warmup(inputs: FindingInputs, buckets: GapBuckets) -> list[Finding]:
    """Warm-up, autotune and an outlying first step: left out of every gain, with a note."""
    gaps = buckets.of("excluded")
    if gaps.is_empty():
        return []
    total = int(gaps["duration_ns"].sum())
    outlier_steps = gaps.filter(pl.col("in_outlier_step"))["step"].unique().sort().to_list()
    parts = []
    if outlier_steps:
        parts.append(f"first step {outlier_steps[0]} is an outlier")
    named = gaps.filter(~pl.col("in_outlier_step"))
    if named.height:
        top = named.sort("duration_ns", descending=True).row(0, named=True)
        parts.append(f"`{top['annotation'] or top['cpu_op']}` ({format_ns(top['duration_ns'])} longest)")
    return [Finding(
        id="warmup-excluded", regime="trace", title="Warm-up time left out of the gains",
        evidence=f"{gaps.height} idle gap{'s' if gaps.height != 1 else ''}, {format_ns(total)} in warm-up/autotune: "
                 + "; ".join(parts),
        action="; ".join(filter(None, (_leave_out_warmup(inputs, gaps), RECORD_STEADY_STATE))),
        gain_ns=None, confidence="high", spans=spans_of(gaps))]


RECORD_STEADY_STATE = ("profile steady-state steps only: `torch.profiler.schedule(wait=1, warmup=1, active=3)` "
                       "(what `traceanalyze capture` records)")


def _leave_out_warmup(inputs: FindingInputs, gaps: pl.DataFrame) -> str | None:
    """How to leave the warm-up gaps out of the whole report: `--skip-steps N` with N the steps up to
    the last one holding such a gap (counting those already skipped), `--window steps` when they all
    lie before the first ProfilerStep; None when neither removes them (no steps, or the last step
    holds one)."""
    steps = inputs.cpu_steps.sort("start_ns", "step") if inputs.cpu_steps is not None else None
    if steps is None or steps.is_empty():
        return None
    order = {step: index for index, step in enumerate(steps["step"].to_list())}
    held = [order[step] for step in gaps["step"].drop_nulls().unique().to_list() if step in order]
    if held:
        count = max(held) + 1
        if count >= steps.height:
            return None  # skipping the steps that hold it would leave none
        named = steps["step"][count - 1]
        return (f"leave it out of the whole report: `--skip-steps {inputs.skipped_steps + count}` "
                f"(through ProfilerStep#{named})")
    if (gaps["start_ns"] < steps["start_ns"][0]).any():
        return "leave it out of the whole report: `--window steps` (it ran before the first ProfilerStep)"
    return None
