"""Layer, RMS, group and batch norm, and softmax (docs/flops.md)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from traceanalyze.analysis.costs.family import CostFamily, Op, OpCost
from traceanalyze.analysis.costs.tensors import Args, Tensor, accumulation_type, total_bytes

NORM = CostFamily("norm", fusible=True)
SOFTMAX = CostFamily("softmax", fusible=True)


# FLOPs per input element. Statistics (sum and sum of squares: 3), normalise (subtract, scale: 2),
# affine (multiply, add: 2). RMS norm: statistics 2, normalise 1, affine 1. Backward: twice forward.
_NORM_FLOPS = {"layer": (5, 2), "group": (5, 2), "batch": (5, 2), "rms": (3, 1)}


def norm_cost(kind: str, x: Tensor, affine: bool, backward: bool, read: Sequence[Tensor],
              written: Sequence[Tensor | None], composite: bool = False, note: str = "",
              statistics: bool = True) -> OpCost:
    """A `kind` norm (`layer`, `group`, `batch`, `rms`) over `x`: FLOPs per element of `_NORM_FLOPS`
    (twice for a backward), `read` and `written` tensors once."""
    base, extra = _NORM_FLOPS[kind]
    if not statistics:  # batch norm in eval mode normalises with the running statistics
        base -= 3
    per_element = base + (extra if affine else 0)
    flops = float(x.numel * per_element * (2 if backward else 1))
    return OpCost(flops, total_bytes(read) + total_bytes(written), NORM, composite, x.cls, note)


def _normalized_rows(args: Args, x: Tensor, shape_at: int, weight: Tensor | None) -> tuple[int, str]:
    """How many rows a layer/RMS norm normalises: numel / prod(normalized_shape)."""
    normalized = args.int_list(shape_at)
    note = ""
    if normalized is None:
        if weight is not None:
            normalized = list(weight.shape)
        else:
            normalized = [x.shape[-1]] if x.shape else []
            note = "normalized_shape not recorded: last dimension assumed"
    inner = math.prod(normalized) or 1
    return x.numel // inner, note


def _layer_norm(args: Args, name: str) -> OpCost:
    x = args.need(0, "input")
    weight = args.tensor(2)
    if name in ("layer_norm", "native_layer_norm"):
        rows, note = _normalized_rows(args, x, 1, weight)
        stats = [Tensor((rows,), accumulation_type(x))] * 2  # mean, rstd
        return norm_cost("layer", x, weight is not None, False, args.tensors(), [x] + stats,
                          name == "layer_norm", note)
    if name in ("rms_norm", "_fused_rms_norm"):
        rows, note = _normalized_rows(args, x, 1, weight)
        written = [x] + ([Tensor((rows,), accumulation_type(x))] if name == "_fused_rms_norm" else [])
        return norm_cost("rms", x, weight is not None, False, args.tensors(), written, name == "rms_norm", note)
    # native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight, bias, output_mask)
    # _fused_rms_norm_backward(grad_out, input, normalized_shape, rstd, weight, output_mask)
    x = args.need(1, "input")
    rms = name == "_fused_rms_norm_backward"
    weight = args.tensor(4 if rms else 5)
    bias = None if rms else args.tensor(6)
    mask = args.scalar(5 if rms else 7)
    if not isinstance(mask, list):
        mask = [True, True, True]
    written = [x if mask[0] else None, weight if len(mask) > 1 and mask[1] else None]
    if not rms and len(mask) > 2 and mask[2]:
        written.append(bias)
    return norm_cost("rms" if rms else "layer", x, weight is not None, True, args.tensors(), written)


def _group_norm(args: Args, name: str) -> OpCost:
    if name == "group_norm":
        x = args.need(0, "input")
        groups = args.scalar(1)
        weight = args.tensor(2)
        composite = True
    elif name == "native_group_norm":
        x, weight, groups, composite = args.need(0, "input"), args.tensor(1), args.scalar(6), False
    else:  # native_group_norm_backward(grad_out, input, mean, rstd, weight, N, C, HxW, group, output_mask)
        x, weight = args.need(1, "input"), args.tensor(4)
        mask = args.scalar(9)
        if not isinstance(mask, list):
            mask = [True, True, True]
        written = [x if mask[0] else None] + [weight if len(mask) > i and mask[i] else None for i in (1, 2)]
        return norm_cost("group", x, weight is not None, True, args.tensors(), written)
    note = ""
    if not isinstance(groups, int) or isinstance(groups, bool):
        groups, note = 1, "num_groups not recorded: statistics size not counted"
    batch = x.shape[0] if x.shape else 1
    stats = [Tensor((batch * groups,), accumulation_type(x))] * (0 if note else 2)
    return norm_cost("group", x, weight is not None, False, args.tensors(), [x] + stats, composite, note)


# name -> (input index, weight index, grad_output index or None, output_mask index, composite)
BATCH_NORM: dict[str, tuple[int, int, int | None, int | None, bool]] = {
    "batch_norm": (0, 1, None, None, True),
    "_batch_norm_impl_index": (0, 1, None, None, True),
    "instance_norm": (0, 1, None, None, True),
    "native_batch_norm": (0, 1, None, None, False),
    "cudnn_batch_norm": (0, 1, None, None, False),
    "miopen_batch_norm": (0, 1, None, None, False),
    "_native_batch_norm_legit": (0, 1, None, None, False),
    "_native_batch_norm_legit_no_training": (0, 1, None, None, False),
    "_batch_norm_with_update": (0, 1, None, None, False),
    "_batch_norm_no_update": (0, 1, None, None, False),
    "native_batch_norm_backward": (1, 2, 0, 9, False),
    "batch_norm_backward": (1, 2, 0, 9, False),
    "cudnn_batch_norm_backward": (0, 2, 1, None, False),
    "miopen_batch_norm_backward": (0, 2, 1, None, False),
}


def _batch_norm(args: Args, name: str) -> OpCost:
    xi, wi, gi, mask_at, composite = BATCH_NORM[name]
    x, weight = args.need(xi, "input"), args.tensor(wi)
    channels = x.shape[1] if len(x.shape) > 1 else 1
    if gi is None:
        training = {"_native_batch_norm_legit_no_training": False, "_batch_norm_no_update": False,
                    "_batch_norm_with_update": True}.get(name)
        if training is None:  # `training` (instance_norm: `use_input_stats`); legit.no_stats has it at 3
            training = args.flag(3 if name == "_native_batch_norm_legit" and len(args) == 6 else 5, True)
        # Saved mean and inverse std: empty tensors in eval mode.
        stats = [Tensor((channels,), accumulation_type(x))] * (2 if training else 0)
        return norm_cost("batch", x, weight is not None, False, args.tensors(), [x] + stats, composite,
                          statistics=bool(training))
    mask = args.scalar(mask_at) if mask_at is not None else None
    if not isinstance(mask, list):
        mask = [True, True, True]
    param = weight if weight is not None else Tensor((channels,), accumulation_type(x))
    written = [x if mask[0] else None] + [param if len(mask) > i and mask[i] else None for i in (1, 2)]
    return norm_cost("batch", x, weight is not None, True, args.tensors(), written)


# FLOPs per element. Forward: max, subtract, exp, sum, divide (log_softmax: log per row, subtract).
# Backward: multiply, sum, subtract, multiply (log_softmax: exp, sum, multiply, subtract).
SOFTMAX_FLOPS = {"forward": 5, "backward": 4}


def _softmax(args: Args, name: str) -> OpCost:
    if name in ("_softmax_backward_data", "_log_softmax_backward_data"):
        grad, output = args.need(0, "grad_output"), args.need(1, "output")
        out = grad.like(type=args.dtype_code(3) or grad.type)
        read = [grad, output]
        return OpCost(float(out.numel * SOFTMAX_FLOPS["backward"]), total_bytes(read) + out.nbytes, SOFTMAX,
                      False, grad.cls)
    x = args.need(0, "self")
    composite = name in ("softmax", "log_softmax", "_safe_softmax", "special_softmax")
    if name in ("_softmax", "_log_softmax"):
        out_type = "float" if args.flag(2, False) else x.type
    elif name == "_masked_softmax":
        out_type = x.type
    else:
        out_type = args.dtype_code(2) or x.type
    out = x.like(type=out_type)
    # An `out=` tensor recorded after the scalar arguments is written, not read.
    read = [x] + ([args.tensor(1)] if name == "_masked_softmax" else [])
    return OpCost(float(x.numel * SOFTMAX_FLOPS["forward"]), total_bytes(read) + out.nbytes, SOFTMAX,
                  composite, x.cls)


# aten ops (without `aten::`): handler, the most arguments of any overload in the PyTorch schemas
OPS: tuple[Op, ...] = (
    Op("layer_norm", _layer_norm, 6), Op("native_layer_norm", _layer_norm, 8),
    Op("native_layer_norm_backward", _layer_norm, 11), Op("rms_norm", _layer_norm, 4),
    Op("_fused_rms_norm", _layer_norm, 4), Op("_fused_rms_norm_backward", _layer_norm, 6),
    Op("group_norm", _group_norm, 6), Op("native_group_norm", _group_norm, 11),
    Op("native_group_norm_backward", _group_norm, 13), Op("batch_norm", _batch_norm, 9),
    Op("_batch_norm_impl_index", _batch_norm, 9), Op("instance_norm", _batch_norm, 9),
    Op("native_batch_norm", _batch_norm, 11), Op("cudnn_batch_norm", _batch_norm, 12),
    Op("miopen_batch_norm", _batch_norm, 11), Op("_native_batch_norm_legit", _batch_norm, 11),
    Op("_native_batch_norm_legit_no_training", _batch_norm, 10), Op("_batch_norm_with_update", _batch_norm, 11),
    Op("_batch_norm_no_update", _batch_norm, 11), Op("native_batch_norm_backward", _batch_norm, 13),
    Op("batch_norm_backward", _batch_norm, 11), Op("cudnn_batch_norm_backward", _batch_norm, 12),
    Op("miopen_batch_norm_backward", _batch_norm, 11), Op("softmax", _softmax, 4), Op("_softmax", _softmax, 4),
    Op("log_softmax", _softmax, 4), Op("_log_softmax", _softmax, 4), Op("_safe_softmax", _softmax, 3),
    Op("_masked_softmax", _softmax, 5), Op("special_softmax", _softmax, 3),
    Op("_softmax_backward_data", _softmax, 5), Op("_log_softmax_backward_data", _softmax, 5),
)
