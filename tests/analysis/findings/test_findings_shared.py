"""On every shared trace: no finding advises a number format the device lacks. What the device has
is read here from the trace itself (its deviceProperties name and compute capability), not from
the peak table the rules use: TF32 and BF16 tensor cores from Ampere (8.0) on, FP8 from Ada (8.9)
and Hopper (9.0) on; AMD: BF16 on MI200, TF32, BF16 and FP8 on MI300; an unknown device: none."""

from __future__ import annotations

import re

import pytest

from shared_traces import real_trace_params

import traceanalyze
from traceanalyze.report.model import build_report

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
    report = build_report(traceanalyze.load_trace(path))
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
