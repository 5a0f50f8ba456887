"""What a device can do, from its entry in the peak table (analysis/device_table.py): a finding never
advises a number format the device has no peak for (TF32 on a V100, FP8 before Hopper/Ada)."""

from __future__ import annotations

from dataclasses import dataclass

from traceanalyze.analysis.devices import DevicePeaks


@dataclass(frozen=True)
class Capabilities:
    """Tensor-core number formats the device has a datasheet peak for."""

    tensor_cores: bool
    tf32: bool
    bf16: bool
    fp16: bool
    fp8: bool


NONE = Capabilities(tensor_cores=False, tf32=False, bf16=False, fp16=False, fp8=False)


def capabilities(peaks: DevicePeaks | None) -> Capabilities:
    """The formats of `peaks` (NONE for an unknown device: nothing is advised that needs one)."""
    if peaks is None:
        return NONE
    tensor = {dtype for dtype, unit in peaks.flops_per_s if unit == "tensor"}
    return Capabilities(
        tensor_cores=bool(tensor),
        tf32="tf32" in tensor,
        bf16="bf16" in tensor,
        fp16="fp16" in tensor,
        fp8=any(dtype.startswith("fp8") for dtype in tensor),
    )
