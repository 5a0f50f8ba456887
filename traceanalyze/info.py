"""`traceanalyze info`: one screen about what a trace holds."""

from __future__ import annotations

import polars as pl

from traceanalyze.analysis.device_match import matched_devices
from traceanalyze.analysis.health import trace_health
from traceanalyze.model import DEVICE_FAMILIES, Trace
from traceanalyze.report.notes import missing_ranks_note
from traceanalyze.units import format_duration_ns, plural
from traceanalyze.renderers.text_table import fit_lines, terminal_width, text_table


def trace_span_ns(trace: Trace) -> tuple[int | None, int | None]:
    """First start and last end over GPU ops, runtime calls and CPU ops."""
    starts = [f["start_ns"].min() for f in (trace.gpu, trace.runtime, trace.cpu_ops) if f.height]
    ends = [f["end_ns"].max() for f in (trace.gpu, trace.runtime, trace.cpu_ops) if f.height]
    return (min(starts), max(ends)) if starts else (None, None)


def used_devices(trace: Trace) -> pl.DataFrame:
    """Devices with GPU work, named from deviceProperties where the trace has them."""
    active = trace.gpu.group_by("rank", "device").agg(
        pl.len().alias("gpu_ops"), pl.col("stream").n_unique().alias("streams")
    )
    described = matched_devices(trace).select("rank", "device", "name", "num_sms", "total_memory_bytes")
    return active.join(described, on=["rank", "device"], how="left").sort("rank", "device")


def render_info(trace: Trace, *, width: int | None = None) -> str:
    """One screen about `trace`, each line at most `width` columns (default: `terminal_width`).

    Long: the screen's lines in the order they print, one block per line of output."""
    width = width or terminal_width()
    lines: list[str] = []
    missing = missing_ranks_note(trace.ranks, [m.world_size for m in trace.meta])
    if missing:
        lines.extend([f"note: {missing}", ""])
    for single in trace.split_by_rank():
        meta = single.meta[0]
        # "of N" only with the rank from the same distributedInfo: a rank numbered by file order is
        # no rank of that world
        world = f" of {meta.world_size}" if meta.world_size and meta.rank_source == "distributedInfo" else ""
        lines.append(f"{meta.source}")
        origin = "no rank recorded" if meta.rank_source == "default" else f"from {meta.rank_source}"
        lines.append(f"  rank {meta.rank}{world} ({origin})"
                     + (f", backend {meta.backend}" if meta.backend else "")
                     + f", schema version {meta.schema_version if meta.schema_version is not None else 'not recorded'}")
        lines.append(f"  device family: {DEVICE_FAMILIES.get(meta.device_family, meta.device_family)}")
        versions = [f"{label} {value}" for label, value in (("CUDA runtime", meta.cuda_runtime_version),
                    ("CUDA driver", meta.cuda_driver_version), ("HIP runtime", meta.hip_runtime_version),
                    ("CUPTI", meta.cupti_version)) if value is not None]
        if versions:
            lines.append("  " + ", ".join(versions))
        start, end = trace_span_ns(single)
        if start is not None:
            lines.append(f"  time span: {format_duration_ns(end - start)}")
        devices = used_devices(single)
        if devices.height:
            per_stream = (single.gpu.group_by("device", "stream").len()
                          .sort(["device", "len", "stream"], descending=[False, True, False]))
            for row in devices.iter_rows(named=True):
                name = row["name"] or "unnamed device"
                streams = per_stream.filter(pl.col("device") == row["device"])
                listed = ", ".join(f"{stream} ({count})" for _, stream, count in streams.head(8).iter_rows())
                more = f", … {streams.height - 8} more" if streams.height > 8 else ""
                ops, streams = plural(row['gpu_ops'], 'GPU op'), plural(row['streams'], 'stream')
                lines.append(f"  device {row['device']}: {name} — {ops} on {streams}: {listed}{more}")
        elif single.devices.height:
            names = ", ".join(sorted(set(single.devices["name"].drop_nulls())))
            lines.append(f"  devices listed: {names} (no GPU work recorded)")
        else:
            lines.append("  no GPU devices")
        counts = [
            ("kernels", single.gpu.filter(pl.col("kind") == "kernel").height),
            ("communication kernels", single.gpu.filter(pl.col("kind") == "communication").height),
            ("memcpy", single.gpu.filter(pl.col("kind") == "memcpy").height),
            ("memset", single.gpu.filter(pl.col("kind") == "memset").height),
            ("runtime calls", single.runtime.height),
            ("  of which kernel launches", single.runtime.filter(pl.col("kind") == "launch").height),
            ("  of which graph launches", single.runtime.filter(pl.col("kind") == "graph_launch").height),
            ("  of which synchronisations", single.runtime.filter(pl.col("kind") == "sync").height),
            ("CPU ops", single.cpu_ops.filter(pl.col("category") == "cpu_op").height),
            ("annotations", single.cpu_ops.filter(pl.col("category") == "user_annotation").height),
            ("flow events", sum(m.flow_events for m in single.meta)),
            ("GPU sync markers", single.sync.height),
        ]
        lines.append(text_table(counts, ["events", "count"], align=("left", "right"), indent="", width=width))
        steps = single.steps
        if steps.height:
            durations = steps["duration_ns"]
            first, last = steps["step"].min(), steps["step"].max()
            span = f"ProfilerStep#{first}" if first == last else f"ProfilerStep#{first}–#{last}"
            lines.append(f"  steps: {steps.height} ({span}), median {format_duration_ns(int(durations.median()))}")
        else:
            lines.append("  steps: none (no ProfilerStep#N spans)")
        health = trace_health(single)
        if health.height:
            lines.append("  health:")
            lines.append(text_table([(r["finding"], r["count"], r["affects"]) for r in health.iter_rows(named=True)],
                                    ["finding", "count", "makes unreliable"], align=("left", "right", "left"),
                                    indent="", width=width))
        else:
            lines.append("  health: no findings")
        lines.append("")
    return "\n".join(fit_lines(lines, width)).rstrip() + "\n"
