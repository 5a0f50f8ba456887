"""A trace of three ProfilerSteps with known times, for the `--skip-steps` tests
(tests/analysis/test_skip_steps.py, tests/cli/test_skip_steps_cli.py).

The trace (µs from the builder's base; one stream): ProfilerStep#0 [0, 100), #1 [100, 200),
#2 [200, 300); annotation `train_loop` [0, 300] around them and `autotune` [5, 60] in step 0.
Kernels (launch → run): 2 → [10, 20], 60 → [70, 80], 95 → [105, 125] (launched in step 0, runs in
step 1's time), 110 → [130, 150], 160 → [170, 180], 210 → [220, 240], 250 → [260, 270].

Without the option (activity window [10, 270] = 260): busy 10+10+20+20+10+20+10 = 100, idle 160 in
gaps 50 (20→70, under `autotune`: warm-up), 25, 5, 20, 40, 20.
`--skip-steps 1` (cut at 100 µs): the kernel launched at 95 goes with step 0; window [130, 270] =
140, busy 60, idle 80 = gaps 20 + 40 + 20. `--skip-steps 2` (cut at 200): window [220, 270] = 50,
busy 30, idle 20."""

from __future__ import annotations

from builder import DEFAULT_BASE_US, TraceBuilder

BASE_NS = round(DEFAULT_BASE_US * 1000)
KERNELS = ((2, 10, 10), (60, 70, 10), (95, 105, 20), (110, 130, 20), (160, 170, 10), (210, 220, 20), (250, 260, 10))


def us(value: float) -> int:
    return BASE_NS + round(value * 1000)


def stepped_trace(tmp_path, *, steps: bool = True, rank: int | None = None):
    """The trace above, written to `tmp_path`/t.json (`rank<rank>.json` for one rank of a job of 2)."""
    b = TraceBuilder() if rank is None else TraceBuilder(rank=rank, world_size=2)
    if steps:
        for n in range(3):
            b.step(n, 100 * n, 100)
    b.annotation("train_loop", 0, 300)
    b.annotation("autotune", 5, 55)
    for launch, start, dur in KERNELS:
        b.launch_kernel(launch_us=launch, launch_dur_us=4, start_us=start, dur_us=dur)
    return b.write(tmp_path / ("t.json" if rank is None else f"rank{rank}.json"))
