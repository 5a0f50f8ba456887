"""The map (one rank file → its `RankReport`) and the reduce (every rank's `RankReport` → the
`Report`) of a folder of rank traces. Both are pure functions of their arguments, so any executor
can run them (`pipeline.executors`)."""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

import polars as pl

from traceanalyze.cache_files import CacheSetting
from traceanalyze.errors import TraceAnalyzeError
from traceanalyze.load.limits import LoadLimits
from traceanalyze.report.model import RankReport, Report, ReportOptions
from traceanalyze.model import Trace
from traceanalyze.pipeline.rank import combine_ranks, rank_reports
from traceanalyze.pipeline.results_cache import LookedUp, cached_report, store_report, trace_sizes


def analyse_file(path: str, options: ReportOptions, limits: LoadLimits = LoadLimits(),
                 cache: CacheSetting = False, *, pickled: bool = False) -> RankReport:
    """One rank's trace file (a local path, or an fsspec URL such as `s3://bucket/rank3.json.gz`,
    read where this runs) → its `RankReport`. The rank comes from `distributedInfo.rank`, else
    the file name, else 0 (the reduce settles it for the whole folder). A local file's tables
    come from the cache of loaded traces when it holds them, and its analyses from the cache of
    analysed ranks when that holds them for these options (`cache`, see `load.load_trace`)."""
    from traceanalyze.load import load_rank
    from traceanalyze.pipeline.results_cache import analysed_rank

    if "://" in path and not path.startswith("file://"):
        return _analyse_remote(path, options, limits)
    local = path.removeprefix("file://")
    analysed = analysed_rank(Path(local), options, lambda: load_rank(local, limits=limits, cache=cache),
                             cache=cache, max_events=limits.events, max_op_depth=limits.op_depth)
    return _leaving(analysed, options, copy=not pickled)


@dataclasses.dataclass(frozen=True)
class SkippedRank:
    """A rank file left out under --skip-bad-ranks: its path and the one-line error it gave."""

    path: str
    error: str


def analyse_file_or_skip(path: str, options: ReportOptions, limits: LoadLimits = LoadLimits(),
                         cache: CacheSetting = False, *, pickled: bool = False) -> RankReport | SkippedRank:
    """`analyse_file`, or the `SkippedRank` of a file that is bad input (a `TraceAnalyzeError`:
    truncated, not JSON, over a limit, a link loop); any other failure still ends the job."""
    try:
        return analyse_file(path, options, limits, cache, pickled=pickled)
    except TraceAnalyzeError as error:
        return _skipped(path, error, skip_bad=True)


SMALL_RANK_EVENTS = 20_000  # a rank file of at most this many events is analysed together with others
BATCH_EVENTS = 100_000  # the events of the small ranks analysed together, at most (their tables held at once)


@dataclasses.dataclass(frozen=True)
class _Loaded:
    """A rank file of a batch, loaded: where its result goes, its cache entry, its trace."""

    index: int
    looked_up: LookedUp
    trace: Trace


def analyse_files(paths: list[str], options: ReportOptions, limits: LoadLimits = LoadLimits(),
                  cache: CacheSetting = False, *, pickled: bool = False,
                  skip_bad: bool = False) -> list[RankReport | SkippedRank]:
    """`analyse_file` of each of `paths` (`analyse_file_or_skip` with `skip_bad`), in order. The
    local files of at most `SMALL_RANK_EVENTS` events are analysed together, up to `BATCH_EVENTS`
    at a time (`rank.rank_reports`): most of a small rank's analysis is a fixed number of polars
    queries, paid then once per batch. The same reports as one file at a time
    (tests/jobs/test_rank_batches.py); a batch whose analysis fails is analysed one rank at a time,
    so that the error names its file."""
    from traceanalyze.load import load_rank

    results: list[RankReport | SkippedRank | None] = [None] * len(paths)
    held: list[_Loaded] = []  # the small ranks waiting for their batch
    for index, path in enumerate(paths):
        try:
            if "://" in path and not path.startswith("file://"):
                results[index] = analyse_file(path, options, limits, cache, pickled=pickled)
                continue
            local = Path(path.removeprefix("file://"))
            looked_up = cached_report(local, options, cache=cache, max_events=limits.events,
                                      max_op_depth=limits.op_depth)
            if looked_up.report is not None:
                results[index] = _leaving(looked_up.report, options, copy=not pickled)
                continue
            loaded = _Loaded(index, looked_up, load_rank(local, limits=limits, cache=cache))
        except TraceAnalyzeError as error:
            results[index] = _skipped(path, error, skip_bad)
            continue
        if loaded.trace.meta[0].event_count > SMALL_RANK_EVENTS:  # a large rank: alone, now
            _analyse_batch([loaded], options, results, paths, pickled=pickled, skip_bad=skip_bad)
            continue
        held.append(loaded)
        if sum(item.trace.meta[0].event_count for item in held) >= BATCH_EVENTS:
            _analyse_batch(held, options, results, paths, pickled=pickled, skip_bad=skip_bad)
            held = []
    _analyse_batch(held, options, results, paths, pickled=pickled, skip_bad=skip_bad)
    return results  # type: ignore[return-value]


def _analyse_batch(batch: list[_Loaded], options: ReportOptions, results: list, paths: list[str], *,
                   pickled: bool, skip_bad: bool) -> None:
    """The loaded ranks of `batch` analysed together into their places in `results` (each cached,
    as it leaves the worker), or one by one when that fails (bad input: the error names its file)."""
    if not batch:
        return
    try:
        reports = rank_reports([item.trace for item in batch], options)
    except TraceAnalyzeError as error:
        if len(batch) == 1:
            results[batch[0].index] = _skipped(paths[batch[0].index], error, skip_bad)
            return
        for item in batch:
            _analyse_batch([item], options, results, paths, pickled=pickled, skip_bad=skip_bad)
        return
    for item, report in zip(batch, reports):
        store_report(item.looked_up, report, options, trace_sizes(item.trace))
        results[item.index] = _leaving(report, options, copy=not pickled)


def _skipped(path: str, error: TraceAnalyzeError, skip_bad: bool) -> SkippedRank:
    """The `SkippedRank` of a bad rank file under --skip-bad-ranks; without it, the error ends the job."""
    if not skip_bad:
        raise error
    return SkippedRank(path=path, error=" ".join(str(error).split()))


def _leaving(report: RankReport, options: ReportOptions, *, copy: bool = True) -> RankReport:
    """What leaves the worker: the whole `RankReport`, or its bounded form (`rank_frames`: with
    the HTML charts' inputs or, "text", without; its frames copied into buffers of their own when
    `copy`)."""
    from traceanalyze.pipeline.rank import bounded

    if options.rank_frames == "full":
        return report
    return bounded(report, options.max_gaps, copy=copy, charts=options.rank_frames == "bounded")


def _analyse_remote(url: str, options: ReportOptions, limits: LoadLimits) -> RankReport:
    """Copy the file from its URL to a local temporary file (fsspec), within the download limits
    (`limits.download_bytes`, `download_seconds`: `pipeline.urls.download`), then analyse that. Its
    `source` is the URL without credentials (`pipeline.urls.SourceUrl`)."""
    from traceanalyze.errors import ConfigError, TraceFormatError
    from traceanalyze.pipeline.failures import without_credentials
    from traceanalyze.pipeline.urls import SourceUrl, disk_free, download

    try:
        import fsspec
    except ImportError as exc:  # pragma: no cover - fsspec comes with the ray and dask extras
        raise ConfigError(f"{without_credentials(url)}: reading a URL needs fsspec (pip install "
                          "'traceanalyze[dask]')") from exc
    from traceanalyze.load import load_rank
    from traceanalyze.pipeline.rank import rank_report

    name = url.rstrip("/").rsplit("/", 1)[-1]
    with tempfile.TemporaryDirectory(prefix="traceanalyze-") as folder:
        local = Path(folder) / name
        try:
            with fsspec.open(url, "rb") as source, open(local, "wb") as target:
                download(source, target, url, max_bytes=limits.download_bytes, max_seconds=limits.download_seconds,
                         free_bytes=disk_free(Path(folder)), limits=limits)
        except OSError as error:
            raise TraceFormatError(f"{without_credentials(url)}: cannot read: "
                                   f"{without_credentials(str(error.strerror or error))}") from None
        try:
            report = rank_report(load_rank(local, limits=limits), options)
        except TraceFormatError as error:  # the loader names the local copy: name the URL instead
            raise type(error)(str(error).replace(str(local), without_credentials(url))) from None
    return dataclasses.replace(_leaving(report, options), source=SourceUrl(url))


def reduce_ranks(results: list[RankReport], names: list[str], options: ReportOptions, source: Path, *,
                 force_job: bool = False) -> Report:
    """Every rank's `RankReport` (in the order of the files `names`) → the `Report`. Ranks come
    from `distributedInfo.rank`, else the file names, else the file order: the first source that
    gives every file a distinct rank wins (as `load.load_trace` does for a folder). Files that are
    not one job are refused (`identity.check_one_job`), or with `force_job` reported as one with a
    note on every rank."""
    from traceanalyze.pipeline.identity import check_one_job
    from traceanalyze.load import declared_rank

    skipped = [r for r in results if isinstance(r, SkippedRank)]
    if skipped:
        from traceanalyze.errors import TraceFormatError

        kept = [(r, n) for r, n in zip(results, names) if not isinstance(r, SkippedRank)]
        if not kept:
            raise TraceFormatError(f"{source}: no rank file could be read (--skip-bad-ranks): {skipped[0].error}")
        results, names = [r for r, _ in kept], [n for _, n in kept]
    notes = [check_one_job(results, names, source, force=force_job)]
    notes += [f"rank file skipped (--skip-bad-ranks): {s.error}" for s in skipped]
    notes += _collision_notes(results, names)
    said = tuple(note for note in notes if note)
    if said:
        results = [dataclasses.replace(r, notes=(*said, *r.notes)) for r in results]

    from_info = [r.rank if r.rank_source == "distributedInfo" else None for r in results]
    from_names = [declared_rank(Path(n)) for n in names]
    for ranks, origin in ((from_info, "distributedInfo"), (from_names, "file name")):
        if None not in ranks and len(set(ranks)) == len(ranks):
            break
    else:
        ranks, origin = list(range(len(results))), "file order"
    relabelled = [r if (r.rank, r.rank_source) == (rank, origin) else relabel(r, rank, origin)
                  for r, rank in zip(results, ranks)]
    return combine_ranks(sorted(relabelled, key=lambda r: r.rank), options, source)


def _collision_notes(results: list[RankReport], names: list[str]) -> list[str]:
    """Files that claim the same `distributedInfo.rank`: then no rank comes from it (the ranks
    are numbered by file name or order), said up front rather than found in each rank's health."""
    claimed: dict[int, list[str]] = {}
    for report, name in zip(results, names):
        if report.rank_source == "distributedInfo":
            claimed.setdefault(report.rank, []).append(name)
    shared = {rank: files for rank, files in claimed.items() if len(files) > 1}
    if not shared:
        return []
    listed = "; ".join(f"rank {rank}: {', '.join(files[:4])}{' …' if len(files) > 4 else ''}"
                       for rank, files in sorted(shared.items())[:4])
    return [f"distributedInfo.rank collides ({listed}): ranks numbered by file name or order "
            "(distributed_rank_not_used)"]


def relabel(report: RankReport, rank: int, origin: str) -> RankReport:
    """The same `RankReport` under another rank number (every table's `rank` column too)."""
    changes: dict[str, object] = {"rank": rank, "rank_source": origin}
    for field in dataclasses.fields(report):
        value = getattr(report, field.name)
        if isinstance(value, pl.DataFrame) and "rank" in value.columns:
            changes[field.name] = value.with_columns(pl.lit(rank, dtype=value.schema["rank"]).alias("rank"))
    return dataclasses.replace(report, **changes)
