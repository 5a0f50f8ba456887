"""Reductions (sum, mean, max, norm, ...) and scans (cumsum, ...) (docs/flops.md)."""

from __future__ import annotations

import math

from traceanalyze.analysis.costs.family import CostFamily, Op, OpCost
from traceanalyze.analysis.costs.pointwise import elementwise
from traceanalyze.analysis.costs.tensors import FLOAT_CLASSES, Args, Tensor, total_bytes

REDUCTION = CostFamily("reduction", fusible=True)


# name -> (dim argument index, or None for "always full", minimum arg count for `dim` to be present)
_REDUCTIONS: dict[str, tuple[int | None, int]] = {
    "sum": (1, 3), "nansum": (1, 2), "mean": (1, 3), "nanmean": (1, 2), "prod": (1, 3), "amax": (1, 2),
    "amin": (1, 2), "max": (1, 2), "min": (1, 2), "argmax": (1, 2), "argmin": (1, 2), "all": (1, 2),
    "any": (1, 2), "logsumexp": (1, 2), "std": (1, 3), "var": (1, 3), "std_mean": (1, 3),
    "var_mean": (1, 3), "norm": (2, 4), "linalg_vector_norm": (2, 3), "count_nonzero": (1, 2),
    "aminmax": (1, 2), "frobenius_norm": (1, 2),
}
# FLOPs per input element (default 1: one add or compare per element).
_REDUCTION_FLOPS = {
    "norm": 2, "linalg_vector_norm": 2, "frobenius_norm": 2, "std": 3, "var": 3, "std_mean": 3,
    "var_mean": 3, "logsumexp": 3,
}
_INDEX_OUTPUT = {"argmax", "argmin"}


def _reduction(args: Args, name: str) -> OpCost:
    x = args.need(0, "self")
    if name in ("max", "min") and args.tensor(1) is not None and args.tensor(1).shape:
        return elementwise(args, "maximum", False)  # max(self, other) is elementwise
    dim_at, min_args = _REDUCTIONS[name]
    note = ""
    dims: list[int] | None
    if dim_at is None or len(args) < min_args:
        dims = list(range(len(x.shape)))
    else:
        value = args.scalar(dim_at)
        if isinstance(value, bool):
            value = None
        if isinstance(value, int):
            dims = [value]
        elif isinstance(value, list) and all(isinstance(d, int) for d in value):
            dims = value or list(range(len(x.shape)))
        elif args.has_scalars() and args.type(dim_at) in ("", "ScalarList"):
            dims = list(range(len(x.shape)))  # dim=None
        else:
            dims, note = None, "reduced dims not recorded: output counted as one element (lower bound)"
    if dims is None:
        out_numel = 1
    else:
        reduced = {d % len(x.shape) for d in dims} if x.shape else set()
        out_numel = math.prod(s for i, s in enumerate(x.shape) if i not in reduced)
    if name in ("all", "any"):
        outs = [Tensor((out_numel,), "bool")]
    elif name in _INDEX_OUTPUT:
        outs = [Tensor((out_numel,), "long int")]
    elif name in ("max", "min") and dim_at is not None and len(args) >= min_args:
        outs = [Tensor((out_numel,), x.type), Tensor((out_numel,), "long int")]
    elif name in ("std_mean", "var_mean", "aminmax"):
        outs = [Tensor((out_numel,), x.type)] * 2
    else:
        outs = [Tensor((out_numel,), x.type)]
    flops = float(x.numel * _REDUCTION_FLOPS.get(name, 1))
    return OpCost(flops, x.nbytes + total_bytes(outs), REDUCTION, False, x.cls, note)


def _scan(args: Args, name: str) -> OpCost:
    """cumsum, cumprod, cummax, ...: one op per element, output the input's shape."""
    x = args.need(0, "self")
    integral_sum = x.cls not in FLOAT_CLASSES and name in ("cumsum", "cumprod")  # integers accumulate in int64
    out = x.like(type=args.dtype_code(2) or ("long int" if integral_sum else x.type))
    outs = [out] + ([x.like(type="long int")] if name in ("cummax", "cummin") else [])
    return OpCost(float(x.numel), x.nbytes + total_bytes(outs), REDUCTION, False, x.cls)


def _sort(args: Args, name: str) -> OpCost:
    """sort(self, dim, descending) and sort.stable(self, stable, dim, descending), with or without
    `values`/`indices` out= tensors: a comparison sort of each slice along `dim`, ⌈log2 k⌉
    comparisons per element (k = the size of `dim`); reads `self`, writes the sorted values and
    their int64 indices."""
    x = args.need(0, "self")
    dim = args.scalar(2 if len(args) in (4, 6) else 1)  # the stable overloads put `stable` first
    note = ""
    if not isinstance(dim, int) or isinstance(dim, bool):
        dim, note = -1, "dim not recorded: last dimension assumed"
    size = x.shape[dim % len(x.shape)] if x.shape else 1
    comparisons = math.ceil(math.log2(size)) if size > 1 else 0
    written = [x.like(), x.like(type="long int")]
    return OpCost(float(x.numel * comparisons), x.nbytes + total_bytes(written), REDUCTION, False, x.cls, note)


# aten ops (without `aten::`): handler, the most arguments of any overload in the PyTorch schemas
OPS: tuple[Op, ...] = (
    Op("sum", _reduction, 5), Op("nansum", _reduction, 5), Op("mean", _reduction, 5), Op("nanmean", _reduction, 5),
    Op("prod", _reduction, 5), Op("amax", _reduction, 4), Op("amin", _reduction, 4), Op("max", _reduction, 5),
    Op("min", _reduction, 5), Op("argmax", _reduction, 4), Op("argmin", _reduction, 4), Op("all", _reduction, 4),
    Op("any", _reduction, 4), Op("logsumexp", _reduction, 4), Op("std", _reduction, 5), Op("var", _reduction, 5),
    Op("std_mean", _reduction, 6), Op("var_mean", _reduction, 6), Op("norm", _reduction, 6),
    Op("linalg_vector_norm", _reduction, 6), Op("count_nonzero", _reduction, 3), Op("aminmax", _reduction, 5),
    Op("frobenius_norm", _reduction, 4), Op("cumsum", _scan, 4), Op("cumprod", _scan, 4), Op("cummax", _scan, 4),
    Op("cummin", _scan, 4), Op("logcumsumexp", _scan, 3), Op("sort", _sort, 6),
)
