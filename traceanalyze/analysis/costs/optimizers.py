"""Optimizers: `_foreach_*` list ops and fused optimizers (docs/flops.md)."""

from __future__ import annotations

import math

from traceanalyze.analysis.costs.family import CostFamily, Op, OpCost
from traceanalyze.analysis.costs.pointwise import flops_per_element
from traceanalyze.analysis.costs.tensors import Args, Tensor, Unmodelled, total_bytes

OPTIMIZER = CostFamily("optimizer")


_FOREACH_REDUCTIONS = {"norm": 2, "max": 1}


def foreach(args: Args, name: str) -> OpCost:
    """_foreach_<op>[_]: the elementwise op (or per-tensor reduction) applied to each list element."""
    op = name[len("_foreach_"):].rstrip("_")
    lists: list[list[Tensor]] = []
    singles: list[Tensor] = []
    for i in range(len(args)):
        lst = args.tensor_list(i)
        if lst is not None:
            lists.append(lst)
        elif (t := args.tensor(i)) is not None:
            singles.append(t)
    if not lists or not lists[0]:
        raise Unmodelled("shape arguments incomplete: TensorList shapes not recorded")
    selves = lists[0]
    if any(len(lst) != len(selves) for lst in lists):
        raise Unmodelled("shape arguments inconsistent: TensorLists of different lengths")
    numel = sum(t.numel for t in selves)
    read = [t for lst in lists for t in lst] + singles
    written = list(selves)
    if op in _FOREACH_REDUCTIONS:  # one scalar per tensor
        written = [Tensor((), selves[0].type)] * len(selves)
        flops = float(numel * _FOREACH_REDUCTIONS[op])
    elif op == "zero":
        read, flops = [], 0.0
    elif op == "copy":  # (self, src, non_blocking): self is only written
        read, flops = [t for lst in lists[1:] for t in lst], 0.0
    else:
        flops = float(numel * flops_per_element(op))
    return OpCost(flops, total_bytes(read) + total_bytes(written), OPTIMIZER, False, selves[0].cls)


# FLOPs per parameter element. Adam/AdamW: weight decay 2, first moment 3, second moment 4,
# bias-corrected step (sqrt, divide, add eps, multiply, subtract) 5. SGD: weight decay 2, momentum 2, step 2.
_FUSED_OPTIMIZER_FLOPS = {"_fused_adam_": 14, "_fused_adamw_": 14, "_fused_adagrad_": 8, "_fused_sgd_": 6}


def _fused_optimizer(args: Args, name: str) -> OpCost:
    lists = [args.tensor_list(i) for i in range(len(args)) if args.type(i) == "TensorList"]
    lists = [lst for lst in lists if lst]
    if not lists:
        raise Unmodelled("shape arguments incomplete: TensorList shapes not recorded")
    params = lists[0]
    numel = sum(t.numel for t in params)
    # Every non-empty list is read (params, grads, states); params and state lists are written back.
    read = [t for lst in lists for t in lst if t.shape]
    states = [t for lst in lists[2:] for t in lst if t.shape and math.prod(t.shape) > 1]
    written = list(params) + states
    return OpCost(float(numel * _FUSED_OPTIMIZER_FLOPS[name]), total_bytes(read) + total_bytes(written), OPTIMIZER,
                  False, params[0].cls)


# aten ops (without `aten::`): handler, the most arguments of any overload in the PyTorch schemas
OPS: tuple[Op, ...] = (
    Op("_fused_adam_", _fused_optimizer, 15), Op("_fused_adamw_", _fused_optimizer, 15),
    Op("_fused_adagrad_", _fused_optimizer, 11), Op("_fused_sgd_", _fused_optimizer, 12),
)
