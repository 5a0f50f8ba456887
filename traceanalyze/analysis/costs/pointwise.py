"""Pointwise (elementwise) ops: one row of facts per op in `POINTWISE`, plus bucketize,
dropout and the QKV bias transform (docs/flops.md).

An elementwise op costs `flops` FLOPs per output element (1 unless the op is several arithmetic
operations); it reads its `arity` tensor operands and writes the broadcast output at the promoted
dtype (`bool` for comparisons). The in-place form (`add_`) reaches the same row through the
registry's trailing-`_` rule and writes into `self` (not read when `write_only_self`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from traceanalyze.analysis.costs.copies import VIEW
from traceanalyze.analysis.costs.family import CostFamily, Op, OpCost
from traceanalyze.analysis.costs.tensors import DTYPES, Args, Tensor, Unmodelled, broadcast, promote, total_bytes

ELEMENTWISE = CostFamily("elementwise", fusible=True)


@dataclass(frozen=True)
class Pointwise:
    """One elementwise op: `arity` tensor operands (later tensors are `out=` destinations);
    `max_args` and `inplace_max_args`: the most arguments of the op and of its in-place form in the
    PyTorch schemas (None: no such schema); `flops` per output element; `bool_output` (comparisons,
    predicates); `write_only_self` (random fills: the in-place form does not read `self`)."""

    arity: int
    max_args: int | None
    inplace_max_args: int | None
    flops: int = 1
    bool_output: bool = False
    write_only_self: bool = False


POINTWISE: dict[str, Pointwise] = {
    # unary
    "_prelu_kernel": Pointwise(1, 2, None), "abs": Pointwise(1, 2, 1), "absolute": Pointwise(1, 2, 1),
    "acos": Pointwise(1, 2, 1), "acosh": Pointwise(1, 2, 1), "angle": Pointwise(1, 2, None),
    "arccos": Pointwise(1, 2, 1), "arcsin": Pointwise(1, 2, 1), "arctan": Pointwise(1, 2, 1),
    "asin": Pointwise(1, 2, 1), "asinh": Pointwise(1, 2, 1), "atan": Pointwise(1, 2, 1), "atanh": Pointwise(1, 2, 1),
    "bernoulli": Pointwise(1, 4, 3, write_only_self=True), "bitwise_not": Pointwise(1, 2, 1),
    "ceil": Pointwise(1, 2, 1), "celu": Pointwise(1, 3, 2), "clamp_max": Pointwise(1, 3, 2),
    "clamp_min": Pointwise(1, 3, 2), "conj_physical": Pointwise(1, 2, 1), "cos": Pointwise(1, 2, 1),
    "cosh": Pointwise(1, 2, 1), "deg2rad": Pointwise(1, 2, 1), "digamma": Pointwise(1, 2, 1),
    "elu": Pointwise(1, 5, 4), "erf": Pointwise(1, 2, 1), "erfc": Pointwise(1, 2, 1), "erfinv": Pointwise(1, 2, 1),
    "exp": Pointwise(1, 2, 1), "exp2": Pointwise(1, 2, 1), "expm1": Pointwise(1, 2, 1),
    "exponential": Pointwise(1, 4, 3, write_only_self=True), "fix": Pointwise(1, 2, 1), "floor": Pointwise(1, 2, 1),
    "frac": Pointwise(1, 2, 1), "gelu": Pointwise(1, 3, 2), "hardshrink": Pointwise(1, 3, None),
    "hardsigmoid": Pointwise(1, 2, 1), "hardswish": Pointwise(1, 2, 1), "hardtanh": Pointwise(1, 4, 3),
    "i0": Pointwise(1, 2, 1), "isfinite": Pointwise(1, 1, None, bool_output=True),
    "isinf": Pointwise(1, 2, None, bool_output=True), "isnan": Pointwise(1, 2, None, bool_output=True),
    "isneginf": Pointwise(1, 2, None, bool_output=True), "isposinf": Pointwise(1, 2, None, bool_output=True),
    "leaky_relu": Pointwise(1, 3, 2), "lgamma": Pointwise(1, 2, 1), "log": Pointwise(1, 2, 1),
    "log10": Pointwise(1, 2, 1), "log1p": Pointwise(1, 2, 1), "log2": Pointwise(1, 2, 1),
    "log_sigmoid_forward": Pointwise(1, 3, None), "logical_not": Pointwise(1, 2, 1, bool_output=True),
    "logit": Pointwise(1, 3, 2), "mish": Pointwise(1, 2, 1), "nan_to_num": Pointwise(1, 5, 4),
    "native_dropout": Pointwise(1, 5, None, flops=2), "neg": Pointwise(1, 2, 1), "negative": Pointwise(1, 2, 1),
    "normal": Pointwise(1, 8, 4, write_only_self=True), "positive": Pointwise(1, 1, None),
    "rad2deg": Pointwise(1, 2, 1), "random": Pointwise(1, 5, 4, write_only_self=True),
    "reciprocal": Pointwise(1, 2, 1), "relu": Pointwise(1, 2, 1), "relu6": Pointwise(1, 1, 1),
    "round": Pointwise(1, 3, 2), "rsqrt": Pointwise(1, 2, 1), "selu": Pointwise(1, 1, 1), "sgn": Pointwise(1, 2, 1),
    "sigmoid": Pointwise(1, 2, 1), "sign": Pointwise(1, 2, 1), "signbit": Pointwise(1, 2, None, bool_output=True),
    "silu": Pointwise(1, 2, 1), "sin": Pointwise(1, 2, 1), "sinh": Pointwise(1, 2, 1),
    "softplus": Pointwise(1, 4, None), "softshrink": Pointwise(1, 3, None), "sqrt": Pointwise(1, 2, 1),
    "square": Pointwise(1, 2, 1), "tan": Pointwise(1, 2, 1), "tanh": Pointwise(1, 2, 1),
    "threshold": Pointwise(1, 4, 3), "tril": Pointwise(1, 3, 2), "triu": Pointwise(1, 3, 2),
    "trunc": Pointwise(1, 2, 1), "uniform": Pointwise(1, 5, 4, write_only_self=True),
    # binary
    "__and__": Pointwise(2, 2, None), "__lshift__": Pointwise(2, 3, None), "__or__": Pointwise(2, 2, None),
    "__rshift__": Pointwise(2, 3, None), "__xor__": Pointwise(2, 2, None),
    "_prelu_kernel_backward": Pointwise(2, 3, None, flops=2), "add": Pointwise(2, 4, 3),
    "arctan2": Pointwise(2, 3, 2), "atan2": Pointwise(2, 3, 2), "bitwise_and": Pointwise(2, 3, 2),
    "bitwise_left_shift": Pointwise(2, 3, 2), "bitwise_or": Pointwise(2, 3, 2),
    "bitwise_right_shift": Pointwise(2, 3, 2), "bitwise_xor": Pointwise(2, 3, 2), "complex": Pointwise(2, 3, None),
    "copysign": Pointwise(2, 3, 2), "div": Pointwise(2, 4, 3), "divide": Pointwise(2, 4, 3),
    "elu_backward": Pointwise(2, 7, None, flops=2), "eq": Pointwise(2, 3, 2, bool_output=True),
    "float_power": Pointwise(2, 3, 2), "floor_divide": Pointwise(2, 3, 2), "fmax": Pointwise(2, 3, None),
    "fmin": Pointwise(2, 3, None), "fmod": Pointwise(2, 3, 2), "gcd": Pointwise(2, 3, 2),
    "ge": Pointwise(2, 3, 2, bool_output=True), "gelu_backward": Pointwise(2, 4, None, flops=2),
    "greater": Pointwise(2, 3, 2, bool_output=True), "greater_equal": Pointwise(2, 3, 2, bool_output=True),
    "gt": Pointwise(2, 3, 2, bool_output=True), "hardsigmoid_backward": Pointwise(2, 3, None, flops=2),
    "hardswish_backward": Pointwise(2, 3, None, flops=2), "hardtanh_backward": Pointwise(2, 5, None),
    "heaviside": Pointwise(2, 3, 2), "hypot": Pointwise(2, 3, 2), "igamma": Pointwise(2, 3, 2),
    "igammac": Pointwise(2, 3, 2), "isclose": Pointwise(2, 5, None, bool_output=True), "lcm": Pointwise(2, 3, 2),
    "ldexp": Pointwise(2, 3, 2), "le": Pointwise(2, 3, 2, bool_output=True),
    "leaky_relu_backward": Pointwise(2, 5, None, flops=2), "less": Pointwise(2, 3, 2, bool_output=True),
    "less_equal": Pointwise(2, 3, 2, bool_output=True), "log_sigmoid_backward": Pointwise(2, 4, None, flops=2),
    "logaddexp": Pointwise(2, 3, None), "logaddexp2": Pointwise(2, 3, None),
    "logical_and": Pointwise(2, 3, 2, bool_output=True), "logical_or": Pointwise(2, 3, 2, bool_output=True),
    "logical_xor": Pointwise(2, 3, 2, bool_output=True), "logit_backward": Pointwise(2, 4, None, flops=2),
    "lt": Pointwise(2, 3, 2, bool_output=True), "masked_fill": Pointwise(2, 4, 3), "maximum": Pointwise(2, 3, None),
    "minimum": Pointwise(2, 3, None), "mish_backward": Pointwise(2, 2, None, flops=2),
    "mse_loss_elementwise": Pointwise(2, None, None), "mul": Pointwise(2, 3, 2), "multiply": Pointwise(2, 3, 2),
    "native_dropout_backward": Pointwise(2, 4, None, flops=2), "ne": Pointwise(2, 3, 2, bool_output=True),
    "nextafter": Pointwise(2, 3, 2), "not_equal": Pointwise(2, 3, 2, bool_output=True),
    "polar": Pointwise(2, 3, None), "pow": Pointwise(2, 3, 2), "relu_backward": Pointwise(2, None, None),
    "remainder": Pointwise(2, 3, 2), "rsub": Pointwise(2, 4, None),
    "sigmoid_backward": Pointwise(2, 3, None, flops=2), "silu_backward": Pointwise(2, 3, None, flops=2),
    "softplus_backward": Pointwise(2, 5, None, flops=2), "sub": Pointwise(2, 4, 3), "subtract": Pointwise(2, 4, 3),
    "tanh_backward": Pointwise(2, 3, None, flops=2), "threshold_backward": Pointwise(2, 4, None),
    "true_divide": Pointwise(2, 3, 2), "xlogy": Pointwise(2, 3, 2),
    # ternary (clamp, clip: self, min, max)
    "addcdiv": Pointwise(3, 5, 4, flops=3), "addcmul": Pointwise(3, 5, 4, flops=3), "clamp": Pointwise(3, 4, 3),
    "clip": Pointwise(3, 4, 3), "lerp": Pointwise(3, 4, 3, flops=3), "where": Pointwise(3, 4, None),
}
_DEFAULT = Pointwise(2, None, None)


def flops_per_element(name: str) -> int:
    """FLOPs per output element of the pointwise op `name` (1 when it is not in `POINTWISE`)."""
    return POINTWISE.get(name, _DEFAULT).flops


def pointwise_inplace(args: Args, name: str) -> OpCost:
    """The in-place form of a `POINTWISE` op (`name` without the trailing `_`)."""
    return elementwise(args, name, True)


def elementwise(args: Args, name: str, inplace: bool = False) -> OpCost:
    """The pointwise op `name` (a `POINTWISE` key) over the recorded operands; `inplace`: the
    result is written into the first operand (`add_`)."""
    spec = POINTWISE.get(name, _DEFAULT)
    operands: list[Tensor] = []
    out_params: list[Tensor] = []
    arity = spec.arity
    for i in range(len(args)):
        t = args.tensor(i)
        if t is None:
            continue
        if len(operands) < arity:
            operands.append(t)
        else:
            out_params.append(t)  # an `out=` tensor: written, not read
    if not operands:
        raise Unmodelled("shape arguments incomplete: no tensor operand recorded")
    if name == "where" and len(args) == 1:
        raise Unmodelled("output size is data-dependent")
    shape = broadcast([t.shape for t in operands])
    if out_params and tuple(out_params[0].shape) != shape and out_params[0].numel != 0:
        # Not an out= tensor after all (e.g. a tensor-valued bound): an operand.
        operands += out_params
        out_params = []
        shape = broadcast([t.shape for t in operands])
    if inplace:
        out = operands[0]
    elif spec.bool_output:
        out = Tensor(shape, "bool")
    elif name == "where":
        values = [t for t in operands[1:]] or operands
        out = Tensor(shape, promote(values))
    else:
        out = Tensor(shape, promote(operands))
    read = [] if inplace and spec.write_only_self else list(operands)
    written: list[Tensor] = [out]
    if name == "native_dropout":
        written.append(Tensor(shape, "bool"))  # the mask
    flops = float(math.prod(shape) * spec.flops)
    return OpCost(flops, total_bytes(read) + total_bytes(written), ELEMENTWISE, False, DTYPES[promote(operands)][1])


def _bucketize(args: Args, name: str) -> OpCost:
    """bucketize(self, boundaries, ...) / searchsorted(sorted_sequence, self, ...): binary search."""
    values, boundaries = (args.need(0, "self"), args.need(1, "boundaries")) if name == "bucketize" else (
        args.need(1, "self"), args.need(0, "sorted_sequence"))
    steps = max(1, math.ceil(math.log2(max(boundaries.shape[-1] if boundaries.shape else 1, 1) + 1)))
    out = values.like(type="int" if args.flag(2, False) else "long int")
    return OpCost(float(values.numel * steps), total_bytes(args.tensors()) + out.nbytes, ELEMENTWISE, False,
                  values.cls)


def _transform_bias_rescale_qkv(args: Args, name: str) -> OpCost:
    """_transform_bias_rescale_qkv(qkv [B,S,3E], qkv_bias [3E], num_heads): add bias, scale q, split."""
    qkv = args.need(0, "qkv")
    return OpCost(float(2 * qkv.numel), total_bytes(args.tensors()) + qkv.nbytes, ELEMENTWISE, False, qkv.cls)


def _dropout(args: Args, name: str) -> OpCost:
    """dropout/feature_dropout (composite): identity when not training, else native_dropout."""
    x = args.need(0, "input")
    train = args.flag(2)
    if train is False or args.scalar(1) == 0:
        return OpCost(0.0, 0.0, VIEW, True, x.cls)
    cost = elementwise(args, "native_dropout", False)
    note = "" if train else "train flag not recorded: training assumed"
    return OpCost(cost.flops, cost.bytes, cost.family, True, cost.dtype, note)


# aten ops (without `aten::`): handler, the most arguments of any overload in the PyTorch schemas
OPS: tuple[Op, ...] = (
    Op("bucketize", _bucketize, 5), Op("searchsorted", _bucketize, 7),
    Op("_transform_bias_rescale_qkv", _transform_bias_rescale_qkv, 6), Op("dropout", _dropout, 3),
    Op("feature_dropout", _dropout, 3), Op("alpha_dropout", _dropout, 3),
)
