"""What `gate` and `diff` read: a trace (file or folder of rank traces), turned into the report
dict of `report_to_dict`, or a JSON report saved earlier (`traceanalyze report --format json -o
base.json`), recognised by its `schema_version` key and read as is, so a CI job can keep a small
report instead of a big trace."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable

import msgspec

from traceanalyze.errors import TraceFormatError
from traceanalyze.report.jsonout import report_to_dict
from traceanalyze.report.model import SCHEMA_VERSION, Report

KNOWN_SCHEMA_VERSIONS = (SCHEMA_VERSION,)
_PEEK_BYTES = 1 << 20
_REPORT_KEY = re.compile(rb'"schema_version"\s*:')
_TRACE_KEY = re.compile(rb'"traceEvents"\s*:')


def is_saved_report(path: Path) -> bool:
    """Whether `path` is a saved JSON report rather than a trace: a plain `.json` file whose
    top-level object has `schema_version` (Kineto traces spell theirs `schemaVersion`). Looks at
    the first MiB; decodes the whole file only when that does not tell."""
    if not path.is_file() or path.name.endswith(".gz"):
        return False
    try:
        with path.open("rb") as handle:
            head = handle.read(_PEEK_BYTES)
    except OSError:
        return False  # the trace loader says what is wrong with it
    report_at = _REPORT_KEY.search(head)
    trace_at = _TRACE_KEY.search(head)
    if report_at or trace_at:
        return bool(report_at) and (trace_at is None or report_at.start() < trace_at.start())
    if len(head) < _PEEK_BYTES:
        return False
    try:
        document = msgspec.json.decode(path.read_bytes())
    except (msgspec.DecodeError, OSError):
        return False
    return isinstance(document, dict) and "schema_version" in document and "traceEvents" not in document


def _require(condition: bool, path: Path, what: str) -> None:
    if not condition:
        raise TraceFormatError(f"{path}: not a traceanalyze JSON report: {what}")


def _check_kernels(kernels: Any, path: Path) -> None:
    _require(isinstance(kernels, list), path, "'kernels' is not a list")
    for row in kernels:
        _require(isinstance(row, dict) and isinstance(row.get("name"), str) and isinstance(row.get("count"), int)
                 and isinstance(row.get("total_us"), (int, float)), path, "a kernel without name, count and total_us")


def read_saved_report(path: Path) -> dict[str, Any]:
    """A saved JSON report, checked for the schema version and the keys `gate`/`diff` read."""
    try:
        document = msgspec.json.decode(path.read_bytes())
    except msgspec.DecodeError as error:
        raise TraceFormatError(f"{path}: invalid JSON: {error}") from None
    except OSError as error:
        raise TraceFormatError(f"{path}: cannot read: {error.strerror or error}") from None
    _require(isinstance(document, dict), path, "the top level is not an object")
    if "kind" in document:  # a gate verdict or a diff saved as JSON
        raise TraceFormatError(f"{path}: a traceanalyze {document['kind']} JSON, not a report")
    version = document.get("schema_version")
    if version not in KNOWN_SCHEMA_VERSIONS:
        raise TraceFormatError(
            f"{path}: report schema_version {version!r} is not one this traceanalyze reads "
            f"({', '.join(KNOWN_SCHEMA_VERSIONS)}); make the report again with this version"
        )
    summary, ranks = document.get("summary"), document.get("ranks")
    _require(isinstance(summary, dict), path, "no 'summary' object")
    _require(isinstance(ranks, list), path, "no 'ranks' list")
    _check_kernels(document.get("kernels", []), path)
    for rank in ranks:
        _require(isinstance(rank, dict) and isinstance(rank.get("steps"), list) and isinstance(rank.get("health"), list),
                 path, "a rank without 'steps' and 'health' lists")
        for row in rank["steps"]:
            _require(isinstance(row, dict) and isinstance(row.get("step"), int), path, "a step without a step number")
            for key in ("cpu_duration_us", "window_us", "gpu_idle_us", "idle_fraction"):
                _require(row.get(key) is None or isinstance(row.get(key), (int, float)), path, f"step {key} is not a number")
            _require(row.get("attribution") is None or isinstance(row.get("attribution"), dict), path,
                     "a step attribution is not an object")
        for item in rank["health"]:
            _require(isinstance(item, dict) and "finding" in item and isinstance(item.get("count"), int), path,
                     "a health finding without 'finding' and 'count'")
        _check_kernels(rank.get("kernels", []), path)
    _require(summary.get("idle_fraction") is None or isinstance(summary.get("idle_fraction"), (int, float)), path,
             "summary idle_fraction is not a number")
    _require(summary.get("attribution") is None or isinstance(summary.get("attribution"), dict), path,
             "summary attribution is not an object")
    return document


def load_report_dict(path: Path, build: Callable[[Path], Report]) -> dict[str, Any]:
    """The report dict of `path`: read as is when it is a saved report, else `build(path)` (load the
    trace and build its report) passed through `report_to_dict`."""
    if is_saved_report(path):
        return read_saved_report(path)
    return report_to_dict(build(path))
