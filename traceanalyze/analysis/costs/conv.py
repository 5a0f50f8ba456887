"""Convolutions, forward and backward (docs/flops.md)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from traceanalyze.analysis.costs.family import CostFamily, Op, OpCost
from traceanalyze.analysis.costs.tensors import Args, Unmodelled, total_bytes

CONV = CostFamily("conv", tensor_core=True)


_CONV = ("input", "weight", "bias", "stride", "padding", "dilation", "transposed", "output_padding", "groups")
_CONV_ND = ("input", "weight", "bias", "stride", "padding", "dilation", "groups")
_CONV_T_ND = ("input", "weight", "bias", "stride", "padding", "output_padding", "groups", "dilation")
_CONV_KERNEL = ("input", "weight", "kernel_size", "bias", "stride", "padding", "dilation")

# name -> (argument roles by position, transposed, composite)
CONV_FORWARD: dict[str, tuple[tuple[str, ...], bool | None, bool]] = {
    "convolution": (_CONV, None, True),
    "_convolution": (_CONV, None, True),
    "convolution_overrideable": (_CONV, None, False),
    "conv1d": (_CONV_ND, False, True),
    "conv2d": (_CONV_ND, False, True),
    "conv3d": (_CONV_ND, False, True),
    "_convolution_mode": (_CONV_ND, False, True),
    "conv_transpose1d": (_CONV_T_ND, True, True),
    "conv_transpose2d": (_CONV_T_ND, True, True),
    "conv_transpose3d": (_CONV_T_ND, True, True),
    "cudnn_convolution": (("input", "weight", "padding", "stride", "dilation", "groups"), False, False),
    "cudnn_convolution_transpose": (
        ("input", "weight", "padding", "output_padding", "stride", "dilation", "groups"), True, False),
    "mkldnn_convolution": (("input", "weight", "bias", "padding", "stride", "dilation", "groups"), False, False),
    "miopen_convolution": (("input", "weight", "bias", "padding", "stride", "dilation", "groups"), False, False),
    "miopen_depthwise_convolution": (
        ("input", "weight", "bias", "padding", "stride", "dilation", "groups"), False, False),
    "miopen_convolution_transpose": (
        ("input", "weight", "bias", "padding", "output_padding", "stride", "dilation", "groups"), True, False),
    "cudnn_convolution_relu": (_CONV_ND, False, False),
    "cudnn_convolution_add_relu": (
        ("input", "weight", "z", "alpha", "bias", "stride", "padding", "dilation", "groups"), False, False),
    "_slow_conv2d_forward": (_CONV_KERNEL[:6], False, False),
    "thnn_conv2d": (_CONV_KERNEL[:6], False, True),
    "_conv_depthwise2d": (_CONV_KERNEL, False, False),
    "conv_depthwise3d": (_CONV_KERNEL, False, False),
    "slow_conv_dilated2d": (_CONV_KERNEL, False, False),
    "slow_conv_dilated3d": (_CONV_KERNEL, False, False),
    "slow_conv3d_forward": (_CONV_KERNEL[:6], False, False),
    "slow_conv_transpose2d": (
        ("input", "weight", "kernel_size", "bias", "stride", "padding", "output_padding", "dilation"), True, False),
    "slow_conv_transpose3d": (
        ("input", "weight", "kernel_size", "bias", "stride", "padding", "output_padding", "dilation"), True, False),
    "_nnpack_spatial_convolution": (("input", "weight", "bias", "padding", "stride"), False, False),
}
_CONV_DEFAULTS = {"stride": 1, "padding": 0, "dilation": 1, "output_padding": 0}


def _conv_param(args: Args, roles: Sequence[str], role: str, n: int) -> list[int]:
    if role not in roles:
        return [_CONV_DEFAULTS[role]] * n
    i = roles.index(role)
    value = args.int_list(i, n)
    if value is None and role == "stride" and args.scalar(i) == []:
        return [1] * n
    if value is None:
        raise Unmodelled(f"shape arguments incomplete: convolution {role} not recorded")
    return value


def _conv(args: Args, name: str) -> OpCost:
    roles, transposed, composite = CONV_FORWARD[name]
    if name == "cudnn_convolution" and len(args) >= 9 and args.type(2) not in ("ScalarList", "GenericList"):
        roles = ("input", "weight", "bias", "padding", "stride", "dilation", "groups")  # PyTorch <= 1.7
    x, w = args.need(0, "input"), args.need(1, "weight")
    if transposed is None:
        transposed = args.flag(roles.index("transposed"))
        if transposed is None:
            raise Unmodelled("shape arguments incomplete: convolution `transposed` not recorded")
    n_spatial = len(w.shape) - 2
    batched = len(x.shape) == len(w.shape)
    if n_spatial < 1 or len(x.shape) - (2 if batched else 1) != n_spatial:
        raise Unmodelled(f"shape arguments inconsistent: conv of {list(x.shape)} with {list(w.shape)}")
    batch = x.shape[0] if batched else 1
    spatial_in = x.shape[-n_spatial:]
    kernel = w.shape[2:]
    groups_value = args.scalar(roles.index("groups")) if "groups" in roles else 1
    if transposed:
        if not isinstance(groups_value, int) or isinstance(groups_value, bool):
            raise Unmodelled("shape arguments incomplete: convolution `groups` not recorded")
        stride = _conv_param(args, roles, "stride", n_spatial)
        padding = _conv_param(args, roles, "padding", n_spatial)
        dilation = _conv_param(args, roles, "dilation", n_spatial)
        out_pad = _conv_param(args, roles, "output_padding", n_spatial)
        spatial_out = [
            (i - 1) * s - 2 * p + d * (k - 1) + op + 1
            for i, s, p, d, k, op in zip(spatial_in, stride, padding, dilation, kernel, out_pad)
        ]
        c_out = w.shape[1] * groups_value
        flops = 2.0 * batch * math.prod(spatial_in) * math.prod(w.shape)
    else:
        stride = _conv_param(args, roles, "stride", n_spatial)
        padding = _conv_param(args, roles, "padding", n_spatial)
        dilation = _conv_param(args, roles, "dilation", n_spatial)
        spatial_out = [
            (i + 2 * p - d * (k - 1) - 1) // s + 1
            for i, s, p, d, k in zip(spatial_in, stride, padding, dilation, kernel)
        ]
        c_out = w.shape[0]
        flops = 2.0 * batch * math.prod(spatial_out) * math.prod(w.shape)
    if min(spatial_out) <= 0:
        raise Unmodelled("shape arguments inconsistent: convolution output would be empty")
    out = x.like(([batch] if batched else []) + [c_out] + spatial_out)
    return OpCost(flops, total_bytes(args.tensors()) + out.nbytes, CONV, composite, x.cls)


# name -> (grad_output, input, weight, transposed index or fixed bool, output_mask index, composite)
CONV_BACKWARD: dict[str, tuple[int, int, int, int | bool, int | None]] = {
    "convolution_backward": (0, 1, 2, 7, 10),
    "convolution_backward_overrideable": (0, 1, 2, 6, 9),
    "cudnn_convolution_backward": (1, 0, 2, False, 10),
    "cudnn_convolution_transpose_backward": (1, 0, 2, True, 11),
    "mkldnn_convolution_backward": (1, 0, 2, False, 7),
    "miopen_convolution_backward": (1, 0, 2, False, 9),
    "_slow_conv2d_backward": (0, 1, 2, False, 6),
    "slow_conv3d_backward": (0, 1, 2, False, 6),
}


def _conv_backward(args: Args, name: str) -> OpCost:
    gi, xi, wi, transposed_at, mask_at = CONV_BACKWARD[name]
    gout, x, w = args.need(gi, "grad_output"), args.need(xi, "input"), args.need(wi, "weight")
    transposed = transposed_at if isinstance(transposed_at, bool) else args.flag(transposed_at, False)
    mask = args.scalar(mask_at) if mask_at is not None else None
    note = ""
    if not (isinstance(mask, list) and mask and all(isinstance(v, bool) for v in mask)):
        mask = [True, True, False]
        note = "output_mask not recorded: grad_input and grad_weight assumed"
    n_spatial = len(w.shape) - 2
    if n_spatial < 1 or len(gout.shape) != len(x.shape):
        raise Unmodelled(f"shape arguments inconsistent: conv backward of {list(gout.shape)}, {list(w.shape)}")
    batched = len(x.shape) == len(w.shape)
    batch = x.shape[0] if batched else 1
    spatial = (x if transposed else gout).shape[-n_spatial:]
    forward_flops = 2.0 * batch * math.prod(spatial) * math.prod(w.shape)
    passes = int(bool(mask[0])) + int(len(mask) > 1 and bool(mask[1]))
    written = [x if mask[0] else None, w if len(mask) > 1 and mask[1] else None]
    if len(mask) > 2 and mask[2]:
        written.append(gout.like([gout.shape[1 if batched else 0]]))
    return OpCost(forward_flops * passes, total_bytes(args.tensors()) + total_bytes(written), CONV, False, x.cls, note)


def _conv_backward_part(args: Args, name: str) -> OpCost:
    """cudnn_convolution_backward_input/_weight (PyTorch < 1.10): need the recorded sizes."""
    gout = args.need(1, "grad_output")
    sizes = args.int_list(0)
    if sizes is None:
        raise Unmodelled("shape arguments incomplete: convolution backward sizes not recorded")
    # sizes of a batch or a weight: as many dimensions as the gradient (3 or more), none negative
    if len(sizes) < 3 or len(sizes) != len(gout.shape) or min(sizes) < 0:
        raise Unmodelled(f"shape arguments incomplete: convolution backward sizes {sizes} do not fit grad_output "
                         f"{list(gout.shape)}")
    other = args.need(2, "weight" if name.endswith("input") else "input")
    if name.endswith("input"):
        w, grad = other, gout.like(sizes)
    else:
        w = other.like(sizes, gout.type)
        grad = w
    n_spatial = len(w.shape) - 2
    flops = 2.0 * gout.shape[0] * math.prod(gout.shape[-n_spatial:]) * math.prod(w.shape)
    return OpCost(flops, total_bytes(args.tensors()) + grad.nbytes, CONV, False, gout.cls)


# aten ops (without `aten::`): handler, the most arguments of any overload in the PyTorch schemas
OPS: tuple[Op, ...] = (
    Op("convolution", _conv, 10), Op("_convolution", _conv, 14), Op("convolution_overrideable", _conv, 10),
    Op("conv1d", _conv, 7), Op("conv2d", _conv, 7), Op("conv3d", _conv, 7), Op("_convolution_mode", _conv, 7),
    Op("conv_transpose1d", _conv, 8), Op("conv_transpose2d", _conv, 8), Op("conv_transpose3d", _conv, 8),
    Op("cudnn_convolution", _conv, 10), Op("cudnn_convolution_transpose", _conv, 11),
    Op("mkldnn_convolution", _conv, 8), Op("miopen_convolution", _conv, 10),
    Op("miopen_depthwise_convolution", _conv, 10), Op("miopen_convolution_transpose", _conv, 11),
    Op("cudnn_convolution_relu", _conv, 8), Op("cudnn_convolution_add_relu", _conv, 10),
    Op("_slow_conv2d_forward", _conv, 7), Op("thnn_conv2d", _conv, 7), Op("_conv_depthwise2d", _conv, 8),
    Op("conv_depthwise3d", _conv, 8), Op("slow_conv_dilated2d", _conv, 8), Op("slow_conv_dilated3d", _conv, 8),
    Op("slow_conv3d_forward", _conv, 7), Op("slow_conv_transpose2d", _conv, 9),
    Op("slow_conv_transpose3d", _conv, 9), Op("_nnpack_spatial_convolution", _conv, 6),
    Op("convolution_backward", _conv_backward, 14), Op("convolution_backward_overrideable", _conv_backward, 13),
    Op("cudnn_convolution_backward", _conv_backward, None),
    Op("cudnn_convolution_transpose_backward", _conv_backward, None),
    Op("mkldnn_convolution_backward", _conv_backward, None), Op("miopen_convolution_backward", _conv_backward, None),
    Op("_slow_conv2d_backward", _conv_backward, 10), Op("slow_conv3d_backward", _conv_backward, None),
    Op("cudnn_convolution_backward_input", _conv_backward_part, None),
    Op("cudnn_convolution_backward_weight", _conv_backward_part, None),
)
