"""Columns of one value in every row are kept once (a polars scalar column), not once per row:
the same frames, less memory (`scalar_columns.constants_as_scalars`, `load.assemble.column_by_column`);
and keys of one value are left out of sorts, windows and joins (`varying_keys`, `join_keys`)."""

from __future__ import annotations

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from tests.shared_traces import shared_trace
from traceanalyze.load import load_trace
from traceanalyze.load.assemble import column_by_column
from traceanalyze.scalar_columns import constant_columns, constants_as_scalars, join_keys, varying_keys

ROWS = 100_000


def frame() -> pl.DataFrame:
    return pl.DataFrame({
        "varies": pl.int_range(ROWS, eager=True),
        "rank": pl.repeat(3, ROWS, dtype=pl.Int32, eager=True),
        "missing": pl.repeat(None, ROWS, dtype=pl.Int64, eager=True),
        "shapes": pl.repeat(None, ROWS, dtype=pl.List(pl.List(pl.Int64)), eager=True),
        "flag": pl.repeat(True, ROWS, eager=True),
        "some_null": pl.Series([None] + [1] * (ROWS - 1), dtype=pl.Int64),
        "name": pl.repeat("aten::mm", ROWS, eager=True).cast(pl.Categorical()),
    })


def test_constant_columns_are_the_all_null_and_single_valued_ones():
    assert sorted(constant_columns(frame())) == ["flag", "missing", "rank", "shapes"]
    assert constant_columns(frame().head(1)) == {}  # too short to say


def test_a_float_column_with_a_nan_or_a_zero_is_not_taken_for_one_value():
    # min and max skip NaN and see -0.0 and 0.0 as equal: either would put another value in a row
    floats = pl.DataFrame({
        "nan": [1.5, float("nan"), 1.5],
        "signed_zeros": [-0.0, 0.0, 0.0],
        "zeros": [0.0, 0.0, 0.0],
        "all_nan": [float("nan")] * 3,
        "one_value": [2.5, 2.5, 2.5],
        "infinite": [float("inf")] * 3,
    })
    assert sorted(constant_columns(floats)) == ["infinite", "one_value"]
    compact = constants_as_scalars(floats)
    assert_frame_equal(compact, floats)
    assert [str(v) for v in compact["signed_zeros"]] == ["-0.0", "0.0", "0.0"]


def test_scalar_columns_are_the_same_frame_in_less_memory():
    original = frame()
    compact = constants_as_scalars(original)
    assert_frame_equal(compact, original)
    materialised = original.select("rank", "missing", "shapes", "flag").estimated_size()
    assert original.estimated_size() - compact.estimated_size() >= 0.9 * materialised
    # filters, gathers and sorts keep them scalars; the values stay right
    kept = compact.filter(pl.col("varies") % 7 == 0).sort("varies", descending=True)
    assert_frame_equal(kept, original.filter(pl.col("varies") % 7 == 0).sort("varies", descending=True))
    assert kept.estimated_size() < kept.select("varies", "some_null", "name").estimated_size() + 1000


@pytest.mark.parametrize("transform", [lambda c: c.rechunk(),
                                       lambda c: c.gather(pl.int_range(ROWS, 0, -1, eager=True) - 1)])
def test_column_by_column_keeps_constants_once(transform):
    original = frame()
    expected = pl.DataFrame([transform(original.get_column(c)) for c in original.columns])
    held = [original]
    result = column_by_column(held, transform)
    assert held == []  # handed over: the caller holds no reference that would keep the old columns
    assert_frame_equal(result, expected)
    constant = expected.select("rank", "missing", "shapes", "flag").estimated_size()
    assert result.estimated_size() < expected.estimated_size() - 0.9 * constant


def test_a_frame_of_constants_only_keeps_its_height():
    only = frame().select("rank", "missing")
    assert_frame_equal(column_by_column([only], lambda c: c.rechunk()), only)


def test_a_loaded_trace_keeps_its_unrecorded_columns_once():
    """hta_a100_nccl_rank0 records no shapes, no flops and one pid: its cpu_ops table holds them once."""
    ops = load_trace(shared_trace("hta_a100_nccl_rank0.json.gz"), cache=False).cpu_ops
    unrecorded = ["rank", "pid", "input_dims", "input_types", "flops"]
    assert ops.estimated_size() - ops.drop(unrecorded).estimated_size() < 1000  # before any is taken out as a Series
    materialised = pl.DataFrame([ops.get_column(c) for c in ops.columns])
    assert_frame_equal(ops, materialised)
    assert all(ops[c].null_count() == ops.height or ops[c].n_unique() == 1 for c in unrecorded)


def test_a_column_whose_ends_agree_is_read_in_full():
    # only the columns whose first and last rows agree are read in full; those may still vary
    ends_agree = pl.DataFrame({"middle_differs": [5, 7, 5], "one_value": [4, 4, 4], "ends_differ": [1, 1, 2]})
    assert sorted(constant_columns(ends_agree)) == ["one_value"]


def test_finding_the_null_columns_leaves_scalar_columns_scalars():
    # a scalar column taken out as a Series would make its rows, and polars would keep them
    compact = constants_as_scalars(frame())
    size = compact.estimated_size()
    again = constants_as_scalars(compact, nulls_only=True)
    assert compact.estimated_size() == size and again.estimated_size() == size
    assert_frame_equal(again, frame())


def test_varying_keys_leave_out_the_keys_of_one_value():
    keyed = frame()
    assert varying_keys(keyed, ["rank", "varies"]) == ["varies"]
    assert varying_keys(keyed, ["missing", "flag", "varies"]) == ["varies"]  # all null is one value
    assert varying_keys(keyed, ["some_null", "varies"]) == ["some_null", "varies"]  # null and 1: two values
    assert varying_keys(keyed, ["rank", "flag"]) == ["flag"]  # every key constant: the last one stays
    assert varying_keys(keyed, ["name", "varies"]) == ["name", "varies"]  # only integer and boolean keys are checked
    assert varying_keys(keyed.clear(), ["rank", "varies"]) == ["rank", "varies"]


@pytest.mark.parametrize("ranks", [[0], [0, 1]])
def test_grouping_and_sorting_on_the_varying_keys_is_the_same_as_on_all(ranks):
    rows = pl.DataFrame({"rank": [ranks[i % len(ranks)] for i in range(12)], "device": [0] * 12,
                         "stream": [7, 8, 9] * 4, "start_ns": list(range(12, 0, -1))},
                        schema_overrides={"rank": pl.Int32})
    keys = ["rank", "device", "stream"]
    kept = varying_keys(rows, keys)
    assert kept == (["stream"] if len(ranks) == 1 else ["rank", "stream"])
    assert_frame_equal(rows.sort(*kept, "start_ns"), rows.sort(*keys, "start_ns"))
    over = pl.col("start_ns").rank("ordinal")
    assert_frame_equal(rows.with_columns(over.over(kept).alias("nth")), rows.with_columns(over.over(keys).alias("nth")))


def test_join_keys_leave_out_only_one_same_non_null_value_on_both_sides():
    left = pl.DataFrame({"rank": [1, 1], "device": [None, None], "correlation": [5, 6]},
                        schema_overrides={"device": pl.Int32})
    assert join_keys(left, left, ["rank", "device", "correlation"]) == ["device", "correlation"]  # nulls never match
    other_rank = left.with_columns(pl.lit(2).alias("rank"))
    assert join_keys(left, other_rank, ["rank", "correlation"]) == ["rank", "correlation"]  # different ranks: no pair
    assert join_keys(left, left.clear(), ["rank", "correlation"]) == ["rank", "correlation"]
    assert join_keys(left.select("rank"), left.select("rank"), ["rank"]) == ["rank"]  # the last key stays
    right = pl.DataFrame({"rank": [1, 1], "correlation": [6, 7], "value": ["b", "c"]})
    kept = join_keys(left, right, ["rank", "correlation"])
    assert kept == ["correlation"]
    assert_frame_equal(left.drop("device").join(right.select(*kept, "value"), on=kept, how="left",
                                                maintain_order="left"),
                       left.drop("device").join(right, on=["rank", "correlation"], how="left", maintain_order="left"))


def test_a_short_frame_keeps_its_columns_as_they_are():
    # finding the constants of a small rank's tables cost more than their rows take (1-2 ms a table)
    from traceanalyze import scalar_columns

    short = frame().head(scalar_columns.SCALAR_MIN_ROWS - 1)
    assert constants_as_scalars(short) is short and constants_as_scalars(short, nulls_only=True) is short
    long = frame().head(scalar_columns.SCALAR_MIN_ROWS)
    assert long.estimated_size() - constants_as_scalars(long).estimated_size() >= 0.9 * long.select(
        "rank", "missing", "flag").estimated_size()
