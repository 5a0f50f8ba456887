"""`traceanalyze calibrate`: measure this machine's roofs and write a device file.

The essay's experiment ("Making Deep Learning Go Brrrr", *Reasoning about memory-bandwidth
costs*): `x = x * c` repeated r times in one kernel moves 2·N elements whatever r is, and does
N·r FLOP. While the kernel is bandwidth-bound its runtime stays flat as r doubles; past the ridge
point it is compute-bound and the runtime doubles with r. A large copy and a large matmul per
dtype add the bandwidth roof and the matmul (tensor-unit) roofs the report compares against.

`measure` needs torch; everything else here is pure and works on a `Calibration`.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from traceanalyze.analysis.devices import DEVICE_FILE_FORMAT, DEVICE_FILE_VERSION
from traceanalyze.report.svg import Panel, line_chart
from traceanalyze.report.units import format_si
from traceanalyze.errors import ConfigError

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


def write_outputs(calibration: Calibration, device_path: Path, chart_path: Path) -> None:
    """Write the device file (JSON) and the chart (SVG); `ConfigError` when a path is unwritable."""
    for path, text in (
        (device_path, json.dumps(device_file(calibration), indent=2) + "\n"),
        (chart_path, render_svg(calibration)),
    ):
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        except OSError as error:
            raise ConfigError(f"{path}: cannot write: {error.strerror or error}") from None


def peak_label(key: str, device_kind: str) -> str:
    """"bf16:tensor" → "bf16 tensor cores"; on a CPU "bf16:simt" → "bf16 (CPU cores)"."""
    dtype, unit = key.split(":")
    if device_kind == "cpu":
        return f"{dtype} (CPU cores)"
    return f"{dtype} {'tensor cores' if unit == 'tensor' else 'SIMT cores'}"


def render_table(calibration: Calibration) -> str:
    """The terminal summary: the sweep table, copies, matmuls and the roofs (docs/capture.md)."""
    roofs = fit_roofs(calibration)
    kind = calibration.device_kind
    lines = [f"{calibration.device_name} ({kind}), torch {calibration.torch_version}", ""]
    if calibration.sweep:
        size = calibration.sweep[0].size
        lines.append(f"x * c repeated r times on {size:,} fp32 elements ({calibration.sweep_method})")
        header = f"{'r':>5}  {'FLOP/byte':>9}  {'runtime':>11}  {'achieved FLOP/s':>16}  {'bandwidth':>12}"
        lines += [header, "-" * len(header)]
        for point in calibration.sweep:
            lines.append(
                f"{point.repeat:>5}  {point.flop_per_byte:>9.3g}  {format_si(point.runtime_s, 's', fractions=True):>11}  "
                f"{format_si(point.flops_per_s, 'FLOP/s'):>16}  {format_si(point.bytes_per_s, 'B/s'):>12}"
            )
        lines.append("")
    if calibration.copy_bytes_per_s:
        copies = ", ".join(f"{dtype} {format_si(rate, 'B/s')}" for dtype, rate in calibration.copy_bytes_per_s.items())
        lines.append(f"copy: {copies}")
    if calibration.matmul_flops_per_s:
        matmuls = ", ".join(f"{peak_label(key, kind)} {format_si(rate, 'FLOP/s')}" for key, rate in calibration.matmul_flops_per_s.items())
        lines.append(f"matmul n={calibration.matmul_size}: {matmuls}")
    lines.append("")
    lines.append(f"bandwidth roof: {format_si(roofs.bandwidth_bytes_per_s, 'B/s')} (the best of the copies and the sweep's "
                 f"flat part, {format_si(roofs.sweep_bandwidth_bytes_per_s, 'B/s')})")
    if calibration.sweep:
        if roofs.flat_until_repeat is None:
            shape = "runtime grows from the first r: compute-bound at every r measured"
        elif roofs.flat_until_repeat == max(p.repeat for p in calibration.sweep):
            shape = "runtime flat at every r measured: bandwidth-bound throughout (the compute roof is a lower bound)"
        else:
            shape = f"runtime flat (bandwidth-bound) for r <= {roofs.flat_until_repeat}, then growing with r (compute-bound)"
        lines.append(f"pointwise compute roof: {format_si(roofs.compute_flops_per_s, 'FLOP/s')}; {shape}")
        lines.append(
            f"ridge point: compute roof / bandwidth roof = {roofs.ridge_flop_per_byte:.3g} FLOP/byte "
            f"(r ≈ {roofs.ridge_repeat:.3g}): below it a pointwise kernel is bandwidth-bound, above it compute-bound"
        )
    for key, rate in peak_flops(calibration).items():
        lines.append(f"peak {peak_label(key, kind)}: {format_si(rate, 'FLOP/s')} "
                     f"(ridge {rate / roofs.bandwidth_bytes_per_s:.3g} FLOP/byte)")
    lines.extend(f"note: {note}" for note in calibration.notes)
    return "\n".join(lines) + "\n"


def render_svg(calibration: Calibration) -> str:
    """The essay's figure: runtime, achieved FLOP/s and achieved bandwidth against r (log-log),
    with the measured roofs dashed and the ridge point marked."""
    roofs = fit_roofs(calibration)
    sweep = calibration.sweep
    ridge = ((roofs.ridge_repeat, f"ridge r≈{roofs.ridge_repeat:.3g}"),) if sweep and roofs.ridge_repeat > 0 else ()
    element_bytes = sweep[0].element_bytes if sweep else SWEEP_ELEMENT_BYTES
    panels = [
        Panel("Runtime", "s", tuple((p.repeat, p.runtime_s) for p in sweep), vlines=ridge),
        Panel(
            "Achieved FLOP/s",
            "FLOP/s",
            tuple((p.repeat, p.flops_per_s) for p in sweep),
            hlines=((roofs.compute_flops_per_s, f"compute roof {format_si(roofs.compute_flops_per_s, 'FLOP/s')}"),),
            vlines=ridge,
        ),
        Panel(
            "Achieved bandwidth",
            "B/s",
            tuple((p.repeat, p.bytes_per_s) for p in sweep),
            hlines=((roofs.bandwidth_bytes_per_s, f"bandwidth roof {format_si(roofs.bandwidth_bytes_per_s, 'B/s')}"),),
            vlines=ridge,
        ),
    ]
    return line_chart(
        panels,
        title=f"x = x * c repeated r times: {calibration.device_name}",
        x_label=f"r (compute intensity = r/{2 * element_bytes} FLOP/byte)",
        footer=f"traceanalyze calibrate, {calibration.date}, torch {calibration.torch_version}: {calibration.sweep_method}",
    )


def measure(
    *,
    device: str | None = None,
    size: int | None = None,
    quick: bool = False,
    progress: Callable[[str], None] | None = None,
) -> Calibration:
    """Run the sweep, the copies and the matmuls on `device` ("cuda" or "cpu"; default: the GPU
    when torch sees one). `size` is the swept tensor's element count; `quick` shrinks everything
    to seconds (for CI).

    Examples
    --------
    >>> calibration = measure(device="cpu", quick=True)  # doctest: +SKIP
    >>> fit_roofs(calibration).bandwidth_bytes_per_s > 0  # doctest: +SKIP
    True
    """
    from traceanalyze.capture import bench
    from traceanalyze.capture.environment import cpu_name, gpu_backend, gpu_name, import_torch

    torch = import_torch()
    say = progress or (lambda line: None)
    backend = gpu_backend(torch)
    if device is None:
        device = "cuda" if backend else "cpu"
    if device not in ("cuda", "cpu"):
        raise ConfigError(f"--device must be 'cuda' or 'cpu', not {device!r}")
    if device == "cuda" and backend is None:
        raise ConfigError("--device cuda: torch sees no GPU here")
    if size is not None and size < 1024:
        raise ConfigError(f"--size must be at least 1024 elements (got {size})")

    plan = bench.plan_for(torch, device, size=size, quick=quick)
    notes: list[str] = []
    if plan.threads == 1 and torch.get_num_threads() > 1:
        notes.append("--quick on a CPU measures one thread")
    points: list[SweepPoint] = []
    copies: dict[str, float] = {}
    matmuls: dict[str, float] = {}
    with bench.cpu_threads(torch, plan):
        try:
            results, method = bench.sweep(torch, plan, progress=say)
            points = [SweepPoint(repeat, seconds, plan.sweep_size) for repeat, seconds in results]
            if device == "cpu" and "blocks" in method:
                notes.append(
                    "CPU: the sweep runs eager ops over cache-sized blocks, so its compute roof is the in-cache "
                    "pointwise rate; its bandwidth is DRAM only when --size is well above the last-level cache"
                )
        except Exception as error:  # e.g. no Triton for torch.compile: keep the copy and matmul roofs
            first_line = str(error).splitlines()[0] if str(error) else ""
            method = f"not measured ({type(error).__name__}: {first_line})"
            notes.append(f"the x * c sweep failed: {method}")
        for dtype in bench.dtypes(torch, device):
            name = bench.dtype_name(dtype)
            copies[name] = bench.copy_rate(torch, plan, dtype)
            say(f"copy {name}: {copies[name] / 1e9:.1f} GB/s")
            matmuls.update(bench.matmul_rates(torch, plan, dtype, progress=say))
    name = (gpu_name(torch, None) or "GPU") if device == "cuda" else cpu_name()
    return Calibration(
        device_kind=backend if device == "cuda" and backend else "cpu",
        device_name=name,
        base_key=_datasheet_key(torch, name) if device == "cuda" else None,
        torch_version=str(torch.__version__),
        sweep_method=method,
        sweep=tuple(points),
        copy_bytes_per_s=copies,
        matmul_size=plan.matmul_size,
        matmul_flops_per_s=matmuls,
        date=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        notes=tuple(notes),
    )


def _datasheet_key(torch: Any, name: str) -> str | None:
    """The built-in table's key for this GPU (`analysis.devices.device_peaks`), or None."""
    from traceanalyze.analysis.devices import device_peaks

    try:
        properties = torch.cuda.get_device_properties(torch.cuda.current_device())
        entry = device_peaks(name, properties.multi_processor_count, properties.total_memory)
    except Exception:
        return None
    return entry.key if entry is not None else None
