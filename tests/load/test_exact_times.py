"""Timestamps beyond 2^53 ns (issue 12, point 3): a `ts` of 1712345678901234.567 µs is
1712345678901234567 ns on every decode path, digit for digit as written; a float64 would be
up to 252 ns off (it holds 1712345678901234.5 there)."""

from __future__ import annotations

import polars as pl
import pytest

from traceanalyze.load import columnar, load_trace
from traceanalyze.load.chrome import decode_document
from traceanalyze.load.convert import to_ns
from traceanalyze.load.fast import msgspec_chunk
from traceanalyze.load.general import general_chunk as _general_chunk, general_tables
from traceanalyze.load.times import decimal_ns, float_ns

# written times (µs) → kernels; each one's float64 has lost its nanoseconds
TEXTS = ["1712345678901234.567", "1712345678901234.001", "1712345678901234.999", "1712345678901235",
         "9007199254740.993", "4503599627370496.5", "1712345678901234.5675", "1712345678901234.5665",
         "-1712345678901234.25"]
DURATIONS = ["0.001", "86399999999.999", "12.5", "3", "0.0005", "2.0015", "1.25", "7.75", "1"]


def text_ns(text: str) -> int:
    """ns from the digits themselves (three decimals at most, or half to even beyond)."""
    negative = text.startswith("-")
    whole, _, fraction = text.lstrip("-").partition(".")
    value = int(whole) * 1000 + int((fraction + "000")[:3])
    rest = fraction[3:]
    if rest and (rest[0] > "5" or (rest[0] == "5" and (rest[1:].strip("0") or value % 2))):
        value += 1
    return -value if negative else value


def event(i: int, ts: str, dur: str, args: str | None = None) -> str:
    args = args or '{"device": 0, "stream": 7, "correlation": %d}' % i
    return ('{"ph": "X", "cat": "kernel", "name": "k%d", "pid": 0, "tid": 7, "ts": %s, "dur": %s, "args": %s}'
            % (i, ts, dur, args))


def chunk_text(extra: list[str] = ()) -> bytes:
    events = [event(i, t, d) for i, (t, d) in enumerate(zip(TEXTS, DURATIONS))]
    return ("[" + ", ".join(events + list(extra)) + "]").encode()


EXPECTED = {f"k{i}": (text_ns(t), text_ns(d)) for i, (t, d) in enumerate(zip(TEXTS, DURATIONS))}


def times_of(chunk) -> dict[str, tuple[int, int]]:
    gpu = chunk.frames["gpu"]
    return {name: (start, duration)
            for name, start, duration in gpu.select("name", "start_ns", "duration_ns").iter_rows()}


def test_the_floats_really_lose_the_nanoseconds():
    assert round(float("1712345678901234.567") * 1000) != 1712345678901234567
    assert text_ns("1712345678901234.567") == 1712345678901234567


@pytest.mark.parametrize("text", TEXTS + DURATIONS + ["0", "-0.0", "12.3456", "1.0005", "1.0015"])
def test_decimal_rule(text):
    assert decimal_ns(text) == text_ns(text)


def test_float_rule_below_2_53_needs_no_text():
    assert float_ns(float("1234567.891")) == 1234567891
    assert to_ns(float("7691357119906.253")) == 7691357119906253


@pytest.mark.skipif(not columnar.available(), reason="the compiled scanner is not built")
def test_compiled_scanner():
    assert times_of(columnar.chunk_tables(chunk_text(), False)) == EXPECTED


def test_msgspec_path():
    assert times_of(msgspec_chunk(chunk_text())) == EXPECTED


def test_general_path():
    assert times_of(_general_chunk(chunk_text(), False)) == EXPECTED


def test_tolerant_path_keeps_the_digits():
    """An event whose args hold a wrongly typed value is repaired by re-encoding it: the digits survive."""
    bad = event(99, "1712345678901234.567", "1",
                '{"device": 0, "stream": 7, "correlation": 99, "grid": "x", "flops": [1]}')
    chunk = _general_chunk(chunk_text([bad]), False)
    assert chunk.malformed == 0
    assert times_of(chunk) == {**EXPECTED, "k99": (1712345678901234567, 1000)}


@pytest.mark.parametrize("extra", [[], [event(99, "1712345678901234.567", "1", '{"device": [0], "stream": 7}')]],
                         ids=["typed", "tolerant"])
def test_whole_document_path(extra):
    """The whole-document decoder, typed, and (an event with a wrongly typed arg) untyped then
    converted event by event (`events_tolerant`)."""
    document, malformed = decode_document(b'{"traceEvents": %s}' % chunk_text(extra),
                                          path=None)  # type: ignore[arg-type]
    expected = {**EXPECTED, "k99": (1712345678901234567, 1000)} if extra else EXPECTED
    assert times_of(general_tables(document.traceEvents, include_python=False, malformed=malformed)) == expected


@pytest.mark.skipif(not columnar.available(), reason="the compiled scanner is not built")
def test_an_exponent_takes_the_python_paths():
    text = chunk_text([event(50, "1.7123456789012345e15", "1")])
    assert columnar.chunk_tables(text, False) is None
    assert times_of(msgspec_chunk(text))["k50"] == (1712345678901234500, 1000)


def test_load_trace_end_to_end(tmp_path):
    path = tmp_path / "epoch.json"
    path.write_bytes(b'{"traceEvents": %s}' % chunk_text())
    gpu = load_trace(path).gpu
    assert dict(zip(gpu["name"], zip(gpu["start_ns"], gpu["duration_ns"]))) == EXPECTED


def test_launch_delays_and_gaps_from_such_timestamps_are_exact(tmp_path):
    """End to end (issue 12.3: "launch delays ±460 ns, the window and gap causes wrong"): a trace
    written at an epoch-µs base of 1.7e15 with three decimals; every derived time is the exact
    difference of the texts, where float64 µs would be off by up to 250 ns."""
    import json
    import re
    from decimal import Decimal

    from builder import TraceBuilder

    from traceanalyze.analysis.idle import idle_gaps
    from traceanalyze.analysis.launch import launch_latency

    b = TraceBuilder(base_us=0.0)
    b.launch_kernel(launch_us=0.567, launch_dur_us=0.123, start_us=0.999, dur_us=10.001, name="k1")
    b.launch_kernel(launch_us=2.001, launch_dur_us=0.5, start_us=20.374, dur_us=1.25,
                    name="k2")  # queued: gap cause launch
    b.launch_kernel(launch_us=31.249, launch_dur_us=0.25, start_us=31.751, dur_us=1,
                    name="k3")  # launched 249 ns into the gap: host
    base = Decimal("1712345678901234.000")
    document = b.to_dict()
    for event in document["traceEvents"]:
        if isinstance(event.get("ts"), (int, float)):
            event["ts"] = f"@{base + Decimal(repr(event['ts']))}"
    text = re.sub(r'"@(-?[0-9.]+)"', r"\1", json.dumps(document))
    assert "1712345678901234.567" in text and "1712345678901234.999" in text
    path = tmp_path / "epoch.json"
    path.write_text(text)
    trace = load_trace(path)
    base_ns = 1712345678901234000
    latency = launch_latency(trace).sort("start_ns")
    assert latency.select("name", "launch_to_start_ns", "launch_delay_ns").rows() == [
        ("k1", 432, 309), ("k2", 18_373, 17_873), ("k3", 502, 252)]
    gaps = idle_gaps(trace).sort("start_ns")
    assert gaps.select(pl.col("start_ns") - base_ns, "duration_ns", pl.col("cause").cast(pl.String)).rows() == [
        (11_000, 9_374, "launch"), (21_624, 10_127, "host")]
