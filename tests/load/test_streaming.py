"""The streaming loader gives the tables the whole-document loader gives.

The reference is the general path over the whole document (`decode_document` + `build_trace`:
one typed decode, events converted one at a time, shape columns decoded as a whole), which is how
the loader worked before it streamed. Against it: the streaming reader with blocks small enough to
cut every trace into many chunks (both the sequential reader, which validates each cut by decoding,
and the cutter that feeds worker processes), the fast path, the worker processes themselves, the
vectorised `to_ns` and nesting, and traces written to defeat the cutter.
"""

from __future__ import annotations

import gzip
import json
import random
import sys
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from builder import TraceBuilder
from mutations import base_trace, json_values, mutated
from shared_traces import decoder_trace_params

from traceanalyze.errors import TraceAnalyzeError
from traceanalyze.load import load_file, load_trace
from traceanalyze.load.chrome import EventChunks, decode_document
from traceanalyze.load.reading import read_bytes
from traceanalyze import _native
from traceanalyze.load.times import EXACT_FLOAT_US
from traceanalyze.load.assemble import TraceTables, build_trace
from traceanalyze.load.convert import to_ns
from traceanalyze.load.decode import decode_chunk, decode_items
from traceanalyze.load.fast import Fallback as _Fallback, raw_times as _times
from traceanalyze.load.nesting import (nesting_native as _nesting_native, stack_walk as _stack_walk,
                                       nesting_vectorised as _nesting_vectorised, with_nesting as _with_nesting)
from traceanalyze.load.raw import ns_expr as _ns

TABLES = ("gpu", "runtime", "cpu_ops", "steps", "flows", "sync", "devices", "skipped")
REPO = Path(__file__).resolve().parents[2]


def whole_document(path: Path, *, include_python: bool = False):
    """The reference: the document decoded at once, every event through the general path (flows
    kept: the loads compared with it keep them too)."""
    document, malformed = decode_document(read_bytes(path), path)
    info = document.distributedInfo if isinstance(document.distributedInfo, dict) else {}
    rank = info.get("rank") if isinstance(info.get("rank"), int) else 0
    source = "distributedInfo" if isinstance(info.get("rank"), int) else "default"
    return build_trace(document, path=path, rank=rank, rank_source=source, malformed=malformed,
                       include_python=include_python, include_flows=True)


def cut_pieces(path: Path, block_size: int, *, include_python: bool = False, front: int = 0):
    """What the worker processes of a large file compute, here in this process; with `front`, what
    the decoding threads compute (a piece of one part decoded where it lies, `decode_items`)."""
    chunks = EventChunks(path, block_size=block_size)
    tables = TraceTables(include_python=include_python, include_flows=True)
    for parts in chunks.pieces(front=front):
        if front and len(parts) == 1:
            tables.add(decode_items(parts[0], include_python=include_python))
        else:
            tables.add(decode_chunk(b"".join((b"[", *parts, b"]")), include_python=include_python))
    info = chunks.document.distributedInfo if isinstance(chunks.document.distributedInfo, dict) else {}
    rank = info.get("rank") if isinstance(info.get("rank"), int) else 0
    source = "distributedInfo" if isinstance(info.get("rank"), int) else "default"
    return tables.finish(chunks.document, path=path, rank=rank, rank_source=source)


def assert_same(trace, reference, *, python: bool = False) -> None:
    for table in TABLES + (("python",) if python else ()):
        assert_frame_equal(getattr(trace, table), getattr(reference, table))
    assert [m.__dict__ for m in trace.meta] == [m.__dict__ for m in reference.meta]


def block_size_for(path: Path, chunks: int) -> int:
    """A block size that cuts the trace into about `chunks` chunks."""
    return max(1 << 11, len(read_bytes(path)) // chunks)


@pytest.mark.parametrize("path", decoder_trace_params())
@pytest.mark.parametrize("chunks", [3, 25])
def test_real_traces_in_small_chunks(path, chunks):
    reference = whole_document(path)
    block_size = block_size_for(path, chunks)
    assert_same(load_file(path, include_flows=True, block_size=block_size, workers=1), reference)
    assert_same(cut_pieces(path, block_size), reference)
    assert_same(cut_pieces(path, block_size, front=1 << 10), reference)


@pytest.mark.parametrize("path", decoder_trace_params())
def test_python_functions_kept_when_asked(path):
    reference = whole_document(path, include_python=True)
    assert_same(load_file(path, include_flows=True, block_size=block_size_for(path, 8), workers=1, include_python=True),
                reference,
                python=True)


# --- traces written to defeat the cutter ---------------------------------------------------------

def awkward_trace() -> dict:
    """Kernel names and args holding what a cut looks for (`},{`, `}, {`, `]`), float times with
    ns fractions, TensorList shapes, and metadata after the events."""
    b = TraceBuilder()
    b.step(1, 0, 400)
    for i in range(60):
        op = b.cpu_op(f"aten::op{i}", 10 + 6 * i, 5, input_dims=[[4, 8], [8, 16]], input_types=["float", "float"])
        corr = b.launch(11 + 6 * i, 2, external_id=op)
        b.kernel(corr, 20 + 6 * i, 3.125, name=f"void k<{{lambda()#1}}, {{lambda()#{i}}},{{x}}>}}, {{" + "]" * (i % 3))
    data = b.to_dict()
    events = data.pop("traceEvents")
    for event in events[::7]:
        if isinstance(event.get("args"), dict):
            event["args"]["note"] = '}, {"ph": "X"}],[{'
    data["traceEvents"] = events
    data["deviceProperties_after"] = [{"id": 0}, {"id": 1}]
    data["trailing"] = {"a": [1, 2, {"b": "]"}]}
    return data


@pytest.mark.parametrize("layout", ["compact", "indented", "events_last", "bare_array"])
@pytest.mark.parametrize("block_size", [64, 300, 4096])
def test_cuts_inside_strings_and_odd_layouts(tmp_path, layout, block_size):
    data = awkward_trace()
    if layout == "compact":
        text = json.dumps(data, separators=(",", ":"))
    elif layout == "indented":
        text = json.dumps(data, indent=2)
    elif layout == "events_last":
        events = data.pop("traceEvents")
        text = json.dumps({**data, "traceEvents": events}, indent=1)
    else:
        text = json.dumps(data["traceEvents"])
    path = tmp_path / "awkward.json.gz"
    path.write_bytes(gzip.compress(text.encode()))
    reference = whole_document(path)
    assert reference.gpu.height == 60
    assert_same(load_file(path, include_flows=True, block_size=block_size, workers=1), reference)
    # the cutter alone may cut inside a kernel name; what it cuts must then fail to decode
    try:
        pieces = cut_pieces(path, block_size)
    except Exception as error:
        import msgspec

        assert isinstance(error, msgspec.DecodeError)
    else:
        assert_same(pieces, reference)
    # blocks read after room for the rest of the last one (`front`): a chunk is then one piece of
    # text where it fits, two where it does not (a small room)
    for front in (16, 1 << 12):
        try:
            pieces = cut_pieces(path, block_size, front=front)
        except Exception as error:
            import msgspec

            assert isinstance(error, msgspec.DecodeError)
        else:
            assert_same(pieces, reference)


def test_shape_columns_decoded_slowly_everywhere_when_one_chunk_needs_it(tmp_path):
    """The general path decodes a shape column slowly for the whole table when any value defeats
    the fast decode; decoded chunk by chunk, the result must be the same."""
    b = TraceBuilder()
    for i in range(200):
        b.cpu_op("aten::add", 10 * i, 5, input_dims=[[2, 2], [2, 2]], input_types=["float", "float"])
    data = b.to_dict()
    ops = [e for e in data["traceEvents"] if e.get("cat") == "cpu_op"]
    ops[10]["args"]["Input Dims"] = [[1, None], [2]]  # fast decode keeps a null, the slow one drops it
    ops[11]["args"]["Input type"] = ["float", None]
    ops[190]["args"]["Input Dims"] = [1, 2]  # not a list of shapes: the fast decode fails
    ops[191]["args"]["Input type"] = ["float", 3]
    path = tmp_path / "shapes.json"
    path.write_text(json.dumps(data))
    reference = whole_document(path)
    for block_size in (128, 2048):
        assert_same(load_file(path, include_flows=True, block_size=block_size, workers=1), reference)


@pytest.mark.parametrize("slow_column", [None, "Input type", "Concrete Inputs"])
def test_the_shape_strings_are_lists_of_categoricals(tmp_path, slow_column):
    """`input_types` and `concrete_inputs` are kept as lists of categoricals (a few distinct texts:
    4 bytes an item, not a string's 16), with their texts, whichever decode made them: the fast
    one, or the slow one everywhere when a chunk's value defeats it."""
    b = TraceBuilder()
    for i in range(60):
        b.cpu_op("aten::add", 10 * i, 5, input_dims=[[2, 2], []], input_types=["float", "Scalar"],
                 concrete_inputs=["", str(i % 3)])
    data = b.to_dict()
    if slow_column:
        next(e for e in data["traceEvents"] if e.get("cat") == "cpu_op")["args"][slow_column] = ["float", 3]
    path = tmp_path / "strings.json"
    path.write_text(json.dumps(data))
    for trace in (load_file(path, block_size=256, workers=1), whole_document(path)):
        ops = trace.cpu_ops.sort("start_ns")
        assert ops.schema["input_types"] == ops.schema["concrete_inputs"] == pl.List(pl.Categorical())
        types, concrete = ops["input_types"].to_list(), ops["concrete_inputs"].to_list()
        first = 1 if slow_column else 0
        assert types[first:] == [["float", "Scalar"]] * (60 - first)
        assert concrete[first:] == [["", str(i % 3)] for i in range(first, 60)]
        if slow_column:  # the slow decode writes a non-string as JSON
            assert (types[0] if slow_column == "Input type" else concrete[0]) == ["float", "3"]


def test_a_float_in_a_shape_argument_reads_the_same_when_an_event_elsewhere_is_malformed(tmp_path):
    """A document whose typed decode fails (an event's `correlation` is a list) is decoded event by event,
    each re-encoded: its floats keep their text (`times.encode_hook`), so a float in `Input type`
    reads as the chunk that holds it reads it when streamed (hypothesis found `1.2210779145025802e16`
    coming back as `12210779145025802`)."""
    b = TraceBuilder()
    for i in range(40):
        b.cpu_op("aten::add", 10 * i, 5, input_dims=[[2, 2], [2, 2]], input_types=["float", "float"])
    data = b.to_dict()
    ops = [e for e in data["traceEvents"] if e.get("cat") == "cpu_op"]
    ops[3]["args"]["Input type"] = "TYPES"
    ops[30]["args"]["correlation"] = []
    path = tmp_path / "float_types.json"
    path.write_text(json.dumps(data).replace('"TYPES"', "[{}, 1.2210779145025802e16, 1.5e3, 2.50]"))
    reference = whole_document(path)
    types = reference.cpu_ops.filter(pl.col("input_types").list.len() == 4)["input_types"].to_list()
    assert types == [["{}", "1.2210779145025802e16", "1500.0", "2.5"]]  # a non-string as msgspec writes it
    for block_size in (64, 1 << 16):
        assert_same(load_file(path, include_flows=True, block_size=block_size, workers=1), reference)


# --- mutated traces --------------------------------------------------------------------------------

BASE = base_trace(with_python=True)
JSON_VALUES = json_values(allow_infinity=False)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_traces_load_as_the_whole_document_does(tmp_path, data):
    trace = mutated(BASE, data, JSON_VALUES)
    path = tmp_path / "mutated.json"
    path.write_text(json.dumps(trace))
    include_python = data.draw(st.booleans())
    try:
        reference = whole_document(path, include_python=include_python)
        if not reference.meta[0].event_count:
            reference = None
    except TraceAnalyzeError:
        reference = None
    block_size = data.draw(st.sampled_from([64, 512, 1 << 16]))
    try:
        streamed = load_file(path, include_flows=True, block_size=block_size, workers=1, include_python=include_python)
    except TraceAnalyzeError:
        assert reference is None
        return
    assert reference is not None
    assert_same(streamed, reference, python=include_python)


# --- exactness of the vectorised pieces ------------------------------------------------------------

def test_vectorised_to_ns_is_to_ns():
    rng = random.Random(7)
    values: list = [0.0, -0.0, 1.5, -2.25, 0.0005, 1e-9, 8.64e10, 8.64e10 + 1e-5]
    for low, high in [(0, 1e6), (1e9, 1e12), (2**42, 2**43), (4e12, 9.1e12), (9.1e12, 9e15), (-1e13, 1e13)]:
        values += [round(rng.uniform(low, high), 3) for _ in range(20000)]
        values += [rng.uniform(low, high) for _ in range(5000)]
    # floats (the vectorised formula below 2^53 ns), then ints, then both mixed. Beyond 2^53 ns a
    # float has lost its nanoseconds: the fast path hands the chunk to the general path, which
    # reads them from the text (tests/load/test_exact_times.py)
    beyond = [v for v in values if abs(v) >= EXACT_FLOAT_US]
    values = [v for v in values if abs(v) < EXACT_FLOAT_US]
    assert len(beyond) > 10_000 and len(values) > 100_000
    ints = [rng.randrange(-(10**15), 10**15) for _ in range(1000)]
    for sample in (values, ints, values[:500] + ints[:500]):
        columns, _ = _times(sample, "ts")
        assert pl.DataFrame(columns).select(_ns("ts")).to_series().to_list() == [to_ns(v) for v in sample]
    # a table without float times takes the plan without the float branch: the same values
    columns, _ = _times(ints, "ts")
    assert columns["ts_f"].null_count() == len(ints)
    assert pl.DataFrame(columns).select(_ns("ts", False)).to_series().to_list() == [to_ns(v) for v in ints]
    with pytest.raises(_Fallback):
        _times(values[:10] + beyond[:1], "ts")


def nesting_by_stack(ops: pl.DataFrame) -> pl.DataFrame:
    """The stack walk the loader used before it was vectorised (reference)."""
    ordered = ops.select("op_id", "pid", "tid", "start_ns", "end_ns").sort(
        ["pid", "tid", "start_ns", "end_ns"], descending=[False, False, False, True]
    )
    depth, parent, stack, thread = [], [], [], None
    for op_id, pid, tid, start, end in ordered.iter_rows():
        if (pid, tid) != thread:
            thread, stack = (pid, tid), []
        while stack and stack[-1][1] <= start:
            stack.pop()
        level = len(stack)
        while level and stack[level - 1][1] < end:
            level -= 1
        del stack[level:]
        parent.append(stack[-1][0] if stack else None)
        depth.append(len(stack))
        stack.append((op_id, end))
    nesting = pl.DataFrame({"op_id": ordered["op_id"], "depth": depth, "parent_id": parent},
                           schema={"op_id": pl.Int64, "depth": pl.Int32, "parent_id": pl.Int64})
    return ops.drop("depth", "parent_id").join(nesting, on="op_id", how="left").sort("op_id")


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("n", [3000, 400])  # the vectorised walk; a few ops: the Python loop
def test_vectorised_nesting_is_the_stack_walk(seed, n):
    rng = random.Random(seed)
    starts = [rng.randrange(0, 5000) for _ in range(n)]
    durations = [rng.choice([0, 0, 1, rng.randrange(1, 50), rng.randrange(1, 2000)]) for _ in range(n)]
    ops = pl.DataFrame(
        {
            "op_id": range(n),
            "pid": [rng.choice([1, 2]) for _ in range(n)],
            "tid": [rng.choice([1, 2, None]) for _ in range(n)],
            "start_ns": starts,
            "end_ns": [s + d for s, d in zip(starts, durations)],
            "depth": [None] * n,
            "parent_id": [None] * n,
        },
        schema={"op_id": pl.Int64, "pid": pl.Int64, "tid": pl.Int64, "start_ns": pl.Int64, "end_ns": pl.Int64,
                "depth": pl.Int32, "parent_id": pl.Int64},
    )
    expected = nesting_by_stack(ops)
    got = _with_nesting(ops)
    assert_frame_equal(got.select(expected.columns), expected)
    # the polars version (no compiled helper) agrees with the C one
    ordered = ops.sort(["pid", "tid", "start_ns", "end_ns"], descending=[False, False, False, True])
    parent, depth = _nesting_vectorised(ordered)
    native_parent, native_depth = _nesting_native(_native, ordered)
    assert parent.to_list() == native_parent.to_list()
    assert depth.cast(pl.Int32).to_list() == native_depth.to_list()
    # and the Python loop of a few ops
    python_parent, python_depth = _stack_walk(ordered)
    assert python_parent == parent.to_list() and python_depth == depth.to_list()


# --- processes ----------------------------------------------------------------------------------------

def test_a_large_file_decoded_by_worker_processes(tmp_path):
    path = Path(__file__).resolve().parents[2].parent / "shared" / "traces" / "hta_a100_large_training.json.gz"
    if not path.is_file():
        pytest.skip(f"real trace not found: {path}")
    reference = whole_document(path)
    assert_same(load_file(path, include_flows=True, block_size=1 << 20, workers=2), reference)


def test_one_file_decodes_in_at_most_a_few_threads_however_many_cores(tmp_path, monkeypatch):
    """A large file gets one decoding thread per core up to `MAX_DECODE_WORKERS` (each chunk in
    flight holds 60-100 MB: a 128-core node must not hold 128); a small one, one thread; an asked
    number is kept."""
    from traceanalyze.load import files

    large, small = tmp_path / "large.json", tmp_path / "small.json"
    large.write_bytes(b" " * (4 * files.BLOCK_SIZE))
    small.write_bytes(b"[]")
    for cores, expected in ((128, files.MAX_DECODE_WORKERS), (2, 2), (1, 1), (None, 1)):
        monkeypatch.setattr(files.os, "cpu_count", lambda cores=cores: cores)
        assert files._chunk_workers(large, None) == expected
        assert files._chunk_workers(small, None) == 1
    assert files._chunk_workers(large, 16) == 16
    assert files.MAX_DECODE_WORKERS <= 8


def test_a_folder_of_ranks_on_every_core():
    folder = Path(__file__).resolve().parents[2].parent / "shared" / "traces" / "param_v100_dlrm_4ranks"
    if not folder.is_dir():
        pytest.skip(f"real traces not found: {folder}")
    one = load_trace(folder, workers=1)
    many = load_trace(folder, workers=2)
    for table in TABLES:
        assert_frame_equal(getattr(many, table), getattr(one, table))
    assert [m.__dict__ for m in many.meta] == [m.__dict__ for m in one.meta]


def test_a_bad_rank_file_fails_cleanly_from_a_worker(tmp_path):
    folder = Path(__file__).resolve().parents[2].parent / "shared" / "traces" / "param_v100_dlrm_4ranks"
    if not folder.is_dir():
        pytest.skip(f"real traces not found: {folder}")
    for source in sorted(folder.glob("*.json.gz"))[:2]:
        (tmp_path / source.name).write_bytes(source.read_bytes())
    (tmp_path / "rank9.json.gz").write_bytes(gzip.compress(b'{"traceEvents": [{"ph": "X", ')[:30])
    with pytest.raises(TraceAnalyzeError, match="rank9.json.gz"):
        load_trace(tmp_path, workers=2)


# --- the generator of big traces ------------------------------------------------------------------------

def test_make_big_trace_replicates_with_offsets(tmp_path):
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        from make_big_trace import main
    finally:
        sys.path.pop(0)
    base = tmp_path / "base.json"
    base.write_text(json.dumps(base_trace(), indent=2))
    out = tmp_path / "big.json.gz"
    assert main([str(base), "--size", "20k", "-o", str(out)]) == 0
    one = whole_document(base)
    big = load_trace(out)
    copies = big.steps.height // one.steps.height
    assert copies >= 3
    assert big.steps["step"].n_unique() == big.steps.height
    # every copy links only to itself: one launch per correlation, as in the base
    assert big.runtime["correlation"].drop_nulls().n_unique() == big.runtime["correlation"].drop_nulls().len()
    linked = big.gpu.join(big.runtime, on=["rank", "correlation"]).height
    assert linked >= copies * one.gpu.join(one.runtime, on=["rank", "correlation"]).height - one.gpu.height


def test_only_the_times_written_as_floats_take_the_float_branch():
    from traceanalyze.load import raw

    frame = pl.DataFrame({"ts_f": pl.Series([None, None], dtype=pl.Float64), "dur_f": [None, 1.5]})
    assert raw._float_times(frame) == frozenset({"dur"})
    assert raw._float_times(frame.lazy()) == frozenset({"ts", "dur"})  # not read: both
