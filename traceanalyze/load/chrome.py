"""Bytes on disk → typed Chrome-trace events (msgspec), with every way a file can be bad turned
into a one-line `TraceFormatError` that names the file."""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path
from typing import Any, Union

import msgspec

from traceanalyze.errors import EmptyTraceError, TraceFormatError

Number = Union[int, float]
IntOrStr = Union[int, str]


class Args(msgspec.Struct, omit_defaults=True):
    """The `args` keys any analysis reads; everything else in `args` is skipped by the decoder."""

    external_id: IntOrStr | None = msgspec.field(default=None, name="External id")
    external_id_old: IntOrStr | None = msgspec.field(default=None, name="external id")
    correlation: IntOrStr | None = None
    device: IntOrStr | None = None
    stream: IntOrStr | None = None
    grid: Any = None
    block: Any = None
    registers_per_thread: Number | None = msgspec.field(default=None, name="registers per thread")
    shared_memory: Number | None = msgspec.field(default=None, name="shared memory")
    blocks_per_sm: Number | None = msgspec.field(default=None, name="blocks per SM")
    warps_per_sm: Number | None = msgspec.field(default=None, name="warps per SM")
    occupancy_pct: Number | None = msgspec.field(default=None, name="est. achieved occupancy %")
    bytes: Number | str | None = None
    graph_id: Number | None = msgspec.field(default=None, name="graph id")
    graph_node_id: Number | None = msgspec.field(default=None, name="graph node id")
    collective_name: str | None = msgspec.field(default=None, name="Collective name")
    # shape arguments stay raw JSON here; they are decoded column-wise (see tables.py)
    input_dims: msgspec.Raw = msgspec.field(default=msgspec.Raw(), name="Input Dims")
    input_type: msgspec.Raw = msgspec.field(default=msgspec.Raw(), name="Input type")
    input_strides: msgspec.Raw = msgspec.field(default=msgspec.Raw(), name="Input Strides")
    concrete_inputs: msgspec.Raw = msgspec.field(default=msgspec.Raw(), name="Concrete Inputs")
    sequence_number: IntOrStr | None = msgspec.field(default=None, name="Sequence number")
    fwd_thread_id: IntOrStr | None = msgspec.field(default=None, name="Fwd thread id")
    flops: Number | None = None
    name: Any = None  # metadata events: process_name / thread_name


class Event(msgspec.Struct):
    ph: Any = None
    cat: Any = None
    name: Any = None
    pid: Any = None
    tid: Any = None
    ts: Any = None
    dur: Any = None
    id: Any = None
    args: Args | None = None


class TraceDocument(msgspec.Struct):
    traceEvents: list[Event] | None = None
    deviceProperties: Any = None
    distributedInfo: Any = None
    schemaVersion: Any = None
    cuda_runtime_version: Any = None
    cuda_driver_version: Any = None
    hip_runtime_version: Any = None
    cupti_version: Any = None
    traceName: Any = None
    record_shapes: Any = None
    with_stack: Any = None
    profile_memory: Any = None


_document_decoder = msgspec.json.Decoder(TraceDocument)
_event_list_decoder = msgspec.json.Decoder(list[Event])
_untyped_decoder = msgspec.json.Decoder()


def read_bytes(path: Path) -> bytes:
    """The uncompressed bytes of a `.json` or `.json.gz` file (gzip detected by magic number)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise TraceFormatError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise TraceFormatError(f"{path}: is a folder, not a trace file") from None
    except OSError as error:
        raise TraceFormatError(f"{path}: cannot read: {error.strerror or error}") from None
    if not raw:
        raise EmptyTraceError(f"{path}: empty file")
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (EOFError, gzip.BadGzipFile, zlib.error, OSError) as error:
            raise TraceFormatError(f"{path}: truncated or corrupt gzip ({error})") from None
        if not raw.strip():
            raise EmptyTraceError(f"{path}: empty file (after gunzip)")
    return raw


def decode_document(raw: bytes, path: Path) -> tuple[TraceDocument, int]:
    """Decode a trace; returns the document and how many malformed events were dropped.

    The fast path is one typed decode. If any event has a field of an unexpected type, that
    decode fails as a whole; then the file is decoded untyped and converted event by event,
    so one bad event is skipped (and counted) instead of losing the trace.
    """
    stripped = raw.lstrip()
    if stripped[:1] not in (b"{", b"["):
        raise TraceFormatError(f"{path}: not JSON (a Chrome/Kineto trace is a JSON object)")
    try:
        if stripped[:1] == b"[":
            return TraceDocument(traceEvents=_event_list_decoder.decode(raw)), 0
        document = _document_decoder.decode(raw)
    except msgspec.ValidationError:
        return _decode_tolerant(raw, path)
    except msgspec.DecodeError as error:
        raise TraceFormatError(f"{path}: invalid JSON ({error})") from None
    if document.traceEvents is None:
        raise TraceFormatError(f"{path}: JSON without 'traceEvents': not a Chrome/Kineto trace")
    return document, 0


def _decode_tolerant(raw: bytes, path: Path) -> tuple[TraceDocument, int]:
    try:
        untyped = _untyped_decoder.decode(raw)
    except msgspec.DecodeError as error:
        raise TraceFormatError(f"{path}: invalid JSON ({error})") from None
    if isinstance(untyped, list):
        untyped = {"traceEvents": untyped}
    if not isinstance(untyped, dict) or not isinstance(untyped.get("traceEvents"), list):
        raise TraceFormatError(f"{path}: JSON without a 'traceEvents' list: not a Chrome/Kineto trace")
    raw_events = untyped.pop("traceEvents")
    known = {f for f in TraceDocument.__struct_fields__ if f != "traceEvents"}
    document = msgspec.convert(
        {k: v for k, v in untyped.items() if k in known}, TraceDocument, strict=False
    )
    events: list[Event] = []
    malformed = 0
    event_decoder = msgspec.json.Decoder(Event)
    for raw_event in raw_events:
        try:
            events.append(event_decoder.decode(msgspec.json.encode(raw_event)))
        except msgspec.ValidationError:
            repaired = _without_bad_args(raw_event)
            if repaired is None:
                malformed += 1
            else:
                events.append(repaired)
    document.traceEvents = events
    return document, malformed


_args_decoder = msgspec.json.Decoder(Args)


def _without_bad_args(raw_event: Any) -> Event | None:
    """An event whose `args` hold a value of an unexpected type keeps its other args; an event
    that is not an object, or whose args are not an object, is malformed (None)."""
    if not isinstance(raw_event, dict) or not isinstance(raw_event.get("args"), dict):
        return None
    good_args = {}
    for key, value in raw_event["args"].items():
        try:
            _args_decoder.decode(msgspec.json.encode({key: value}))
        except msgspec.ValidationError:
            continue
        good_args[key] = value
    try:
        return msgspec.json.decode(msgspec.json.encode({**raw_event, "args": good_args}), type=Event)
    except msgspec.ValidationError:
        return None
