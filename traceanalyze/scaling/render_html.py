"""The scaling report as a self-contained HTML page in the report's style, with the chart."""

from __future__ import annotations

from traceanalyze.renderers.html import page
from traceanalyze.renderers.html_text import esc
from traceanalyze.scaling import tables
from traceanalyze.scaling.chart import scaling_chart
from traceanalyze.scaling.model import Scaling


def _table(headers: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + f"<td>{esc(row[0])}</td>" + "".join(f'<td class="num">{esc(c)}</td>' for c in row[1:])
                   + "</tr>" for row in rows)
    return f'<div class="table-wrap"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def render_scaling_html(scaling: Scaling) -> str:
    header = f'<div class="meta">{esc(tables.title(scaling))}</div><p><strong>{esc(scaling.headline)}</strong></p>'
    body = [f'<figure class="chart">{scaling_chart(scaling)}</figure>', _table(*tables.run_table(scaling)),
            "<h2>Fit</h2><ul>" + "".join(f"<li>{esc(line)}</li>" for line in tables.fit_lines(scaling)) + "</ul>",
            "<h2>Time per step by regime</h2>", _table(*tables.regime_table(scaling)),
            "<h2>Times per step (medians over the steps)</h2>", _table(*tables.time_table(scaling))]
    shifted = tables.intensity_table(scaling)
    if shifted is not None:
        body += ["<h2>Intensity changes with size</h2>", f"<p>{esc(tables.INTENSITY_LINE)}</p>", _table(*shifted)]
    if scaling.notes:
        body.append("<h2>Notes</h2><ul>" + "".join(f"<li>{esc(note)}</li>" for note in scaling.notes) + "</ul>")
    return page("traceanalyze scaling", "Does the time grow with the work?", header, "\n".join(body))
