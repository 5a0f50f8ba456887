"""Where the memory of one `report --format json` goes: after the load, and each analysis.

    python scripts/bench_memory.py TRACE [--json]

Runs in one process what the command runs (the command line's allocator settings, `load_trace`
without the cache, `pipeline.rank.build_report`, here in one thread so that each analysis is
measured alone), with a thread sampling the resident size (RSS)
every 5 ms. Before and after each analysis that `rank_report` calls (at its outermost call, as
`bench_stages.py` times them) it waits 0.45 s and trims glibc's arenas, so that freed pages are
handed back first: `peak` is the most the analysis held on top of what was resident when it
began (its transient), `kept` what was still resident after it (mostly its result). The waits
make this slow; times are not measured here (`bench_stages.py`).
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def resident() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096


class Sampler:
    """The largest resident size since `reset`, sampled by a thread."""

    def __init__(self) -> None:
        self.peak = 0
        self.done = threading.Event()
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        while not self.done.is_set():
            self.peak = max(self.peak, resident())
            time.sleep(0.005)

    def reset(self) -> None:
        self.peak = resident()


def profile(path: Path) -> dict[str, object]:
    from traceanalyze.allocator import configure_before_polars

    configure_before_polars()
    from bench_stages import unwrap, wrap_analyses

    from traceanalyze.allocator import return_freed_memory
    from traceanalyze.load import load_trace
    from traceanalyze.report.model import ReportOptions
    from traceanalyze.pipeline.rank import build_report

    def settled() -> int:
        time.sleep(0.45)  # polars' jemalloc hands freed pages back after 0.3 s (allocator.JEMALLOC_CONF)
        return_freed_memory()
        return resident()

    sampler = Sampler()
    trace = load_trace(path, cache=False)
    load_peak, loaded = sampler.peak, settled()
    each: dict[str, dict[str, int]] = {}

    def measure(label: str, call):
        before = settled()
        sampler.reset()
        result = call()
        peak, after = sampler.peak, settled()
        figures = each.setdefault(label, {"peak": 0, "kept": 0})
        figures["peak"] = max(figures["peak"], peak - before)
        figures["kept"] += after - before
        return result

    undo = wrap_analyses(measure)
    try:
        report = build_report(trace, ReportOptions(analysis_threads=1))
    finally:
        unwrap(undo)
    sampler.done.set()
    reported = settled()  # the tables and the report's frames
    del report
    return {"load_peak_bytes": load_peak, "after_load_bytes": loaded, "after_report_bytes": reported,
            "each": dict(sorted(each.items(), key=lambda item: -item[1]["peak"]))}


def main(argv: list[str] | None = None) -> int:
    from bench_stages import figures_main

    return figures_main(argv, __doc__, profile, show)


def show(figures: dict) -> None:
    mb = 1e6
    print(f"load: peak {figures['load_peak_bytes'] / mb:.0f} MB, "
          f"resident after {figures['after_load_bytes'] / mb:.0f} MB; "
          f"with the report's frames {figures['after_report_bytes'] / mb:.0f} MB")
    for label, item in figures["each"].items():
        print(f"  peak +{item['peak'] / mb:5.0f} MB  kept {item['kept'] / mb:+5.0f} MB  {label}")


if __name__ == "__main__":
    sys.exit(main())
