"""Where the time of one `report --format json` goes: load, each analysis, render.

    python scripts/bench_stages.py TRACE [--json]

Runs in one process what the command runs (`load_trace`, `pipeline.rank.build_report`, the JSON
renderer), with a stopwatch around the load, the analyses and the render: `analyses` is
`build_report` as the command runs it (its groups of analyses side by side in threads,
`ReportOptions.analysis_threads`). Then `build_report` runs again in one thread, with a stopwatch
around each analysis that `pipeline.rank.rank_report` calls (the functions of the analysis modules
it uses, timed only at their outermost call so that an analysis calling another is not counted
twice): the breakdown, whose sum is `analyses, one thread`; `other` is what `rank_report` spends
there outside the timed functions. Timings come from this script only: the package itself carries
no stopwatch.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def wrap_analyses(measure) -> list:
    """Wrap the analysis functions `rank_report` calls, each at its outermost call only (an
    analysis calling another is measured once): `measure(label, call)` runs `call()` and returns
    its result. Returns the undo list: (owner, name, original)."""
    import traceanalyze.pipeline.rank as report_model

    depth = [0]
    undo = []

    def wrap(owner, name: str, label: str) -> None:
        original = getattr(owner, name)

        @functools.wraps(original)
        def measured(*args, **kwargs):
            if depth[0]:
                return original(*args, **kwargs)
            depth[0] += 1
            try:
                return measure(label, lambda: original(*args, **kwargs))
            finally:
                depth[0] -= 1

        setattr(owner, name, measured)
        undo.append((owner, name, original))

    modules = ("attribution", "collectives", "idle", "launch", "overlap", "roofline", "stragglers")
    for module_name in modules:
        module = getattr(report_model, module_name)
        for name in dir(module):
            value = getattr(module, name)
            if callable(value) and not name.startswith("_") and getattr(value, "__module__", None) == module.__name__ \
                    and not isinstance(value, type):
                wrap(module, name, f"{module_name}.{name}")
    for name in ("findings", "trace_health", "matched_devices", "summarise", "small_kernel_summary", "idle_causes"):
        wrap(report_model, name, name)
    return undo


def unwrap(undo: list) -> None:
    for owner, name, original in undo:
        setattr(owner, name, original)


def timed_analyses() -> tuple[dict[str, float], list]:
    """Wrap the analysis functions `rank_report` calls; returns the running totals and the undo list."""
    totals: dict[str, float] = defaultdict(float)

    def timed(label: str, call):
        start = time.perf_counter()
        try:
            return call()
        finally:
            totals[label] += time.perf_counter() - start

    return totals, wrap_analyses(timed)


def stages(path: Path) -> dict[str, object]:
    from traceanalyze.load import load_trace
    from traceanalyze.renderers.formats import RENDERERS
    from traceanalyze.report.model import ReportOptions
    from traceanalyze.pipeline.rank import build_report

    start = time.perf_counter()
    trace = load_trace(path, cache=False)  # the parse, never the cache of loaded traces
    loaded = time.perf_counter()
    report = build_report(trace)
    analysed = time.perf_counter()
    RENDERERS["json"](report)
    rendered = time.perf_counter()
    totals, undo = timed_analyses()
    try:
        alone = time.perf_counter()
        build_report(trace, ReportOptions(analysis_threads=1))
        one_thread = time.perf_counter() - alone
    finally:
        unwrap(undo)
    return {
        "load_s": loaded - start,
        "analyses_s": analysed - loaded,
        "render_s": rendered - analysed,
        "analyses_one_thread_s": one_thread,
        "each_s": dict(sorted(totals.items(), key=lambda item: -item[1])),
        "other_s": one_thread - sum(totals.values()),
        "events": {"gpu": trace.gpu.height, "cpu_ops": trace.cpu_ops.height, "runtime": trace.runtime.height},
    }


def figures_main(argv: list[str] | None, doc: str, compute, show) -> int:
    """`SCRIPT TRACE [--json]`: `compute(trace)`'s figures as JSON, or as `show(figures)` prints them."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("trace", type=Path)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    figures = compute(args.trace)
    if args.json:
        print(json.dumps(figures))
    else:
        show(figures)
    return 0


def main(argv: list[str] | None = None) -> int:
    return figures_main(argv, __doc__, stages, show)


def show(figures: dict) -> None:
    print(f"load {figures['load_s']:.2f} s, analyses {figures['analyses_s']:.2f} s "
          f"({figures['analyses_s'] / figures['load_s']:.2f}x the load), render {figures['render_s']:.2f} s; "
          f"the analyses in one thread {figures['analyses_one_thread_s']:.2f} s:")
    for label, seconds in figures["each_s"].items():  # type: ignore[union-attr]
        if seconds >= 0.01:
            print(f"  {seconds:7.2f} s  {label}")
    print(f"  {figures['other_s']:7.2f} s  (rank_report outside the timed functions)")


if __name__ == "__main__":
    sys.exit(main())
