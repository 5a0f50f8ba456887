"""The job-level analyses (collectives, clock offsets, stragglers, overlap) against the exact
answers of the synthetic job in tests/multirank.py, and the 4-rank DLRM folder end to end."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

import multirank as mr
import traceanalyze
from shared_traces import SHARED_TRACES_DIR
from traceanalyze.analysis import clocks, collectives

US = 1_000


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    return traceanalyze.analyze(mr.write_job(tmp_path_factory.mktemp("job"))).job


def test_clock_offsets_are_the_hosts_offsets(job):
    offsets = dict(job.clock_offsets.select("rank", "offset_ns").iter_rows())
    assert offsets == {r: o * US for r, o in mr.OFFSETS_US.items()}
    assert job.clock_offsets["residual_max_abs_ns"].to_list() == [0, 0, 0, 0]
    assert job.health.is_empty()


def test_waits_and_transfer_of_each_collective(job):
    summary = job.collectives
    assert summary["seq"].to_list() == [0, 1, 2]
    assert summary["collective"].to_list() == ["all_reduce"] * 3
    assert summary["message_bytes"].to_list() == [mr.MESSAGE_BYTES] * 3
    assert summary["transfer_ns"].to_list() == [mr.TRANSFER_US * US] * 3
    # step 2: the three others wait DELAY_US each for the straggler
    assert summary["wait_ns"].to_list() == [0, 3 * mr.DELAY_US * US, 0]
    assert summary["max_wait_ns"].to_list() == [0, mr.DELAY_US * US, 0]
    assert summary["last_rank"][1] == mr.STRAGGLER
    step2 = job.matched.filter(pl.col("seq") == 1).sort("rank")
    assert step2["wait_ns"].to_list() == [mr.DELAY_US * US if r != mr.STRAGGLER else 0 for r in range(mr.RANKS)]
    # aligned arrivals: the true times, whatever each host's clock said
    true_arrivals = [mr.arrival(r, 2) for r in range(mr.RANKS)]
    base = step2["arrival_ns"][0] - true_arrivals[0] * US
    assert (step2["arrival_ns"] - base).to_list() == [a * US for a in true_arrivals]


def test_bus_bandwidth_follows_nccl_tests(job):
    algbw = mr.MESSAGE_BYTES / (mr.TRANSFER_US * 1e-6)  # 50 GB/s
    busbw = algbw * 2 * (mr.RANKS - 1) / mr.RANKS  # all-reduce: 2(n-1)/n
    summary = job.collectives
    assert summary["algbw_bytes_per_s"].to_list() == pytest.approx([algbw] * 3, rel=1e-12)
    assert summary["busbw_bytes_per_s"].to_list() == pytest.approx([busbw] * 3, rel=1e-12)
    assert summary["link_peak_bytes_per_s"].to_list() == [300e9] * 3  # A100 SXM4: NVLink 3, 600 GB/s both ways
    assert summary["link_fraction"].to_list() == pytest.approx([busbw / 300e9] * 3)


@pytest.mark.parametrize(("kind", "n", "factor"), [
    ("all_reduce", 8, 2 * 7 / 8), ("all_gather", 8, 7 / 8), ("reduce_scatter", 4, 3 / 4),
    ("all_to_all", 2, 1 / 2), ("broadcast", 8, 1.0), ("reduce", 8, 1.0), ("send_recv", 2, 1.0),
])
def test_bus_factors(kind, n, factor):
    assert collectives.BUS_FACTORS[kind](n) == pytest.approx(factor)


@pytest.mark.parametrize(("text", "kind"), [
    ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", "all_reduce"),
    ("ncclDevKernel_ReduceScatter_Sum_f32_RING_LL", "reduce_scatter"),
    ("_allgather_base", "all_gather"), ("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t", "send_recv"),
    ("all_to_allv", "all_to_all"), ("ncclDevKernel_Broadcast_RING_LL", "broadcast"), ("reduce", "reduce"),
    ("cross_device_reduce_1stage", "reduce"), ("mystery", "other"),
])
def test_collective_kind(text, kind):
    assert collectives.collective_kind(text) == kind


def test_straggler_of_step_2(job):
    row = job.stragglers.filter(pl.col("step") == mr.DELAY_STEP).row(0, named=True)
    assert row["slowest_rank"] == mr.STRAGGLER
    assert row["behind_ns"] == mr.DELAY_US * US
    assert row["others_wait_ns"] == 3 * mr.DELAY_US * US
    assert row["cause"] == "host"
    assert job.slowest_rank == mr.STRAGGLER
    assert row["collectives_last"] == 1 and row["ranks"] == mr.RANKS
    assert job.stragglers["step"].to_list() == [mr.DELAY_STEP]  # steps 1 and 3: nobody waits
    caused = dict(job.waits_caused.select("rank", "caused_wait_ns").iter_rows())
    assert caused[mr.STRAGGLER] == 3 * mr.DELAY_US * US


def test_step_split_adds_up(job):
    steps = job.steps
    assert (steps["compute_ns"] + steps["comm_ns"] + steps["idle_ns"] == steps["step_ns"]).all()
    waiting = steps.filter((pl.col("step") == mr.DELAY_STEP) & (pl.col("rank") != mr.STRAGGLER))
    assert waiting["wait_ns"].to_list() == [mr.DELAY_US * US] * 3
    assert waiting["comm_ns"].to_list() == [(mr.DELAY_US + mr.TRANSFER_US) * US] * 3


def test_overlap(job):
    overlap = job.overlap.sort("rank")
    comm_us = 3 * mr.TRANSFER_US + mr.DELAY_US  # ranks that waited in step 2
    assert overlap["communication_ns"].to_list() == [comm_us * US, comm_us * US, 3 * mr.TRANSFER_US * US, comm_us * US]
    assert overlap["overlapped_ns"].to_list() == [mr.OVERLAP_US * US, 0, 0, 0]
    assert overlap["exposed_ns"][0] == (comm_us - mr.OVERLAP_US) * US
    assert overlap["overlap_fraction"][0] == pytest.approx(mr.OVERLAP_US / comm_us)


def test_counts_that_differ_match_the_shortest(tmp_path):
    folder = mr.write_job(tmp_path / "job")
    short = mr.build_rank(1)
    # rank 1's trace holds only the first two steps' collectives: drop its last all-reduce
    short._entries = [e for e in short._entries
                      if not ("nccl" in str(e.event.get("name", "")).lower()
                              and e.event.get("ts", 0) > short.base_ns / 1000 + 40_000)]
    short.write(folder / "rank1.json")
    job = traceanalyze.analyze(folder).job
    assert job.collectives["seq"].to_list() == [0, 1]
    finding = job.health.filter(pl.col("finding") == "unmatched_collectives")
    assert finding["rank"].to_list() == [0, 2, 3] and finding["count"].to_list() == [1, 1, 1]


def test_clock_residuals_finding():
    offsets = pl.DataFrame({"rank": [0, 1], "reference_rank": [0, 0], "offset_ns": [0, 10], "collectives": [5, 5],
                            "residual_median_abs_ns": [0, clocks.RESIDUAL_LIMIT_NS + 1], "residual_max_abs_ns": [0, 1]},
                           schema=clocks.OFFSET_SCHEMA)
    health = clocks.clock_health(offsets)
    assert health["rank"].to_list() == [1] and health["finding"].to_list() == ["clock_residuals"]
    assert clocks.clock_health(offsets.with_columns(pl.lit(0,
                                                           dtype=pl.Int64).alias("residual_median_abs_ns"))).is_empty()


def test_single_rank_has_no_job_tables():
    from builder import TraceBuilder
    b = TraceBuilder()
    corr = b.launch(0, 2)
    b.nccl_kernel(corr, 10, 5)
    job = traceanalyze.analyze(traceanalyze.load_trace(b.write_temp() if hasattr(b, "write_temp") else _write(b))).job
    assert job.collectives.is_empty() and job.stragglers.is_empty() and job.slowest_rank is None
    assert job.overlap["communication_ns"].to_list() == [5_000]


def _write(builder):
    import tempfile
    from pathlib import Path
    return builder.write(Path(tempfile.mkdtemp()) / "trace.json")


DLRM = SHARED_TRACES_DIR / "param_v100_dlrm_4ranks"


@pytest.mark.skipif(not DLRM.is_dir(), reason=f"{DLRM} is absent (the shared traces sit next to the repository)")
def test_dlrm_straggler_is_rank_2():
    job = traceanalyze.analyze(DLRM).job
    assert job.slowest_rank == 2
    row = job.stragglers.row(0, named=True)
    assert row["slowest_rank"] == 2 and row["cause"] == "host"
    # ranks 1 and 3 wait for rank 2 in the first SendRecv (about 7 and 5.6 ms)
    first = job.matched.filter(pl.col("seq") == 0).sort("rank")
    assert first["last_rank"].unique().to_list() == [2]
    waits = dict(first.select("rank", "wait_ns").iter_rows())
    assert waits[1] > 5_000_000 and waits[3] > 5_000_000 and waits[2] == 0
    assert job.collectives["collective"].to_list()[:4] == ["send_recv"] * 4


def test_straggler_cause_leaves_out_waiting_on_peers():
    from traceanalyze.analysis import stragglers

    cause = pl.List(pl.Struct({"cause": pl.String, "ns": pl.Int64}))
    steps = pl.DataFrame({
        "rank": [0, 1], "device": [0, 0], "step": [1, 1], "window_start_ns": [0, 0], "window_end_ns": [100, 100],
        "step_ns": [100, 100], "compute_ns": [10, 10], "comm_ns": [20, 20], "idle_ns": [70, 70],
        "idle_by_cause": [[{"cause": "host", "ns": 5}], [{"cause": "collective", "ns": 60},
                                                         {"cause": "sync", "ns": 10}]],
    }, schema_overrides={"rank": pl.Int32, "device": pl.Int32, "idle_by_cause": cause})
    matched = pl.DataFrame({
        "process_group": ["0", "0"], "seq": [0, 0], "rank": [0, 1], "arrival_ns": [10, 40], "end_ns": [50, 50],
        "duration_ns": [40, 10], "last_arrival_ns": [40, 40], "last_rank": [1, 1], "wait_ns": [30, 0],
        "transfer_ns": [10, 10],
    }, schema_overrides={"rank": pl.Int32, "last_rank": pl.Int32})
    row = stragglers.stragglers(stragglers.step_waits(steps, matched), matched).row(0, named=True)
    assert (row["slowest_rank"], row["cause"], row["cause_ns"], row["behind_ns"]) == (1, "sync", 10, 30)


def _job_folder(which: str, tmp_path: Path) -> Path:
    if which == "synthetic job":
        return mr.write_job(tmp_path)
    if not DLRM.is_dir():
        pytest.skip(f"{DLRM} is absent (the shared traces sit next to the repository)")
    return DLRM


@pytest.mark.parametrize("which", ["synthetic job", "DLRM, 4 ranks"])
def test_per_op_analyses_of_several_ranks_at_once_are_each_ranks_own(which, tmp_path):
    """Ranks share correlation ids, devices and streams: keyed by rank, the launch join, launch
    latencies, queue depths and idle gaps of the job's trace are each rank's own, row for row
    (on one rank these run without the rank key: `scalar_columns.varying_keys`)."""
    from traceanalyze.analysis import idle, launch
    from traceanalyze.model import launch_rows

    whole = traceanalyze.load_trace(_job_folder(which, tmp_path))
    ranks = whole.split_by_rank()
    assert len(ranks) == 4 and whole.gpu["rank"].n_unique() == 4
    assert whole.gpu.group_by("correlation").agg(pl.col("rank").n_unique()).filter(pl.col("rank") > 1).height > 0
    offsets = [0, *(rank.runtime.height for rank in ranks)]
    expected_rows = pl.concat([launch_rows(rank) + sum(offsets[:i + 1]) for i, rank in enumerate(ranks)])
    assert launch_rows(whole).to_list() == expected_rows.to_list()
    assert expected_rows.null_count() < expected_rows.len()  # launches were found

    def each(analysis, order):
        return pl.concat([analysis(rank) for rank in ranks]).sort(order, maintain_order=True)

    order = ["rank", "device", "stream", "launch_start_ns"]
    latency = launch.launch_latency(whole).sort(order, maintain_order=True)
    assert latency.height > 0 and latency.equals(each(launch.launch_latency, order))
    assert launch.queue_summary(whole).equals(each(launch.queue_summary, launch.STREAM))
    gaps = ["rank", "device", "start_ns"]
    whole_gaps, own_gaps = idle.idle_gaps(whole).sort(gaps), each(idle.idle_gaps, gaps)
    assert whole_gaps.height > 0 and whole_gaps.drop("share_of_window").equals(own_gaps.drop("share_of_window"))
    # a rank's one window is a constant divisor, which polars applies as a product with its
    # reciprocal: the share can differ in its last bit (it did on the DLRM ranks before this change)
    assert whole_gaps["share_of_window"].to_list() == pytest.approx(own_gaps["share_of_window"].to_list(), rel=1e-12)
