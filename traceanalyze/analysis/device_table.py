"""The built-in device table: peak FLOP/s and memory bandwidth of GPUs from vendor datasheets, one
`DevicePeaks` per entry, with its host link (PCIe, NVLink-C2C) and peer link (NVLink). To add a
device: an `_entry(...)` in `DEVICE_TABLE` (its links in `_HOST_LINKS` / `_PEER_LINKS`), the name
rule in `analysis/devices.py` (`device_peaks`), and its row and source in docs/devices.md.

Every figure is the **dense** peak: NVIDIA datasheets print tensor-core figures "with sparsity"
(2:4 structured sparsity doubles them) and say the dense value is half; we store the half. AMD
data sheets print both; we store the dense one. docs/devices.md lists every figure with its source.

Peaks are per visible device: an MI250/MI250X package has two dies (GCDs) that ROCm shows as two
devices, so its entries are half the package figures.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from types import MappingProxyType

from traceanalyze.analysis.peaks import DTYPES, UNITS, DevicePeaks

T = 1e12  # one tera
G = 1e9


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
