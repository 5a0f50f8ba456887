"""Every costed op, found by name: the families' `OPS` tables merged, and the dispatch that picks
the handler of a recorded op name.

Dispatch precedence (the first rule that matches wins):

1. Triton kernels by name prefix (`triton_poi_`, `triton_red_`, `triton_per_`: triton.py);
2. custom ops by full name (`fbgemm::…`, `_C::…`: each module's `CUSTOM_OPS`);
3. custom ops by name prefix (autograd nodes `torch::autograd::CppNode<…>`: `PREFIX_OPS`);
4. `aten::` ops by name (each family module's `OPS`);
5. `aten::_foreach_*` (optimizers.py);
6. `aten::` elementwise ops by name (`pointwise.POINTWISE`);
7. `aten::<op>_` whose `<op>` is a `POINTWISE` op: the in-place form.

Argument limits: an `aten::` op recorded with more arguments than its `max_args` is corrupted and
not modelled. Non-aten ops, `_foreach_*` ops and in-place forms PyTorch has no schema for have no
limit. `op_cost_or_reason` runs the handler and turns `Unmodelled` (and any error of an argument
layout we do not know) into the reason string.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from traceanalyze.analysis.costs import (
    attention, conv, copies, embedding, embedding_tbe, fbgemm, indexing, losses, matmul, normalization, optimizers,
    pointwise, pooling, reductions, triton, vllm,
)
from traceanalyze.analysis.costs.family import CostFamily, Handler, Op, OpCost
from traceanalyze.analysis.costs.tensors import DTYPES, Args, Unmodelled

# The `cost_model` values, in the order of the column's Enum.
FAMILIES: tuple[CostFamily, ...] = (
    matmul.MATMUL, conv.CONV, attention.ATTENTION, normalization.NORM, normalization.SOFTMAX,
    pointwise.ELEMENTWISE, reductions.REDUCTION, pooling.POOL, copies.COPY, copies.FILL, copies.VIEW,
    embedding.EMBEDDING, losses.LOSS, optimizers.OPTIMIZER,
)
FAMILY_NAMES: tuple[str, ...] = tuple(f.name for f in FAMILIES)

FAMILY_MODULES = (matmul, conv, attention, normalization, pointwise, reductions, pooling, copies, indexing,
                  embedding, losses, optimizers)
CUSTOM_MODULES = (fbgemm, vllm)


class DuplicateOp(Exception):
    """Two registrations of one op name (raised when the registry is imported)."""


def index_by_name(ops: Iterable[Op]) -> dict[str, Op]:
    """`ops` by name; raises `DuplicateOp` when a name comes twice."""
    table: dict[str, Op] = {}
    for op in ops:
        if op.name in table:
            raise DuplicateOp(f"op {op.name!r} registered twice")
        table[op.name] = op
    return table


def registered_aten_ops() -> list[Op]:
    """Every registered `aten::` op (without the prefix), with its argument limit: the family
    modules' `OPS`, each `POINTWISE` op and its in-place form."""
    ops = [op for module in FAMILY_MODULES for op in module.OPS]
    for name, spec in pointwise.POINTWISE.items():
        ops.append(Op(name, pointwise.elementwise, spec.max_args))
        ops.append(Op(name + "_", pointwise.pointwise_inplace, spec.inplace_max_args))
    return ops


def registered_custom_ops() -> list[Op]:
    """Every custom op registered by full name, then those registered by name prefix."""
    return ([op for module in CUSTOM_MODULES for op in module.CUSTOM_OPS]
            + [op for module in CUSTOM_MODULES for op in getattr(module, "PREFIX_OPS", ())])


ATEN: dict[str, Op] = index_by_name(op for module in FAMILY_MODULES for op in module.OPS)
CUSTOM: dict[str, Op] = index_by_name(op for module in CUSTOM_MODULES for op in module.CUSTOM_OPS)
CUSTOM_PREFIXES: dict[str, Op] = index_by_name(
    op for module in CUSTOM_MODULES for op in getattr(module, "PREFIX_OPS", ()))
index_by_name(registered_aten_ops())  # an op both in OPS and in POINTWISE is a duplicate too

# Ops whose output size depends on the data: the recorded shapes cannot give it.
DATA_DEPENDENT = {
    "nonzero", "nonzero_static", "masked_select", "unique", "_unique", "_unique2", "unique_consecutive",
    "unique_dim", "argwhere", "repeat_interleave", "nonzero_numpy",
}


def dispatch(name: str) -> tuple[Handler, str, int | None] | None:
    """(handler, the name it is called with, argument limit) for a recorded op name, by the
    precedence of the module docstring; None when no rule matches."""
    if name.startswith(tuple(triton.PREFIXES)):
        return triton.triton_kernel, name, None
    if name in CUSTOM:
        return CUSTOM[name].handler, name, None
    prefix = next((p for p in CUSTOM_PREFIXES if name.startswith(p)), None)
    if prefix is not None:
        return CUSTOM_PREFIXES[prefix].handler, name, None
    if not name.startswith("aten::"):
        return None
    short = name.removeprefix("aten::")
    if short in ATEN:
        return ATEN[short].handler, short, ATEN[short].max_args
    if short.startswith("_foreach_"):
        return optimizers.foreach, short, None
    if short in pointwise.POINTWISE:
        return pointwise.elementwise, short, pointwise.POINTWISE[short].max_args
    base = short[:-1] if short.endswith("_") and not short.endswith("__") else None
    if base is not None and base in pointwise.POINTWISE:
        return pointwise.pointwise_inplace, base, pointwise.POINTWISE[base].inplace_max_args
    return None


UNMODELLABLE_OPS: dict[str, str] = {**vllm.UNMODELLABLE_OPS}


def is_unmodellable(name: str) -> bool:
    """Whether `name` is an op whose recorded arguments cannot give its cost (`UNMODELLABLE_OPS`)."""
    return name in UNMODELLABLE_OPS


def _not_modelled(name: str) -> str:
    why = UNMODELLABLE_OPS.get(name) or next((text for prefix, text in embedding_tbe.COSTED_ELSEWHERE.items()
                                              if name.startswith(prefix)), None)
    return f"op not modelled: {name}" + (f" ({why})" if why else "")


def has_formula(name: str) -> bool:
    """Whether `name` is an op with a FLOP/byte formula (given its shapes)."""
    return dispatch(name) is not None


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
    if name.startswith(triton.TEMPLATE_PREFIX):
        return f"op not modelled: {name} (a Triton template: its pointer shapes do not say the GEMM's M, N, K)"
    if name.removeprefix("aten::") in DATA_DEPENDENT:
        return "output size is data-dependent"
    found = dispatch(name)
    if found is None:
        return _not_modelled(name)
    handler, key, limit = found
    if limit is not None and len(input_dims) > limit:
        return f"shape arguments inconsistent: {len(input_dims)} arguments recorded, {name} takes at most {limit}"
    args = Args(input_dims, input_types, concrete_inputs, input_strides)
    try:
        result = handler(args, key)
        if args.list_dtype is not None and result.bytes:
            assumed = f"TensorList dtype not recorded: {DTYPES[args.list_dtype][1]} assumed"
            result = replace(result, note="; ".join(n for n in (result.note, assumed) if n))
        return result
    except Unmodelled as why:
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
    >>> cost = op_cost("aten::mm", [[128, 64], [64, 32]], ["c10::BFloat16", "c10::BFloat16"], ["", ""])
    >>> cost.flops, cost.bytes, cost.model
    (524288.0, 28672.0, 'matmul')
    """
    result = op_cost_or_reason(name, input_dims, input_types, concrete_inputs, input_strides)
    return result if isinstance(result, OpCost) else None
