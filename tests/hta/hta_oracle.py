"""Running HolisticTraceAnalysis 0.5.0 itself (the oracle) and comparing its frames with ours.

`run_hta(folder)` calls every method the facade provides, each once, with `visualize=False`, and
keeps what it returned or the exception it raised. `assert_same(ours, theirs)` compares two pandas
frames: the same columns in the same order, numeric dtypes on both sides where one is numeric,
values equal (floats to 1e-9 relative: HTA sums float µs, we sum int ns)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

CALLS = {
    "get_temporal_breakdown": lambda a, ranks: a.get_temporal_breakdown(visualize=False),
    "get_gpu_kernel_breakdown": lambda a, ranks: a.get_gpu_kernel_breakdown(visualize=False),
    "get_comm_comp_overlap": lambda a, ranks: a.get_comm_comp_overlap(visualize=False),
    "get_idle_time_breakdown": lambda a, ranks: a.get_idle_time_breakdown(
        ranks=ranks, visualize=False, show_idle_interval_stats=True),
    "get_cuda_kernel_launch_stats": lambda a, ranks: a.get_cuda_kernel_launch_stats(ranks=ranks, visualize=False),
    "get_queue_length_summary": lambda a, ranks: a.get_queue_length_summary(ranks=ranks),
    "get_profiler_steps": lambda a, ranks: a.get_profiler_steps(),
    "get_queue_length_time_series": lambda a, ranks: a.get_queue_length_time_series(ranks=ranks),
    "get_memory_bw_time_series": lambda a, ranks: a.get_memory_bw_time_series(ranks=ranks),
    "get_memory_bw_summary": lambda a, ranks: a.get_memory_bw_summary(ranks=ranks),
    "get_gpu_user_annotation_breakdown": lambda a, ranks: (
        a.get_gpu_user_annotation_breakdown(visualize=False),
        a.get_gpu_user_annotation_breakdown(use_gpu_annotation=False, visualize=False, num_kernels=3),
        a.get_gpu_user_annotation_breakdown(use_gpu_annotation=False, visualize=False, num_kernels=3,
                                            allowlist_patterns=["nccl"])),
    "get_aten_op_kernels_and_delay": lambda a, ranks: a.get_aten_op_kernels_and_delay(ranks=ranks),
    "get_potential_stragglers": lambda a, ranks: (a.get_potential_stragglers(),
                                                  a.get_potential_stragglers(num_candidates=1)),
}


@dataclass
class Outputs:
    """Each method's result (or the exception it raised), by method name."""

    ranks: list[int]
    results: dict[str, Any] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)


def call_all(analyzer: Any, ranks: list[int]) -> Outputs:
    outputs = Outputs(ranks)
    for name, call in CALLS.items():
        try:
            outputs.results[name] = call(analyzer, ranks)
        except Exception as error:  # noqa: BLE001 -- HTA's own failures are data here
            outputs.errors[name] = f"{type(error).__name__}: {error}"
    return outputs


def run_hta(folder: Path) -> Outputs:
    """HTA's `TraceAnalysis(trace_dir=folder)` and every method of `CALLS`."""
    from hta.configs.config import logger as hta_logger
    from hta.trace_analysis import TraceAnalysis

    level = hta_logger.level
    hta_logger.setLevel(logging.ERROR)
    try:
        with pytest.MonkeyPatch.context() as env:
            env.delenv("HTA_DISABLE_NS_ROUNDING", raising=False)  # this switch changes HTA's numbers
            analyzer = TraceAnalysis(trace_dir=str(folder))
            return call_all(analyzer, sorted(analyzer.t.traces))
    finally:
        hta_logger.setLevel(level)


def assert_same(ours: Any, theirs: Any, *, sort_by: list[str] | None = None, what: str = "") -> None:
    """Two pandas frames are equal: columns, index names, numeric-ness of each column, values."""
    assert list(ours.columns) == list(theirs.columns), what
    assert list(ours.index.names) == list(theirs.index.names), what
    if sort_by:
        ours = ours.sort_values(sort_by, kind="stable").reset_index(drop=True)
        theirs = theirs.sort_values(sort_by, kind="stable").reset_index(drop=True)
    assert len(ours) == len(theirs), f"{what}: {len(ours)} rows, HTA {len(theirs)}"
    assert list(map(str, ours.index)) == list(map(str, theirs.index)), what
    for column in ours.columns:
        mine, reference = ours[column].to_numpy(), theirs[column].to_numpy()
        if reference.dtype.kind in "iuf":
            assert mine.dtype.kind in "iuf", f"{what} {column}: {mine.dtype}, HTA {reference.dtype}"
            assert np.allclose(mine.astype(float), reference.astype(float), rtol=1e-9, atol=1e-9,
                               equal_nan=True), f"{what} {column}:\n{ours[column]}\n{theirs[column]}"
        else:
            assert [str(v) for v in mine] == [str(v) for v in reference], f"{what} {column}"
