"""The renderers: each turns the report model (`report.model.Report`) into one format, a job and a
rank alike, and computes nothing (`formats.RENDERERS` maps the --format names to them); below them,
the pieces that know no report (escaping, text tables, Markdown, document blocks, SVG, charts)."""
