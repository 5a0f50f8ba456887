"""The gate verdict for people: terminal text and Markdown (the GitHub step summary)."""

from __future__ import annotations

from traceanalyze.renderers.escape import markdown_plain
from traceanalyze.renderers.md import md_code, md_table
from traceanalyze.renderers.text_table import fit_lines, terminal_width, text_table
from traceanalyze.gate.verdict import Check, Regression, Verdict, format_margin, format_value, steps_text

HEADLINE = {"pass": "PASS", "fail": "FAIL", "error": "ERROR (cannot judge)"}
EMOJI = {"pass": "✅", "fail": "❌", "error": "⚠️"}
STATUS = {"pass": "pass", "fail": "FAIL", "unmeasured": "not measured", "info": "shown"}
REGRESSION_HEADERS = ["compared", "baseline", "now", "change", "regime share", "status"]


def _basis_line(verdict: Verdict) -> str:
    if verdict.basis == "steps":
        return f"judged on the {verdict.statistic} of {steps_text(verdict.steps)} (--min-steps {verdict.min_steps})"
    return "judged on the whole trace window (no ProfilerStep spans with GPU work)"


def _check_row(check: Check) -> list[str]:
    bound = "≤" if check.kind == "max" else "≥"
    if check.margin is None:
        margin = "–"
    elif check.status == "pass":
        margin = f"passes by {format_margin(max(check.margin, 0.0), check.unit)}"
    else:
        margin = f"fails by {format_margin(-check.margin, check.unit)}"
    basis = "window" if check.basis == "window" else "per step"
    measured = format_value(check.measured, check.unit)
    if check.rank is not None:
        measured = f"{measured} (rank {check.rank})"
    return [check.name, f"{bound} {format_value(check.threshold, check.unit)}",
            measured, basis, margin, STATUS[check.status]]


def _change(r: Regression) -> str:
    if r.change is None:
        return "–"
    if r.change_kind == "relative":
        return f"{100 * r.change:+.2f}%"
    if r.change_kind == "points":
        return f"{100 * r.change:+.2f} pts"
    return f"{100 * r.change:+.2f}% of step"


def _regression_row(r: Regression) -> list[str]:
    share = ""
    if r.base_share is not None or r.new_share is not None:
        share = f"{format_value(r.base_share, 'fraction')} → {format_value(r.new_share, 'fraction')}"
    return [r.label, format_value(r.base, r.unit), format_value(r.new, r.unit), _change(r), share, STATUS[r.status]]


def _rows(verdict: Verdict) -> list[Check]:
    """A row per budget, and one more per other rank that breaks it (ranks judged one by one)."""
    return [item for check in verdict.checks for item in (check, *check.other_failures)]


def _failed(verdict: Verdict) -> list[Check | Regression]:
    """Every failed or unmeasured budget and regression, each rank that breaks a budget included."""
    items = [item for check in verdict.checks for item in (check, *check.other_failures)]
    return [item for item in (*items, *verdict.regressions) if item.status in ("fail", "unmeasured")]


def _limit(verdict: Verdict) -> str:
    value = verdict.max_regression or 0.0
    return f"{100 * value:g}%"


def render_verdict_terminal(verdict: Verdict, *, width: int | None = None) -> str:
    """The verdict for a terminal of `width` columns (default: this terminal's, `terminal_width`)."""
    width = width or terminal_width()
    lines = [f"traceanalyze gate: {HEADLINE[verdict.outcome]}  {verdict.source}", f"  {_basis_line(verdict)}"]
    lines += [f"  WARNING: {warning}" for warning in verdict.warnings]
    if verdict.checks:
        table = text_table([_check_row(c) for c in _rows(verdict)],
                           ["budget", "threshold", "measured", "basis", "margin", "status"], width=width)
        lines += ["", *table.splitlines()]
    if verdict.baseline is not None:
        lines += ["", f"  against the baseline {verdict.baseline} ({steps_text(verdict.baseline_steps)}), "
                      f"max regression {_limit(verdict)}:"]
        lines += text_table([_regression_row(r) for r in verdict.regressions], REGRESSION_HEADERS,
                            width=width).splitlines()
    if verdict.problems:
        head = "numbers not trustworthy (judged anyway, --allow-unreliable):" if verdict.allow_unreliable else \
            "cannot judge (pass --allow-unreliable to judge anyway):"
        lines += ["", f"  {head}", *(f"    - {p}" for p in verdict.problems)]
    failures = [item.message for item in _failed(verdict)]
    if failures:
        lines += ["", *(f"  ✗ {message}" for message in failures)]
    if verdict.notes:
        lines += ["", *(f"  note: {note}" for note in verdict.notes)]
    return "\n".join(fit_lines(lines, width)) + "\n"


def _md_escape(text: str) -> str:
    """Verdict text for Markdown: trace strings (file and device names) can hold markup."""
    return markdown_plain(text.replace("\n", " "))


def _md_table(rows: list[list[str]], headers: list[str]) -> list[str]:
    return md_table(headers, [[_md_escape(cell) for cell in row] for row in rows]).splitlines()


def render_verdict_markdown(verdict: Verdict) -> str:
    """The verdict as GitHub-flavoured Markdown (for `$GITHUB_STEP_SUMMARY`)."""
    lines = [f"### {EMOJI[verdict.outcome]} traceanalyze gate: {HEADLINE[verdict.outcome]}", "",
             f"{md_code(verdict.source)}: {_basis_line(verdict)}.", ""]
    lines += [f"> ⚠️ **Warning:** {_md_escape(warning)}" for warning in verdict.warnings]
    lines += [""] if verdict.warnings else []
    if verdict.checks:
        lines += _md_table([_check_row(c) for c in _rows(verdict)],
                           ["budget", "threshold", "measured", "basis", "margin", "status"]) + [""]
    if verdict.baseline is not None:
        lines += [f"Against the baseline {md_code(verdict.baseline)} ({steps_text(verdict.baseline_steps)}), "
                  f"max regression {_limit(verdict)}:", ""]
        lines += _md_table([_regression_row(r) for r in verdict.regressions], REGRESSION_HEADERS) + [""]
    if verdict.problems:
        head = "Numbers not trustworthy (judged anyway, `--allow-unreliable`):" if verdict.allow_unreliable else \
            "Cannot judge (pass `--allow-unreliable` to judge anyway):"
        lines += [head, "", *(f"- {_md_escape(p)}" for p in verdict.problems), ""]
    if verdict.notes:
        lines += ["Notes:", "", *(f"- {_md_escape(note)}" for note in verdict.notes), ""]
    return "\n".join(lines) + "\n"
