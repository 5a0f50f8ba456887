"""A synthetic multi-rank job with exact, known answers (tests of the job-level analyses).

Four ranks of one 4-GPU A100 SXM4 node, three steps of 20 ms each (`ProfilerStep#1..3`, step s
from T_s = (s − 1) × 20 ms on the true clock). In every step each rank runs one compute kernel
(1 ms) launched 10 µs into the step, then an all-reduce of `NELEMS` floats (100 MB) that starts
10 µs after the compute kernel ends. The transfer takes `TRANSFER_US` once the last rank arrived.

- Straggler: in step 2, rank `STRAGGLER` launches its compute kernel `DELAY_US` (5 ms) late (the
  host was late), so the other three wait 5 ms in the all-reduce.
- Clocks: rank r's clock reads true time + `OFFSETS_US[r]` (rank 3's host at +3 ms; ranks past 3, of
  larger jobs, read true time).
- Overlap: on rank 0, in step 1, a compute kernel on another stream runs 1 ms inside the
  all-reduce.

Variants (keywords of `build_rank`/`write_job`): other late hosts (`delays`), a rank that reaches
its step late (`late_starts`), every all-reduce hidden behind compute (`hide_collectives`).
"""

from __future__ import annotations

from pathlib import Path

from builder import DEFAULT_BASE_US, TraceBuilder

RANKS = 4
STEPS = 3
STEP_US = 20_000
STRAGGLER = 2
DELAY_STEP = 2
DELAY_US = 5_000
TRANSFER_US = 2_000
COMPUTE_US = 1_000
NELEMS = 25_000_000  # Float: 100 MB
MESSAGE_BYTES = 4 * NELEMS
OFFSETS_US = {0: 0, 1: 500, 2: -200, 3: 3_000}
OVERLAP_US = 1_000  # rank 0, step 1


# (rank, step) → µs: the rank's host is late by that much in that step (its CPU launches late
# inside the step: `delays`) or reaches the step late (its ProfilerStep starts late: `late_starts`)
Delays = dict[tuple[int, int], int]
DEFAULT_DELAYS: Delays = {(STRAGGLER, DELAY_STEP): DELAY_US}


def step_start(step: int) -> int:
    return (step - 1) * STEP_US


def _late(rank: int, step: int, delays: Delays | None, late_starts: Delays | None) -> int:
    delays = DEFAULT_DELAYS if delays is None else delays
    return delays.get((rank, step), 0) + (late_starts or {}).get((rank, step), 0)


def arrival(rank: int, step: int, *, delays: Delays | None = None, late_starts: Delays | None = None) -> int:
    """True time the rank's all-reduce kernel starts, µs."""
    return step_start(step) + 20 + _late(rank, step, delays, late_starts) + COMPUTE_US + 10


def collective_end(step: int, *, ranks: int = RANKS, delays: Delays | None = None,
                   late_starts: Delays | None = None) -> int:
    return max(arrival(r, step, delays=delays, late_starts=late_starts) for r in range(ranks)) + TRANSFER_US


def build_rank(rank: int, *, ranks: int = RANKS, delays: Delays | None = None, late_starts: Delays | None = None,
               hide_collectives: bool = False) -> TraceBuilder:
    """Rank `rank` of the job. `delays`/`late_starts`: the late hosts (default: the straggler's
    5 ms in step 2); `hide_collectives`: a compute kernel on another stream runs through every
    all-reduce (nothing exposed)."""
    b = TraceBuilder(rank=rank, world_size=ranks, base_us=DEFAULT_BASE_US + OFFSETS_US.get(rank, 0))
    for step in range(1, STEPS + 1):
        t = step_start(step)
        late_start = (late_starts or {}).get((rank, step), 0)
        delay = _late(rank, step, delays, late_starts)
        b.step(step, t + late_start, STEP_US - late_start)
        op = b.cpu_op("aten::mm", t + 5 + delay, 10)
        corr = b.launch(t + 10 + delay, 2, external_id=op)
        b.kernel(corr, t + 20 + delay, COMPUTE_US, name="ampere_sgemm_128x64_nn", stream=7)
        comm_op = b.cpu_op("nccl:all_reduce", t + 15 + delay, 4)
        corr = b.launch(t + 16 + delay, 2, external_id=comm_op)
        start = arrival(rank, step, delays=delays, late_starts=late_starts)
        end = collective_end(step, ranks=ranks, delays=delays, late_starts=late_starts)
        b.nccl_kernel(corr, start, end - start, nelems=NELEMS, stream=20, group_size=ranks)
        if hide_collectives:
            corr = b.launch(t + 17 + delay, 2)
            b.kernel(corr, start, end - start, name="ampere_sgemm_64x64_nn", stream=8)
        elif rank == 0 and step == 1:
            corr = b.launch(t + 17, 2)
            b.kernel(corr, start + 500, OVERLAP_US, name="ampere_sgemm_64x64_nn", stream=8)
    return b


def write_job(folder: Path, *, ranks: int = RANKS, **variant) -> Path:
    """The job's rank files in `folder`; `variant`: `build_rank`'s keywords."""
    folder.mkdir(parents=True, exist_ok=True)
    for rank in range(ranks):
        build_rank(rank, ranks=ranks, **variant).write(folder / f"rank{rank}.json")
    return folder
