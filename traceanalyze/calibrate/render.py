"""What `traceanalyze calibrate` shows and writes: the terminal table, the SVG chart (drawn with
the package's one SVG module, `renderers.svg`), and the device file and chart on disk (whole or not at
all, `output.write_output`)."""

from __future__ import annotations

import json
from pathlib import Path

from traceanalyze.calibrate.fit import SWEEP_ELEMENT_BYTES, Calibration, device_file, fit_roofs, peak_flops
from traceanalyze.errors import ConfigError
from traceanalyze.output import write_output
from traceanalyze.renderers.svg import Panel, line_chart
from traceanalyze.units import format_si


def write_outputs(calibration: Calibration, device_path: Path, chart_path: Path) -> None:
    """Write the device file (JSON) and the chart (SVG); `ConfigError` when a path is unwritable."""
    for path, text in (
        (device_path, json.dumps(device_file(calibration), indent=2) + "\n"),
        (chart_path, render_svg(calibration)),
    ):
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise ConfigError(f"{path}: cannot write: {error.strerror or error}") from None
        write_output(path, text)


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
                f"{point.repeat:>5}  {point.flop_per_byte:>9.3g}  "
                f"{format_si(point.runtime_s, 's', fractions=True):>11}  "
                f"{format_si(point.flops_per_s, 'FLOP/s'):>16}  {format_si(point.bytes_per_s, 'B/s'):>12}"
            )
        lines.append("")
    if calibration.copy_bytes_per_s:
        copies = ", ".join(f"{dtype} {format_si(rate, 'B/s')}" for dtype, rate in calibration.copy_bytes_per_s.items())
        lines.append(f"copy: {copies}")
    if calibration.matmul_flops_per_s:
        matmuls = ", ".join(f"{peak_label(key, kind)} {format_si(rate, 'FLOP/s')}"
                            for key, rate in calibration.matmul_flops_per_s.items())
        lines.append(f"matmul n={calibration.matmul_size}: {matmuls}")
    lines.append("")
    lines.append(f"bandwidth roof: {format_si(roofs.bandwidth_bytes_per_s, 'B/s')} (the best of the copies and the "
                 f"sweep's flat part, {format_si(roofs.sweep_bandwidth_bytes_per_s, 'B/s')})")
    if calibration.sweep:
        if roofs.flat_until_repeat is None:
            shape = "runtime grows from the first r: compute-bound at every r measured"
        elif roofs.flat_until_repeat == max(p.repeat for p in calibration.sweep):
            shape = "runtime flat at every r measured: bandwidth-bound throughout (the compute roof is a lower bound)"
        else:
            shape = (f"runtime flat (bandwidth-bound) for r <= {roofs.flat_until_repeat}, "
                     "then growing with r (compute-bound)")
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
        footer=f"traceanalyze calibrate, {calibration.date}, torch {calibration.torch_version}: "
        f"{calibration.sweep_method}",
    )
