"""Columns that hold one value in every row, kept as that value once (a polars scalar column):
the same frame, without the memory. The loaded tables use it (a shape argument a trace does not
record, the one `rank`), each decoded chunk and the per-kernel roofline for their all-null columns.
Filters, gathers, sorts and joins keep such a column a scalar; taking it out as a Series
(`frame["rank"]`) makes its rows, and polars then keeps them with the frame."""

from __future__ import annotations

import polars as pl


def constants_as_scalars(frame: pl.DataFrame, *, nulls_only: bool = False) -> pl.DataFrame:
    """`frame` with each column that holds one value in every row (all null: a shape argument a
    trace does not record; one number: `rank`, the one `pid`) kept as that value once (a polars
    scalar column) instead of once per row: the same frame, without the memory. Filters, gathers,
    sorts and joins keep such a column a scalar; taking it out as a Series makes its rows.

    `nulls_only`: only the all-null columns (no column is read: polars knows its null count), for
    a frame whose numbers are computed with further (polars divides by a scalar as a product with
    its reciprocal, which can differ from the quotient in the last bit), or checked often.

    A frame of fewer than `SCALAR_MIN_ROWS` rows is returned as it is."""
    if frame.height < SCALAR_MIN_ROWS:
        return frame  # the rows cost less than finding the constants (1-2 ms a table: 5 a small rank)
    if nulls_only:
        constants = _all_null(frame, _null_counts(frame)) if frame.height >= 2 else {}
    else:
        constants = constant_columns(frame)
    return frame.with_columns(constants.values()) if constants else frame


# a frame shorter than this keeps its columns as they are: a constant column of 4,096 numbers is 32 KB
SCALAR_MIN_ROWS = 4096


def _null_counts(frame: pl.DataFrame) -> dict[str, int]:
    """Each column's null count, known without reading the column (nor making a scalar one's rows)."""
    if not frame.width:
        return {}
    # DataFrame.null_count reads each column's count as held (a scalar column's from its one
    # value): a twentieth of the time of the same counts through a select (0.01 against 0.25 ms
    # for a chunk's GPU table), which every decoded chunk's every table takes
    return dict(zip(frame.columns, frame.null_count().row(0)))


def _all_null(frame: pl.DataFrame, nulls: dict[str, int]) -> dict[str, pl.Expr]:
    return {name: pl.lit(None, dtype=dtype).alias(name) for name, dtype in frame.schema.items()
            if nulls[name] == frame.height}


def constant_columns(frame: pl.DataFrame) -> dict[str, pl.Expr]:
    """column → the literal it equals in every row, for the columns of `frame` that are all null
    or (numbers and booleans) one value without nulls; none for frames of fewer than 2 rows.
    A float column holding a NaN or a zero is not taken for one value: min and max skip NaN, and
    see -0.0 and 0.0 as equal."""
    if frame.height < 2:
        return {}
    nulls = _null_counts(frame)
    constants = _all_null(frame, nulls)
    # a number column without nulls whose first and last rows agree, the only ones that may hold one
    # value: the times, ids and sizes of a table differ there, and are not read in full
    numbers = [name for name, dtype in frame.schema.items() if (dtype.is_numeric() or dtype == pl.Boolean)
               and nulls[name] == 0]
    ends = frame.select(*[(pl.col(name).first() == pl.col(name).last()).alias(name)
                          for name in numbers]).row(0) if numbers else ()
    valued = [name for name, same in zip(numbers, ends) if same]
    if not valued:
        return constants
    floats = [name for name in valued if frame.schema[name].is_float()]
    stats = frame.select(
        *[pl.col(name).min().alias(f"lo{k}") for k, name in enumerate(valued)],
        *[pl.col(name).max().alias(f"hi{k}") for k, name in enumerate(valued)],
        *[(pl.col(name).is_nan() | (pl.col(name) == 0)).any().alias(f"f{k}") for k, name in enumerate(floats)],
    ).row(0)
    count = len(valued)
    lows, highs = stats[:count], stats[count:2 * count]
    ambiguous = {name for name, flag in zip(floats, stats[2 * count:]) if flag}
    for name, low, high in zip(valued, lows, highs):
        if low == high and name not in ambiguous:
            constants[name] = pl.lit(low, dtype=frame.schema[name]).alias(name)
    return constants


def varying_keys(frame: pl.DataFrame, keys: list[str] | tuple[str, ...], *, at_least_one: bool = True) -> list[str]:
    """`keys` less those that hold one value in every row of `frame` (all null counts as one):
    sorting, grouping, partitioning or a window `over` the rest orders and groups the rows as over
    all of `keys`. polars encodes several keys into one row key first, with a table of its own (a
    join on rank and correlation of 400 k GPU ops took 90 MB more than one on correlation); the one
    rank of a rank's trace, the one device of most, need not be keyed. The last key stays when
    every key is constant, so that there is always one (unless not `at_least_one`: then none).
    Integer and boolean keys only are checked (others stay)."""
    keys = list(keys)
    constant = set(_constant_keys(frame, keys))
    kept = [key for key in keys if key not in constant]
    return kept or (keys[-1:] if at_least_one else [])


def join_keys(left: pl.DataFrame, right: pl.DataFrame, keys: list[str] | tuple[str, ...]) -> list[str]:
    """`keys` less those that hold one same non-null value in every row of both frames: a join on
    the rest pairs the same rows (see `varying_keys`). The last key stays when every key would go."""
    return differing_keys(left, right, keys) or list(keys)[-1:]


def differing_keys(left: pl.DataFrame, right: pl.DataFrame, keys: list[str] | tuple[str, ...]) -> list[str]:
    """`join_keys`, but empty when every key holds one same value in both frames (a join of one
    group with one group: on no key at all)."""
    keys = list(keys)
    if left.is_empty() or right.is_empty():
        return keys
    in_left = _constant_keys(left, keys, non_null=True)
    in_right = _constant_keys(right, keys, non_null=True)
    return [key for key in keys if key not in in_left or key not in in_right or in_left[key] != in_right[key]]


def first_of_keys(keys: list[str]) -> pl.Expr:
    """True on the first row of each distinct value of `keys` (one key: the column itself, not a
    struct of one)."""
    return pl.struct(keys).is_first_distinct() if len(keys) > 1 else pl.col(keys[0]).is_first_distinct()


def _constant_keys(frame: pl.DataFrame, keys: list[str], *, non_null: bool = False) -> dict[str, object]:
    """key → its one value, for the integer or boolean `keys` of `frame` that hold one value in every
    row (None when all null, unless `non_null`)."""
    checked = [key for key in keys if frame.schema[key].is_integer() or frame.schema[key] == pl.Boolean]
    if not checked or frame.is_empty():
        return {}
    stats = frame.select(
        *[pl.col(key).null_count().alias(f"n{k}") for k, key in enumerate(checked)],
        *[pl.col(key).min().alias(f"lo{k}") for k, key in enumerate(checked)],
        *[pl.col(key).max().alias(f"hi{k}") for k, key in enumerate(checked)],
    ).row(0)
    count = len(checked)
    constant = {}
    for key, nulls, low, high in zip(checked, stats[:count], stats[count:2 * count], stats[2 * count:]):
        if nulls == 0 and low == high:
            constant[key] = low
        elif nulls == frame.height and not non_null:
            constant[key] = None
    return constant
