"""Synthetic traces with exactly known per-step numbers, for the gate and diff tests.

`stepped(idle_us)` writes one ProfilerStep per entry. Step i (period P µs, starting at s = i·P):

* CPU: `ProfilerStep#i+1` spans [s − 50, s − 50 + cpu_us) (cpu_us defaults to P): the step time;
* GPU: a bf16 4096³ GEMM (compute-bound) at [s, s + compute_us), and `other_kernel` ending at
  s + P, so the step's GPU window is exactly P and its idle time exactly `idle_us[i]`.

So step i has idle fraction idle_us[i] / P and compute share compute_us / P, both exact.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from builder import TraceBuilder

BF16 = "c10::BFloat16"
GEMM = "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_tn"


def stepped(idle_us: Sequence[float], *, period_us: float = 1000, compute_us: float = 300, cpu_us: float | None = None,
            other_name: str = "other_kernel", extra: Sequence[tuple[str, float]] = (),
            device_name: str = "NVIDIA A100-SXM4-80GB") -> TraceBuilder:
    """`extra`: (name, duration) kernels run back to back right after the GEMM of every step (they
    count as busy time taken from the idle gap)."""
    b = TraceBuilder(device_name=device_name)
    for i, idle in enumerate(idle_us):
        s = i * period_us
        b.step(i + 1, s - 50, cpu_us if cpu_us is not None else period_us)
        op = b.cpu_op("aten::mm", s - 40, 10, input_dims=[[4096, 4096], [4096, 4096]], input_types=[BF16, BF16],
                      input_strides=[[4096, 1], [4096, 1]], concrete_inputs=["", ""])
        b.launch_kernel(launch_us=s - 38, launch_dur_us=4, start_us=s, dur_us=compute_us, external_id=op, name=GEMM)
        t = s + compute_us
        for j, (name, dur) in enumerate(extra):
            b.launch_kernel(launch_us=s - 25 + j, launch_dur_us=0.5, start_us=t, dur_us=dur, name=name)
            t += dur
        other = period_us - (t - s) - idle
        assert other > 0, "the step does not fit in its period"
        b.launch_kernel(launch_us=s - 30, launch_dur_us=4, start_us=s + period_us - other, dur_us=other,
                        name=other_name)
    return b


def write(builder: TraceBuilder, folder: Path, name: str = "trace.json") -> Path:
    return builder.write(folder / name)
