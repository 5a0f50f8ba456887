"""`traceanalyze diff --format html`: the diff's tables in the report's page style, with the two
runs' regime attributions as bars side by side."""

from __future__ import annotations

from traceanalyze.diff.compare import Diff
from traceanalyze.renderers import plots
from traceanalyze.gate.verdict import steps_text
from traceanalyze.diff.render_text import KERNEL_HEADERS, METRIC_HEADERS, kernel_cells, metric_cells, top_kernels
from traceanalyze.renderers.html import page
from traceanalyze.renderers.html_text import esc

REGIME_KEYS = tuple(plots.REGIME_COLOURS)


def _table(rows: list[list[str]], headers: list[str], *, code_first: bool = False) -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = []
    for row in rows:
        cells = [f"<td><code>{esc(row[0])}</code></td>" if code_first else f"<td>{esc(row[0])}</td>"]
        cells += [f'<td class="num">{esc(cell)}</td>' for cell in row[1:]]
        body.append(f"<tr>{''.join(cells)}</tr>")
    return f'<div class="table-wrap"><table><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'


def _regime_bars(diff: Diff) -> str:
    shares = {row.name.removeprefix("attribution."): (row.base, row.new) for row in diff.metrics
              if row.name.startswith("attribution.")}
    if not shares or all(b is None and n is None for b, n in shares.values()):
        return ""
    by_name = {row.name: row for row in diff.metrics}
    rows = []
    for label, index in (("base", 0), ("new", 1)):
        busy_us = (by_name["gpu_busy_us"].base, by_name["gpu_busy_us"].new)[index] if "gpu_busy_us" in by_name else None
        idle = ((by_name["idle_fraction"].base, by_name["idle_fraction"].new)[index]
                if "idle_fraction" in by_name else None)
        # the window, so that bar labels and tooltips read as times: busy / (1 − idle fraction)
        window_ns = busy_us * 1000 / (1 - idle) if busy_us and idle is not None and idle < 1 else 1.0
        values = {key: (shares.get(key, (None, None))[index] or 0.0) * window_ns for key in REGIME_KEYS}
        rows.append(plots.BarRow(label, values, sum(values.values())))
    svg = plots.stacked_bars(rows, plots.REGIME_COLOURS, kind="diff-regimes",
                             title="Where the GPU time goes: base and new")
    caption = "Shares of each run's window (overhead = GPU idle)."
    return f'<figure class="chart">{svg}<figcaption>{caption}</figcaption></figure>'


def render_diff_html(diff: Diff, *, top: int = 10) -> str:
    header = (f"<code>{esc(diff.base_source)}</code> ({steps_text(diff.base_steps)}) → "
              f"<code>{esc(diff.new_source)}</code> ({steps_text(diff.new_steps)})")
    header += "".join(f'<p class="warning" style="color:#a40000"><strong>Warning:</strong> {esc(warning)}</p>'
                      for warning in diff.warnings)
    if diff.scaling:
        header = f"<p><strong>Scaling:</strong> {esc(diff.scaling)}</p>" + header
    changed = diff.changed_kernels
    unchanged = sum(1 for k in diff.kernels if k.status == "unchanged")
    body = ["<h2>What moved</h2>", _regime_bars(diff), _table(metric_cells(diff), METRIC_HEADERS)]
    body.append(f"<h2>Kernels that changed</h2><p>mean time per call, ±{100 * diff.min_change:g}% or more: "
                f"{len(changed)} changed, {unchanged} unchanged</p>")
    if changed:
        body.append(_table([kernel_cells(k, 90) for k in changed], KERNEL_HEADERS, code_first=True))
    body.append(f"<h2>Top {top_kernels(diff, top)} by total time</h2>")
    body.append(_table([kernel_cells(k, 90) for k in diff.kernels[:top]], KERNEL_HEADERS, code_first=True)
                if diff.kernels else "<p>no kernels in either report</p>")
    if diff.notes:
        body.append("<h2>Notes</h2><ul>" + "".join(f"<li>{esc(note)}</li>" for note in diff.notes) + "</ul>")
    return page(
        "traceanalyze diff", "What changed between two runs", f'<div class="meta">{header}</div>', "\n".join(body)
    )
