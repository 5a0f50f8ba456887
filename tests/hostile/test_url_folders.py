"""A folder named by URL (fsspec): each rank is copied under a cap in bytes and time before the
loader reads it (an endless body is refused, not written until the disk is full), the URL's
`user:password@` reaches no output and no error, and the URL is shown intact (`s3://`, not `s3:/`).

The URLs here are those of a small in-memory fsspec filesystem registered by the test (`secretfs://`),
which, as s3fs or an HTTP server would, takes credentials in the URL and serves one endless file;
test_url_http.py reads a real HTTP server on 127.0.0.1 through fsspec's HTTP filesystem (aiohttp)."""

from __future__ import annotations

import io
import os
import json
import time

import fsspec
import pytest
from fsspec.implementations.memory import MemoryFileSystem
from typer.testing import CliRunner

from traceanalyze.api import analyze
from traceanalyze.cli import app
from traceanalyze.errors import TraceFormatError
from traceanalyze.pipeline.options import RunOptions
from traceanalyze.pipeline.urls import SourceUrl, download
from traceanalyze.load.limits import LoadLimits

FIXTURE = __import__("pathlib").Path(__file__).resolve().parents[2] / "fixtures" / "synthetic_training.json.gz"
SECRET = "hunter2secret"


class Endless(io.RawIOBase):
    """An HTTP body that never ends (what a hostile server sends)."""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        buffer[:] = b" " * len(buffer)
        return len(buffer)


class SecretFS(MemoryFileSystem):
    protocol = "secretfs"
    store: dict = {}
    pseudo_dirs = [""]

    @classmethod
    def _strip_protocol(cls, path):
        path = path.split("://", 1)[-1]
        host, _, rest = path.lstrip("/").partition("/")
        return ("/" + host.rsplit("@", 1)[-1] + ("/" + rest if rest else "")).rstrip("/")

    def _open(self, path, mode="rb", **kwargs):
        if "r" in mode and self._strip_protocol(path).endswith("endless.json.gz"):
            return io.BufferedReader(Endless())
        return super()._open(path, mode, **kwargs)


@pytest.fixture(scope="module")
def bucket():
    fsspec.register_implementation("secretfs", SecretFS, clobber=True)
    fs = SecretFS()
    for rank in range(2):
        fs.pipe(f"/bucket/job/rank{rank}.json.gz", FIXTURE.read_bytes())
    fs.pipe("/bucket/bad/rank0.json.gz", FIXTURE.read_bytes())
    fs.pipe("/bucket/bad/endless.json.gz", b"")
    return fs


def test_source_url_keeps_the_url_and_drops_credentials():
    url = SourceUrl(f"s3://key:{SECRET}@bucket/job/")
    assert (str(url), url.name, url.parent.name) == ("s3://bucket/job/", "job", "bucket")
    import pickle

    assert str(pickle.loads(pickle.dumps(url))) == str(url)


def test_download_stops_at_the_cap_and_the_deadline(tmp_path):
    with open(tmp_path / "x", "wb") as target, pytest.raises(TraceFormatError, match=(
            r"^http://h/x.json.gz: more than 8 MB to download.*--max-download-mb")):
        download(io.BufferedReader(Endless()), target, f"http://u:{SECRET}@h/x.json.gz", max_bytes=8 << 20,
                 max_seconds=60)
    assert (tmp_path / "x").stat().st_size <= 8 << 20
    ticks = iter(range(0, 10**6, 10))
    with open(tmp_path / "y", "wb") as target, pytest.raises(TraceFormatError, match=r"not downloaded within 25 s"):
        download(io.BufferedReader(Endless()), target, "http://h/y", max_bytes=1 << 40, max_seconds=25,
                 clock=lambda: next(ticks))


def test_an_endless_rank_is_refused_in_bounded_time(bucket):
    started = time.perf_counter()
    with pytest.raises(TraceFormatError) as raised:
        analyze(f"secretfs://alice:{SECRET}@bucket/bad/",
                run=RunOptions(limits=LoadLimits(download_bytes=16 << 20), workers=1, cache=False))
    assert time.perf_counter() - started < 60
    assert str(raised.value).startswith("secretfs:///bucket/bad/endless.json.gz: more than 16 MB to download")
    assert SECRET not in str(raised.value)


@pytest.mark.parametrize("form", ["json", "markdown", "terminal", "html"])
def test_no_output_carries_the_credentials_and_the_url_is_intact(bucket, form):
    result = CliRunner().invoke(app, ["report", f"secretfs://alice:{SECRET}@bucket/job/", "-f", form, "--workers", "1",
                                      "--no-cache"])
    assert result.exit_code == 0, result.output
    assert SECRET not in result.output and "alice" not in result.output
    assert "secretfs://bucket/job" in result.output and "secretfs:/bucket" not in result.output
    if form == "json":
        document = json.loads(result.stdout)
        assert document["source"] == "secretfs://bucket/job/"
        assert [rank["source"] for rank in document["ranks"]] == [
            "secretfs:///bucket/job/rank0.json.gz", "secretfs:///bucket/job/rank1.json.gz"]


@pytest.mark.parametrize("command", [["gate", "URL", "--max-idle-fraction", "1", "--baseline", "URL",
                                      "--max-regression", "50%", "--allow-unreliable"],
                                     ["diff", "URL", "URL"], ["diff", "URL", "URL", "-f", "json"]])
def test_gate_and_diff_take_the_same_urls(bucket, command, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no pyproject.toml of the repository
    monkeypatch.setattr(os, "cpu_count", lambda: 1)  # one worker, this process: where secretfs:// is registered
    url = f"secretfs://alice:{SECRET}@bucket/job/"
    result = CliRunner().invoke(app, [url if part == "URL" else part for part in command])
    assert result.exit_code == 0, result.output
    assert SECRET not in result.output and "no such file" not in result.output
    assert "secretfs://bucket/job/" in result.output


def test_max_download_mb_is_a_flag(bucket):
    result = CliRunner().invoke(app, ["report", f"secretfs://alice:{SECRET}@bucket/bad/", "--max-download-mb", "4",
                                      "--workers", "1", "--no-cache"])
    assert result.exit_code == 2
    assert "secretfs:///bucket/bad/endless.json.gz: more than 4 MB to download" in result.output
    assert SECRET not in result.output


def test_info_takes_the_same_urls(bucket):
    result = CliRunner().invoke(app, ["info", f"secretfs://alice:{SECRET}@bucket/job/", "--width", "200"])
    assert result.exit_code == 0, result.output
    assert SECRET not in result.output and "alice" not in result.output
    assert "secretfs:///bucket/job/rank0.json.gz" in result.output and "traceanalyze-" not in result.output
