"""The fastest way from a chunk's JSON text to its tables: the compiled columnar scanner
(`_native.c`) writes every event's fields and the `args` keys the tables read into typed columns;
numpy routes the events and checks their types, and one polars plan per table converts them
(all of a chunk's plans collected at once, by the in-memory engine: polars 2's default streaming
engine costs about 0.2 ms more per query, most of a small table's time): no Python object per event.

It computes exactly the raw columns of `fast.fast_chunk` (the msgspec fast path) and hands
them to the same finishing code, so the three paths give the same tables. `chunk_tables` returns
None, and the caller takes the msgspec path, whenever the chunk holds anything that path would
treat differently: a value of a type the typed decode rejects, an `args` that is not an object,
an integer beyond what the fast path converts, or anything the scanner does not vouch for
(invalid JSON included: msgspec then raises the error the stream reader expects).

The scanner is optional (it needs a C compiler at install time); without it `available()` is
False and every chunk takes the msgspec path.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import polars as pl

from traceanalyze import fields
from traceanalyze.load import chunk, classify
from traceanalyze.load import convert as conversions
from traceanalyze.load import times as time_rules
from traceanalyze.load.raw import finish_chunk
from traceanalyze.load.shapes import InternedText, interned_together
from traceanalyze.native import compiled, numpy_for_threads

_native = compiled()

# the scanner's tags (`_native.c`)
ABSENT, NULL, INT, FLOAT, STR, BOOL, LIST3, OTHER, OBJECT = range(9)
SCALAR, INTS3, RAW = range(3)  # how the scanner keeps an `args` value

# the `args` keys the scanner collects (`fields.ARG_FIELDS`), and how
_SCANNED_AS = {fields.INT: SCALAR, fields.FLOAT: SCALAR, fields.STRING: SCALAR, fields.INTS3: INTS3, fields.TEXT: RAW}
ARG_KEYS: tuple[tuple[bytes, int], ...] = tuple((f.key.encode(), _SCANNED_AS[f.kind]) for f in fields.ARG_FIELDS)
_KIND_OF_KEY = {key.decode(): kind for key, kind in ARG_KEYS}  # the top-level fields are SCALAR

# the args each table reads, by the type its msgspec struct gives them (events.GpuArgs, …)
_TABLE_ARGS: dict[int, tuple[fields.ArgField, ...]] = {
    code: fields.fields_of(chunk.TABLE_OF_CODE[code]) for code in (chunk.GPU, chunk.RUNTIME, chunk.SYNC, chunk.CPU_OP)
}
_ALLOWED = {fields.INT: (ABSENT, NULL, INT), fields.FLOAT: (ABSENT, NULL, INT, FLOAT),
            fields.INTS3: (ABSENT, NULL, LIST3), fields.STRING: (ABSENT, NULL, STR)}
# what the typed decode of the event itself accepts (events.FastEvent)
_TOP_ALLOWED = {"ph": (ABSENT, NULL, STR), "cat": (ABSENT, NULL, STR), "name": (ABSENT, NULL, STR),
                "pid": (ABSENT, NULL, INT, STR), "tid": (ABSENT, NULL, INT, STR), "id": (ABSENT, NULL, INT, STR),
                "ts": (ABSENT, NULL, INT, FLOAT), "dur": (ABSENT, NULL, INT, FLOAT)}
_READ_TABLES = (chunk.GPU, chunk.RUNTIME, chunk.CPU_OP, chunk.SYNC)  # tables that decode their args


class _NotVouched(Exception):
    """The msgspec path would treat this chunk differently: let it."""


def available() -> bool:
    return _native is not None


def chunk_tables(text: bytes | memoryview | bytearray, include_python: bool, *,
                 bare: bool = False) -> chunk.ChunkTables | None:
    """A chunk's JSON text `[event, …]` (`bare`: `event, …`, the items without the brackets) →
    its tables, or None when the msgspec path must decide."""
    piece = scan_piece(text, include_python, bare=bare)
    return None if piece is None else tables_of_pieces([piece])


@dataclass
class ScannedPiece:
    """A piece of text's events as the scanner read them, vouched for (everything that could send
    it to the msgspec path is checked) and with its shape texts numbered: nothing in it points
    into the text, which can be freed. `tables_of_pieces` finishes it, alone or with its
    neighbours."""

    scanned: dict[str, Any]  # the scanner's `n`, `events`, `strings`, `fields`
    codes: Any  # each row's table (`_table_codes`)
    seq: Any  # each row's event number in the piece
    no_phase: tuple[int, int] | None  # (count, first event) of routed events without `ph`
    texts: tuple[InternedText, ...]  # the cpu_ops rows' shape texts; () when the piece has none

    @property
    def rows(self) -> int:
        return int(self.scanned["n"])

    @property
    def events(self) -> int:
        """The events of the piece, rows or not (a scanner built before it dropped any: its rows)."""
        return int(self.scanned.get("events", self.scanned["n"]))


def scan_piece(text: bytes | memoryview | bytearray, include_python: bool, *,
               bare: bool = False) -> ScannedPiece | None:
    """A chunk's text (as `chunk_tables` takes it) scanned and checked, or None when the msgspec
    path must decide."""
    if _native is None or (bare and not getattr(_native, "SCANS_BARE", 0)):
        return None
    passed = _passed_over(include_python)
    scanned = _native.scan(text, ARG_KEYS, *passed, bare) if bare else _native.scan(text, ARG_KEYS, *passed)
    if scanned is None:
        return None
    prepare_for_threads()  # the arrays are read with numpy from here on
    try:
        strings: list[str] = scanned["strings"]
        codes, no_phase = _table_codes(scanned, strings, include_python)
        _check(scanned, codes)
        _converted(scanned["fields"], strings)  # raises where an integer does not fit
    except _NotVouched:
        return None
    seq = _event_numbers(scanned)
    if no_phase is not None:  # its first row → that row's event
        no_phase = (no_phase[0], int(seq[no_phase[1]]))
    cpu_ops = codes == chunk.CPU_OP
    texts = _raw_texts(text, scanned["fields"], cpu_ops) if cpu_ops.any() else ()
    return ScannedPiece(scanned, codes, seq, no_phase, texts)


@functools.cache
def _passed_over(include_python: bool) -> tuple[tuple[Any, ...], ...]:
    """The scanner's arguments after the keys: the categories whose events no table reads (as
    written), so that their names and args are validated, not read (`python_function` unless
    kept: half the events of many traces); and the tags such an event may have (per field, as
    `_type_rules` allows them for no table) for it to get no row at all. None for a scanner built
    before it could."""
    if not getattr(_native, "PASSES_CATEGORIES", 0):
        return ()
    passed = tuple(c.encode() for c in sorted(classify.PYTHON_CATEGORIES)
                   if chunk.route(c, include_python) == chunk.DROP)
    if not getattr(_native, "DROPS_PASSED", 0):
        return (passed,)
    every_tag = (1 << _TAGS) - 1
    allowed = tuple(~_type_rules()[field] >> (chunk.DROP * _TAGS) & every_tag for field in _SCANNED_ORDER)
    return passed, allowed


_SCANNED_ORDER = ("ph", "cat", "name", "pid", "tid", "ts", "dur", "id", "args")  # the scanner's top-level columns


def scan(text: bytes | memoryview) -> dict[str, Any] | None:
    """The compiled scanner's columns of a chunk `[event, …]` (`n`, `strings`, `fields`: per field
    its tags and values, as `_events_frame` reads them), or None where it does not vouch for the
    chunk or is not built."""
    return None if _native is None else _native.scan(text, ARG_KEYS)


def prepare_for_threads() -> None:
    """numpy and polars' bridge to it (`native.numpy_for_threads`), asked by each scan after its
    compiled part, before it reads the arrays: the decoding threads scan the first chunks while one
    imports (0.1 s that came before any chunk was read)."""
    if _native is not None:
        numpy_for_threads()


def _events_frame(scanned: dict[str, Any], needed: set[str], seq: Any) -> pl.DataFrame:
    """One row per event: `<field>_tag`, and its values (`<field>_int`, `<field>_float`;
    `<field>_0/1/2` for a list of three integers; `<field>_offset/_length` for raw text): only
    the columns in `needed` (each made series holds the GIL a while), and `seq`, each row's event
    number (`_event_numbers`)."""
    np = numpy_for_threads()
    arrays_of: dict[str, Any] = {}
    for name, arrays in scanned["fields"].items():
        arrays_of[f"{name}_tag"] = (arrays[0], np.uint8)
        kind = _KIND_OF_KEY.get(name, SCALAR)
        if name == "args":
            continue
        if kind == SCALAR:  # one value column but for the times: the tag says int or float
            arrays_of[f"{name}_int"] = (arrays[1], np.int64)
            arrays_of[f"{name}_float"] = (arrays[-1], np.float64)
        elif kind == INTS3:
            for k in range(3):
                arrays_of[f"{name}_{k}"] = (arrays[1 + k], np.int64)
        else:
            arrays_of[f"{name}_offset"] = (arrays[1], np.int64)
            arrays_of[f"{name}_length"] = (arrays[2], np.int64)
    return pl.DataFrame({**{column: pl.Series(np.frombuffer(array, dtype=dtype))
                            for column, (array, dtype) in arrays_of.items()
                            if column in needed}, "seq": pl.Series(seq)})


def _tag(name: str) -> pl.Expr:
    return pl.col(f"{name}_tag")


def _int(name: str) -> pl.Expr:
    return pl.when(_tag(name) == INT).then(pl.col(f"{name}_int"))


def _number(name: str) -> pl.Expr:
    """A `float | None` field: msgspec turns a JSON integer into the nearest float."""
    return (
        pl.when(_tag(name) == FLOAT).then(pl.col(f"{name}_float"))
        .when(_tag(name) == INT).then(pl.col(f"{name}_int").cast(pl.Float64))
    )


def tables_of_pieces(pieces: list[ScannedPiece]) -> chunk.ChunkTables:
    """The tables of consecutive scanned pieces, finished together as one chunk: finishing costs
    about as much for a thousand rows as for fifty thousand (four plans of a hundred expressions,
    the shape texts decoded), so pieces of few rows are finished in batches."""
    piece = pieces[0] if len(pieces) == 1 else _merged(pieces)
    scanned, codes = piece.scanned, piece.codes
    strings: list[str] = scanned["strings"]
    present = tuple(code for code in _distinct_codes(codes, chunk.FLOW + 1) if code != chunk.DROP)
    needed = {column for code in present for column in _read_by(code)}
    events = _events_frame(scanned, needed, piece.seq)
    lookups = _Lookups.of(scanned, strings)
    plans: dict[str, pl.LazyFrame] = {}
    names: dict[str, list[str]] = {}
    for code in present:
        name = chunk.TABLE_OF_CODE[code]
        columns = _raw_columns(code, _TIMES[code], lookups)
        rows = codes == code
        plans[name] = _rows_of(events.lazy().select(_read_by(code)), rows).select(columns)
        names[name] = lookups.names_of(rows)
    del events
    texts = piece.texts if chunk.CPU_OP in present else ()
    return finish_chunk(plans, texts, piece.events, piece.no_phase, names)


def _merged(pieces: list[ScannedPiece]) -> ScannedPiece:
    """Consecutive pieces as one: their rows in order, each string field's numbers renumbered
    into the strings of all of them, event numbers counted from the first piece's first event,
    the shape texts numbered anew (each distinct text once)."""
    np = numpy_for_threads()
    strings: dict[str, int] = {}
    renumbered = []  # per piece: its string numbers → the merged ones
    for piece in pieces:
        renumbered.append(np.array([strings.setdefault(text, len(strings)) for text in piece.scanned["strings"]],
                                   dtype=np.int64))
    fields = {}
    for name in pieces[0].scanned["fields"]:
        arrays = [piece.scanned["fields"][name] for piece in pieces]
        merged = [b"".join(parts) for parts in zip(*arrays)]
        if len(merged) > 1 and _KIND_OF_KEY.get(name, SCALAR) == SCALAR:  # a string's value is its number
            values = np.frombuffer(merged[1], dtype=np.int64).copy()
            start = 0
            for piece_arrays, mapping in zip(arrays, renumbered):
                tags = np.frombuffer(piece_arrays[0], dtype=np.uint8)
                own = values[start:start + tags.size]
                where = (tags == STR) & (own >= 0) & (own < mapping.size)  # -1: a name passed over
                own[where] = mapping[own[where]]
                start += tags.size
            merged[1] = values
        fields[name] = merged
    starts = np.cumsum([0, *(piece.events for piece in pieces[:-1])])
    no_phase = None
    for piece, start in zip(pieces, starts):
        if piece.no_phase is not None:
            count, first = piece.no_phase
            no_phase = (count, int(first + start)) if no_phase is None else (no_phase[0] + count, no_phase[1])
    scanned = {"n": sum(piece.rows for piece in pieces),
               "events": sum(piece.events for piece in pieces),
               "strings": list(strings), "fields": fields}
    return ScannedPiece(scanned, np.concatenate([piece.codes for piece in pieces]),
                        np.concatenate([piece.seq + start for piece, start in zip(pieces, starts)]),
                        no_phase, interned_together([piece.texts for piece in pieces if piece.texts]))


def _rows_of(events: pl.LazyFrame, rows: Any) -> pl.LazyFrame:
    """The events where `rows` (a mask), in their own buffers. A filter whose rows are one run (as
    a trace often lists one kind of event together) returns a view of each scanned column, and a
    column the plan passes through unchanged (pid, External id, correlation) would then keep the
    whole chunk's scanned array alive until the table is finished (a 1 GB trace: 155 MB at the end
    of its stream): those rows are gathered, which copies them. Other rows are filtered (a copy
    too, and faster than a gather)."""
    np = numpy_for_threads()
    where = np.flatnonzero(rows)
    if where.size and where[-1] - where[0] + 1 == where.size:
        return events.select(pl.all().gather(pl.lit(pl.Series(where))))
    return events.filter(pl.lit(pl.Series(rows)))


@functools.cache
def _read_by(code: int) -> tuple[str, ...]:
    """The scanned columns table `code`'s raw columns read (the same for every chunk: only the
    strings they look up differ)."""
    columns = _raw_columns(code, _TIMES[code], _Lookups([], [], {convert.__name__: pl.Series([], dtype=pl.Int64)
                                                                  for convert in _CONVERSIONS}, None, None))
    return tuple(sorted({column for expr in columns for column in expr.meta.root_names()}))


def _event_numbers(scanned: dict[str, Any]) -> Any:
    """Each row's event number in the chunk: the scanner gives no row to the events it drops (of
    a category passed over, `_passed_over`)."""
    np = numpy_for_threads()
    if "seq" in scanned:
        return np.frombuffer(scanned["seq"], dtype=np.int64)
    return np.arange(scanned["n"], dtype=np.int64)  # a scanner built before it dropped any


def _check(scanned: dict[str, Any], codes: Any) -> None:
    """Raise `_NotVouched` unless the msgspec path would read every event as the scanner did:
    each field of a type the typed decode accepts (`args` an object where a table decodes them),
    and the times of the events the tables read within what `fast.raw_times` converts (checked
    over all those tables at once: stricter than per table, and any chunk it turns away the
    msgspec path decodes to the same tables)."""
    np = numpy_for_threads()
    fields = scanned["fields"]
    by_table = codes * _TAGS  # each event's (table, tag) as one bit of 64: or-ed, not looked up per event
    for field, refused in _type_rules().items():
        tagged = by_table + np.frombuffer(fields[field][0], dtype=np.uint8)
        if np.bitwise_or.reduce(np.left_shift(np.uint64(1), tagged)) & refused:
            raise _NotVouched
    routed = codes != chunk.DROP
    largest = {}
    for field, rows in (("ts", routed), ("dur", routed & (codes != chunk.FLOW))):
        tags = np.frombuffer(fields[field][0], dtype=np.uint8)
        ints = np.frombuffer(fields[field][1], dtype=np.int64)
        floats = np.frombuffer(fields[field][-1], dtype=np.float64)
        written_int, written_float = ints[rows & (tags == INT)], np.abs(floats[rows & (tags == FLOAT)])
        int_max = max(int(written_int.max()), -int(written_int.min())) if written_int.size else 0
        float_max = float(written_float.max()) if written_float.size else 0.0
        if int_max >= conversions.INT64_US_LIMIT:  # `fast.raw_times`' limits: larger values take the general path
            raise _NotVouched
        largest[field] = max(float(int_max), float_max)
        if float_max >= _EXACT_FLOAT_US:  # the scanner's exact ns (`decimal_ns`) where the float has lost them;
            if not getattr(_native, "EXACT_FLOAT_NS", 0):  # the Python paths decide a text it could not read (1.7e15)
                raise _NotVouched  # a scanner built before it kept them
            magnitude = np.abs(floats)
            beyond = rows & (tags == FLOAT) & (magnitude >= _EXACT_FLOAT_US) & (magnitude < _LARGEST_US)
            if (beyond & (ints == _NOT_EXACT)).any():
                raise _NotVouched
    if largest["ts"] + largest["dur"] >= conversions.END_LIMIT_US:
        raise _NotVouched


@functools.cache
def _type_rules() -> dict[str, int]:
    """Per scanned field, the (table, tag) pairs refused, as the bits `table code × _TAGS + tag`:
    the tags the typed decode refuses of the event itself, of `args` (an object where a table
    decodes them, else also null) and of each args field a table reads (none where no table
    reads it)."""
    tables = range(chunk.FLOW + 1)

    def refusing(code: int, allowed: tuple[int, ...]) -> int:
        return sum(1 << (code * _TAGS + tag) for tag in range(_TAGS) if tag not in allowed)

    rules = {field: sum(refusing(code, allowed) for code in tables) for field, allowed in _TOP_ALLOWED.items()}
    rules["args"] = sum(refusing(code, (ABSENT, OBJECT) if code in _READ_TABLES else (ABSENT, NULL, OBJECT))
                        for code in tables)
    for code, table_fields in _TABLE_ARGS.items():
        for f in table_fields:
            if f.kind in _ALLOWED:
                rules[f.key] = rules.get(f.key, 0) | refusing(code, _ALLOWED[f.kind])
    return rules


_TIMES = {code: ("ts",) if code == chunk.FLOW else ("ts", "dur") for code in chunk.TABLE_OF_CODE}
# what `_Lookups` makes of a string field that is an integer or a string
_CONVERSIONS = (conversions.as_int, conversions.thread_id, conversions.stream_from_tid)
_TAGS = OBJECT + 1  # the scanner's tags: 9, so 7 tables × 9 tags fit in 64 bits


def _table_codes(scanned: dict[str, Any], strings: list[str],
                 include_python: bool) -> tuple[Any, tuple[int, int] | None]:
    """The table of each event (`chunk.DROP`, `GPU`, …): its category's route where its phase is
    right (`X`; `s`/`f`/`t` for flows), as `fast.fast_chunk` routes them; and (count, first
    event) of the events of a routed category without `ph` (None when there are none)."""
    fields = scanned["fields"]
    np = numpy_for_threads()

    # a rule per distinct category and phase, not per string: names can be as many as events
    categories, phase = _string_codes(fields["cat"], len(strings)), _string_codes(fields["ph"], len(strings))
    routes = np.full(len(strings) + 1, chunk.DROP, dtype=np.uint8)
    for code in _strings_used(categories, strings):
        routes[code] = chunk.route(strings[code], include_python)
    is_x, is_flow_phase = np.zeros(len(strings) + 1, dtype=bool), np.zeros(len(strings) + 1, dtype=bool)
    for code in _strings_used(phase, strings):
        is_x[code], is_flow_phase[code] = strings[code] in chunk.X, strings[code] in chunk.PHASES[chunk.FLOW]
    route = routes[categories]
    phase_ok = np.where(route == chunk.FLOW, is_flow_phase[phase], is_x[phase])
    phase_tags = np.frombuffer(fields["ph"][0], dtype=np.uint8)
    missing = np.flatnonzero((route != chunk.DROP) & ((phase_tags == ABSENT) | (phase_tags == NULL)))
    no_phase = (int(missing.size), int(missing[0])) if missing.size else None
    return np.where(phase_ok, route, chunk.DROP).astype(np.uint8), no_phase


def _string_codes(scanned_field: list[Any], count: int) -> Any:
    """A scanned field's string index per event, or `count` (the number of strings) where it is
    not a string."""
    np = numpy_for_threads()
    tags, values = np.frombuffer(scanned_field[0], dtype=np.uint8), np.frombuffer(scanned_field[1], dtype=np.int64)
    return np.where((tags == STR) & (values >= 0), values, count)  # -1: a name passed over (`_passed_over`)


def _strings_used(codes: Any, strings: list[str]) -> list[int]:
    """The distinct string indices among `codes` (a field's `_string_codes`: len(strings) where the
    value is no string)."""
    return [code for code in _distinct_codes(codes, len(strings) + 1) if code < len(strings)]


def _distinct_codes(codes: Any, size: int) -> list[int]:
    """The distinct values among `codes`, all in [0, size), increasing: counted, not sorted or
    hashed (`np.unique` of a chunk's 100,000 codes costs more than the table it routes)."""
    np = numpy_for_threads()
    return np.flatnonzero(np.bincount(codes, minlength=size)).tolist()


def _converted(fields: dict[str, Any], strings: list[str]) -> dict[str, list[int | None]]:
    """Per conversion of `_CONVERSIONS`, what it makes of each string that a `pid`, `tid` or `id`
    holds (None for the other strings); raises `_NotVouched` for an integer beyond Int64, which
    the fast path's column refuses."""
    np = numpy_for_threads()
    used: set[int] = set()
    for field in ("pid", "tid", "id"):
        tags = np.frombuffer(fields[field][0], dtype=np.uint8)
        used.update(_distinct_codes(np.frombuffer(fields[field][1], dtype=np.int64)[tags == STR], len(strings)))
    integers = {}
    for convert in _CONVERSIONS:
        values: list[int | None] = [None] * len(strings)
        for code in used:
            value = convert(strings[code])
            if value is not None and not -(1 << 63) <= value < (1 << 63):
                raise _NotVouched
            values[code] = value
        integers[convert.__name__] = values
    return integers


class _Lookups:
    """Per chunk, what a string index becomes: the string, its lower case, and the integer that
    each of the fast path's conversions gives (`as_int`, `thread_id`, `_stream_from_tid`), by
    index; a field that is not a string gathers null (`code`). `name_codes`, `category_codes`:
    each event's index of its name and category (len(strings) when not a string)."""

    def __init__(self, strings: list[str], lowered: list[str | None], integers: dict[str, pl.Series],
                 name_codes: Any, category_codes: Any):
        self.texts, self.lowered_texts = strings, lowered
        self.strings = pl.Series(strings, dtype=pl.String)
        self.lowered = pl.Series(lowered, dtype=pl.String)
        self.integers = integers
        self.name_codes = name_codes
        self.category_codes = category_codes

    @classmethod
    def of(cls, scanned: dict[str, Any], strings: list[str]) -> "_Lookups":
        fields = scanned["fields"]
        integers = {name: pl.Series(values, dtype=pl.Int64) for name, values in _converted(fields, strings).items()}
        # lower case is read for categories only (`lower("cat")`): a handful, where names may be
        # as many as events
        lowered: list[str | None] = [None] * len(strings)
        category_codes = _string_codes(fields["cat"], len(strings))
        name_codes = _string_codes(fields["name"], len(strings))
        for code in _strings_used(category_codes, strings):
            lowered[code] = strings[code].lower()
        return cls(strings, lowered, integers, name_codes, category_codes)

    def names_of(self, rows: Any) -> list[str]:
        """The distinct names and lower-case categories of the events where `rows` (a mask)."""
        strings, lowered = self.texts, self.lowered_texts
        names = _strings_used(self.name_codes[rows], strings)
        categories = _strings_used(self.category_codes[rows], strings)
        return [*(strings[code] for code in names), *(lowered[code] for code in categories)]

    def code(self, field: str) -> pl.Expr:
        """The string's index where the field is a string; null (which gathers null) where it is
        not."""
        return _string_index(field)

    def string(self, field: str) -> pl.Expr:
        return pl.lit(self.strings).gather(self.code(field))

    def category(self, field: str) -> pl.Expr:
        """A string field as a categorical: each distinct string hashed once per chunk, not once
        per row (event names are the table's `Categorical` name column in the end)."""
        return pl.lit(self.strings.cast(pl.Categorical())).gather(self.code(field))

    def lower_category(self) -> pl.Expr:
        """`cat` in lower case (the one field whose lower case `of` makes)."""
        return pl.lit(self.lowered).gather(self.code("cat"))

    def integer(self, field: str, convert) -> pl.Expr:
        """An `int | str` field as an integer: ints as written, strings by `convert` (what
        `fast.mapped_ints` gives)."""
        return _int(field).otherwise(pl.lit(self.integers[convert.__name__]).gather(self.code(field)))


@functools.cache
def _time_columns(times: tuple[str, ...]) -> tuple[pl.Expr, ...]:
    """`<field>_i`, `_f` and `_x` of each time field (`fast.raw_times`)."""
    return tuple(
        column
        for field in times
        for column in (_int(field).alias(f"{field}_i"),
                       pl.when(_tag(field) == FLOAT).then(pl.col(f"{field}_float")).alias(f"{field}_f"),
                       pl.when(_beyond_float(field)).then(pl.col(f"{field}_int")).alias(f"{field}_x"))
    )


def _raw_columns(code: int, times: tuple[str, ...], lookups: _Lookups) -> list[pl.Expr]:
    """The raw columns of table `code`, as expressions over the scanned columns."""
    timed = list(_time_columns(times))
    if code != chunk.FLOW:
        timed = [_SEQ, lookups.category("name").alias("name"), *timed]
    thread = [lookups.integer("pid", conversions.thread_id).alias("pid"),
              lookups.integer("tid", conversions.thread_id).alias("tid")]
    args = [_arg_column(f, lookups) for f in _TABLE_ARGS.get(code, ()) if f.kind != fields.TEXT]
    if code == chunk.GPU:
        return [*timed, lookups.lower_category().alias("category"),
                lookups.integer("pid", conversions.as_int).alias("pid_int"),
                lookups.integer("tid", conversions.stream_from_tid).alias("stream_tid"), *args]
    if code == chunk.RUNTIME:
        return [*timed, *thread, *args]
    if code == chunk.CPU_OP:
        return [*timed, lookups.lower_category().alias("category"), *thread, *args]
    if code == chunk.SYNC:
        return [*timed, lookups.integer("pid", conversions.as_int).alias("pid_int"),
                lookups.integer("tid", conversions.stream_from_tid).alias("stream_tid"), *args]
    if code == chunk.PYTHON:
        return [*timed, *thread]
    # flows
    return [lookups.integer("id", conversions.as_int).alias("id"), lookups.string("ph").alias("phase"),
            lookups.lower_category().alias("category"), *thread, *timed]


def _arg_column(field: fields.ArgField, lookups: _Lookups) -> pl.Expr:
    """An `args` field's raw column (`fields.ArgField.raw_column`), as the msgspec struct reads it."""
    if field.kind == fields.STRING:
        return lookups.string(field.key).alias(field.raw_column)
    return _typed_arg_column(field)


@functools.cache
def _typed_arg_column(field: fields.ArgField) -> pl.Expr:
    """`_arg_column` of a field that is no string (the same expression for every chunk)."""
    key = field.key
    if field.kind == fields.INT:
        value = _int(key)
    elif field.kind == fields.FLOAT:
        value = _number(key)
    else:  # a list of three integers
        value = pl.when(_tag(key) == LIST3).then(_three_ints(f"{key}_0", f"{key}_1", f"{key}_2"))
    return value.alias(field.raw_column)


@functools.cache
def _string_index(field: str) -> pl.Expr:
    return pl.when(_tag(field) == STR).then(pl.col(f"{field}_int"))


def _three_ints(*columns: str) -> pl.Expr:
    """Three Int64 columns as one List(Int64) column (a kernel's grid or block). Made as a
    fixed-size array, then cast: `concat_list` builds each row's list on its own, 20 times slower
    (4.2 against 0.19 ms for a chunk's 7,160 kernels)."""
    if hasattr(pl, "concat_arr"):  # polars 1.17 and later
        return pl.concat_arr(*columns).cast(pl.List(pl.Int64))
    return pl.concat_list(*columns)


_SEQ = pl.col("seq").cast(pl.Int64)
_EXACT_FLOAT_US, _LARGEST_US = time_rules.EXACT_FLOAT_US, time_rules.LARGEST_US
_NOT_EXACT = -(1 << 63)  # the scanner's "no exact ns" (an exponent in the text)


def _beyond_float(field: str) -> pl.Expr:
    """A float time whose ns come from its text (`times.float_ns`'s rule)."""
    magnitude = pl.col(f"{field}_float").abs()
    return (_tag(field) == FLOAT) & (magnitude >= _EXACT_FLOAT_US) & (magnitude < _LARGEST_US)


def _raw_texts(text: bytes | memoryview, fields: dict[str, Any], rows: Any) -> tuple[InternedText, ...]:
    """The shape arguments of the cpu_ops rows (`rows`: a mask of the events), numbered: per row
    the number of its text (-1 when absent), and only the distinct texts copied out of the chunk
    and decoded to `str` (as `fast.joined_text` decodes them)."""
    np = numpy_for_threads()
    interned = []
    for key in _TEXT_KEYS:
        tags = np.frombuffer(fields[key][0], dtype=np.uint8)[rows]
        present = tags != ABSENT
        if not present.any():  # a trace recorded without shapes
            interned.append(InternedText(ids=pl.Series("ids", np.full(tags.size, -1, dtype=np.int64)),
                                         distinct=pl.Series([], dtype=pl.String)))
            continue
        offsets = np.where(present, np.frombuffer(fields[key][1], dtype=np.int64)[rows], 0)
        lengths = np.where(present, np.frombuffer(fields[key][2], dtype=np.int64)[rows], 0)
        ids, firsts = _native.intern_spans(text, offsets, lengths)
        ids, firsts = np.frombuffer(ids, dtype=np.int64), np.frombuffer(firsts, dtype=np.int64)
        joined = _native.join_spans(text, offsets[firsts], lengths[firsts]).decode("utf-8", "replace")
        distinct = pl.Series(joined.split("\x00") if len(firsts) else [], dtype=pl.String)
        interned.append(InternedText(ids=pl.Series("ids", ids), distinct=distinct))
    return tuple(interned)


_TEXT_KEYS = tuple(f.key for f in fields.text_fields())
