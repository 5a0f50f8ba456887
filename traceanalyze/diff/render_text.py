"""`traceanalyze diff` for people: terminal text and Markdown."""

from __future__ import annotations

from traceanalyze.diff.compare import Diff, KernelRow, MetricRow
from traceanalyze.renderers.escape import markdown_plain
from traceanalyze.renderers.md import md_code, md_table
from traceanalyze.renderers.text_table import Shrinkable, fit_lines, terminal_width, text_table
from traceanalyze.gate.verdict import format_value, steps_text

STATUS_MARK = {"added": "+ added", "removed": "− removed", "slower": "▲ slower", "faster": "▼ faster",
               "unchanged": "", "unlisted": "? unlisted"}


def status_mark(k: KernelRow) -> str:
    """The status cell: an `unlisted` kernel says on which side it is (listed in the new run only:
    new there, or below the base list's cut), never a bare "?"."""
    if k.status == "unlisted":
        return "+ new (base list cut)" if k.base_count is None else "− gone (new list cut)"
    return STATUS_MARK[k.status]


def scaled_time(value: float | None) -> str:
    """µs as people read them: `412.3 µs`, `621.7 ms`, `2.41 s`.

    >>> [scaled_time(v) for v in (412.34, 621_729.0, 2_410_000.0, None)]
    ['412.3 µs', '621.7 ms', '2.41 s', '–']
    """
    if value is None:
        return "–"
    size = abs(value)
    if size < 1_000:
        return f"{value:.1f} µs"
    return f"{value / 1e3:.1f} ms" if size < 1_000_000 else f"{value / 1e6:.2f} s"


def summary_line(diff: Diff) -> str:
    """What changed, in one line: the step time and idle changes, and how many kernels moved.

    E.g. "summary: step time +3.1% (12.0 ms → 12.4 ms), GPU idle +2.0 pts; kernels: 3 slower, 1 added"."""
    parts = []
    for metric in diff.metrics:
        if metric.name in ("step_time_ms", "idle_fraction") and metric.change is not None:
            parts.append(f"{metric.label} {_change(metric)} ({_value(metric.base, metric.unit)} → "
                         f"{_value(metric.new, metric.unit)})")
    counts: dict[str, int] = {}
    for k in diff.kernels:
        if k.status != "unchanged":
            key = status_mark(k).split(" ", 1)[1] if k.status == "unlisted" else k.status
            counts[key] = counts.get(key, 0) + 1
    order = ("added", "removed", "new (base list cut)", "gone (new list cut)", "slower", "faster")
    moved = ", ".join(f"{counts[status]} {status}" for status in order if status in counts) or "none changed"
    return f"summary: {', '.join(parts) or 'no step time to compare'}; kernels: {moved}"


def kernel_label(name: str, width: int) -> str:
    """A kernel name for a table cell: no `void `, no argument list, cut to `width`. Template
    arguments are kept as far as they fit: they tell apart the many `vectorized_elementwise_kernel`s."""
    text = name.removeprefix("void ").replace("(anonymous namespace)::", "")
    if text.endswith(")"):
        depth = 0
        for i in range(len(text) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(text[i], 0)
            if depth == 0:
                text = text[:i].rstrip() or text
                break
    text = text.removeprefix("at::native::")
    return text if len(text) <= width else text[: width - 1] + "…"


def _value(value: float | None, unit: str) -> str:
    if unit in ("us", "ms") and value is not None:  # times scaled to their size: 621.7 ms, not 621,729.0 µs
        return scaled_time(value * (1000 if unit == "ms" else 1))
    return format_value(value, unit, percent_decimals=1)


def _change(row: MetricRow) -> str:
    if row.change is None:
        return "–"
    if row.change_kind == "points":
        return f"{100 * row.change:+.1f} pts"
    return f"{100 * row.change:+.1f}%"


def metric_cells(diff: Diff) -> list[list[str]]:
    return [[m.label, _value(m.base, m.unit), _value(m.new, m.unit), _change(m)] for m in diff.metrics]


def _kernel_change(k: KernelRow) -> str:
    return "–" if k.change is None else f"{100 * k.change:+.1f}%"


def kernel_cells(k: KernelRow, width: int) -> list[str]:
    base_count = k.base_count if k.base_count is not None else "–"
    counts = f"{base_count} → {k.new_count if k.new_count is not None else '–'}"
    return [kernel_label(k.name, width), counts, scaled_time(k.base_mean_us), scaled_time(k.new_mean_us),
            _kernel_change(k), scaled_time(k.base_total_us), scaled_time(k.new_total_us), status_mark(k)]


KERNEL_HEADERS = ["kernel", "calls", "base / call", "new / call", "change", "base total", "new total", "status"]
METRIC_HEADERS = ["metric", "base", "new", "change"]


def top_kernels(diff: Diff, top: int) -> str:
    """"10 kernels", "1 kernel": how many the top list shows."""
    shown = min(top, len(diff.kernels))
    return f"{shown} kernel{'' if shown == 1 else 's'}"


def _title(diff: Diff) -> str:
    return f"{diff.base_source} ({steps_text(diff.base_steps)}) → {diff.new_source} ({steps_text(diff.new_steps)})"


def render_diff_terminal(diff: Diff, *, top: int = 10, width: int | None = None) -> str:
    """The diff for a terminal of `width` columns (default: this terminal's, `terminal_width`)."""
    width = width or terminal_width()

    def table(rows, headers) -> list[str]:
        return text_table(rows, headers, width=width).splitlines()

    def kernels(listed: list[KernelRow]) -> list[str]:
        names = Shrinkable(lambda room: [kernel_label(k.name, room) for k in listed])
        return text_table([kernel_cells(k, 56) for k in listed], KERNEL_HEADERS, width=width,
                          shrink={0: names}).splitlines()

    opening = ["SCALING (one program at different sizes)", f"  {diff.scaling}", ""] if diff.scaling else []
    lines = [*opening, f"traceanalyze diff: {_title(diff)}", f"  {summary_line(diff)}",
             *(f"  WARNING: {warning}" for warning in diff.warnings), ""]
    lines += table(metric_cells(diff), METRIC_HEADERS)
    changed = diff.changed_kernels
    unchanged = sum(1 for k in diff.kernels if k.status == "unchanged")
    lines += ["", f"  kernels that changed (mean time per call, ±{100 * diff.min_change:g}% or more): "
                  f"{len(changed)}; unchanged: {unchanged}"]
    if changed:
        lines += kernels(list(changed))
    lines += ["", f"  top {top_kernels(diff, top)} by total time:"]
    if diff.kernels:
        lines += kernels(list(diff.kernels[:top]))
    else:
        lines.append("    no kernels in either report")
    if diff.notes:
        lines += ["", *(f"  note: {note}" for note in diff.notes)]
    return "\n".join(fit_lines(lines, width)) + "\n"


def _md(text: str) -> str:
    """Plain text for Markdown: trace strings (file, device, kernel names) can hold markup."""
    return markdown_plain(text.replace("\n", " "))


def _md_table(rows: list[list[str]], headers: list[str], *, code_first: bool = False) -> list[str]:
    """A Markdown table of plain-text cells; with `code_first`, the first cell of each row is a
    code span (a kernel name)."""
    cells = [[md_code(row[0], in_table=True) if code_first else _md(row[0]), *map(_md, row[1:])] for row in rows]
    return md_table(headers, cells).splitlines()


def _md_kernel_row(k: KernelRow) -> list[str]:
    return kernel_cells(k, 90)


def render_diff_markdown(diff: Diff, *, top: int = 10) -> str:
    lines = [f"**Scaling:** {_md(diff.scaling)}", ""] if diff.scaling else []
    lines += ["### traceanalyze diff", "", f"{md_code(diff.base_source)} ({steps_text(diff.base_steps)}) → "
             f"{md_code(diff.new_source)} ({steps_text(diff.new_steps)})", "", _md(summary_line(diff)), ""]
    lines += [f"> ⚠️ **Warning:** {_md(warning)}" for warning in diff.warnings] + ([""] if diff.warnings else [])
    lines += _md_table(metric_cells(diff), METRIC_HEADERS) + [""]
    changed = diff.changed_kernels
    lines += [f"**Kernels that changed** (mean time per call, ±{100 * diff.min_change:g}% or more): {len(changed)}",
              ""]
    if changed:
        lines += _md_table([_md_kernel_row(k) for k in changed], KERNEL_HEADERS, code_first=True) + [""]
    lines += [f"**Top {top_kernels(diff, top)} by total time**", ""]
    if diff.kernels:
        lines += _md_table([_md_kernel_row(k) for k in diff.kernels[:top]], KERNEL_HEADERS, code_first=True) + [""]
    if diff.notes:
        lines += ["Notes:", "", *(f"- {_md(note)}" for note in diff.notes), ""]
    return "\n".join(lines) + "\n"
