"""The notebook API returns the same tables the report shows."""

from __future__ import annotations

from pathlib import Path

import polars as pl

import traceanalyze
from traceanalyze.analysis import idle

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "synthetic_training.json.gz"


def test_analyze_returns_the_report_tables():
    report = traceanalyze.analyze(FIXTURE)
    rank = report.ranks[0]
    trace = traceanalyze.load_trace(FIXTURE)
    assert rank.idle.equals(idle.idle_summary(trace))
    assert isinstance(rank.roofline, pl.DataFrame) and rank.roofline.height == trace.gpu.height
    total = rank.attribution.select(pl.sum_horizontal("overhead", "bandwidth", "compute", "communication", "memcpy",
                                                      "unmodeled")).item()
    assert abs(total - 1.0) < 1e-12


def test_analyze_accepts_a_loaded_trace_and_overrides():
    trace = traceanalyze.load_trace(FIXTURE)
    report = traceanalyze.analyze(trace, peak_flops=1e12, peak_bandwidth=1e11)
    assert report.ranks[0].peaks[0].source.startswith("command line")
    assert report.ranks[0].roofline.filter(pl.col("regime") == "compute").height > 0


# JSON fields that are not the column of the same name in the matching table, and what they are
# (the JSON gives times from the start of their window, and trace times as `…_ts_us`)
NOT_COLUMNS = {
    "kernels": {"math_unit": "tensor_core as text", "pct_of_peak": "pct_of_roof under its schema-1.0 name"},
    "devices": {"name": "joined from ranks[i].devices"},
    "steps": {"attribution": "ranks[i].step_attribution"},
    "idle_gaps": {"start_us": "start_ns − the device window's start", "trace_ts_us": "start_ns"},
    "collectives": {"first_arrival_ts_us": "first_arrival_ns", "last_arrival_us": "last_arrival_ns − first_arrival_ns",
                    "per_rank": "job.matched"},
}


def _json_names(struct) -> set[str]:
    import msgspec

    return {field.encode_name for field in msgspec.structs.fields(struct)}


def _as_column(name: str) -> str:
    return name[: -len("_us")] + "_ns" if name.endswith("_us") else name


def test_the_tables_use_the_json_reports_names(tmp_path):
    """Every table the API returns that the JSON report lists calls each of its numbers by the
    JSON's name (times in ns where the JSON has µs: `total_ns` ↔ `total_us`)."""
    import multirank

    from traceanalyze.report import schema

    job = traceanalyze.analyze(multirank.write_job(tmp_path / "job"))
    rank = job.ranks[0]
    tables = {  # JSON list → (its struct, the API's table)
        "kernels": (schema.Kernel, rank.kernels), "ops": (schema.Op, rank.ops),
        "devices": (schema.Device, rank.idle), "streams": (schema.Stream, rank.streams),
        "steps": (schema.Step, rank.steps), "cpu_steps": (schema.CpuStep, rank.cpu_steps),
        "idle_gaps": (schema.Gap, rank.gaps),
        "launch_latency_by_kernel": (schema.KernelLatency, rank.latency_by_kernel),
        "fusion_opportunities": (schema.Fusion, rank.fusion), "queue": (schema.Queue, rank.queue),
        "health": (schema.Health, rank.health), "findings": (schema.Finding, rank.findings),
        "small_kernels.runs": (schema.SmallKernelRun, rank.small_kernel_runs),
        "collectives": (schema.Collective, job.job.collectives),
        "stragglers.steps": (schema.StragglerStep, job.job.stragglers),
        "stragglers.waits_caused": (schema.WaitCaused, job.job.waits_caused),
        "stragglers.rank_steps": (schema.RankStep, job.job.steps), "overlap": (schema.Overlap, job.job.overlap),
        "clock_offsets": (schema.ClockOffset, job.job.clock_offsets),
    }
    exempt = {**NOT_COLUMNS, "ops": NOT_COLUMNS["kernels"]}
    missing = {listed: sorted(name for name in _json_names(struct) - set(exempt.get(listed, ()))
                              if _as_column(name) not in table.columns)
               for listed, (struct, table) in tables.items()}
    assert {listed: names for listed, names in missing.items() if names} == {}
    assert all(set(names) <= _json_names(tables[listed][0]) for listed, names in exempt.items())  # none stale
    # the names that differed before (issue 14): the roofline tables now read as the JSON does
    assert {"bound", "op", "pct_of_roof", "ridge_flops_per_byte", "tf32_roof_fraction"} <= set(rank.kernels.columns)
    assert {"gpu_busy_ns", "gpu_idle_ns"} <= set(rank.steps.columns) & set(rank.idle.columns)


def test_the_api_defaults_are_the_report_commands():
    """`analyze(...)` and `traceanalyze report` have one set of defaults (issue 14 point 5): every
    option of the command that `analyze` also takes defaults to the same value (`--no-cache` is
    `cache=True`; the loader limits are `LoadLimits()`)."""
    import dataclasses
    import inspect

    import typer

    from traceanalyze.api import analyze
    from traceanalyze.cli import app
    from traceanalyze.load.limits import MIB, LoadLimits

    command = typer.main.get_command(app).commands["report"]  # type: ignore[attr-defined]
    cli = {param.name: param.default for param in command.params}
    api = {name: param.default for name, param in inspect.signature(analyze).parameters.items()
           if param.default is not inspect.Parameter.empty and name != "run"}
    run = inspect.signature(analyze).parameters["run"].default  # how to run: RunOptions' defaults
    api |= {field.name: getattr(run, field.name) for field in dataclasses.fields(run)}
    shared = sorted(set(cli) & set(api))
    assert {"window", "skip_steps", "max_gaps", "peak_flops", "peak_bandwidth", "device_file", "force_device_file",
            "executor", "workers", "executor_address"} <= set(shared)
    assert {name: cli[name] for name in shared} == {name: api[name] for name in shared}
    assert cli["no_cache"] is False and api["cache"] is True
    limits = LoadLimits(event_bytes=cli["max_event_mb"] * MIB, events=cli["max_events"], inflation=cli["max_inflation"])
    assert limits == api["limits"]
