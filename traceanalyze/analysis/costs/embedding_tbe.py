"""FLOPs and bytes of fbgemm's table-batched embedding (TBE) lookups and their fused backward.

`fbgemm::split_embedding_codegen_lookup_<optimizer>_function` (and
`fbgemm::dense_embedding_codegen_lookup_function`) look up T tables packed into one weight tensor
for a batch of B bags; the backward, the autograd node `CppNode<SplitLookupFunction_<optimizer>_Op>`,
updates the looked-up rows with the optimizer in place. From the forward's recorded arguments:

- T = numel(D_offsets) − 1, B = (numel(offsets) − 1) / T, L = numel(indices) (total lookups);
- the output is `[B, total_D]`: `total_D` is a scalar argument, recorded only with Concrete Inputs;
  otherwise it is the shape of the gradient the paired backward node receives (`autograd_pairs`).

Each table has its own embedding dim and the trace does not say which lookup hits which table, so
a lookup is counted at the mean dim D̄ = total_D / T (exact when the tables share a dim or have
equal pooling factors; an estimate otherwise, said in the cost's note). Definitions and the FLOP
counts per optimizer: docs/flops.md.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from traceanalyze.analysis.costs.embedding import EMBEDDING
from traceanalyze.analysis.costs.family import OpCost
from traceanalyze.analysis.costs.tensors import Args, Tensor, Unmodelled, total_bytes

FORWARD_NAME = re.compile(r"^fbgemm::(?:split_embedding_codegen_lookup_(\w+?)|dense_embedding_codegen_lookup)"
                          r"_function$")
BACKWARD_NAME = re.compile(r"^torch::autograd::CppNode<SplitLookupFunction_(\w+?)_Op>$")

# FLOPs per updated weight element of the optimizer fused into the backward (after the gradient
# accumulation): sgd w −= lr·g (2); adagrad m += g² (2), w −= lr·g/(√m + ε) (3); rowwise adagrad
# m += mean(g²) over the row (2), w −= lr·g/(√m + ε) with one scale per row (2); dense: none, the
# gradient is returned.
OPTIMIZER_FLOPS = {"dense": 0, "sgd": 2, "adagrad": 5, "rowwise_adagrad": 4}


@dataclass(frozen=True)
class _Layout:
    """Argument positions of one TBE forward signature."""

    tables: tuple[int, ...]  # dev, uvm, cache weights: the first non-empty one holds the rows
    weights_offsets: int
    d_offsets: int
    total_d: int
    indices: int
    offsets: int
    pooling_mode: int
    per_sample_weights: int
    metadata: tuple[int, ...]  # small per-table tensors the kernels read
    states_from: int | None  # optimizer state tensors start here


_SPLIT = _Layout(tables=(1, 2, 3), weights_offsets=5, d_offsets=6, total_d=7, indices=11, offsets=12,
                 pooling_mode=13, per_sample_weights=14, metadata=(4, 5, 6, 16), states_from=20)
_DENSE = _Layout(tables=(0,), weights_offsets=1, d_offsets=2, total_d=3, indices=7, offsets=8,
                 pooling_mode=9, per_sample_weights=10, metadata=(1, 2), states_from=None)


def optimizer_of(name: str) -> str | None:
    """The optimizer of a TBE forward or backward op name (`"rowwise_adagrad"`, `"dense"`), None if
    the name is not a TBE op."""
    match = FORWARD_NAME.match(name) or BACKWARD_NAME.match(name)
    if match is None:
        return None
    return (match.group(1) or "dense").lower()


def backward_node_name(forward_name: str) -> str | None:
    """The autograd node a TBE forward creates: `..._lookup_rowwise_adagrad_function` →
    `torch::autograd::CppNode<SplitLookupFunction_rowwise_adagrad_Op>`."""
    match = FORWARD_NAME.match(forward_name)
    if match is None:
        return None
    return f"torch::autograd::CppNode<SplitLookupFunction_{match.group(1) or 'Dense'}_Op>"


@dataclass(frozen=True)
class _Lookup:
    tables: int
    batch: int
    lookups: int
    weights: Tensor
    read: list[Tensor]  # indices, offsets, per-sample weights, per-table metadata
    weighted: bool
    states: list[Tensor]


def _lookup(args: Args, name: str) -> _Lookup:
    layout = _DENSE if optimizer_of(name) == "dense" else _SPLIT
    d_offsets, indices, offsets = (args.need(layout.d_offsets, "D_offsets"), args.need(layout.indices, "indices"),
                                   args.need(layout.offsets, "offsets"))
    tables = d_offsets.numel - 1
    if tables < 1 or (offsets.numel - 1) % tables:
        raise Unmodelled(f"shape arguments inconsistent: {offsets.numel} offsets for {tables} tables")
    pooling = args.scalar(layout.pooling_mode)
    if pooling == 2:
        raise Unmodelled("op not modelled: unpooled (sequence) table-batched embeddings")
    weights = next((t for i in layout.tables if (t := args.tensor(i)) is not None and t.numel), None)
    if weights is None:
        weights = args.need(layout.tables[0], "weights")
    per_sample = args.tensor(layout.per_sample_weights)
    weighted = per_sample is not None and per_sample.numel > 0
    read = [indices, offsets] + ([per_sample] if weighted
                                 else []) + [t for i in layout.metadata if (t := args.tensor(i))]
    states = []
    if layout.states_from is not None:
        states = [t for i in range(layout.states_from, len(args))
                  if (t := args.tensor(i)) is not None and t.numel and t.cls in ("fp32", "fp16", "bf16")]
    return _Lookup(tables, (offsets.numel - 1) // tables, indices.numel, weights, read, weighted, states)


def _output(args: Args, name: str, look: _Lookup, output: tuple[Sequence[int], str] | None) -> Tensor:
    """The forward's output `[B, total_D]`: from the paired gradient when given, else from the
    recorded `total_D` (float)."""
    if output is not None:
        shape, type_name = output
        out = Tensor(tuple(shape), type_name)
    else:
        total_d = args.scalar((_DENSE if optimizer_of(name) == "dense" else _SPLIT).total_d)
        if not isinstance(total_d, int) or isinstance(total_d, bool):
            raise Unmodelled("shape arguments incomplete: total_D not recorded (no Concrete Inputs) "
                              "and no backward node pairs with this lookup")
        out = Tensor((look.batch, total_d), "float")
    if len(out.shape) != 2 or out.shape[0] != look.batch or out.shape[1] < look.tables:
        raise Unmodelled(f"shape arguments inconsistent: output {list(out.shape)} for {look.tables} tables "
                          f"of batch {look.batch}")
    return out


def _mean_dim_note(look: _Lookup) -> str:
    return "" if look.tables == 1 else "lookups counted at the mean embedding dim total_D / T (estimate)"


def forward_cost(name: str, dims: Sequence[Any], types: Sequence[str], concrete: Sequence[str] | None,
                 output: tuple[Sequence[int], str] | None = None) -> OpCost | str:
    """A TBE forward: every lookup gathers D̄ values and adds them into its bag (weighted: a
    multiply-add). Reads the indices, offsets, per-sample weights, per-table metadata and the L·D̄
    gathered values; writes `[B, total_D]`. `output` is (shape, `Input type`) of the output when
    known from elsewhere (the paired backward's gradient)."""
    args = Args(dims, types, concrete, None)
    try:
        look = _lookup(args, name)
        out = _output(args, name, look, output)
        gathered = look.lookups * out.shape[1] / look.tables
        moved = total_bytes(look.read) + gathered * look.weights.itemsize + out.nbytes
        return OpCost(gathered * (2 if look.weighted else 1), moved, EMBEDDING, False, look.weights.cls,
                      _mean_dim_note(look))
    except Unmodelled as why:
        return str(why)
    except (KeyError, IndexError, TypeError, ValueError, ZeroDivisionError, AttributeError, OverflowError) as error:
        return f"shape arguments not understood: {type(error).__name__}"


def backward_cost(name: str, dims: Sequence[Any], types: Sequence[str], concrete: Sequence[str] | None,
                  grad: tuple[Sequence[int], str]) -> OpCost | str:
    """A TBE backward with its optimizer fused, from the forward's arguments (`name`, `dims`, …) and
    the gradient `[B, total_D]` it received. Every lookup accumulates its bag's D̄ gradient values
    into its row (weighted: a multiply-add) and the optimizer updates that row: reads the gradient
    once, the indices, offsets, per-sample weights and metadata, and reads and writes every looked-up
    row and its optimizer state (a state as large as the weights holds D̄ values per row, a smaller
    one — rowwise — one). Repeated rows are counted each time: fbgemm sorts the lookups and updates
    each distinct row once, and how many are distinct is not recorded, so this is an upper bound on
    the row traffic. The dense variant (no optimizer) zero-fills a full-size weight gradient and
    accumulates into it."""
    args = Args(dims, types, concrete, None)
    optimizer = optimizer_of(name)
    try:
        if optimizer not in OPTIMIZER_FLOPS:
            raise Unmodelled(f"op not modelled: table-batched embedding backward with optimizer {optimizer}")
        look = _lookup(args, name)
        out = _output(args, name, look, grad)
        dim = out.shape[1] / look.tables
        gathered = look.lookups * dim
        row_bytes = gathered * look.weights.itemsize
        if optimizer == "dense":
            moved = total_bytes(look.read) + out.nbytes + look.weights.nbytes + 2 * row_bytes
        else:
            state_bytes = sum((dim if s.numel == look.weights.numel else 1) * look.lookups * s.itemsize
                              for s in look.states)
            moved = total_bytes(look.read) + out.nbytes + 2 * row_bytes + 2 * state_bytes
        flops = gathered * ((2 if look.weighted else 1) + OPTIMIZER_FLOPS[optimizer])
        note = "; ".join(n for n in (_mean_dim_note(look), "repeated rows counted each time (upper bound)") if n)
        return OpCost(flops, moved, EMBEDDING, False, look.weights.cls, note)
    except Unmodelled as why:
        return str(why)
    except (KeyError, IndexError, TypeError, ValueError, ZeroDivisionError, AttributeError, OverflowError) as error:
        return f"shape arguments not understood: {type(error).__name__}"


# Ops costed here from other ops of the trace, not by the registry (name prefix → why).
COSTED_ELSEWHERE: dict[str, str] = {
    "fbgemm::split_embedding_codegen_lookup_": "a table-batched embedding: its output size comes from "
                                               "total_D (Concrete Inputs) or its backward node",
    "fbgemm::dense_embedding_codegen_lookup_": "a table-batched embedding: its output size comes from "
                                               "total_D (Concrete Inputs) or its backward node",
    "torch::autograd::CppNode<SplitLookupFunction_": "a table-batched embedding backward: its lookups are "
                                                     "its forward op's arguments, found by sequence number",
}
