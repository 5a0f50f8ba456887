"""The op-cost registry (traceanalyze/analysis/costs): every registered op once, with the argument
limit of its PyTorch schema; the families the roofline and the attribution read; the dispatch
precedence of registry.py's docstring."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from pathlib import Path

import pytest

import traceanalyze.analysis.costs as costs_package
from traceanalyze.analysis import attribution, roofline
from traceanalyze.analysis.costs import fbgemm, normalization, optimizers, pointwise, registry, triton, vllm
from traceanalyze.analysis.costs.family import CostFamily, Op
from traceanalyze.analysis.costs.registry import DuplicateOp, index_by_name

COSTS_DIR = Path(costs_package.__file__).parent


def all_registered() -> list[str]:
    return ([op.name for op in registry.registered_aten_ops()] + [op.name for op in registry.registered_custom_ops()])


def test_every_op_is_registered_once():
    names = all_registered()
    assert len(names) > 600
    duplicates = sorted({n for n in names if names.count(n) > 1})
    assert not duplicates


def test_a_duplicate_registration_is_refused():
    handler = pointwise.elementwise
    with pytest.raises(DuplicateOp, match="'mm' registered twice"):
        index_by_name([Op("mm", handler, 4), Op("mm", handler, 4)])


def test_no_table_of_the_package_repeats_a_key():
    """A dict literal with a repeated key silently keeps the last value: none in the package."""
    problems = []
    for path in COSTS_DIR.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Dict):
                keys = [k.value for k in node.keys if isinstance(k, ast.Constant)]
                problems += [f"{path.name}: {k!r}" for k in set(keys) if keys.count(k) > 1]
    assert not problems


def test_an_argument_limit_cannot_be_left_out():
    assert inspect.signature(Op).parameters["max_args"].default is inspect.Parameter.empty
    assert all(isinstance(op.max_args, int) or op.max_args is None for op in registry.registered_aten_ops())
    assert all(op.max_args is None for op in registry.registered_custom_ops())


def test_every_limit_is_its_schema_maximum():
    """An aten op has a limit exactly when PyTorch has a schema for it, and the limit is the most
    arguments of any of its overloads."""
    torch = pytest.importorskip("torch")
    wrong = []
    for op in registry.registered_aten_ops():
        packet = getattr(torch.ops.aten, op.name, None)
        overloads = packet.overloads() if packet is not None else []
        expected = max(len(getattr(packet, o)._schema.arguments) for o in overloads) if overloads else None
        if op.max_args != expected:
            wrong.append((op.name, op.max_args, expected))
    assert not wrong


def test_spec_tables_are_all_registered():
    aten = {op.name for op in registry.registered_aten_ops()}
    from traceanalyze.analysis.costs import attention, conv
    for table in (conv.CONV_FORWARD, conv.CONV_BACKWARD, attention.ATTENTION_SPECS, normalization.BATCH_NORM):
        assert set(table) <= aten


def test_every_family_is_in_the_enum_once():
    defined = set()
    for info in pkgutil.iter_modules([str(COSTS_DIR)]):
        module = importlib.import_module(f"traceanalyze.analysis.costs.{info.name}")
        defined |= {value for value in vars(module).values() if isinstance(value, CostFamily)}
    assert defined == set(registry.FAMILIES)
    assert len(registry.FAMILY_NAMES) == len(set(registry.FAMILY_NAMES)) == 14


def test_roofline_and_attribution_read_the_family_flags():
    assert set(roofline.TENSOR_CORE_MODELS) == {"matmul", "conv", "attention"}
    assert set(attribution.FUSIBLE_MODELS) == {"elementwise", "norm", "softmax", "reduction", "copy", "fill", "loss"}


@pytest.mark.parametrize("name, handler, key, limit", [
    ("triton_poi_fused_add_0", triton.triton_kernel, "triton_poi_fused_add_0", None),
    ("_C::rms_norm", vllm.CUSTOM_OPS[2].handler, "_C::rms_norm", None),
    ("torch::autograd::CppNode<fbgemm_gpu::PermutePooledEmbsFunction>", fbgemm.PREFIX_OPS[0].handler,
     "torch::autograd::CppNode<fbgemm_gpu::PermutePooledEmbsFunction>", None),
    ("aten::native_layer_norm", registry.ATEN["native_layer_norm"].handler, "native_layer_norm", 8),
    ("aten::_foreach_add_", optimizers.foreach, "_foreach_add_", None),
    ("aten::add", pointwise.elementwise, "add", 4),
    ("aten::add_", pointwise.pointwise_inplace, "add", 3),
    ("aten::maximum_", pointwise.pointwise_inplace, "maximum", None),  # no such schema: no limit
    ("aten::fill_", registry.ATEN["fill_"].handler, "fill_", 2),  # a registered name ending in _ wins
    ("aten::__and__", pointwise.elementwise, "__and__", 2),
])
def test_dispatch_precedence(name, handler, key, limit):
    assert registry.dispatch(name) == (handler, key, limit)


@pytest.mark.parametrize("name", ["mm", "aten::unknown_op", "aten::__foo__", "fbgemm::unknown",
                                  "triton_tem_fused_mm_0"])
def test_names_without_a_rule(name):
    assert registry.dispatch(name) is None
