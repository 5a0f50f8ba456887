"""Every op of our cost registry that PyTorch's `FlopCounterMode` also counts, checked against it:
small tensors, the op run under `torch.utils.flop_counter.FlopCounterMode` (on CPU where it has a
CPU kernel, else on the meta device; an op with neither — a CUDA-only kernel whose meta function
needs real saved outputs — goes through the formula FlopCounterMode registers for it, the function
it would call), and our `op_cost` of the same arguments, recorded as the profiler writes them
(`Input Dims`, `Input type`, `Concrete Inputs`, one entry per schema argument).

Documented differences only (docs/flops.md): none for matmuls and ungrouped convolutions (a
multiply-add is 2 FLOPs in both); causal attention is half of FlopCounterMode's count (it ignores
causality); the `[B, S, H, D]` kernels (`_flash_attention_*`, `_efficient_attention_*`) are
compared with FlopCounterMode's count of the same problem in `[B, H, S, D]` (it reads their
layout as `[B, H, S, D]`). A new op both count fails `test_every_shared_op_has_a_case` until it
has a case here; a wrong formula fails its case."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from traceanalyze.analysis.costs.family import OpCost
from traceanalyze.analysis.costs.registry import op_cost_or_reason, registered_aten_ops

torch = pytest.importorskip("torch")
from torch.utils.flop_counter import FlopCounterMode, flop_registry  # noqa: E402

aten = torch.ops.aten
DTYPE_NAMES = {torch.float32: "float", torch.bfloat16: "c10::BFloat16", torch.float16: "c10::Half",
               torch.float8_e4m3fn: "c10::Float8_e4m3fn", torch.int64: "long int", torch.int32: "int"}
B, H, S, D = 2, 4, 16, 8  # attention
X, W = (2, 3, 8, 8), (4, 3, 3, 3)  # convolution input and weight (stride 1, padding 1: output 2×4×8×8)


def recorded(schema: Any, args: tuple) -> tuple[list, list[str], list[str]]:
    """`args` (positional, every schema argument) as the profiler records them."""
    dims, types, concrete = [], [], []
    for argument, value in zip(schema.arguments, args, strict=True):
        if isinstance(value, torch.Tensor):
            dims.append(list(value.shape)), types.append(DTYPE_NAMES[value.dtype]), concrete.append("")
        elif value is None:
            dims.append([]), types.append(""), concrete.append("")
        elif isinstance(value, (list, tuple)):
            dims.append([]), types.append("ScalarList"), concrete.append(str(list(value)))
        elif isinstance(value, torch.dtype):
            dims.append([]), types.append("ScalarType"), concrete.append("")
        else:
            dims.append([]), types.append("Scalar"), concrete.append(str(value))
    return dims, types, concrete


def split(op: Any, args: tuple) -> tuple[tuple, dict]:
    """`args` (every schema argument, in order) as the call's positional and keyword-only arguments."""
    keyword = {a.name: value for a, value in zip(op._schema.arguments, args, strict=True) if a.kwarg_only}
    return args[: len(args) - len(keyword)], keyword


def counted(op: Any, args: tuple) -> int:
    """FlopCounterMode's FLOPs for `op(*args)`: run on CPU tensors, else on the meta device, else
    (no kernel there either) its registered formula on the arguments and the given output."""
    for device in ("cpu", "meta"):
        moved = tuple(a.to(device) if isinstance(a, torch.Tensor) else a for a in args)
        try:
            with FlopCounterMode(display=False) as counter:
                positional, keyword = split(op, moved)
                op(*positional, **keyword)
            return counter.get_total_flops()
        except (NotImplementedError, RuntimeError):
            continue
    raise AssertionError(f"{op} runs neither on CPU nor on meta")


def formula(op: Any, args: tuple, out: Any) -> int:
    """FlopCounterMode's registered formula for `op`, given its arguments and output."""
    positional, keyword = split(op, args)
    return flop_registry[op.overloadpacket](*positional, out_val=out, **keyword)


def ours(op: Any, args: tuple) -> float:
    dims, types, concrete = recorded(op._schema, args)
    cost = op_cost_or_reason(f"aten::{op.overloadpacket.__name__}", dims, types, concrete)
    assert isinstance(cost, OpCost), cost
    return cost.flops


def t(*shape: int, dtype: Any = torch.float32) -> Any:
    return torch.randn(*shape).to(dtype)


CONV = dict(stride=[1, 1], padding=[1, 1], dilation=[1, 1])


def _conv_args(bias: bool = False) -> tuple:
    return (t(*X), t(*W), t(4) if bias else None, CONV["stride"], CONV["padding"], CONV["dilation"])


def _attention(bshd: bool = False) -> tuple:
    shape = (B, S, H, D) if bshd else (B, H, S, D)
    return t(*shape), t(*shape), t(*shape)


def _sdpa_backward_common() -> tuple:
    q, k, v = _attention()
    return t(B, H, S, D), q, k, v, t(B, H, S, D), t(B, H, S)  # grad_out, q, k, v, out, logsumexp


# op name → (the op, its arguments, FlopCounterMode's count of the same problem, our factor)
Case = tuple[Any, tuple, Callable[[Any, tuple], int], float]


def _same(op: Any, args: tuple) -> int:
    return counted(op, args)


def _bhsd_forward(op: Any, args: tuple) -> int:
    """The same problem through the `[B, H, S, D]` entry point."""
    return counted(aten._scaled_dot_product_flash_attention.default, (*_attention(), 0.0, False, False, None))


def _as_convolution(op: Any, args: tuple) -> int:
    """The same problem through `convolution` (FlopCounterMode's formula for `_slow_conv2d_forward`
    reads it with `convolution`'s arguments and fails: a TypeError in torch 2.13)."""
    return counted(aten.convolution.default, (*_conv_args(), False, [0, 0], 1))


def _by_formula(out: Callable[[], Any]) -> Callable[[Any, tuple], int]:
    return lambda op, args: formula(op, args, out())


def _bhsd_backward(op: Any, args: tuple) -> int:
    grad = (t(B, H, S, D), t(B, H, S, D), t(B, H, S, D))
    common = _sdpa_backward_common()
    return formula(aten._scaled_dot_product_efficient_attention_backward.default,
                   (*common[:4], None, common[4], common[5], None, None, 0.0, [True, True, True, False], False,
                    None), grad)


def cases() -> dict[str, Case]:
    conv = (*_conv_args(), False, [0, 0], 1)
    grads = (t(2, 4, 8, 8), t(*X), t(*W))
    q, k, v = _attention()
    qs, ks, vs = _attention(bshd=True)
    back = _sdpa_backward_common()
    seed, offset = torch.zeros((), dtype=torch.int64), torch.zeros((), dtype=torch.int64)
    three = (t(B, H, S, D), t(B, H, S, D), t(B, H, S, D))
    f8 = torch.float8_e4m3fn
    return {
        "mm": (aten.mm.default, (t(5, 3), t(3, 7)), _same, 1),
        "addmm": (aten.addmm.default, (t(7), t(5, 3), t(3, 7), 1, 1), _same, 1),
        "bmm": (aten.bmm.default, (t(2, 5, 3), t(2, 3, 7)), _same, 1),
        "baddbmm": (aten.baddbmm.default, (t(2, 5, 7), t(2, 5, 3), t(2, 3, 7), 1, 1), _same, 1),
        "_scaled_mm": (aten._scaled_mm.default, (t(16, 32, dtype=f8), t(16, 32, dtype=f8).t(), torch.ones(()),
                                                  torch.ones(()), None, None, torch.bfloat16, False), _same, 1),
        "convolution": (aten.convolution.default, conv, _same, 1),
        "convolution_overrideable": (aten.convolution_overrideable.default, conv,
                                     _by_formula(lambda: t(2, 4, 8, 8)), 1),
        "_convolution": (aten._convolution.default, (*conv, False, False, True, True), _same, 1),
        "cudnn_convolution": (aten.cudnn_convolution.default,
                              (t(*X), t(*W), [1, 1], [1, 1], [1, 1], 1, False, False, True),
                              _by_formula(lambda: t(2, 4, 8, 8)), 1),
        "_slow_conv2d_forward": (aten._slow_conv2d_forward.default, (t(*X), t(*W), [3, 3], None, [1, 1], [1, 1]),
                                 _as_convolution, 1),
        "convolution_backward": (aten.convolution_backward.default,
                                 (*grads, [4], [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [True, True, False]),
                                 _same, 1),
        "_scaled_dot_product_flash_attention": (aten._scaled_dot_product_flash_attention.default,
                                                (q, k, v, 0.0, False, False, None), _same, 1),
        "_scaled_dot_product_efficient_attention": (aten._scaled_dot_product_efficient_attention.default,
                                                    (q, k, v, None, False, 0.0, True, None),
                                                    _by_formula(lambda: (t(B, H, S, D), t(B, H, S))), 0.5),
        "_scaled_dot_product_cudnn_attention": (aten._scaled_dot_product_cudnn_attention.default,
                                                (q, k, v, None, False, 0.0, False, False, None), _same, 1),
        "_flash_attention_forward": (aten._flash_attention_forward.default,
                                     (qs, ks, vs, None, None, S, S, 0.0, False, False, *[None] * 7),
                                     _bhsd_forward, 1),
        "_efficient_attention_forward": (aten._efficient_attention_forward.default,
                                         (qs, ks, vs, None, None, None, None, None, 0.0, 0, False, None, None, None),
                                         _bhsd_forward, 1),
        "_scaled_dot_product_flash_attention_backward": (
            aten._scaled_dot_product_flash_attention_backward.default,
            (*back, None, None, S, S, 0.0, False, seed, offset, None), _by_formula(lambda: three), 1),
        "_scaled_dot_product_efficient_attention_backward": (
            aten._scaled_dot_product_efficient_attention_backward.default,
            (*back[:4], None, back[4], back[5], seed, offset, 0.0, [True, True, True, False], True, None),
            _by_formula(lambda: (*three, None)), 0.5),
        "_scaled_dot_product_cudnn_attention_backward": (
            aten._scaled_dot_product_cudnn_attention_backward.default,
            (*back, seed, offset, None, None, None, S, S, 0.0, False, None), _by_formula(lambda: three), 1),
        "_flash_attention_backward": (
            aten._flash_attention_backward.default,
            (t(B, S, H, D), qs, ks, vs, t(B, S, H, D), t(B, H, S), None, None, S, S, 0.0, False, seed, offset,
             None, None, None),
            _bhsd_backward, 1),
        "_efficient_attention_backward": (
            aten._efficient_attention_backward.default,
            (t(B, S, H, D), qs, ks, vs, None, t(B, S, H, D), None, None, S, S, t(B, H, S), 0.0, seed, offset, 0, False,
             None, None, None, False),
            _bhsd_backward, 1),
    }


def shared_ops() -> set[str]:
    theirs = {packet.__name__ for packet in flop_registry if hasattr(packet, "__name__")}
    return theirs & {op.name for op in registered_aten_ops()}


def test_every_shared_op_has_a_case():
    assert sorted(shared_ops() - set(cases())) == []


@pytest.mark.parametrize("name", sorted(cases()))
def test_our_flops_are_flop_counter_modes(name):
    op, args, reference, factor = cases()[name]
    expected = reference(op, args)
    assert expected > 0, name
    assert ours(op, args) == expected * factor, name
