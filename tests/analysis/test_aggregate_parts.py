"""`attribution.aggregate_parts` groups the roofline's rows without making each row's value sets
one-value lists first: it gives what `combine_parts` gives for those lists (the formulation it
replaced), on the roofline of the fixture and of every shared real trace, with nulls and repeated
values added."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from shared_traces import real_trace_params

from traceanalyze.analysis.attribution import NAME_KEYS, OP_KEYS, SINGLE, aggregate_parts, combine_parts, part_rows
from traceanalyze.analysis.roofline import kernel_roofline
from traceanalyze.load import load_trace

FIXTURES = sorted((Path(__file__).resolve().parents[2] / "fixtures").glob("*.json*"))


def as_lists(roofline: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """Each row's value sets as one-value lists, combined as other ranks' parts are."""
    rows = part_rows(roofline, by).with_columns(pl.concat_list(c).alias(c) for c in (*SINGLE, "roof"))
    return combine_parts(rows, by)


@pytest.mark.parametrize("path", [*(pytest.param(p, id=p.name) for p in FIXTURES), *real_trace_params()])
@pytest.mark.parametrize("by", [NAME_KEYS, OP_KEYS])
def test_parts_are_those_of_one_value_lists(path, by):
    roofline = kernel_roofline(load_trace(path, cache=False))
    if roofline.is_empty():
        pytest.skip("no GPU ops")
    # repeated rows, and peaks and roofs made null in some: value sets with nulls and repeats
    rows = pl.concat([roofline, roofline.with_columns(pl.lit(None, dtype=roofline.schema[c]).alias(c)
                                                      for c in (*SINGLE, "roof"))])
    assert_frame_equal(aggregate_parts(rows, by), as_lists(rows, by))
