"""What the renderers read, computed in `report.views` from a rank's few rows in Python: the
same as the polars query it replaced (a join, a sort, a filter)."""

from __future__ import annotations

import polars as pl
from hypothesis import given
from hypothesis import strategies as st

from traceanalyze.report import views


@given(st.lists(st.tuples(st.integers(0, 3), st.one_of(st.none(), st.integers(1, 4))), max_size=8))
def test_deepest_queue_is_the_first_of_the_deepest(rows):
    queue = pl.DataFrame(rows, schema={"stream": pl.Int64, "max_depth": pl.Int64}, orient="row")
    expected = queue.sort("max_depth", descending=True, maintain_order=True).row(0, named=True) if rows else None
    assert views.deepest_queue(queue) == expected


@given(st.lists(st.tuples(st.integers(0, 2), st.one_of(st.none(), st.integers(0, 3))), max_size=6, unique=True),
       st.lists(st.tuples(st.integers(0, 2), st.integers(0, 3), st.one_of(st.none(), st.text(max_size=3))),
                max_size=6))
def test_named_idle_is_the_join(idle_keys, devices):
    idle = pl.DataFrame(idle_keys, schema={"rank": pl.Int32, "device": pl.Int32}, orient="row").with_row_index("row")
    named = pl.DataFrame(devices, schema={"rank": pl.Int32, "device": pl.Int32, "name": pl.String}, orient="row")
    joined = idle.join(named, on=["rank", "device"], how="left").sort("row")
    assert views.named_idle(idle, named).sort("row").equals(joined)
