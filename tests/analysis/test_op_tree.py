"""`analysis.op_tree`: positions of op ids, every op above a set of ops, the nearest accepted op
up each chain; exact answers on small trees, consecutive ids or not."""

from __future__ import annotations

import polars as pl
import pytest

from traceanalyze.analysis import op_tree
from traceanalyze.analysis.op_tree import OpTree, positions_in


@pytest.fixture(params=["polars", "native"])
def walks(request, monkeypatch):
    """The walks up the tree in polars, and in C (`_native.enclose`) however few they are."""
    if request.param == "native":
        if op_tree.compiled() is None:
            pytest.skip("the compiled module is not built")
        monkeypatch.setattr(op_tree, "NATIVE_MIN_STARTS", 0)
    return request.param

#        10
#       /  \
#     11    14
#    /  \     \
#  12    13    15        16 (a root alone)
PARENTS = {10: None, 11: 10, 12: 11, 13: 11, 14: 10, 15: 14, 16: None}


def ops_frame(order: list[int]) -> pl.DataFrame:
    return pl.DataFrame({"op_id": order, "parent_id": [PARENTS[i] for i in order]},
                        schema={"op_id": pl.Int64, "parent_id": pl.Int64})


ORDERS = {"consecutive": [10, 11, 12, 13, 14, 15, 16], "shuffled": [15, 10, 16, 13, 11, 14, 12]}


@pytest.mark.parametrize("order", ORDERS.values(), ids=ORDERS.keys())
def test_positions_of_ids_and_of_unknown_ids(order):
    ops = ops_frame(order)
    found = positions_in(ops["op_id"])(pl.Series([12, 99, None, 10], dtype=pl.Int64))
    assert found.to_list() == [order.index(12), None, None, order.index(10)]


@pytest.mark.parametrize("order", ORDERS.values(), ids=ORDERS.keys())
def test_ancestors_are_every_op_above_the_start_ones(order):
    tree = OpTree.of(ops_frame(order))
    ids = lambda positions: sorted(tree.ids.gather(positions).to_list())  # noqa: E731
    assert ids(tree.ancestors(tree.positions(pl.Series([12])))) == [10, 11]
    assert ids(tree.ancestors(tree.positions(pl.Series([12, 15])))) == [10, 11, 14]
    # a start op counts when it is above another start op; roots have nothing above
    assert ids(tree.ancestors(tree.positions(pl.Series([11, 13])))) == [10, 11]
    assert ids(tree.ancestors(tree.positions(pl.Series([10, 16])))) == []


@pytest.mark.parametrize("order", ORDERS.values(), ids=ORDERS.keys())
def test_nearest_accepted_op_up_each_chain_itself_included(order, walks):
    tree = OpTree.of(ops_frame(order))
    accepted = tree.mask(tree.positions(pl.Series([11, 15])))
    start = pl.concat([tree.positions(pl.Series([12, 11, 15, 14, 16])), pl.Series([-1], dtype=pl.Int64)])
    found = tree.nearest(start, accepted)
    assert [tree.ids[p] if p >= 0 else None for p in found] == [11, 11, 15, None, None, None]


def test_a_parent_cycle_ends_the_walks(walks):
    # never made by the loader's nesting; a hand-made table must still not loop forever
    ops = pl.DataFrame({"op_id": [1, 2, 3], "parent_id": [2, 3, 1]})
    tree = OpTree.of(ops)
    assert sorted(tree.ids.gather(tree.ancestors(pl.Series([0], dtype=pl.Int64))).to_list()) == [1, 2, 3]
    assert tree.nearest(pl.Series([0, 1], dtype=pl.Int64),
                        tree.mask(pl.Series([], dtype=pl.Int64))).to_list() == [-1, -1]


def test_an_unknown_acceptance_ends_the_walk(walks):
    tree = OpTree.of(ops_frame(ORDERS["consecutive"]))
    accepted = pl.Series([True, None, False, False, False, False, False], dtype=pl.Boolean)  # 11 unknown
    start = tree.positions(pl.Series([12, 15, 10]))
    assert tree.nearest(start, accepted).to_list() == [-1, 0, 0]  # 12 → 11 (unknown): none; 15 → 14 → 10
