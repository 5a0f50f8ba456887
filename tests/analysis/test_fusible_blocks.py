"""`attribution.fusible_blocks` makes only the blocks that hold a fusible kernel: it gives what
grouping every kernel into its block and keeping the fusible ones gives (the formulation it
replaced), on random streams of kernels."""

from __future__ import annotations

import random

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from traceanalyze.analysis.attribution import fusible_blocks

STREAM = ["rank", "device", "stream"]


def every_block(kernels: pl.DataFrame, fusible_rows: pl.Series) -> pl.DataFrame:
    """Every kernel grouped into its block, the blocks before each fusible one read by a shift."""
    new_block = (pl.col("op_id") != pl.col("op_id").shift(1).over(STREAM)).fill_null(True)
    return (
        kernels.with_columns(pl.col("_row").is_in(fusible_rows.implode()).alias("_fusible"),
                             new_block.cast(pl.Int64).cum_sum().over(STREAM).alias("_block"))
        .group_by(*STREAM, "_block", maintain_order=True)
        .agg(pl.col("op_id").first(), pl.col("_row").first(), pl.col("_fusible").all(),
             pl.col("cost_model").cast(pl.String).first().alias("_family"),
             pl.len().alias("kernels"), pl.col("start_ns").min(), pl.col("duration_ns").sum(), pl.col("bytes").sum())
        .sort(*STREAM, "_block")
        .with_columns(pl.col("_fusible").shift(1).over(STREAM).alias("_previous_fusible"))
        .filter(pl.col("_fusible"))
    )


@pytest.mark.parametrize("seed", range(8))
def test_fusible_blocks_are_those_of_every_block(seed):
    rng = random.Random(seed)
    rows = []
    for stream in range(rng.choice([1, 3])):
        op, start = 0, 0
        for _ in range(rng.randrange(1, 400)):
            op += rng.random() < 0.4  # a few kernels per op
            start += rng.randrange(1, 50)
            rows.append((0, stream % 2, 7 + stream, op * 10 + stream, start, rng.randrange(1, 9),
                         rng.randrange(0, 1000),
                         rng.choice(["elementwise", "fill", "norm"])))
    kernels = pl.DataFrame(rows, schema={"rank": pl.Int32, "device": pl.Int32, "stream": pl.Int64, "op_id": pl.Int64,
                                         "start_ns": pl.Int64, "duration_ns": pl.Int64, "bytes": pl.Int64,
                                         "cost_model": pl.String},
                           orient="row").with_row_index("_row").sort(*STREAM, "start_ns")
    share = rng.choice([0.1, 0.6, 0.95, 1.0])
    fusible_rows = kernels.filter(pl.Series([rng.random() < share for _ in range(kernels.height)]))["_row"]
    expected = every_block(kernels, fusible_rows)
    assert_frame_equal(fusible_blocks(kernels, fusible_rows, STREAM), expected)
    if expected.height:
        assert expected["_previous_fusible"].drop_nulls().n_unique() >= 1
