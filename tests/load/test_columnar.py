"""The compiled columnar scanner (`_native.c` + `load/columnar.py`) against the msgspec path.

Whatever chunk the scanner vouches for must give exactly the tables the msgspec path gives; what it
does not vouch for (None) goes to that path. So: the same tables on every chunk of every real trace
(and the scanner takes them all: real traces are what it is for), on hypothesis-mutated events, on
hand-written JSON corner cases; and never a table where msgspec finds the JSON invalid.
"""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

import msgspec
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from mutations import base_trace, json_values, mutated
from shared_traces import decoder_trace_params, real_trace_params
from threads_at_once import eight_threads_at_once

from traceanalyze.load import columnar
from traceanalyze.load.chunk import SKIP_NO_DUR, SKIP_NO_PHASE, SKIP_NO_TS_OR_NAME
from traceanalyze.load.chrome import EventChunks, NotStreamable
from traceanalyze.load.fast import msgspec_chunk

pytestmark = pytest.mark.skipif(not columnar.available(),
                                reason="the C scanner is not built (no C compiler at install)")


def assert_same_chunk(fast, reference) -> None:
    # the general path (which msgspec_chunk takes for times beyond 2^53 ns, say) also returns the
    # tables it found no events for, empty; the loader keeps only frames with rows
    kept = {name for name, frame in reference.frames.items() if frame.height}
    assert {name for name, frame in fast.frames.items() if frame.height} == kept
    for name in kept:
        assert_frame_equal(fast.frames[name], reference.frames[name])
    assert fast.skipped == reference.skipped
    assert fast.events == reference.events
    assert fast.malformed == reference.malformed
    if "cpu_ops" in kept:
        assert fast.arguments.failed == reference.arguments.failed
        assert fast.arguments.texts.keys() == reference.arguments.texts.keys()
        for column, texts in reference.arguments.texts.items():  # what a later chunk may decode again
            if texts is None:
                assert fast.arguments.texts[column] is None, column
            else:
                assert fast.arguments.texts[column].to_list() == texts.to_list(), column
        assert fast.arguments.height == reference.arguments.height


def check(text: bytes, include_python: bool = False):
    """The scanner's tables where it vouches for the chunk, checked against msgspec's; None where
    it does not (then msgspec's own outcome, tables or an error, is what the loader gets)."""
    try:
        reference = msgspec_chunk(text, include_python=include_python)
    except (msgspec.DecodeError, NotStreamable):  # invalid JSON, a number out of range
        assert columnar.chunk_tables(text, include_python) is None, "the scanner accepted what msgspec refuses"
        return None
    fast = columnar.chunk_tables(text, include_python)
    if fast is not None:
        assert_same_chunk(fast, reference)
    return fast


def test_the_scanner_is_built():
    """CI installs with a C compiler: a missing scanner there is a broken build, not a skip."""
    from traceanalyze import _native  # noqa: F401


@pytest.mark.parametrize("path", decoder_trace_params())
def test_every_chunk_of_every_real_trace(path: Path):
    chunks = EventChunks(path, block_size=1 << 18)
    taken = 0
    for count, parts in enumerate(chunks.pieces(), 1):
        text = b"".join((b"[", *parts, b"]"))
        for include_python in (False, True):
            taken += check(text, include_python) is not None
    assert taken == 2 * count, "a real trace's chunk left the scanner's fast path"


BASE = base_trace(with_python=True)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_events(data):
    trace = mutated(BASE, data, json_values(allow_infinity=False))
    check(json.dumps(trace["traceEvents"]).encode(), include_python=data.draw(st.booleans()))


def kernel(name: str = "k", **overrides) -> dict:
    event = {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": 10, "dur": 5,
             "args": {"device": 0, "stream": 7, "correlation": 3, "grid": [1, 2, 3], "block": [4, 1, 1]}}
    event.update(overrides)
    return event


def op(**args) -> dict:
    return {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1.5, "dur": 20.25,
            "args": {"External id": 9, "Input Dims": [[2, 3], [3, 4]], "Input type": ["float", "float"], **args}}


@pytest.mark.parametrize("text", [
    # escapes and unicode in names, keys left as written
    json.dumps([kernel('void k<\\"x\\">\n\t\u00e9\u4e2d\U0001F600')]),
    json.dumps([kernel("}, {"), op(**{"Concrete Inputs": ["", "1", "}, {"]})]),
    json.dumps([kernel("a\u0000b")]),
    # numbers in every form JSON allows
    json.dumps([kernel(ts=-0.0, dur=1e3), kernel(ts=1.5e-3, dur=0.1), kernel(ts=123456789012345.678, dur=2.5)]),
    '[{"ph":"X","cat":"kernel","name":"k","ts":1E2,"dur":3e+0,"args":{"blocks per SM":7}}]',
    '[{"ph":"X","cat":"kernel","name":"k","ts":9007199254740993,"dur":0,"args":{}}]',
    '[{"ph":"X","cat":"kernel","name":"k","ts":0.30000000000000004,"dur":1234567890.1234567,"args":{}}]',
    # layouts
    "[]", " [ ] ", '[\n  {\n    "ph": "X", "cat": "cpu_op", "name": "a", "ts": 1, "dur": 2\n  }\n]',
    json.dumps([op(), op(**{"Input Dims": [[[1, 2], [3]], []]})]),
    json.dumps([{"ph": "s", "cat": "ac2g", "id": 5, "pid": 1, "tid": "stream 7", "ts": 3, "name": "f"}]),
    json.dumps([{"ph": "i", "cat": "kernel", "name": "x", "ts": 1, "args": None}]),
    # an args field's type matters only to the tables that read it
    json.dumps([op(device="x", grid="a", correlation=1.5),
                {"ph": "X", "cat": "python_function", "name": "f", "ts": 1, "dur": 1, "args": None}]),
    json.dumps([{"ph": "M", "name": "process_name", "args": {"name": "x", "nested": {"a": [1, {"b": [[]]}]}}}]),
    '[{"a":1e999,"ph":"X","cat":"kernel","name":"k","ts":1,"dur":1,"args":{"x":-1e999}}]',  # never read: no error
    '[{"ph":"X","cat":"kernel","name":"k","ts":1,"dur":1,"correlation":[[],{"s":1.7976931348632317e+308}]}]',
    # events apart by tabs, CR LF and a comma on its own line; objects in arrays inside args
    '[\r\n\t{"ph":"X","cat":"kernel","name":"k","ts":1,"dur":1,"args":{"l":[{"a":1},{"b":[{}]}]}}\r\n\t,\r\n\t'
    '{"ph":"X","cat":"kernel","name":"j","ts":2,"dur":1} , {"ph":"i","name":"}, {","ts":3}]',
])
def test_corner_cases_vouched_for(text):
    assert check(text.encode()) is not None


def _spaced(value, space) -> str:
    """`value` as JSON with `space()` (a run of whitespace) around every token."""
    if isinstance(value, dict):
        items = f"{space()},{space()}".join(f"{json.dumps(k)}{space()}:{space()}{_spaced(v, space)}"
                                           for k, v in value.items())
        return f"{{{space()}{items}{space()}}}"
    if isinstance(value, list):
        return f"[{space()}{f'{space()},{space()}'.join(_spaced(v, space) for v in value)}{space()}]"
    return json.dumps(value)


@settings(max_examples=60, deadline=None)
@given(runs=st.lists(st.text(alphabet=" \t\r\n", max_size=19), min_size=1, max_size=40))
def test_any_whitespace_between_tokens(runs):
    """Runs of spaces, tabs, CR and LF of every length around every token (the scanner skips
    spaces 8 bytes at a time): the same tables as msgspec's, never left to it."""
    spaces = iter(runs * 200)
    events = [kernel(), op(), kernel("k2", ts=12.5, dur=1.25), {"ph": "s", "cat": "ac2g", "id": 5, "pid": 1,
                                                                "tid": "stream 7", "ts": 3, "name": "f"}]
    text = _spaced(events, lambda: next(spaces))
    fast = check(text.encode())
    assert fast is not None
    assert_same_chunk(fast, columnar.chunk_tables(json.dumps(events).encode(), False))


def test_shape_arguments_numbered_by_text_decode_as_msgspec_decodes_them():
    """The scanner numbers each shape argument's distinct texts and decodes each once
    (`_native.intern_spans`): texts repeated, equal values written apart (spaces), TensorLists,
    values the fast decode refuses (a null in a shape, a number in the types), JSON null, absent."""
    variants = [
        {"Input Dims": [[2, 3], [3, 4]], "Input type": ["float", "float"]},
        {"Input Dims": [[[1, 2], [3]], []], "Input type": ["TensorList", "int"]},
        {"Input Dims": [[1, None], [2]], "Input type": ["float", 3]},
        {"Input Dims": None, "Input type": None, "Concrete Inputs": ["", "1", "}, {"]},
        {"Input Strides": [[3, 1], [4, 1]], "Concrete Inputs": ["\u00e9", "\\"]},
        {},
    ]
    events = [op(**variants[i % len(variants)]) for i in range(60)]
    for event in events[5::6]:  # no shape argument at all
        event["args"] = {"External id": 9}
    text = json.dumps(events).encode()
    spaced = text.replace(b"[[2, 3], [3, 4]]", b"[[2,3],[3,4]]", 5)  # the same value, other bytes
    for chunk in (text, spaced):
        assert check(chunk) is not None


def grown_chunk() -> tuple[bytes, list[int]]:
    """A chunk whose events the scanner's first capacity underestimates: it samples 16 windows of
    16 kB spread evenly, and here each of 16 equal stretches begins with long events (where a
    window falls) and goes on with short ones. Every 7th time has more digits than a double's fast
    path takes (parsed after the scan). → (the text, each event's start in ns)."""
    def event(i: int, name: str) -> str:
        ts = f"{1_000_000 + i}.1234567890123456789" if i % 7 == 0 else str(1_000_000 + i)
        return f'{{"ph":"X","cat":"kernel","name":"{name}","ts":{ts},"dur":1}}'

    events, starts = [], []
    for stretch in range(16):
        for k in range(1507):
            i = stretch * 1507 + k
            events.append(event(i, "k" * 3000 if k < 7 else "k"))
            starts.append((1_000_000 + i) * 1000 + (123 if i % 7 == 0 else 0))
    return ("[" + ",".join(events) + "]").encode(), starts


def test_columns_grow_for_a_chunk_of_many_small_events():
    """The columns grow when a chunk holds more events than its first capacity: the floats
    parsed after the scan land in the right rows after the columns have moved."""
    text, starts = grown_chunk()
    fast = check(text)
    assert fast is not None
    assert fast.frames["gpu"]["start_ns"].to_list() == starts


@pytest.mark.parametrize("text", [{}, None, [[1, None]], [[1.5]]])
def test_a_skipped_ops_shape_text_counts_for_nothing(text):
    """An op skipped for want of a name, whose shape text the fast decode refuses or could decode
    differently, beside ops that are kept: the msgspec paths decode the kept rows' texts only, and
    so does the scanner (found by the mutation test)."""
    events = [op(), {k: v for k, v in op(**{"Input Dims": text}).items() if k != "name"}, op()]
    assert check(json.dumps(events).encode()) is not None


def test_a_chunk_without_shape_arguments_decodes_none():
    """Ops recorded without shapes (no `Input Dims`, …: most traces): the scanner path takes its
    shortcut (nothing to decode) and still gives msgspec's tables, null shape columns."""
    events = [op() for _ in range(8)]
    for event in events:
        event["args"] = {"External id": 3}
    fast = check(json.dumps(events).encode())
    assert fast is not None
    ops = fast.frames["cpu_ops"]
    assert ops.height == 8
    assert all(ops[column].null_count() == 8 for column in ("input_dims", "input_tensor_lists", "input_types",
                                                           "input_strides", "concrete_inputs"))


@pytest.mark.parametrize("texts", [
    ['[[2, 3], [3]]', '[]', None],  # plain shapes
    ['[[[1, 2], [3]], []]', '[[4]]', None],  # a TensorList: the separate decode
    ['[[1, null]]', '[[2]]', None],  # refused by the Rust decode
    ['[[1.0]]', '[[2]]', None],  # a float: decodes fast, could decode differently slowly (impure)
    [None, None, None],
])
@pytest.mark.parametrize("concrete", [['["", "1"]', None, '["2"]'], ['["", "1"]', None, '[1]']])
def test_shape_texts_decoded_in_one_query_as_separately(texts, concrete):
    """`shapes._decoded_arguments` (one fused query where it can) gives what the separate decodes
    give, column by column, with the same failure and purity flags."""
    import polars as pl

    from traceanalyze.load import shapes

    frame = pl.DataFrame({"input_dims": texts, "input_types": ['["float", "int"]', None, '["x"]'],
                          "input_strides": list(reversed(texts)), "concrete_inputs": concrete},
                         schema={column: pl.String for column in shapes.TEXT_COLUMNS})
    fused, fused_failed, fused_impure = shapes._decoded_arguments(frame)
    separate, failed, impure = shapes._decoded_separately(frame)
    assert (fused_failed, fused_impure) == (failed, impure)
    if texts[0] == '[[2, 3], [3]]':
        assert not any(failed.values())  # the one-query decode, no fallback
    for column, values in separate.items():
        assert fused[column].to_list() == values.to_list(), column


@pytest.mark.parametrize("text", [
    # not for the scanner: msgspec decides (tables, the general path, or an error)
    json.dumps([kernel(ts=2**63)]),  # beyond int64
    json.dumps([kernel(pid=True)]),  # a bool where an int or string is expected
    json.dumps([kernel(args=None)]),  # a kernel's args must be an object
    json.dumps([kernel(args={"grid": [1, 2]})]),  # not three integers
    json.dumps([kernel(args={"correlation": 1.0})]),  # a float where an integer is expected
    json.dumps([{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1, "dur": 1,
                 "args": {"correlation": "3"}}]),  # a string where the runtime table reads an integer
    json.dumps([op(**{"Sequence number": 1.5})]),  # a float where cpu_ops read an integer
    json.dumps([op(), kernel(dur=2.0**62)]),  # a time beyond what the fast path converts, in one table of two
    '[{"ph":"X","cat":"kernel","name":"k","name":"j","ts":1,"dur":1}]',  # a repeated key
    '[{"ph":"X","cat":"kernel","na\\u006de":"k","ts":1,"dur":1}]',  # a key written with an escape
    '[{"ph":"X","cat":"kernel","name":"\\ud800","ts":1,"dur":1}]',  # a lone surrogate
    '[[1, 2]]', '[null]',  # events that are not objects
    # invalid JSON
    '[{"ph":"X",}]', '[{"ph":"X"}', '[{"ph":"X"},]', '[{"ph":"X"}] x', '[{"ph":"X\x01"}]', '[{"ph":01}]',
    '[{"ph":1.}]', '[{"ph":-}]', '[{"ph":"\\x"}]', '[{"ph":tru}]', '[{"ph":"X"}', '[{"a":"\xff"}]',
    '[{"ph":"X","cat":"kernel","name":"k","ts":1e999,"dur":1}]', '[{"a":NaN}]', '[{"ph":"X","args":{"a":[1,2}}]',
])
def test_corner_cases_left_to_msgspec(text):
    assert check(text.encode("utf-8", "surrogateescape") if "\xff" not in text else text.encode("latin-1")) is None


def test_names_that_read_as_categories_or_phases_route_by_their_own_field(monkeypatch):
    """Routing rules run once per distinct category (and phase), not once per string: a chunk of
    thousands of distinct names asks `chunk.route` only of its few categories; and a name that
    reads as a category or a phase ("Kernel", "cpu_op", "X", "f") routes nothing."""
    from traceanalyze.load import chunk as chunk_module

    events = [kernel(f"k{i}") for i in range(300)] + [op(), dict(op(), cat="CPU_OP")]
    events += [kernel(name) for name in ("Kernel", "cpu_op", "X", "f", "ac2g", "cuda_runtime")]
    events += [{"ph": "f", "cat": "ac2g", "id": 1, "pid": 1, "tid": "X", "ts": 3, "name": "kernel"}]
    asked: list[str] = []
    route = chunk_module.route
    monkeypatch.setattr(chunk_module, "route", lambda category, *rest: asked.append(category) or route(category, *rest))
    assert check(json.dumps(events).encode()) is not None  # the same tables as msgspec's
    assert sorted(asked) == ["CPU_OP", "ac2g", "cpu_op", "kernel"]


def test_text_cut_anywhere_is_never_taken():
    """A chunk cut at a wrong place (inside a string, a number, between a key and its value) is
    invalid JSON, and the stream reader must see msgspec's error to cut again."""
    whole = json.dumps([kernel("x}, {y"), op(), kernel(ts=12.5)])
    for end in range(1, len(whole) - 1):
        piece = whole[:end]
        closed = piece + "]"
        try:
            msgspec.json.decode(closed)
        except msgspec.DecodeError:
            assert columnar.chunk_tables(closed.encode(), False) is None


@settings(max_examples=300, deadline=None)
@given(value=st.floats(allow_nan=False, allow_infinity=False) | st.integers(-(2**63), 2**63 - 1),
       style=st.sampled_from(["repr", "e", "fixed"]))
def test_numbers_parse_as_msgspec_parses_them(value, style):
    if isinstance(value, float) and style == "e":
        written = f"{value:.17e}"
    elif isinstance(value, float) and style == "fixed" and abs(value) < 1e20:
        written = f"{value:.6f}"
    else:
        written = json.dumps(value)
    text = f'[{{"ph":"X","cat":"kernel","name":"k","ts":{written},"dur":1,"args":{{}}}}]'.encode()
    from traceanalyze import _native

    scanned = _native.scan(text, columnar.ARG_KEYS)
    expected = msgspec.json.decode(written.encode())
    tag, as_int, as_float = scanned["fields"]["ts"]
    if isinstance(expected, int):
        assert tag == bytes([columnar.INT]) and struct.unpack("<q", as_int)[0] == expected
    else:
        parsed = struct.unpack("<d", as_float)[0]
        assert tag == bytes([columnar.FLOAT])
        assert parsed == expected and math.copysign(1, parsed) == math.copysign(1, expected)


@pytest.mark.parametrize("finished", ["alone", "in pairs", "together"])
@pytest.mark.parametrize("path", decoder_trace_params())
def test_real_traces_through_the_scanner_and_threads(path: Path, finished: str, monkeypatch):
    """End to end: every chunk through the scanner (whatever its size), decoded by two threads,
    gives the tables of the whole-document reference, whether each piece is finished alone, with
    the next, or with all the others (`decode.FINISH_ROWS`: a real trace's small pieces all are)."""
    from test_streaming import assert_same, block_size_for, whole_document

    from traceanalyze.load import decode, load_file, nesting

    monkeypatch.setattr(decode, "COLUMNAR_MIN_BYTES", 0)
    if finished == "alone":
        monkeypatch.setattr(decode, "FINISH_ROWS", 0)
    elif finished == "in pairs":
        monkeypatch.setattr(decode, "FINISH_PIECES", 2)
    monkeypatch.setattr(nesting, "NATIVE_NESTING_MIN_OPS", 0)
    assert_same(load_file(path, include_flows=True, block_size=block_size_for(path, 6), workers=2),
                whole_document(path))


@pytest.mark.parametrize("count", [0, 1, 2, 15, 16, 17, 255, 4079, 4080, 4081, 70_000])
def test_room_for_every_event(count):
    """The scanner's columns start at a row per 160 bytes and grow: the smallest events (11 bytes),
    as many as fit around the first capacity and its doublings, all get their row; the same
    events without the array's brackets (`bare`) too."""
    from traceanalyze import _native

    for padding in ("", " " * 7):
        items = ",".join([padding + '{"ph":"i"}'] * count)
        scanned = _native.scan(("[" + items + "]").encode(), columnar.ARG_KEYS)
        assert scanned is not None and scanned["n"] == count
        bare = _native.scan(items.encode(), columnar.ARG_KEYS, (), (), True)
        assert bare is not None and bare["n"] == count


@pytest.mark.parametrize("items, taken", [
    ("", True), (" \n ", True), ('{"ph":"i"}', True), (' {"ph":"i"} , {"ph":"X"} ', True),
    ('{"ph":"i"},', False), (',{"ph":"i"}', False), ('{"ph":"i"},,{"ph":"i"}', False), ('[{"ph":"i"}]', False),
    ('{"ph":"i"}]', False), ('{"ph":"i"} {"ph":"i"}', False), ("1", False),
])
def test_bare_items_scan_as_the_array_does(items, taken):
    """The events without the array's brackets (`bare`: a chunk scanned where the file was read
    into memory) are the array's items: nothing else may be around or between them."""
    from traceanalyze import _native

    bare = _native.scan(items.encode(), columnar.ARG_KEYS, (), (), True)
    assert (bare is not None) == taken
    if taken:
        array = _native.scan(("[" + items + "]").encode(), columnar.ARG_KEYS)
        assert bare["n"] == array["n"] and bare["fields"]["ph"] == array["fields"]["ph"]


@pytest.mark.parametrize("path", real_trace_params())
def test_bare_chunks_of_real_traces_give_the_bracketed_tables(path: Path):
    """`decode.decode_items` (a chunk's events scanned where they lie) gives `decode_chunk`'s
    tables for the same events between brackets."""
    from traceanalyze.load import decode

    chunks = EventChunks(path, block_size=1 << 18)
    for parts in chunks.pieces():
        items = b"".join(parts)
        bare = columnar.chunk_tables(items, False, bare=True)
        assert bare is not None
        assert_same_chunk(bare, columnar.chunk_tables(b"".join((b"[", items, b"]")), False))
        assert_same_chunk(decode.decode_items(items), decode.decode_chunk(b"".join((b"[", items, b"]"))))


@pytest.mark.parametrize("escape, taken", [("\\ud83d\\ude00", True), ("\\ud800 ", False), ("\\udc00", False),
                                           ("\\ud800\\u0041", False), ("\\ud800", False)])
def test_surrogate_escapes_even_where_no_column_reads_them(escape, taken):
    """A lone or mispaired surrogate escape is invalid JSON to msgspec, also inside a value no
    column reads: the scanner hands such a chunk back (found by the ASan fuzz)."""
    from traceanalyze import _native

    text = ('[{"ph":"X","cat":"kernel","name":"k","ts":1,"dur":1,"args":{"other":"a' + escape + '"}}]').encode()
    assert (_native.scan(text, columnar.ARG_KEYS) is not None) is taken
    if taken:
        msgspec.json.decode(text)
    else:
        with pytest.raises(msgspec.DecodeError):
            msgspec.json.decode(text)


def python_event(**overrides) -> dict:
    event = {"ph": "X", "cat": "python_function", "name": "torch/nn/modules/module.py(1520): _call_impl",
             "pid": 1, "tid": 1, "ts": 3, "dur": 4, "args": {"Python parent id": 7, "Python id": 8}}
    event.update(overrides)
    return event


@pytest.mark.parametrize("include_python", [False, True])
@pytest.mark.parametrize("text", [
    # the name and args of a python_function event are passed over unless python events are kept
    json.dumps([op(), python_event(name='a "quoted" \u00e9 \\ name'), kernel()]),
    json.dumps([python_event(name=None), python_event(args=None), python_event(args={"a": [1, {"b": [2.5e3, None]}]})]),
    # a repeated key
    '[{"ph":"X","cat":"python_function","name":"f","ts":1,"dur":1,"args":{"Python id":1,"Python id":2}}]',

    # the category after the name and args: those were read in full
    '[{"name":"g","args":{"External id":"not an int"},"ph":"X","cat":"python_function","ts":1,"dur":1}]',
    # a category written with an escape is not compared (its events are read in full)
    '[{"ph":"X","cat":"python\\u005ffunction","name":"f","ts":1,"dur":1,"args":{"Python id":1}}]',
])
def test_python_events_passed_over_give_the_same_tables(text, include_python):
    assert check(text.encode(), include_python) is not None


def test_args_keys_of_python_events_are_read_only_when_python_events_are_kept():
    """A key written with an escape is left to msgspec where the scanner reads the keys: in the args
    of a python_function event only when those events are kept."""
    text = b'[{"ph":"X","cat":"python_function","name":"f","ts":1,"dur":1,"args":{"Inp\\u0075t Dims":[[1]]}}]'
    assert check(text, include_python=False) is not None
    assert check(text, include_python=True) is None


@pytest.mark.parametrize("text", [
    '[{"ph":"X","cat":"python_function","name":"f\x01","ts":1,"dur":1}]',  # a raw control character
    '[{"ph":"X","cat":"python_function","name":"f","ts":1,"dur":1,"args":{"a":[1,}}]',  # invalid JSON
    '[{"ph":"X","cat":"python_function","name":"f","name":"g","ts":1,"dur":1}]',  # a repeated key
    '[{"ph":"X","cat":"python_function","name":"\\ud800","ts":1,"dur":1}]',  # a lone surrogate
    '[{"ph":"X","cat":"python_function","name":"f","ts":1,"dur":1,"args":{"a":"\\ud800"}}]',
    json.dumps([python_event(name=12)]),  # a name of a type the typed decode refuses: msgspec decides
    json.dumps([python_event(args=[1])]),  # args that are no object
])
def test_python_events_passed_over_are_still_validated(text):
    assert check(text.encode()) is None


def test_python_event_names_are_not_made_strings():
    from traceanalyze import _native

    text = json.dumps([python_event(name=f"frame {i}") for i in range(50)] + [op()]).encode()
    scanned = _native.scan(text, columnar.ARG_KEYS, (b"python_function",))
    assert scanned is not None and not any(s.startswith("frame") for s in scanned["strings"])
    assert "aten::mm" in scanned["strings"]
    assert any(s.startswith("frame") for s in _native.scan(text, columnar.ARG_KEYS)["strings"])


def test_python_events_passed_over_get_no_row():
    """With the tags they may have (`columnar._passed_over`), the scanner gives the events of a
    category passed over no row: the rows left are the others', each with its event number, and
    the events are all counted. An event whose tags some table's decode would refuse keeps its row
    (the caller then lets msgspec decide)."""
    from traceanalyze import _native

    events = [python_event(), op(), python_event(ts=2.5), kernel(), python_event(name=None, args=None), op()]
    text = json.dumps(events).encode()
    scanned = _native.scan(text, columnar.ARG_KEYS, *columnar._passed_over(False))
    assert (scanned["n"], scanned["events"]) == (3, 6)
    assert list(struct.unpack("<3q", scanned["seq"])) == [1, 3, 5]
    assert check(text) is not None
    refused = json.dumps([python_event(), python_event(ts="3"), op()]).encode()
    scanned = _native.scan(refused, columnar.ARG_KEYS, *columnar._passed_over(False))
    assert (scanned["n"], scanned["events"]) == (2, 3)
    assert check(refused) is None
    kept = _native.scan(text, columnar.ARG_KEYS, *columnar._passed_over(True))
    assert kept["n"] == 6


@pytest.mark.parametrize("text", [
    # the event numbers of skipped rows and of events without a phase count the dropped events
    json.dumps([python_event(), python_event(), {**op(), "dur": None}, python_event(), kernel(ts=None)]),
    json.dumps([python_event(), python_event(), {k: v for k, v in op().items() if k != "ph"}, kernel()]),
    # floats parsed after the scan, in a dropped event and in a row after it
    '[{"ph":"X","cat":"python_function","name":"f","ts":1.1234567890123456789012,"dur":1},'
    '{"ph":"X","cat":"kernel","name":"k","ts":2.1234567890123456789012,"dur":1}]',
])
def test_event_numbers_count_the_events_without_rows(text):
    assert check(text.encode()) is not None


def recording_scanned_arrays(monkeypatch) -> list[tuple[int, int]]:
    """The address ranges of the scanner's arrays of each chunk decoded from now on (the caller
    clears the list between chunks: a freed array's addresses may be taken again)."""
    import numpy as np

    ranges: list[tuple[int, int]] = []
    events_frame = columnar._events_frame

    def recording(scanned, needed, seq):
        for arrays in scanned["fields"].values():
            for array in arrays:
                view = np.frombuffer(array, dtype=np.uint8)
                start = view.__array_interface__["data"][0]
                ranges.append((start, start + view.nbytes))
        return events_frame(scanned, needed, seq)

    monkeypatch.setattr(columnar, "_events_frame", recording)
    return ranges


def columns_in(tables, ranges: list[tuple[int, int]]) -> tuple[list[str], int]:
    """The numeric columns without nulls of a chunk's tables whose buffer lies inside one of
    `ranges` (the chunk's scanned arrays), and how many such columns were looked at."""
    inside, looked = [], 0
    for frame in tables.frames.values():
        for series in frame.get_columns():
            if not series.dtype.is_numeric() or series.null_count():
                continue
            address = series.to_numpy(allow_copy=False).__array_interface__["data"][0]
            if any(start <= address < end for start, end in ranges):
                inside.append(series.name)
            looked += 1
    return inside, looked


@pytest.mark.parametrize("interleaved", [False, True])
def test_a_tables_rows_hold_no_view_of_the_scanned_columns(monkeypatch, interleaved):
    """Tables whose events form one run each in the chunk (as a trace often lists one kind of
    event together), or are interleaved: a filter of one run would return a view of each scanned
    column, and a column the plan passes through unchanged (pid, External id, correlation) would
    keep the whole chunk's scanned array alive until the table is finished. Every kept column is
    its own copy."""
    ranges = recording_scanned_arrays(monkeypatch)
    ops = [op(**{"External id": k, "Sequence number": k}) for k in range(50)]
    kernels = [kernel(correlation=k, args={"device": 0, "stream": 7, "correlation": k}) for k in range(50)]
    events = [event for pair in zip(ops, kernels) for event in pair] if interleaved else [*ops, *kernels]
    fast = check(json.dumps(events).encode())
    assert fast is not None and ranges
    inside, looked = columns_in(fast, ranges)
    assert inside == []
    assert looked >= 6  # pid, tid, external_id, sequence_number of the ops; correlation, pid of the kernels


@pytest.mark.parametrize("path", real_trace_params())
def test_real_traces_chunks_hold_no_view_of_the_scanned_columns(path: Path, monkeypatch):
    """The same on the first chunks of every real trace (Kineto lists CPU ops, runtime calls and
    kernels in runs: the case the views came from)."""
    ranges = recording_scanned_arrays(monkeypatch)
    looked = 0
    for count, parts in enumerate(EventChunks(path, block_size=1 << 18).pieces()):
        if count == 8:
            break
        ranges.clear()
        tables = columnar.chunk_tables(b"".join((b"[", *parts, b"]")), False)
        if tables is None:  # left to msgspec: no scanned columns to hold
            continue
        inside, checked = columns_in(tables, ranges)
        assert inside == [], f"chunk {count}: {inside}"
        looked += checked
    assert looked


def pieces_finished_together(texts: list[bytes], include_python: bool = False):
    """The tables of `texts` (each a chunk's text) scanned one by one and finished together, checked
    against msgspec's tables of their events as one chunk."""
    pieces = [columnar.scan_piece(text, include_python) for text in texts]
    assert all(piece is not None for piece in pieces), "the scanner turned a piece away"
    joined = b"[" + b",".join(text.strip()[1:-1] for text in texts if text.strip()[1:-1].strip()) + b"]"
    together = columnar.tables_of_pieces(pieces)
    assert_same_chunk(together, msgspec_chunk(joined, include_python=include_python))
    return together


@pytest.mark.parametrize("include_python", [False, True])
def test_pieces_finished_together_give_the_tables_of_their_events_as_one_chunk(include_python):
    """Each piece numbers its strings and shape texts in its own order; finished together, every
    name, category, string argument and shape takes the numbering of all of them, the event numbers
    of skipped rows and of events without a phase count the events of the pieces before, and each
    distinct shape text is decoded once."""
    comm = kernel("ncclDevKernel_AllReduce", args={"Collective name": "allreduce", "dtype": "Float",
                                                   "Process Group Name": "0", "stream": 9})
    first = [kernel("a"), python_event(), op(), kernel("b", pid="rank 1", tid="stream 3"),
             {**op(), "name": "aten::add", "dur": None}]
    second = [python_event(), kernel("b"), comm, op(**{"Input Dims": [[7]], "Input type": ["int"]}),
              {k: v for k, v in kernel("c").items() if k != "ph"}, op(), kernel("a", ts=2.5)]
    third = [python_event(), python_event()]  # no row but events to count
    fourth = [kernel(ts=None), {**comm, "name": "d"}, op(**{"Concrete Inputs": ["", "3"]})]
    texts = [json.dumps(events).encode() for events in (first, second, third, fourth)]
    together = pieces_finished_together(texts, include_python)
    assert together.events == 17
    gpu = together.frames["gpu"]
    assert gpu["name"].cast(str).to_list() == ["a", "b", "b", "ncclDevKernel_AllReduce", "a", "d"]
    assert gpu["dtype"].cast(str).to_list() == [None, None, None, "Float", None, "Float"]
    assert together.frames["cpu_ops"]["input_types"].cast(pl.List(pl.String)).to_list() == [
        ["float", "float"], ["int"], ["float", "float"], ["float", "float"]]
    # the first event of each kind skipped, counted over the pieces: the op without a duration is
    # the first piece's fifth event (4), the kernel without a phase the second's fifth (5 + 4), the
    # kernel without a start the fourth's first (5 + 7 + 2)
    assert {reason: first for reason, (_, first) in together.skipped.items()} == {
        SKIP_NO_DUR: 4, SKIP_NO_PHASE: 9, SKIP_NO_TS_OR_NAME: 14}
    merged = columnar._merged([columnar.scan_piece(text, include_python) for text in texts])
    dims = merged.texts[0].distinct.to_list()
    assert len(dims) == len(set(dims)) == 2  # [[2, 3], [3, 4]] four times, [[7]] once: two texts decoded


@pytest.mark.parametrize("path", real_trace_params())
def test_real_traces_pieces_finished_together(path: Path):
    """The first chunks of every real trace, scanned one by one and finished together, give the
    tables of their events as one chunk."""
    texts = []
    for parts in EventChunks(path, block_size=1 << 17).pieces():
        texts.append(b"".join((b"[", *parts, b"]")))
        if len(texts) == 4:
            break
    for include_python in (False, True):
        pieces_finished_together(texts, include_python)


def test_threads_keep_the_order_of_pieces_finished_alone_and_together(tmp_path: Path, monkeypatch):
    """Pieces of many rows (ops) finished by the thread that scanned them, between runs of pieces
    of few rows (Python events, passed over) finished together: the tables come in the order of
    the events (an op's id is its place among the ops), as the whole-document reference has them."""
    from test_streaming import assert_same, whole_document

    from traceanalyze.load import decode, load_file

    events, clock = [], 0
    for region in range(12):
        for i in range(400):
            clock += 1
            if region % 3 == 2:  # a dense region: ops, every one a row
                events.append({**op(), "name": f"aten::op{region}", "ts": clock, "dur": 0.5})
            else:  # a sparse one: an op among Python events
                events.append({**op(), "ts": clock} if i % 50 == 0 else python_event(ts=clock))
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    monkeypatch.setattr(decode, "COLUMNAR_MIN_BYTES", 0)
    monkeypatch.setattr(decode, "FINISH_ROWS", 40)
    finished = []
    finish = decode.finish_pieces
    monkeypatch.setattr(decode, "finish_pieces", lambda pieces: finished.append(len(pieces)) or finish(pieces))
    trace = load_file(path, include_flows=True, block_size=16 << 10, workers=2)
    assert_same(trace, whole_document(path))
    assert max(finished) > 1 and 1 in finished  # pieces were finished together, and alone


BRIDGE_IN_A_FRESH_PROCESS = {
    "scan": """
events = b'[' + b','.join(b'{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":%d,"dur":1}' % i
                          for i in range(4000)) + b']'
assert columnar.scan_piece(events, False) is not None
""",
    "threads": eight_threads_at_once("columnar.prepare_for_threads()"),
}
BRIDGE_CHECK = """
import sys
from traceanalyze.load import columnar
assert "numpy" not in sys.modules, "numpy was imported before any chunk was scanned"
{how}
from traceanalyze import native
print(native._BRIDGE_READY.is_set(), "numpy" in sys.modules)
"""


@pytest.mark.parametrize("how", ["scan", "threads"])
def test_numpy_and_its_polars_bridge_are_imported_once_when_first_needed(how):
    """A scan imports numpy and polars' bridge to it once its compiled part is done (the decoding
    threads import it while the first chunks are read, no longer before); threads asking at
    once wait for the one that imports."""
    import subprocess
    import sys

    source = BRIDGE_CHECK.format(how=BRIDGE_IN_A_FRESH_PROCESS[how])
    done = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["True", "True"]
