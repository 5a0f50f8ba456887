"""Rules over a whole job (several ranks): the straggler that makes the others wait, and the
communication overlap could still hide. They read the cross-rank tables (`analysis.job`), not one
rank's; each finding is filed under the rank it names."""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from traceanalyze.analysis.findings.finding import Finding, spans_of
from traceanalyze.analysis.findings.inputs import format_ns, format_share

if TYPE_CHECKING:
    from traceanalyze.analysis.job import JobAnalysis

STRAGGLER_MIN_SHARE = 0.5  # of the job's collective wait: one rank holds the others back, not jitter
STRAGGLER_MIN_COMM_SHARE = 0.05  # of the other ranks' communication time spent waiting for it
RANKS_LISTED = 4  # ranks named in an evidence line, the rest counted

# what the straggler's excess is, in words; `compute`: its GPU had more work than the others'
EXCESS_WORDS = {
    "compute": "more GPU work (compute) than the others",
    "host": "more GPU idle waiting for its CPU to launch work (host: data loading, Python, framework)",
    "sync": "more GPU idle while its CPU waited on the GPU (sync: .item(), .cpu(), synchronize)",
    "launch": "more launch latency (launch)",
    "stream_wait": "more idle waiting on another stream's event (stream_wait)",
    "other": "more idle of unknown cause (other)",
}
EXCESS_ACTIONS = {
    "compute": "give rank {rank} no more work than the others: balance the shards/batches across ranks (uneven "
               "sequence lengths, embedding tables, pipeline stages), and check its GPU (clocks, thermal throttling, "
               "a slower device)",
    "host": "find what makes rank {rank}'s CPU late (its own findings: `cpu-bound-gaps`, `dataloader-wait`): uneven "
            "data loading (`DataLoader(num_workers=N, pin_memory=True)`), logging, checkpointing or evaluation on "
            "that rank only; move that work off the step or spread it over the ranks",
    "sync": "remove the sync from rank {rank}'s step (its `sync-in-step` finding; "
            "`torch.cuda.set_sync_debug_mode(\"warn\")` finds each one): work done on one rank only (logging a "
            "loss with `.item()`, metrics) makes the others wait in the next collective",
}
LATE_START_ACTION = ("look at what rank {rank} does between steps and in the step before (profile more steps: "
                     "`torch.profiler.schedule(wait=1, warmup=1, active=3)`): data loading outside the step, logging, "
                     "checkpointing or evaluation on that rank only, garbage collection; the others wait for it in the "
                     "first collective of the step")
DEFAULT_ACTION = ("look at what rank {rank} does before the collectives it arrives last at (its own findings, its "
                  "timeline): the others wait there for it")


def _ranks_text(rows: list[tuple[int, int]]) -> str:
    shown = ", ".join(f"rank {rank} {format_ns(ns)}" for rank, ns in rows[:RANKS_LISTED])
    return shown + (f", +{len(rows) - RANKS_LISTED} more ranks" if len(rows) > RANKS_LISTED else "")


def _per_rank_step(steps: pl.DataFrame) -> pl.DataFrame:
    """`job.steps` summed over each rank's devices → `rank, step, cause, ns` with the rank's
    compute time as cause `compute` and its idle by cause (waiting on peers, `collective`, left out)."""
    compute = steps.select("rank", "step", pl.lit("compute").alias("cause"), pl.col("compute_ns").alias("ns"))
    idle = (
        steps.select("rank", "step", "idle_by_cause").explode("idle_by_cause").drop_nulls("idle_by_cause")
        .select("rank", "step", pl.col("idle_by_cause").struct.field("cause"),
                pl.col("idle_by_cause").struct.field("ns"))
        .filter(pl.col("cause") != "collective")
    )
    return pl.concat([compute, idle]).group_by("rank", "step", "cause").agg(pl.col("ns").sum())


def straggler_excess(job: JobAnalysis, rank: int) -> pl.DataFrame:
    """Why `rank` is late, over the steps in which it is the slowest (`job.stragglers`) →
    `cause, own_ns, others_ns, excess_ns`, largest excess first (ties: cause name).

    Cause `late_start`: how long after the other ranks (their median, on the aligned clock) it
    began those steps, summed (others_ns 0): the delay arose before the step. The other causes
    compare inside the steps: its compute time (`compute`) and its idle by cause against the
    other ranks' (per step the median over the other ranks, 0 where a rank has none, summed);
    excess = own − others."""
    steps = job.stragglers.filter(pl.col("slowest_rank") == rank).select("step")
    schema = {"cause": pl.String, "own_ns": pl.Int64, "others_ns": pl.Int64, "excess_ns": pl.Int64}
    if steps.is_empty() or job.steps.is_empty():
        return pl.DataFrame(schema=schema)
    in_steps = job.steps.join(steps, on="step", how="semi")
    table = _per_rank_step(in_steps)
    ranks = in_steps.select("rank", "step").unique()
    full = ranks.join(table.select("cause").unique(), how="cross").join(table, on=["rank", "step", "cause"], how="left")
    full = full.with_columns(pl.col("ns").fill_null(0))
    own = full.filter(pl.col("rank") == rank).group_by("cause").agg(pl.col("ns").sum().alias("own_ns"))
    others = (
        full.filter(pl.col("rank") != rank).group_by("step", "cause").agg(pl.col("ns").median())
        .group_by("cause").agg(pl.col("ns").sum().round().cast(pl.Int64).alias("others_ns"))
    )
    starts = in_steps.group_by("rank", "step").agg(pl.col("aligned_start_ns").min())
    late = (
        starts.filter(pl.col("rank") == rank)
        .join(starts.filter(pl.col("rank") != rank).group_by("step")
              .agg(pl.col("aligned_start_ns").median().alias("others")),
              on="step")
        .select(pl.lit("late_start").alias("cause"),
                (pl.col("aligned_start_ns") - pl.col("others")).sum().round().cast(pl.Int64).alias("own_ns"),
                pl.lit(0, dtype=pl.Int64).alias("others_ns"))
    )
    inside = own.join(others, on="cause", how="left").with_columns(pl.col("others_ns").fill_null(0))
    return (
        pl.concat([inside.cast({"own_ns": pl.Int64}), late], how="vertical_relaxed")
        .with_columns((pl.col("own_ns") - pl.col("others_ns")).alias("excess_ns"))
        .select(list(schema)).cast(schema)  # type: ignore[arg-type]
        .sort("excess_ns", "cause", descending=[True, False])
    )


def _offset(job: JobAnalysis, rank: int) -> int:
    row = job.clock_offsets.filter(pl.col("rank") == rank)
    return int(row["offset_ns"][0]) if row.height else 0


def straggler(job: JobAnalysis) -> list[tuple[int, Finding]]:
    """The rank whose late arrivals at collectives cost the others the most wait: how much, whom,
    in which steps, and its likely cause (what it does more of than the others in those steps)."""
    rank = job.slowest_rank
    if rank is None:
        return []
    caused = job.waits_caused.filter(pl.col("rank") == rank).row(0, named=True)
    caused_ns = int(caused["caused_wait_ns"])
    total_wait = int(job.matched["wait_ns"].sum())
    others_comm = int(job.overlap.filter(pl.col("rank") != rank)["communication_ns"].sum())
    if caused_ns < STRAGGLER_MIN_SHARE * total_wait or caused_ns < STRAGGLER_MIN_COMM_SHARE * others_comm:
        return []
    late = job.matched.filter(pl.col("last_rank") == rank)
    victims = (
        late.filter(pl.col("rank") != rank).group_by("rank").agg(pl.col("wait_ns").sum())
        .filter(pl.col("wait_ns") > 0).sort("wait_ns", "rank", descending=[True, False])
    )
    count = int(caused["collectives_last"])
    evidence = (f"the other ranks waited {format_ns(caused_ns)} for rank {rank} in {count} collective"
                f"{'s' if count != 1 else ''} it arrived last at ({format_share(caused_ns, total_wait)} of the job's "
                f"collective wait): {_ranks_text(victims.select('rank', 'wait_ns').rows())}")
    steps = job.stragglers.filter(pl.col("slowest_rank") == rank).sort("step")
    if steps.height:
        first, last = steps["step"][0], steps["step"][-1]
        where = f"step {first}" if steps.height == 1 else f"{steps.height} steps ({first}–{last})"
        evidence += f"; in {where} it arrived {format_ns(int(steps['behind_ns'].sum()))} after the others' median"
    excess = straggler_excess(job, rank).filter(pl.col("excess_ns") > 0)
    inside = excess.filter(pl.col("cause") != "late_start")
    if excess.height and excess["cause"][0] == "late_start":
        evidence += (f"; it began {'that step' if steps.height == 1 else 'those steps'} "
                     f"{format_ns(excess['excess_ns'][0])} after the other ranks (their median): the delay arose "
                     "before the step")
        action = LATE_START_ACTION
    elif inside.height:
        action = EXCESS_ACTIONS.get(inside["cause"][0], DEFAULT_ACTION)
    else:
        evidence += ("; no ProfilerStep spans: its cause is not measured" if steps.is_empty()
                     else "; it had no more compute or idle than the others in those steps")
        action = DEFAULT_ACTION
    if inside.height:
        top = inside.row(0, named=True)
        evidence += (f"; {'inside' if excess['cause'][0] == 'late_start' else 'there'} it had "
                     f"{EXCESS_WORDS.get(top['cause'], top['cause'])}: {format_ns(top['own_ns'])}, "
                     f"{format_ns(top['excess_ns'])} more than the other ranks' median")
    offset = _offset(job, rank)
    # its clock: how far it was behind the first of the others, at each collective it arrived last at
    behind = (
        late.group_by("process_group", "seq")
        .agg(pl.col("arrival_ns").filter(pl.col("rank") != rank).min().alias("start_ns"),
             pl.col("last_arrival_ns").first().alias("end_ns"))
        .filter(pl.col("end_ns") > pl.col("start_ns"))
        .with_columns(pl.col("start_ns") + offset, pl.col("end_ns") + offset)
    )
    return [(rank, Finding(
        id="straggler", regime="communication", title="The other ranks wait for this rank (straggler)",
        evidence=evidence, action=action.format(rank=rank), gain_ns=float(caused_ns), confidence="high",
        spans=spans_of(behind)))]


def exposed_communication(job: JobAnalysis) -> list[tuple[int, Finding]]:
    """Collective transfers with no compute running beside them: what overlap could still hide,
    per rank, with the waiting for peers (which no overlap hides) told apart."""
    ranks = job.overlap.filter(pl.col("hideable_ns").is_not_null())
    total = int(ranks["hideable_ns"].sum()) if ranks.height else 0
    if total <= 0:
        return []
    ordered = ranks.sort("hideable_ns", "rank", descending=[True, False])
    rank = int(ordered["rank"][0])
    exposed = int(ranks["exposed_ns"].sum())
    waiting = max(exposed - total, 0)
    evidence = (f"{format_ns(exposed)} of communication ran with no compute beside it "
                f"({format_share(exposed, int(ranks['communication_ns'].sum()))} of it, summed over "
                f"{ranks.height} ranks); at most {format_ns(total)} of that is transfer that overlap could hide: "
                f"{_ranks_text(ordered.select('rank', 'hideable_ns').rows())}")
    if waiting:
        evidence += f"; the other {format_ns(waiting)} or more is waiting for late peers (no overlap hides it)"
    evidence += "; the replay cannot predict its saving (it does not model overlap)"
    offset = _offset(job, rank)
    transfers = (
        job.matched.filter((pl.col("rank") == rank) & (pl.col("end_ns") > pl.col("last_arrival_ns")))
        .select((pl.max_horizontal("last_arrival_ns", "arrival_ns") + offset).alias("start_ns"),
                (pl.col("end_ns") + offset).alias("end_ns"))
    )
    return [(rank, Finding(
        id="exposed-communication", regime="communication", title="Collective transfers are not hidden behind compute",
        evidence=evidence,
        action="start each collective as soon as its input is ready and run independent compute beside it: DDP "
               "overlaps gradient all-reduce with the backward pass (`DistributedDataParallel(bucket_cap_mb=...)`, "
               "keep `no_sync()` to accumulation steps), FSDP prefetches (`FullyShardedDataParallel(forward_prefetch="
               "True, backward_prefetch=BackwardPrefetch.BACKWARD_PRE)`), or issue it with `dist.all_reduce(t, "
               "async_op=True)` and call `work.wait()` only where the result is needed",
        gain_ns=float(total), confidence="medium",
        spans=spans_of(transfers)))]
