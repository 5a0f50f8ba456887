"""The events of a rank file named by URL are counted while it streams in (`url_limits.EventCount`)
as the loader counts them: the objects of `traceEvents`, not the `"ph"` keys of the text. A trace
whose `args` hold many `"ph"` keys (and strings holding quotes, brackets and backslashes) stays
under `--max-events` when its events do, however the body is cut into pieces."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import fsspec
import pytest

from traceanalyze.api import analyze
from traceanalyze.errors import TraceFormatError
from traceanalyze.load.limits import LoadLimits
from traceanalyze.pipeline.options import RunOptions
from traceanalyze.pipeline.url_limits import EventCount, StreamedLimits

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "synthetic_training.json.gz"
PH_KEYS = 20  # `"ph"` keys added to each event's args


def _hostile_document() -> tuple[bytes, int]:
    """The fixture with `PH_KEYS` `"ph"` keys in each event's args (nested objects and arrays, and a
    string with escaped quotes, brackets and backslashes), and its number of events."""
    document = json.loads(gzip.decompress(FIXTURE.read_bytes()))
    for event in document["traceEvents"]:
        nested = {f"k{k}": {"ph": "X", "inner": [{"ph": "B"}]} for k in range(PH_KEYS // 2)}
        event["args"] = {**event.get("args", {}), **nested, "note": 'x\\"ph\\": {[}]\\\\'}
    return json.dumps(document).encode(), len(document["traceEvents"])


@pytest.mark.parametrize("piece", [1, 7, 4093, 1 << 20])
def test_the_streamed_count_is_the_events_not_the_ph_keys(piece):
    text, events = _hostile_document()
    assert text.count(b'"ph"') > PH_KEYS * events  # what the count of keys saw
    counted = EventCount()
    for start in range(0, len(text), piece if piece > 1 else 1):
        if piece == 1 and 2000 <= start < len(text) - 2000:  # byte by byte at both ends only
            continue
        counted.feed(text[start:start + piece])
    if piece > 1:
        assert counted.events == events and counted.depth == 0 and not counted.in_string
    compressed = StreamedLimits("http://h/x.json.gz", LoadLimits(events=events))
    body = gzip.compress(text)
    for start in range(0, len(body), max(piece, 4)):
        compressed.feed(body[start:start + max(piece, 4)])
    assert compressed.events == events
    with pytest.raises(TraceFormatError, match=rf"more than {events - 1} events"):
        StreamedLimits("http://h/x.json", LoadLimits(events=events - 1)).feed(text)


def test_a_url_trace_under_max_events_with_many_ph_keys_is_analysed():
    """End to end: the rank file read from its URL under `--max-events` = its number of events."""
    text, events = _hostile_document()
    fsspec.filesystem("memory").pipe("/ph_keys/rank0.json", text)
    report = analyze("memory://ph_keys", run=RunOptions(workers=1, limits=LoadLimits(events=events)))
    assert [str(r.source) for r in report.ranks] == ["memory:///ph_keys/rank0.json"]
    assert report.ranks[0].kernels.height > 0
