"""The pandas edge of the HTA facade: polars frames → the pandas frames HTA returns, and its plots.

pandas is built from numpy columns (no pyarrow needed). HTA's µs columns are integers when every
event was rounded to whole µs; `to_pandas(..., whole_us=True)` gives int64 where a column's values
are all whole, as HTA's do then."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import polars as pl


def to_pandas(frame: pl.DataFrame, *, whole_us: tuple[str, ...] = (), index: str | None = None) -> Any:
    """`frame` as a pandas DataFrame; the columns in `whole_us` become int64 when all values are
    whole numbers (HTA's rounded µs); a column of Python objects is typed as pandas infers it;
    `index`: a column to make the index."""
    import pandas as pd

    columns = {}
    for name in frame.columns:
        values = frame[name].to_numpy()
        if name in whole_us and values.dtype.kind == "f" and values.size and np.isfinite(values).all() \
                and (values == np.round(values)).all():
            values = values.astype(np.int64)
        elif values.dtype == object:  # values as written (HTA's `pid`, `tid`): numeric when all are numbers
            values = pd.Series(values.tolist(), dtype=None).to_numpy()
        columns[name] = values
    result = pd.DataFrame(columns, columns=frame.columns)
    return result.set_index(index) if index is not None else result


def show(figure_maker, *args: Any, **kwargs: Any) -> bool:
    """Draw a plotly figure (`figure_maker(px, go, *args, **kwargs)` → figure), as HTA's
    `visualize=True` does; without plotly, say so on stderr and draw nothing. True if drawn."""
    try:
        import plotly.express as px
        import plotly.graph_objects as go
    except ImportError:
        print("traceanalyze.hta: visualize=True needs plotly (pip install plotly); returning the frame only",
              file=sys.stderr)
        return False
    figure = figure_maker(px, go, *args, **kwargs)
    figure.show()
    return True


def bar(px, go, frame, *, x: str, y, title: str, color: str | None = None):
    """HTA's bar chart of a per-rank or per-stream frame."""
    return px.bar(frame, x=x, y=y, color=color, title=title)


def pie(px, go, frame, *, values: str, names: str, title: str):
    """HTA's pie of the kernel-type shares."""
    return px.pie(frame, values=values, names=names, title=title)


def scatter(px, go, frame, *, x: str, y: str, title: str):
    """HTA's launch statistics plots (one of them: delay against duration)."""
    return px.scatter(frame, x=x, y=y, title=title)
