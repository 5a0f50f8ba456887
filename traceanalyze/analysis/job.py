"""Job-level analyses of several ranks, from each rank's small tables (the reduce of a folder).

Each rank contributes three small tables, computed where its trace was loaded
(`pipeline.rank.rank_report`): its collectives (`collectives.rank_collectives`), its steps split
into compute/comm/idle (`stragglers.rank_steps`) and its comm/compute overlap
(`overlap.comm_overlap`). `job_analysis` combines them: matches collectives across ranks, fits
the clock offsets, aligns the waits, finds the stragglers. Nothing here reads a raw trace table.

To add a job-level analysis: a per-rank table computed in `pipeline.rank.rank_report` (a field of
`RankReport`), combined here into a field of `JobAnalysis`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from traceanalyze.analysis import clocks, collectives, stragglers


@dataclass(frozen=True)
class JobAnalysis:
    """Every cross-rank table (ns). Empty frames when the job has one rank or no collectives."""

    matched: pl.DataFrame  # collectives.MATCHED_SCHEMA: one row per rank of each matched collective, aligned
    collectives: pl.DataFrame  # collectives.collective_summary: one row per matched collective
    group_counts: pl.DataFrame  # collectives.group_counts: collectives per group and rank, unmatched
    clock_offsets: pl.DataFrame  # clocks.OFFSET_SCHEMA
    steps: pl.DataFrame  # stragglers.step_waits: per rank and step, with wait_ns and work_ns
    stragglers: pl.DataFrame  # stragglers.STRAGGLER_SCHEMA: per step
    waits_caused: pl.DataFrame  # collectives.waits_caused: per rank
    overlap: pl.DataFrame  # overlap.JOB_OVERLAP_SCHEMA: per rank, with its waits and what overlap could hide
    health: pl.DataFrame  # model.HEALTH_SCHEMA: clock residuals, unmatched collectives
    # findings.FINDINGS_SCHEMA: the straggler, exposed communication (findings.rules_job, a layer
    # above this one: set by `pipeline.rank.combine_ranks` with `findings.table.job_findings`)
    findings: pl.DataFrame = field(default_factory=pl.DataFrame)

    @property
    def slowest_rank(self) -> int | None:
        """The rank that holds the job back: the one that cost the others the most collective
        wait (`waits_caused`; ties: the lowest rank), None when nobody waited."""
        caused = self.waits_caused.filter(pl.col("caused_wait_ns") > 0)
        if caused.is_empty():
            return None
        return int(caused.sort("caused_wait_ns", "rank", descending=[True, False])["rank"][0])


def job_analysis(rank_collectives: list[pl.DataFrame], rank_steps: list[pl.DataFrame],
                 rank_overlap: list[pl.DataFrame], link_bytes_per_s: float | None = None) -> JobAnalysis:
    """Combine the per-rank tables of every rank (any order) into the `JobAnalysis`."""
    from traceanalyze.model import HEALTH_SCHEMA

    per_rank = _concat(rank_collectives, collectives.RANK_COLLECTIVE_SCHEMA)
    raw = collectives.match_collectives(per_rank)
    offsets = clocks.clock_offsets(raw)
    matched = collectives.match_collectives(per_rank, offsets)
    steps = stragglers.step_waits(_concat(rank_steps, stragglers.RANK_STEP_SCHEMA), matched, offsets)
    counts = collectives.group_counts(per_rank)
    unmatched = counts.filter(pl.col("unmatched") > 0)
    health = pl.concat([
        clocks.clock_health(offsets),
        pl.DataFrame({
            "rank": unmatched["rank"],
            "finding": ["unmatched_collectives"] * unmatched.height,
            "count": unmatched["unmatched"],
            "affects": ["collective waits and the stragglers of the last steps"] * unmatched.height,
            "detail": [f"rank {r} holds {c} collectives of process group {g!r}, another rank of the group only {m}: "
                       f"the last {c - m} are not matched"
                       for g, r, c, m in unmatched.select("process_group", "rank", "count", "matched").iter_rows()],
        }, schema=HEALTH_SCHEMA),
    ])
    from traceanalyze.analysis.overlap import OVERLAP_SCHEMA, hideable

    return JobAnalysis(
        matched=matched,
        collectives=collectives.collective_summary(matched, link_bytes_per_s),
        group_counts=counts,
        clock_offsets=offsets,
        steps=steps,
        stragglers=stragglers.stragglers(steps, matched),
        waits_caused=collectives.waits_caused(matched),
        overlap=hideable(_concat(rank_overlap, OVERLAP_SCHEMA).sort("rank"), per_rank, matched),
        health=health,
    )


def _concat(frames: list[pl.DataFrame], schema: pl.Schema) -> pl.DataFrame:
    present = [f for f in frames if not f.is_empty()]
    return pl.concat(present, how="vertical_relaxed") if present else pl.DataFrame(schema=schema)
