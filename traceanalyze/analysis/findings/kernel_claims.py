"""The kernel rules, run so that their gains can all be true at once: each kernel's recoverable
time belongs to one kernel finding. The rules run in `KERNEL_RULES` order, the ones whose action
is modelled first (attention as one SDPA kernel, a faster format, layout, the optimizer, a kernel
far below its roof); each sees only the kernels the earlier ones did not claim (a finding claims
the GPU ops its remedies change). The rules whose gain is not counted op by op (fusion chains) or
whose remedies model only part of their kernels (GEMM padding: formats with an aligned GEMM;
latency-bound kernels: runs of one kernel) come last, on what is left. Σ of the kernel findings' gains
is then held to the rank's GPU busy time (kernels of several streams overlap), and every gain to
the rank's window."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import polars as pl

from traceanalyze.analysis.findings import rules_kernels, rules_precision, rules_regimes
from traceanalyze.analysis.findings.finding import Finding
from traceanalyze.analysis.findings.inputs import FindingInputs, busy_ns, format_share
from traceanalyze.analysis.findings.remedies import OP_KEY, claimed_ops

KernelRule = Callable[[FindingInputs], list[Finding]]
KERNEL_RULES: tuple[KernelRule, ...] = (
    rules_regimes.unfused_attention, rules_precision.fp32_faster_format, rules_precision.lower_precision,
    rules_precision.bigger_gpu, rules_regimes.layout_conversions, rules_regimes.optimizer_step,
    rules_regimes.far_below_roof, rules_kernels.fusion, rules_kernels.gemm_alignment, rules_kernels.latency_bound,
    rules_kernels.pageable_copies,
)
# the regimes of findings whose gain is GPU busy time (kernels, copies), not idle time
KERNEL_REGIMES = ("compute", "bandwidth", "latency", "memcpy")


def kernel_findings(inputs: FindingInputs) -> list[Finding]:
    """Every kernel rule's findings, each kernel claimed by one, Σ gains ≤ GPU busy."""
    found: list[Finding] = []
    roofline = inputs.roofline
    for rule in KERNEL_RULES:
        out = rule(replace(inputs, roofline=roofline))
        claimed = sorted(set().union(*(claimed_ops(finding.remedies) for finding in out))) if out else []
        if claimed and roofline.height:  # the next rules see only the kernels left
            taken = pl.DataFrame(claimed, schema={key: roofline.schema[key] for key in OP_KEY}, orient="row")
            roofline = roofline.join(taken, on=list(OP_KEY), how="anti", maintain_order="left")
        found.extend(out)
    return fit_to_busy(found, busy_ns(inputs))


def fit_to_busy(found: list[Finding], busy: int) -> list[Finding]:
    """When the kernel findings' gains add up to more than the GPU busy time (kernels of several
    streams overlap, so each one's saving is not all busy time), each is scaled by busy ÷ Σ, saying so."""
    total = sum(f.gain_ns or 0.0 for f in found if f.regime in KERNEL_REGIMES)
    if not busy or total <= busy:
        return found
    scale = busy / total
    return [replace(f, gain_ns=f.gain_ns * scale,
                    evidence=f"{f.evidence}; gain scaled to {format_share(scale, 1)}: the kernel findings' gains "
                             "exceeded the GPU busy time (kernels overlap on several streams)")
            if f.regime in KERNEL_REGIMES and f.gain_ns else f for f in found]


def within_window(found: list[Finding], window: int) -> list[Finding]:
    """No gain larger than the rank's window (Σ of its device windows): an upper bound cannot be."""
    if not window:
        return found
    return [replace(f, gain_ns=float(window)) if f.gain_ns is not None and f.gain_ns > window else f for f in found]
