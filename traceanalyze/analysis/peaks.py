"""A device's peak throughput, `DevicePeaks`: dense peak FLOP/s per number format and math unit,
memory bandwidth, host and peer links, and the queries the roofline asks of them (`peak_flops`,
`flops_roof`, `ridge_point`). The built-in entries are in `analysis/device_table.py`; how a trace's
device finds its entry, and user figures, in `analysis/devices.py`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any

DTYPES = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "fp4")
UNITS = ("tensor", "simt")


@dataclass(frozen=True)
class DevicePeaks:
    """Peak throughput of one device.

    `flops_per_s` maps (dtype, unit) to dense peak FLOP/s, e.g. ``("bf16", "tensor")``; dtypes are
    those of `DTYPES`, units ``"tensor"`` (tensor cores / AMD matrix cores) or ``"simt"`` (CUDA
    cores / AMD vector ALUs). `default_flops_per_s`, when set (user overrides), answers any query
    the table does not. `source` names the documents the figures come from.
    """

    key: str
    display_name: str
    memory_bandwidth_bytes_per_s: float
    flops_per_s: Mapping[tuple[str, str], float] = field(hash=False)
    source: str = ""
    memory_bytes: int | None = None
    num_sms: int | None = None
    default_flops_per_s: float | None = None
    host_link: str | None = None  # the host↔device link, e.g. "PCIe Gen4 x16"
    host_link_bytes_per_s: float | None = None  # its peak per direction
    base_key: str | None = None  # a device file's "base": the table entry it describes
    measured_on: str | None = None  # a calibrated device file's `notes.kind`: "cpu", "cuda", "rocm"
    file_device_name: str | None = None  # the "name" a device file gives, if any
    peer_link: str | None = None  # the GPU↔GPU link inside a node, e.g. "NVLink 3" (None: PCIe only)
    peer_link_bytes_per_s: float | None = None  # its peak per direction, all links of the GPU together

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickles (a rank's report travels from a worker process, Ray or Dask task): the
        read-only peak table goes as a dict and is wrapped again."""
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values["flops_per_s"] = dict(self.flops_per_s)
        return (rebuild_peaks, (values,))

    @property
    def collective_link_bytes_per_s(self) -> float | None:
        """The peak a collective's bus bandwidth is judged against inside one node: the NVLink
        (or Infinity Fabric) peak per direction, else the host link (PCIe)."""
        return self.peer_link_bytes_per_s or self.host_link_bytes_per_s

    def peak_flops(self, dtype: str, tensor_core: bool) -> float | None:
        """Dense peak FLOP/s for math in `dtype` on tensor cores (True) or the SIMT units (False).

        `dtype` is a class from `DTYPES` or a recorded type name (``"c10::BFloat16"``, ``"float"``).
        Fallbacks, in order: fp32 on tensor cores is TF32 unless the device has FP32 matrix units
        (AMD); 16/8/4-bit and integer math off the tensor cores runs at the FP32 SIMT rate (PyTorch
        computes elementwise ops on half/bfloat16 in float). None when the device cannot do it
        (or the datasheet does not say).
        """
        entry = self.flops_roof(dtype, tensor_core)
        return None if entry is None else self.flops_per_s.get(entry, self.default_flops_per_s)

    def flops_roof(self, dtype: str, tensor_core: bool) -> tuple[str, str] | None:
        """The (dtype, unit) entry that `peak_flops` answers with — ``("tf32", "tensor")`` for an
        fp32 GEMM on an NVIDIA tensor core — ``("any", "default")`` for `default_flops_per_s`, or
        None."""
        cls = _normalize_dtype(dtype)
        unit = "tensor" if tensor_core else "simt"
        table = self.flops_per_s
        if cls is not None and (cls, unit) in table:
            return (cls, unit)
        if cls == "fp32" and tensor_core and ("tf32", "tensor") in table:
            return ("tf32", "tensor")
        if not tensor_core and cls not in ("fp64", "tf32") and ("fp32", "simt") in table:
            return ("fp32", "simt")
        return ("any", "default") if self.default_flops_per_s is not None else None

    @property
    def memory_kind(self) -> str:
        """"GDDR" for the GDDR6 boards of the table (T4, A10, A10G, L4, L40S), else "HBM"."""
        return "GDDR" if self.key in ("t4", "a10", "a10g", "l4", "l40s") else "HBM"

    def ridge_point(self, dtype: str, tensor_core: bool) -> float | None:
        """FLOP per byte where compute and bandwidth take equal time: peak FLOP/s / bandwidth."""
        peak = self.peak_flops(dtype, tensor_core)
        if peak is None or not self.memory_bandwidth_bytes_per_s:
            return None
        return peak / self.memory_bandwidth_bytes_per_s


def rebuild_peaks(values: dict[str, Any]) -> DevicePeaks:
    """A `DevicePeaks` from its fields, the peak table as a plain dict (what pickling sends)."""
    return DevicePeaks(**{**values, "flops_per_s": MappingProxyType(dict(values["flops_per_s"]))})


def _normalize_dtype(dtype: str) -> str | None:
    text = dtype.strip()
    if text in DTYPES:
        return text
    aliases = {
        "double": "fp64", "float64": "fp64", "float": "fp32", "float32": "fp32", "half": "fp16",
        "float16": "fp16", "c10::Half": "fp16", "bfloat16": "bf16", "c10::BFloat16": "bf16",
        "fp8": "fp8", "float8": "fp8", "fp4": "fp4", "int8": "int8", "int": "int32",
    }
    if text in aliases:
        return aliases[text]
    if "Float8" in text or text.startswith("float8"):
        return "fp8"
    if "Float4" in text or text.startswith("float4"):
        return "fp4"
    if text in ("bool", "long int", "long", "short int", "signed char", "unsigned char") or text.startswith(
            ("int", "uint")):
        return "int"
    return None
