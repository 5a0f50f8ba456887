"""Matrix products: mm, addmm, bmm, matmul, linear (docs/flops.md)."""

from __future__ import annotations

import math

from traceanalyze.analysis.costs.family import CostFamily, Op, OpCost
from traceanalyze.analysis.costs.tensors import Args, Tensor, Unmodelled, broadcast, promote, reads, total_bytes

MATMUL = CostFamily("matmul", tensor_core=True)


def _matmul_2d(a: Tensor, b: Tensor) -> tuple[int, int, int]:
    if len(a.shape) != 2 or len(b.shape) != 2:
        raise Unmodelled(f"shape arguments inconsistent: mm of {list(a.shape)} and {list(b.shape)}")
    (m, k), (k2, n) = a.shape, b.shape
    if k != k2:
        raise Unmodelled(f"shape arguments inconsistent: mm inner dims {k} != {k2}")
    return m, n, k


def _mm(args: Args, name: str) -> OpCost:
    if name == "_scaled_mm":  # (self, mat2, scale_a, scale_b, bias, scale_result, out_dtype, ...)
        a, b = args.need(0, "self"), args.need(1, "mat2")
        out_type, operands = args.dtype_code(6) or a.type, 6
    elif name in ("mm", "_int_mm"):  # mm.dtype adds out_dtype at 2
        a, b = args.need(0, "self"), args.need(1, "mat2")
        out_type, operands = "int" if name == "_int_mm" else (args.dtype_code(2) or a.type), 2
    else:  # addmm, _addmm_activation: (self, mat1, mat2, [out_dtype,] beta, alpha)
        a, b = args.need(1, "mat1"), args.need(2, "mat2")
        out_type, operands = (args.dtype_code(3) if len(args) >= 6 else None) or a.type, 3
    m, n, k = _matmul_2d(a, b)
    out = Tensor((m, n), out_type)
    return OpCost(2.0 * m * n * k, total_bytes(reads(args, operands)) + out.nbytes, MATMUL, False, a.cls)


def _bmm(args: Args, name: str) -> OpCost:
    first = 0 if name == "bmm" else 1  # baddbmm/addbmm: (self, batch1, batch2, ...)
    a, b = args.need(first, "batch1"), args.need(first + 1, "batch2")
    if len(a.shape) != 3 or len(b.shape) != 3 or a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
        raise Unmodelled(f"shape arguments inconsistent: bmm of {list(a.shape)} and {list(b.shape)}")
    batch, m, k = a.shape
    n = b.shape[2]
    out_type = (args.dtype_code(2) if name == "bmm" and len(args) == 3 else None) or a.type
    out = Tensor((m, n) if name == "addbmm" else (batch, m, n), out_type)
    read = reads(args, first + 2)
    return OpCost(2.0 * batch * m * n * k, total_bytes(read) + out.nbytes, MATMUL, False, a.cls)


def _matmul(args: Args, name: str) -> OpCost:
    """aten::matmul (composite: dot, mv, mm, bmm after broadcasting) and mv/dot/addmv."""
    if name == "addmv":
        a, b = args.need(1, "mat"), args.need(2, "vec")
    else:
        a, b = args.need(0, "self"), args.need(1, "other")
    sa, sb = list(a.shape), list(b.shape)
    if not sa or not sb:
        raise Unmodelled("shape arguments inconsistent: matmul of a 0-dim tensor")
    squeeze_m = len(sa) == 1
    squeeze_n = len(sb) == 1
    if squeeze_m:
        sa = [1] + sa
    if squeeze_n:
        sb = sb + [1]
    m, k = sa[-2], sa[-1]
    k2, n = sb[-2], sb[-1]
    if k != k2:
        raise Unmodelled(f"shape arguments inconsistent: matmul inner dims {k} != {k2}")
    batch = broadcast([sa[:-2], sb[:-2]])
    out_shape = list(batch) + ([] if squeeze_m else [m]) + ([] if squeeze_n else [n])
    out = a.like(out_shape, promote([a, b]))
    flops = 2.0 * math.prod(batch) * m * n * k
    composite = name == "matmul"
    return OpCost(flops, total_bytes(args.tensors()) + out.nbytes, MATMUL, composite, a.cls)


def _linear(args: Args, name: str) -> OpCost:
    x, w = args.need(0, "input"), args.need(1, "weight")
    if len(w.shape) not in (1, 2) or not x.shape or x.shape[-1] != w.shape[-1]:
        raise Unmodelled(f"shape arguments inconsistent: linear of {list(x.shape)} and {list(w.shape)}")
    n = w.shape[0] if len(w.shape) == 2 else 1
    k = x.shape[-1]
    rows = math.prod(x.shape[:-1])
    out = x.like(list(x.shape[:-1]) + ([n] if len(w.shape) == 2 else []))
    return OpCost(2.0 * rows * n * k, total_bytes(args.tensors()) + out.nbytes, MATMUL, True, x.cls)


# aten ops (without `aten::`): handler, the most arguments of any overload in the PyTorch schemas
OPS: tuple[Op, ...] = (
    Op("mm", _mm, 4), Op("addmm", _mm, 7), Op("_addmm_activation", _mm, 7), Op("_scaled_mm", _mm, 9),
    Op("_int_mm", _mm, 3), Op("bmm", _bmm, 4), Op("baddbmm", _bmm, 7), Op("addbmm", _bmm, 6),
    Op("matmul", _matmul, 3), Op("mv", _matmul, 3), Op("dot", _matmul, 3), Op("vdot", _matmul, 3),
    Op("addmv", _matmul, 6), Op("linear", _linear, 4),
)
