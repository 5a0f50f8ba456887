"""The unmodified replay's accuracy on every shared and recorded trace, as the Markdown table of
docs/whatif.md: per rank, nodes, edges, the window's and the steps' relative errors, and the time
to build and replay the graph.

    PYTHONPATH=. python scripts/whatif_accuracy.py [trace or folder ...]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

import traceanalyze
from traceanalyze.whatif import build_graph, predict, replay

REPO = Path(__file__).resolve().parents[1]
DEFAULT = [REPO.parent / "shared" / "traces", REPO / "fixtures" / "recorded"]


def traces(paths: list[Path]) -> list[Path]:
    found: list[Path] = []
    for path in paths:
        found += sorted(path.rglob("*.json.gz")) if path.is_dir() else [path]
    return found


def main(argv: list[str]) -> None:
    print("| trace | rank | nodes | edges | window | window error | steps | step error median / max | build + replay |")
    print("|---|---|---|---|---|---|---|---|---|")
    for path in traces([Path(a) for a in argv] or DEFAULT):
        for rank in traceanalyze.load_trace(path).split_by_rank():
            began = time.perf_counter()
            graph = build_graph(rank)
            replay(graph)
            took = time.perf_counter() - began
            p = predict(rank)
            errors = p.steps["relative_error"].to_numpy()
            steps = f"{np.median(errors):.2%} / {errors.max():.2%}" if len(errors) else "–"
            print(f"| {path.parent.name}/{path.name} | {p.rank} | {graph.size} | {len(graph.src)} | "
                  f"{p.measured.window_ns / 1e6:.3f} ms | {p.relative_error:.2%} | {len(errors)} | {steps} | "
                  f"{took:.2f} s |")


if __name__ == "__main__":
    main(sys.argv[1:])
