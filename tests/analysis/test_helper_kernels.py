"""`roofline._with_helper_kernels` groups only the ops that have a helper kernel (the others give
each kernel `share`, as `kernel_roofline` makes it: its part of its op's kernel time): it gives
what grouping every op gives (the formulation it replaced), on random ops with and without
helpers."""

from __future__ import annotations

import random

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from traceanalyze.analysis.roofline import _helper_named, _helper_shares, _with_helper_kernels


def every_op(frame: pl.DataFrame) -> pl.DataFrame:
    """Every op grouped for its non-helper kernel time."""
    named = _helper_named(frame)
    return _helper_shares(named, named)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("helpers", [False, True])
def test_helper_shares_are_those_of_every_op(seed, helpers):
    rng = random.Random(seed)
    names = ["sgemm_128x64", "elementwise_kernel", None] + (["nchwToNhwcKernel", "splitKreduce_kernel"] if helpers
                                                            else [])
    rows = []
    for op in range(60):
        flops = rng.choice([None, 0.0, 1e9])
        for _ in range(rng.randrange(1, 5)):
            rows.append((None if rng.random() < 0.1 else op, rng.choice(["kernel", "kernel", "memcpy"]),
                         rng.choice(names),
                         rng.choice([0, 3, 10]), flops))
    frame = pl.DataFrame(rows, schema={"cost_op_id": pl.Int64, "kind": pl.String, "name": pl.String,
                                       "duration_ns": pl.Int64,
                                       "op_flops": pl.Float64}, orient="row")
    # `share` as `kernel_roofline` makes it: the kernel's part of its op's kernel time
    per_op = (frame.filter(pl.col("cost_op_id").is_not_null() & (pl.col("kind") == "kernel")).group_by("cost_op_id")
              .agg(pl.col("duration_ns").sum().alias("op_kernel_ns"), pl.len().alias("op_kernels")))
    frame = frame.join(per_op, on="cost_op_id", how="left", maintain_order="left").with_columns(
        pl.when(pl.col("op_kernel_ns") > 0).then(pl.col("duration_ns") / pl.col("op_kernel_ns"))
        .otherwise(1 / pl.col("op_kernels")).alias("share")).drop("op_kernel_ns", "op_kernels")
    assert_frame_equal(_with_helper_kernels(frame), every_op(frame))
