"""The replay's prediction for a recorded pair (docs/whatif.md, "Checking the predictions"):
`fixtures/recorded/h100_transformer_compiled_train` with its compiled regions as CUDA graphs,
against `h100_transformer_cuda_graphs_train`, the same run with `mode="reduce-overhead"`.

The `graph` remedy is written here by hand: the GPU ops launched (on the region's thread) inside
each `## Call CompiledFxGraph` region, one remedy per region; the optimizer stays eager.

    PYTHONPATH=. python scripts/whatif_recorded_pair.py
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

import traceanalyze
from traceanalyze.analysis.findings.finding import Finding, Remedy
from traceanalyze.model import linked_gpu
from traceanalyze.whatif import predict

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "recorded"


def graph_remedies(trace) -> tuple[Remedy, ...]:
    regions = trace.cpu_ops.filter(pl.col("name").cast(pl.String).str.starts_with("## Call CompiledFxGraph"))
    ops = linked_gpu(trace)
    remedies = []
    for region in regions.iter_rows(named=True):
        inside = ops.filter((pl.col("launch_tid") == region["tid"]) & pl.col("launch_start_ns").is_between(
            region["start_ns"], region["end_ns"]))
        remedies.append(Remedy("graph", gpu_ops=tuple(inside.select("device", "stream", "start_ns").iter_rows())))
    return tuple(remedies)


def main() -> None:
    before = traceanalyze.load_trace(RECORDED / "h100_transformer_compiled_train.json.gz")
    after = traceanalyze.load_trace(RECORDED / "h100_transformer_cuda_graphs_train.json.gz")
    finding = Finding(id="cuda-graphs", regime="overhead", title="", evidence="", action="", gain_ns=None,
                      confidence="high", remedies=graph_remedies(before))
    predicted = predict(before, [finding])
    measured = predict(after)
    before_ms, predicted_ms = predicted.measured.step_ns / 1e6, predicted.combined.step_ns / 1e6
    after_ms = measured.measured.step_ns / 1e6
    print(f"before {before_ms:.3f} ms per step, predicted {predicted_ms:.3f} ms, measured after {after_ms:.3f} ms "
          f"(steps {', '.join(f'{s / 1e6:.3f}' for s in measured.measured.steps_ns)}); "
          f"error {abs(predicted_ms - after_ms) / before_ms:.1%} of the before-step")


if __name__ == "__main__":
    main()
