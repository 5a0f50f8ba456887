"""Names bounded in length: a kernel, op, annotation, step or device name longer than
`MAX_NAME_CHARS` keeps its first `MAX_NAME_CHARS` characters and says how many it dropped
(`…[+9,999,000 characters]`). Real names are at most a few thousand characters (templated CUDA
kernels); a 200 MB name fits under the loader's event limit, and every output repeats names
(JSON, HTML, Markdown, the gate's step summary), so one such name made 6 GB of JSON.

Applied once, to the loaded tables (`bounded_frame`, in `assemble.TraceTables.finish`), before
anything else sees them: the
analyses, the cache and every output then hold the bounded names only.
"""

from __future__ import annotations

import polars as pl

MAX_NAME_CHARS = 16_384  # the longest real name of the shared traces: 5,123 (a templated CUDA kernel)


def _bounded(series: pl.Series, max_chars: int) -> pl.Series | None:
    """`series` (String or Categorical) with every value over `max_chars` cut, or None when none is."""
    texts = series.unique().cast(pl.String) if series.dtype == pl.Categorical else series
    longest = texts.str.len_chars().max()
    if longest is None or longest <= max_chars:  # type: ignore[operator]
        return None
    plain = series.cast(pl.String)
    length = plain.str.len_chars()
    cut = pl.select(
        pl.when(length > max_chars)
        .then(pl.concat_str([plain.str.slice(0, max_chars), pl.lit("…[+"),
                             (length - max_chars).map_elements(lambda n: f"{n:,}", return_dtype=pl.String),
                             pl.lit(" characters]")]))
        .otherwise(plain)
    ).to_series().rename(series.name)
    return cut.cast(series.dtype)


def bounded_frame(frame: pl.DataFrame, max_chars: int = MAX_NAME_CHARS) -> pl.DataFrame:
    """`frame` with every String or Categorical column's values bounded (the same frame when none
    is over the bound: the usual case costs one pass over the distinct names)."""
    texts = [name for name, dtype in frame.schema.items() if dtype == pl.String or dtype == pl.Categorical]
    if texts and frame.height <= IN_PYTHON_MAX_ROWS:  # the longest of each column measured in Python: no query
        longest = [max((len(value) for value in frame[name].to_list() if value is not None), default=None)
                   for name in texts]
        texts = [name for name, length in zip(texts, longest) if length is not None and length > max_chars]
    changed = {}
    for name in texts:
        cut = _bounded(frame[name], max_chars)
        if cut is not None:
            changed[name] = cut
    return frame.with_columns(**changed) if changed else frame


# a frame of at most this many rows has its names measured in Python (a small rank's six tables:
# 1 ms less than a pass over each column's distinct names)
IN_PYTHON_MAX_ROWS = 4096
