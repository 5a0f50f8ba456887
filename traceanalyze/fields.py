"""The `args` keys of a trace event that the tables read: one declaration each.

Every decode path is derived from `ARG_FIELDS`: the msgspec structs (`load.events.Args` of the
general path, `GpuArgs`/`RuntimeArgs`/`SyncArgs`/`CpuOpArgs` of the fast path), the keys the
compiled scanner collects (`load.columnar.ARG_KEYS`) and the types it accepts per table, the raw
columns both fast paths build, the general path's per-event conversions, and the `gpu` table's
argument columns (`model.GPU_SCHEMA`).

To read one more kernel argument into the `gpu` table, add one `ArgField` line below (with
`column=` the new column's name and `dtype=` its type): every path then reads it, and
tests/load/test_streaming.py and test_columnar.py hold the paths to each other on it.

A `combined` field is combined with other values by its table's own rule (the external id with
its older spelling, `device`/`stream` with the event's pid/tid: `load.raw`, `load.general`); a
`TEXT` field is a shape argument, kept as JSON text and decoded by `load.shapes`.

This module is a leaf (polars only): `model` builds its schema from it, `load` its decoders.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union

import polars as pl

# How a value is read: the fast paths accept exactly this type (anything else sends the chunk to
# the general path), the general path converts any value with the rule of its kind.
INT = "int"  # a JSON integer (general path: also a decimal or hex string, a whole float)
FLOAT = "float"  # a JSON number, as a float
STRING = "string"  # a JSON string
INTS3 = "ints3"  # a list of integers (grid, block: three)
TEXT = "text"  # any JSON value, kept as its text (shape arguments)

Number = Union[int, float]
IntOrStr = Union[int, str]

_DTYPES = {INT: pl.Int64, FLOAT: pl.Float64, STRING: pl.Categorical(), INTS3: pl.List(pl.Int64), TEXT: pl.String}
_GENERAL_TYPES: dict[str, Any] = {INT: IntOrStr | None, FLOAT: Number | None, STRING: str | None, INTS3: Any}


@dataclass(frozen=True)
class ArgField:
    key: str  # the key in the event's `args`, as Kineto writes it
    attribute: str  # its name in the structs and the raw frames
    kind: str  # INT, FLOAT, STRING, INTS3 or TEXT
    tables: tuple[str, ...]  # the tables that read it
    column: str  # the table column it fills
    dtype: Any = None  # that column's type (default: by kind)
    general_type: Any = None  # the general path's msgspec type, where it accepts more than its kind's
    combined: bool = False  # True: combined with other values by its table's rule (not taken as it is)

    @property
    def column_dtype(self) -> Any:
        return self.dtype if self.dtype is not None else _DTYPES[self.kind]

    @property
    def accepted(self) -> Any:
        return self.general_type if self.general_type is not None else _GENERAL_TYPES[self.kind]

    @property
    def raw_column(self) -> str:
        """Its column in the raw frames the fast paths build (`load.raw` finishes them)."""
        return _RAW_NAMES.get(self.attribute, self.attribute) if self.combined else self.column


_RAW_NAMES = {"device": "device_arg", "stream": "stream_arg"}
_GPU, _RUNTIME, _CPU, _SYNC = "gpu", "runtime", "cpu_ops", "sync"

ARG_FIELDS: tuple[ArgField, ...] = (
    ArgField("correlation", "correlation", INT, (_GPU, _RUNTIME, _SYNC), column="correlation"),
    ArgField("External id", "external_id", INT, (_GPU, _RUNTIME, _CPU), "external_id", combined=True),
    ArgField("external id", "external_id_old", INT, (_GPU, _RUNTIME, _CPU), "external_id",
             combined=True),  # older traces
    ArgField("device", "device", INT, (_GPU, _SYNC), "device", combined=True),  # else the event's pid
    ArgField("stream", "stream", INT, (_GPU, _SYNC), "stream", combined=True),  # else the number in the event's tid
    ArgField("wait_on_cuda_event_record_corr_id", "wait_on_record", INT, (_SYNC,), column="wait_on_record"),
    ArgField("wait_on_stream", "wait_on_stream", INT, (_SYNC,), column="wait_on_stream"),
    ArgField("grid", "grid", INTS3, (_GPU,), column="grid"),
    ArgField("block", "block", INTS3, (_GPU,), column="block"),
    ArgField("registers per thread", "registers_per_thread", INT, (_GPU,), column="registers_per_thread",
             dtype=pl.Int32, general_type=Number | None),
    ArgField("shared memory", "shared_memory", INT, (_GPU,), column="shared_memory_bytes", general_type=Number | None),
    ArgField("blocks per SM", "blocks_per_sm", FLOAT, (_GPU,), column="blocks_per_sm"),
    ArgField("warps per SM", "warps_per_sm", FLOAT, (_GPU,), column="warps_per_sm"),
    ArgField("est. achieved occupancy %", "occupancy_pct", FLOAT, (_GPU,), column="occupancy_pct"),
    ArgField("bytes", "bytes", INT, (_GPU,), column="bytes", general_type=Number | str | None),
    # Kineto's own bandwidth of a copy or set (its duration, not the one written): traceanalyze.hta
    ArgField("memory bandwidth (GB/s)", "memory_bandwidth", FLOAT, (_GPU,), column="memory_bw_gbps"),
    ArgField("graph id", "graph_id", INT, (_GPU,), column="graph_id", general_type=Number | None),
    ArgField("graph node id", "graph_node_id", INT, (_GPU,), column="graph_node_id", general_type=Number | None),
    ArgField("Collective name", "collective_name", STRING, (_GPU,), column="collective"),
    # a collective's message (newer traces): analysis.collectives
    ArgField("In msg nelems", "in_msg_nelems", INT, (_GPU,), column="in_msg_nelems"),
    ArgField("Out msg nelems", "out_msg_nelems", INT, (_GPU,), column="out_msg_nelems"),
    ArgField("dtype", "dtype", STRING, (_GPU,), column="dtype"),
    ArgField("Process Group Name", "process_group", STRING, (_GPU,), column="process_group"),
    ArgField("Input Dims", "input_dims", TEXT, (_CPU,), "input_dims"),
    ArgField("Input type", "input_type", TEXT, (_CPU,), "input_types"),
    ArgField("Input Strides", "input_strides", TEXT, (_CPU,), "input_strides"),
    ArgField("Concrete Inputs", "concrete_inputs", TEXT, (_CPU,), "concrete_inputs"),
    ArgField("Sequence number", "sequence_number", INT, (_CPU,), column="sequence_number"),
    ArgField("Fwd thread id", "fwd_thread_id", INT, (_CPU,), column="fwd_thread_id"),
    ArgField("flops", "flops", FLOAT, (_CPU,), column="flops"),
)


def fields_of(table: str) -> tuple[ArgField, ...]:
    """The fields a table reads, in declaration order."""
    return tuple(f for f in ARG_FIELDS if table in f.tables)


def plain_fields(table: str) -> tuple[ArgField, ...]:
    """The fields a table takes as they are (converted to their column's type)."""
    return tuple(f for f in fields_of(table) if not f.combined and f.kind != TEXT)


def raw_fields(table: str) -> tuple[ArgField, ...]:
    """The fields the fast paths put in a table's raw frame (the shape texts travel apart)."""
    return tuple(f for f in fields_of(table) if f.kind != TEXT)


def arg_columns(table: str, *, besides: tuple[str, ...] = ()) -> dict[str, Any]:
    """column → type of the columns a table's fields fill, in declaration order (each once), less
    `besides` (columns the table declares itself)."""
    columns: dict[str, Any] = {}
    for f in fields_of(table):
        if f.kind != TEXT and f.column not in besides:
            columns.setdefault(f.column, f.column_dtype)
    return columns


def text_fields() -> tuple[ArgField, ...]:
    """The shape arguments (cpu_ops), in the order of `load.shapes.TEXT_COLUMNS`."""
    return tuple(f for f in ARG_FIELDS if f.kind == TEXT)
