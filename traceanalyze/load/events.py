"""The msgspec types of a Chrome/Kineto trace: the document, its events, and the `args` structs
derived from `fields.ARG_FIELDS` (the general path's `Args`, the fast path's one struct per
table). `chrome` reads files into them; `general` and `fast` decode chunks with them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Union

import msgspec

from traceanalyze.fields import ARG_FIELDS, FLOAT, INT, INTS3, STRING, TEXT, ArgField, fields_of

Number = Union[int, float]
IntOrStr = Union[int, str]



def _struct(name: str, fields: tuple[ArgField, ...], types: Callable[[ArgField], Any],
            extra: tuple[tuple[str, Any, Any], ...] = (), **options: Any) -> Any:
    """A msgspec struct of `fields` (`fields.ARG_FIELDS`): each attribute named as in the JSON,
    absent → None (a shape argument's text: an empty `Raw`, kept as JSON text)."""
    return msgspec.defstruct(name, [
        *((f.attribute, msgspec.Raw if f.kind == TEXT else types(f),
           msgspec.field(default=msgspec.Raw() if f.kind == TEXT else None, name=f.key)) for f in fields),
        *extra,
    ], gc=False, **options)


# The general path's `args`: every key any table reads, of each type it may convert (and `name`,
# of metadata events: process_name / thread_name); everything else is skipped by the decoder.
Args = _struct("Args", ARG_FIELDS, lambda f: f.accepted, extra=(("name", Any, None),), omit_defaults=True)


class Event(msgspec.Struct, gc=False):
    ph: Any = None
    cat: Any = None
    name: Any = None
    pid: Any = None
    tid: Any = None
    ts: Any = None
    dur: Any = None
    id: Any = None
    args: Args | None = None


class TraceDocument(msgspec.Struct, gc=False):
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


# The fast path's types: narrow, so that a value of an unusual type fails the decode of its chunk,
# which then takes the general path above (`Event`/`Args`, per-event conversion) instead.
# `gc=False`: decoded structs hold no cycles, and tracking millions of them makes the collector
# walk them again and again while a trace loads (a 1 GB trace decodes 4x slower with it on).
Int = Union[int, None]
Float = Union[float, None]  # msgspec turns a JSON integer into the nearest float, as float() does


class FastEvent(msgspec.Struct, gc=False):
    ph: str | None = None
    cat: str | None = None
    name: str | None = None
    pid: int | str | None = None
    tid: int | str | None = None
    ts: int | float | None = None
    dur: int | float | None = None
    id: int | str | None = None
    args: msgspec.Raw = msgspec.Raw()  # decoded per table (below), only for the events kept


# one struct per table that reads `args`, of exactly the fast types (`FAST_TYPES`)
FAST_TYPES = {INT: Int, FLOAT: Float, STRING: Union[str, None], INTS3: Union[list[int], None]}
GpuArgs = _struct("GpuArgs", fields_of("gpu"), lambda f: FAST_TYPES[f.kind])
RuntimeArgs = _struct("RuntimeArgs", fields_of("runtime"), lambda f: FAST_TYPES[f.kind])
SyncArgs = _struct("SyncArgs", fields_of("sync"), lambda f: FAST_TYPES[f.kind])
CpuOpArgs = _struct("CpuOpArgs", fields_of("cpu_ops"), lambda f: FAST_TYPES[f.kind])


class AnyObject(msgspec.Struct, gc=False):
    """Any JSON object (its keys are skipped): checks that the `args` nobody reads are objects."""
