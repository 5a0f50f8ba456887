"""What `gate` and `diff` read: a trace (file or folder of rank traces), turned into the JSON
report's `ReportV1` (report/schema.py), or a JSON report saved earlier (`traceanalyze report --format json -o
base.json`), recognised by its `schema_version` key and decoded against that schema, so a CI job can keep a small
report instead of a big trace."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable

import msgspec

from traceanalyze.errors import ConfigError, TraceFormatError
from traceanalyze.gate.saved_ranges import check_ranges
from traceanalyze.renderers.jsonout import report_v1
from traceanalyze.report.model import Report
from traceanalyze.report.schema import KNOWN_SCHEMA_VERSIONS, ReportV1, report_from_builtins

_PEEK_BYTES = 1 << 20
SAVED_REPORT_LIMIT = 256 << 20  # the largest saved report read (real ones: well under 10 MB)
_WHOLE_DECODE_BYTES = 64 << 20  # a larger file without either key in its first MiB is left to the trace loader
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
    if len(head) < _PEEK_BYTES or path.stat().st_size > _WHOLE_DECODE_BYTES:
        return False  # the trace loader (streaming, with its limits) says what it is
    try:
        document = msgspec.json.decode(path.read_bytes())
    except (msgspec.DecodeError, OSError, RecursionError, UnicodeDecodeError):
        return False
    return isinstance(document, dict) and "schema_version" in document and "traceEvents" not in document


def read_saved_report(path: Path) -> ReportV1:
    """A saved JSON report, decoded against the report schema (`ReportV1`): a field of the wrong
    type is refused with one line naming it (`$.ranks[0].devices`). A report lists at most 50
    kernels and ops per rank: one larger than `SAVED_REPORT_LIMIT` is refused before it is read."""
    try:
        if path.stat().st_size > SAVED_REPORT_LIMIT:
            raise TraceFormatError(f"{path}: over {SAVED_REPORT_LIMIT >> 20} MB: too large for a saved traceanalyze "
                                   "JSON report")
        document = msgspec.json.decode(path.read_bytes())
    except msgspec.DecodeError as error:
        raise TraceFormatError(f"{path}: invalid JSON: {error}") from None
    except RecursionError:
        raise TraceFormatError(f"{path}: JSON nested too deeply for the decoder") from None
    except UnicodeDecodeError as error:
        raise TraceFormatError(f"{path}: invalid UTF-8 ({error.reason})") from None
    except OSError as error:
        raise TraceFormatError(f"{path}: cannot read: {error.strerror or error}") from None
    if not isinstance(document, dict):
        raise TraceFormatError(f"{path}: not a traceanalyze JSON report: the top level is not an object")
    if "kind" in document:  # a gate verdict or a diff saved as JSON
        raise TraceFormatError(f"{path}: a traceanalyze {document['kind']} JSON, not a report")
    version = document.get("schema_version")
    if version not in KNOWN_SCHEMA_VERSIONS:
        raise TraceFormatError(
            f"{path}: report schema_version {version!r} is not one this traceanalyze reads "
            f"({', '.join(KNOWN_SCHEMA_VERSIONS)}); make the report again with this version"
        )
    check_ranges(document, path)  # no negative or absurd time, no fraction outside [0, 1]
    try:
        return report_from_builtins(document)
    except msgspec.ValidationError as error:
        raise TraceFormatError(f"{path}: not a traceanalyze JSON report: {error}") from None


def load_report(path: Path | str, build: Callable[[Path | str], Report], *, skip_steps: int = 0) -> ReportV1:
    """The JSON report of `path`: decoded when it is a saved report, else `build(path)` (load the
    trace and build its report) turned into `ReportV1`. A saved report cannot be analysed again:
    with `skip_steps` > 0 it must have been saved with the same `--skip-steps` (else `ConfigError`).
    A URL (a string: `s3://bucket/job/`) is a folder of rank traces, built as `report` builds it."""
    if isinstance(path, str):
        return report_v1(build(path))
    if is_saved_report(path):
        saved = read_saved_report(path)
        kept = saved.options.skip_steps or 0
        if skip_steps and kept != skip_steps:
            raise ConfigError(f"{path}: a saved report analysed with --skip-steps {kept}, not {skip_steps}: save it "
                              f"again from its trace with --skip-steps {skip_steps}")
        return saved
    return report_v1(build(path))
