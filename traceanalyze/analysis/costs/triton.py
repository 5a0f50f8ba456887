"""Triton kernels that torch.compile (Inductor) generates, recorded as CPU ops named after the
kernel with the shapes of its pointer arguments; the registry tries them first (docs/flops.md)."""

from __future__ import annotations

from traceanalyze.analysis.costs.family import CostFamily, OpCost
from traceanalyze.analysis.costs.pointwise import ELEMENTWISE
from traceanalyze.analysis.costs.reductions import REDUCTION
from traceanalyze.analysis.costs.tensors import Args, Unmodelled, total_bytes

# name prefix → family: pointwise (`poi`), reduction (`red`) and persistent reduction (`per`) kernels
PREFIXES: dict[str, CostFamily] = {"triton_poi_": ELEMENTWISE, "triton_red_": REDUCTION, "triton_per_": REDUCTION}
# Triton templates (`triton_tem_`): their pointer shapes do not say the GEMM's M, N, K
TEMPLATE_PREFIX = "triton_tem_"


def triton_kernel(args: Args, name: str) -> OpCost:
    """An Inductor Triton kernel: every tensor argument read or written once; one FLOP per element
    of the largest tensor (the loop's extent)."""
    tensors = args.tensors()
    if not tensors:
        raise Unmodelled("shape arguments incomplete: no tensor arguments recorded")
    largest = max(tensors, key=lambda t: t.numel)
    family = next(f for prefix, f in PREFIXES.items() if name.startswith(prefix))
    return OpCost(float(largest.numel), total_bytes(tensors), family, False, largest.cls,
                  "Triton kernel: each tensor argument read or written once")
