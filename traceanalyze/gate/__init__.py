"""The CI gate: budgets → verdict, pure (`budgets`, `measure`, `verdict`); `config` reads the
`[tool.traceanalyze.gate]` table. See docs/gate.md.

Examples
--------
>>> from traceanalyze.gate import evaluate, measure, resolve_options
>>> verdict = evaluate(measure(report_dict), resolve_options({}, {"max_idle_fraction": "15%"}))  # doctest: +SKIP
>>> verdict.exit_code  # doctest: +SKIP
0
"""

from importlib import import_module

# where each public name lives: imported on first use, so that the command line can read the
# format names in `gate.formats` without importing the gate's analyses (start-up, docs/performance.md)
_HOMES = {
    "BUDGETS": "budgets", "STATISTICS": "budgets", "GateOptions": "budgets", "Statistic": "budgets",
    "resolve_options": "budgets",
    "Measured": "metrics", "measure": "metrics", "statistic": "metrics",
    "Check": "verdict", "Regression": "verdict", "Verdict": "verdict", "evaluate": "verdict",
}
__all__ = sorted(_HOMES)


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{_HOMES[name]}"), name)
