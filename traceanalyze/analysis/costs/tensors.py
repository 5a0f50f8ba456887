"""The recorded arguments of one op, as tensors and scalars the cost formulas read.

`Args` wraps what the profiler recorded for one op (`Input Dims`, `Input type`, `Concrete Inputs`,
`Input Strides`); `Tensor` is one tensor argument (shape and recorded dtype). Helpers raise
`Unmodelled` when an argument the formula needs is missing or inconsistent; the registry turns that
into the op's `unmodeled_reason`. Element sizes and dtype classes: docs/flops.md.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

class Unmodelled(Exception):
    """Raised inside a cost formula when the recorded arguments cannot give the cost; the registry
    turns the message into the op's `unmodeled_reason`."""


# `Input type` string -> (element size in bytes, dtype class). Strings as PyTorch records them.
DTYPES: dict[str, tuple[int, str]] = {
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
FLOAT_CLASSES = {"fp4", "fp8", "fp16", "bf16", "fp32", "fp64"}
# The dtypes PyTorch gives a Python float, int, bool or complex it wraps as a 0-dim tensor.
PYTHON_NUMBER_CLASSES = {"fp64", "int64", "bool", "complex128"}


def element_size(type_name: str) -> int | None:
    """Bytes per element of a recorded `Input type` (`"c10::BFloat16"` -> 2), None if not a dtype."""
    entry = DTYPES.get(type_name)
    return entry[0] if entry else None


def dtype_class(type_name: str) -> str | None:
    """The short dtype class of a recorded `Input type` (`"float"` -> `"fp32"`), None if not a dtype."""
    entry = DTYPES.get(type_name)
    return entry[1] if entry else None


@dataclass(frozen=True)
class Tensor:
    """One tensor argument: shape and dtype (`type` is the recorded `Input type` string).

    `python_number`: a number the op received from Python, which PyTorch wraps as a 0-dim tensor
    (`Args.tensor` says when); the kernel gets it by value, so it moves no bytes."""

    shape: tuple[int, ...]
    type: str
    python_number: bool = False

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        return DTYPES[self.type][0]

    @property
    def cls(self) -> str:
        return DTYPES[self.type][1]

    @property
    def nbytes(self) -> float:
        return 0.0 if self.python_number else float(self.numel * self.itemsize)

    def like(self, shape: Sequence[int] | None = None, type: str | None = None) -> Tensor:
        """A tensor of this one's dtype and shape unless given (a device tensor, even if this is a
        Python number)."""
        return Tensor(tuple(self.shape if shape is None else shape), self.type if type is None else type)


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


class Args:
    """The recorded arguments of one op, with helpers that raise `Unmodelled` when incomplete."""

    def __init__(self, dims: Sequence[Any], types: Sequence[str] | None,
                 concrete: Sequence[str] | None, strides: Sequence[Any] | None):
        self.dims = list(dims)
        self.types = list(types) if types is not None else [""] * len(self.dims)
        self.concrete = list(concrete) if concrete is not None else None
        self.strides = list(strides) if strides is not None else None
        self.list_dtype: str | None = None  # set when a TensorList's element dtype had to be assumed
        # a dimensioned tensor argument: 0-dim arguments of Python-number dtypes are then numbers
        self.has_dimensioned = any(
            self.type(i) in DTYPES and _is_int_list(shape) and len(shape) > 0 for i, shape in enumerate(self.dims))

    def __len__(self) -> int:
        return len(self.dims)

    def type(self, i: int) -> str:
        return self.types[i] if i < len(self.types) and self.types[i] is not None else ""

    def tensor(self, i: int) -> Tensor | None:
        """Argument `i` as a tensor, or None if absent, not a tensor, or an undefined tensor.

        A 0-dim argument of a Python number's dtype (float64, int64, bool, complex128) next to a
        dimensioned tensor argument is a Python number (`x * 2.0`, `x + 1`): `python_number`."""
        if i >= len(self.dims) or self.type(i) not in DTYPES:
            return None
        shape = self.dims[i]
        if not _is_int_list(shape):
            return None
        number = not shape and self.has_dimensioned and DTYPES[self.type(i)][1] in PYTHON_NUMBER_CLASSES
        return Tensor(tuple(shape), self.type(i), number)

    def need(self, i: int, what: str = "tensor") -> Tensor:
        t = self.tensor(i)
        if t is None:
            raise Unmodelled(f"shape arguments incomplete: {what} (argument {i}) not recorded")
        return t

    def tensor_list(self, i: int, dtype: str | None = None) -> list[Tensor] | None:
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
            raise Unmodelled("shape arguments incomplete: TensorList shapes not recorded")
        # The profiler records no element dtype for a TensorList: take the first tensor
        # argument's, else float, and say so in the cost's note.
        if dtype is None:
            dtype = next((t for t in self.types if t in DTYPES), "float")
            self.list_dtype = dtype
        return [Tensor(tuple(s), dtype) for s in shapes]

    def tensors(self) -> list[Tensor]:
        """Every tensor argument, TensorLists expanded."""
        out: list[Tensor] = []
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


def reads(args: Args, operands: int) -> list[Tensor]:
    """The tensors among the first `operands` arguments; later tensors are `out=` destinations."""
    return [t for i in range(min(operands, len(args))) if (t := args.tensor(i)) is not None]


def total_bytes(tensors: Sequence[Tensor | None]) -> float:
    """Bytes of `tensors`, each at its own element size; None entries (absent tensors) count 0."""
    return float(sum(t.nbytes for t in tensors if t is not None))


def promote(tensors: Sequence[Tensor]) -> str:
    """The result `Input type` of an elementwise op over `tensors` (dimensioned tensors first)."""
    candidates = [t for t in tensors if t.shape] or list(tensors)
    best = candidates[0]
    for t in candidates[1:]:
        if {t.cls, best.cls} == {"fp16", "bf16"}:
            best = t.like(type="float")
        elif _RANK[t.cls] > _RANK[best.cls]:
            best = t
    return best.type


def broadcast(shapes: Sequence[Sequence[int]]) -> tuple[int, ...]:
    """The broadcast shape of `shapes` (NumPy rules); raises `Unmodelled` when they do not broadcast."""
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for axis in range(ndim):
        sizes = {s[len(s) - ndim + axis] for s in shapes if len(s) - ndim + axis >= 0}
        sizes.discard(1)
        if len(sizes) > 1:
            raise Unmodelled(f"shape arguments inconsistent: cannot broadcast {list(map(list, shapes))}")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def accumulation_type(t: Tensor) -> str:
    """The accumulation dtype of statistics computed over `t` (float for 16-bit inputs)."""
    return "double" if t.cls == "fp64" else "float"
