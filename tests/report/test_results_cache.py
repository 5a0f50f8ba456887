"""The cache of analysed ranks (`pipeline/results_cache.py`, docs/cache.md): a rank file analysed
before with the same analysis options is neither parsed nor analysed again, and what comes back
renders to the same bytes in every format; another option, device file content, code or file is a
miss; a damaged entry is a miss, recomputed and rewritten, never trusted."""

from __future__ import annotations

import dataclasses
import json
import math
import os
from pathlib import Path

import msgspec
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from builder import TraceBuilder
from entry_damage import damages
from import_rules import import_graph, package_modules
from shared_traces import SHARED_TRACES_DIR, real_trace_paths, trace_id
from traceanalyze import cache_files
from traceanalyze.analysis.devices import load_device_file
from traceanalyze.analysis.roofline import PeakOverrides
from traceanalyze.api import analyze
from traceanalyze.load import cache as tables_cache
from traceanalyze.load import load_file, load_trace
from traceanalyze.load.limits import LimitError, LoadLimits
from traceanalyze.pipeline import results_cache
from traceanalyze.renderers.formats import RENDERERS
from traceanalyze.report.model import RankReport, ReportOptions
from traceanalyze.pipeline.rank import rank_report
from traceanalyze import RunOptions

PACKAGE = Path(results_cache.__file__).resolve().parents[1]


def write_trace(path: Path, kernels: int = 4) -> Path:
    """Two steps, kernels inside and after them (the `steps` window differs from `activity`)."""
    builder = TraceBuilder()
    builder.step(0, 0, 60)
    builder.step(1, 60, 60)
    for i in range(kernels):
        op = builder.cpu_op("aten::mm", 1 + 30 * i, 8, input_dims=[[64, 64], [64, 64]], input_types=["float", "float"])
        builder.kernel(builder.launch(2 + 30 * i, 3, external_id=op), 6 + 30 * i, 4 + i)
    return builder.write(path)


def write_device_file(path: Path, bandwidth: float) -> Path:
    path.write_text(json.dumps({"format": "traceanalyze-device", "version": 1,
                                "memory_bandwidth_bytes_per_s": bandwidth,
                                "default_flops_per_s": 1e12}))
    return path


def results_entries(folder: Path) -> list[Path]:
    return sorted(folder.glob("*" + results_cache.SUFFIX))


def rendered(report) -> dict[str, str]:
    return {name: render(report) for name, render in RENDERERS.items()}


def assert_same_rank(got: RankReport, expected: RankReport) -> None:
    for field in dataclasses.fields(RankReport):
        value, wanted = getattr(got, field.name), getattr(expected, field.name)
        if isinstance(wanted, pl.DataFrame):
            assert_frame_equal(value, wanted, check_exact=True)
        else:
            assert value == wanted, field.name


def analysed(path: Path, folder: Path, options: ReportOptions = ReportOptions(),
             limits: LoadLimits = LoadLimits()) -> RankReport:
    return results_cache.analysed_rank(path, options, lambda: load_trace(path, cache=folder, limits=limits),
                                       cache=folder, max_events=limits.events,
                                       max_op_depth=limits.op_depth)


# --- hits ----------------------------------------------------------------------------------------

def test_a_second_analysis_reads_the_result(tmp_path, cache_everything, analyses, parses):
    path, folder = write_trace(tmp_path / "t.json"), tmp_path / "cache"
    first = analyze(path, run=RunOptions(cache=folder))
    assert analyses == [path] and parses == [path] and len(results_entries(folder)) == 1
    second = analyze(path, run=RunOptions(cache=folder))
    assert analyses == [path] and parses == [path]  # neither parsed nor analysed
    assert rendered(second) == rendered(first) == rendered(analyze(path, run=RunOptions(cache=False)))
    assert_same_rank(second.ranks[0], first.ranks[0])


def test_the_source_is_the_path_as_given_now(tmp_path, cache_everything, analyses, monkeypatch):
    path, folder = write_trace(tmp_path / "t.json"), tmp_path / "cache"
    analyze(path, run=RunOptions(cache=folder))
    monkeypatch.chdir(tmp_path)
    again = analyze("t.json", run=RunOptions(cache=folder))
    assert len(analyses) == 1 and again.ranks[0].source == Path("t.json") and again.source == Path("t.json")


def test_cache_false_neither_reads_nor_writes_either_level(tmp_path, cache_everything, analyses, parses):
    path, folder = write_trace(tmp_path / "t.json"), tmp_path / "cache"
    analyze(path, run=RunOptions(cache=folder))
    written = {entry: entry.stat().st_mtime_ns for entry in folder.iterdir()}
    analyze(path, run=RunOptions(cache=False))
    assert len(analyses) == 2 and len(parses) == 2
    assert {entry: entry.stat().st_mtime_ns for entry in folder.iterdir()} == written


def test_small_traces_are_not_cached_by_default(tmp_path, analyses):
    path, folder = write_trace(tmp_path / "t.json"), tmp_path / "cache"
    analyze(path, run=RunOptions(cache=folder))
    analyze(path, run=RunOptions(cache=folder))
    assert len(analyses) == 2 and not folder.exists()


def test_a_folder_of_ranks_caches_each_rank(tmp_path, cache_everything, analyses):
    (ranks := tmp_path / "ranks").mkdir()
    files = [write_trace(ranks / f"rank{i}.json", kernels=2 + i) for i in range(3)]
    first = analyze(ranks, run=RunOptions(cache=tmp_path / "cache", workers=1))
    assert sorted(analyses) == files and len(results_entries(tmp_path / "cache")) == 3
    write_trace(files[1], kernels=6)  # one rank changes: only it is analysed again
    second = analyze(ranks, run=RunOptions(cache=tmp_path / "cache", workers=1))
    assert analyses[3:] == [files[1]] and second.ranks[1].roofline.height == 6
    assert rendered(second) == rendered(analyze(ranks, run=RunOptions(cache=False, workers=1))) != rendered(first)


# --- what the key holds --------------------------------------------------------------------------

OTHER_OPTIONS = {
    "window": ReportOptions(window="steps"),
    "min_small_kernel_run": ReportOptions(min_small_kernel_run=2),
    "peak figures": ReportOptions(peaks=PeakOverrides(peak_flops=1e12, peak_bandwidth=1e11)),
    "peak flops only": ReportOptions(peaks=PeakOverrides(peak_flops=1e12)),
    "force_device_file": ReportOptions(peaks=PeakOverrides(force_device_file=True)),
    "skip_steps": ReportOptions(skip_steps=1),
}


@pytest.mark.parametrize("name", OTHER_OPTIONS)
def test_options_that_change_the_analyses_are_in_the_key(name, tmp_path, cache_everything, analyses):
    path, folder, options = write_trace(tmp_path / "t.json"), tmp_path / "cache", OTHER_OPTIONS[name]
    analysed(path, folder)
    got = analysed(path, folder, options)
    assert len(analyses) == 2  # another option: analysed again …
    assert_same_rank(got, rank_report(load_file(path), options))
    assert_same_rank(analysed(path, folder, options), got)
    assert_same_rank(analysed(path, folder), rank_report(load_file(path), ReportOptions()))
    assert len(analyses) == 2  # … and each result kept beside the other


@pytest.mark.parametrize("options", [ReportOptions(max_gaps=1), ReportOptions(details=True),
                                     ReportOptions(rank_frames="bounded"), ReportOptions(analysis_threads=1)],
                         ids=["max_gaps", "details", "rank_frames", "analysis_threads"])
def test_options_only_the_renderers_read_are_not(options, tmp_path, cache_everything, analyses):
    path, folder = write_trace(tmp_path / "t.json"), tmp_path / "cache"
    analysed(path, folder)
    assert_same_rank(analysed(path, folder, options), rank_report(load_file(path), options))
    assert len(analyses) == 1


def test_every_option_rank_report_reads_changes_the_digest():
    """A new `ReportOptions` field lands in the key by itself; this list must then name a value
    of it that `rank_report` reads, or `NOT_ANALYSED` the field."""
    other = {"window": "steps", "min_small_kernel_run": 3, "peaks": PeakOverrides(peak_flops=1.0), "skip_steps": 1,
             "max_gaps": 3, "details": True, "rank_frames": "bounded", "analysis_threads": 1}
    assert set(other) == {f.name for f in dataclasses.fields(ReportOptions)}
    default = results_cache.options_digest(ReportOptions())
    for name, value in other.items():
        changed = results_cache.options_digest(dataclasses.replace(ReportOptions(), **{name: value}))
        assert (changed == default) == (name in results_cache.NOT_ANALYSED), name
    for name, value in {"peak_flops": 1.0, "peak_bandwidth": 1.0, "force_device_file": True,
                        "device_file_name": "d.json"}.items():
        peaks = PeakOverrides(**{name: value})
        assert results_cache.options_digest(ReportOptions(peaks=peaks)) != default, name
    assert results_cache.options_digest(ReportOptions(min_small_kernel_run=True)) != \
        results_cache.options_digest(ReportOptions(min_small_kernel_run=1))  # types told apart


def test_the_options_left_out_do_not_change_what_rank_report_gives(tmp_path):
    trace = load_file(write_trace(tmp_path / "t.json"))
    plain = rank_report(trace, ReportOptions())
    for name in results_cache.NOT_ANALYSED:
        value = {"max_gaps": 1, "details": True, "rank_frames": "bounded", "analysis_threads": 1}[name]
        assert_same_rank(rank_report(trace, dataclasses.replace(ReportOptions(), **{name: value})), plain)


def test_a_device_file_is_keyed_by_its_content(tmp_path, cache_everything, analyses):
    path, folder = write_trace(tmp_path / "t.json"), tmp_path / "cache"
    device = write_device_file(tmp_path / "device.json", 1e11)

    def with_device() -> RankReport:
        peaks = PeakOverrides(device_file=load_device_file(device), device_file_name=str(device))
        return analysed(path, folder, ReportOptions(peaks=peaks))

    slow = with_device()
    write_device_file(device, 2e11)  # same path, other content
    fast = with_device()
    assert len(analyses) == 2
    assert set(slow.roofline["peak_bytes_per_s"].drop_nulls()) == {1e11}
    assert set(fast.roofline["peak_bytes_per_s"].drop_nulls()) == {2e11}
    write_device_file(device, 1e11)  # the first content again: its result is still there
    os.utime(device, (1_000_000, 1_000_000))
    assert_same_rank(with_device(), slow)
    assert len(analyses) == 2


def test_a_touched_trace_is_analysed_again(tmp_path, cache_everything, analyses, parses):
    path, folder = write_trace(tmp_path / "t.json"), tmp_path / "cache"
    analyze(path, run=RunOptions(cache=folder))
    status = path.stat()
    os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns + 1_000_000_000))
    analyze(path, run=RunOptions(cache=folder))
    assert len(analyses) == 2 and len(parses) == 2
    assert len(results_entries(folder)) == 1  # the stale entry was replaced, not kept
    analyze(path, run=RunOptions(cache=folder))
    assert len(analyses) == 2


def test_a_file_changed_while_it_is_analysed_is_not_cached(tmp_path, cache_everything, monkeypatch):
    path, folder = write_trace(tmp_path / "t.json"), tmp_path / "cache"
    real = results_cache.rank_report

    def changing(trace, options):
        status = path.stat()
        os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns + 1))
        return real(trace, options)

    results_cache.frame_schemas()
    monkeypatch.setattr(results_cache, "rank_report", changing)
    analyze(path, run=RunOptions(cache=folder))
    assert not results_entries(folder)


def test_a_code_change_is_a_miss(tmp_path, cache_everything, analyses, monkeypatch):
    path, folder = write_trace(tmp_path / "t.json"), tmp_path / "cache"
    analyze(path, run=RunOptions(cache=folder))
    monkeypatch.setattr(results_cache, "analyses_version", lambda: "changed code")
    analyze(path, run=RunOptions(cache=folder))
    assert len(analyses) == 2
    analyze(path, run=RunOptions(cache=folder))
    assert len(analyses) == 2


def test_the_fingerprint_follows_the_analyses_code_and_the_tables_version(tmp_path, monkeypatch):
    before = results_cache.fingerprint()
    code = results_cache.analysis_code()
    idle = PACKAGE / "analysis" / "idle.py"
    assert idle in code and PACKAGE / "report" / "model.py" in code
    changed = tmp_path / "idle.py"
    changed.write_text(idle.read_text() + "\n# changed\n")
    monkeypatch.setattr(results_cache, "analysis_code", lambda: [changed if p == idle else p for p in code])
    assert results_cache.fingerprint() != before
    monkeypatch.undo()
    monkeypatch.setattr(tables_cache, "cache_version", lambda: "0.0.1+0000000000000000")
    assert results_cache.fingerprint() != before


def test_the_fingerprint_covers_every_module_rank_report_imports():
    """Everything `report.model` imports, however indirectly, is in the analyses' code or in the
    tables' (the loader's) code: a module it comes to call changes the fingerprint."""
    modules = package_modules(PACKAGE, ("traceanalyze._native",))
    graph, _ = import_graph(modules)
    reached, todo = set(), ["traceanalyze.report.model", "traceanalyze.pipeline.results_cache"]
    while todo:
        module = todo.pop()
        if module not in reached:
            reached.add(module)
            todo.extend(edge.target for edge in graph.get(module, ()))
    covered = {path.resolve() for path in [*results_cache.analysis_code(), *tables_cache._loader_code()]}
    files = {module: modules[module] for module in reached if modules.get(module) is not None}
    assert {m for m, path in files.items() if path.resolve() not in covered} == set()
    assert len(files) > 40  # the walk went deep: every analysis


# --- damaged or untrustworthy entries --------------------------------------------------------------

DAMAGE = damages(results_cache.MAGIC)


@pytest.mark.parametrize("damage", DAMAGE, ids=list(DAMAGE))
def test_a_damaged_entry_is_recomputed_and_rewritten(damage, tmp_path, cache_everything, analyses):
    path, folder = write_trace(tmp_path / "t.json", kernels=30), tmp_path / "cache"
    first = analyzed = analyze(path, run=RunOptions(cache=folder))
    [entry] = results_entries(folder)
    DAMAGE[damage](entry)
    analyzed = analyze(path, run=RunOptions(cache=folder))
    assert len(analyses) == 2 and rendered(analyzed) == rendered(first)
    assert_same_rank(analyze(path, run=RunOptions(cache=folder)).ranks[0],
                     first.ranks[0])  # rewritten: read back, not analysed
    assert len(analyses) == 2


def _key_and_report(path: Path) -> tuple[results_cache.ResultsKey, RankReport]:
    key = results_cache.results_key(path, ReportOptions())
    assert key is not None
    return key, rank_report(load_file(path), ReportOptions())


def test_a_wrong_schema_is_a_miss_even_when_the_checksums_hold(tmp_path, cache_everything):
    path, folder = write_trace(tmp_path / "t.json"), tmp_path / "cache"
    key, report = _key_and_report(path)
    gaps = report.gaps
    for wrong in (gaps.with_columns(pl.col("duration_ns").cast(pl.Float64)), gaps.drop("cause"),
                  gaps.with_columns(pl.col("cause").cast(pl.String)), gaps.select(reversed(gaps.columns))):
        results_cache.write_results(folder, key, dataclasses.replace(report, gaps=wrong), event_count=1, op_depth=1)
        assert results_entries(folder) and results_cache.read_results(folder, key, path, max_events=10,
                                                                        max_op_depth=10) is None
    results_cache.write_results(folder, key, report, event_count=1, op_depth=1)
    assert_same_rank(results_cache.read_results(folder, key, path, max_events=10, max_op_depth=10), report)


def _write_header(folder: Path, key, report: RankReport, frames: dict[str, pl.DataFrame], scalars) -> None:
    cache_files.write_entry_file(folder, key.entry_name(), lambda handle: cache_files.write_frames(
        handle, results_cache.MAGIC, frames,
        lambda entries: results_cache.ResultsHeader(key=key, event_count=1, op_depth=1, scalars=scalars,
                                                    frames=entries),
        results_cache.COMPRESSION))


def test_a_missing_frame_or_a_field_of_the_wrong_type_is_a_miss(tmp_path, cache_everything):
    path, folder = write_trace(tmp_path / "t.json"), tmp_path / "cache"
    key, report = _key_and_report(path)
    frames = {name: getattr(report, name) for name in results_cache.frame_fields()}
    scalars = results_cache.rank_scalars(report)
    assert scalars is not None
    _write_header(folder, key, report, frames, scalars)  # as write_results does: read back
    assert results_cache.read_results(folder, key, path, max_events=10, max_op_depth=10) is not None
    _write_header(folder, key, report, {n: f for n, f in frames.items() if n != "findings"}, scalars)
    assert results_cache.read_results(folder, key, path, max_events=10,
                                                                        max_op_depth=10) is None
    for wrong in (dict(rank="0"), dict(notes=[1]), dict(has_gpu=1), dict(summary={"window": None})):
        _write_header(folder, key, report, frames, msgspec.structs.replace(scalars, **wrong))
        assert results_cache.read_results(folder, key, path, max_events=10, max_op_depth=10) is None, wrong


def test_the_entry_of_another_file_or_options_is_not_taken(tmp_path, cache_everything, analyses):
    one, other, folder = write_trace(tmp_path / "one.json",
                                     3), write_trace(tmp_path / "other.json", 5), tmp_path / "cache"
    analysed(one, folder)
    analysed(other, folder)
    analysed(one, folder, ReportOptions(window="steps"))
    key, other_key = results_cache.results_key(one, ReportOptions()), results_cache.results_key(other, ReportOptions())
    steps_key = results_cache.results_key(one, ReportOptions(window="steps"))
    os.replace(folder / other_key.entry_name(), folder / key.entry_name())
    assert analysed(one, folder).roofline.height == 3
    os.replace(folder / steps_key.entry_name(), folder / key.entry_name())
    assert_same_rank(analysed(one, folder), rank_report(load_file(one), ReportOptions()))
    assert len(analyses) == 5


def test_fields_that_would_not_come_back_exactly_are_not_cached(tmp_path, cache_everything):
    path, folder = write_trace(tmp_path / "t.json"), tmp_path / "cache"
    key, report = _key_and_report(path)
    summary = report.summary
    for odd in (dataclasses.replace(summary, window=dataclasses.replace(summary.window, idle_fraction=math.nan)),
                dataclasses.replace(summary, window=dataclasses.replace(summary.window, device_windows=1.0))):
        results_cache.write_results(folder, key, dataclasses.replace(report, summary=odd), event_count=1, op_depth=1)
        assert not results_entries(folder)


def test_an_entry_beyond_the_event_limit_is_refused_as_the_file_would_be(tmp_path, cache_everything):
    path, folder = write_trace(tmp_path / "t.json"), tmp_path / "cache"
    analyze(path, run=RunOptions(cache=folder))
    with pytest.raises(LimitError, match="--max-events"):
        analyze(path, run=RunOptions(cache=folder, limits=LoadLimits(events=3)))


def test_the_bound_counts_both_levels(tmp_path):
    for name in ("a" + tables_cache.SUFFIX, "b" + results_cache.SUFFIX):
        (tmp_path / name).write_bytes(b"x" * 1000)
    cache_files.evict(tmp_path, max_bytes=1500)
    assert len(list(tmp_path.iterdir())) == 1
    cache_files.evict(tmp_path, max_bytes=0)
    assert not list(tmp_path.iterdir())


# --- every real trace: a hit renders to the same bytes ---------------------------------------------

DLRM = SHARED_TRACES_DIR / "param_v100_dlrm_4ranks"
REAL_INPUTS = [*real_trace_paths(), *([DLRM] if DLRM.is_dir() else [])]


@pytest.fixture(scope="module")
def real_outcomes(tmp_path_factory) -> dict[Path, tuple[dict[str, str], dict[str, str], int, list]]:
    """Per real input: every format of its report computed (the first run: parsed and analysed,
    both levels written), every format of the second run (from the cache of analysed ranks), the
    ranks the second run analysed, and the frames whose schema differs from `frame_schemas`."""
    outcomes = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tables_cache, "MIN_TRACE_BYTES", 0)
        results_cache.frame_schemas()
        calls: list[Path] = []
        real = results_cache.rank_report
        patch.setattr(results_cache, "rank_report", lambda trace, options: calls.append(trace.source)
                      or real(trace, options))
        for path in REAL_INPUTS:
            folder = tmp_path_factory.mktemp("results")
            first = analyze(path, run=RunOptions(cache=folder, workers=1))
            calls.clear()
            second = analyze(path, run=RunOptions(cache=folder, workers=1))
            schemas = [(rank.rank, name) for rank in first.ranks for name in results_cache.frame_fields()
                       if getattr(rank, name).schema != results_cache.frame_schemas()[name]]
            outcomes[path] = (rendered(first), rendered(second), len(calls), schemas)
    return outcomes


@pytest.mark.parametrize("path", [pytest.param(p, id=trace_id(p)) for p in REAL_INPUTS] or
                         [pytest.param(None, marks=pytest.mark.skip(reason="real traces not found"))])
def test_a_real_trace_from_the_cache_renders_as_computed(path, real_outcomes):
    computed, cached, analysed_again, odd_schemas = real_outcomes[path]
    assert odd_schemas == []  # every frame has the schema read back against
    assert analysed_again == 0  # the second run was a hit for every rank
    assert cached == computed  # terminal, JSON, Markdown and HTML, byte for byte
