"""The second level of the cache (docs/cache.md): the analysed result of one rank file, the
`RankReport` that `model.rank_report` gives, so that a second `report`, `gate`, `diff` or
`annotate` of the same file with the same analysis options neither parses nor analyses it.

An entry is used only when everything it was made from still holds (`ResultsKey`): the trace
file's key in the cache of loaded tables (`load.cache.EntryKey`: path, size, times, inode, our
version and the tables' fingerprint), the `fingerprint` of the code that computes the analyses,
and a digest of every `ReportOptions` field that `rank_report` reads (`options_digest`). Nothing
is pickled: the frames are Arrow IPC, each checked on read against the schema `rank_report` gives
that frame (`frame_schemas`), and the other fields are JSON decoded into explicit types
(`RankScalars`). A wrong magic, checksum, layout, key, schema, row count or field makes the entry
a miss: the rank is analysed again and the entry rewritten. The folder, the entry file's layout,
atomic writes and the bound are `cache_files`', shared with the cache of loaded tables.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import logging
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, BinaryIO

import msgspec
import polars as pl

from traceanalyze import cache_files, model
from traceanalyze.analysis.peaks import DevicePeaks, rebuild_peaks
from traceanalyze.analysis.roofline import PeakChoice
from traceanalyze.cache_files import CacheSetting, FrameEntry
from traceanalyze.load import cache as tables_cache
from traceanalyze.model import RankMeta, Trace
from traceanalyze.report.model import RankReport, ReportOptions
from traceanalyze.pipeline.rank import rank_report
from traceanalyze.report.summaries import SmallKernelSummary, Summary

log = logging.getLogger(__name__)

FORMAT = 2  # the entry layout; bump it when the header's shape changes (the code is fingerprinted too)
MAGIC = b"traceanalyze-results\x00"
SUFFIX = ".results"
COMPRESSION = "zstd"  # as fast to read back as lz4 on these frames, about a third of the size (docs/cache.md)
# `ReportOptions` fields that only what comes after `rank_report` reads: the renderers (how many
# gaps are listed, every rank's section or not), a worker's hand-over (`rank_frames`: the
# cached rank is the whole one, cut by `pipeline.rank.bounded` after) and how many threads compute
# the same result (`analysis_threads`); every other field changes
# what `rank_report` computes and is in the key
NOT_ANALYSED = frozenset({"max_gaps", "details", "rank_frames", "analysis_threads"})

_PEAK_HINTS = typing.get_type_hints(DevicePeaks)
# `DevicePeaks` as JSON: its FLOP/s table, keyed by (dtype, unit), as [dtype, unit, FLOP/s] triples
PeaksRecord = msgspec.defstruct(
    "PeaksRecord",
    [(f.name, list[tuple[str, str, float]] if f.name == "flops_per_s" else _PEAK_HINTS[f.name])
     for f in dataclasses.fields(DevicePeaks)],
    frozen=True,
)


class PeakChoiceRecord(msgspec.Struct, frozen=True):
    """`PeakChoice` as JSON."""

    rank: int
    device: int
    peaks: PeaksRecord | None  # type: ignore[valid-type]
    source: str
    device_name: str | None


class RankScalars(msgspec.Struct, frozen=True):
    """Every field of a `RankReport` that is not a frame (its `source` aside: the path as given
    now), with its type."""

    rank: int
    world_size: int | None
    has_gpu: bool
    notes: tuple[str, ...]
    peaks: tuple[PeakChoiceRecord, ...]
    summary: Summary
    small_kernel_summary: SmallKernelSummary
    device_family: str
    rank_source: str
    job_identity: tuple[tuple[str, str], ...] = ()


class ResultsKey(msgspec.Struct, frozen=True):
    """What an entry was made from; the entry is used only when all of it is equal now."""

    tables: tables_cache.EntryKey  # the trace file, our version and the tables' fingerprint
    analyses: str  # `fingerprint`
    options: str  # `options_digest`

    def entry_name(self) -> str:
        """One per path, version, code and options, so that a stale entry is replaced."""
        named = msgspec.json.encode([self.tables.path, self.tables.version, self.tables.include_python,
                                     self.tables.include_flows, self.analyses, self.options])
        return hashlib.sha256(named).hexdigest()[:40] + SUFFIX


class ResultsHeader(msgspec.Struct, frozen=True):
    key: ResultsKey
    event_count: int  # the trace file's events (`RankMeta.event_count`): `LoadLimits.events` still applies
    op_depth: int  # how deep its CPU ops nest (1: no op inside another; 0: none): `LoadLimits.op_depth` still applies
    scalars: RankScalars
    frames: list[FrameEntry]


@functools.cache
def frame_fields() -> tuple[str, ...]:
    """The `RankReport` fields that are polars frames."""
    hints = typing.get_type_hints(RankReport)
    return tuple(f.name for f in dataclasses.fields(RankReport) if hints[f.name] is pl.DataFrame)


def fingerprint() -> str:
    """A digest of everything an entry depends on besides the file and the options: the tables'
    version (`load.cache.cache_version`: their schemas and the loader's code), the polars, numpy
    and msgspec versions, `FORMAT`, the fields of `RankReport`, and the code that computes the
    analyses (`analysis_code`), so that a change to any of them makes older entries misses."""
    import numpy

    described = [FORMAT, tables_cache.cache_version(), pl.__version__, numpy.__version__, msgspec.__version__,
                 [f.name for f in dataclasses.fields(RankReport)]]
    return cache_files.files_digest(described, analysis_code())


def analysis_code() -> list[Path]:
    """The files whose content decides what `rank_report` gives (besides the loader's, in the
    tables' version): every analysis, the replay (`whatif`), the report model and every module it imports, and this
    module (tests/report/test_results_cache.py walks the imports to check the list)."""
    package = Path(model.__file__).parent
    report, renderers = package / "report", package / "renderers"
    found = [*(package / "analysis").rglob("*.py"), *(package / "whatif").rglob("*.py"),
             package / "errors.py", package / "version.py", package / "config_files.py",
             package / "units.py", package / "figures.py", Path(__file__), Path(__file__).with_name("rank.py"),
             Path(__file__).with_name("identity.py"),
             *(report / name for name in ("model.py", "groups.py", "notes.py", "summaries.py", "verdict.py",
                                          "chart_inputs.py", "schema.py", "views.py")),
             *(renderers / name for name in ("escape.py", "blocks.py", "html_text.py", "svg.py",
                                             "verdict_text.py", "verdict_document.py")),
             *(renderers / "plots").rglob("*.py")]
    return sorted(path for path in found if path.is_file())


@functools.cache
def analyses_version() -> str:
    """The `fingerprint`, computed once per process, when the first file worth caching is analysed."""
    return fingerprint()


def options_digest(options: ReportOptions) -> str | None:
    """A digest of every `ReportOptions` field but `NOT_ANALYSED`, through every dataclass
    inside (a device file is its content, as read: every figure, name and link), or None when
    one holds a value it cannot describe exactly (then nothing is cached)."""
    analysed = {f.name: getattr(options, f.name) for f in dataclasses.fields(options)
                if f.name not in NOT_ANALYSED}
    try:
        return hashlib.sha256(msgspec.json.encode(_described(analysed))).hexdigest()
    except TypeError:
        return None


def _described(value: object) -> object:
    """`value` as JSON that tells apart whatever `==` does: types tagged, floats exact, mappings
    in a fixed order."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return ["int", value]
    if isinstance(value, float):
        return ["float", value.hex()]
    if isinstance(value, Path):
        return ["path", str(value)]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [type(value).__qualname__,
                {f.name: _described(getattr(value, f.name)) for f in dataclasses.fields(value)}]
    if isinstance(value, Mapping):
        return ["mapping",
                sorted(msgspec.json.encode([_described(k), _described(v)]).decode() for k, v in value.items())]
    if isinstance(value, (tuple, list)):
        return [type(value).__name__, [_described(item) for item in value]]
    raise TypeError(f"no exact description of {type(value).__name__}")


def results_key(path: Path, options: ReportOptions) -> ResultsKey | None:
    """The key of `path` analysed with `options` now, or None when it is not to be cached (the
    cache of loaded tables would not cache the file: `load.cache.entry_key`)."""
    tables = tables_cache.entry_key(path, include_python=False, include_flows=False)
    digest = options_digest(options)
    if tables is None or digest is None:
        return None
    return ResultsKey(tables=tables, analyses=analyses_version(), options=digest)


@functools.cache
def frame_schemas() -> dict[str, pl.Schema]:
    """The schema `rank_report` gives each frame: those of a trace with no events (what columns
    a frame has does not depend on the data; tests check it on every real trace). Computed once
    per process, when the first entry is read."""
    empty = {name: model.empty(schema) for name, schema in tables_cache.TABLE_SCHEMAS.items() if name != "python"}
    probe = Trace(**empty, meta=(RankMeta(rank=0, source=Path("no events"), rank_source="default"),))
    analysed = rank_report(probe, ReportOptions())
    return {name: getattr(analysed, name).schema for name in frame_fields()}


def read_results(directory: Path, key: ResultsKey, source: Path, *, max_events: int,
                 max_op_depth: int) -> RankReport | None:
    """The `RankReport` the entry for `key` holds (its `source` set to `source`, the path as
    given now), or None when there is none, it is stale, truncated or corrupt, or the file has
    more events than `max_events` or ops nested deeper than `max_op_depth` (the loader then
    refuses it as it would without a cache)."""
    return cache_files.read_entry_file(directory, key.entry_name(),
                                       lambda handle: _read(handle, key, source, max_events, max_op_depth))


def write_results(directory: Path, key: ResultsKey, report: RankReport, *, event_count: int,
                  op_depth: int) -> None:
    """Write the entry for `key` (whole or not at all; then the folder's bound), unless some
    field of `report` would not come back exactly (one debug line)."""
    scalars = rank_scalars(report)
    if scalars is None:
        log.debug("results cache: %s not cached: a field would not come back exactly", key.tables.path)
        return
    frames = {name: getattr(report, name) for name in frame_fields()}
    cache_files.write_entry_file(
        directory, key.entry_name(),
        write=lambda handle: cache_files.write_frames(
            handle, MAGIC, frames,
            lambda entries: ResultsHeader(key=key, event_count=event_count, op_depth=op_depth,
                                           scalars=scalars, frames=entries),
            COMPRESSION))


def analysed_rank(path: Path, options: ReportOptions, load: Callable[[], Trace], *, cache: CacheSetting,
                  max_events: int, max_op_depth: int) -> RankReport:
    """`rank_report(load(), options)` for the rank file `path` (`load` reads it: through the
    cache of loaded tables, or parsing it), or the cached result when an entry matches; a new
    result is cached unless the file changed meanwhile. `cache` as `load.load_trace`'s."""
    looked_up = cached_report(path, options, cache=cache, max_events=max_events, max_op_depth=max_op_depth)
    if looked_up.report is not None:
        return looked_up.report
    trace = load()
    report = rank_report(trace, options)
    sizes = trace_sizes(trace)
    del trace  # the tables are freed before the frames are compressed and written, not held beside them
    store_report(looked_up, report, options, sizes)
    return report


@dataclasses.dataclass(frozen=True)
class LookedUp:
    """A rank file looked up in the cache of analysed ranks: its entry's folder and key (None:
    not cached) and the `RankReport` found there (None: none yet)."""

    path: Path
    directory: Path | None
    key: ResultsKey | None
    report: RankReport | None


def cached_report(path: Path, options: ReportOptions, *, cache: CacheSetting, max_events: int,
                  max_op_depth: int) -> LookedUp:
    """The cached `RankReport` of `path` analysed with `options`, if an entry matches."""
    directory = cache_files.cache_directory(cache)
    key = None if directory is None else results_key(path, options)
    report = None
    if directory is not None and key is not None:
        report = read_results(directory, key, path, max_events=max_events, max_op_depth=max_op_depth)
    return LookedUp(path=path, directory=directory, key=key, report=report)


def trace_sizes(trace: Trace) -> tuple[int, int]:
    """What a cache entry records of the trace it was analysed from, to apply the load limits
    when it is read: its event count and how deep its ops nest."""
    deepest = trace.cpu_ops["depth"].max() if trace.cpu_ops.height else None
    return trace.meta[0].event_count, 0 if deepest is None else int(deepest) + 1  # type: ignore[arg-type]


def store_report(looked_up: LookedUp, report: RankReport, options: ReportOptions, sizes: tuple[int, int]) -> None:
    """Cache `report`, the analysis of the trace loaded from `looked_up.path` (`sizes`:
    `trace_sizes` of it), unless the file changed since it was looked up."""
    if looked_up.directory is None or looked_up.key is None or results_key(looked_up.path, options) != looked_up.key:
        return
    event_count, op_depth = sizes
    write_results(looked_up.directory, looked_up.key, report, event_count=event_count, op_depth=op_depth)


def rank_scalars(report: RankReport) -> RankScalars | None:
    """`report`'s fields that are not frames, or None when they do not come back from JSON as
    they are (a NaN, an int where a float is declared, a field this module does not know)."""
    # `charts` is None from `rank_report` (what the HTML draws: from the frames, or `model.bounded`)
    known = {*frame_fields(), *RankScalars.__struct_fields__, "source", "charts"}
    if known != {f.name for f in dataclasses.fields(RankReport)} or report.charts is not None:
        return None
    try:
        scalars = RankScalars(
            rank=report.rank, world_size=report.world_size, has_gpu=report.has_gpu, notes=report.notes,
            peaks=tuple(PeakChoiceRecord(rank=c.rank, device=c.device, source=c.source, device_name=c.device_name,
                                         peaks=None if c.peaks is None else _peaks_record(c.peaks))
                        for c in report.peaks),
            summary=report.summary, small_kernel_summary=report.small_kernel_summary,
            device_family=report.device_family, rank_source=report.rank_source, job_identity=report.job_identity)
        encoded = msgspec.json.encode(scalars)
        back = msgspec.json.decode(encoded, type=RankScalars)
    except (TypeError, ValueError, msgspec.MsgspecError):
        return None
    if msgspec.json.encode(back) != encoded or _fields(back) != {name: getattr(report, name) for name in _fields(back)}:
        return None
    return scalars


def _peaks_record(peaks: DevicePeaks) -> Any:
    values = {f.name: getattr(peaks, f.name) for f in dataclasses.fields(peaks)}
    values["flops_per_s"] = [(dtype, unit, flops) for (dtype, unit), flops in peaks.flops_per_s.items()]
    return PeaksRecord(**values)


def _fields(scalars: RankScalars) -> dict[str, Any]:
    """The `RankReport` fields `scalars` stands for."""
    values = {name: getattr(scalars, name) for name in RankScalars.__struct_fields__}
    values["peaks"] = tuple(
        PeakChoice(rank=c.rank, device=c.device, source=c.source, device_name=c.device_name,
                   peaks=None if c.peaks is None else rebuild_peaks(
                       {**msgspec.structs.asdict(c.peaks),
                        "flops_per_s": {(dtype, unit): flops for dtype, unit, flops in c.peaks.flops_per_s}}))
        for c in scalars.peaks)
    return values


def _read(handle: BinaryIO, key: ResultsKey, source: Path, max_events: int, max_op_depth: int) -> RankReport | None:
    header = cache_files.read_header(handle, MAGIC, ResultsHeader)
    if header is None or header.key != key or header.event_count > max_events or header.op_depth > max_op_depth:
        return None
    if sorted(frame.name for frame in header.frames) != sorted(frame_fields()):
        return None
    frames = cache_files.read_frames(handle, header.frames, frame_schemas())
    if frames is None:
        return None
    return RankReport(source=source, **frames, **_fields(header.scalars))
