"""How a trace's device maps to an entry of the peak table (`device_peaks`), whether a kernel runs on
tensor cores or SIMT units (`math_unit_from_kernel_name`), and peaks the user supplies (command-line
overrides, device files). The figures themselves: `DevicePeaks` (analysis/peaks.py) and the
built-in table (analysis/device_table.py); docs/devices.md lists every figure with its source.

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
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from traceanalyze.analysis.device_table import DEVICE_TABLE, known_device
from traceanalyze.analysis.peaks import DTYPES, UNITS, DevicePeaks
from traceanalyze.errors import ConfigError

# what callers read from here (the API, the roofline, tests, docs/devices.md), the figures' type
# and the built-in table included
__all__ = ["DEVICE_FILE_FORMAT", "DEVICE_FILE_VERSION", "DEVICE_TABLE", "DTYPES", "DevicePeaks", "MathUnit",
           "device_file_dict", "device_peaks", "known_device", "load_device_file", "math_unit_from_kernel_name",
           "normalized_name", "peaks_from_dict", "peaks_from_overrides"]

MathUnit = Literal["tensor", "simt"]

DEVICE_FILE_FORMAT = "traceanalyze-device"
DEVICE_FILE_VERSION = 1


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
    return None if key is None else known_device(key)


# --------------------------------------------------------------------------------------------
# Kernel names: tensor cores or SIMT?
# --------------------------------------------------------------------------------------------

def _either_case(pattern: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """A pattern written in lower case → (ignoring case, for any name; as written, for a name in
    lower case). An ASCII name is lowered once and searched with the second: the same answer
    (Unicode's extra case pairs, the Kelvin sign for k say, need a non-ASCII name) 3-13x faster
    than ignoring case on kernel names of some 350 characters."""
    return re.compile(pattern, re.IGNORECASE), re.compile(pattern)


# Each pattern below is written in lower case (`_either_case`).
# cuBLAS's xmma kernels name their instruction: `_ffma_` (FP32), `_hfma2_` (FP16) and `_dfma_`
# (FP64) fused multiply-adds run on CUDA cores, e.g. sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_…_ffma_…
# (FP32 matmuls with TF32 off, recorded on an H100)
_SIMT = _either_case(r"simt|(?:^|_)(?:ffma|hfma2?|dfma)(?:_|$)")
# MMA instructions and tensor-core tile/shape markers in library kernel names.
_MMA = _either_case(
    r"tensorop|hmma|wgmma|gmma|xmma|imma|wmma|mma_sync|nvjet|mfma|_mi\d+x\d+x\d+|"
    r"[a-z](?:884|1688|16816|161616|8816|16832)|flash_fwd|flash_bwd|fmha"
)
# CUDA-core GEMM/GEMV and cuDNN's non-tensor-core convolution kernels.
_SIMT_GEMM = _either_case(
    r"simt|sgemm|dgemm|hgemm|cgemm|zgemm|gcgemm|gemv|gemmk1|gemmsn|dot_kernel|"
    r"implicit_convolve|explicit_convolve|wgrad_alg|dgrad_engine|winograd"
)
# A GEMM/convolution/attention kernel whose operands are TF32 or narrower floats runs on tensor cores.
_MATMUL_LIKE = _either_case(r"(?<!fb)gemm|conv|bmm|matmul|attn|attention")
_POINTWISE = _either_case(r"elementwise|reduce_kernel|vectorized|unrolled|triton_(?:poi|red|per)_")
_TENSOR_OPERANDS = _either_case(r"tf32|bf16|bfloat16|f16|fp16|half|e4m3|e5m2|e2m1|fp8|fp4|mxf")


def math_unit_from_kernel_name(kernel_name: str) -> MathUnit | None:
    """Whether a GEMM/convolution/attention kernel runs on tensor (matrix) cores or SIMT units.

    ``"tensor"``: names carrying an MMA instruction or tensor-core tile marker (``tensorop``,
    ``hmma``/``wgmma``/``xmma``/``imma``, ``s1688``/``h16816``-style shapes, ``sm80_xmma``,
    ``sm90_xmma``, cuBLASLt's ``nvjet``, AMD ``mfma`` or Tensile ``_MI16x16x1``), TF32/FP8/FP4
    operand types, and flash/fused attention kernels. ``"simt"``: explicit ``simt`` or classic
    CUDA-core GEMM names (``sgemm``, ``dgemm``, ``gemv``, ``gemmk1``, ``gemmSN``), cuDNN's
    non-tensor-core convolutions. None for everything else (elementwise, reductions, Triton...).
    Letter case is ignored.

    Examples
    --------
    >>> math_unit_from_kernel_name("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64")
    'tensor'
    >>> math_unit_from_kernel_name("ampere_sgemm_128x64_nn")
    'simt'
    """
    name = kernel_name or ""
    lowered = name.isascii()
    subject = name.lower() if lowered else name

    def found(pattern: tuple[re.Pattern[str], re.Pattern[str]]) -> bool:
        return pattern[lowered].search(subject) is not None

    if found(_SIMT):
        return "simt"
    if found(_MMA):
        return "tensor"
    if found(_SIMT_GEMM) or name.startswith("Cijk_"):  # Tensile GEMM without an MI tile
        return "simt"
    if not found(_POINTWISE) and found(_MATMUL_LIKE) and found(_TENSOR_OPERANDS):
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
                              f"(one of {', '.join(sorted(entry.key for entry in DEVICE_TABLE))})")
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
    from traceanalyze import config_files

    path = Path(path)
    text = config_files.read_text(path, "device file")  # bounded in size and nesting, one line otherwise
    config_files.check_nesting(text, path, "device file", comments=False)
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigError(f"{path}: not valid JSON (line {error.lineno}: {error.msg})") from None
    except RecursionError:
        raise config_files.too_deep(path, "device file") from None
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
