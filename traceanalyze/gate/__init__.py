"""The CI gate: budgets → verdict, pure (`budgets`, `measure`, `verdict`); `config` reads the
`[tool.traceanalyze.gate]` table. See docs/gate.md.

Examples
--------
>>> from traceanalyze.gate import evaluate, measure, resolve_options
>>> verdict = evaluate(measure(report_dict), resolve_options({}, {"max_idle_fraction": "15%"}))  # doctest: +SKIP
>>> verdict.exit_code  # doctest: +SKIP
0
"""

from traceanalyze.gate.budgets import BUDGETS, STATISTICS, GateOptions, Statistic, resolve_options
from traceanalyze.gate.metrics import Measured, measure, statistic
from traceanalyze.gate.verdict import Check, Regression, Verdict, evaluate

__all__ = [
    "BUDGETS", "STATISTICS", "Check", "GateOptions", "Measured", "Regression", "Statistic", "Verdict",
    "evaluate", "measure", "resolve_options", "statistic",
]
