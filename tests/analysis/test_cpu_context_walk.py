"""The walk up the op tree of `cpu_context.enclosing_op`: the compiled walk and the polars one
give the same op for every point, on random trees with ops that are and are not accepted, unknown
flags, ids that are not consecutive, and candidates and parents outside the table."""

from __future__ import annotations

import random

import polars as pl
import pytest

from traceanalyze.analysis import cpu_context
from traceanalyze.analysis.cpu_context import _native_walk, _walk_vectorised
from traceanalyze.analysis.op_tree import OpTree
from traceanalyze.native import compiled

_native = compiled() or pytest.skip("the C helpers are not built (no C compiler at install) or TRACEANALYZE_NO_NATIVE "
                                    "is set",
                                    allow_module_level=True)


def random_tree(rng: random.Random, n: int, dense: bool) -> pl.DataFrame:
    ids = list(range(100, 100 + n)) if dense else sorted(rng.sample(range(10 * n), n))
    parents = [None if i == 0 or rng.random() < 0.1 else ids[rng.randrange(0, i)] for i in range(n)]
    parents = [p if rng.random() > 0.02 else 10**9 for p in parents]  # a parent not in the table
    return pl.DataFrame(
        {
            "op_id": ids,
            "end_ns": [rng.choice([None] + [rng.randrange(0, 1000)] * 30) for _ in range(n)],
            "parent_id": parents,
            "ok": [rng.choice([True, True, False, None] if rng.random() < 0.05 else [True, False]) for _ in range(n)],
        },
        schema={"op_id": pl.Int64, "end_ns": pl.Int64, "parent_id": pl.Int64, "ok": pl.Boolean},
    )


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("dense", [True, False])
def test_compiled_walk_is_the_polars_walk(seed, dense):
    rng = random.Random(seed)
    matches = random_tree(rng, 3000, dense)
    ids = matches["op_id"].to_list()
    located = pl.DataFrame(
        {
            "point_id": range(5000),
            "time_ns": [rng.randrange(0, 1000) for _ in range(5000)],
            "candidate": [rng.choice(ids + [None, 10**9]) for _ in range(5000)],
        },
        schema={"point_id": pl.Int64, "time_ns": pl.Int64, "candidate": pl.Int64},
    )
    ops = matches.drop("ok")
    native = _native_walk(_native, located, ops, OpTree.of(ops))(matches).sort("point_id")
    vectorised = _walk_vectorised(located, matches).sort("point_id")
    assert native.rows() == vectorised.rows()
    assert native.height > 100  # the trees are deep and accepting enough for the walk to find ops


def test_large_inputs_take_the_compiled_walk(monkeypatch):
    calls = []
    monkeypatch.setattr(cpu_context, "NATIVE_MIN_POINTS", 1)
    monkeypatch.setattr(cpu_context, "_native_walk",
                        lambda _native, located, ops, tree: calls.append(1)
                        or (lambda matches: _walk_vectorised(located, matches)))
    ops = pl.DataFrame({"rank": [0, 0], "op_id": [1, 2], "pid": [1, 1], "tid": [1, 1], "start_ns": [0, 10],
                        "end_ns": [100, 20], "parent_id": [None, 1], "category": ["cpu_op", "cpu_op"],
                        "name": ["a", "b"]})
    points = pl.DataFrame({"point_id": [7], "rank": [0], "pid": [1], "tid": [1], "time_ns": [15]})
    assert cpu_context.enclosing_op(points, ops).rows() == [(7, 2)]
    assert calls == [1]
