"""What kind of run a trace records, so that advice fits it: training or inference (backward ops, an
optimizer step), the vendor's words and APIs (CUDA, ROCm, MTIA: the device named as it is, no
`torch.cuda` API where it does not apply), and whether torch.compile made the kernels (Inductor's
`triton_…` kernels: no advice to compile them)."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from traceanalyze.analysis.findings.inputs import FindingInputs
from traceanalyze.analysis.names import contains, starts_with

# ops only training runs: autograd's backward nodes (`MmBackward0`, `autograd::engine::evaluate_function: …`,
# `aten::convolution_backward`) and the optimizer step (`Optimizer.step#AdamW.step`, `Optimizer.zero_grad#…`)
TRAINING_OPS = r"Backward|_backward|^autograd::engine|^Optimizer\.(step|zero_grad)"
INDUCTOR_KERNEL_PREFIX = "triton_"  # Inductor's generated kernels: triton_poi_fused_…, triton_red_…, triton_tem_…


@dataclass(frozen=True)
class RunContext:
    """The run as the advice needs it."""

    training: bool  # backward ops or an optimizer step were recorded
    family: str  # RankMeta.device_family: CUDA, ROCm, MTIA, accelerator or none
    device: str  # what to call the device in a sentence: "GPU", "MTIA device", "accelerator"
    cores: str  # its matrix units: "tensor cores" (NVIDIA), "matrix cores" (AMD), "matrix units"
    blas: str  # the GEMM library: cuBLAS/cuBLASLt, hipBLASLt, the vendor's
    torch_device: str  # the device string of torch.autocast and .to(): "cuda" (ROCm too), "mtia"

    @property
    def cuda_api(self) -> bool:
        """Whether `torch.cuda.*` (sync debug mode, CUDA graphs) applies: CUDA and ROCm (HIP
        builds answer to `torch.cuda`); not MTIA or another accelerator."""
        return self.family in ("CUDA", "ROCm")


def run_context(inputs: FindingInputs) -> RunContext:
    """The run of `inputs` (training when any backward op or optimizer step was recorded)."""
    training = recorded_training(inputs.cpu_ops) if inputs.training is None else inputs.training
    family = inputs.device_family
    vendor = (inputs.peaks.display_name or "").split()[0] if inputs.peaks and inputs.peaks.display_name else ""
    if family == "ROCm" or vendor == "AMD":
        return RunContext(training, "ROCm", "GPU", "matrix cores", "hipBLASLt", "cuda")
    if family == "MTIA":
        return RunContext(training, family, "MTIA device", "matrix units", "the MTIA kernel library", "mtia")
    if family in ("CUDA", "none") or vendor == "NVIDIA":
        return RunContext(training, "CUDA", "GPU", "tensor cores", "cuBLAS", "cuda")
    return RunContext(training, family, "accelerator", "matrix units", "the vendor's GEMM library", "cuda")


def recorded_training(cpu_ops: pl.DataFrame) -> bool:
    """Whether any backward op or optimizer step was recorded (`TRAINING_OPS`)."""
    names = cpu_ops["name"] if "name" in cpu_ops.columns else pl.Series([], dtype=pl.String)
    return bool(names.len()) and bool(contains(names, TRAINING_OPS).fill_null(False).any())


def inductor_share(rows: pl.DataFrame) -> float:
    """The share of `rows`' time (`name`, `duration_ns`) in Inductor's own kernels (`triton_…`)."""
    if rows.is_empty():
        return 0.0
    total = float(rows["duration_ns"].sum())
    inductor = starts_with(rows["name"], INDUCTOR_KERNEL_PREFIX).fill_null(False)
    compiled = float(rows.filter(inductor)["duration_ns"].sum())
    return compiled / total if total else 0.0


def compiled_names(names: pl.Series) -> bool:
    """Whether every non-null name of `names` is an Inductor kernel (`triton_…`)."""
    known = names.drop_nulls()
    return bool(known.len()) and bool(starts_with(known, INDUCTOR_KERNEL_PREFIX).all())
