"""Whether the rank files of a folder are one job. A folder of unrelated traces (other programs,
hosts, GPUs, months apart) reduced as one job reads as a straggler of 161 ms and clock offsets of
240 days; so the reduce first asks what the ranks of one job share, and a folder that fails is
refused with one line naming the odd files (`NotOneJob`, exit 2), unless `--force-job`, which
reports them as one with a note saying why they are not (`forced_note`).

What the ranks of one job share (each check only among the ranks that record it):

* the world size of `distributedInfo`;
* the device family (CUDA, ROCm, …; ranks with no device work aside);
* the process group and job as `distributedInfo` records them (`job_identity`): the backend, the NCCL
  version, the number of process groups (`pg_count`), the default process group of `pg_config` (its
  backend and size), and the trace's `schemaVersion` (the profiler that wrote it). Each worker
  carries them in its `RankReport.job_identity`;
* the time they ran: each rank's span (first to last GPU op, on its own clock) comes within
  `MAX_APART_NS` (an hour) of the span of the rank that starts at the median. Ranks of one job
  run together; the clocks of one cluster differ by far less than that.

The odd files are those that disagree with most of the others (the most common value).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from traceanalyze.errors import TraceFormatError
from traceanalyze.model import RankMeta
from traceanalyze.report.model import RankReport

MAX_APART_NS = 3600 * 10**9
SHOWN_FILES = 5


class NotOneJob(TraceFormatError):
    """The rank files of a folder are not one job."""


def _files(names: Sequence[str]) -> str:
    shown = ", ".join(names[:SHOWN_FILES])
    return shown + (f" and {len(names) - SHOWN_FILES} more" if len(names) > SHOWN_FILES else "")


def _odd_by_value(values: dict[str, object], what: str) -> str | None:
    if len(set(values.values())) < 2:
        return None
    common, _ = Counter(values.values()).most_common(1)[0]
    odd = [name for name, value in values.items() if value != common]
    found = sorted({str(values[name]) for name in odd})
    return f"{what} {', '.join(found)} in {_files(odd)}, {common} in the {len(values) - len(odd)} others"


def _span(rank: RankReport) -> tuple[int, int] | None:
    idle = rank.idle
    if idle.height == 0:
        return None
    start, end = idle["window_start_ns"].min(), idle["window_end_ns"].max()
    return None if start is None or end is None else (int(start), int(end))  # type: ignore[arg-type]


def _odd_in_time(spans: dict[str, tuple[int, int]]) -> str | None:
    if len(spans) < 2:
        return None
    ordered = sorted(spans.items(), key=lambda item: item[1][0])
    reference_name, (first, last) = ordered[len(ordered) // 2]
    apart = {name: max(0, start - last, first - end) for name, (start, end) in spans.items()}
    odd = [name for name, gap in apart.items() if gap > MAX_APART_NS]
    if not odd:
        return None
    farthest = max(apart[name] for name in odd) / 1e9
    when = f"{farthest / 86400:.0f} days" if farthest >= 86400 else f"{farthest / 3600:.1f} hours"
    return (f"ran at another time than {reference_name} (up to {when} apart): {_files(odd)}")


# (what a rank records, as the refusal names it): `RankMeta.distributed_info` keys, and the schema version
IDENTITY = (("backend", "backend"), ("nccl_version", "NCCL version"), ("pg_count", "process group count"),
            ("default_pg", "default process group"), ("schema_version", "trace schemaVersion"))
SHOWN_CHARS = 80


def job_identity(meta: RankMeta) -> tuple[tuple[str, str], ...]:
    """What a rank's file records of its job (`IDENTITY`, those it records), as short texts."""
    recorded = {**meta.distributed_info, "schema_version": meta.schema_version}
    if meta.backend is not None:
        recorded["backend"] = meta.backend
    return tuple((what, str(value)[:SHOWN_CHARS]) for what, _ in IDENTITY
                 if (value := recorded.get(what)) is not None and isinstance(value, (str, int, float)))


def job_problems(ranks: Sequence[RankReport], names: Sequence[str]) -> list[str]:
    """What makes the ranks (`ranks[i]` read from the file `names[i]`) not one job; empty when
    they are."""
    problems = [
        _odd_by_value({n: r.world_size for r, n in zip(ranks, names) if r.world_size}, "world size"),
        _odd_by_value({n: r.device_family for r, n in zip(ranks, names) if r.device_family != "none"},
                      "device family"),
        *(_odd_by_value({n: dict(r.job_identity)[what] for r, n in zip(ranks, names) if what in dict(r.job_identity)},
                        said) for what, said in IDENTITY),
        _odd_in_time({n: span for r, n in zip(ranks, names) if (span := _span(r)) is not None}),
    ]
    return [problem for problem in problems if problem]


def check_one_job(ranks: Sequence[RankReport], names: Sequence[str], source: object, *, force: bool) -> str | None:
    """None when the ranks are one job; else a `NotOneJob` naming the odd files, or with `force`
    the note every format shows."""
    problems = job_problems(ranks, names)
    if not problems:
        return None
    said = "; ".join(problems)
    if not force:
        raise NotOneJob(f"{source}: not one job: {said}; analyse the files apart, or pass --force-job to report "
                        "them as one")
    return f"not one job (reported as one: --force-job): {said}"
