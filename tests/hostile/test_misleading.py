"""Inputs that load, but whose messages misled (issue 13): each now says what happened."""

from __future__ import annotations

import json
import time

import polars as pl
import pytest
from typer.testing import CliRunner

from builder import TraceBuilder

from traceanalyze.analysis.health import trace_health
from traceanalyze.cli import app
from traceanalyze.load import columnar, load_trace
from traceanalyze.load.chunk import SKIP_BAD_DUR, SKIP_NO_PHASE
from traceanalyze.load.fast import msgspec_chunk
from traceanalyze.load.general import general_chunk as _general_chunk
from traceanalyze.model import linked_gpu
from traceanalyze.pipeline.rank import build_report

EVENT = {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1.0, "dur": 2.0,
         "args": {"device": 0, "stream": 7, "correlation": 1}}


def small_trace() -> TraceBuilder:
    builder = TraceBuilder()
    op = builder.cpu_op("aten::relu", 0, 20)
    builder.kernel(builder.launch(5, 4, external_id=op), 12.5, 3.25)
    return builder


def test_a_utf8_byte_order_mark_is_read_past(tmp_path):
    plain = small_trace().write(tmp_path / "plain.json")
    marked = tmp_path / "marked.json"
    marked.write_bytes(b"\xef\xbb\xbf" + plain.read_bytes())
    for table in ("gpu", "runtime", "cpu_ops"):
        assert getattr(load_trace(marked), table).equals(getattr(load_trace(plain), table))
    # read as a large file is: blocks read after room for the last one's rest, cut into pieces
    from traceanalyze.load.chrome import EventChunks

    for front in (0, 64):
        pieces = [b"".join(parts) for parts in EventChunks(marked, block_size=40).pieces(front=front)]
        plain_pieces = [b"".join(parts) for parts in EventChunks(plain, block_size=40).pieces(front=front)]
        assert pieces == plain_pieces and len(pieces) > 2


def test_events_without_a_phase_are_counted():
    events = [EVENT, {k: v for k, v in EVENT.items() if k != "ph"}, {**EVENT, "ph": None},
              {"cat": "cpu_op", "name": "x", "ts": 1, "dur": 1},  # counted: cpu_ops reads this category
              {"cat": "some_other", "name": "y", "ts": 1, "dur": 1},  # not counted: no table reads it
              {"cat": "python_function", "name": "p", "ts": 1, "dur": 1}]  # not counted: python is not kept
    text = json.dumps(events).encode()
    chunks = [msgspec_chunk(text), _general_chunk(text, False)]
    if columnar.available():
        chunks.append(columnar.chunk_tables(text, False))
    for chunk in chunks:
        assert chunk.skipped == {SKIP_NO_PHASE: (3, 1)}


def test_events_without_a_phase_reach_health(tmp_path):
    path = tmp_path / "no_ph.json"
    path.write_text(json.dumps({"traceEvents": [EVENT] + [{k: v for k, v in EVENT.items() if k != "ph"}] * 4}))
    health = trace_health(load_trace(path))
    assert health.filter(pl.col("finding") == "malformed_events_skipped").select("count", "detail").rows() == [
        (4, SKIP_NO_PHASE)]


def test_negative_kernel_durations_are_not_called_unrecorded(tmp_path):
    builder = TraceBuilder()
    op = builder.cpu_op("aten::relu", 0, 20)
    builder.launch(5, 4, external_id=op)
    document = builder.to_dict()
    document["traceEvents"] += [{**EVENT, "dur": -2.0, "ts": 10.0 + i} for i in range(3)]
    path = tmp_path / "negative.json"
    path.write_text(json.dumps(document))
    notes = " ".join(build_report(load_trace(path)).ranks[0].notes)
    assert f"3 events were skipped as malformed (3 {SKIP_BAD_DUR})" in notes
    assert "not recorded" not in notes


def test_ranks_that_all_claim_rank_0_are_not_printed_beyond_the_world(tmp_path):
    folder = tmp_path / "ranks"
    folder.mkdir()
    for i in range(16):
        document = small_trace().to_dict()
        document["distributedInfo"] = {"rank": 0, "world_size": 8, "backend": "nccl"}
        (folder / f"worker{i:02d}.json").write_text(json.dumps(document))
    trace = load_trace(folder, workers=1)
    assert [m.rank for m in trace.meta] == list(range(16))
    assert {m.rank_source for m in trace.meta} == {"file order"}
    health = trace_health(trace).filter(pl.col("finding") == "distributed_rank_not_used")
    assert health.height == 16 and "distributedInfo says rank 0" in health["detail"][15]
    for command in ("info", "report"):
        # report: every rank's section only with --details (the job screen comes first)
        output = CliRunner().invoke(app, [command, str(folder), *(["--details"] if command == "report" else [])]).output
        assert " of 8" not in output.replace("4 of 8", "")  # no "rank 15 of 8"
        assert "rank 15" in output


def repeated_ids_trace(n: int) -> dict:
    """n launches and n kernels that all carry correlation 7 and External id 5, and n ops of External id 5."""
    events = []
    for i in range(n):
        events.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10 * i, "dur": 3,
                       "args": {"External id": 5}})
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                       "ts": 10 * i + 1,
                       "dur": 1, "args": {"External id": 5, "correlation": 7}})
        events.append({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10 * i + 3, "dur": 5,
                       "args": {"External id": 5, "correlation": 7, "device": 0, "stream": 7}})
    return {"traceEvents": events, "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "numSms": 132}]}


def test_repeated_ids_stay_linear_and_are_counted(tmp_path):
    """Every kernel shares one correlation id: a join on ids that multiplied rows would take n² here
    (10^9 rows at n = 30,000); linked, each kernel finds the first launch, in linear time."""
    path = tmp_path / "repeated.json"
    n = 30_000
    path.write_text(json.dumps(repeated_ids_trace(n)))
    started = time.perf_counter()
    trace = load_trace(path)
    report = build_report(trace)
    seconds = time.perf_counter() - started
    assert seconds < 30, f"{seconds:.1f} s"
    health = trace_health(trace)
    assert health.filter(pl.col("finding") == "repeated_correlation_ids")["count"].to_list() == [n - 1]
    # the n ops of id 5
    assert health.filter(pl.col("finding") == "repeated_external_ids")["count"].to_list() == [n - 1]
    assert linked_gpu(trace)["launch_start_ns"].unique().to_list() == [1000]  # the first launch, for every kernel
    assert report.ranks[0].devices.height == 1


@pytest.mark.parametrize("command", ["report", "info", "gate", "diff"])
def test_an_unreadable_file_is_one_line(tmp_path, monkeypatch, command):
    """No usage box from the command line's own check: the loader says "permission denied"."""
    import builtins
    import errno
    import os

    from traceanalyze.load import reading

    path = small_trace().write(tmp_path / "secret.json")
    good = small_trace().write(tmp_path / "good.json")

    def denied(file, *args, **kwargs):
        if str(file) == str(path):
            raise PermissionError(errno.EACCES, "Permission denied", str(file))
        return builtins.open(file, *args, **kwargs)

    real_access = os.access
    monkeypatch.setattr(os, "access", lambda file, mode, **kw: str(file) != str(path) and real_access(file, mode, **kw))
    monkeypatch.setattr(reading, "open", denied, raising=False)
    extra = {"gate": ["--max-idle-fraction", "1"], "diff": []}.get(command, [])
    arguments = [command, str(good), str(path)] if command == "diff" else [command, str(path), *extra]
    result = CliRunner().invoke(app, arguments)
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2 and len(lines) == 1, result.output
    assert lines[0].endswith("secret.json: cannot read: permission denied")


def test_integers_beyond_their_columns_load(tmp_path):
    """A device id, stream, correlation, world size and device properties beyond int32/int64: a
    value its column cannot hold counts as absent (device from the pid, then 0), never a traceback."""
    event = {**EVENT, "pid": 3, "args": {"device": 10**30, "stream": -(10**25), "correlation": 10**40,
                                         "grid": [1, 1, 1]}}
    path = tmp_path / "huge.json"
    path.write_text(json.dumps({"traceEvents": [event, {**event, "ts": 5.0}],
                                "distributedInfo": {"rank": 3, "world_size": 10**30},
                                "deviceProperties": [{"id": 10**30, "name": "NVIDIA A100-SXM4-80GB", "numSms": 10**30,
                                                      "totalGlobalMem": 10**40}]}))
    trace = load_trace(path)
    assert trace.gpu.select("device", "stream", "correlation").rows() == [(3, 7, None)] * 2
    assert trace.devices.select("device", "num_sms", "total_memory_bytes").rows() == [(0, None, None)]
    assert trace.meta[0].world_size is None
    for command in ("report", "info"):
        result = CliRunner().invoke(app, [command, str(path)])
        assert result.exit_code == 0, result.output


def test_a_step_number_beyond_int64_is_no_step(tmp_path):
    document = small_trace().to_dict()
    document["traceEvents"] += [{"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{n}", "pid": 1, "tid": 1,
                                 "ts": 0, "dur": 5} for n in ("99999999999999999999999", "7")]
    path = tmp_path / "steps.json"
    path.write_text(json.dumps(document))
    assert load_trace(path).steps["step"].to_list() == [7]


@pytest.mark.parametrize("rank", [10**30, 1e30, 2**31, 2.5e9])
def test_a_rank_beyond_int32_is_refused_however_written(tmp_path, rank):
    """An int of 10^30 and a float of 1e30 say the same (the float was taken for no rank at all)."""
    from traceanalyze.errors import TraceFormatError

    document = small_trace().to_dict()
    document["distributedInfo"] = {"rank": rank, "world_size": 8}
    path = tmp_path / "rank.json"
    path.write_text(json.dumps(document))
    with pytest.raises(TraceFormatError,
                       match=r"rank.json: distributedInfo.rank \S+ is not a rank \(at most 2\^31 - 1\)$"):
        load_trace(path)


@pytest.mark.parametrize("rank", [-5, "x", None])
def test_a_rank_that_is_no_number_is_not_used(tmp_path, rank):
    document = small_trace().to_dict()
    document["distributedInfo"] = {"rank": rank, "world_size": 8}
    path = tmp_path / "rank.json"
    path.write_text(json.dumps(document))
    trace = load_trace(path)
    assert (trace.meta[0].rank, trace.meta[0].rank_source) == (0, "default")


@pytest.mark.parametrize("compress, said", [
    (lambda d: __import__("bz2").compress(d), "bzip2-compressed"),
    (lambda d: __import__("lzma").compress(d), "xz-compressed"),
    (lambda d: b"\x28\xb5\x2f\xfd" + d, "zstd-compressed"),
])
def test_another_compressor_is_named(tmp_path, compress, said):
    """Not "not JSON (a NUL byte at byte 14)": which format it is, and that only gzip is read."""
    from traceanalyze.errors import TraceFormatError

    path = tmp_path / "t.json.gz"
    path.write_bytes(compress(json.dumps(small_trace().to_dict()).encode()))
    with pytest.raises(TraceFormatError, match=f"t.json.gz: not JSON but {said} \\(only gzip is read\\)"):
        load_trace(path, cache=False)


def test_a_trace_of_only_malformed_items_counts_them_all(tmp_path):
    """Was "none of its 1 events is usable (4 malformed and skipped …)": the count left the
    items that are not even objects out."""
    from traceanalyze.errors import EmptyTraceError

    path = tmp_path / "junk.json"
    path.write_text('{"traceEvents": [1, "x", null, [], {"ph": 5}]}')
    with pytest.raises(EmptyTraceError, match=r"junk.json: none of its 5 events is usable \(4 malformed and skipped, "):
        load_trace(path, cache=False)
