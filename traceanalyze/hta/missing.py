"""HTA methods the facade does not provide: each raises NotImplementedError naming the closest
traceanalyze function (docs/hta.md, migration table)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# HTA method → the closest traceanalyze function or report table
MISSING = {
    "get_gpu_kernels_with_user_annotations": "TraceAnalysis.get_gpu_user_annotation_breakdown; "
                                             "traceanalyze.analysis.attribution.step_attribution",
    "get_frequent_cuda_kernel_sequences": "traceanalyze.analysis.launch.small_kernel_runs",
    "get_time_spent_blocked_on_full_queue": "traceanalyze.analysis.launch.queue_summary",
    "get_queue_length_summary_from_time_series": "traceanalyze.analysis.launch.queue_summary",
    "critical_path_analysis": "traceanalyze.analyze(...).ranks[i].gaps (idle gaps and their causes)",
    "overlay_critical_path_analysis": "traceanalyze.analyze(...).ranks[i].gaps",
    "generate_trace_with_counters": "traceanalyze.analysis.launch.queue_depth",
    "get_cupti_counter_data_with_operators": "none: CUPTI counters are not read",
}


def missing(name: str) -> Callable[..., Any]:
    """A stand-in for HTA's method `name` that raises NotImplementedError when called."""

    def method(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            f"traceanalyze.hta.TraceAnalysis.{name} is not provided; the closest traceanalyze function: {MISSING[name]}"
        )

    method.__name__ = name
    return method
