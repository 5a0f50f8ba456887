"""Copies, concatenations, fills, factories, padding and views (docs/flops.md)."""

from __future__ import annotations

import math

from traceanalyze.analysis.costs.family import CostFamily, Op, OpCost
from traceanalyze.analysis.costs.tensors import Args, Tensor, Unmodelled, total_bytes

COPY = CostFamily("copy", fusible=True)
FILL = CostFamily("fill", fusible=True)
VIEW = CostFamily("view")


def _copy(args: Args, name: str) -> OpCost:
    if name == "copy_":
        dst, src = args.need(0, "self"), args.tensor(1)
        if src is None:
            return OpCost(0.0, dst.nbytes, FILL, False, dst.cls)
        read = min(src.numel, dst.numel) * src.itemsize
        return OpCost(0.0, float(read) + dst.nbytes, COPY, False, dst.cls)
    x = args.need(0, "self")
    note = ""
    composite = name in ("to", "contiguous", "type_as")
    if name == "_to_copy":
        out_type = args.dtype_code(1)
        if out_type is None and not args.has_scalars():
            note = "dtype not recorded: unchanged dtype assumed"
        out = x.like(type=out_type or x.type)
    elif name == "to":
        other = args.tensor(1)
        code = next((args.dtype_code(i) for i in (1, 2) if args.dtype_code(i)), None)
        out = x.like(type=other.type if other is not None else (code or x.type))
    elif name == "contiguous" and args.is_contiguous(0):
        return OpCost(0.0, 0.0, VIEW, True, x.cls)
    elif name in ("_local_scalar_dense", "item", "is_nonzero"):
        out = x.like(())
        composite = name != "_local_scalar_dense"
    else:  # clone, contiguous, pin_memory, _pin_memory, roll, flip, ...
        out = x.like()
    return OpCost(0.0, total_bytes([x]) + out.nbytes, COPY, composite, x.cls, note)


def _cat(args: Args, name: str) -> OpCost:
    parts = args.tensor_list(0)
    if parts is None:
        raise Unmodelled("shape arguments incomplete: tensors not recorded as a TensorList")
    parts = [p for p in parts if p.shape != (0,)]  # legacy empty tensors are skipped by cat
    if not parts:
        raise Unmodelled("shape arguments incomplete: no input tensors")
    total = sum(p.numel for p in parts)
    out = Tensor((total,), parts[0].type)
    return OpCost(0.0, total_bytes(parts) + out.nbytes, COPY, name in ("concat", "concatenate"), parts[0].cls)


def _fill(args: Args, name: str) -> OpCost:
    """In-place fills (fill_, zero_) and factories (zeros, ones, full, rand..., *_like, new_*)."""
    note = ""
    if name in ("fill_", "zero_"):
        x = args.need(0, "self")
        return OpCost(0.0, x.nbytes + total_bytes(args.tensors()[1:]), FILL, False, x.cls)
    if name.endswith("_like"):
        x = args.need(0, "self")
        code = None if name == "randint_like" else args.dtype_code(2 if name == "full_like" else 1)
        out = x.like(type=code or x.type)
        return OpCost(0.0, out.nbytes, FILL, False, out.cls)
    if name.startswith("new_"):
        x = args.need(0, "self")
        size = args.int_list(1)
        code_at = 3 if name == "new_full" else 2
        if size is None or any(v < 0 for v in size):
            raise Unmodelled("shape arguments incomplete: size not recorded")
        out = x.like(size, args.dtype_code(code_at) or x.type)
        return OpCost(0.0, out.nbytes, FILL, False, out.cls)
    if name == "scalar_tensor":
        out = Tensor((), args.dtype_code(1) or "float")
        return OpCost(0.0, out.nbytes, FILL, False, out.cls)
    size_at = next((i for i in range(len(args)) if args.type(i) == "ScalarList"), 0)
    size = args.int_list(size_at)
    if size is None and args.scalar(size_at) == []:
        size = []
    if size is None or any(v < 0 for v in size):  # a negative size is no tensor's
        raise Unmodelled("shape arguments incomplete: size not recorded")
    code = args.dtype_code(size_at + (2 if name == "full" else 1))
    if code is None:
        code = "long int" if name == "randint" else "float"
        note = "dtype not recorded: default dtype assumed"
    out = Tensor(tuple(size), code)
    return OpCost(0.0, out.nbytes, FILL, False, out.cls, note)


def _arange(args: Args, name: str) -> OpCost:
    """arange(end, ...), arange(start, end, ...), arange(start, end, step, ...), or with out=."""
    n_bounds = {5: 1, 6: 2, 7: 3}.get(len(args), 3)
    bounds = [args.scalar(i) for i in range(n_bounds)]
    if not all(isinstance(b, (int, float)) and not isinstance(b, bool) for b in bounds):
        raise Unmodelled("shape arguments incomplete: arange bounds not recorded")
    start, end, step = {1: (0, bounds[0], 1), 2: (bounds[0], bounds[1], 1)}.get(n_bounds, tuple(bounds))
    if step == 0:
        raise Unmodelled("shape arguments inconsistent: arange step 0")
    numel = max(0, math.ceil((end - start) / step))
    out_param = args.tensor(n_bounds)
    integral = all(isinstance(b, int) for b in bounds)
    out_type = out_param.type if out_param else (args.dtype_code(n_bounds) or ("long int" if integral else "float"))
    out = Tensor((numel,), out_type)
    return OpCost(0.0, out.nbytes, FILL, False, out.cls)


def _pad(args: Args, name: str) -> OpCost:
    x = args.need(0, "self")
    pad = args.int_list(1)
    if pad is None or len(pad) % 2:
        raise Unmodelled("shape arguments incomplete: pad not recorded")
    shape = list(x.shape)
    for j in range(len(pad) // 2):
        shape[-1 - j] += pad[2 * j] + pad[2 * j + 1]
    out = x.like(shape)
    return OpCost(0.0, x.nbytes + out.nbytes, COPY, False, x.cls)


def _repeat(args: Args, name: str) -> OpCost:
    x = args.need(0, "self")
    repeats = args.int_list(1)
    if repeats is None:
        raise Unmodelled("shape arguments incomplete: repeats not recorded")
    shape = [1] * (len(repeats) - len(x.shape)) + list(x.shape)
    out = x.like([s * r for s, r in zip(shape, repeats)])
    return OpCost(0.0, x.nbytes + out.nbytes, COPY, False, x.cls)


def _sized_backward(args: Args, name: str) -> OpCost:
    """slice_backward/select_backward/...(grad_output, input_sizes, ...): zero-fill, then copy."""
    grad = args.need(0, "grad_output")
    sizes = args.int_list(1)
    if sizes is None:
        raise Unmodelled("shape arguments incomplete: input_sizes not recorded")
    out = grad.like(sizes)
    return OpCost(0.0, grad.nbytes + out.nbytes, COPY, False, grad.cls)


_VIEWS = {
    "view", "_unsafe_view", "reshape", "_reshape_alias", "as_strided", "as_strided_", "transpose",
    "transpose_", "t", "t_", "permute", "expand", "expand_as", "slice", "select", "narrow", "unsqueeze",
    "unsqueeze_", "squeeze", "squeeze_", "detach", "detach_", "alias", "view_as", "unflatten", "flatten",
    "split", "split_with_sizes", "chunk", "unbind", "movedim", "moveaxis", "swapaxes", "swapdims",
    "numpy_T", "lift_fresh", "lift_fresh_copy", "resolve_conj", "resolve_neg", "conj", "real", "imag",
    "view_as_real", "view_as_complex", "diagonal", "unfold", "empty", "empty_like", "empty_strided",
    "new_empty", "new_empty_strided", "empty_permuted", "resize_", "resize_as_", "set_", "record_stream",
    "is_pinned", "broadcast_tensors", "_has_compatible_shallow_copy_type", "align_to", "refine_names",
    "rename", "_nested_tensor_from_mask", "stride", "size", "is_same_size", "result_type", "can_cast",
    "_shape_as_tensor", "tensor_split", "hsplit", "vsplit", "split_with_sizes_copy", "atleast_1d",
    "atleast_2d", "atleast_3d", "matrix_H", "mT", "mH", "adjoint", "_to_dense", "coalesce",
}
_COMPOSITE_VIEWS = {"reshape", "flatten", "contiguous"}


def _view(args: Args, name: str) -> OpCost:
    first = args.tensor(0)
    return OpCost(0.0, 0.0, VIEW, name in _COMPOSITE_VIEWS, first.cls if first else None)


# aten ops (without `aten::`): handler, the most arguments of any overload in the PyTorch schemas
OPS: tuple[Op, ...] = (
    Op("copy_", _copy, 3), Op("_to_copy", _copy, 7), Op("to", _copy, 8), Op("clone", _copy, 3),
    Op("contiguous", _copy, 2), Op("_local_scalar_dense", _copy, 1), Op("item", _copy, 1),
    Op("pin_memory", _copy, 2), Op("_pin_memory", _copy, 3), Op("roll", _copy, 4), Op("flip", _copy, 3),
    Op("narrow_copy", _copy, 5), Op("type_as", _copy, 2), Op("is_nonzero", _copy, 1), Op("cat", _cat, 3),
    Op("_cat", _cat, None), Op("concat", _cat, 3), Op("concatenate", _cat, 3), Op("stack", _cat, 3),
    Op("_stack", _cat, 3), Op("hstack", _cat, 2), Op("vstack", _cat, 2), Op("fill_", _fill, 2),
    Op("zero_", _fill, 1), Op("zeros", _fill, 5), Op("ones", _fill, 5), Op("full", _fill, 6), Op("rand", _fill, 6),
    Op("randn", _fill, 6), Op("randint", _fill, 8), Op("zeros_like", _fill, 6), Op("ones_like", _fill, 6),
    Op("full_like", _fill, 7), Op("rand_like", _fill, 7), Op("randn_like", _fill, 7), Op("randint_like", _fill, 9),
    Op("new_zeros", _fill, 6), Op("new_ones", _fill, 6), Op("new_full", _fill, 7), Op("scalar_tensor", _fill, 5),
    Op("arange", _arange, 7), Op("constant_pad_nd", _pad, 4), Op("pad", _pad, 4), Op("repeat", _repeat, 3),
    Op("slice_backward", _sized_backward, 7), Op("select_backward", _sized_backward, 5),
    Op("unfold_backward", _sized_backward, 6), Op("diagonal_backward", _sized_backward, 6),
    Op("as_strided_scatter", _sized_backward, 6), Op("new_empty", _view, 6), Op("size", _view, 2),
    Op("resolve_conj", _view, 1), Op("conj", _view, 1), Op("imag", _view, 1), Op("resize_", _view, 3),
    Op("empty", _view, 6), Op("stride", _view, 2), Op("adjoint", _view, 1), Op("mH", _view, 1),
    Op("_unsafe_view", _view, 3), Op("unsqueeze", _view, 2), Op("permute", _view, 2), Op("resolve_neg", _view, 1),
    Op("can_cast", _view, 2), Op("atleast_1d", _view, 1), Op("coalesce", _view, 1),
    Op("_nested_tensor_from_mask", _view, 4), Op("expand", _view, 3), Op("flatten", _view, 3),
    Op("unbind", _view, 2), Op("reshape", _view, 2), Op("_shape_as_tensor", _view, 1), Op("is_pinned", _view, 2),
    Op("transpose_", _view, 3), Op("unsqueeze_", _view, 2), Op("squeeze", _view, 2), Op("movedim", _view, 3),
    Op("_to_dense", _view, 4), Op("view_as", _view, 2), Op("chunk", _view, 3), Op("squeeze_", _view, 2),
    Op("unfold", _view, 4), Op("broadcast_tensors", _view, 1), Op("record_stream", _view, 2),
    Op("moveaxis", _view, 3), Op("tensor_split", _view, 3), Op("numpy_T", _view, 1), Op("hsplit", _view, 2),
    Op("detach_", _view, 1), Op("slice", _view, 5), Op("narrow", _view, 4), Op("atleast_3d", _view, 1),
    Op("empty_like", _view, 6), Op("vsplit", _view, 2), Op("new_empty_strided", _view, 7), Op("real", _view, 1),
    Op("matrix_H", _view, 1), Op("_reshape_alias", _view, 3), Op("split", _view, 3), Op("t", _view, 1),
    Op("atleast_2d", _view, 1), Op("split_with_sizes_copy", _view, 4), Op("transpose", _view, 3),
    Op("empty_permuted", _view, 6), Op("detach", _view, 1), Op("as_strided_", _view, 4),
    Op("is_same_size", _view, 2), Op("alias", _view, 1), Op("view_as_real", _view, 1),
    Op("_has_compatible_shallow_copy_type", _view, 2), Op("swapdims", _view, 3), Op("select", _view, 3),
    Op("view_as_complex", _view, 1), Op("result_type", _view, 2), Op("rename", _view, None),
    Op("resize_as_", _view, 3), Op("refine_names", _view, None), Op("set_", _view, 5), Op("align_to", _view, None),
    Op("lift_fresh", _view, 1), Op("unflatten", _view, 3), Op("diagonal", _view, 4), Op("empty_strided", _view, 6),
    Op("t_", _view, 1), Op("expand_as", _view, 2), Op("lift_fresh_copy", _view, 2), Op("split_with_sizes", _view, 3),
    Op("view", _view, 2), Op("as_strided", _view, 4), Op("mT", _view, 1), Op("swapaxes", _view, 3),
)
