"""`traceanalyze calibrate`: measure this machine's roofs and write a device file.

The essay's experiment ("Making Deep Learning Go Brrrr", *Reasoning about memory-bandwidth
costs*): `x = x * c` repeated r times in one kernel moves 2·N elements whatever r is, and does
N·r FLOP. While the kernel is bandwidth-bound its runtime stays flat as r doubles; past the ridge
point it is compute-bound and the runtime doubles with r. A large copy and a large matmul per
dtype add the bandwidth roof and the matmul (tensor-unit) roofs the report compares against.

Three modules: `fit` (pure: measurements, the fitted roofs, the device file), `bench` (torch,
imported lazily: `measure` and its micro-benchmarks), `render` (the table, the chart, writing
them).
"""

from traceanalyze.calibrate.bench import measure
from traceanalyze.calibrate.fit import (
    SWEEP_ELEMENT_BYTES,
    Calibration,
    Roofs,
    SweepPoint,
    device_file,
    fit_roofs,
    fit_sweep,
    peak_flops,
)
from traceanalyze.calibrate.render import peak_label, render_svg, render_table, write_outputs

__all__ = ["SWEEP_ELEMENT_BYTES", "Calibration", "Roofs", "SweepPoint", "device_file", "fit_roofs", "fit_sweep",
           "measure", "peak_flops", "peak_label", "render_svg", "render_table", "write_outputs"]
