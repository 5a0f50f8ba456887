"""Synthetic runs of one program at several sizes, with exact ground truth (tests/builder.py).

CPU-only (`cpu_run`): each of 3 ProfilerSteps of `fixed_us + size` µs holds `aten::mm` of
[size, 64] × [64, 64] (2·size·64·64 = 8192·size FLOPs, `size`/2 µs) and `aten::relu` of [size, 64]
(64·size FLOPs, 0.5 µs): the step's time is exactly fixed + FLOPs / (8256 FLOP/µs).

GPU (`gpu_run`): the same ops launch one kernel each (see there)."""

from __future__ import annotations

from pathlib import Path

from builder import TraceBuilder

FLOPS_PER_SIZE = 2 * 64 * 64 + 64  # the mm's and the relu's FLOPs per unit of size


def _ops(b: TraceBuilder, start: float, size: int, *, launch: bool, kernel_at: float = 0.0,
         shapes: bool = True) -> None:
    mm = b.cpu_op("aten::mm", start + 1, max(size, 1) / 2, input_dims=[[size, 64], [64, 64]] if shapes else None,
                  input_types=["float", "float"] if shapes else None, concrete_inputs=["", ""] if shapes else None)
    relu = b.cpu_op("aten::relu", start + 2 + size / 2, 0.5, input_dims=[[size, 64]] if shapes else None,
                    input_types=["float"] if shapes else None, concrete_inputs=[""] if shapes else None)
    if launch:
        b.launch_kernel(launch_us=start + 1.1, launch_dur_us=0.2, start_us=kernel_at, dur_us=size,
                        external_id=mm, name="ampere_sgemm_64x32_tn")
        b.launch_kernel(launch_us=start + 2.1 + size / 2, launch_dur_us=0.2, start_us=kernel_at + size, dur_us=1,
                        external_id=relu, name="void at::native::vectorized_elementwise_kernel<4>(int)")


def cpu_run(tmp_path: Path, size: int, *, fixed_us: float = 100.0, steps: int = 3, name: str | None = None,
            extra_op: str | None = None, profiler_steps: bool = True, shapes: bool = True) -> Path:
    """3 steps of `fixed_us + size` µs each, 10 µs apart; `extra_op` adds a top-level op (another
    program); without `profiler_steps` no ProfilerStep spans (the ops alone), without `shapes` no
    recorded shapes."""
    b = TraceBuilder()
    period = fixed_us + size
    for n in range(steps):
        start = n * (period + 10)
        if profiler_steps:
            b.step(n, start, period)
        else:
            b.annotation("iteration", start, period)  # the window still spans the whole period
        _ops(b, start, size, launch=False, shapes=shapes)
        if extra_op:
            b.cpu_op(extra_op, start + period - 2, 1)
    return b.write(tmp_path / (name or f"cpu_{size}.json"))


def gpu_run(tmp_path: Path, size: int, *, fixed_us: float = 50.0, steps: int = 3) -> Path:
    """Steps of G = `fixed_us` + `size` + 1 µs back to back; each step's GPU work starts with a 1 ns
    marker kernel at +2 µs, then the mm kernel (`size` µs) at +2 + fixed/2 and the relu kernel
    (1 µs). Step windows tile from marker to marker: the GPU window per step is G exactly."""
    b = TraceBuilder()
    period = fixed_us + size + 1
    for n in range(steps):
        start = n * period
        b.step(n, start, period - 0.5)
        b.launch_kernel(launch_us=start + 0.2, launch_dur_us=0.2, start_us=start + 2, dur_us=0.001,
                        name="marker_kernel")
        _ops(b, start, size, launch=True, kernel_at=start + 2 + fixed_us / 2)
    return b.write(tmp_path / f"gpu_{size}.json")
