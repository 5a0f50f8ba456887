"""The cache of loaded traces (`load/cache.py`, docs/cache.md): an entry is used only when it is
whole and made from the same file, version and options; anything else is a miss and is rebuilt;
a cache that cannot be written is no cache, never an error."""

from __future__ import annotations

import dataclasses
import logging
import os
import time
from pathlib import Path

import msgspec
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from builder import TraceBuilder
from entry_damage import damages
from shared_traces import SHARED_TRACES_DIR, real_trace_params
from traceanalyze import cache_files
from traceanalyze import load as load_package
from traceanalyze.load import cache, load_file, load_trace
from traceanalyze.load.limits import LimitError, LoadLimits
from traceanalyze.model import Trace

TABLES = ("gpu", "runtime", "cpu_ops", "steps", "flows", "sync", "devices", "skipped", "python")


def write_trace(path: Path, kernels: int = 3) -> Path:
    builder = TraceBuilder()
    builder.step(0, 0, 100)
    for i in range(kernels):
        op = builder.cpu_op("aten::mm", 1 + 10 * i, 8)
        builder.kernel(builder.launch(2 + 10 * i, 3, external_id=op), 5 + 10 * i, 4)
    return builder.write(path)


def assert_same_trace(got: Trace, expected: Trace) -> None:
    for table in TABLES:
        if getattr(expected, table) is None:
            assert getattr(got, table) is None
        else:
            assert_frame_equal(getattr(got, table), getattr(expected, table), check_exact=True)
    assert got.meta == expected.meta


def entries(folder: Path) -> list[Path]:
    return sorted(folder.glob("*" + cache.SUFFIX))


# --- hits and misses ---------------------------------------------------------------------------

def test_a_second_load_reads_the_entry(tmp_path, cache_everything, parses):
    path, folder = write_trace(tmp_path / "t.json"), tmp_path / "cache"
    first = load_trace(path, cache=folder)
    assert parses == [path] and len(entries(folder)) == 1
    second = load_trace(path, cache=folder)
    assert parses == [path]
    assert_same_trace(second, first)
    assert_same_trace(second, load_file(path))


@pytest.mark.parametrize("path", real_trace_params())
def test_every_table_and_the_meta_come_back_exactly(path, tmp_path):
    """Every real trace, with the optional tables kept: what is read back is what was parsed."""
    parsed = load_file(path, include_python=True, include_flows=True)
    key = cache.entry_key(path, include_python=True, include_flows=True, min_bytes=0)
    assert key is not None
    cache.write_entry(tmp_path, key, parsed)
    back = cache.read_entry(tmp_path, key, path)
    assert back is not None
    assert_same_trace(back, parsed)
    assert all(getattr(back, t).n_chunks() == 1 for t in TABLES)  # one chunk, as the parse makes them


def test_the_meta_names_the_path_as_given_now(tmp_path, cache_everything, parses, monkeypatch):
    path, folder = write_trace(tmp_path / "t.json"), tmp_path / "cache"
    load_trace(path, cache=folder)
    monkeypatch.chdir(tmp_path)
    again = load_trace("t.json", cache=folder)
    assert len(parses) == 1 and again.meta[0].source == Path("t.json")


def test_options_that_change_the_tables_are_part_of_the_key(tmp_path, cache_everything, parses):
    path, folder = write_trace(tmp_path / "t.json"), tmp_path / "cache"
    without = load_trace(path, cache=folder)
    with_flows = load_trace(path, cache=folder, include_flows=True)
    with_python = load_trace(path, cache=folder, include_python=True)
    assert len(parses) == 3 and len(entries(folder)) == 3
    assert without.flows.height == 0 < with_flows.flows.height and with_python.python is not None
    load_trace(path, cache=folder, limits=LoadLimits(inflation=50.0))  # limits do not change the tables
    assert_same_trace(load_trace(path, cache=folder, include_flows=True), with_flows)
    assert len(parses) == 3


def test_small_traces_are_not_cached_by_default(tmp_path, parses):
    path, folder = write_trace(tmp_path / "t.json"), tmp_path / "cache"
    load_trace(path, cache=folder)
    load_trace(path, cache=folder)
    assert len(parses) == 2 and not entries(folder)


def test_cache_false_neither_reads_nor_writes(tmp_path, cache_everything, parses):
    path, folder = write_trace(tmp_path / "t.json"), tmp_path / "cache"
    load_trace(path, cache=folder)
    load_trace(path, cache=False)
    assert len(parses) == 2
    entries(folder)[0].unlink()
    load_trace(path, cache=False)
    assert not entries(folder)


def test_a_folder_of_ranks_caches_each_file(tmp_path, cache_everything, parses):
    ranks, folder = tmp_path / "ranks", tmp_path / "cache"
    ranks.mkdir()
    files = [write_trace(ranks / f"rank{i}.json", kernels=2 + i) for i in range(3)]
    first = load_trace(ranks, cache=folder, workers=1)
    assert sorted(parses) == files and len(entries(folder)) == 3
    write_trace(files[1], kernels=7)  # one rank changes: only it is parsed again
    second = load_trace(ranks, cache=folder, workers=1)
    assert parses[3:] == [files[1]]
    assert second.gpu.filter(pl.col("rank") == 1).height == 7
    assert_frame_equal(second.gpu.filter(pl.col("rank") != 1), first.gpu.filter(pl.col("rank") != 1))
    assert_same_trace(load_trace(ranks, cache=folder, workers=1), load_trace(ranks, cache=False, workers=1))


# --- stale entries -------------------------------------------------------------------------------

def test_a_touched_file_is_parsed_again(tmp_path, cache_everything, parses):
    path, folder = write_trace(tmp_path / "t.json"), tmp_path / "cache"
    load_trace(path, cache=folder)
    status = path.stat()
    os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns + 1_000_000_000))
    load_trace(path, cache=folder)
    assert len(parses) == 2 and len(entries(folder)) == 1  # the stale entry was replaced, not kept
    load_trace(path, cache=folder)
    assert len(parses) == 2


def test_a_file_of_another_size_gives_its_own_tables(tmp_path, cache_everything, parses):
    path, folder = write_trace(tmp_path / "t.json", kernels=3), tmp_path / "cache"
    assert load_trace(path, cache=folder).gpu.height == 3
    write_trace(path, kernels=5)
    assert load_trace(path, cache=folder).gpu.height == 5
    assert len(parses) == 2


def test_another_file_renamed_over_it_is_parsed(tmp_path, cache_everything, parses):
    """Same name, same size, same modification time: another inode (and change time)."""
    path, folder = write_trace(tmp_path / "t.json", kernels=3), tmp_path / "cache"
    load_trace(path, cache=folder)
    other = write_trace(tmp_path / "other.json", kernels=3)
    text = other.read_text().replace("aten::mm", "aten::bm")  # same length, other content
    other.write_text(text)
    status = path.stat()
    os.utime(other, ns=(status.st_atime_ns, status.st_mtime_ns))
    os.replace(other, path)
    assert "aten::bm" in load_trace(path, cache=folder).cpu_ops["name"].to_list()
    assert len(parses) == 2


def test_a_file_changed_while_it_is_parsed_is_not_cached(tmp_path, cache_everything, monkeypatch):
    path, folder = write_trace(tmp_path / "t.json"), tmp_path / "cache"
    real = load_package.load_file

    def changing(file, **options):
        trace = real(file, **options)
        status = file.stat()
        os.utime(file, ns=(status.st_atime_ns, status.st_mtime_ns + 1))
        return trace

    monkeypatch.setattr(load_package, "load_file", changing)
    load_trace(path, cache=folder)
    assert not entries(folder)


def test_an_entry_of_another_version_is_a_miss(tmp_path, cache_everything):
    path, folder = write_trace(tmp_path / "t.json"), tmp_path / "cache"
    key = cache.entry_key(path, include_python=False, include_flows=False)
    assert key is not None and key.version == cache.cache_version()
    older = msgspec.structs.replace(key, version="0.0.1+0000000000000000")
    cache.write_entry(folder, older, load_file(path))
    (folder / older.entry_name()).rename(folder / key.entry_name())
    assert cache.read_entry(folder, key, path) is None


def test_the_version_follows_the_table_schemas_and_the_loader_code(tmp_path, monkeypatch):
    before = cache.fingerprint()
    assert cache.cache_version().endswith("+" + before)
    monkeypatch.setitem(cache.TABLE_SCHEMAS, "gpu", pl.Schema({**cache.TABLE_SCHEMAS["gpu"], "extra": pl.Int8}))
    assert cache.fingerprint() != before
    monkeypatch.undo()
    code = cache._loader_code()
    assert Path(load_package.__file__) in code and Path(cache.__file__) in code
    changed = tmp_path / "model.py"
    changed.write_text(Path(cache.model.__file__).read_text() + "\n# changed\n")
    monkeypatch.setattr(cache, "_loader_code", lambda: [changed if p.name == "model.py" else p for p in code])
    assert cache.fingerprint() != before


# --- damaged entries -----------------------------------------------------------------------------

DAMAGE = damages(cache.MAGIC)


@pytest.mark.parametrize("damage", DAMAGE, ids=list(DAMAGE))
def test_a_damaged_entry_is_ignored_and_rebuilt(damage, tmp_path, cache_everything, parses):
    path, folder = write_trace(tmp_path / "t.json", kernels=60), tmp_path / "cache"
    parsed = load_trace(path, cache=folder)
    [entry] = entries(folder)
    DAMAGE[damage](entry)
    assert_same_trace(load_trace(path, cache=folder), parsed)
    assert len(parses) == 2
    assert_same_trace(load_trace(path, cache=folder), parsed)  # rebuilt: read back, not parsed
    assert len(parses) == 2


def test_the_entry_of_another_file_is_not_taken(tmp_path, cache_everything, parses):
    one, other, folder = write_trace(tmp_path / "one.json",
                                     3), write_trace(tmp_path / "other.json", 5), tmp_path / "cache"
    load_trace(one, cache=folder)
    load_trace(other, cache=folder)
    key = cache.entry_key(one, include_python=False, include_flows=False)
    other_key = cache.entry_key(other, include_python=False, include_flows=False)
    assert key is not None and other_key is not None
    os.replace(folder / other_key.entry_name(), folder / key.entry_name())
    assert load_trace(one, cache=folder).gpu.height == 3
    assert len(parses) == 3


def test_the_schema_is_checked_even_when_the_checksums_hold(tmp_path, cache_everything):
    path, folder = write_trace(tmp_path / "t.json"), tmp_path / "cache"
    key = cache.entry_key(path, include_python=False, include_flows=False)
    parsed = load_file(path)
    for wrong in (parsed.gpu.with_columns(pl.col("duration_ns").cast(pl.Float64)), parsed.gpu.drop("name"),
                  parsed.gpu.with_columns(pl.col("kind").cast(pl.String))):
        cache.write_entry(folder, key, dataclasses.replace(parsed, gpu=wrong))
        assert entries(folder) and cache.read_entry(folder, key, path) is None
    cache.write_entry(folder, key, parsed)
    assert cache.read_entry(folder, key, path) is not None


def test_metadata_that_json_would_change_is_not_cached(tmp_path):
    path = write_trace(tmp_path / "t.json")
    key = cache.entry_key(path, include_python=False, include_flows=False, min_bytes=0)
    parsed = load_file(path)
    odd = dataclasses.replace(parsed, meta=(dataclasses.replace(parsed.meta[0], schema_version=(1, 2)),))
    cache.write_entry(tmp_path / "cache", key, odd)
    assert not entries(tmp_path / "cache")


def test_an_entry_beyond_the_event_limit_is_refused_as_the_file_would_be(tmp_path, cache_everything):
    path, folder = write_trace(tmp_path / "t.json"), tmp_path / "cache"
    load_trace(path, cache=folder)
    with pytest.raises(LimitError, match="--max-events"):
        load_trace(path, cache=folder, limits=LoadLimits(events=3))


def test_a_file_we_may_not_read_is_not_served_from_the_cache(tmp_path, cache_everything, monkeypatch):
    path, folder = write_trace(tmp_path / "t.json"), tmp_path / "cache"
    load_trace(path, cache=folder)
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda file, mode, **kw: str(file) != str(path) and real_access(file, mode, **kw))
    assert cache.entry_key(path, include_python=False, include_flows=False) is None


# --- writing -------------------------------------------------------------------------------------

@pytest.mark.parametrize("where", ["under a file", "a file"])
def test_an_unusable_cache_folder_is_skipped_quietly(where, tmp_path, cache_everything, parses, caplog):
    path = write_trace(tmp_path / "t.json")
    blocker = tmp_path / "blocker"
    blocker.write_text("not a folder")
    folder = blocker / "cache" if where == "under a file" else blocker
    with caplog.at_level(logging.DEBUG, logger=cache_files.__name__):
        first = load_trace(path, cache=folder)
    assert_same_trace(first, load_file(path))
    assert len([r for r in caplog.records if r.name == cache_files.__name__]) == 1
    assert blocker.read_text() == "not a folder"


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="needs a user that permissions apply to")
def test_a_read_only_cache_folder_is_skipped_quietly(tmp_path, cache_everything):
    path, folder = write_trace(tmp_path / "t.json"), tmp_path / "cache"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        assert_same_trace(load_trace(path, cache=folder), load_file(path))
        assert not list(folder.iterdir())
    finally:
        folder.chmod(0o700)


def test_a_failed_write_leaves_nothing_behind(tmp_path, cache_everything, monkeypatch):
    path, folder = write_trace(tmp_path / "t.json"), tmp_path / "cache"
    real_write = pl.DataFrame.write_ipc
    written = []

    def failing(frame, file, **options):
        if written:
            raise OSError(28, "No space left on device")
        written.append(frame)
        return real_write(frame, file, **options)

    monkeypatch.setattr(pl.DataFrame, "write_ipc", failing)
    load_trace(path, cache=folder)
    assert written and not list(folder.iterdir())


def test_entries_are_private_to_their_user(tmp_path, cache_everything):
    path, folder = write_trace(tmp_path / "t.json"), tmp_path / "cache" / "deeper"
    load_trace(path, cache=folder)
    if os.name == "posix":
        assert folder.stat().st_mode & 0o077 == 0
        assert entries(folder)[0].stat().st_mode & 0o077 == 0


def test_a_link_in_the_cache_folder_is_replaced_not_written_through(tmp_path, cache_everything):
    path, folder = write_trace(tmp_path / "t.json"), tmp_path / "cache"
    folder.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    key = cache.entry_key(path, include_python=False, include_flows=False)
    (folder / key.entry_name()).symlink_to(victim)
    load_trace(path, cache=folder)
    assert victim.read_text() == "keep me" and not (folder / key.entry_name()).is_symlink()


# --- the bound -----------------------------------------------------------------------------------

def test_eviction_removes_the_least_recently_used_entries_first(tmp_path):
    now = time.time()
    for age, name in enumerate(["newest", "newer", "older", "oldest"]):
        entry = tmp_path / f"{name}{cache.SUFFIX}"
        entry.write_bytes(b"x" * 1000)
        os.utime(entry, (now - 100 * age, now - 100 * age))
    other = tmp_path / "not-an-entry.txt"
    other.write_bytes(b"x" * 5000)
    cache_files.evict(tmp_path, max_bytes=2500)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["newer.tables", "newest.tables", "not-an-entry.txt"]
    cache_files.evict(tmp_path, max_bytes=0)
    assert [p.name for p in tmp_path.iterdir()] == ["not-an-entry.txt"]


def test_a_hit_counts_as_a_recent_use(tmp_path, cache_everything):
    path, folder = write_trace(tmp_path / "t.json"), tmp_path / "cache"
    load_trace(path, cache=folder)
    [entry] = entries(folder)
    os.utime(entry, (1_000_000, 1_000_000))
    load_trace(path, cache=folder)
    assert entry.stat().st_mtime > time.time() - 3600


def test_temporary_files_of_dead_writers_are_removed(tmp_path):
    stale = tmp_path / f"{cache_files.TEMPORARY_PREFIX}a.part"
    fresh = tmp_path / f"{cache_files.TEMPORARY_PREFIX}b.part"
    stale.write_bytes(b"half")
    fresh.write_bytes(b"being written")
    old = time.time() - cache_files.STALE_TEMPORARY_SECONDS - 60
    os.utime(stale, (old, old))
    cache_files.evict(tmp_path)
    assert not stale.exists() and fresh.exists()


def test_the_bound_is_applied_after_each_write(tmp_path, cache_everything, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setattr(cache_files, "MAX_TOTAL_BYTES", 1)
    load_trace(write_trace(tmp_path / "t.json"), cache=folder)
    assert not entries(folder)  # the one entry is over the bound by itself


# --- where -----------------------------------------------------------------------------------------

HOME = Path("/home/someone")


@pytest.mark.parametrize(("environ", "platform", "expected"), [
    ({"TRACEANALYZE_CACHE_DIR": "/fast/cache", "XDG_CACHE_HOME": "/xdg"}, "linux", Path("/fast/cache")),
    ({"TRACEANALYZE_CACHE_DIR": "/fast/cache"}, "darwin", Path("/fast/cache")),
    ({"TRACEANALYZE_CACHE_DIR": ""}, "linux", HOME / ".cache" / "traceanalyze"),
    ({}, "linux", HOME / ".cache" / "traceanalyze"),
    ({"XDG_CACHE_HOME": "/xdg"}, "linux", Path("/xdg/traceanalyze")),
    ({"XDG_CACHE_HOME": "relative/xdg"}, "linux", HOME / ".cache" / "traceanalyze"),  # the XDG spec ignores it
    ({"XDG_CACHE_HOME": "/xdg"}, "darwin", HOME / "Library" / "Caches" / "traceanalyze"),
    ({"LOCALAPPDATA": "/appdata/local"}, "win32", Path("/appdata/local/traceanalyze/Cache")),
    ({}, "win32", HOME / "AppData" / "Local" / "traceanalyze" / "Cache"),
    ({}, "freebsd14", HOME / ".cache" / "traceanalyze"),
])
def test_the_cache_folder_follows_the_platform(environ, platform, expected):
    assert cache_files.default_directory(environ, platform, HOME) == expected


def test_cache_settings(monkeypatch, tmp_path):
    monkeypatch.setenv("TRACEANALYZE_CACHE_DIR", str(tmp_path / "here"))
    assert cache_files.cache_directory(True) == tmp_path / "here"
    assert cache_files.cache_directory(False) is None
    assert cache_files.cache_directory(str(tmp_path / "there")) == tmp_path / "there"
    assert cache_files.cache_directory(tmp_path / "there") == tmp_path / "there"


def test_the_test_suite_never_uses_the_users_cache(trace_cache_directory):
    """tests/conftest.py points every test (and every command a test runs) at a folder of its own."""
    folder = cache_files.cache_directory(True)
    assert folder == trace_cache_directory
    assert not folder.resolve().is_relative_to((Path.home() / ".cache").resolve())
    assert not folder.resolve().is_relative_to(SHARED_TRACES_DIR.resolve())
