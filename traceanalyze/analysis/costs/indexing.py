"""Gathers and scatters: only the indexed elements are charged (docs/flops.md)."""

from __future__ import annotations

import math

from traceanalyze.analysis.costs.copies import COPY
from traceanalyze.analysis.costs.family import Op, OpCost
from traceanalyze.analysis.costs.tensors import Args, Unmodelled, broadcast, total_bytes


def _gather(args: Args, name: str) -> OpCost:
    """Gathers: the source is charged only for the elements actually gathered."""
    if name == "gather":
        src, index = args.need(0, "self"), args.need(2, "index")
        out = src.like(index.shape)
        return OpCost(0.0, index.nbytes + 2 * out.nbytes, COPY, False, src.cls)
    if name == "index_select":
        src, index = args.need(0, "self"), args.need(2, "index")
        dim = args.scalar(1)
        if not isinstance(dim, int) or isinstance(dim, bool):
            if len(src.shape) > 1:
                raise Unmodelled("shape arguments incomplete: index_select dim not recorded")
            dim = 0
        shape = list(src.shape)
        if shape:
            shape[dim % len(shape)] = index.numel
        out = src.like(shape)
        return OpCost(0.0, index.nbytes + 2 * out.nbytes, COPY, False, src.cls)
    # index(self, indices): advanced indexing on the leading dims with integer index tensors
    src = args.need(0, "self")
    indices = args.tensor_list(1, "long int")  # integer index tensors
    if indices is None:
        raise Unmodelled("shape arguments incomplete: indices recorded without shapes (output size unknown)")
    if any(t.cls == "bool" for t in indices):
        raise Unmodelled("output size is data-dependent (boolean mask)")
    out = src.like(list(broadcast([t.shape for t in indices])) + list(src.shape[len(indices):]))
    return OpCost(0.0, total_bytes(indices) + 2 * out.nbytes, COPY, False, src.cls)


def _scatter(args: Args, name: str) -> OpCost:
    """Scatters write (and for *_add read-modify-write) only the indexed elements of `self`."""
    dst = args.need(0, "self")
    if name in ("index_put", "index_put_", "_index_put_impl_"):  # (self, indices, values, accumulate)
        indices, values = args.tensor_list(1, "long int"), args.tensor(2)
        if indices is None and values is None:
            raise Unmodelled("shape arguments incomplete: indices and values not recorded")
        if indices is None:  # indices recorded with an empty type: the values say how many elements
            touched, read = values.numel, values.nbytes
        elif any(t.cls == "bool" for t in indices):
            raise Unmodelled("output size is data-dependent (boolean mask)")
        else:
            touched = math.prod(broadcast([t.shape for t in indices])) * math.prod(dst.shape[len(indices):])
            read = total_bytes(indices) + total_bytes([values])
        accumulate = bool(args.flag(3, False))
        inplace = name != "index_put"
    else:  # scatter*/index_add/index_copy/index_fill: (self, dim, index, src|value, ...)
        base = name.rstrip("_")
        index, src = args.need(2, "index"), args.tensor(3)
        if base.startswith("scatter"):
            touched = index.numel
            accumulate = base != "scatter" or isinstance(args.scalar(4), str)
        else:
            accumulate = base == "index_add"
            if src is not None:
                touched = src.numel
            else:
                dim = args.scalar(1)
                if not isinstance(dim, int) or isinstance(dim, bool) or not dst.shape:
                    raise Unmodelled("shape arguments incomplete: index_fill dim not recorded")
                touched = dst.numel // max(dst.shape[dim % len(dst.shape)], 1) * index.numel
        read = index.nbytes + (min(src.numel, touched) * src.itemsize if src is not None else 0)
        inplace = name.endswith("_")
    written = touched * dst.itemsize * (2 if accumulate else 1)  # accumulate: read-modify-write
    if not inplace:
        written += 2 * dst.nbytes  # out-of-place: a full copy of self first
    return OpCost(float(touched if accumulate else 0), float(read + written), COPY, False, dst.cls)


def _gather_backward(args: Args, name: str) -> OpCost:
    """gather_backward(grad, self, dim, index, sparse_grad) (composite): zeros, then scatter_add."""
    grad, x, index = args.need(0, "grad"), args.need(1, "self"), args.need(3, "index")
    moved = grad.nbytes + index.nbytes + x.like(type=grad.type).nbytes + 2 * grad.numel * grad.itemsize
    return OpCost(float(grad.numel), moved, COPY, True, grad.cls)


# aten ops (without `aten::`): handler, the most arguments of any overload in the PyTorch schemas
OPS: tuple[Op, ...] = (
    Op("gather_backward", _gather_backward, 5), Op("gather", _gather, 5), Op("index_select", _gather, 4),
    Op("index", _gather, 4), Op("scatter", _scatter, 6), Op("scatter_", _scatter, 5), Op("scatter_add", _scatter, 5),
    Op("scatter_add_", _scatter, 4), Op("scatter_reduce", _scatter, 7), Op("scatter_reduce_", _scatter, 6),
    Op("index_add", _scatter, 6), Op("index_add_", _scatter, 5), Op("index_copy", _scatter, 5),
    Op("index_copy_", _scatter, 4), Op("index_fill", _scatter, 5), Op("index_fill_", _scatter, 4),
    Op("index_put", _scatter, 5), Op("index_put_", _scatter, 4), Op("_index_put_impl_", _scatter, 5),
)
