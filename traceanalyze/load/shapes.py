"""Shape arguments (`Input Dims`, `Input Strides`, `Input type`, `Concrete Inputs`) from their
JSON text to list columns: in Rust (polars' json_decode) where the text is plain, per value with
msgspec where it holds a TensorList or anything the fast decode refuses; a column that fails the
fast decode in one chunk is decoded slowly in every chunk, so the result never depends on where
the chunks were cut."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec
import polars as pl

from traceanalyze.fields import text_fields
from traceanalyze.load.convert import int_list
from traceanalyze.model import CPU_OPS_SCHEMA

SHAPES = pl.List(pl.List(pl.Int64))
STRINGS = pl.List(pl.String)
TENSOR_LISTS = pl.List(pl.List(pl.List(pl.Int64)))


def raw_text(raw: Any) -> str | None:
    """A `msgspec.Raw` argument as JSON text; None when absent."""
    if raw is None or not len(raw):
        return None
    return bytes(raw).decode("utf-8", "replace")


def _nested_shapes(text: str) -> tuple[list[list[int]] | None, list[list[list[int]]] | None]:
    """Slow path for an `Input Dims`/`Input Strides` value holding TensorList inputs (a list of
    shapes in one input's place): returns (per-input shape with `[]` for a TensorList, and
    per-input list of shapes with `[]` for a plain tensor)."""
    try:
        value = msgspec.json.decode(text)
    except msgspec.DecodeError:
        return None, None
    if not isinstance(value, list):
        return None, None
    shapes: list[list[int]] = []
    lists: list[list[list[int]]] = []
    for item in value:
        if isinstance(item, list) and item and all(isinstance(v, list) for v in item):
            shapes.append([])
            lists.append([int_list(v) or [] for v in item])
        else:
            shapes.append(int_list(item) or [])
            lists.append([])
    return shapes, lists


def _strings_from_json(text: str | None) -> list[str] | None:
    if text is None:
        return None
    try:
        value = msgspec.json.decode(text)
    except msgspec.DecodeError:
        return None
    if not isinstance(value, list):
        return None
    return [v if isinstance(v, str) else ("" if v is None else msgspec.json.encode(v).decode()) for v in value]


def _strings_slowly(series: pl.Series) -> pl.Series:
    return pl.Series([_strings_from_json(t) for t in series.to_list()], dtype=STRINGS, strict=False)


def _shapes_slowly(plain: pl.Series) -> pl.Series:
    return pl.Series([_nested_shapes(t)[0] if t else None for t in plain.to_list()], dtype=SHAPES, strict=False)


def _without_nested(series: pl.Series) -> tuple[pl.Series, list[int]]:
    """The values without the ones holding a TensorList (`[[[`), and where those are."""
    is_nested = series.str.contains("[[[", literal=True).fill_null(False)
    nested = is_nested.arg_true().to_list()
    plain = pl.select(pl.when(is_nested).then(None).otherwise(series)).to_series() if nested else series
    return plain, nested


def _with_nested(series: pl.Series, shapes: pl.Series, nested: list[int]) -> tuple[pl.Series, pl.Series]:
    lists = pl.Series([None] * len(series), dtype=TENSOR_LISTS)
    if nested:
        slow_shapes: list[Any] = [None] * len(series)
        slow_lists: list[Any] = [None] * len(series)
        for i, text in zip(nested, series.gather(nested).to_list()):
            slow_shapes[i], slow_lists[i] = _nested_shapes(text)
        shapes = pl.select(
            pl.when(pl.Series(slow_shapes, dtype=SHAPES).is_not_null())
            .then(pl.Series(slow_shapes, dtype=SHAPES))
            .otherwise(shapes)
        ).to_series()
        lists = pl.Series(slow_lists, dtype=TENSOR_LISTS)
    return shapes, lists



# JSON texts on which the fast (polars) and slow (msgspec, per value) decodes cannot differ: a list
# of lists of JSON integers that fit in int64; a list of plain strings (no escapes)
_WS = r"[ \t\r\n]*"  # JSON's whitespace, no other
_INT = r"-?(?:0|[1-9][0-9]{0,17})"
_INTS = rf"\[{_WS}(?:{_INT}{_WS}(?:,{_WS}{_INT}{_WS})*)?\]"
_PURE_SHAPES = rf"^{_WS}\[{_WS}(?:{_INTS}{_WS}(?:,{_WS}{_INTS}{_WS})*)?\]{_WS}$"
_STRING = r'"[^"\\\x00-\x1f]*"'
_PURE_STRINGS = rf"^{_WS}\[{_WS}(?:{_STRING}{_WS}(?:,{_WS}{_STRING}{_WS})*)?\]{_WS}$"
_ARGUMENTS = (("input_dims", SHAPES, _PURE_SHAPES), ("input_strides", SHAPES, _PURE_SHAPES),
              ("input_types", STRINGS, _PURE_STRINGS), ("concrete_inputs", STRINGS, _PURE_STRINGS))


@dataclass
class ArgumentTexts:
    """How one chunk's shape arguments were decoded. The general path decodes a whole table's
    column at once, slowly (per value) when any value defeats the fast decode; chunks decode their
    own column, so each keeps, per column, whether its fast decode failed, and the texts on which
    the two decodes could differ, for `_cpu_ops_frame` to redo the slow decode if another chunk
    failed."""

    failed: dict[str, bool]
    texts: dict[str, pl.Series | None]
    height: int = 0


def decode_chunk_arguments(frame: pl.DataFrame) -> tuple[pl.DataFrame, ArgumentTexts]:
    """A cpu_ops chunk with its shape arguments as JSON text → decoded: `Input Dims` and `Input
    Strides` to one shape per input (List(List(Int64)), `[]` for non-tensors) plus the shapes of
    TensorList inputs (`input_tensor_lists`), `Input type` and `Concrete Inputs` to List(String).

    A training step repeats its ops, so each distinct combination of the four texts is decoded
    once (`_decoded_arguments`) and joined back to its rows."""
    keys = list(TEXT_COLUMNS)
    if all(frame.get_column(column).null_count() == frame.height for column in keys):
        return _without_arguments(frame)  # a trace recorded without shapes: nothing to decode
    distinct = frame.select(keys).unique()
    decoded, failed, impure = _decoded_arguments(distinct)
    names = {column: f"_decoded_{column}" for column in (*keys, "input_tensor_lists")}
    lookup = distinct.with_columns(decoded[column].alias(names[column]) for column in names)
    joined = frame.drop("input_tensor_lists", strict=False).join(
        lookup, on=keys, how="left", nulls_equal=True, maintain_order="left"
    )
    kept = {column: frame[column] if impure[column] and not failed[column] else None for column in keys}
    result = joined.drop(keys).rename({name: column for column, name in names.items()})
    return result.select(_CHUNK_CPU_COLUMNS), ArgumentTexts(failed=failed, texts=kept, height=frame.height)


@dataclass(frozen=True)
class InternedText:
    """One shape argument of a chunk's cpu_ops rows as the compiled scanner numbers it: per row
    the number of its text (null when absent), and the distinct texts by number."""

    ids: pl.Series  # Int64, one per row, -1 where absent
    distinct: pl.Series  # String


def interned_together(pieces: list[tuple[InternedText, ...]]) -> tuple[InternedText, ...]:
    """Each shape argument's numbered texts of consecutive pieces of a chunk (one tuple per piece,
    in `TEXT_COLUMNS` order) as one: the rows' numbers in order, each distinct text once."""
    import numpy as np  # the scanner's path, which has it loaded

    if not pieces:
        return ()
    together = []
    for parts in zip(*pieces):
        distinct: dict[str, int] = {}
        ids = []
        for part in parts:
            numbers = [distinct.setdefault(text, len(distinct)) for text in part.distinct.to_list()]
            ids.append(np.array([*numbers, -1], dtype=np.int64)[part.ids.to_numpy()])  # -1 (absent) stays -1
        together.append(InternedText(ids=pl.Series("ids", np.concatenate(ids)),
                                     distinct=pl.Series(list(distinct), dtype=pl.String)))
    return tuple(together)


def decode_interned_arguments(
    frame: pl.DataFrame, distinct: dict[str, pl.Series]
) -> tuple[pl.DataFrame, ArgumentTexts]:
    """`decode_chunk_arguments` for a chunk whose shape columns hold the numbers of their texts
    (`InternedText.ids`, null where absent) and `distinct` the texts by number, per column: each
    distinct text is decoded once, and each row takes its text's value (all rows in one query). The
    same frame and `ArgumentTexts` as `decode_chunk_arguments` gives for the texts themselves. A
    chunk without any shape argument (a trace recorded without shapes) decodes nothing."""
    keys = list(TEXT_COLUMNS)
    # the texts of rows skipped since they were numbered (no name, no start) are not decoded: the
    # msgspec paths decode the kept rows' texts only, and a text they never see must not make a
    # column fail or count as impure
    distinct = {column: _used_only(distinct[column], frame[column]) for column in keys}
    if not any(len(distinct[column]) for column in keys):
        return _without_arguments(frame)
    tallest = max(len(distinct[column]) for column in keys)
    # columns of one height (a null decodes to null), made from the few distinct texts as Python
    # values in one construction: a concat of series per column held the GIL several times longer
    padded = pl.DataFrame({column: [*distinct[column].to_list(), *([None] * (tallest - len(distinct[column])))]
                           for column in keys}, schema={column: pl.String for column in keys})
    decoded, failed, impure = _decoded_arguments(padded)
    kept = {column: distinct[column].gather(frame[column]) if impure[column] and not failed[column] else None
            for column in keys}
    by_row = {column: pl.lit(decoded[column]).gather(pl.col(column)).alias(column) for column in keys}
    tensor_lists = decoded["input_tensor_lists"]
    by_row["input_tensor_lists"] = (
        pl.lit(None, dtype=TENSOR_LISTS).alias("input_tensor_lists")
        if not tensor_lists.count()
        else pl.lit(tensor_lists).gather(pl.col("input_dims")).alias("input_tensor_lists")
    )
    result = frame.select(by_row.get(column, column) for column in _CHUNK_CPU_COLUMNS)  # one query
    return result, ArgumentTexts(failed=failed, texts=kept, height=frame.height)


def _without_arguments(frame: pl.DataFrame) -> tuple[pl.DataFrame, ArgumentTexts]:
    """The decoded frame of a chunk whose rows hold no shape argument: every argument column null."""
    keys = list(TEXT_COLUMNS)
    nulls = {column: pl.lit(None, dtype=CPU_OPS_SCHEMA[column]).alias(column)
             for column in (*keys, "input_tensor_lists")}
    return (frame.select(nulls.get(column, column) for column in _CHUNK_CPU_COLUMNS),
            ArgumentTexts(failed={column: False for column in keys}, texts={column: None for column in keys},
                          height=frame.height))


def _used_only(texts: pl.Series, ids: pl.Series) -> pl.Series:
    """`texts` with those no row's id (`ids`, null: none) names made null."""
    used = ids.drop_nulls().unique()
    if used.len() == texts.len():
        return texts
    return texts.to_frame("text").select(
        pl.when(pl.int_range(pl.len(), dtype=pl.Int64).is_in(used.cast(pl.Int64).implode())).then(pl.col("text"))
    ).to_series().alias(texts.name)


def _decoded_arguments(frame: pl.DataFrame) -> tuple[dict[str, pl.Series], dict[str, bool], dict[str, bool]]:
    """The four shape texts of `frame` decoded → (column → decoded series, whether the column's fast
    decode failed, whether a value of it could decode differently slowly). Most chunks' texts
    decode in Rust in one query (the four decodes, whether any value holds a TensorList, whether
    any is impure); the rest as `_decoded_separately` does."""
    if not frame.height:  # the flags below are aggregates, broadcast to the frame's height
        return _decoded_separately(frame)
    try:
        fused = frame.select(
            *(pl.col(column).str.json_decode(dtype) for column, dtype, _ in _ARGUMENTS),
            *(_impure(column, pattern).alias(f"_impure_{column}") for column, _, pattern in _ARGUMENTS),
            pl.any_horizontal(pl.col(column).str.contains("[[[", literal=True).fill_null(False).any()
                              for column, dtype, _ in _ARGUMENTS if dtype == SHAPES).alias("_nested"),
        )
    except pl.exceptions.PolarsError:  # a value the Rust decode refuses
        return _decoded_separately(frame)
    if fused["_nested"][0]:
        return _decoded_separately(frame)
    decoded = {column: stored(column, fused[column]) for column, _, _ in _ARGUMENTS}
    decoded["input_tensor_lists"] = pl.repeat(None, frame.height, dtype=TENSOR_LISTS, eager=True)
    return (decoded, {column: False for column, _, _ in _ARGUMENTS},
            {column: bool(fused[f"_impure_{column}"][0]) for column, _, _ in _ARGUMENTS})


def _impure(column: str, pattern: str) -> pl.Expr:
    """Whether a value of `column` could decode differently slowly (`_PURE_SHAPES`, `_PURE_STRINGS`)."""
    return (pl.col(column).is_not_null() & ~pl.col(column).str.contains(pattern)).any()


def _decoded_separately(frame: pl.DataFrame) -> tuple[dict[str, pl.Series], dict[str, bool], dict[str, bool]]:
    """`_decoded_arguments` of texts among which a value holds a TensorList or defeats the Rust
    decode. Plain values are
    decoded in Rust, the four decodes side by side in one select; values holding a TensorList
    (`[[[`) always, and a whole column when any of its values defeats the Rust decode, take the
    slow path (msgspec, per value)."""
    plain: dict[str, pl.Series] = {}
    nested: dict[str, list[int]] = {}
    for column, dtype, _ in _ARGUMENTS:
        if dtype == SHAPES:
            plain[column], nested[column] = _without_nested(frame[column])
        else:
            plain[column] = frame[column]
    texts = pl.DataFrame(plain)
    failed = {column: False for column, _, _ in _ARGUMENTS}
    try:
        fast = texts.select(pl.col(column).str.json_decode(dtype) for column, dtype, _ in _ARGUMENTS)
        decoded = {column: fast[column] for column in fast.columns}
    except pl.exceptions.PolarsError:  # one of them needs the slow path: each on its own
        decoded = {}
        for column, dtype, _ in _ARGUMENTS:
            try:
                decoded[column] = plain[column].str.json_decode(dtype)
            except pl.exceptions.PolarsError:
                failed[column] = True
                decoded[column] = _slowly(plain[column], dtype)
    impure = texts.select(_impure(column, pattern) for column, _, pattern in _ARGUMENTS).row(0)
    input_dims, input_tensor_lists = _with_nested(frame["input_dims"], decoded["input_dims"], nested["input_dims"])
    input_strides, _ = _with_nested(frame["input_strides"], decoded["input_strides"], nested["input_strides"])
    result = {
        "input_dims": input_dims, "input_tensor_lists": input_tensor_lists,
        "input_types": stored("input_types", decoded["input_types"]), "input_strides": input_strides,
        "concrete_inputs": stored("concrete_inputs", decoded["concrete_inputs"]),
    }
    return result, failed, {column: bool(flag) for (column, _, _), flag in zip(_ARGUMENTS, impure)}


def stored(column: str, decoded: pl.Series) -> pl.Series:
    """A decoded shape column as the cpu_ops table keeps it (`CPU_OPS_SCHEMA`): the lists of
    strings (`Input type`, `Concrete Inputs`) as lists of categoricals, made from a chunk's
    distinct texts before they are spread over its rows."""
    return decoded.cast(CPU_OPS_SCHEMA[column])


def _slowly(texts: pl.Series, dtype: pl.DataType) -> pl.Series:
    return _shapes_slowly(texts) if dtype == SHAPES else _strings_slowly(texts)


def arguments_slowly(frame: pl.DataFrame, chunks: list[ArgumentTexts]) -> pl.DataFrame:
    """The cpu_ops table with each shape column that failed the fast decode in some chunk decoded
    slowly everywhere, as the general path does for the whole column (only the chunks whose texts
    could decode differently are decoded again)."""
    for column, dtype, _ in _ARGUMENTS:
        if not any(chunk.failed[column] for chunk in chunks):
            continue
        pieces = []
        offset = 0
        for chunk in chunks:
            height = chunk.height
            piece = frame[column].slice(offset, height)
            offset += height
            texts = chunk.texts[column]
            if texts is not None:
                if dtype == SHAPES:
                    plain, nested = _without_nested(texts)
                    piece, _ = _with_nested(texts, _shapes_slowly(plain), nested)
                else:
                    piece = stored(column, _strings_slowly(texts))
            pieces.append(piece)
        frame = frame.with_columns(pl.concat(pieces).alias(column))
    return frame



TEXT_COLUMNS = tuple(f.column for f in text_fields())  # input_dims, input_types, input_strides, concrete_inputs
# cpu_ops as a chunk holds it: without the columns its assembly adds
_CHUNK_CPU_COLUMNS = [k for k in CPU_OPS_SCHEMA if k not in ("rank", "op_id", "depth", "parent_id")]
