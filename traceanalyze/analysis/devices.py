"""Peak FLOP/s and memory bandwidth of GPUs, from vendor datasheets, and how a trace's device maps
to one of them.

Every figure is the **dense** peak: NVIDIA datasheets print tensor-core figures "with sparsity"
(2:4 structured sparsity doubles them) and say the dense value is half; we store the half. AMD
data sheets print both; we store the dense one. docs/devices.md lists every figure with its source.

Peaks are per visible device: an MI250/MI250X package has two dies (GCDs) that ROCm shows as two
devices, so its entries are half the package figures.

Examples
--------
>>> peaks = device_peaks("NVIDIA A100-SXM4-80GB", 108, 85_899_345_920)
>>> peaks.key, peaks.peak_flops("bf16", tensor_core=True) / 1e12
('a100-sxm4-80gb', 312.0)
>>> round(peaks.ridge_point("bf16", tensor_core=True), 1)  # FLOP per byte
153.0
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from traceanalyze.errors import ConfigError

MathUnit = Literal["tensor", "simt"]
DTYPES = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "fp4")
UNITS = ("tensor", "simt")

DEVICE_FILE_FORMAT = "traceanalyze-device"
DEVICE_FILE_VERSION = 1

T = 1e12  # one tera
G = 1e9


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


def _peaks(**figures: float) -> Mapping[tuple[str, str], float]:
    """`fp32_simt=19.5 * T` -> {("fp32", "simt"): 19.5e12}."""
    table = {}
    for name, value in figures.items():
        dtype, unit = name.rsplit("_", 1)
        if dtype not in DTYPES or unit not in UNITS:
            raise ValueError(name)
        table[(dtype, unit)] = value
    return MappingProxyType(table)


def _entry(key: str, name: str, bandwidth: float, source: str, memory_gb: float | None = None,
           sms: int | None = None, **figures: float) -> DevicePeaks:
    return DevicePeaks(key, name, bandwidth, _peaks(**figures), source,
                       None if memory_gb is None else int(memory_gb * 1e9), sms)


_V100_SHEET = ("NVIDIA V100 Tensor Core GPU datasheet, https://images.nvidia.com/content/technologies/"
               "volta/pdf/volta-v100-datasheet-update-us-1165301-r5.pdf")
_A100_SHEET = ("NVIDIA A100 Tensor Core GPU datasheet, https://www.nvidia.com/content/dam/en-zz/Solutions/"
               "Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf (tensor figures: "
               "the dense column)")
_H100_SHEET = ("NVIDIA H100 Tensor Core GPU datasheet, https://resources.nvidia.com/en-us-tensor-core/"
               "nvidia-tensor-core-gpu-datasheet (tensor figures printed with sparsity, halved)")
_H200_SHEET = ("NVIDIA H200 Tensor Core GPU datasheet, https://nvdam.widen.net/s/nb5zzzsjdf/"
               "hpc-datasheet-sc23-h200-datasheet-3002446 (tensor figures printed with sparsity, halved)")
_GH200_SHEET = ("NVIDIA GH200 Grace Hopper Superchip datasheet, https://resources.nvidia.com/"
                "en-us-grace-cpu/grace-hopper-superchip (tensor figures printed with sparsity, halved)")
_MI200_SHEET = ("AMD Instinct MI200 series data sheet, https://www.amd.com/system/files/documents/"
                "amd-instinct-mi200-datasheet.pdf (package figures, halved per GCD)")

_HOPPER_SXM = dict(fp64_simt=34 * T, fp64_tensor=67 * T, fp32_simt=67 * T, tf32_tensor=494.5 * T,
                   bf16_tensor=989.5 * T, fp16_tensor=989.5 * T, fp8_tensor=1979 * T)
_HOPPER_NVL = dict(fp64_simt=30 * T, fp64_tensor=60 * T, fp32_simt=60 * T, tf32_tensor=417.5 * T,
                   bf16_tensor=835.5 * T, fp16_tensor=835.5 * T, fp8_tensor=1670.5 * T)
_A100 = dict(fp64_simt=9.7 * T, fp64_tensor=19.5 * T, fp32_simt=19.5 * T, tf32_tensor=156 * T,
             bf16_tensor=312 * T, fp16_tensor=312 * T)

DEVICE_TABLE: tuple[DevicePeaks, ...] = (
    _entry("v100-sxm2", "NVIDIA V100 SXM2", 900 * G, _V100_SHEET, 32, 80,
           fp64_simt=7.8 * T, fp32_simt=15.7 * T, fp16_tensor=125 * T),
    _entry("v100-pcie", "NVIDIA V100 PCIe", 900 * G, _V100_SHEET, 32, 80,
           fp64_simt=7 * T, fp32_simt=14 * T, fp16_tensor=112 * T),
    _entry("v100s-pcie", "NVIDIA V100S PCIe", 1134 * G, _V100_SHEET, 32, 80,
           fp64_simt=8.2 * T, fp32_simt=16.4 * T, fp16_tensor=130 * T),
    _entry("v100-dgxs", "NVIDIA V100 DGXS (DGX Station)", 900 * G,
           "NVIDIA Tesla V100 GPU Architecture whitepaper (WP-08608-001), Table 1: V100 at its 1455 MHz "
           "boost clock, https://images.nvidia.com/content/volta-architecture/pdf/volta-architecture-"
           "whitepaper.pdf; bandwidth from the V100 datasheet", 32, 80,
           fp64_simt=7.5 * T, fp32_simt=15 * T, fp16_tensor=120 * T),
    _entry("t4", "NVIDIA T4", 320 * G,
           "NVIDIA T4 Tensor Core GPU datasheet, https://www.nvidia.com/content/dam/en-zz/Solutions/"
           "Data-Center/tesla-t4/t4-tensor-core-datasheet-951643.pdf (no FP64 figure published)", 16, 40,
           fp32_simt=8.1 * T, fp16_tensor=65 * T),
    _entry("a10", "NVIDIA A10", 600 * G,
           "NVIDIA A10 Tensor Core GPU datasheet, https://www.nvidia.com/content/dam/en-zz/Solutions/"
           "Data-Center/a10/pdf/datasheet-new/nvidia-a10-datasheet.pdf (tensor figures printed with "
           "sparsity, halved; no FP64 figure published)", 24, 72,
           fp32_simt=31.2 * T, tf32_tensor=62.5 * T, bf16_tensor=125 * T, fp16_tensor=125 * T),
    _entry("a10g", "NVIDIA A10G (AWS)", 600 * G,
           "No NVIDIA datasheet exists for the AWS-only A10G. Secondary source: Baseten, 'NVIDIA A10 vs "
           "A10G for ML model inference', https://www.baseten.co/blog/nvidia-a10-vs-a10g-for-ml-model-"
           "inference/ (spec table); bandwidth also in the AWS EC2 G5 documentation", 24, 80,
           fp32_simt=35 * T, tf32_tensor=35 * T, bf16_tensor=70 * T, fp16_tensor=70 * T),
    _entry("a100-sxm4-40gb", "NVIDIA A100 SXM4 40GB", 1555 * G, _A100_SHEET, 40, 108, **_A100),
    _entry("a100-sxm4-80gb", "NVIDIA A100 SXM4 80GB", 2039 * G, _A100_SHEET, 80, 108, **_A100),
    _entry("a100-pcie-40gb", "NVIDIA A100 PCIe 40GB", 1555 * G, _A100_SHEET, 40, 108, **_A100),
    _entry("a100-pcie-80gb", "NVIDIA A100 PCIe 80GB", 1935 * G, _A100_SHEET, 80, 108, **_A100),
    _entry("l4", "NVIDIA L4", 300 * G,
           "NVIDIA L4 Tensor Core GPU datasheet, https://resources.nvidia.com/en-us-data-center-overview/"
           "l4-gpu-datasheet (tensor figures printed with sparsity, halved; no FP64 figure published)",
           24, 58, fp32_simt=30.3 * T, tf32_tensor=60 * T, bf16_tensor=121 * T, fp16_tensor=121 * T,
           fp8_tensor=242.5 * T),
    _entry("l40s", "NVIDIA L40S", 864 * G,
           "NVIDIA L40S GPU datasheet, https://resources.nvidia.com/en-us-l40s/l40s-datasheet-28413 "
           "(dense column; no FP64 figure published)", 48, 142,
           fp32_simt=91.6 * T, tf32_tensor=183 * T, bf16_tensor=362.05 * T, fp16_tensor=362.05 * T,
           fp8_tensor=733 * T),
    _entry("h100-sxm", "NVIDIA H100 SXM5 80GB", 3350 * G, _H100_SHEET, 80, 132, **_HOPPER_SXM),
    _entry("h100-pcie", "NVIDIA H100 PCIe 80GB", 2000 * G, _H100_SHEET, 80, 114,
           fp64_simt=26 * T, fp64_tensor=51 * T, fp32_simt=51 * T, tf32_tensor=378 * T,
           bf16_tensor=756.5 * T, fp16_tensor=756.5 * T, fp8_tensor=1513 * T),
    _entry("h100-nvl", "NVIDIA H100 NVL 94GB", 3900 * G, _H100_SHEET, 94, 132, **_HOPPER_NVL),
    _entry("h200-sxm", "NVIDIA H200 SXM 141GB", 4800 * G, _H200_SHEET, 141, 132, **_HOPPER_SXM),
    _entry("h200-nvl", "NVIDIA H200 NVL 141GB", 4800 * G, _H200_SHEET, 141, 132, **_HOPPER_NVL),
    _entry("gh200-96gb", "NVIDIA GH200 (96GB HBM3)", 4000 * G, _GH200_SHEET, 96, 132, **_HOPPER_SXM),
    _entry("gh200-144gb", "NVIDIA GH200 (144GB HBM3e)", 4900 * G, _GH200_SHEET, 144, 132, **_HOPPER_SXM),
    _entry("b200", "NVIDIA B200 (HGX B200)", 7700 * G,
           "NVIDIA HGX platform page, HGX B200 per-GPU specifications, https://www.nvidia.com/en-us/"
           "data-center/hgx/ (tensor figures printed with sparsity, halved; the DGX B200 datasheet "
           "quotes 64 TB/s for eight GPUs, 8 TB/s each)", 180, 148,
           fp64_simt=37 * T, fp64_tensor=37 * T, fp32_simt=75 * T, tf32_tensor=1100 * T,
           bf16_tensor=2250 * T, fp16_tensor=2250 * T, fp8_tensor=4500 * T, fp4_tensor=9000 * T),
    _entry("mi250x-gcd", "AMD Instinct MI250X (one GCD)", 1638.4 * G, _MI200_SHEET, 64, 110,
           fp64_simt=23.95 * T, fp64_tensor=47.85 * T, fp32_simt=23.95 * T, fp32_tensor=47.85 * T,
           bf16_tensor=191.5 * T, fp16_tensor=191.5 * T),
    _entry("mi250-gcd", "AMD Instinct MI250 (one GCD)", 1638.4 * G, _MI200_SHEET, 64, 104,
           fp64_simt=22.65 * T, fp64_tensor=45.25 * T, fp32_simt=22.65 * T, fp32_tensor=45.25 * T,
           bf16_tensor=181.05 * T, fp16_tensor=181.05 * T),
    _entry("mi300x", "AMD Instinct MI300X", 5300 * G,
           "AMD Instinct MI300X data sheet, https://www.amd.com/content/dam/amd/en/documents/"
           "instinct-tech-docs/data-sheets/amd-instinct-mi300x-data-sheet.pdf (dense figures)", 192, 304,
           fp64_simt=81.7 * T, fp64_tensor=163.4 * T, fp32_simt=163.4 * T, fp32_tensor=163.4 * T,
           tf32_tensor=653.7 * T, bf16_tensor=1307.4 * T, fp16_tensor=1307.4 * T, fp8_tensor=2614.9 * T),
)
# Host↔device link per entry, bytes/s per direction (a copy moves one way): datasheets quote both
# directions together (PCIe Gen3 x16 32 GB/s, Gen4 64 GB/s, Gen5 128 GB/s; NVLink-C2C 900 GB/s),
# so these are half. Sources in docs/devices.md; None where the datasheet gives none per device.
_HOST_LINKS = {
    **{key: ("PCIe Gen3 x16", 16 * G) for key in ("v100-sxm2", "v100-pcie", "v100s-pcie", "v100-dgxs", "t4")},
    **{key: ("PCIe Gen4 x16", 32 * G) for key in ("a10", "a10g", "a100-sxm4-40gb", "a100-sxm4-80gb",
                                                   "a100-pcie-40gb", "a100-pcie-80gb", "l4", "l40s")},
    **{key: ("PCIe Gen5 x16", 64 * G) for key in ("h100-sxm", "h100-pcie", "h100-nvl", "h200-sxm", "h200-nvl",
                                                   "b200", "mi300x")},
    **{key: ("NVLink-C2C", 450 * G) for key in ("gh200-96gb", "gh200-144gb")},
}
# GPU↔GPU link per entry, bytes/s per direction: datasheets quote NVLink as both directions of all
# of a GPU's links together (V100 SXM2 300 GB/s, A100 SXM4 600 GB/s, H100/H200 SXM 900 GB/s,
# H100 NVL 600 GB/s, B200 1.8 TB/s), so these are half. PCIe boards (and NVLink bridges, which
# link only pairs) are left out: their collectives run over PCIe, the host link. docs/devices.md.
_PEER_LINKS = {
    "v100-sxm2": ("NVLink 2", 150 * G),
    **{key: ("NVLink 3", 300 * G) for key in ("a100-sxm4-40gb", "a100-sxm4-80gb")},
    **{key: ("NVLink 4", 450 * G) for key in ("h100-sxm", "h200-sxm")},
    "h100-nvl": ("NVLink 4", 300 * G),
    "b200": ("NVLink 5", 900 * G),
}
DEVICE_TABLE = tuple(
    replace(entry,
            host_link=_HOST_LINKS.get(entry.key, (None, None))[0],
            host_link_bytes_per_s=_HOST_LINKS.get(entry.key, (None, None))[1],
            peer_link=_PEER_LINKS.get(entry.key, (None, None))[0],
            peer_link_bytes_per_s=_PEER_LINKS.get(entry.key, (None, None))[1])
    for entry in DEVICE_TABLE
)
_BY_KEY = {entry.key: entry for entry in DEVICE_TABLE}


def known_device(key: str) -> DevicePeaks | None:
    """The built-in entry with this key (``"h100-sxm"``), or None."""
    return _BY_KEY.get(key)


# --------------------------------------------------------------------------------------------
# Matching a trace's deviceProperties to an entry
# --------------------------------------------------------------------------------------------

_GIB = 1024 ** 3


def _tokens(name: str) -> tuple[str, set[str]]:
    text = re.sub(r"[^A-Z0-9]+", " ", name.upper())
    for prefix in ("NVIDIA", "TESLA", "AMD", "INSTINCT"):
        text = re.sub(rf"\b{prefix}\b", " ", text)
    text = " ".join(text.split())
    return text, set(text.split())


def normalized_name(name: str) -> str:
    """A device name as the matcher reads it: upper case, punctuation as spaces, vendor words
    dropped (`"Tesla V100-SXM2-32GB"` → `"V100 SXM2 32GB"`)."""
    return _tokens(name)[0]


def _memory_gib(total_memory_bytes: int | None) -> float | None:
    return None if not total_memory_bytes else total_memory_bytes / _GIB


def _match_key(name: str, num_sms: int | None, total_memory_bytes: int | None) -> str | None:
    text, tokens = _tokens(name)
    mem = _memory_gib(total_memory_bytes)

    def has(*parts: str) -> bool:
        return all(p in text for p in parts)

    if has("GH200"):
        return "gh200-144gb" if (mem or 0) > 110 or has("144") else "gh200-96gb"
    if has("H200"):
        return "h200-nvl" if "NVL" in tokens else "h200-sxm"
    if has("H100"):
        if "NVL" in tokens or (mem is not None and mem > 85):
            return "h100-nvl"
        if "PCIE" in tokens or num_sms == 114:
            return "h100-pcie"
        if "HBM3" in tokens or "SXM" in text or "SXM5" in tokens or num_sms == 132:
            return "h100-sxm"
        return None
    if has("B200"):
        return "b200"
    if has("A100"):
        big = mem > 60 if mem is not None else ("80GB" in tokens or "80G" in tokens)
        pcie = "PCIE" in tokens
        return f"a100-{'pcie' if pcie else 'sxm4'}-{'80gb' if big else '40gb'}"
    if "A10G" in tokens:
        return "a10g"
    if "A10" in tokens:
        return "a10"
    if "L40S" in tokens:
        return "l40s"
    if "L4" in tokens:
        return "l4"
    if "T4" in tokens:
        return "t4"
    if has("V100S"):
        return "v100s-pcie"
    if has("V100"):
        if has("DGXS"):
            return "v100-dgxs"
        if has("PCIE"):
            return "v100-pcie"
        if has("SXM2"):
            return "v100-sxm2"
        return None
    if has("MI300X"):
        return "mi300x"
    if has("MI250X") and not has("MI250X MI250"):
        return "mi250x-gcd"
    amd_ish = not text or has("MI250") or "RADEON" in tokens or name.strip().upper().startswith("AMD")
    if amd_ish:
        by_cus = {110: "mi250x-gcd", 104: "mi250-gcd", 304: "mi300x"}
        if num_sms in by_cus:
            return by_cus[num_sms]
        if has("MI250"):
            return "mi250-gcd"
    if tokens <= _GENERIC_WORDS or all(t in _GENERIC_WORDS or _HEX_ID.fullmatch(t) for t in tokens):
        return _match_by_size(num_sms, total_memory_bytes)
    return None


# Words of names that say nothing about the model: "", "NVIDIA Graphics Device", "AMD Radeon
# Graphics", "Device 2330" (a PCI id).
_GENERIC_WORDS = frozenset({"GRAPHICS", "DEVICE", "GPU", "RADEON", "VF", "UNKNOWN", "ACCELERATOR"})
_HEX_ID = re.compile(r"(?:0X)?[0-9A-F]{4}")
MEMORY_TOLERANCE = 0.08  # a device reports a little less (or, in GB, a little more) than its datasheet size


def _match_by_size(num_sms: int | None, total_memory_bytes: int | None) -> str | None:
    """The one table entry with this SM/CU count (and, when known, this memory size within
    `MEMORY_TOLERANCE`, in GiB or GB), or None when there is none or more than one."""
    if not num_sms:
        return None
    candidates = [e for e in DEVICE_TABLE if e.num_sms == num_sms]
    if total_memory_bytes:
        def near(entry: DevicePeaks) -> bool:
            if not entry.memory_bytes:
                return False
            size = entry.memory_bytes / 1e9
            return any(abs(reported - size) <= MEMORY_TOLERANCE * size
                       for reported in (total_memory_bytes / _GIB, total_memory_bytes / 1e9))
        candidates = [e for e in candidates if near(e)]
    return candidates[0].key if len(candidates) == 1 else None


def device_peaks(name: str, num_sms: int | None = None, total_memory_bytes: int | None = None) -> DevicePeaks | None:
    """The table entry for a device as a trace's `deviceProperties` describe it, or None.

    The name may carry vendor prefixes ("NVIDIA ", "Tesla ") and variant markers ("-SXM4-80GB",
    " PCIe", "80GB HBM3"); the SM (compute unit) count and memory size settle variants the name does
    not (A100 40 vs 80 GB, H100 PCIe vs SXM, MI250 vs MI250X, generic AMD names). A missing or
    generic name ("", "NVIDIA Graphics Device", "Device 2330") is resolved by SM/CU count and
    memory size alone when exactly one entry has both (`_match_by_size`).

    Examples
    --------
    >>> device_peaks("Tesla V100-SXM2-32GB", 80, 34_079_899_648).key
    'v100-sxm2'
    >>> device_peaks("AMD Radeon Graphics", 104, 68_702_699_520).key
    'mi250-gcd'
    >>> device_peaks("", 132, 85_520_809_984).key  # 79.6 GiB: the H100 SXM, not an H200 or GH200
    'h100-sxm'
    """
    key = _match_key(name or "", num_sms, total_memory_bytes)
    return None if key is None else _BY_KEY[key]


# --------------------------------------------------------------------------------------------
# Kernel names: tensor cores or SIMT?
# --------------------------------------------------------------------------------------------

# MMA instructions and tensor-core tile/shape markers in library kernel names.
_MMA = re.compile(
    r"tensorop|hmma|wgmma|gmma|xmma|imma|wmma|mma_sync|nvjet|mfma|_MI\d+x\d+x\d+|"
    r"[a-z](?:884|1688|16816|161616|8816|16832)|flash_fwd|flash_bwd|fmha",
    re.IGNORECASE,
)
# CUDA-core GEMM/GEMV and cuDNN's non-tensor-core convolution kernels.
_SIMT_GEMM = re.compile(
    r"simt|sgemm|dgemm|hgemm|cgemm|zgemm|gcgemm|gemv|gemmk1|gemmsn|dot_kernel|"
    r"implicit_convolve|explicit_convolve|wgrad_alg|dgrad_engine|winograd",
    re.IGNORECASE,
)
# A GEMM/convolution/attention kernel whose operands are TF32 or narrower floats runs on tensor cores.
_MATMUL_LIKE = re.compile(r"(?<!fb)gemm|conv|bmm|matmul|attn|attention", re.IGNORECASE)
_POINTWISE = re.compile(r"elementwise|reduce_kernel|vectorized|unrolled|triton_(?:poi|red|per)_", re.IGNORECASE)
_TENSOR_OPERANDS = re.compile(r"tf32|bf16|bfloat16|f16|fp16|half|e4m3|e5m2|e2m1|fp8|fp4|mxf", re.IGNORECASE)


def math_unit_from_kernel_name(kernel_name: str) -> MathUnit | None:
    """Whether a GEMM/convolution/attention kernel runs on tensor (matrix) cores or SIMT units.

    ``"tensor"``: names carrying an MMA instruction or tensor-core tile marker (``tensorop``,
    ``hmma``/``wgmma``/``xmma``/``imma``, ``s1688``/``h16816``-style shapes, ``sm80_xmma``,
    ``sm90_xmma``, cuBLASLt's ``nvjet``, AMD ``mfma`` or Tensile ``_MI16x16x1``), TF32/FP8/FP4
    operand types, and flash/fused attention kernels. ``"simt"``: explicit ``simt`` or classic
    CUDA-core GEMM names (``sgemm``, ``dgemm``, ``gemv``, ``gemmk1``, ``gemmSN``), cuDNN's
    non-tensor-core convolutions. None for everything else (elementwise, reductions, Triton...).

    Examples
    --------
    >>> math_unit_from_kernel_name("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64")
    'tensor'
    >>> math_unit_from_kernel_name("ampere_sgemm_128x64_nn")
    'simt'
    """
    name = kernel_name or ""
    if re.search(r"simt", name, re.IGNORECASE):
        return "simt"
    if _MMA.search(name):
        return "tensor"
    if _SIMT_GEMM.search(name) or name.startswith("Cijk_"):  # Tensile GEMM without an MI tile
        return "simt"
    if not _POINTWISE.search(name) and _MATMUL_LIKE.search(name) and _TENSOR_OPERANDS.search(name):
        return "tensor"
    return None


# --------------------------------------------------------------------------------------------
# User-supplied figures: overrides and device files
# --------------------------------------------------------------------------------------------


def _positive(value: Any, what: str, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{where}: {what} must be a positive number, got {value!r}")
    return float(value)


def peaks_from_overrides(*, peak_flops: float | None = None, peak_bandwidth: float | None = None,
                         base: DevicePeaks | None = None) -> DevicePeaks:
    """Peaks from command-line figures: one FLOP/s for every dtype and unit, and/or a bandwidth.

    With `base` (the matched table entry), only the given figures change: `peak_flops` replaces the
    whole FLOP/s table (a single roof), `peak_bandwidth` the bandwidth.

    Examples
    --------
    >>> p = peaks_from_overrides(peak_flops=100e12, peak_bandwidth=2e12)
    >>> p.peak_flops("bf16", tensor_core=True), p.ridge_point("fp32", tensor_core=False)
    (100000000000000.0, 50.0)
    """
    where = "device overrides"
    if peak_flops is None and peak_bandwidth is None and base is None:
        raise ConfigError(f"{where}: give a peak FLOP/s, a peak bandwidth, or both")
    flops = None if peak_flops is None else _positive(peak_flops, "peak FLOP/s", where)
    bandwidth = None if peak_bandwidth is None else _positive(peak_bandwidth, "peak bandwidth", where)
    if base is None:
        if bandwidth is None or flops is None:
            raise ConfigError(f"{where}: without a recognised device both peak FLOP/s and bandwidth are needed")
        return DevicePeaks("user", "user-supplied peaks", bandwidth, MappingProxyType({}), "command line",
                           default_flops_per_s=flops)
    return DevicePeaks(
        key=f"{base.key}+overrides",
        display_name=f"{base.display_name} (overridden)",
        memory_bandwidth_bytes_per_s=bandwidth if bandwidth is not None else base.memory_bandwidth_bytes_per_s,
        flops_per_s=MappingProxyType({}) if flops is not None else base.flops_per_s,
        source=f"command line over {base.source}",
        memory_bytes=base.memory_bytes,
        num_sms=base.num_sms,
        default_flops_per_s=flops if flops is not None else base.default_flops_per_s,
        host_link=base.host_link,
        host_link_bytes_per_s=base.host_link_bytes_per_s,
    )


_FILE_KEYS = {"format", "version", "key", "name", "base", "memory_bandwidth_bytes_per_s", "peak_flops_per_s",
              "default_flops_per_s", "source", "notes"}


def peaks_from_dict(document: Any, *, where: str = "device file") -> DevicePeaks:
    """Peaks from a parsed device file (see `load_device_file` and docs/devices.md)."""
    if not isinstance(document, dict):
        raise ConfigError(f"{where}: expected a JSON object")
    unknown = set(document) - _FILE_KEYS
    if unknown:
        raise ConfigError(f"{where}: unknown keys {sorted(unknown)}")
    if document.get("format") != DEVICE_FILE_FORMAT:
        raise ConfigError(f"{where}: \"format\" must be \"{DEVICE_FILE_FORMAT}\"")
    if document.get("version") != DEVICE_FILE_VERSION:
        raise ConfigError(f"{where}: unsupported \"version\" {document.get('version')!r} "
                          f"(this traceanalyze reads {DEVICE_FILE_VERSION})")
    base = None
    if document.get("base") is not None:
        base = known_device(str(document["base"]))
        if base is None:
            raise ConfigError(f"{where}: unknown base device {document['base']!r} "
                              f"(one of {', '.join(sorted(_BY_KEY))})")
    table: dict[tuple[str, str], float] = dict(base.flops_per_s) if base else {}
    flops = document.get("peak_flops_per_s", {})
    if not isinstance(flops, dict):
        raise ConfigError(f"{where}: \"peak_flops_per_s\" must map dtype -> {{unit: FLOP/s}}")
    for dtype, units in flops.items():
        if dtype not in DTYPES or not isinstance(units, dict):
            raise ConfigError(f"{where}: \"peak_flops_per_s\" key {dtype!r} must be one of {DTYPES} "
                              "mapping to {\"tensor\": ..., \"simt\": ...}")
        for unit, value in units.items():
            if unit not in UNITS:
                raise ConfigError(f"{where}: unit {unit!r} for {dtype} must be \"tensor\" or \"simt\"")
            table[(dtype, unit)] = _positive(value, f"peak_flops_per_s.{dtype}.{unit}", where)
    if "memory_bandwidth_bytes_per_s" in document:
        bandwidth = _positive(document["memory_bandwidth_bytes_per_s"], "memory_bandwidth_bytes_per_s", where)
    elif base is not None:
        bandwidth = base.memory_bandwidth_bytes_per_s
    else:
        raise ConfigError(f"{where}: \"memory_bandwidth_bytes_per_s\" is required without a \"base\"")
    default = document.get("default_flops_per_s")
    default = None if default is None else _positive(default, "default_flops_per_s", where)
    if not table and default is None:
        raise ConfigError(f"{where}: give \"peak_flops_per_s\", \"default_flops_per_s\" or a \"base\"")
    return DevicePeaks(
        key=str(document.get("key") or (f"{base.key}+file" if base else "user")),
        display_name=str(document.get("name") or (base.display_name if base else "user device")),
        memory_bandwidth_bytes_per_s=bandwidth,
        flops_per_s=MappingProxyType(table),
        source=str(document.get("source") or where),
        memory_bytes=base.memory_bytes if base else None,
        num_sms=base.num_sms if base else None,
        default_flops_per_s=default,
        host_link=base.host_link if base else None,
        host_link_bytes_per_s=base.host_link_bytes_per_s if base else None,
        base_key=base.key if base else None,
        measured_on=_measured_on(document.get("notes")),
        file_device_name=str(document["name"]) if document.get("name") else None,
    )


def _measured_on(notes: Any) -> str | None:
    kind = notes.get("kind") if isinstance(notes, dict) else None
    return kind if isinstance(kind, str) and kind else None


def load_device_file(path: str | Path) -> DevicePeaks:
    """Peaks from a JSON device file, as written by hand or by ``traceanalyze calibrate``.

    Raises `ConfigError` naming the file and the problem. Format: docs/devices.md.
    """
    path = Path(path)
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise ConfigError(f"{path}: cannot read device file ({error.strerror or error})") from None
    except json.JSONDecodeError as error:
        raise ConfigError(f"{path}: not valid JSON (line {error.lineno}: {error.msg})") from None
    return peaks_from_dict(document, where=str(path))


def device_file_dict(peaks: DevicePeaks, *, base: str | None = None) -> dict[str, Any]:
    """The device-file JSON object for `peaks` (what ``traceanalyze calibrate`` writes)."""
    flops: dict[str, dict[str, float]] = {}
    for (dtype, unit), value in sorted(peaks.flops_per_s.items()):
        flops.setdefault(dtype, {})[unit] = value
    document: dict[str, Any] = {
        "format": DEVICE_FILE_FORMAT,
        "version": DEVICE_FILE_VERSION,
        "key": peaks.key,
        "name": peaks.display_name,
        "memory_bandwidth_bytes_per_s": peaks.memory_bandwidth_bytes_per_s,
        "peak_flops_per_s": flops,
        "source": peaks.source,
    }
    if base is not None:
        document["base"] = base
    if peaks.default_flops_per_s is not None:
        document["default_flops_per_s"] = peaks.default_flops_per_s
    return document
