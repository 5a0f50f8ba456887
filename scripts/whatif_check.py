"""Check the replay's predictions on real runs (docs/whatif.md, "Checking the predictions").

For each pair (a change a finding asks for), `scripts/examples/whatif_workload.py` is captured
before the change (`traceanalyze capture`), the before trace's JSON report gives the prediction
(the step time minus the predicted saving of the pair's finding, per step), and the predictions
are written (`predictions.json`) before any "after" run starts; then each after run is captured
and measured, and `measured.json` and `measured.md` (the table of docs/whatif.md) are written.

    python scripts/whatif_check.py --size gpu --out /tmp/whatif          # on a GPU, every pair
    python scripts/whatif_check.py --size tiny --pairs item --out /tmp/w  # the plumbing, on a CPU

The error of a pair is |predicted − measured after-step| / before-step (target ≤ 10 %).
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WORKLOAD = REPO / "scripts" / "examples" / "whatif_workload.py"
TARGET = 0.10  # |predicted − measured| / before-step


@dataclass(frozen=True)
class Pair:
    """A change: the workload's flags after it (before: none), and the ids (prefixes) of the
    findings whose action it is."""

    after: tuple[str, ...]
    findings: tuple[str, ...]
    gpu_only: bool = False


PAIRS = {
    "cuda_graphs": Pair(("--compile-mode", "reduce-overhead"), ("launch-bound", "cpu-bound-gaps"), gpu_only=True),
    "tf32": Pair(("--precision", "tf32"), ("fp32-simt-gemm", "lower-precision"), gpu_only=True),
    "bf16": Pair(("--precision", "bf16"), ("lower-precision", "fp32-simt-gemm"), gpu_only=True),
    "sdpa": Pair(("--attention", "sdpa"), ("unfused-attention", "sdpa", "attention")),
    "dataloader": Pair(("--workers", "4", "--pin-memory"), ("dataloader-wait",)),
    "item": Pair(("--item-every", "10"), ("sync-in-step",)),
    "pinned": Pair(("--pinned-copies",), ("pageable-h2d",), gpu_only=True),
    "fusion": Pair(("--compile-pointwise",), ("fuse-bandwidth-chain",)),
}

SIZES = {
    "tiny": ("--steps", "8", "--width", "32", "--layers", "1", "--context", "16", "--batch-size", "2",
             "--vocab", "64", "--sample-work", "8"),
    "gpu": ("--steps", "20", "--width", "1024", "--layers", "4", "--context", "512", "--batch-size", "16",
            "--vocab", "8192", "--sample-work", "256"),
}


def code_digest() -> str:
    """A digest of the code that makes the prediction (the replay and the rules), so that a table
    row says which code predicted it."""
    files = sorted([*(REPO / "traceanalyze" / "whatif").glob("*.py"),
                    *(REPO / "traceanalyze" / "analysis" / "findings").glob("*.py")])
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def capture(out: Path, args: tuple[str, ...], timeout: float) -> Path:
    """`traceanalyze capture` of the workload with `args`; the trace's JSON report (`report.json`)."""
    out.mkdir(parents=True, exist_ok=True)
    run = [sys.executable, "-m", "traceanalyze", "capture", "-o", str(out), "--no-report", str(WORKLOAD), "--", *args]
    with open(out / "capture.log", "w") as log:
        subprocess.run(run, stdout=log, stderr=subprocess.STDOUT, check=True, timeout=timeout, cwd=REPO)
    report = out / "report.json"
    subprocess.run([sys.executable, "-m", "traceanalyze", "report", str(out / "trace.json.gz"), "--format", "json",
                    "--no-cache", "-o", str(report)], check=True, timeout=timeout, cwd=REPO, capture_output=True)
    return report


def step_of(report: dict) -> float | None:
    """The mean step time (µs) of the report's first rank, as the replay defines it."""
    replay = report["ranks"][0]["summary"].get("replay") or {}
    return replay.get("step_us")


def predict_pair(name: str, pair: Pair, report: dict) -> dict:
    """The prediction for `pair` from the before trace's JSON report: the before step less the
    largest predicted saving of the pair's findings, per step (None, with the reason, when no such
    finding fired or none could be modelled)."""
    before = step_of(report)
    steps = len((report["ranks"][0]["summary"].get("replay") or {}).get("steps", []))
    matching = [f for f in report.get("findings", []) if any(f["id"].startswith(p) for p in pair.findings)]
    modelled = [f for f in matching if f.get("saving_us") is not None]
    row = {"pair": name, "after_flags": list(pair.after), "before_step_us": before,
           "findings": [f["id"] for f in matching]}
    if before is None:
        return {**row, "predicted_step_us": None, "why": "the before trace has no steps"}
    if not modelled:
        why = "no finding of the pair fired" if not matching else "the finding's action is not modelled"
        return {**row, "predicted_step_us": None, "why": why}
    best = max(modelled, key=lambda f: f["saving_us"])
    per_step = best["saving_us"] / max(steps, 1)
    return {**row, "finding": best["id"], "saving_us": best["saving_us"], "steps": steps,
            "predicted_step_us": before - per_step, "why": ""}


def measured_row(prediction: dict, after_report: dict | None) -> dict:
    """The prediction beside the measured after-step, and the error (a share of the before-step)."""
    after = step_of(after_report) if after_report is not None else None
    predicted, before = prediction["predicted_step_us"], prediction["before_step_us"]
    error = abs(predicted - after) / before if None not in (predicted, after, before) and before else None
    return {**prediction, "measured_step_us": after, "error": error,
            "within_target": None if error is None else error <= TARGET}


def _ms(value: float | None) -> str:
    return "–" if value is None else f"{value / 1000:.3f} ms"


def table(rows: list[dict]) -> str:
    """The Markdown table of docs/whatif.md."""
    lines = ["| pair | finding | before step | predicted | measured after | error (of before) | note |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        error = "–" if r["error"] is None else f"{r['error']:.1%}"
        lines.append(f"| {r['pair']} | {r.get('finding', '–')} | {_ms(r['before_step_us'])} | "
                     f"{_ms(r['predicted_step_us'])} | {_ms(r['measured_step_us'])} | {error} | {r['why']} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--size", choices=sorted(SIZES), default="tiny")
    parser.add_argument("--pairs", nargs="*", default=None, help=f"pairs to run (default: all): {', '.join(PAIRS)}")
    parser.add_argument("--device", default=None, help="the workload's --device (default: its own choice)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per capture or report")
    args = parser.parse_args(argv)
    names = args.pairs or [name for name, pair in PAIRS.items() if args.size == "gpu" or not pair.gpu_only]
    unknown = sorted(set(names) - set(PAIRS))
    if unknown:
        parser.error(f"unknown pairs: {', '.join(unknown)}")
    base = (*SIZES[args.size], *(("--device", args.device) if args.device else ()))
    args.out.mkdir(parents=True, exist_ok=True)

    before = json.loads(capture(args.out / "before", base, args.timeout).read_text())
    predictions = [predict_pair(name, PAIRS[name], before) for name in names]
    header = {"written": datetime.datetime.now(datetime.timezone.utc).isoformat(), "commit": commit(),
              "code_digest": code_digest(), "size": args.size, "workload_flags": list(base)}
    (args.out / "predictions.json").write_text(json.dumps({**header, "predictions": predictions}, indent=2) + "\n")

    rows = []
    for prediction in predictions:
        pair = PAIRS[prediction["pair"]]
        try:
            after = json.loads(capture(args.out / prediction["pair"], (*base, *pair.after), args.timeout).read_text())
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as failed:
            after = None
            why = f"{prediction['why']}; after run failed: {type(failed).__name__}".strip("; ")
            prediction = {**prediction, "why": why}
        rows.append(measured_row(prediction, after))
    measured = {**header, "written": datetime.datetime.now(datetime.timezone.utc).isoformat(), "rows": rows}
    (args.out / "measured.json").write_text(json.dumps(measured, indent=2) + "\n")
    (args.out / "measured.md").write_text(table(rows))
    print(table(rows), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
