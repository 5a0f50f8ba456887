"""What a cost formula returns (`OpCost`), the family it belongs to (`CostFamily`), and how a
family module registers an op (`Op`).

A family module (matmul.py, conv.py, ...) defines its `CostFamily` and a tuple `OPS` of `Op`
entries: the op name as recorded (without `aten::`), the handler that costs it, and `max_args`, the
most arguments any overload of the op takes in the PyTorch schemas (None only for ops PyTorch has
no schema for). A record with more arguments is corrupted (some Kineto versions prepend stale
arguments) and is not modelled. `registry.py` collects the modules' `OPS`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from traceanalyze.analysis.costs.tensors import Args


@dataclass(frozen=True)
class CostFamily:
    """A family of cost formulas, as the roofline and the attribution see it.

    `name` is the `cost_model` value of its ops; `tensor_core`: its math can run on tensor cores
    (the roofline assumes it does at low precision when the kernel name does not say);
    `fusible`: a bandwidth-bound run of such ops is a fusion candidate (attribution).
    """

    name: str
    tensor_core: bool = False
    fusible: bool = False


@dataclass(frozen=True)
class OpCost:
    """The work of one op: `flops`, `bytes` moved (ideal-cache lower bound) and its `family`.

    `composite` marks ops that only call child ops (their cost duplicates the children's);
    `dtype` is the dtype class of the op's math (`fp32`, `bf16`, `fp8`, ...) for choosing a peak;
    `note` says what had to be assumed, if anything.
    """

    flops: float
    bytes: float
    family: CostFamily
    composite: bool = False
    dtype: str | None = None
    note: str = ""

    @property
    def model(self) -> str:
        """The family's name: the `cost_model` column."""
        return self.family.name


Handler = Callable[["Args", str], OpCost]


@dataclass(frozen=True)
class Op:
    """One registered op: `name` as recorded (`aten::` ops without the prefix), the `handler`
    called with the op's `Args` and that name, and `max_args` (see the module docstring)."""

    name: str
    handler: Handler
    max_args: int | None
