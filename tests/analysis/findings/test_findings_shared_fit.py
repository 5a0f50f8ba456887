"""On every shared trace: the findings' gains can all be true (Σ kernel-finding gains ≤ GPU busy,
each gain ≤ the window), FP32 advice only for FP32 work, no advice to compile Inductor's own
kernels, no `torch.cuda` API for an MTIA trace, and every remedy names GPU ops of the trace."""

from __future__ import annotations

import polars as pl
import pytest

from shared_traces import real_trace_params

import traceanalyze
from traceanalyze.analysis.findings import table
from traceanalyze.analysis.findings.kernel_claims import KERNEL_REGIMES
from traceanalyze.pipeline.rank import build_report


def analysed(path, monkeypatch):
    """The report of `path` and every rank's `Finding`s as the rules returned them (with remedies)."""
    seen: dict[int, list] = {}
    original = table.findings_frame

    def keep(rank, found):
        seen.setdefault(rank, []).extend(found)
        return original(rank, found)

    monkeypatch.setattr(table, "findings_frame", keep)
    trace = traceanalyze.load_trace(path)
    return trace, build_report(trace), seen


@pytest.mark.parametrize("path", real_trace_params())
def test_findings_fit_the_run(path, monkeypatch):
    trace, report, seen = analysed(path, monkeypatch)
    for rank in report.ranks:
        window = int(rank.attribution["window_ns"].sum()) if rank.attribution.height else 0
        busy = int(rank.attribution["busy_ns"].sum()) if rank.attribution.height else 0
        found = rank.findings
        gains = found["gain_ns"].drop_nulls()
        assert all(g <= window for g in gains.to_list()), (path.name, found.select("id", "gain_ns").to_dicts())
        kernel = found.filter(pl.col("regime").cast(pl.String).is_in(KERNEL_REGIMES))["gain_ns"].drop_nulls()
        assert kernel.sum() <= busy + 1, (path.name, kernel.sum(), busy)
        family = rank.device_family
        for row in found.iter_rows(named=True):
            spans = {(s["start_ns"], s["end_ns"]) for s in row["spans"]}
            ops = rank.roofline.filter(pl.struct("start_ns", "end_ns").is_in(
                [{"start_ns": s, "end_ns": e} for s, e in spans])) if spans else rank.roofline.clear()
            if row["id"] == "fp32-simt-gemm":
                assert set(ops["compute_dtype"].drop_nulls().to_list()) <= {"fp32"}, path.name
            kernels = ops.filter(pl.col("kind") == "kernel")["name"].cast(pl.String)
            if ops.height and kernels.str.starts_with("triton_").all():
                assert "torch.compile(model)" not in row["action"], (path.name, row["id"])
            if family == "MTIA":
                assert "torch.cuda" not in row["action"], (path.name, row["id"])
    ops = set(trace.gpu.select("device", "stream", "start_ns").iter_rows())
    for found in seen.values():
        for finding in found:
            for remedy in finding.remedies:
                assert set(remedy.gpu_ops) <= ops, (path.name, finding.id, remedy.kind)
                assert remedy.kind != "retime" or len(remedy.durations_ns) == len(remedy.gpu_ops)
                assert all(d >= 0 for d in remedy.durations_ns) and remedy.assumption
