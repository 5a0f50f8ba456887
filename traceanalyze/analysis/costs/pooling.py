"""Pooling, adaptive pooling and their backward ops (docs/flops.md)."""

from __future__ import annotations

import math
import re

from traceanalyze.analysis.costs.family import CostFamily, Op, OpCost
from traceanalyze.analysis.costs.tensors import Args, Unmodelled, total_bytes

POOL = CostFamily("pool")


_POOL: dict[str, tuple[str, bool]] = {
    # name -> (kind, composite); arguments (self, kernel_size, stride, padding, ...)
    "max_pool1d": ("max", True), "max_pool2d": ("max", True), "max_pool3d": ("max", True),
    "max_pool2d_with_indices": ("max", False), "max_pool3d_with_indices": ("max", False),
    "avg_pool1d": ("avg", True), "avg_pool2d": ("avg", False), "avg_pool3d": ("avg", False),
}


def _pool(args: Args, name: str) -> OpCost:
    kind, composite = _POOL[name]
    x = args.need(0, "self")
    n = {"1d": 1, "2d": 2, "3d": 3}[re.search(r"([123]d)", name).group(1)]
    kernel = args.int_list(1, n)
    stride = args.int_list(2, n) if args.scalar(2) not in ([], None) else kernel
    padding = args.int_list(3, n)
    dilation = args.int_list(4, n) if kind == "max" else [1] * n
    ceil_mode = args.flag(5 if kind == "max" else 4, False)
    if kernel is None or stride is None or padding is None or dilation is None:
        raise Unmodelled("shape arguments incomplete: pooling window not recorded")
    spatial_out = []
    for size, k, s, p, d in zip(x.shape[-n:], kernel, stride, padding, dilation):
        span = size + 2 * p - d * (k - 1) - 1
        o = (-(-span // s) if ceil_mode else span // s) + 1
        if ceil_mode and (o - 1) * s >= size + p:
            o -= 1
        spatial_out.append(o)
    out = x.like(list(x.shape[:-n]) + spatial_out)
    written = [out] + ([out.like(type="long int")] if kind == "max" and name.endswith("indices") else [])
    return OpCost(float(out.numel * math.prod(kernel)), x.nbytes + total_bytes(written), POOL, composite, x.cls)


def _adaptive_pool(args: Args, name: str) -> OpCost:
    x = args.need(0, "self")
    n = 3 if "3d" in name else (1 if "1d" in name else 2)
    size = args.int_list(1, n)
    if size is None:
        raise Unmodelled("shape arguments incomplete: adaptive pooling output size not recorded")
    out = x.like(list(x.shape[:-n]) + size)
    window = math.prod(-(-i // o) for i, o in zip(x.shape[-n:], size))
    written = [out] + ([out.like(type="long int")] if "max" in name else [])
    composite = name in ("adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d")
    return OpCost(float(out.numel * window), x.nbytes + total_bytes(written), POOL, composite, x.cls)


def _pool_backward(args: Args, name: str) -> OpCost:
    """Pooling backward: read grad_output (and indices), write grad_input; `self` is shape-only."""
    grad, x = args.need(0, "grad_output"), args.need(1, "self")
    read = [grad] + [t for i, t in enumerate(args.tensors()) if i >= 2]
    return OpCost(float(x.numel), total_bytes(read) + x.nbytes, POOL, False, grad.cls)


# aten ops (without `aten::`): handler, the most arguments of any overload in the PyTorch schemas
OPS: tuple[Op, ...] = (
    Op("max_pool1d", _pool, 6), Op("max_pool2d", _pool, 6), Op("max_pool3d", _pool, 6),
    Op("max_pool2d_with_indices", _pool, 8), Op("max_pool3d_with_indices", _pool, 8), Op("avg_pool1d", _pool, 7),
    Op("avg_pool2d", _pool, 8), Op("avg_pool3d", _pool, 8), Op("adaptive_avg_pool1d", _adaptive_pool, 3),
    Op("adaptive_avg_pool2d", _adaptive_pool, 3), Op("adaptive_avg_pool3d", _adaptive_pool, 3),
    Op("_adaptive_avg_pool2d", _adaptive_pool, 3), Op("_adaptive_avg_pool3d", _adaptive_pool, 3),
    Op("adaptive_max_pool2d", _adaptive_pool, 4), Op("adaptive_max_pool3d", _adaptive_pool, 4),
    Op("max_pool2d_with_indices_backward", _pool_backward, 9),
    Op("max_pool3d_with_indices_backward", _pool_backward, 9), Op("avg_pool2d_backward", _pool_backward, 9),
    Op("avg_pool3d_backward", _pool_backward, 9), Op("_adaptive_avg_pool2d_backward", _pool_backward, 3),
    Op("_adaptive_avg_pool3d_backward", _pool_backward, 3), Op("adaptive_max_pool2d_backward", _pool_backward, 4),
    Op("adaptive_max_pool3d_backward", _pool_backward, 4),
)
