"""The pure half of `traceanalyze calibrate`: measurements (`SweepPoint`, `Calibration`), the essay's
runtime model fitted to the sweep (`fit_sweep`, `fit_roofs`), and the device file they make
(`device_file`). No torch, no I/O."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Any

from traceanalyze.analysis.devices import DEVICE_FILE_FORMAT, DEVICE_FILE_VERSION

SWEEP_ELEMENT_BYTES = 4  # the sweep runs in fp32


@dataclass(frozen=True)
class SweepPoint:
    """One r of the sweep: runtime of one run over `size` elements."""

    repeat: int
    runtime_s: float
    size: int
    element_bytes: int = SWEEP_ELEMENT_BYTES

    @property
    def flop(self) -> float:
        return float(self.size) * self.repeat

    @property
    def bytes(self) -> float:
        return 2.0 * self.size * self.element_bytes  # read x once, write it once

    @property
    def flop_per_byte(self) -> float:
        return self.flop / self.bytes

    @property
    def flops_per_s(self) -> float:
        return self.flop / self.runtime_s

    @property
    def bytes_per_s(self) -> float:
        return self.bytes / self.runtime_s


@dataclass(frozen=True)
class Calibration:
    """What `measure` found. Rates are per second; `matmul_flops_per_s` is keyed "dtype:unit"."""

    device_kind: str  # "cuda", "rocm" or "cpu"
    device_name: str
    torch_version: str
    sweep_method: str
    sweep: tuple[SweepPoint, ...]
    copy_bytes_per_s: dict[str, float]
    matmul_size: int
    matmul_flops_per_s: dict[str, float]
    date: str
    notes: tuple[str, ...] = field(default_factory=tuple)
    base_key: str | None = None  # the datasheet entry this device matches (analysis.devices), if any


@dataclass(frozen=True)
class Roofs:
    """The roofs read off a `Calibration`, all from one fit so that what is printed agrees:

    * `bandwidth_bytes_per_s`, the bandwidth roof: the best of the copies and the sweep's own
      (`sweep_bandwidth_bytes_per_s`: bytes moved / the runtime of its flat part);
    * `compute_flops_per_s`, the pointwise compute roof: N / the runtime added per extra r on the
      sweep's rising part, or the best achieved FLOP/s if that is higher (when the runtime never
      rises: the best achieved FLOP/s, a lower bound);
    * `ridge_flop_per_byte` = compute roof / bandwidth roof, at r = `ridge_repeat` (× 2 × 4 bytes);
    * `flat_until_repeat`: the largest r on the fitted flat part (None: rising from the first r).
    """

    bandwidth_bytes_per_s: float
    compute_flops_per_s: float
    ridge_flop_per_byte: float
    ridge_repeat: float
    sweep_bandwidth_bytes_per_s: float
    flat_until_repeat: int | None


def fit_sweep(sweep: tuple[SweepPoint, ...]) -> tuple[float | None, float | None]:
    """The essay's runtime model `runtime(r) = max(flat_s, r × per_repeat_s)` fitted to the sweep:
    (flat_s, per_repeat_s), None for a part the sweep does not have.

    Robust to a noisy point: every split of the points (sorted by r) into a flat head and a rising
    tail is tried, with `flat_s` the median runtime of the head and `per_repeat_s` the median of
    runtime / r over the tail, and the split with the least sum of |log model − log runtime| wins.

    >>> pts = tuple(SweepPoint(r, t, 10) for r, t in ((1, 4.0), (2, 4.0), (4, 9.0), (8, 4.0), (16, 8.0), (32, 16.0)))
    >>> fit_sweep(pts)  # r = 4 is an outlier: flat at 4 s until r = 8, then 0.5 s per r
    (4.0, 0.5)
    """
    points = sorted(sweep, key=lambda p: p.repeat)
    best: tuple[float, float | None, float | None] | None = None
    for split in range(len(points) + 1):
        head, tail = points[:split], points[split:]
        flat = statistics.median(p.runtime_s for p in head) if head else None
        slope = statistics.median(p.runtime_s / p.repeat for p in tail) if tail else None
        cost = math.fsum(
            abs(math.log(max(flat or 0.0, (slope or 0.0) * p.repeat) / p.runtime_s)) for p in points
        )
        if best is None or cost < best[0] - 1e-12:
            best = (cost, flat, slope)
    return (best[1], best[2]) if best is not None else (None, None)


def fit_roofs(calibration: Calibration) -> Roofs:
    """Roofs from the measurements (see `Roofs`, `fit_sweep`).

    >>> points = tuple(SweepPoint(r, max(1.0, r / 16), size=1000) for r in (1, 2, 4, 8, 16, 32, 64))
    >>> cal = Calibration("cpu", "x", "2", "m", points, {"fp32": 0.0}, 8, {}, "2026-01-01")
    >>> roofs = fit_roofs(cal)
    >>> roofs.flat_until_repeat, roofs.ridge_repeat, roofs.ridge_flop_per_byte
    (16, 16.0, 2.0)
    """
    sweep = calibration.sweep
    flat_s, per_repeat_s = fit_sweep(sweep)
    size = sweep[0].size if sweep else 0
    element_bytes = sweep[0].element_bytes if sweep else SWEEP_ELEMENT_BYTES
    if flat_s is not None:
        sweep_bandwidth = 2.0 * size * element_bytes / flat_s
    else:
        sweep_bandwidth = max((p.bytes_per_s for p in sweep), default=0.0)
    # a roof is never below what was achieved (a point near the bend can beat the tail's median)
    achieved = max((p.flops_per_s for p in sweep), default=0.0)
    compute = max(size / per_repeat_s, achieved) if per_repeat_s is not None else achieved
    bandwidth = max([sweep_bandwidth, *calibration.copy_bytes_per_s.values()])
    ridge = compute / bandwidth if bandwidth > 0 else float("nan")
    if flat_s is None:
        flat_until = None
    else:
        bend = flat_s / per_repeat_s if per_repeat_s else float("inf")
        flat_until = max((p.repeat for p in sweep if p.repeat <= bend * (1 + 1e-9)), default=None)
    return Roofs(
        bandwidth_bytes_per_s=bandwidth,
        compute_flops_per_s=compute,
        ridge_flop_per_byte=ridge,
        ridge_repeat=ridge * 2 * element_bytes,
        sweep_bandwidth_bytes_per_s=sweep_bandwidth,
        flat_until_repeat=flat_until,
    )


def peak_flops(calibration: Calibration) -> dict[str, float]:
    """`peak_flops_per_s` of the device file: the matmul rates; "fp32:simt" falls back to the
    sweep's pointwise roof when no fp32 matmul was measured."""
    peaks = dict(calibration.matmul_flops_per_s)
    if "fp32:simt" not in peaks and calibration.sweep:
        peaks["fp32:simt"] = fit_roofs(calibration).compute_flops_per_s
    return peaks


def device_file(calibration: Calibration) -> dict[str, Any]:
    """The device file the report reads instead of its datasheet table (`report --device-file`).

    Its top level is the format `traceanalyze.analysis.devices.load_device_file` reads
    (docs/devices.md): `peak_flops_per_s` nested as {dtype: {unit: FLOP/s}}. That loader rejects
    unknown top-level keys, so how and when the figures were measured (`measured`, `method`,
    `date`, the sweep, copies and matmuls) lives under `notes`, which it ignores.
    """
    roofs = fit_roofs(calibration)
    peaks = peak_flops(calibration)
    bandwidth = roofs.bandwidth_bytes_per_s
    nested: dict[str, dict[str, float]] = {}
    for key, value in peaks.items():
        dtype, unit = key.split(":")
        nested.setdefault(dtype, {})[unit] = value
    method = (
        "bandwidth: best of dst.copy_(src) per dtype and the pointwise sweep; peaks: n×n matmul per dtype "
        "(2n³ FLOP: an FMA counts 2, as on datasheets), fp32 with TF32 off; median of timed samples after "
        f"warm-up. Sweep: {calibration.sweep_method}"
    )
    document: dict[str, Any] = {
        "format": DEVICE_FILE_FORMAT,
        "version": DEVICE_FILE_VERSION,
        "key": f"{_slug(calibration.device_name)}-measured",
        "name": calibration.device_name,
        "memory_bandwidth_bytes_per_s": bandwidth,
        "peak_flops_per_s": nested,
        "source": f"measured by traceanalyze calibrate, {calibration.date}",
    }
    if calibration.base_key is not None:
        document["base"] = calibration.base_key  # the datasheet entry fills dtypes not measured (fp64, fp8)
    document["notes"] = {
        "measured": True,
        "method": method,
        "date": calibration.date,
        "kind": calibration.device_kind,
        "torch_version": calibration.torch_version,
        "peak_flops_per_s": peaks,
        "ridge_flop_per_byte": {key: value / bandwidth for key, value in peaks.items() if bandwidth > 0},
        "pointwise": {
            "dtype": "fp32",
            "size_elements": calibration.sweep[0].size if calibration.sweep else None,
            "method": calibration.sweep_method,
            "sweep_bandwidth_bytes_per_s": roofs.sweep_bandwidth_bytes_per_s,
            "bandwidth_roof_bytes_per_s": roofs.bandwidth_bytes_per_s,
            "compute_roof_flops_per_s": roofs.compute_flops_per_s,
            "ridge_flop_per_byte": roofs.ridge_flop_per_byte,
            "ridge_repeat": roofs.ridge_repeat,
            "flat_until_repeat": roofs.flat_until_repeat,
            "points": [
                {
                    "repeat": point.repeat,
                    "runtime_s": point.runtime_s,
                    "flop_per_byte": point.flop_per_byte,
                    "flops_per_s": point.flops_per_s,
                    "bytes_per_s": point.bytes_per_s,
                }
                for point in calibration.sweep
            ],
        },
        "copy_bytes_per_s": dict(calibration.copy_bytes_per_s),
        "matmul": {"size": calibration.matmul_size, "flops_per_s": dict(calibration.matmul_flops_per_s)},
        "remarks": list(calibration.notes),
    }
    return document


def _slug(name: str) -> str:
    return "-".join("".join(c if c.isalnum() else " " for c in name.lower()).split()) or "device"
