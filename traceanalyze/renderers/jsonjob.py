"""The JSON report's job-level sections (`collectives`, `stragglers`, `overlap`,
`clock_offsets`, docs/report-json.md) from `analysis.job.JobAnalysis`. Times in µs."""

from __future__ import annotations

from typing import Any

import polars as pl

from traceanalyze.analysis.job import JobAnalysis
from traceanalyze.report import schema
from traceanalyze.report.schema import COLLECTIVE_LIMIT


def _us(value_ns: Any) -> float | None:
    return None if value_ns is None else round(value_ns / 1000.0, 3)


def _number(value: Any) -> Any:
    return None if value is None or value != value else value


def job_sections(job: JobAnalysis) -> dict[str, Any]:
    """The keyword arguments of `schema.ReportV1` for the job-level sections."""
    return {
        "collectives": collectives(job),
        "collectives_total": job.collectives.height,
        "stragglers": stragglers(job),
        "overlap": [
            schema.Overlap(rank=r["rank"], communication_us=_us(r["communication_ns"]), overlapped_us=_us(r["overlapped_ns"]),  # type: ignore[arg-type]
                           exposed_us=_us(r["exposed_ns"]), overlap_fraction=_number(r["overlap_fraction"]),
                           wait_us=_us(r["wait_ns"]), hideable_us=_us(r["hideable_ns"]))
            for r in job.overlap.iter_rows(named=True)
        ],
        "clock_offsets": [
            schema.ClockOffset(rank=r["rank"], reference_rank=r["reference_rank"], offset_us=_us(r["offset_ns"]),  # type: ignore[arg-type]
                               collectives=r["collectives"], residual_median_abs_us=_us(r["residual_median_abs_ns"]),
                               residual_max_abs_us=_us(r["residual_max_abs_ns"]))
            for r in job.clock_offsets.iter_rows(named=True)
        ],
    }


def listed_collectives(job: JobAnalysis, limit: int = COLLECTIVE_LIMIT) -> pl.DataFrame:
    """The collectives a report lists: the `limit` most waited on (summed wait, then max wait),
    in their order (process group, sequence)."""
    return (
        job.collectives.sort("wait_ns", "max_wait_ns", "process_group", "seq", descending=[True, True, False, False])
        .head(limit)
        .sort("process_group", "seq")
    )


def collectives(job: JobAnalysis) -> list[schema.Collective]:
    listed = listed_collectives(job)
    per_rank = job.matched.join(listed.select("process_group", "seq", "first_arrival_ns"), on=["process_group", "seq"])
    ranks: dict[tuple[str, int], list[schema.CollectiveRank]] = {}
    for r in per_rank.sort("rank").iter_rows(named=True):
        ranks.setdefault((r["process_group"], r["seq"]), []).append(schema.CollectiveRank(
            rank=r["rank"], arrival_us=_us(r["arrival_ns"] - r["first_arrival_ns"]), wait_us=_us(r["wait_ns"]),  # type: ignore[arg-type]
            transfer_us=_us(r["transfer_ns"]), duration_us=_us(r["duration_ns"])))  # type: ignore[arg-type]
    return [
        schema.Collective(
            process_group=r["process_group"], seq=r["seq"], collective=r["collective"], algorithm=r["algorithm"],
            protocol=r["protocol"], ranks=r["ranks"], message_bytes=r["message_bytes"],
            first_arrival_ts_us=_us(r["first_arrival_ns"]),  # type: ignore[arg-type]
            last_arrival_us=_us(r["last_arrival_ns"] - r["first_arrival_ns"]),  # type: ignore[arg-type]
            last_rank=r["last_rank"], wait_us=_us(r["wait_ns"]), max_wait_us=_us(r["max_wait_ns"]),  # type: ignore[arg-type]
            transfer_us=_us(r["transfer_ns"]), algbw_bytes_per_s=_number(r["algbw_bytes_per_s"]),  # type: ignore[arg-type]
            busbw_bytes_per_s=_number(r["busbw_bytes_per_s"]), link_peak_bytes_per_s=_number(r["link_peak_bytes_per_s"]),
            link_fraction=_number(r["link_fraction"]), consistent=r["consistent"],
            per_rank=ranks.get((r["process_group"], r["seq"]), []),
        )
        for r in listed.iter_rows(named=True)
    ]


def stragglers(job: JobAnalysis) -> schema.Stragglers:
    return schema.Stragglers(
        slowest_rank=job.slowest_rank,
        waits_caused=[schema.WaitCaused(rank=r["rank"], caused_wait_us=_us(r["caused_wait_ns"]),  # type: ignore[arg-type]
                                        collectives_last=r["collectives_last"])
                      for r in job.waits_caused.iter_rows(named=True)],
        steps=[schema.StragglerStep(step=r["step"], slowest_rank=r["slowest_rank"], behind_us=_us(r["behind_ns"]),  # type: ignore[arg-type]
                                    others_wait_us=_us(r["others_wait_ns"]), collectives_last=r["collectives_last"],  # type: ignore[arg-type]
                                    ranks=r["ranks"], cause=r["cause"], cause_us=_us(r["cause_ns"]))
               for r in job.stragglers.iter_rows(named=True)],
        rank_steps=[schema.RankStep(rank=r["rank"], device=r["device"], step=r["step"], step_us=_us(r["step_ns"]),  # type: ignore[arg-type]
                                    compute_us=_us(r["compute_ns"]), comm_us=_us(r["comm_ns"]), idle_us=_us(r["idle_ns"]),  # type: ignore[arg-type]
                                    wait_us=_us(r["wait_ns"]), work_us=_us(r["work_ns"]))  # type: ignore[arg-type]
                    for r in job.steps.iter_rows(named=True)],
    )
