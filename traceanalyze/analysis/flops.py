"""FLOPs and bytes of one CPU op, from its name and the shapes the profiler recorded.

`op_cost` is a pure function of one op's recorded arguments; `op_costs` applies it to a whole
`cpu_ops` table. Conventions (docs/flops.md has the full list):

- a multiply-add is 2 FLOPs; a matmul [M,K]x[K,N] is 2*M*N*K, exactly as
  `torch.utils.flop_counter.FlopCounterMode` counts it;
- bytes are an ideal-cache lower bound: every tensor input read once plus every output written once,
  each at its own dtype's element size (documented exceptions: gathers charge only the gathered
  elements, write-only destinations such as `copy_`'s `self` are not read);
- elementwise ops cost 1 FLOP per output element, transcendental functions included, except for
  the few fused ops in `_ELEMENTWISE_FLOPS`;
- causal attention does half the work of non-causal attention.

Ops that only dispatch to child ops (`aten::linear` -> `aten::addmm`) get a cost too, flagged
`composite=True`: adding a composite op to its children counts the work twice.

Examples
--------
>>> cost = op_cost("aten::mm", [[128, 64], [64, 32]], ["c10::BFloat16", "c10::BFloat16"], ["", ""])
>>> cost.flops, cost.bytes, cost.model
(524288.0, 28672.0, 'matmul')
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import polars as pl

CostModel = Literal[
    "matmul", "conv", "attention", "norm", "softmax", "elementwise", "reduction", "pool",
    "copy", "fill", "view", "embedding", "loss", "optimizer",
]
COST_MODELS: tuple[str, ...] = (
    "matmul", "conv", "attention", "norm", "softmax", "elementwise", "reduction", "pool",
    "copy", "fill", "view", "embedding", "loss", "optimizer",
)

OP_COSTS_SCHEMA = pl.Schema(
    {
        "op_id": pl.Int64,
        "flops": pl.Float64,
        "bytes": pl.Float64,
        "cost_model": pl.Enum(COST_MODELS),
        "composite": pl.Boolean,
        "compute_dtype": pl.String,
        "flops_source": pl.Enum(("trace", "model")),
        "cost_note": pl.String,
        "unmodeled_reason": pl.String,
    }
)


@dataclass(frozen=True)
class OpCost:
    """The work of one op: `flops`, `bytes` moved (ideal-cache lower bound) and the formula family.

    `composite` marks ops that only call child ops (their cost duplicates the children's);
    `dtype` is the dtype class of the op's math (`fp32`, `bf16`, `fp8`, ...) for choosing a peak;
    `note` says what had to be assumed, if anything.
    """

    flops: float
    bytes: float
    model: CostModel
    composite: bool = False
    dtype: str | None = None
    note: str = ""


class _Unmodelled(Exception):
    """Raised inside the formulas; turned into a reason string by `op_cost_or_reason`."""


# --------------------------------------------------------------------------------------------
# Recorded arguments
# --------------------------------------------------------------------------------------------

# `Input type` string -> (element size in bytes, dtype class). Strings as PyTorch records them.
_DTYPES: dict[str, tuple[int, str]] = {
    "double": (8, "fp64"),
    "float": (4, "fp32"),
    "c10::Half": (2, "fp16"),
    "c10::BFloat16": (2, "bf16"),
    "c10::Float8_e4m3fn": (1, "fp8"),
    "c10::Float8_e5m2": (1, "fp8"),
    "c10::Float8_e4m3fnuz": (1, "fp8"),
    "c10::Float8_e5m2fnuz": (1, "fp8"),
    "c10::Float8_e8m0fnu": (1, "fp8"),
    "c10::Float4_e2m1fn_x2": (1, "fp4"),  # two fp4 values packed per element
    "long int": (8, "int64"),
    "long": (8, "int64"),
    "long long": (8, "int64"),
    "int64_t": (8, "int64"),
    "int": (4, "int32"),
    "short int": (2, "int16"),
    "short": (2, "int16"),
    "signed char": (1, "int8"),
    "unsigned char": (1, "uint8"),
    "bool": (1, "bool"),
    "short unsigned int": (2, "uint16"),
    "unsigned short": (2, "uint16"),
    "unsigned int": (4, "uint32"),
    "long unsigned int": (8, "uint64"),
    "unsigned long": (8, "uint64"),
    "c10::complex<c10::Half>": (4, "complex32"),
    "c10::complex<float>": (8, "complex64"),
    "c10::complex<double>": (16, "complex128"),
    "c10::qint8": (1, "int8"),
    "c10::quint8": (1, "uint8"),
    "c10::qint32": (4, "int32"),
    "c10::quint4x2": (1, "uint8"),
    "c10::quint2x4": (1, "uint8"),
}

# c10::ScalarType codes, as recorded in Concrete Inputs for `dtype=` arguments.
_SCALAR_TYPE_CODES: dict[int, str] = {
    0: "unsigned char", 1: "signed char", 2: "short int", 3: "int", 4: "long int", 5: "c10::Half",
    6: "float", 7: "double", 8: "c10::complex<c10::Half>", 9: "c10::complex<float>",
    10: "c10::complex<double>", 11: "bool", 12: "c10::qint8", 13: "c10::quint8", 14: "c10::qint32",
    15: "c10::BFloat16", 16: "c10::quint4x2", 17: "c10::quint2x4", 23: "c10::Float8_e5m2",
    24: "c10::Float8_e4m3fn", 25: "c10::Float8_e5m2fnuz", 26: "c10::Float8_e4m3fnuz",
    27: "short unsigned int", 28: "unsigned int", 29: "long unsigned int",
    44: "c10::Float8_e8m0fnu", 45: "c10::Float4_e2m1fn_x2",
}

# Type-promotion rank of dtype classes (the higher wins; fp16 with bf16 gives fp32).
_RANK = {
    "bool": 0, "uint8": 1, "int8": 1, "uint16": 2, "int16": 2, "uint32": 3, "int32": 3,
    "uint64": 4, "int64": 4, "fp4": 5, "fp8": 5, "fp16": 6, "bf16": 6, "fp32": 7, "fp64": 8,
    "complex32": 9, "complex64": 10, "complex128": 11,
}
_FLOAT_CLASSES = {"fp4", "fp8", "fp16", "bf16", "fp32", "fp64"}


def element_size(type_name: str) -> int | None:
    """Bytes per element of a recorded `Input type` (`"c10::BFloat16"` -> 2), None if not a dtype."""
    entry = _DTYPES.get(type_name)
    return entry[0] if entry else None


def dtype_class(type_name: str) -> str | None:
    """The short dtype class of a recorded `Input type` (`"float"` -> `"fp32"`), None if not a dtype."""
    entry = _DTYPES.get(type_name)
    return entry[1] if entry else None


@dataclass(frozen=True)
class _T:
    """One tensor argument: shape and dtype (`type` is the recorded `Input type` string)."""

    shape: tuple[int, ...]
    type: str

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        return _DTYPES[self.type][0]

    @property
    def cls(self) -> str:
        return _DTYPES[self.type][1]

    @property
    def nbytes(self) -> float:
        return float(self.numel * self.itemsize)

    def like(self, shape: Sequence[int] | None = None, type: str | None = None) -> _T:
        return _T(tuple(self.shape if shape is None else shape), self.type if type is None else type)


def _is_int_list(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and all(
        isinstance(v, int) and not isinstance(v, bool) for v in value
    )


def _parse_scalar(text: str) -> Any:
    """A Concrete Inputs string as a Python value: bool, int, float, list, str, or None for ''."""
    text = text.strip()
    if text == "":
        return None
    if text in ("True", "False"):
        return text == "True"
    if text.startswith("[") and text.endswith("]"):
        inner = text[1:-1].strip()
        return [] if not inner else [_parse_scalar(part) for part in inner.split(",")]
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


class _Args:
    """The recorded arguments of one op, with helpers that raise `_Unmodelled` when incomplete."""

    def __init__(self, dims: Sequence[Any], types: Sequence[str] | None,
                 concrete: Sequence[str] | None, strides: Sequence[Any] | None):
        self.dims = list(dims)
        self.types = list(types) if types is not None else [""] * len(self.dims)
        self.concrete = list(concrete) if concrete is not None else None
        self.strides = list(strides) if strides is not None else None
        self.list_dtype: str | None = None  # set when a TensorList's element dtype had to be assumed

    def __len__(self) -> int:
        return len(self.dims)

    def type(self, i: int) -> str:
        return self.types[i] if i < len(self.types) and self.types[i] is not None else ""

    def tensor(self, i: int) -> _T | None:
        """Argument `i` as a tensor, or None if absent, not a tensor, or an undefined tensor."""
        if i >= len(self.dims) or self.type(i) not in _DTYPES:
            return None
        shape = self.dims[i]
        if not _is_int_list(shape):
            return None
        return _T(tuple(shape), self.type(i))

    def need(self, i: int, what: str = "tensor") -> _T:
        t = self.tensor(i)
        if t is None:
            raise _Unmodelled(f"shape arguments incomplete: {what} (argument {i}) not recorded")
        return t

    def tensor_list(self, i: int, dtype: str | None = None) -> list[_T] | None:
        """A TensorList argument as tensors (of `dtype` when the op says what its elements are);
        None if the argument is not a TensorList.

        Raises when only a flattened or empty record survives (old traces, or a loader that keeps
        only the first tensor's shape)."""
        if i >= len(self.dims) or self.type(i) != "TensorList":
            return None
        shapes = self.dims[i]
        if not isinstance(shapes, (list, tuple)) or not shapes or not all(_is_int_list(s) for s in shapes):
            if isinstance(shapes, (list, tuple)) and not shapes and self.concrete is not None:
                return []
            raise _Unmodelled("shape arguments incomplete: TensorList shapes not recorded")
        # The profiler records no element dtype for a TensorList: take the first tensor
        # argument's, else float, and say so in the cost's note.
        if dtype is None:
            dtype = next((t for t in self.types if t in _DTYPES), "float")
            self.list_dtype = dtype
        return [_T(tuple(s), dtype) for s in shapes]

    def tensors(self) -> list[_T]:
        """Every tensor argument, TensorLists expanded."""
        out: list[_T] = []
        for i in range(len(self.dims)):
            if self.type(i) == "TensorList":
                out.extend(self.tensor_list(i) or [])
            else:
                t = self.tensor(i)
                if t is not None:
                    out.append(t)
        return out

    def scalar(self, i: int) -> Any:
        """The parsed Concrete Input `i`; None when not recorded or None."""
        if self.concrete is None or i >= len(self.concrete) or self.concrete[i] is None:
            return None
        return _parse_scalar(str(self.concrete[i]))

    def has_scalars(self) -> bool:
        return self.concrete is not None and len(self.concrete) > 0

    def int_list(self, i: int, n: int | None = None) -> list[int] | None:
        """A list-of-int argument (`[2, 2]` or a bare `2`), expanded to length `n` if given."""
        value = self.scalar(i)
        if isinstance(value, bool):
            return None
        if isinstance(value, int):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            return None
        if n is not None and len(value) == 1 and n != 1:
            value = value * n
        if n is not None and len(value) != n:
            return None
        return value

    def flag(self, i: int, default: bool | None = None) -> bool | None:
        value = self.scalar(i)
        return value if isinstance(value, bool) else default

    def dtype_code(self, i: int) -> str | None:
        """A `dtype=` argument recorded as a c10::ScalarType code, as an `Input type` string."""
        value = self.scalar(i)
        if isinstance(value, int) and not isinstance(value, bool):
            return _SCALAR_TYPE_CODES.get(value)
        return None

    def is_contiguous(self, i: int) -> bool | None:
        if self.strides is None or i >= len(self.strides) or not _is_int_list(self.strides[i]):
            return None
        t = self.tensor(i)
        if t is None or len(self.strides[i]) != len(t.shape):
            return None
        expected = 1
        for size, stride in zip(reversed(t.shape), reversed(self.strides[i])):
            if size != 1 and stride != expected:
                return False
            expected *= size
        return True


def _reads(args: _Args, operands: int) -> list[_T]:
    """The tensors among the first `operands` arguments; later tensors are `out=` destinations."""
    return [t for i in range(min(operands, len(args))) if (t := args.tensor(i)) is not None]


def _bytes(tensors: Sequence[_T | None]) -> float:
    return float(sum(t.nbytes for t in tensors if t is not None))


def _promote(tensors: Sequence[_T]) -> str:
    """The result `Input type` of an elementwise op over `tensors` (dimensioned tensors first)."""
    candidates = [t for t in tensors if t.shape] or list(tensors)
    best = candidates[0]
    for t in candidates[1:]:
        if {t.cls, best.cls} == {"fp16", "bf16"}:
            best = t.like(type="float")
        elif _RANK[t.cls] > _RANK[best.cls]:
            best = t
    return best.type


def _broadcast(shapes: Sequence[Sequence[int]]) -> tuple[int, ...]:
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for axis in range(ndim):
        sizes = {s[len(s) - ndim + axis] for s in shapes if len(s) - ndim + axis >= 0}
        sizes.discard(1)
        if len(sizes) > 1:
            raise _Unmodelled(f"shape arguments inconsistent: cannot broadcast {list(map(list, shapes))}")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def _acc(t: _T) -> str:
    """The accumulation dtype of statistics computed over `t` (float for 16-bit inputs)."""
    return "double" if t.cls == "fp64" else "float"


# --------------------------------------------------------------------------------------------
# Matrix multiplication
# --------------------------------------------------------------------------------------------


def _matmul_2d(a: _T, b: _T) -> tuple[int, int, int]:
    if len(a.shape) != 2 or len(b.shape) != 2:
        raise _Unmodelled(f"shape arguments inconsistent: mm of {list(a.shape)} and {list(b.shape)}")
    (m, k), (k2, n) = a.shape, b.shape
    if k != k2:
        raise _Unmodelled(f"shape arguments inconsistent: mm inner dims {k} != {k2}")
    return m, n, k


def _mm(args: _Args, name: str) -> OpCost:
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
    out = _T((m, n), out_type)
    return OpCost(2.0 * m * n * k, _bytes(_reads(args, operands)) + out.nbytes, "matmul", False, a.cls)


def _bmm(args: _Args, name: str) -> OpCost:
    first = 0 if name == "bmm" else 1  # baddbmm/addbmm: (self, batch1, batch2, ...)
    a, b = args.need(first, "batch1"), args.need(first + 1, "batch2")
    if len(a.shape) != 3 or len(b.shape) != 3 or a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
        raise _Unmodelled(f"shape arguments inconsistent: bmm of {list(a.shape)} and {list(b.shape)}")
    batch, m, k = a.shape
    n = b.shape[2]
    out_type = (args.dtype_code(2) if name == "bmm" and len(args) == 3 else None) or a.type
    out = _T((m, n) if name == "addbmm" else (batch, m, n), out_type)
    read = _reads(args, first + 2)
    return OpCost(2.0 * batch * m * n * k, _bytes(read) + out.nbytes, "matmul", False, a.cls)


def _matmul(args: _Args, name: str) -> OpCost:
    """aten::matmul (composite: dot, mv, mm, bmm after broadcasting) and mv/dot/addmv."""
    if name == "addmv":
        a, b = args.need(1, "mat"), args.need(2, "vec")
    else:
        a, b = args.need(0, "self"), args.need(1, "other")
    sa, sb = list(a.shape), list(b.shape)
    if not sa or not sb:
        raise _Unmodelled("shape arguments inconsistent: matmul of a 0-dim tensor")
    squeeze_m = len(sa) == 1
    squeeze_n = len(sb) == 1
    if squeeze_m:
        sa = [1] + sa
    if squeeze_n:
        sb = sb + [1]
    m, k = sa[-2], sa[-1]
    k2, n = sb[-2], sb[-1]
    if k != k2:
        raise _Unmodelled(f"shape arguments inconsistent: matmul inner dims {k} != {k2}")
    batch = _broadcast([sa[:-2], sb[:-2]])
    out_shape = list(batch) + ([] if squeeze_m else [m]) + ([] if squeeze_n else [n])
    out = a.like(out_shape, _promote([a, b]))
    flops = 2.0 * math.prod(batch) * m * n * k
    composite = name == "matmul"
    return OpCost(flops, _bytes(args.tensors()) + out.nbytes, "matmul", composite, a.cls)


def _linear(args: _Args, name: str) -> OpCost:
    x, w = args.need(0, "input"), args.need(1, "weight")
    if len(w.shape) not in (1, 2) or not x.shape or x.shape[-1] != w.shape[-1]:
        raise _Unmodelled(f"shape arguments inconsistent: linear of {list(x.shape)} and {list(w.shape)}")
    n = w.shape[0] if len(w.shape) == 2 else 1
    k = x.shape[-1]
    rows = math.prod(x.shape[:-1])
    out = x.like(list(x.shape[:-1]) + ([n] if len(w.shape) == 2 else []))
    return OpCost(2.0 * rows * n * k, _bytes(args.tensors()) + out.nbytes, "matmul", True, x.cls)


# --------------------------------------------------------------------------------------------
# Convolution
# --------------------------------------------------------------------------------------------

_CONV = ("input", "weight", "bias", "stride", "padding", "dilation", "transposed", "output_padding", "groups")
_CONV_ND = ("input", "weight", "bias", "stride", "padding", "dilation", "groups")
_CONV_T_ND = ("input", "weight", "bias", "stride", "padding", "output_padding", "groups", "dilation")
_CONV_KERNEL = ("input", "weight", "kernel_size", "bias", "stride", "padding", "dilation")

# name -> (argument roles by position, transposed, composite)
_CONV_FORWARD: dict[str, tuple[tuple[str, ...], bool | None, bool]] = {
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


def _conv_param(args: _Args, roles: Sequence[str], role: str, n: int) -> list[int]:
    if role not in roles:
        return [_CONV_DEFAULTS[role]] * n
    i = roles.index(role)
    value = args.int_list(i, n)
    if value is None and role == "stride" and args.scalar(i) == []:
        return [1] * n
    if value is None:
        raise _Unmodelled(f"shape arguments incomplete: convolution {role} not recorded")
    return value


def _conv(args: _Args, name: str) -> OpCost:
    roles, transposed, composite = _CONV_FORWARD[name]
    if name == "cudnn_convolution" and len(args) >= 9 and args.type(2) not in ("ScalarList", "GenericList"):
        roles = ("input", "weight", "bias", "padding", "stride", "dilation", "groups")  # PyTorch <= 1.7
    x, w = args.need(0, "input"), args.need(1, "weight")
    if transposed is None:
        transposed = args.flag(roles.index("transposed"))
        if transposed is None:
            raise _Unmodelled("shape arguments incomplete: convolution `transposed` not recorded")
    n_spatial = len(w.shape) - 2
    batched = len(x.shape) == len(w.shape)
    if n_spatial < 1 or len(x.shape) - (2 if batched else 1) != n_spatial:
        raise _Unmodelled(f"shape arguments inconsistent: conv of {list(x.shape)} with {list(w.shape)}")
    batch = x.shape[0] if batched else 1
    spatial_in = x.shape[-n_spatial:]
    kernel = w.shape[2:]
    groups_value = args.scalar(roles.index("groups")) if "groups" in roles else 1
    if transposed:
        if not isinstance(groups_value, int) or isinstance(groups_value, bool):
            raise _Unmodelled("shape arguments incomplete: convolution `groups` not recorded")
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
        raise _Unmodelled("shape arguments inconsistent: convolution output would be empty")
    out = x.like(([batch] if batched else []) + [c_out] + spatial_out)
    return OpCost(flops, _bytes(args.tensors()) + out.nbytes, "conv", composite, x.cls)


# name -> (grad_output, input, weight, transposed index or fixed bool, output_mask index, composite)
_CONV_BACKWARD: dict[str, tuple[int, int, int, int | bool, int | None]] = {
    "convolution_backward": (0, 1, 2, 7, 10),
    "convolution_backward_overrideable": (0, 1, 2, 6, 9),
    "cudnn_convolution_backward": (1, 0, 2, False, 10),
    "cudnn_convolution_transpose_backward": (1, 0, 2, True, 11),
    "mkldnn_convolution_backward": (1, 0, 2, False, 7),
    "miopen_convolution_backward": (1, 0, 2, False, 9),
    "_slow_conv2d_backward": (0, 1, 2, False, 6),
    "slow_conv3d_backward": (0, 1, 2, False, 6),
}


def _conv_backward(args: _Args, name: str) -> OpCost:
    gi, xi, wi, transposed_at, mask_at = _CONV_BACKWARD[name]
    gout, x, w = args.need(gi, "grad_output"), args.need(xi, "input"), args.need(wi, "weight")
    transposed = transposed_at if isinstance(transposed_at, bool) else args.flag(transposed_at, False)
    mask = args.scalar(mask_at) if mask_at is not None else None
    note = ""
    if not (isinstance(mask, list) and mask and all(isinstance(v, bool) for v in mask)):
        mask = [True, True, False]
        note = "output_mask not recorded: grad_input and grad_weight assumed"
    n_spatial = len(w.shape) - 2
    if n_spatial < 1 or len(gout.shape) != len(x.shape):
        raise _Unmodelled(f"shape arguments inconsistent: conv backward of {list(gout.shape)}, {list(w.shape)}")
    batched = len(x.shape) == len(w.shape)
    batch = x.shape[0] if batched else 1
    spatial = (x if transposed else gout).shape[-n_spatial:]
    forward_flops = 2.0 * batch * math.prod(spatial) * math.prod(w.shape)
    passes = int(bool(mask[0])) + int(len(mask) > 1 and bool(mask[1]))
    written = [x if mask[0] else None, w if len(mask) > 1 and mask[1] else None]
    if len(mask) > 2 and mask[2]:
        written.append(gout.like([gout.shape[1 if batched else 0]]))
    return OpCost(forward_flops * passes, _bytes(args.tensors()) + _bytes(written), "conv", False, x.cls, note)


def _conv_backward_part(args: _Args, name: str) -> OpCost:
    """cudnn_convolution_backward_input/_weight (PyTorch < 1.10): need the recorded sizes."""
    gout = args.need(1, "grad_output")
    sizes = args.int_list(0)
    if sizes is None:
        raise _Unmodelled("shape arguments incomplete: convolution backward sizes not recorded")
    other = args.need(2, "weight" if name.endswith("input") else "input")
    if name.endswith("input"):
        w, grad = other, gout.like(sizes)
    else:
        w = other.like(sizes, gout.type)
        grad = w
    n_spatial = len(w.shape) - 2
    flops = 2.0 * gout.shape[0] * math.prod(gout.shape[-n_spatial:]) * math.prod(w.shape)
    return OpCost(flops, _bytes(args.tensors()) + grad.nbytes, "conv", False, gout.cls)


# --------------------------------------------------------------------------------------------
# Attention
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Attn:
    """Where an attention op keeps its arguments."""

    backward: bool
    bshd: bool  # [batch, seq, heads, dim] (flash/efficient kernels) instead of [batch, heads, seq, dim]
    q: int
    causal: int | None = None  # index of `is_causal`
    mask_type: int | None = None  # index of `custom_mask_type` (0 none, 1/2 causal)
    cum_seq_q: int | None = None  # varlen: index of the cumulative sequence lengths of q
    lse: int | bool = False  # whether a logsumexp is written: fixed, or the index of the flag
    composite: bool = False


_ATTENTION: dict[str, _Attn] = {
    "scaled_dot_product_attention": _Attn(False, False, 0, causal=5, composite=True),
    "_scaled_dot_product_attention_math": _Attn(False, False, 0, causal=5, composite=True),
    "_scaled_dot_product_flash_attention": _Attn(False, False, 0, causal=4, lse=True),
    "_scaled_dot_product_flash_attention_for_cpu": _Attn(False, False, 0, causal=4, lse=True),
    "_scaled_dot_product_efficient_attention": _Attn(False, False, 0, causal=6, lse=4),
    "_scaled_dot_product_cudnn_attention": _Attn(False, False, 0, causal=6, lse=4),
    "_scaled_dot_product_fused_attention_overrideable": _Attn(False, False, 0, causal=5, lse=True),
    "_cudnn_attention_forward": _Attn(False, False, 0, causal=10, cum_seq_q=4, lse=8),
    "_flash_attention_forward": _Attn(False, True, 0, causal=8, cum_seq_q=3, lse=True),
    "_efficient_attention_forward": _Attn(False, True, 0, mask_type=9, cum_seq_q=4, lse=10),
    "_scaled_dot_product_flash_attention_backward": _Attn(True, False, 1, causal=11),
    "_scaled_dot_product_flash_attention_for_cpu_backward": _Attn(True, False, 1, causal=7),
    "_scaled_dot_product_efficient_attention_backward": _Attn(True, False, 1, causal=11),
    "_scaled_dot_product_cudnn_attention_backward": _Attn(True, False, 1, causal=14),
    "_scaled_dot_product_fused_attention_overrideable_backward": _Attn(True, False, 1, causal=13),
    "_cudnn_attention_backward": _Attn(True, False, 1, causal=14, cum_seq_q=9),
    "_flash_attention_backward": _Attn(True, True, 1, causal=11, cum_seq_q=6),
    "_efficient_attention_backward": _Attn(True, True, 1, mask_type=14, cum_seq_q=6),
}


def _attention(args: _Args, name: str) -> OpCost:
    spec = _ATTENTION[name]
    if name == "_scaled_dot_product_flash_attention" and len(args) >= 10:
        spec = _Attn(False, False, 0, causal=7, lse=True)  # the `.quantized` overload (with descales)
    q, k, v = args.need(spec.q, "query"), args.need(spec.q + 1, "key"), args.need(spec.q + 2, "value")
    notes = []
    cum = args.tensor(spec.cum_seq_q) if spec.cum_seq_q is not None else None
    if len(q.shape) == 3 and cum is not None and len(cum.shape) == 1 and cum.shape[0] >= 2:
        # Variable-length (nested/jagged) batch: [total_tokens, heads, dim].
        sequences = cum.shape[0] - 1
        total_q, hq, dq = q.shape
        total_k, hk, _ = k.shape
        dv = v.shape[-1]
        score_elements = hq * total_q * total_k / sequences
        batch, sq = 1, total_q
        notes.append("variable-length batch: equal sequence lengths assumed")
    else:
        if len(q.shape) != 4 or len(k.shape) != 4 or len(v.shape) != 4:
            raise _Unmodelled(f"shape arguments inconsistent: attention q {list(q.shape)}")
        if spec.bshd:
            batch, sq, hq, dq = q.shape
            _, sk, hk, _ = k.shape
        else:
            batch, hq, sq, dq = q.shape
            _, hk, sk, _ = k.shape
        dv = v.shape[-1]
        if hk == 0 or hq % hk:
            raise _Unmodelled(f"shape arguments inconsistent: {hq} query heads over {hk} key heads")
        score_elements = float(batch * hq * sq * sk)
    if spec.backward:
        flops = 2.0 * score_elements * (3 * dq + 2 * dv)
    else:
        flops = 2.0 * score_elements * (dq + dv)
    causal = False
    if spec.causal is not None:
        flag = args.flag(spec.causal)
        if flag is None and args.has_scalars():
            flag = False
        if flag is None:
            notes.append("is_causal not recorded: non-causal assumed")
        causal = bool(flag)
    elif spec.mask_type is not None:
        mask_type = args.scalar(spec.mask_type)
        causal = isinstance(mask_type, int) and not isinstance(mask_type, bool) and mask_type in (1, 2)
    if causal:
        flops *= 0.5
        notes.append("causal: half the score matrix")
    written: list[_T] = []
    if spec.backward:
        written += [q, k, v]
    else:
        written.append(q.like(list(q.shape[:-1]) + [dv]))
        lse = spec.lse if isinstance(spec.lse, bool) else bool(args.flag(spec.lse, False))
        if lse:
            written.append(_T((batch * hq * sq,), "float"))
    return OpCost(flops, _bytes(args.tensors()) + _bytes(written), "attention", spec.composite, q.cls,
                  "; ".join(notes))


def _multi_head_attention(args: _Args, name: str) -> OpCost:
    """aten::_native_multi_head_attention (composite): QKV projection, attention, out projection."""
    q = args.need(0, "query")
    qkv_w, proj_w = args.need(5, "qkv_weight"), args.need(7, "proj_weight")
    if len(q.shape) != 3 or len(qkv_w.shape) != 2:
        raise _Unmodelled(f"shape arguments inconsistent: multi-head attention q {list(q.shape)}")
    batch, seq, embed = q.shape
    k = args.need(1, "key")
    seq_k = k.shape[1] if len(k.shape) == 3 else seq
    flops = 2.0 * batch * seq * embed * qkv_w.shape[0]  # fused QKV projection
    flops += 2.0 * batch * seq * seq_k * embed * 2  # scores and weighted values, all heads
    flops += 2.0 * batch * seq * embed * proj_w.shape[0]
    out = q.like([batch, seq, proj_w.shape[0]])
    return OpCost(flops, _bytes(args.tensors()) + out.nbytes, "attention", True, q.cls)


# --------------------------------------------------------------------------------------------
# Normalisation and softmax
# --------------------------------------------------------------------------------------------

# FLOPs per input element. Statistics (sum and sum of squares: 3), normalise (subtract, scale: 2),
# affine (multiply, add: 2). RMS norm: statistics 2, normalise 1, affine 1. Backward: twice forward.
_NORM_FLOPS = {"layer": (5, 2), "group": (5, 2), "batch": (5, 2), "rms": (3, 1)}


def _norm_cost(kind: str, x: _T, affine: bool, backward: bool, read: Sequence[_T], written: Sequence[_T | None],
               composite: bool = False, note: str = "", statistics: bool = True) -> OpCost:
    base, extra = _NORM_FLOPS[kind]
    if not statistics:  # batch norm in eval mode normalises with the running statistics
        base -= 3
    per_element = base + (extra if affine else 0)
    flops = float(x.numel * per_element * (2 if backward else 1))
    return OpCost(flops, _bytes(read) + _bytes(written), "norm", composite, x.cls, note)


def _normalized_rows(args: _Args, x: _T, shape_at: int, weight: _T | None) -> tuple[int, str]:
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


def _layer_norm(args: _Args, name: str) -> OpCost:
    x = args.need(0, "input")
    weight = args.tensor(2)
    if name in ("layer_norm", "native_layer_norm"):
        rows, note = _normalized_rows(args, x, 1, weight)
        stats = [_T((rows,), _acc(x))] * 2  # mean, rstd
        return _norm_cost("layer", x, weight is not None, False, args.tensors(), [x] + stats,
                          name == "layer_norm", note)
    if name in ("rms_norm", "_fused_rms_norm"):
        rows, note = _normalized_rows(args, x, 1, weight)
        written = [x] + ([_T((rows,), _acc(x))] if name == "_fused_rms_norm" else [])
        return _norm_cost("rms", x, weight is not None, False, args.tensors(), written, name == "rms_norm", note)
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
    return _norm_cost("rms" if rms else "layer", x, weight is not None, True, args.tensors(), written)


def _group_norm(args: _Args, name: str) -> OpCost:
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
        return _norm_cost("group", x, weight is not None, True, args.tensors(), written)
    note = ""
    if not isinstance(groups, int) or isinstance(groups, bool):
        groups, note = 1, "num_groups not recorded: statistics size not counted"
    batch = x.shape[0] if x.shape else 1
    stats = [_T((batch * groups,), _acc(x))] * (0 if note else 2)
    return _norm_cost("group", x, weight is not None, False, args.tensors(), [x] + stats, composite, note)


# name -> (input index, weight index, grad_output index or None, output_mask index, composite)
_BATCH_NORM: dict[str, tuple[int, int, int | None, int | None, bool]] = {
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


def _batch_norm(args: _Args, name: str) -> OpCost:
    xi, wi, gi, mask_at, composite = _BATCH_NORM[name]
    x, weight = args.need(xi, "input"), args.tensor(wi)
    channels = x.shape[1] if len(x.shape) > 1 else 1
    if gi is None:
        training = {"_native_batch_norm_legit_no_training": False, "_batch_norm_no_update": False,
                    "_batch_norm_with_update": True}.get(name)
        if training is None:  # `training` (instance_norm: `use_input_stats`); legit.no_stats has it at 3
            training = args.flag(3 if name == "_native_batch_norm_legit" and len(args) == 6 else 5, True)
        # Saved mean and inverse std: empty tensors in eval mode.
        stats = [_T((channels,), _acc(x))] * (2 if training else 0)
        return _norm_cost("batch", x, weight is not None, False, args.tensors(), [x] + stats, composite,
                          statistics=bool(training))
    mask = args.scalar(mask_at) if mask_at is not None else None
    if not isinstance(mask, list):
        mask = [True, True, True]
    param = weight if weight is not None else _T((channels,), _acc(x))
    written = [x if mask[0] else None] + [param if len(mask) > i and mask[i] else None for i in (1, 2)]
    return _norm_cost("batch", x, weight is not None, True, args.tensors(), written)


# FLOPs per element. Forward: max, subtract, exp, sum, divide (log_softmax: log per row, subtract).
# Backward: multiply, sum, subtract, multiply (log_softmax: exp, sum, multiply, subtract).
_SOFTMAX_FLOPS = {"forward": 5, "backward": 4}


def _softmax(args: _Args, name: str) -> OpCost:
    if name in ("_softmax_backward_data", "_log_softmax_backward_data"):
        grad, output = args.need(0, "grad_output"), args.need(1, "output")
        out = grad.like(type=args.dtype_code(3) or grad.type)
        read = [grad, output]
        return OpCost(float(out.numel * _SOFTMAX_FLOPS["backward"]), _bytes(read) + out.nbytes, "softmax",
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
    return OpCost(float(x.numel * _SOFTMAX_FLOPS["forward"]), _bytes(read) + out.nbytes, "softmax",
                  composite, x.cls)


# --------------------------------------------------------------------------------------------
# Elementwise
# --------------------------------------------------------------------------------------------

_UNARY = {
    "abs", "absolute", "neg", "negative", "positive", "exp", "exp2", "expm1", "log", "log2", "log10",
    "log1p", "sqrt", "rsqrt", "square", "sin", "cos", "tan", "asin", "acos", "atan", "arcsin", "arccos",
    "arctan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "sigmoid", "logit", "relu", "relu6",
    "gelu", "silu", "mish", "elu", "selu", "celu", "leaky_relu", "hardtanh", "hardsigmoid", "hardswish",
    "hardshrink", "softshrink", "softplus", "threshold", "erf", "erfc", "erfinv", "reciprocal", "sign",
    "sgn", "signbit", "floor", "ceil", "round", "trunc", "fix", "frac", "bitwise_not", "logical_not",
    "isnan", "isinf", "isfinite", "isposinf", "isneginf", "nan_to_num", "clamp", "clip", "clamp_min",
    "clamp_max", "digamma", "lgamma", "i0", "angle", "conj_physical", "deg2rad", "rad2deg", "_prelu_kernel",
    "tril", "triu", "bernoulli", "normal", "uniform", "exponential", "random", "log_sigmoid_forward",
    "native_dropout",
}
_BINARY = {
    "add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "floor_divide", "rsub",
    "remainder", "fmod", "pow", "float_power", "atan2", "arctan2", "maximum", "minimum", "fmax", "fmin",
    "eq", "ne", "lt", "le", "gt", "ge", "greater", "less", "greater_equal", "less_equal", "not_equal",
    "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor",
    "bitwise_left_shift", "bitwise_right_shift", "__and__", "__or__", "__xor__", "__lshift__",
    "__rshift__", "hypot", "copysign", "xlogy", "heaviside", "masked_fill", "threshold_backward",
    "sigmoid_backward", "tanh_backward", "gelu_backward", "silu_backward", "hardswish_backward",
    "hardsigmoid_backward", "hardtanh_backward", "leaky_relu_backward", "elu_backward",
    "softplus_backward", "mish_backward", "logit_backward", "log_sigmoid_backward", "relu_backward",
    "native_dropout_backward", "_prelu_kernel_backward", "mse_loss_elementwise", "polar", "complex",
    "igamma", "igammac", "nextafter", "ldexp", "logaddexp", "logaddexp2", "gcd", "lcm", "isclose",
}
_TERNARY = {"where", "addcmul", "addcdiv", "lerp"}
_BOOL_OUTPUT = {
    "eq", "ne", "lt", "le", "gt", "ge", "greater", "less", "greater_equal", "less_equal", "not_equal",
    "logical_and", "logical_or", "logical_xor", "logical_not", "isnan", "isinf", "isfinite", "isposinf",
    "isneginf", "signbit", "isclose",
}
# FLOPs per output element where the op is more than one arithmetic operation (default 1).
_ELEMENTWISE_FLOPS = {
    "addcmul": 3, "addcdiv": 3, "lerp": 3, "native_dropout": 2, "native_dropout_backward": 2,
    "threshold_backward": 1, "sigmoid_backward": 2, "tanh_backward": 2, "gelu_backward": 2,
    "silu_backward": 2, "hardswish_backward": 2, "hardsigmoid_backward": 2, "hardtanh_backward": 1,
    "leaky_relu_backward": 2, "elu_backward": 2, "softplus_backward": 2, "mish_backward": 2,
    "logit_backward": 2, "log_sigmoid_backward": 2, "_prelu_kernel_backward": 2,
}
_ARITY = {**{n: 1 for n in _UNARY}, **{n: 2 for n in _BINARY}, **{n: 3 for n in _TERNARY}, "clamp": 3, "clip": 3}
# Ops whose first argument is overwritten without being read.
_WRITE_ONLY_SELF = {"bernoulli", "normal", "uniform", "exponential", "random"}


def _elementwise(args: _Args, name: str, inplace: bool) -> OpCost:
    operands: list[_T] = []
    out_params: list[_T] = []
    arity = _ARITY.get(name, 2)
    for i in range(len(args)):
        t = args.tensor(i)
        if t is None:
            continue
        if len(operands) < arity:
            operands.append(t)
        else:
            out_params.append(t)  # an `out=` tensor: written, not read
    if not operands:
        raise _Unmodelled("shape arguments incomplete: no tensor operand recorded")
    if name == "where" and len(args) == 1:
        raise _Unmodelled("output size is data-dependent")
    shape = _broadcast([t.shape for t in operands])
    if out_params and tuple(out_params[0].shape) != shape and out_params[0].numel != 0:
        # Not an out= tensor after all (e.g. a tensor-valued bound): an operand.
        operands += out_params
        out_params = []
        shape = _broadcast([t.shape for t in operands])
    if inplace:
        out = operands[0]
    elif name in _BOOL_OUTPUT:
        out = _T(shape, "bool")
    elif name == "where":
        values = [t for t in operands[1:]] or operands
        out = _T(shape, _promote(values))
    else:
        out = _T(shape, _promote(operands))
    read = [] if inplace and name in _WRITE_ONLY_SELF else list(operands)
    written: list[_T] = [out]
    if name == "native_dropout":
        written.append(_T(shape, "bool"))  # the mask
    flops = float(math.prod(shape) * _ELEMENTWISE_FLOPS.get(name, 1))
    return OpCost(flops, _bytes(read) + _bytes(written), "elementwise", False, _DTYPES[_promote(operands)][1])


# --------------------------------------------------------------------------------------------
# Reductions and pooling
# --------------------------------------------------------------------------------------------

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


def _reduction(args: _Args, name: str) -> OpCost:
    x = args.need(0, "self")
    if name in ("max", "min") and args.tensor(1) is not None and args.tensor(1).shape:
        return _elementwise(args, "maximum", False)  # max(self, other) is elementwise
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
        outs = [_T((out_numel,), "bool")]
    elif name in _INDEX_OUTPUT:
        outs = [_T((out_numel,), "long int")]
    elif name in ("max", "min") and dim_at is not None and len(args) >= min_args:
        outs = [_T((out_numel,), x.type), _T((out_numel,), "long int")]
    elif name in ("std_mean", "var_mean", "aminmax"):
        outs = [_T((out_numel,), x.type)] * 2
    else:
        outs = [_T((out_numel,), x.type)]
    flops = float(x.numel * _REDUCTION_FLOPS.get(name, 1))
    return OpCost(flops, x.nbytes + _bytes(outs), "reduction", False, x.cls, note)


def _scan(args: _Args, name: str) -> OpCost:
    """cumsum, cumprod, cummax, ...: one op per element, output the input's shape."""
    x = args.need(0, "self")
    integral_sum = x.cls not in _FLOAT_CLASSES and name in ("cumsum", "cumprod")  # integers accumulate in int64
    out = x.like(type=args.dtype_code(2) or ("long int" if integral_sum else x.type))
    outs = [out] + ([x.like(type="long int")] if name in ("cummax", "cummin") else [])
    return OpCost(float(x.numel), x.nbytes + _bytes(outs), "reduction", False, x.cls)


_POOL: dict[str, tuple[str, bool]] = {
    # name -> (kind, composite); arguments (self, kernel_size, stride, padding, ...)
    "max_pool1d": ("max", True), "max_pool2d": ("max", True), "max_pool3d": ("max", True),
    "max_pool2d_with_indices": ("max", False), "max_pool3d_with_indices": ("max", False),
    "avg_pool1d": ("avg", True), "avg_pool2d": ("avg", False), "avg_pool3d": ("avg", False),
}


def _pool(args: _Args, name: str) -> OpCost:
    kind, composite = _POOL[name]
    x = args.need(0, "self")
    n = {"1d": 1, "2d": 2, "3d": 3}[re.search(r"([123]d)", name).group(1)]
    kernel = args.int_list(1, n)
    stride = args.int_list(2, n) if args.scalar(2) not in ([], None) else kernel
    padding = args.int_list(3, n)
    dilation = args.int_list(4, n) if kind == "max" else [1] * n
    ceil_mode = args.flag(5 if kind == "max" else 4, False)
    if kernel is None or stride is None or padding is None or dilation is None:
        raise _Unmodelled("shape arguments incomplete: pooling window not recorded")
    spatial_out = []
    for size, k, s, p, d in zip(x.shape[-n:], kernel, stride, padding, dilation):
        span = size + 2 * p - d * (k - 1) - 1
        o = (-(-span // s) if ceil_mode else span // s) + 1
        if ceil_mode and (o - 1) * s >= size + p:
            o -= 1
        spatial_out.append(o)
    out = x.like(list(x.shape[:-n]) + spatial_out)
    written = [out] + ([out.like(type="long int")] if kind == "max" and name.endswith("indices") else [])
    return OpCost(float(out.numel * math.prod(kernel)), x.nbytes + _bytes(written), "pool", composite, x.cls)


def _adaptive_pool(args: _Args, name: str) -> OpCost:
    x = args.need(0, "self")
    n = 3 if "3d" in name else (1 if "1d" in name else 2)
    size = args.int_list(1, n)
    if size is None:
        raise _Unmodelled("shape arguments incomplete: adaptive pooling output size not recorded")
    out = x.like(list(x.shape[:-n]) + size)
    window = math.prod(-(-i // o) for i, o in zip(x.shape[-n:], size))
    written = [out] + ([out.like(type="long int")] if "max" in name else [])
    composite = name in ("adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d")
    return OpCost(float(out.numel * window), x.nbytes + _bytes(written), "pool", composite, x.cls)


def _pool_backward(args: _Args, name: str) -> OpCost:
    """Pooling backward: read grad_output (and indices), write grad_input; `self` is shape-only."""
    grad, x = args.need(0, "grad_output"), args.need(1, "self")
    read = [grad] + [t for i, t in enumerate(args.tensors()) if i >= 2]
    return OpCost(float(x.numel), _bytes(read) + x.nbytes, "pool", False, grad.cls)


# --------------------------------------------------------------------------------------------
# Copies, fills, gathers
# --------------------------------------------------------------------------------------------


def _copy(args: _Args, name: str) -> OpCost:
    if name == "copy_":
        dst, src = args.need(0, "self"), args.tensor(1)
        if src is None:
            return OpCost(0.0, dst.nbytes, "fill", False, dst.cls)
        read = min(src.numel, dst.numel) * src.itemsize
        return OpCost(0.0, float(read) + dst.nbytes, "copy", False, dst.cls)
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
        return OpCost(0.0, 0.0, "view", True, x.cls)
    elif name in ("_local_scalar_dense", "item", "is_nonzero"):
        out = x.like(())
        composite = name != "_local_scalar_dense"
    else:  # clone, contiguous, pin_memory, _pin_memory, roll, flip, ...
        out = x.like()
    return OpCost(0.0, _bytes([x]) + out.nbytes, "copy", composite, x.cls, note)


def _cat(args: _Args, name: str) -> OpCost:
    parts = args.tensor_list(0)
    if parts is None:
        raise _Unmodelled("shape arguments incomplete: tensors not recorded as a TensorList")
    parts = [p for p in parts if p.shape != (0,)]  # legacy empty tensors are skipped by cat
    if not parts:
        raise _Unmodelled("shape arguments incomplete: no input tensors")
    total = sum(p.numel for p in parts)
    out = _T((total,), parts[0].type)
    return OpCost(0.0, _bytes(parts) + out.nbytes, "copy", name in ("concat", "concatenate"), parts[0].cls)


def _fill(args: _Args, name: str) -> OpCost:
    """In-place fills (fill_, zero_) and factories (zeros, ones, full, rand..., *_like, new_*)."""
    note = ""
    if name in ("fill_", "zero_"):
        x = args.need(0, "self")
        return OpCost(0.0, x.nbytes + _bytes(args.tensors()[1:]), "fill", False, x.cls)
    if name.endswith("_like"):
        x = args.need(0, "self")
        code = None if name == "randint_like" else args.dtype_code(2 if name == "full_like" else 1)
        out = x.like(type=code or x.type)
        return OpCost(0.0, out.nbytes, "fill", False, out.cls)
    if name.startswith("new_"):
        x = args.need(0, "self")
        size = args.int_list(1)
        code_at = 3 if name == "new_full" else 2
        if size is None or any(v < 0 for v in size):
            raise _Unmodelled("shape arguments incomplete: size not recorded")
        out = x.like(size, args.dtype_code(code_at) or x.type)
        return OpCost(0.0, out.nbytes, "fill", False, out.cls)
    if name == "scalar_tensor":
        out = _T((), args.dtype_code(1) or "float")
        return OpCost(0.0, out.nbytes, "fill", False, out.cls)
    size_at = next((i for i in range(len(args)) if args.type(i) == "ScalarList"), 0)
    size = args.int_list(size_at)
    if size is None and args.scalar(size_at) == []:
        size = []
    if size is None or any(v < 0 for v in size):  # a negative size is no tensor's
        raise _Unmodelled("shape arguments incomplete: size not recorded")
    code = args.dtype_code(size_at + (2 if name == "full" else 1))
    if code is None:
        code = "long int" if name == "randint" else "float"
        note = "dtype not recorded: default dtype assumed"
    out = _T(tuple(size), code)
    return OpCost(0.0, out.nbytes, "fill", False, out.cls, note)


def _arange(args: _Args, name: str) -> OpCost:
    """arange(end, ...), arange(start, end, ...), arange(start, end, step, ...), or with out=."""
    n_bounds = {5: 1, 6: 2, 7: 3}.get(len(args), 3)
    bounds = [args.scalar(i) for i in range(n_bounds)]
    if not all(isinstance(b, (int, float)) and not isinstance(b, bool) for b in bounds):
        raise _Unmodelled("shape arguments incomplete: arange bounds not recorded")
    start, end, step = {1: (0, bounds[0], 1), 2: (bounds[0], bounds[1], 1)}.get(n_bounds, tuple(bounds))
    if step == 0:
        raise _Unmodelled("shape arguments inconsistent: arange step 0")
    numel = max(0, math.ceil((end - start) / step))
    out_param = args.tensor(n_bounds)
    integral = all(isinstance(b, int) for b in bounds)
    out_type = out_param.type if out_param else (args.dtype_code(n_bounds) or ("long int" if integral else "float"))
    out = _T((numel,), out_type)
    return OpCost(0.0, out.nbytes, "fill", False, out.cls)


def _gather(args: _Args, name: str) -> OpCost:
    """Gathers: the source is charged only for the elements actually gathered."""
    if name == "gather":
        src, index = args.need(0, "self"), args.need(2, "index")
        out = src.like(index.shape)
        return OpCost(0.0, index.nbytes + 2 * out.nbytes, "copy", False, src.cls)
    if name == "index_select":
        src, index = args.need(0, "self"), args.need(2, "index")
        dim = args.scalar(1)
        if not isinstance(dim, int) or isinstance(dim, bool):
            if len(src.shape) > 1:
                raise _Unmodelled("shape arguments incomplete: index_select dim not recorded")
            dim = 0
        shape = list(src.shape)
        if shape:
            shape[dim % len(shape)] = index.numel
        out = src.like(shape)
        return OpCost(0.0, index.nbytes + 2 * out.nbytes, "copy", False, src.cls)
    if name == "embedding":
        weight, indices = args.need(0, "weight"), args.need(1, "indices")
        if len(weight.shape) != 2:
            raise _Unmodelled(f"shape arguments inconsistent: embedding table {list(weight.shape)}")
        out = weight.like(list(indices.shape) + [weight.shape[1]])
        return OpCost(0.0, indices.nbytes + 2 * out.nbytes, "embedding", True, weight.cls)
    # index(self, indices): advanced indexing on the leading dims with integer index tensors
    src = args.need(0, "self")
    indices = args.tensor_list(1, "long int")  # integer index tensors
    if indices is None:
        raise _Unmodelled("shape arguments incomplete: indices recorded without shapes (output size unknown)")
    if any(t.cls == "bool" for t in indices):
        raise _Unmodelled("output size is data-dependent (boolean mask)")
    out = src.like(list(_broadcast([t.shape for t in indices])) + list(src.shape[len(indices):]))
    return OpCost(0.0, _bytes(indices) + 2 * out.nbytes, "copy", False, src.cls)


def _scatter(args: _Args, name: str) -> OpCost:
    """Scatters write (and for *_add read-modify-write) only the indexed elements of `self`."""
    dst = args.need(0, "self")
    if name in ("index_put", "index_put_", "_index_put_impl_"):  # (self, indices, values, accumulate)
        indices, values = args.tensor_list(1, "long int"), args.tensor(2)
        if indices is None and values is None:
            raise _Unmodelled("shape arguments incomplete: indices and values not recorded")
        if indices is None:  # indices recorded with an empty type: the values say how many elements
            touched, read = values.numel, values.nbytes
        elif any(t.cls == "bool" for t in indices):
            raise _Unmodelled("output size is data-dependent (boolean mask)")
        else:
            touched = math.prod(_broadcast([t.shape for t in indices])) * math.prod(dst.shape[len(indices):])
            read = _bytes(indices) + _bytes([values])
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
                    raise _Unmodelled("shape arguments incomplete: index_fill dim not recorded")
                touched = dst.numel // max(dst.shape[dim % len(dst.shape)], 1) * index.numel
        read = index.nbytes + (min(src.numel, touched) * src.itemsize if src is not None else 0)
        inplace = name.endswith("_")
    written = touched * dst.itemsize * (2 if accumulate else 1)  # accumulate: read-modify-write
    if not inplace:
        written += 2 * dst.nbytes  # out-of-place: a full copy of self first
    return OpCost(float(touched if accumulate else 0), float(read + written), "copy", False, dst.cls)


def _gather_backward(args: _Args, name: str) -> OpCost:
    """gather_backward(grad, self, dim, index, sparse_grad) (composite): zeros, then scatter_add."""
    grad, x, index = args.need(0, "grad"), args.need(1, "self"), args.need(3, "index")
    moved = grad.nbytes + index.nbytes + x.like(type=grad.type).nbytes + 2 * grad.numel * grad.itemsize
    return OpCost(float(grad.numel), moved, "copy", True, grad.cls)


def _bucketize(args: _Args, name: str) -> OpCost:
    """bucketize(self, boundaries, ...) / searchsorted(sorted_sequence, self, ...): binary search."""
    values, boundaries = (args.need(0, "self"), args.need(1, "boundaries")) if name == "bucketize" else (
        args.need(1, "self"), args.need(0, "sorted_sequence"))
    steps = max(1, math.ceil(math.log2(max(boundaries.shape[-1] if boundaries.shape else 1, 1) + 1)))
    out = values.like(type="int" if args.flag(2, False) else "long int")
    return OpCost(float(values.numel * steps), _bytes(args.tensors()) + out.nbytes, "elementwise", False,
                  values.cls)


def _transform_bias_rescale_qkv(args: _Args, name: str) -> OpCost:
    """_transform_bias_rescale_qkv(qkv [B,S,3E], qkv_bias [3E], num_heads): add bias, scale q, split."""
    qkv = args.need(0, "qkv")
    return OpCost(float(2 * qkv.numel), _bytes(args.tensors()) + qkv.nbytes, "elementwise", False, qkv.cls)


def _embedding_backward(args: _Args, name: str) -> OpCost:
    grad, indices = args.need(0, "grad_output"), args.need(1, "indices")
    num_weights = args.scalar(2 if name != "_embedding_bag_dense_backward" else 5)
    if not isinstance(num_weights, int) or isinstance(num_weights, bool):
        raise _Unmodelled("shape arguments incomplete: num_weights not recorded")
    dim = grad.shape[-1] if grad.shape else 1
    out = grad.like([num_weights, dim])
    composite = name in ("embedding_backward", "_embedding_bag_backward")
    return OpCost(float(grad.numel), _bytes(args.tensors()) + out.nbytes, "embedding", composite, grad.cls)


def _embedding_bag(args: _Args, name: str) -> OpCost:
    weight, indices, offsets = args.need(0, "weight"), args.need(1, "indices"), args.need(2, "offsets")
    if len(weight.shape) != 2:
        raise _Unmodelled(f"shape arguments inconsistent: embedding table {list(weight.shape)}")
    dim = weight.shape[1]
    bags = offsets.numel - (1 if args.flag(7, False) else 0)
    gathered = indices.numel * dim
    per_sample = args.tensor(6)
    read = _bytes([indices, offsets, per_sample]) + gathered * weight.itemsize
    written = _bytes([weight.like([bags, dim]), _T((indices.numel,), "long int"), _T((bags,), "long int")])
    return OpCost(float(gathered), read + written, "embedding", name == "embedding_bag", weight.cls)


def _pad(args: _Args, name: str) -> OpCost:
    x = args.need(0, "self")
    pad = args.int_list(1)
    if pad is None or len(pad) % 2:
        raise _Unmodelled("shape arguments incomplete: pad not recorded")
    shape = list(x.shape)
    for j in range(len(pad) // 2):
        shape[-1 - j] += pad[2 * j] + pad[2 * j + 1]
    out = x.like(shape)
    return OpCost(0.0, x.nbytes + out.nbytes, "copy", False, x.cls)


def _repeat(args: _Args, name: str) -> OpCost:
    x = args.need(0, "self")
    repeats = args.int_list(1)
    if repeats is None:
        raise _Unmodelled("shape arguments incomplete: repeats not recorded")
    shape = [1] * (len(repeats) - len(x.shape)) + list(x.shape)
    out = x.like([s * r for s, r in zip(shape, repeats)])
    return OpCost(0.0, x.nbytes + out.nbytes, "copy", False, x.cls)


def _sized_backward(args: _Args, name: str) -> OpCost:
    """slice_backward/select_backward/...(grad_output, input_sizes, ...): zero-fill, then copy."""
    grad = args.need(0, "grad_output")
    sizes = args.int_list(1)
    if sizes is None:
        raise _Unmodelled("shape arguments incomplete: input_sizes not recorded")
    out = grad.like(sizes)
    return OpCost(0.0, grad.nbytes + out.nbytes, "copy", False, grad.cls)


# --------------------------------------------------------------------------------------------
# Losses
# --------------------------------------------------------------------------------------------

# FLOPs per input element of the elementwise part (the reduction adds 1 per element).
_LOSS_FLOPS = {
    "binary_cross_entropy": 4, "binary_cross_entropy_with_logits": 5, "mse_loss": 2, "l1_loss": 2,
    "smooth_l1_loss": 4, "huber_loss": 4, "kl_div": 3, "soft_margin_loss": 4,
}
_LOSS_COMPOSITE = {"binary_cross_entropy_with_logits", "l1_loss", "kl_div", "soft_margin_loss"}


def _reduction_code(args: _Args, i: int) -> tuple[int, str]:
    value = args.scalar(i)
    if isinstance(value, int) and not isinstance(value, bool):
        return value, ""
    return 1, "reduction not recorded: mean assumed"


def _pointwise_loss(args: _Args, name: str) -> OpCost:
    if name.endswith("_backward"):
        base = name[: -len("_backward")]
        grad, x = args.need(0, "grad_output"), args.need(1, "self")
        flops = float(x.numel * (_LOSS_FLOPS.get(base, 2)))
        operands = {"binary_cross_entropy": 4, "mse_loss": 3}.get(base, 3)  # then reduction [, beta]
        return OpCost(flops, _bytes(_reads(args, operands)) + x.nbytes, "loss", False, x.cls)
    x = args.need(0, "self")
    reduction_at = {"binary_cross_entropy": 3, "binary_cross_entropy_with_logits": 4}.get(name, 2)
    reduction, note = _reduction_code(args, reduction_at)
    out = x.like(() if reduction else None)
    flops = float(x.numel * (_LOSS_FLOPS[name] + (1 if reduction else 0)))
    return OpCost(flops, _bytes(args.tensors()) + out.nbytes, "loss", name in _LOSS_COMPOSITE, x.cls, note)


def _nll_loss(args: _Args, name: str) -> OpCost:
    backward = name.endswith("_backward")
    x = args.need(1 if backward else 0, "self")
    target = args.need(2 if backward else 1, "target")
    weight = args.tensor(3 if backward else 2)
    rows = target.numel
    if backward:
        # grad_input is zero-filled and written in full; `self` is only read for its shape.
        read = [args.tensor(0), target, weight, args.tensor(6)]
        return OpCost(float(rows), _bytes(read) + x.nbytes, "loss", False, x.cls)
    reduction, note = _reduction_code(args, 3)
    out = x.like(() if reduction else target.shape)
    gathered = rows * x.itemsize  # one log-probability per target
    read = _bytes([target, weight]) + gathered
    composite = name in ("nll_loss", "nll_loss_nd")
    return OpCost(float(rows), read + out.nbytes + _T((), x.type).nbytes, "loss", composite, x.cls, note)


def _cross_entropy(args: _Args, name: str) -> OpCost:
    """cross_entropy_loss (composite): log_softmax over the class dim, then nll_loss."""
    x, target = args.need(0, "self"), args.need(1, "target")
    reduction, note = _reduction_code(args, 3)
    soft_target = target.cls in _FLOAT_CLASSES  # class probabilities instead of indices
    rows = target.numel if not soft_target else x.numel
    flops = float(x.numel * _SOFTMAX_FLOPS["forward"] + rows)
    log_probs = x.like()
    out = x.like(() if reduction else (target.shape if not soft_target else x.shape[:1]))
    moved = x.nbytes + log_probs.nbytes  # log_softmax reads logits, writes log-probabilities
    moved += _bytes([target, args.tensor(2)]) + rows * x.itemsize + out.nbytes
    return OpCost(flops, moved, "loss", True, x.cls, note)


# --------------------------------------------------------------------------------------------
# Optimizers: _foreach_* and fused optimizers
# --------------------------------------------------------------------------------------------

_FOREACH_REDUCTIONS = {"norm": 2, "max": 1}


def _foreach(args: _Args, name: str) -> OpCost:
    """_foreach_<op>[_]: the elementwise op (or per-tensor reduction) applied to each list element."""
    op = name[len("_foreach_"):].rstrip("_")
    lists: list[list[_T]] = []
    singles: list[_T] = []
    for i in range(len(args)):
        lst = args.tensor_list(i)
        if lst is not None:
            lists.append(lst)
        elif (t := args.tensor(i)) is not None:
            singles.append(t)
    if not lists or not lists[0]:
        raise _Unmodelled("shape arguments incomplete: TensorList shapes not recorded")
    selves = lists[0]
    if any(len(lst) != len(selves) for lst in lists):
        raise _Unmodelled("shape arguments inconsistent: TensorLists of different lengths")
    numel = sum(t.numel for t in selves)
    read = [t for lst in lists for t in lst] + singles
    written = list(selves)
    if op in _FOREACH_REDUCTIONS:  # one scalar per tensor
        written = [_T((), selves[0].type)] * len(selves)
        flops = float(numel * _FOREACH_REDUCTIONS[op])
    elif op == "zero":
        read, flops = [], 0.0
    elif op == "copy":  # (self, src, non_blocking): self is only written
        read, flops = [t for lst in lists[1:] for t in lst], 0.0
    else:
        flops = float(numel * _ELEMENTWISE_FLOPS.get(op, 1))
    return OpCost(flops, _bytes(read) + _bytes(written), "optimizer", False, selves[0].cls)


# FLOPs per parameter element. Adam/AdamW: weight decay 2, first moment 3, second moment 4,
# bias-corrected step (sqrt, divide, add eps, multiply, subtract) 5. SGD: weight decay 2, momentum 2, step 2.
_FUSED_OPTIMIZER_FLOPS = {"_fused_adam_": 14, "_fused_adamw_": 14, "_fused_adagrad_": 8, "_fused_sgd_": 6}


def _fused_optimizer(args: _Args, name: str) -> OpCost:
    lists = [args.tensor_list(i) for i in range(len(args)) if args.type(i) == "TensorList"]
    lists = [lst for lst in lists if lst]
    if not lists:
        raise _Unmodelled("shape arguments incomplete: TensorList shapes not recorded")
    params = lists[0]
    numel = sum(t.numel for t in params)
    # Every non-empty list is read (params, grads, states); params and state lists are written back.
    read = [t for lst in lists for t in lst if t.shape]
    states = [t for lst in lists[2:] for t in lst if t.shape and math.prod(t.shape) > 1]
    written = list(params) + states
    return OpCost(float(numel * _FUSED_OPTIMIZER_FLOPS[name]), _bytes(read) + _bytes(written), "optimizer",
                  False, params[0].cls)


# --------------------------------------------------------------------------------------------
# Views and other zero-cost ops
# --------------------------------------------------------------------------------------------

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


def _view(args: _Args, name: str) -> OpCost:
    first = args.tensor(0)
    return OpCost(0.0, 0.0, "view", name in _COMPOSITE_VIEWS, first.cls if first else None)


def _dropout(args: _Args, name: str) -> OpCost:
    """dropout/feature_dropout (composite): identity when not training, else native_dropout."""
    x = args.need(0, "input")
    train = args.flag(2)
    if train is False or args.scalar(1) == 0:
        return OpCost(0.0, 0.0, "view", True, x.cls)
    cost = _elementwise(args, "native_dropout", False)
    note = "" if train else "train flag not recorded: training assumed"
    return OpCost(cost.flops, cost.bytes, cost.model, True, cost.dtype, note)


# --------------------------------------------------------------------------------------------
# Dispatch
# --------------------------------------------------------------------------------------------

_Handler = Callable[[_Args, str], OpCost]
_HANDLERS: dict[str, _Handler] = {
    "mm": _mm, "addmm": _mm, "_addmm_activation": _mm, "_scaled_mm": _mm, "_int_mm": _mm,
    "bmm": _bmm, "baddbmm": _bmm, "addbmm": _bmm,
    "matmul": _matmul, "mv": _matmul, "dot": _matmul, "vdot": _matmul, "addmv": _matmul,
    "linear": _linear,
    **{name: _conv for name in _CONV_FORWARD},
    **{name: _conv_backward for name in _CONV_BACKWARD},
    "cudnn_convolution_backward_input": _conv_backward_part,
    "cudnn_convolution_backward_weight": _conv_backward_part,
    **{name: _attention for name in _ATTENTION},
    "_native_multi_head_attention": _multi_head_attention,
    "layer_norm": _layer_norm, "native_layer_norm": _layer_norm, "native_layer_norm_backward": _layer_norm,
    "rms_norm": _layer_norm, "_fused_rms_norm": _layer_norm, "_fused_rms_norm_backward": _layer_norm,
    "group_norm": _group_norm, "native_group_norm": _group_norm, "native_group_norm_backward": _group_norm,
    **{name: _batch_norm for name in _BATCH_NORM},
    "softmax": _softmax, "_softmax": _softmax, "log_softmax": _softmax, "_log_softmax": _softmax,
    "_safe_softmax": _softmax, "_masked_softmax": _softmax, "special_softmax": _softmax,
    "_softmax_backward_data": _softmax, "_log_softmax_backward_data": _softmax,
    **{name: _reduction for name in _REDUCTIONS},
    "cumsum": _scan, "cumprod": _scan, "cummax": _scan, "cummin": _scan, "logcumsumexp": _scan,
    **{name: _pool for name in _POOL},
    "adaptive_avg_pool1d": _adaptive_pool, "adaptive_avg_pool2d": _adaptive_pool,
    "adaptive_avg_pool3d": _adaptive_pool, "_adaptive_avg_pool2d": _adaptive_pool,
    "_adaptive_avg_pool3d": _adaptive_pool, "adaptive_max_pool2d": _adaptive_pool,
    "adaptive_max_pool3d": _adaptive_pool,
    "max_pool2d_with_indices_backward": _pool_backward, "max_pool3d_with_indices_backward": _pool_backward,
    "avg_pool2d_backward": _pool_backward, "avg_pool3d_backward": _pool_backward,
    "_adaptive_avg_pool2d_backward": _pool_backward, "_adaptive_avg_pool3d_backward": _pool_backward,
    "adaptive_max_pool2d_backward": _pool_backward, "adaptive_max_pool3d_backward": _pool_backward,
    "copy_": _copy, "_to_copy": _copy, "to": _copy, "clone": _copy, "contiguous": _copy,
    "_local_scalar_dense": _copy, "item": _copy, "pin_memory": _copy, "_pin_memory": _copy, "roll": _copy,
    "flip": _copy, "narrow_copy": _copy, "type_as": _copy, "is_nonzero": _copy,
    "gather_backward": _gather_backward, "bucketize": _bucketize, "searchsorted": _bucketize,
    "_transform_bias_rescale_qkv": _transform_bias_rescale_qkv,
    "cat": _cat, "_cat": _cat, "concat": _cat, "concatenate": _cat, "stack": _cat, "_stack": _cat,
    "hstack": _cat, "vstack": _cat,
    "fill_": _fill, "zero_": _fill, "zeros": _fill, "ones": _fill, "full": _fill, "rand": _fill,
    "randn": _fill, "randint": _fill, "zeros_like": _fill, "ones_like": _fill, "full_like": _fill,
    "rand_like": _fill, "randn_like": _fill, "randint_like": _fill, "new_zeros": _fill, "new_ones": _fill,
    "new_full": _fill, "scalar_tensor": _fill, "arange": _arange,
    "gather": _gather, "index_select": _gather, "embedding": _gather, "index": _gather,
    "scatter": _scatter, "scatter_": _scatter, "scatter_add": _scatter, "scatter_add_": _scatter,
    "scatter_reduce": _scatter, "scatter_reduce_": _scatter, "index_add": _scatter, "index_add_": _scatter,
    "index_copy": _scatter, "index_copy_": _scatter, "index_fill": _scatter, "index_fill_": _scatter,
    "index_put": _scatter, "index_put_": _scatter, "_index_put_impl_": _scatter,
    "embedding_backward": _embedding_backward, "embedding_dense_backward": _embedding_backward,
    "_embedding_bag_dense_backward": _embedding_backward,
    "embedding_bag": _embedding_bag, "_embedding_bag": _embedding_bag,
    "_embedding_bag_forward_only": _embedding_bag,
    "constant_pad_nd": _pad, "pad": _pad, "repeat": _repeat,
    "slice_backward": _sized_backward, "select_backward": _sized_backward,
    "unfold_backward": _sized_backward, "diagonal_backward": _sized_backward,
    "as_strided_scatter": _sized_backward,
    **{name: _pointwise_loss for name in _LOSS_FLOPS},
    **{f"{name}_backward": _pointwise_loss for name in _LOSS_FLOPS if name not in _LOSS_COMPOSITE},
    "nll_loss": _nll_loss, "nll_loss_nd": _nll_loss, "nll_loss_forward": _nll_loss,
    "nll_loss2d_forward": _nll_loss, "nll_loss_backward": _nll_loss, "nll_loss2d_backward": _nll_loss,
    "cross_entropy_loss": _cross_entropy,
    **{name: _fused_optimizer for name in _FUSED_OPTIMIZER_FLOPS},
    "dropout": _dropout, "feature_dropout": _dropout, "alpha_dropout": _dropout,
    **{name: _view for name in _VIEWS},
}
# The most arguments any overload of the op takes (out= variants included), from the PyTorch 2.13
# schemas. A record with more is corrupted (some Kineto versions prepend stale arguments).
_MAX_ARGS: dict[str, int] = {
    "__and__": 2, "__lshift__": 3, "__or__": 2, "__rshift__": 3, "__xor__": 2, "_adaptive_avg_pool2d": 3,
    "_adaptive_avg_pool2d_backward": 3, "_adaptive_avg_pool3d": 3, "_adaptive_avg_pool3d_backward": 3,
    "_addmm_activation": 7, "_batch_norm_impl_index": 9, "_batch_norm_no_update": 11,
    "_batch_norm_with_update": 11, "_conv_depthwise2d": 8, "_convolution": 14, "_convolution_mode": 7,
    "_cudnn_attention_backward": 16, "_cudnn_attention_forward": 13, "_efficient_attention_backward": 20,
    "_efficient_attention_forward": 14, "_embedding_bag": 13, "_embedding_bag_dense_backward": 11,
    "_embedding_bag_forward_only": 13, "_flash_attention_backward": 17, "_flash_attention_forward": 18,
    "_fused_adagrad_": 11, "_fused_adam_": 15, "_fused_adamw_": 15, "_fused_rms_norm": 4,
    "_fused_rms_norm_backward": 6, "_fused_sgd_": 12, "_has_compatible_shallow_copy_type": 2,
    "_index_put_impl_": 5, "_int_mm": 3, "_local_scalar_dense": 1, "_log_softmax": 4,
    "_log_softmax_backward_data": 5, "_masked_softmax": 5, "_native_batch_norm_legit": 11,
    "_native_batch_norm_legit_no_training": 10, "_native_multi_head_attention": 15,
    "_nested_tensor_from_mask": 4, "_nnpack_spatial_convolution": 6, "_pin_memory": 3, "_prelu_kernel": 2,
    "_prelu_kernel_backward": 3, "_reshape_alias": 3, "_safe_softmax": 3,
    "_scaled_dot_product_attention_math": 9, "_scaled_dot_product_cudnn_attention": 9,
    "_scaled_dot_product_cudnn_attention_backward": 16, "_scaled_dot_product_efficient_attention": 8,
    "_scaled_dot_product_efficient_attention_backward": 13, "_scaled_dot_product_flash_attention": 10,
    "_scaled_dot_product_flash_attention_backward": 15, "_scaled_dot_product_flash_attention_for_cpu": 7,
    "_scaled_dot_product_flash_attention_for_cpu_backward": 10,
    "_scaled_dot_product_fused_attention_overrideable": 8,
    "_scaled_dot_product_fused_attention_overrideable_backward": 17, "_scaled_mm": 9, "_shape_as_tensor": 1,
    "_slow_conv2d_backward": 10, "_slow_conv2d_forward": 7, "_softmax": 4, "_softmax_backward_data": 5,
    "_stack": 3, "_to_copy": 7, "_to_dense": 4, "_transform_bias_rescale_qkv": 6, "_unique": 5,
    "_unique2": 7, "_unsafe_view": 3, "abs": 2, "abs_": 1, "absolute": 2, "absolute_": 1, "acos": 2,
    "acos_": 1, "acosh": 2, "acosh_": 1, "adaptive_avg_pool1d": 3, "adaptive_avg_pool2d": 3,
    "adaptive_avg_pool3d": 3, "adaptive_max_pool2d": 4, "adaptive_max_pool2d_backward": 4,
    "adaptive_max_pool3d": 4, "adaptive_max_pool3d_backward": 4, "add": 4, "add_": 3, "addbmm": 6,
    "addcdiv": 5, "addcdiv_": 4, "addcmul": 5, "addcmul_": 4, "addmm": 7, "addmv": 6, "adjoint": 1,
    "alias": 1, "all": 4, "alpha_dropout": 3, "amax": 4, "amin": 4, "aminmax": 5, "angle": 2, "any": 4,
    "arange": 7, "arccos": 2, "arccos_": 1, "arcsin": 2, "arcsin_": 1, "arctan": 2, "arctan2": 3,
    "arctan2_": 2, "arctan_": 1, "argmax": 4, "argmin": 4, "argwhere": 1, "as_strided": 4, "as_strided_": 4,
    "as_strided_scatter": 6, "asin": 2, "asin_": 1, "asinh": 2, "asinh_": 1, "atan": 2, "atan2": 3,
    "atan2_": 2, "atan_": 1, "atanh": 2, "atanh_": 1, "atleast_1d": 1, "atleast_2d": 1, "atleast_3d": 1,
    "avg_pool1d": 7, "avg_pool2d": 8, "avg_pool2d_backward": 9, "avg_pool3d": 8, "avg_pool3d_backward": 9,
    "baddbmm": 7, "batch_norm": 9, "batch_norm_backward": 11, "bernoulli": 4, "bernoulli_": 3,
    "binary_cross_entropy": 5, "binary_cross_entropy_backward": 6, "binary_cross_entropy_with_logits": 6,
    "bitwise_and": 3, "bitwise_and_": 2, "bitwise_left_shift": 3, "bitwise_left_shift_": 2, "bitwise_not": 2,
    "bitwise_not_": 1, "bitwise_or": 3, "bitwise_or_": 2, "bitwise_right_shift": 3,
    "bitwise_right_shift_": 2, "bitwise_xor": 3, "bitwise_xor_": 2, "bmm": 4, "broadcast_tensors": 1,
    "bucketize": 5, "can_cast": 2, "cat": 3, "ceil": 2, "ceil_": 1, "celu": 3, "celu_": 2, "chunk": 3,
    "clamp": 4, "clamp_": 3, "clamp_max": 3, "clamp_max_": 2, "clamp_min": 3, "clamp_min_": 2, "clip": 4,
    "clip_": 3, "clone": 3, "coalesce": 1, "complex": 3, "concat": 3, "concatenate": 3, "conj": 1,
    "conj_physical": 2, "conj_physical_": 1, "constant_pad_nd": 4, "contiguous": 2, "conv1d": 7, "conv2d": 7,
    "conv3d": 7, "conv_depthwise3d": 8, "conv_transpose1d": 8, "conv_transpose2d": 8, "conv_transpose3d": 8,
    "convolution": 10, "convolution_backward": 14, "convolution_backward_overrideable": 13,
    "convolution_overrideable": 10, "copy_": 3, "copysign": 3, "copysign_": 2, "cos": 2, "cos_": 1,
    "cosh": 2, "cosh_": 1, "count_nonzero": 3, "cross_entropy_loss": 6, "cudnn_batch_norm": 12,
    "cudnn_batch_norm_backward": 12, "cudnn_convolution": 10, "cudnn_convolution_add_relu": 10,
    "cudnn_convolution_relu": 8, "cudnn_convolution_transpose": 11, "cummax": 4, "cummin": 4, "cumprod": 4,
    "cumsum": 4, "deg2rad": 2, "deg2rad_": 1, "detach": 1, "detach_": 1, "diagonal": 4,
    "diagonal_backward": 6, "digamma": 2, "digamma_": 1, "div": 4, "div_": 3, "divide": 4, "divide_": 3,
    "dot": 3, "dropout": 3, "elu": 5, "elu_": 4, "elu_backward": 7, "embedding": 6, "embedding_backward": 6,
    "embedding_bag": 9, "embedding_dense_backward": 6, "empty": 6, "empty_like": 6, "empty_permuted": 6,
    "empty_strided": 6, "eq": 3, "eq_": 2, "erf": 2, "erf_": 1, "erfc": 2, "erfc_": 1, "erfinv": 2,
    "erfinv_": 1, "exp": 2, "exp2": 2, "exp2_": 1, "exp_": 1, "expand": 3, "expand_as": 2, "expm1": 2,
    "expm1_": 1, "exponential": 4, "exponential_": 3, "feature_dropout": 3, "fill_": 2, "fix": 2, "fix_": 1,
    "flatten": 3, "flip": 3, "float_power": 3, "float_power_": 2, "floor": 2, "floor_": 1, "floor_divide": 3,
    "floor_divide_": 2, "fmax": 3, "fmin": 3, "fmod": 3, "fmod_": 2, "frac": 2, "frac_": 1,
    "frobenius_norm": 4, "full": 6, "full_like": 7, "gather": 5, "gather_backward": 5, "gcd": 3, "gcd_": 2,
    "ge": 3, "ge_": 2, "gelu": 3, "gelu_": 2, "gelu_backward": 4, "greater": 3, "greater_": 2,
    "greater_equal": 3, "greater_equal_": 2, "group_norm": 6, "gt": 3, "gt_": 2, "hardshrink": 3,
    "hardsigmoid": 2, "hardsigmoid_": 1, "hardsigmoid_backward": 3, "hardswish": 2, "hardswish_": 1,
    "hardswish_backward": 3, "hardtanh": 4, "hardtanh_": 3, "hardtanh_backward": 5, "heaviside": 3,
    "heaviside_": 2, "hsplit": 2, "hstack": 2, "huber_loss": 5, "huber_loss_backward": 6, "hypot": 3,
    "hypot_": 2, "i0": 2, "i0_": 1, "igamma": 3, "igamma_": 2, "igammac": 3, "igammac_": 2, "imag": 1,
    "index": 4, "index_add": 6, "index_add_": 5, "index_copy": 5, "index_copy_": 4, "index_fill": 5,
    "index_fill_": 4, "index_put": 5, "index_put_": 4, "index_select": 4, "instance_norm": 9,
    "is_nonzero": 1, "is_pinned": 2, "is_same_size": 2, "isclose": 5, "isfinite": 1, "isinf": 2, "isnan": 2,
    "isneginf": 2, "isposinf": 2, "item": 1, "kl_div": 4, "l1_loss": 3, "layer_norm": 6, "lcm": 3, "lcm_": 2,
    "ldexp": 3, "ldexp_": 2, "le": 3, "le_": 2, "leaky_relu": 3, "leaky_relu_": 2, "leaky_relu_backward": 5,
    "lerp": 4, "lerp_": 3, "less": 3, "less_": 2, "less_equal": 3, "less_equal_": 2, "lgamma": 2,
    "lgamma_": 1, "lift_fresh": 1, "lift_fresh_copy": 2, "linalg_vector_norm": 6, "linear": 4, "log": 2,
    "log10": 2, "log10_": 1, "log1p": 2, "log1p_": 1, "log2": 2, "log2_": 1, "log_": 1,
    "log_sigmoid_backward": 4, "log_sigmoid_forward": 3, "log_softmax": 4, "logaddexp": 3, "logaddexp2": 3,
    "logcumsumexp": 3, "logical_and": 3, "logical_and_": 2, "logical_not": 2, "logical_not_": 1,
    "logical_or": 3, "logical_or_": 2, "logical_xor": 3, "logical_xor_": 2, "logit": 3, "logit_": 2,
    "logit_backward": 4, "logsumexp": 4, "lt": 3, "lt_": 2, "mH": 1, "mT": 1, "masked_fill": 4,
    "masked_fill_": 3, "masked_select": 3, "matmul": 3, "matrix_H": 1, "max": 5, "max_pool1d": 6,
    "max_pool2d": 6, "max_pool2d_with_indices": 8, "max_pool2d_with_indices_backward": 9, "max_pool3d": 6,
    "max_pool3d_with_indices": 8, "max_pool3d_with_indices_backward": 9, "maximum": 3, "mean": 5, "min": 5,
    "minimum": 3, "miopen_batch_norm": 11, "miopen_batch_norm_backward": 11, "miopen_convolution": 10,
    "miopen_convolution_transpose": 11, "miopen_depthwise_convolution": 10, "mish": 2, "mish_": 1,
    "mish_backward": 2, "mkldnn_convolution": 8, "mm": 4, "moveaxis": 3, "movedim": 3, "mse_loss": 4,
    "mse_loss_backward": 5, "mul": 3, "mul_": 2, "multiply": 3, "multiply_": 2, "mv": 3, "nan_to_num": 5,
    "nan_to_num_": 4, "nanmean": 5, "nansum": 5, "narrow": 4, "narrow_copy": 5, "native_batch_norm": 11,
    "native_batch_norm_backward": 13, "native_dropout": 5, "native_dropout_backward": 4,
    "native_group_norm": 11, "native_group_norm_backward": 13, "native_layer_norm": 8,
    "native_layer_norm_backward": 11, "ne": 3, "ne_": 2, "neg": 2, "neg_": 1, "negative": 2, "negative_": 1,
    "new_empty": 6, "new_empty_strided": 7, "new_full": 7, "new_ones": 6, "new_zeros": 6, "nextafter": 3,
    "nextafter_": 2, "nll_loss": 6, "nll_loss2d_backward": 8, "nll_loss2d_forward": 7,
    "nll_loss_backward": 8, "nll_loss_forward": 7, "nll_loss_nd": 5, "nonzero": 2, "nonzero_numpy": 1,
    "nonzero_static": 4, "norm": 6, "normal": 8, "normal_": 4, "not_equal": 3, "not_equal_": 2, "numpy_T": 1,
    "ones": 5, "ones_like": 6, "pad": 4, "permute": 2, "pin_memory": 2, "polar": 3, "positive": 1, "pow": 3,
    "pow_": 2, "prod": 5, "rad2deg": 2, "rad2deg_": 1, "rand": 6, "rand_like": 7, "randint": 8,
    "randint_like": 9, "randn": 6, "randn_like": 7, "random": 5, "random_": 4, "real": 1, "reciprocal": 2,
    "reciprocal_": 1, "record_stream": 2, "relu": 2, "relu6": 1, "relu6_": 1, "relu_": 1, "remainder": 3,
    "remainder_": 2, "repeat": 3, "repeat_interleave": 4, "reshape": 2, "resize_": 3, "resize_as_": 3,
    "resolve_conj": 1, "resolve_neg": 1, "result_type": 2, "rms_norm": 4, "roll": 4, "round": 3, "round_": 2,
    "rsqrt": 2, "rsqrt_": 1, "rsub": 4, "scalar_tensor": 5, "scaled_dot_product_attention": 8, "scatter": 6,
    "scatter_": 5, "scatter_add": 5, "scatter_add_": 4, "scatter_reduce": 7, "scatter_reduce_": 6,
    "searchsorted": 7, "select": 3, "select_backward": 5, "selu": 1, "selu_": 1, "set_": 5, "sgn": 2,
    "sgn_": 1, "sigmoid": 2, "sigmoid_": 1, "sigmoid_backward": 3, "sign": 2, "sign_": 1, "signbit": 2,
    "silu": 2, "silu_": 1, "silu_backward": 3, "sin": 2, "sin_": 1, "sinh": 2, "sinh_": 1, "size": 2,
    "slice": 5, "slice_backward": 7, "slow_conv3d_forward": 7, "slow_conv_dilated2d": 8,
    "slow_conv_dilated3d": 8, "slow_conv_transpose2d": 9, "slow_conv_transpose3d": 9, "smooth_l1_loss": 5,
    "smooth_l1_loss_backward": 6, "soft_margin_loss": 4, "softmax": 4, "softplus": 4, "softplus_backward": 5,
    "softshrink": 3, "special_softmax": 3, "split": 3, "split_with_sizes": 3, "split_with_sizes_copy": 4,
    "sqrt": 2, "sqrt_": 1, "square": 2, "square_": 1, "squeeze": 2, "squeeze_": 2, "stack": 3, "std": 5,
    "std_mean": 6, "stride": 2, "sub": 4, "sub_": 3, "subtract": 4, "subtract_": 3, "sum": 5, "swapaxes": 3,
    "swapdims": 3, "t": 1, "t_": 1, "tan": 2, "tan_": 1, "tanh": 2, "tanh_": 1, "tanh_backward": 3,
    "tensor_split": 3, "thnn_conv2d": 7, "threshold": 4, "threshold_": 3, "threshold_backward": 4, "to": 8,
    "transpose": 3, "transpose_": 3, "tril": 3, "tril_": 2, "triu": 3, "triu_": 2, "true_divide": 3,
    "true_divide_": 2, "trunc": 2, "trunc_": 1, "type_as": 2, "unbind": 2, "unflatten": 3, "unfold": 4,
    "unfold_backward": 6, "uniform": 5, "uniform_": 4, "unique_consecutive": 7, "unique_dim": 8,
    "unsqueeze": 2, "unsqueeze_": 2, "var": 5, "var_mean": 6, "vdot": 3, "view": 2, "view_as": 2,
    "view_as_complex": 1, "view_as_real": 1, "vsplit": 2, "vstack": 2, "where": 4, "xlogy": 3, "xlogy_": 2,
    "zero_": 1, "zeros": 5, "zeros_like": 6,
}


_DATA_DEPENDENT = {
    "nonzero", "nonzero_static", "masked_select", "unique", "_unique", "_unique2", "unique_consecutive",
    "unique_dim", "argwhere", "repeat_interleave", "nonzero_numpy",
}


def _dispatch(name: str) -> tuple[_Handler, str] | None:
    if name.startswith(tuple(_TRITON_FAMILIES)):
        return _triton, name
    if name in _CUSTOM:
        return _CUSTOM[name], name
    prefix = next((p for p in _CUSTOM_PREFIXES if name.startswith(p)), None)
    if prefix is not None:
        return _CUSTOM_PREFIXES[prefix], name
    if not name.startswith("aten::"):
        return None
    short = name.removeprefix("aten::")
    if short in _HANDLERS:
        return _HANDLERS[short], short
    if short.startswith("_foreach_"):
        return _foreach, short
    if short in _ARITY:
        return (lambda args, n: _elementwise(args, n, False)), short
    base = short[:-1] if short.endswith("_") and not short.endswith("__") else None
    if base is not None and (base in _ARITY or base in _WRITE_ONLY_SELF):
        return (lambda args, n: _elementwise(args, n, True)), base
    return None


# Triton kernels that torch.compile (Inductor) generates are recorded as CPU ops named after the
# kernel, with the shapes of its pointer arguments: pointwise (`poi`), reduction (`red`) and
# persistent reduction (`per`) kernels touch each of those tensors once.
_TRITON_FAMILIES = {"triton_poi_": "elementwise", "triton_red_": "reduction", "triton_per_": "reduction"}


def _triton(args: _Args, name: str) -> OpCost:
    """An Inductor Triton kernel: every tensor argument read or written once; one FLOP per element
    of the largest tensor (the loop's extent)."""
    tensors = args.tensors()
    if not tensors:
        raise _Unmodelled("shape arguments incomplete: no tensor arguments recorded")
    largest = max(tensors, key=lambda t: t.numel)
    family = next(f for prefix, f in _TRITON_FAMILIES.items() if name.startswith(prefix))
    return OpCost(float(largest.numel), _bytes(tensors), family, False, largest.cls,
                  "Triton kernel: each tensor argument read or written once")


def _vllm_rms_norm(args: _Args, name: str) -> OpCost:
    """_C::rms_norm(out, input, weight, eps): read input and weight, write out; RMS norm with
    weight, 4 FLOPs per element. _C::fused_add_rms_norm(input, residual, weight, eps): residual +=
    input, then input = rms_norm(residual): read input, residual and weight, write both; 5 per
    element (the add, then the norm)."""
    if name == "_C::rms_norm":
        out, x, weight = args.need(0, "out"), args.need(1, "input"), args.tensor(2)
        return _norm_cost("rms", x, weight is not None, False, [x, weight], [out])
    x, residual, weight = args.need(0, "input"), args.need(1, "residual"), args.tensor(2)
    norm = _norm_cost("rms", x, weight is not None, False, [x, residual, weight], [x, residual])
    return replace(norm, flops=norm.flops + x.numel)


def _vllm_fp8_quant(args: _Args, name: str) -> OpCost:
    """_C::static_scaled_fp8_quant(out, input, scale): one scaling per element, input read, out
    written at its own (fp8) size."""
    out, x = args.need(0, "out"), args.need(1, "input")
    return OpCost(float(x.numel), _bytes([x, args.tensor(2), out]), "elementwise", False, x.cls)


def _vllm_rotary(args: _Args, name: str) -> OpCost:
    """_C::rotary_embedding(positions, query, key, head_size, cos_sin_cache, is_neox): rotates query
    and key in place with the cache rows of `positions` (gathered: numel(positions) rows); 3 FLOPs
    per element (two multiplies and an add)."""
    positions, query, key, cache = args.need(0, "positions"), args.need(1, "query"), args.tensor(2), args.need(4, "cos_sin_cache")
    gathered = cache.like((positions.numel,) + cache.shape[1:])
    rotated = [query] + ([key] if key is not None else [])
    return OpCost(float(3 * sum(t.numel for t in rotated)), _bytes([positions, gathered] + rotated) + _bytes(rotated),
                  "elementwise", False, query.cls)


def _fbgemm_permute(args: _Args, name: str) -> OpCost:
    """A permutation of tensors (copies in a new order): read every tensor argument, write the
    permuted ones — (permute, lengths, indices[, weights]) → permuted lengths, indices, weights;
    permute_pooled_embs(pooled, offsets…, permute…) → a pooled tensor of the same shape;
    recat_embedding_grad_output_mixed_D_batch(grad, …) → a grad of the same shape."""
    tensors = args.tensors()
    if not tensors:
        raise _Unmodelled("shape arguments incomplete: no tensor arguments recorded")
    moved = tensors[1:] if name in ("fbgemm::permute_2D_sparse_data", "fbgemm::permute_sparse_features") else tensors[:1]
    return OpCost(0.0, _bytes(tensors) + _bytes(moved), "copy", False, moved[0].cls if moved else tensors[0].cls)


def _fbgemm_cumsum(args: _Args, name: str) -> OpCost:
    """fbgemm::asynchronous_complete_cumsum(t): a scan with a leading zero, numel + 1 written."""
    x = args.need(0, "t")
    return OpCost(float(x.numel), x.nbytes + x.like((x.numel + 1,)).nbytes, "reduction", False, x.cls)


def _fbgemm_bounds_check(args: _Args, name: str) -> OpCost:
    """fbgemm::bounds_check_indices(rows_per_table, indices, offsets, mode, warning, weights, ...):
    one comparison per index against its table's row count; every tensor argument read, nothing
    written (only out-of-bounds indices, none in a healthy run, are fixed in place)."""
    indices = args.need(1, "indices")
    return OpCost(float(indices.numel), _bytes(args.tensors()), "elementwise", False, indices.cls)


# fbgemm SparseType codes of `output_dtype` arguments → `Input type` strings
_SPARSE_TYPES = {0: "float", 1: "c10::Half", 5: "c10::BFloat16"}


def _fbgemm_fp8_rowwise(args: _Args, name: str) -> OpCost:
    """Row-wise FP8 (de)quantisation. FloatToFP8RowwiseQuantized(input[..., C]) writes one byte per
    value, the row padded to a multiple of 4, then a float scale and bias: C' = ⌈C/4⌉·4 + 8 bytes
    per row; 2 FLOPs per element (the row's absolute maximum, the scaling).
    FP8RowwiseQuantizedToFloat(input[..., C'] uint8, forward, output_dtype) writes C' − 8 values per
    row at `output_dtype` (float when not recorded); 1 FLOP per element."""
    x = args.need(0, "input")
    if not x.shape:
        raise _Unmodelled("shape arguments inconsistent: row-wise quantisation of a 0-dim tensor")
    rows, columns = math.prod(x.shape[:-1]), x.shape[-1]
    if name == "fbgemm::FloatToFP8RowwiseQuantized":
        out = _T(tuple(x.shape[:-1]) + (math.ceil(columns / 4) * 4 + 8,), "unsigned char")
        return OpCost(float(2 * x.numel), x.nbytes + out.nbytes, "elementwise", False, x.cls)
    if columns <= 8:
        raise _Unmodelled(f"shape arguments inconsistent: quantised rows of {columns} bytes")
    code = args.scalar(2)
    out_type = _SPARSE_TYPES.get(code, "float") if isinstance(code, int) else "float"
    out = _T(tuple(x.shape[:-1]) + (columns - 8,), out_type)
    note = "" if isinstance(code, int) else "output_dtype not recorded: float assumed"
    return OpCost(float(rows * (columns - 8)), x.nbytes + out.nbytes, "elementwise", False, out.cls, note)


def _fbgemm_hfp8(args: _Args, name: str) -> OpCost:
    """FloatToHFP8Quantized(input, ebits, exponent_bias, max_pos) → one byte per element;
    HFP8QuantizedToFloat(input, ebits, exponent_bias) → a float per element; 1 FLOP per element."""
    x = args.need(0, "input")
    out = x.like(type="unsigned char" if name == "fbgemm::FloatToHFP8Quantized" else "float")
    return OpCost(float(x.numel), x.nbytes + out.nbytes, "elementwise", False, x.cls)


def _permute_pooled_embs_backward(args: _Args, name: str) -> OpCost:
    """The autograd node of fbgemm's permute_pooled_embs: the gradient [B, total_D] permuted back,
    read once and written once."""
    grad = args.need(0, "grad_output")
    return OpCost(0.0, 2 * grad.nbytes, "copy", False, grad.cls)


def _vllm_reshape_and_cache(args: _Args, name: str) -> OpCost:
    """_C_cache_ops::reshape_and_cache(_flash)(key, value, key_cache, value_cache, slot_mapping,
    kv_cache_dtype, k_scale, v_scale): each new token's key and value copied into its cache slot,
    at the cache's element size (fp8 caches: one byte). The caches are written only at the
    `numel(key)` and `numel(value)` slots, not read."""
    key, value = args.need(0, "key"), args.need(1, "value")
    key_cache, value_cache = args.need(2, "key_cache"), args.need(3, "value_cache")
    read = [key, value, args.tensor(4)] + [args.tensor(i) for i in (6, 7)]
    written = key.numel * key_cache.itemsize + value.numel * value_cache.itemsize
    return OpCost(0.0, _bytes(read) + written, "copy", False, key.cls)


# autograd nodes (recorded with their name as the op) modelled by name prefix
_CUSTOM_PREFIXES: dict[str, _Handler] = {
    "torch::autograd::CppNode<fbgemm_gpu::PermutePooledEmbsFunction": _permute_pooled_embs_backward,
}

# Custom (non-aten) ops whose arguments say what they read and write.
_CUSTOM: dict[str, _Handler] = {
    "fbgemm::bounds_check_indices": _fbgemm_bounds_check,
    "fbgemm::FloatToFP8RowwiseQuantized": _fbgemm_fp8_rowwise, "fbgemm::FP8RowwiseQuantizedToFloat": _fbgemm_fp8_rowwise,
    "fbgemm::FloatToHFP8Quantized": _fbgemm_hfp8, "fbgemm::HFP8QuantizedToFloat": _fbgemm_hfp8,
    "fb::asynchronous_complete_cumsum": _fbgemm_cumsum,
    "_C_cache_ops::reshape_and_cache": _vllm_reshape_and_cache,
    "_C_cache_ops::reshape_and_cache_flash": _vllm_reshape_and_cache,
    "_C::rms_norm": _vllm_rms_norm, "_C::fused_add_rms_norm": _vllm_rms_norm,
    "_C::static_scaled_fp8_quant": _vllm_fp8_quant, "_C::rotary_embedding": _vllm_rotary,
    "fbgemm::permute_2D_sparse_data": _fbgemm_permute, "fbgemm::permute_sparse_features": _fbgemm_permute,
    "fbgemm::permute_pooled_embs_auto_grad": _fbgemm_permute, "fbgemm::permute_pooled_embs": _fbgemm_permute,
    "fbgemm::recat_embedding_grad_output_mixed_D_batch": _fbgemm_permute,
    "fbgemm::asynchronous_complete_cumsum": _fbgemm_cumsum,
}


# Ops whose recorded arguments cannot say what they compute, and why (the reason names it).
UNMODELLABLE_OPS: dict[str, str] = {
    "vllm::moe_forward": "the experts' weights are not among its arguments, so the intermediate size "
                         "and the tokens routed to each expert are unknown",
    "vllm::unified_attention_with_output": "the paged KV cache and the sequences' context lengths are "
                                           "not among its arguments",
}
# Ops costed outside this module, from other ops of the trace (name prefix → where).
_COSTED_ELSEWHERE: dict[str, str] = {
    "fbgemm::split_embedding_codegen_lookup_": "a table-batched embedding: its output size comes from "
                                               "total_D (Concrete Inputs) or its backward node",
    "fbgemm::dense_embedding_codegen_lookup_": "a table-batched embedding: its output size comes from "
                                               "total_D (Concrete Inputs) or its backward node",
    "torch::autograd::CppNode<SplitLookupFunction_": "a table-batched embedding backward: its lookups are "
                                                     "its forward op's arguments, found by sequence number",
}


def is_unmodellable(name: str) -> bool:
    """Whether `name` is an op whose recorded arguments cannot give its cost (`UNMODELLABLE_OPS`)."""
    return name in UNMODELLABLE_OPS


def _not_modelled(name: str) -> str:
    why = UNMODELLABLE_OPS.get(name) or next((text for prefix, text in _COSTED_ELSEWHERE.items()
                                              if name.startswith(prefix)), None)
    return f"op not modelled: {name}" + (f" ({why})" if why else "")


def has_formula(name: str) -> bool:
    """Whether `name` is an op this module has a FLOP/byte formula for (given its shapes)."""
    return _dispatch(name) is not None


def op_cost_or_reason(
    name: str,
    input_dims: Sequence[Any] | None,
    input_types: Sequence[str] | None,
    concrete_inputs: Sequence[str] | None,
    input_strides: Sequence[Any] | None = None,
) -> OpCost | str:
    """Like `op_cost`, but returns the reason (a short string) instead of None."""
    if input_dims is None:
        return "no shapes recorded"
    if name.startswith("triton_tem_"):
        return f"op not modelled: {name} (a Triton template: its pointer shapes do not say the GEMM's M, N, K)"
    short = name.removeprefix("aten::")
    if short in _DATA_DEPENDENT:
        return "output size is data-dependent"
    found = _dispatch(name)
    if found is None:
        return _not_modelled(name)
    limit = _MAX_ARGS.get(short)
    if limit is not None and len(input_dims) > limit:
        return f"shape arguments inconsistent: {len(input_dims)} arguments recorded, {name} takes at most {limit}"
    handler, key = found
    args = _Args(input_dims, input_types, concrete_inputs, input_strides)
    try:
        result = handler(args, key)
        if args.list_dtype is not None and result.bytes:
            assumed = f"TensorList dtype not recorded: {_DTYPES[args.list_dtype][1]} assumed"
            result = replace(result, note="; ".join(n for n in (result.note, assumed) if n))
        return result
    except _Unmodelled as why:
        return str(why)
    except (KeyError, IndexError, TypeError, ValueError, ZeroDivisionError, AttributeError, OverflowError) as error:
        # A recorded argument layout we do not know (another PyTorch version, another overload).
        return f"shape arguments not understood: {type(error).__name__}"


def op_cost(
    name: str,
    input_dims: Sequence[Any] | None,
    input_types: Sequence[str] | None,
    concrete_inputs: Sequence[str] | None,
    input_strides: Sequence[Any] | None = None,
) -> OpCost | None:
    """FLOPs and bytes of one CPU op from its recorded arguments, or None if we cannot tell.

    Parameters
    ----------
    name : the op name as recorded (``"aten::addmm"``).
    input_dims : ``Input Dims``: one shape per argument, ``[]`` for scalars; a TensorList argument
        is a list of shapes.
    input_types : ``Input type``: ``"float"``, ``"c10::BFloat16"``, ``"Scalar"``, ``"TensorList"``, ...
    concrete_inputs : ``Concrete Inputs``: scalar arguments as strings (``"True"``, ``"[1, 1]"``).
    input_strides : ``Input Strides``; only used to tell whether ``contiguous`` copies.

    Examples
    --------
    >>> op_cost("aten::add", [[4, 1], [1, 8], []], ["float", "float", "Scalar"], ["", "", "1"]).flops
    32.0
    """
    result = op_cost_or_reason(name, input_dims, input_types, concrete_inputs, input_strides)
    return result if isinstance(result, OpCost) else None


def _with_tensor_lists(row: dict[str, Any]) -> list[Any] | None:
    """`input_dims` with each TensorList argument replaced by its shapes from `input_tensor_lists`."""
    dims, lists, types = row.get("input_dims"), row.get("input_tensor_lists"), row.get("input_types")
    if dims is None or lists is None or types is None:
        return dims
    return [lists[i] if i < len(lists) and i < len(types) and types[i] == "TensorList" else shape
            for i, shape in enumerate(dims)]


def op_costs(cpu_ops: pl.DataFrame) -> pl.DataFrame:
    """`op_cost` for every row of a `cpu_ops` table (`traceanalyze.model.CPU_OPS_SCHEMA`).

    TensorList arguments take their shapes from `input_tensor_lists` when the table has it.
    Returns one row per op with the columns of `OP_COSTS_SCHEMA`: `flops` and `bytes` (null when
    not modelled, with `unmodeled_reason` saying why), `cost_model`, `composite`, `compute_dtype`,
    `cost_note`, and `flops_source`: a `flops` value recorded in the trace wins over ours
    (`"trace"`); the bytes are always ours.

    Examples
    --------
    >>> import polars as pl
    >>> ops = pl.DataFrame({"op_id": [1], "name": ["aten::mm"], "category": ["cpu_op"],
    ...     "input_dims": [[[2, 3], [3, 4]]], "input_types": [["float", "float"]],
    ...     "input_strides": [None], "concrete_inputs": [["", ""]], "flops": [None]},
    ...     schema_overrides={"flops": pl.Float64, "input_strides": pl.List(pl.List(pl.Int64))})
    >>> op_costs(ops).select("op_id", "flops", "bytes").row(0)
    (1, 48.0, 104.0)
    """
    has_category = "category" in cpu_ops.columns
    wanted = ["op_id", "name", "input_dims", "input_tensor_lists", "input_types", "concrete_inputs",
              "input_strides", "flops"]
    frame = cpu_ops.select([c for c in wanted if c in cpu_ops.columns]
                           + (["category"] if has_category else []))
    # ops with the same name and arguments cost the same (each step repeats its ops): the model
    # runs once per distinct op, and a `flops` value recorded in the trace is applied per op
    keys = [c for c in frame.columns if c not in ("op_id", "flops")]
    groups = frame.with_row_index("_row").group_by(keys, maintain_order=True).agg(pl.col("_row"))
    columns: dict[str, list[Any]] = {name: [] for name in
                                     ("model_flops", "bytes", "cost_model", "composite", "compute_dtype",
                                      "model_source", "cost_note", "unmodeled_reason")}
    for row in groups.select(keys).iter_rows(named=True):
        if has_category and row["category"] == "user_annotation":
            result: OpCost | str = "user annotation, not an operator"
        else:
            result = op_cost_or_reason(row["name"] or "", _with_tensor_lists(row), row.get("input_types"),
                                       row.get("concrete_inputs"), row.get("input_strides"))
        if isinstance(result, OpCost):
            columns["model_flops"].append(result.flops)
            columns["bytes"].append(result.bytes)
            columns["cost_model"].append(result.model)
            columns["composite"].append(result.composite)
            columns["compute_dtype"].append(result.dtype)
            columns["model_source"].append("model")
            columns["cost_note"].append(result.note or None)
            columns["unmodeled_reason"].append(None)
        else:
            columns["model_flops"].append(None)
            columns["bytes"].append(None)
            columns["cost_model"].append(None)
            columns["composite"].append(None)
            columns["compute_dtype"].append(None)
            columns["model_source"].append(None)
            columns["cost_note"].append(None)
            columns["unmodeled_reason"].append(result)
    schema = {**OP_COSTS_SCHEMA, "model_flops": pl.Float64, "model_source": OP_COSTS_SCHEMA["flops_source"]}
    per_group = pl.DataFrame(columns, schema={k: schema[k] for k in columns})
    per_row = per_group.with_columns(groups["_row"]).explode("_row").sort("_row")
    trace_flops = frame["flops"] if "flops" in frame.columns else pl.Series("flops", [None] * frame.height, dtype=pl.Float64)
    return per_row.with_columns(
        frame["op_id"].alias("op_id"),
        trace_flops.cast(pl.Float64).alias("_trace_flops"),
    ).with_columns(
        pl.coalesce("_trace_flops", "model_flops").alias("flops"),
        pl.when(pl.col("_trace_flops").is_not_null()).then(pl.lit("trace")).otherwise(pl.col("model_source"))
        .cast(OP_COSTS_SCHEMA["flops_source"]).alias("flops_source"),
    ).select(OP_COSTS_SCHEMA.names()).cast(OP_COSTS_SCHEMA)  # type: ignore[arg-type]
