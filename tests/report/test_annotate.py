"""`traceanalyze annotate`: the original events, unchanged but for args["traceanalyze"] on judged
GPU ops, plus one slice per idle gap and per finding span; our loader reads it back to the same tables."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal
from typer.testing import CliRunner

from mutations import base_trace, json_values, mutated

import traceanalyze
from traceanalyze.cli import app
from traceanalyze.annotate import CATEGORY
from traceanalyze.pipeline.rank import build_report

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "synthetic_training.json.gz"
MUTATION_BASE = base_trace()


def events_of(path: Path) -> list[dict]:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt") as handle:
        return json.load(handle)["traceEvents"]


def test_annotated_trace_is_the_original_plus_gap_and_finding_slices(tmp_path):
    out = tmp_path / "annotated.json.gz"
    result = CliRunner().invoke(app, ["annotate", str(FIXTURE), "-o", str(out)])
    assert result.exit_code == 0, result.output
    original, annotated = events_of(FIXTURE), events_of(out)
    added = [e for e in annotated if e.get("cat") == CATEGORY or (e.get("ph") == "M" and e.get("pid") == 1001)]
    judged = [json.loads(json.dumps(e)) for e in annotated if CATEGORY in e.get("args", {})]
    kept = [e for e in annotated if e not in added]
    for event in kept:
        event.get("args", {}).pop(CATEGORY, None)
    assert kept == original

    rank = build_report(traceanalyze.load_trace(FIXTURE)).ranks[0]
    slices = [e for e in added if e["ph"] == "X"]
    gap_slices = [e for e in slices if e["name"].startswith("idle: ")]
    gaps = rank.gaps.select("start_ns", "duration_ns", "cause").iter_rows()
    assert sorted((round(e["ts"] * 1000), round(e["dur"] * 1000), e["name"]) for e in gap_slices) == sorted(
        (start, duration, f"idle: {cause}") for start, duration, cause in gaps)
    spans = sum(len(s) for s in rank.findings["spans"].to_list())
    assert len(slices) - len(gap_slices) == spans and spans > 0
    assert len(judged) == rank.roofline.filter(pl.col("correlation").is_not_null()).height
    gemm = next(e for e in judged if e["name"].startswith("ampere_bf16"))
    row = rank.roofline.filter(pl.col("name") == gemm["name"]).sort("start_ns").row(0, named=True)
    assert gemm["args"][CATEGORY]["bound"] == str(row["regime"])

    back, before = traceanalyze.load_trace(out), traceanalyze.load_trace(FIXTURE)
    for table in ("gpu", "cpu_ops", "runtime", "steps"):
        assert_frame_equal(getattr(back, table), getattr(before, table))


def test_annotate_refuses_to_write_over_its_input(tmp_path):
    copy = tmp_path / "t.json.gz"
    copy.write_bytes(FIXTURE.read_bytes())
    result = CliRunner().invoke(app, ["annotate", str(copy), "-o", str(copy)])
    assert result.exit_code == 2
    assert copy.read_bytes() == FIXTURE.read_bytes()


def test_annotate_writes_plain_json_without_gz(tmp_path):
    out = tmp_path / "annotated.json"
    assert CliRunner().invoke(app, ["annotate", str(FIXTURE), "-o", str(out)]).exit_code == 0
    assert len(events_of(out)) > len(events_of(FIXTURE))


def layouts_of(document: dict) -> dict[str, bytes]:
    """The fixture's document written in the layouts the streamed writer must keep: as it is;
    with top-level keys after the events; as a bare array; with events that are no objects, a
    list as a name and a boolean pid among them; with a judged kernel repeated earlier in the file
    but later in time (each (correlation, name) is matched in time order, not file order); empty."""
    events = document["traceEvents"]
    rest = {key: value for key, value in document.items() if key != "traceEvents"}
    kernel = next(e for e in events if e.get("cat") == "kernel")
    later = {**kernel, "ts": kernel["ts"] + 0.5, "dur": 0.25}
    odd = [5, "x", None, [1], {"ph": "X", "name": ["k"], "args": {"correlation": 1}}, {"ph": "i", "pid": True}]
    return {
        "as written": json.dumps(document).encode(),
        "keys after the events": json.dumps({"schemaVersion": 1, "traceEvents": events, **rest}, indent=1).encode(),
        "bare array": json.dumps(events).encode(),
        "odd events": json.dumps({**rest, "traceEvents": odd + events + odd}).encode(),
        "a kernel twice": json.dumps({**rest, "traceEvents": [later, *events]}).encode(),
        "no events": json.dumps({**rest, "traceEvents": []}).encode(),
    }


def test_streamed_annotation_is_the_whole_document_annotation_in_every_layout(tmp_path, monkeypatch):
    from traceanalyze import annotate

    document = json.loads(gzip.open(FIXTURE).read())
    for layout, text in layouts_of(document).items():
        path = tmp_path / "t.json"
        path.write_bytes(text)
        try:
            report = build_report(traceanalyze.load_trace(path))
        except traceanalyze.TraceAnalyzeError:  # no events: nothing to annotate, as the CLI says
            assert layout == "no events"
            continue
        whole = json.loads(annotate.annotated_document(path, report))
        with monkeypatch.context() as patched:  # the streamed writer never reads the document whole
            patched.setattr(annotate, "read_bytes", lambda *_, **__: pytest.fail("read whole"))
            for block_size in (1 << 10, 1 << 24):  # many chunks, one chunk
                streamed = b"".join(annotate.annotated_pieces(path, report, block_size=block_size))
                assert json.loads(streamed) == whole, layout
        marked = [e for e in whole["traceEvents"] if isinstance(e, dict) and CATEGORY in (e.get("args") or {})]
        assert len(marked) == report.ranks[0].roofline.filter(pl.col("correlation").is_not_null()).height, layout


def test_each_correlation_and_name_is_matched_in_time_order_then_file_order():
    """The k-th event of a (correlation, name), by `ts` and then by place in the file, gets the
    k-th judged op's figures (ops in start order)."""
    from traceanalyze.annotate import _candidates, _Judged, _matched

    figures = pl.DataFrame({"correlation": [1, 1, 1, 2], "name_id": [0, 0, 0, 0], "bound": ["a", "b", "c", "d"],
                            "roof": None, "intensity_flop_per_byte": None, "roof_fraction": [0.1, 0.2, 0.3, 0.4],
                            "nth": [0, 1, 2, 0]},
                           schema_overrides={"name_id": pl.Int32, "roof": pl.String,
                                             "intensity_flop_per_byte": pl.Float64})
    candidates = _candidates([(0, 1, 0, 9.0), (5, 1, 0, 1.0), (7, 1, 0, 1.0), (8, 2, 0, 0.0), (9, 3, 0, 0.0),
                              (11, 1, 0, 20.0)])  # a fourth event of correlation 1: no fourth op
    marked = _matched([candidates], _Judged(figures, {"k": 0}))
    assert marked.rows() == [(0, "c", None, None, 0.3), (5, "a", None, None, 0.1), (7, "b", None, None, 0.2),
                             (8, "d", None, None, 0.4)]


def test_streamed_annotation_keeps_each_unjudged_event_as_written(tmp_path):
    """Events that get no figures are copied byte for byte (layout, key order, number format)."""
    from traceanalyze import annotate

    text = b'{"traceEvents": [\n  {"ph": "i", "name": "marker", "ts": 1.50, "pid": 7, "tid": 1, "s": "g"}\n],\n "x": 1}'
    path = tmp_path / "t.json"
    raw_events = json.loads(gzip.open(FIXTURE).read())["traceEvents"]
    path.write_bytes(text[:18] + json.dumps(raw_events).encode()[1:-1] + b",\n  " + text[19:])
    report = build_report(traceanalyze.load_trace(path))
    streamed = b"".join(annotate.annotated_pieces(path, report))
    assert b'{"ph": "i", "name": "marker", "ts": 1.50, "pid": 7, "tid": 1, "s": "g"}' in streamed
    assert streamed.endswith(b'],\n "x": 1}')


def test_an_empty_chunk_writes_nothing_twice(tmp_path, monkeypatch):
    """The document's head is written once, whatever chunks the reader yields (an empty one
    first, here): the output stays one valid document, the same as without it."""
    from traceanalyze.load.chrome import EventChunks
    from traceanalyze import annotate

    report = build_report(traceanalyze.load_trace(FIXTURE))
    plain = json.loads(b"".join(annotate.annotated_pieces(FIXTURE, report)))
    decode_each = EventChunks.decode_each

    def with_empty_chunks(self, decode):
        for chunk in decode_each(self, decode):
            yield decode(b"[]")
            yield chunk

    monkeypatch.setattr(EventChunks, "decode_each", with_empty_chunks)
    assert json.loads(b"".join(annotate.annotated_pieces(FIXTURE, report))) == plain


def test_annotating_reports_its_progress_over_both_passes(tmp_path):
    from traceanalyze import annotate

    report = build_report(traceanalyze.load_trace(FIXTURE))
    seen: list[tuple[int, int]] = []
    b"".join(annotate.annotated_pieces(FIXTURE, report, block_size=1 << 10, progress=lambda *p: seen.append(p)))
    size = FIXTURE.stat().st_size
    assert len(seen) > 2 and all(total == 2 * size for _, total in seen)
    done = [d for d, _ in seen]
    assert done == sorted(done) and done[-1] == 2 * size and any(d <= size for d in done)


def test_the_added_tracks_are_written_in_batches_as_one_array(monkeypatch):
    """The idle-gap and finding slices are encoded a batch at a time (a 1 GB trace has some 400k
    gaps); batches of two give the same document as one batch."""
    from traceanalyze import annotate

    assert list(annotate._batches(iter(range(5)), 2)) == [[0, 1], [2, 3], [4]]
    assert list(annotate._batches(iter([]), 2)) == []
    report = build_report(traceanalyze.load_trace(FIXTURE))
    whole = json.loads(b"".join(annotate.annotated_pieces(FIXTURE, report)))
    monkeypatch.setattr(annotate, "ADDED_BATCH", 2)
    assert json.loads(b"".join(annotate.annotated_pieces(FIXTURE, report))) == whole
    assert len(annotate.added_events(report, 1)) > 4


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_streamed_annotation_is_the_whole_document_annotation_on_mutated_traces(tmp_path_factory, data):
    """Any field or args key of a small trace replaced by any JSON value, or removed: the streamed
    writer (many chunks, one chunk) gives the document the whole-document one gives."""
    from traceanalyze import annotate

    path = tmp_path_factory.mktemp("mutated") / "t.json"
    path.write_text(json.dumps(mutated(MUTATION_BASE, data, json_values(allow_infinity=False))))
    try:
        report = build_report(traceanalyze.load_trace(path, cache=False))
    except traceanalyze.TraceAnalyzeError:
        return
    whole = json.loads(annotate.annotated_document(path, report))
    for block_size in (1 << 8, 1 << 24):
        assert json.loads(b"".join(annotate.annotated_pieces(path, report, block_size=block_size))) == whole
