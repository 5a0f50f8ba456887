"""Raw columns → a chunk's table: the finishing step both fast paths share (the msgspec fast
path in `fast`, the compiled scanner in `columnar`). A raw frame holds the values as written
(`ts_i`/`ts_f`/`ts_x`, `device_arg`, `pid_int`, …); `finish_chunk` converts times to exact ns,
skips what the general path skips (counting why), and computes the table's columns."""

from __future__ import annotations

import functools

import polars as pl

from traceanalyze.fields import plain_fields
from traceanalyze.load import classify
from traceanalyze.load.chunk import (
    CHUNK_SCHEMAS,
    CPU_TEXT_SCHEMA,
    SKIP_BAD_DUR,
    SKIP_NO_DUR,
    SKIP_NO_PHASE,
    SKIP_NO_TS_OR_NAME,
    ChunkTables,
    merge_skipped,
)
from traceanalyze.load.convert import EXACT_FLOAT_US
from traceanalyze.load.shapes import TEXT_COLUMNS, InternedText, decode_chunk_arguments, decode_interned_arguments
from traceanalyze.model import CPU_OPS_SCHEMA, GPU_SCHEMA, RUNTIME_SCHEMA


def finish_chunk(
    frames: dict[str, pl.DataFrame | pl.LazyFrame],
    texts: tuple[pl.Series, ...] | tuple[InternedText, ...],
    events: int,
    no_phase: tuple[int, int] | None,
    names: dict[str, list[str]] | None = None,
) -> ChunkTables:
    """A chunk's raw frames (one per table, eager or lazy; `texts`: the cpu_ops shape arguments,
    NUL-joined, or numbered by the compiled scanner: `shapes.InternedText`) → its `ChunkTables`;
    `no_phase`: (count, first event) of the events without `ph` that a table would read; `names`:
    per table, its distinct event names and lower-case categories (a superset will do), read
    from the frames when not given. Every table is finished by one plan, all of them collected
    together."""
    names = names if names is not None else {name: _distinct_values(frame) for name, frame in frames.items()}
    plans = [_finish_plan(name, frame.lazy(), texts if name == "cpu_ops" else (), names[name], _float_times(frame))
             for name, frame in frames.items()]
    finished: dict[str, pl.DataFrame] = {}
    skipped: dict[str, tuple[int, int]] = {}
    arguments = None
    for name, frame in zip(frames, pl.collect_all(plans, engine="in-memory")):
        finished[name], dropped = _without_skipped(name, frame)
        for reason, count, first in dropped:
            merge_skipped(skipped, reason, count, first)
    if "cpu_ops" in finished and texts and all(isinstance(text, InternedText) for text in texts):
        distinct = {column: text.distinct for column, text in zip(TEXT_COLUMNS, texts)}
        finished["cpu_ops"], arguments = decode_interned_arguments(finished["cpu_ops"], distinct)
    elif "cpu_ops" in finished:
        finished["cpu_ops"], arguments = decode_chunk_arguments(finished["cpu_ops"])
    if no_phase is not None:
        merge_skipped(skipped, SKIP_NO_PHASE, *no_phase)
    return ChunkTables(frames=finished, events=events, skipped=skipped, arguments=arguments)


def _float_times(frame: pl.DataFrame | pl.LazyFrame) -> frozenset[str]:
    """The time prefixes (`ts`, `dur`) of which a row of `frame` holds a float: all of them for a
    lazy frame (not read); for a frame, its `_f` columns' null counts say (no query)."""
    if isinstance(frame, pl.LazyFrame):
        return frozenset(("ts", "dur"))
    return frozenset(prefix for prefix in ("ts", "dur") if f"{prefix}_f" in frame.columns
                     and frame.get_column(f"{prefix}_f").null_count() < frame.height)


def _distinct_values(frame: pl.DataFrame) -> list[str]:
    """The distinct event names and categories of a raw frame (what `_final_columns` maps)."""
    present = [column for column in ("name", "category") if column in frame.columns]
    if frame.height <= DISTINCT_IN_PYTHON_MAX_ROWS:  # a small chunk's rows: no query a column
        return [value for column in present for value in dict.fromkeys(frame[column].to_list()) if value is not None]
    columns = [frame[column].unique().drop_nulls() for column in present]
    return [value for values in columns for value in values.to_list()]


DISTINCT_IN_PYTHON_MAX_ROWS = 4096


@functools.cache
def ns_expr(prefix: str, floats: bool = True) -> pl.Expr:
    """`to_ns` of the times `raw_times` kept, vectorised: integers × 1000; for a float, the k
    among round(µs × 1000) and its neighbours for which k / 1000 == µs (exactly `to_ns`'s order
    and rounding). The divisor is a column: polars divides by a scalar as a product with its
    reciprocal, which is not the correctly rounded quotient that Python's k / 1000 is.

    `floats=False`: the table holds no float time of `prefix` (its `_f` column all null): the same
    values, without the float branch (a small chunk's plan runs a third faster)."""
    if not floats:
        return pl.coalesce(pl.col(f"{prefix}_x"), pl.col(f"{prefix}_i") * 1000)
    ints, floats, exact = pl.col(f"{prefix}_i"), pl.col(f"{prefix}_f"), pl.col(f"{prefix}_x")
    nearest = (floats * 1000).round(0, mode="half_to_even").cast(pl.Int64, strict=False)
    thousand = floats * 0 + 1000.0

    def same(k: pl.Expr) -> pl.Expr:
        return k.cast(pl.Float64) / thousand == floats

    from_float = (
        pl.when(floats.abs() >= EXACT_FLOAT_US).then(None)
        .when(same(nearest)).then(nearest)
        .when(same(nearest - 1)).then(nearest - 1)
        .when(same(nearest + 1)).then(nearest + 1)
        .otherwise(nearest)
    )
    return pl.coalesce(exact, ints * 1000, from_float)


_SKIP_REASONS = {1: SKIP_NO_TS_OR_NAME, 2: SKIP_NO_DUR, 3: SKIP_BAD_DUR}


@functools.cache
def _skip_reason() -> pl.Expr:
    """`_skip`: why a row is skipped (a key of `_SKIP_REASONS`), 0 when it is kept."""
    start, duration = pl.col("start_ns"), pl.col("duration_ns")
    written = (pl.col("dur_i") > classify.MAX_DURATION_US).fill_null(False) | (
        pl.col("dur_f") > classify.MAX_DURATION_US
    ).fill_null(False)
    return (
        pl.when(start.is_null() | pl.col("name").is_null()).then(1)
        .when(duration.is_null()).then(2)
        .when((duration < 0) | written).then(3)
        .otherwise(0)
        .cast(pl.UInt8)
        .alias("_skip")
    )


def _finish_plan(name: str, raw: pl.LazyFrame, texts: tuple[pl.Series, ...] | tuple[InternedText, ...],
                 names: list[str], floats: frozenset[str] = frozenset(("ts", "dur"))) -> pl.LazyFrame:
    """A table's raw columns → its columns in the chunk schema, and for a table of timed events
    `_skip` (why a row is to be skipped, 0 when kept) and `seq` (`_without_skipped` reads them)."""
    if name == "flows":
        flows = raw.with_columns(ns_expr("ts", "ts" in floats).alias("ts_ns"))
        return flows.filter(pl.col("ts_ns").is_not_null() & pl.col("id").is_not_null()).select(
            CHUNK_SCHEMAS[name].names()
        )
    frame = raw.with_columns(ns_expr("ts", "ts" in floats).alias("start_ns"),
                             ns_expr("dur", "dur" in floats).alias("duration_ns"))
    frame = frame.with_columns(_skip_reason())
    if name == "cpu_ops" and texts and isinstance(texts[0], InternedText):  # numbers, decoded after the filter
        frame = frame.with_columns(
            pl.when(ids >= 0).then(ids).alias(column)
            for ids, column in ((pl.lit(text.ids), column) for text, column in zip(texts, TEXT_COLUMNS))
        )
    elif name == "cpu_ops":
        frame = frame.with_columns(
            pl.lit(_split_texts([text])).alias(column) for text, column in zip(texts, TEXT_COLUMNS)
        )
    schema = CPU_TEXT_SCHEMA if name == "cpu_ops" else CHUNK_SCHEMAS[name]
    return frame.select(*_final_columns(name, names), "_skip", "seq").select(*schema.names(), "_skip", "seq")


def _without_skipped(name: str, frame: pl.DataFrame) -> tuple[pl.DataFrame, list[tuple[str, int, int]]]:
    """A finished table without the rows `_skip` marks, and what was skipped: (reason, count,
    first event)."""
    if name == "flows":
        return frame, []
    skipped: list[tuple[str, int, int]] = []
    marked = frame["_skip"]
    if any(marked.to_list()) if len(marked) <= DISTINCT_IN_PYTHON_MAX_ROWS else marked.max():  # UInt8: 0 when kept
        counts = frame.filter(pl.col("_skip") > 0).group_by("_skip").agg(pl.len(), pl.col("seq").min())
        skipped = [(_SKIP_REASONS[code], count, first) for code, count, first in counts.iter_rows()]
        frame = frame.filter(pl.col("_skip") == 0)
    return frame.drop("_skip", "seq"), skipped


def _split_texts(joined: list[pl.Series]) -> pl.Series:
    """NUL-joined texts → one value per row, null where empty."""
    values = [value for text in joined for value in text.to_list()]
    if sum(len(value) for value in values if value) <= SPLIT_IN_PYTHON_MAX_CHARS:
        # a small chunk's few texts split in Python: four queries a column cost more
        return pl.Series([part or None for value in values
                          for part in (value.split("\x00") if value is not None else (None,))], dtype=pl.String)
    texts = pl.concat(joined).str.split("\x00").explode()
    return pl.select(pl.when(texts.str.len_bytes() > 0).then(texts)).to_series()


SPLIT_IN_PYTHON_MAX_CHARS = 1 << 20


def _final_columns(name: str, names: list[str]) -> list[pl.Expr | str]:
    """The chunk-schema columns of a table, from its raw columns (and `start_ns`/`duration_ns`);
    `names`: its distinct event names and categories (a superset will do: each maps by its own
    rule)."""
    event_name = pl.col("name").cast(pl.Categorical())  # a few hundred distinct names in millions of rows
    times = [pl.col("start_ns"), (pl.col("start_ns") + pl.col("duration_ns")).alias("end_ns"), pl.col("duration_ns")]
    external_id = pl.coalesce("external_id", "external_id_old").alias("external_id")
    if name == "gpu":
        communication = [n for n in names if _kernel_kind(n) == "communication"]
        category_kind = _mapped("category", {c: _category_kind(c) for c in names}, pl.String)
        return [
            pl.coalesce(_int32("device_arg"), _int32("pid_int"), 0).alias("device"),
            pl.coalesce("stream_arg", "stream_tid", 0).alias("stream"),
            pl.when((category_kind == "kernel") & pl.col("name").is_in(communication))
            .then(pl.lit("communication"))
            .otherwise(category_kind)
            .cast(GPU_SCHEMA["kind"])
            .alias("kind"),
            event_name, *times, external_id, *_plain("gpu"),
        ]
    if name == "runtime":
        return [
            "pid", "tid", event_name,
            _by_name(names, _runtime_kind, pl.String).cast(RUNTIME_SCHEMA["kind"]).alias("kind"),
            *times, external_id, *_plain("runtime"),
            _by_name(names, _blocks_host, pl.Boolean).alias("blocking"),
        ]
    if name == "cpu_ops":
        return [
            "pid",
            "tid",
            # every row's category is one of these: the table's events were routed by it (`chunk.route`)
            _mapped("category", classify.CPU_OP_CATEGORIES, pl.String).cast(CPU_OPS_SCHEMA["category"])
            .alias("category"),
            event_name,
            *times,
            external_id,
            *_plain("cpu_ops"),
            *TEXT_COLUMNS,
        ]
    if name == "sync":
        return [
            pl.coalesce(_int32("device_arg"), _int32("pid_int")).alias("device"),
            pl.coalesce("stream_arg", "stream_tid").alias("stream"),
            event_name, *times, *_plain("sync"),
        ]
    return ["pid", "tid", event_name, *times]  # python


@functools.cache
def _plain(table: str) -> tuple[pl.Expr, ...]:
    """The columns a table takes from its `args` fields as they are (`fields.plain_fields`), in
    their column's type (an Int64 beyond an Int32 column: null)."""
    return tuple(pl.col(f.raw_column).cast(f.column_dtype, strict=False).alias(f.column) for f in plain_fields(table))


def _int32(column: str) -> pl.Expr:
    """An Int64 column as Int32, null where it does not fit (then the next source is used)."""
    return pl.col(column).cast(pl.Int32, strict=False)


# The rules for a name, kept per name (a pure function of it) across the chunks of a load: every
# chunk of a trace holds the same few hundred names, and each rule is a few regular expressions
_NAMES_KEPT = 1 << 16


@functools.lru_cache(maxsize=_NAMES_KEPT)
def _kernel_kind(name: str) -> str:
    return classify.gpu_kind("kernel", name)


@functools.lru_cache(maxsize=_NAMES_KEPT)
def _category_kind(category: str) -> str | None:
    return classify.gpu_category_kind(category)


@functools.lru_cache(maxsize=_NAMES_KEPT)
def _runtime_kind(name: str) -> str:
    return classify.runtime_kind(name)


@functools.lru_cache(maxsize=_NAMES_KEPT)
def _blocks_host(name: str) -> bool:
    return classify.runtime_blocks_host(name, classify.runtime_kind(name))


def _by_name(names: list[str], rule, dtype: pl.DataType) -> pl.Expr:
    """A value computed from each distinct name with the general path's rule."""
    return _mapped("name", {name: rule(name) for name in names}, dtype)


def _mapped(column: str, mapping: dict[str, object], dtype: pl.DataType) -> pl.Expr:
    """`column`'s value looked up in `mapping` (null where absent): what `replace_strict(mapping,
    default=None)` gives, a quarter of its time (0.2 against 0.8 ms a small chunk's table): each
    value's place among the keys (an Enum of them), then the value at that place."""
    keys = list(mapping)
    if not keys:
        return pl.repeat(None, pl.len(), dtype=dtype)
    places = pl.col(column).cast(pl.String).cast(pl.Enum(keys), strict=False).to_physical()
    return pl.lit(pl.Series([mapping[key] for key in keys], dtype=dtype)).gather(places)


