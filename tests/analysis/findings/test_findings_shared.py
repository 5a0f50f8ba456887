"""On every shared trace: no finding advises a number format the device lacks. What the device has
is read here from the trace itself (its deviceProperties name and compute capability), not from
the peak table the rules use: TF32 and BF16 tensor cores from Ampere (8.0) on, FP8 from Ada (8.9)
and Hopper (9.0) on; AMD: BF16 on MI200, TF32, BF16 and FP8 on MI300; an unknown device: none."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import polars as pl
import pytest

from shared_traces import real_trace_params

import traceanalyze
from traceanalyze.model import LAUNCH_KINDS
from traceanalyze.pipeline.rank import build_report


@functools.lru_cache(maxsize=2)
def report_of(path: Path):
    return build_report(traceanalyze.load_trace(path))

WORDS = {"tf32": ("tf32",), "bf16": ("bf16", "bfloat16"), "fp8": ("fp8", "float8")}


def formats_of(name: str | None, major: int | None, minor: int | None) -> set[str]:
    """The tensor-core formats of a device, from its name and compute capability."""
    text = (name or "").lower()
    if "mi3" in text:
        return {"tf32", "bf16", "fp8"}
    if "amd" in text or "instinct" in text or "mi2" in text:
        return {"bf16"} if "mi2" in text else set()
    if major is None or not any(word in text for word in ("nvidia", "tesla", "geforce", "quadro")):
        return set()
    capability = (major, minor or 0)
    return ({"tf32", "bf16"} if capability >= (8, 0) else set()) | ({"fp8"} if capability >= (8, 9) else set())


def test_formats_of_known_devices():
    assert formats_of("Tesla V100-SXM2-32GB", 7, 0) == set()
    assert formats_of("NVIDIA A100-SXM4-80GB", 8, 0) == {"tf32", "bf16"}
    assert formats_of("NVIDIA H100 80GB HBM3", 9, 0) == {"tf32", "bf16", "fp8"}
    assert formats_of("AMD Instinct MI250X", 9, 0) == {"bf16"}
    assert formats_of(None, None, None) == set()


@pytest.mark.parametrize("path", real_trace_params())
def test_no_finding_contradicts_the_device(path):
    report = report_of(path)
    for rank in report.ranks:
        devices = rank.devices.filter(rank.devices["device"].is_in(rank.idle["device"].implode()))
        has = set.intersection(*(formats_of(d["name"], d["compute_major"], d["compute_minor"])
                                 for d in devices.iter_rows(named=True))) if devices.height else set()
        for row in rank.findings.iter_rows(named=True):
            # the advice, and the evidence outside `kernel names` (a kernel may be called …FP8rowwise…)
            said = " ".join((row["title"], row["action"], re.sub(r"`[^`]*`", "", row["evidence"]))).lower()
            for fmt, words in WORDS.items():
                if fmt not in has:
                    assert not any(word in said for word in words), (row["id"], fmt, devices["name"].to_list())
            assert row["gain_ns"] is None or row["gain_ns"] >= 0


@pytest.mark.parametrize("path", real_trace_params())
def test_gap_causes_agree_with_the_launch_calls(path):
    """A `sync` gap ends at work launched after it began, with a blocking call running during it;
    a gap before work queued in time (`launch`, `collective`, `stream_wait`) ends at work launched
    at or before its start. The launch is looked up here in the runtime table by correlation (ranks
    whose correlation ids repeat are left out: their launch is ambiguous)."""
    trace = traceanalyze.load_trace(path)
    report = report_of(path)
    for rank in report.ranks:
        if rank.health.filter(pl.col("finding") == "repeated_correlation_ids").height:
            continue
        runtime = trace.runtime.filter(pl.col("rank") == rank.rank)
        launches = (runtime.filter(pl.col("kind").is_in(LAUNCH_KINDS))
                    .select(pl.col("correlation").alias("next_correlation"), pl.col("start_ns").alias("launch_ns")))
        gaps = rank.gaps.join(launches, on="next_correlation", how="left")
        sync = gaps.filter(pl.col("cause") == "sync")
        assert (sync["launch_ns"] > sync["start_ns"]).all()
        blocking = runtime.filter(pl.col("blocking")).select("start_ns", "end_ns").sort("start_ns")
        for gap in sync.select("start_ns", "end_ns").iter_rows(named=True):
            assert blocking.filter((pl.col("start_ns") < gap["end_ns"]) & (pl.col("end_ns") > gap["start_ns"])).height
        queued = gaps.filter(pl.col("cause").is_in(["launch", "collective", "stream_wait"]))
        assert (queued["launch_ns"] <= queued["start_ns"]).all()


@pytest.mark.parametrize("path", real_trace_params())
def test_no_advice_to_start_what_the_trace_already_does(path):
    """A trace that launches CUDA graphs is not told to capture them; a fusion chain of Inductor
    kernels is not told to `torch.compile` them."""
    for rank in report_of(path).ranks:
        graphs = rank.health.filter(pl.col("finding") == "cuda_graph_launches")["count"].sum()
        for row in rank.findings.iter_rows(named=True):
            if graphs:
                assert "reduce-overhead" not in row["action"], row["id"]
            if row["id"] == "fuse-bandwidth-chain" and row["evidence"].split("top ")[1].startswith("triton_"):
                assert "model = torch.compile(model)" not in row["action"]
