"""A folder's URL over real HTTP (a server thread on 127.0.0.1, read through fsspec's HTTP filesystem,
which needs aiohttp): the loader's limits apply while a rank file streams in (`pipeline/url_limits.py`),
so an endless body or an endless gzip bomb stops at the first limit it breaks, after a few MB sent,
not at the download cap; a slow body stops at the download deadline. Every body the server sends
ends by itself after `SERVER_SECONDS`, so no test can hang."""

from __future__ import annotations

import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

pytest.importorskip("aiohttp")

from traceanalyze.api import analyze  # noqa: E402
from traceanalyze.pipeline.options import RunOptions  # noqa: E402
from traceanalyze.errors import TraceFormatError  # noqa: E402
from traceanalyze.load.limits import LoadLimits  # noqa: E402

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "synthetic_training.json.gz"
SERVER_SECONDS = 20
EVENT = b'{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1, "pid": 0, "tid": 7},'


def _endless_events():
    yield b'{"traceEvents": ['
    while True:
        yield EVENT * 10_000


def _endless_spaces():
    yield b'{"traceEvents": ['
    while True:
        yield b" " * (1 << 20)


def _endless_bomb():
    deflate = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    yield deflate.compress(b'{"traceEvents": [')
    block = b" " * (4 << 20)
    while True:
        yield deflate.compress(block) + deflate.flush(zlib.Z_SYNC_FLUSH)


def _slow():
    yield FIXTURE.read_bytes()[:10]
    while True:
        time.sleep(0.05)
        yield b" "


BODIES = {"events.json": _endless_events, "spaces.json": _endless_spaces, "bomb.json.gz": _endless_bomb,
          "slow.json": _slow}


class Handler(BaseHTTPRequestHandler):
    sent: dict[str, int] = {}

    def log_message(self, *args) -> None:
        pass

    def do_HEAD(self) -> None:
        self._answer(head=True)

    def do_GET(self) -> None:
        self._answer(head=False)

    def _answer(self, *, head: bool) -> None:
        folder, _, name = self.path.strip("/").partition("/")
        if not name:  # a folder: an index page of links, as a web server lists one
            names = ["rank0.json.gz", "rank1.json.gz"] if folder == "job" else ["rank0.json.gz", folder]
            page = "".join(f'<a href="{n}">{n}</a>\n' for n in names).encode()
            self._headers(200, len(page), "text/html")
            if not head:
                self.wfile.write(page)
            return
        if name.startswith("rank"):
            body = FIXTURE.read_bytes()
            self._headers(200, len(body), "application/octet-stream")
            if not head:
                self.wfile.write(body)
            return
        if name not in BODIES:
            self._headers(404, 0, "text/plain")
            return
        self._headers(200, None, "application/octet-stream")  # no length: read until the server stops
        if head:
            return
        ends = time.monotonic() + SERVER_SECONDS
        try:
            for part in BODIES[name]():
                self.wfile.write(part)
                Handler.sent[name] = Handler.sent.get(name, 0) + len(part)
                if time.monotonic() > ends:
                    break
        except OSError:  # the reader went away: what a refusal does
            pass

    def _headers(self, status: int, length: int | None, kind: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        if length is not None:
            self.send_header("Content-Length", str(length))
        else:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()


@pytest.fixture(scope="module")
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def _refused(url: str, limits: LoadLimits) -> tuple[str, float]:
    started = time.perf_counter()
    with pytest.raises(TraceFormatError) as raised:
        analyze(url, run=RunOptions(limits=limits, workers=1, cache=False))
    return str(raised.value), time.perf_counter() - started


def test_a_folder_over_http_is_reported(server):
    report = analyze(f"{server}/job/", run=RunOptions(workers=1, cache=False))
    assert [str(rank.source) for rank in report.ranks] == [f"{server}/job/rank0.json.gz",
                                                            f"{server}/job/rank1.json.gz"]


def test_an_endless_gzip_bomb_stops_at_its_inflation(server):
    message, seconds = _refused(f"{server}/bomb.json.gz/", LoadLimits(download_bytes=256 << 20))
    assert f"{server}/bomb.json.gz/bomb.json.gz: inflates more than 100 times" in message, message
    assert "--max-inflation" in message and "\n" not in message
    assert seconds < SERVER_SECONDS / 2  # not once the server stopped sending
    assert Handler.sent["bomb.json.gz"] < 4 << 20  # stopped after about 64 MB inflated (64 KB sent), not at the cap


def test_an_endless_body_of_events_stops_at_the_events_limit(server):
    message, seconds = _refused(f"{server}/events.json/", LoadLimits(events=100_000, download_bytes=1 << 30))
    assert "events.json: more than 100000 events" in message and "--max-events" in message, message
    assert seconds < 30
    assert Handler.sent["events.json"] < 64 << 20


def test_an_endless_blank_body_stops_at_the_event_size(server):
    message, seconds = _refused(f"{server}/spaces.json/", LoadLimits(event_bytes=8 << 20, download_bytes=1 << 30))
    assert "spaces.json: no end of an event in" in message and "--max-event-mb" in message, message
    assert seconds < 30
    assert Handler.sent["spaces.json"] < 64 << 20


def test_a_slow_body_stops_at_the_deadline(server):
    message, seconds = _refused(f"{server}/slow.json/", LoadLimits(download_seconds=1.0))
    assert "slow.json: not downloaded within 1 s" in message, message
    assert seconds < 15


@pytest.mark.parametrize("chunk", [1, 3, 4093, 1 << 20])
def test_the_streamed_count_is_the_loaders_in_any_chunks(chunk):
    """A Kineto event has one `"ph"` key: the streamed count is exact, whatever the chunks cut (a key
    split between two, a gzip header split, two gzip members one after the other)."""
    import gzip
    import json

    from traceanalyze.pipeline.url_limits import StreamedLimits

    data = FIXTURE.read_bytes()[:3000] if chunk < 4 else FIXTURE.read_bytes()
    events = len(json.loads(gzip.decompress(FIXTURE.read_bytes()))["traceEvents"])
    body = FIXTURE.read_bytes() * 2 if chunk >= 4 else data
    checks = StreamedLimits("http://h/x.json.gz", LoadLimits())
    for start in range(0, len(body), chunk):
        checks.feed(body[start:start + chunk])
    if chunk >= 4:
        assert checks.events == 2 * events and checks.inflated == 2 * len(gzip.decompress(data))
    else:
        assert checks.inflated > 0 and checks.events > 0
    refused = StreamedLimits("http://u:pw@h/x.json.gz", LoadLimits(events=events - 1))
    with pytest.raises(TraceFormatError, match=rf"^http://h/x.json.gz: more than {events - 1} events"):
        refused.feed(FIXTURE.read_bytes())
