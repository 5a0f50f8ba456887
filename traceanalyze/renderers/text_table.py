"""Plain-text layout of the terminal outputs (report, info, gate verdict, diff): the one table
writer, and the fitting of tables and lines to a terminal's width (docs/report-formats.md#width).

A table wider than `width` is narrowed in this order, each step only as far as needed:
1. headers wrap onto two lines (never narrower than their longest word);
2. name columns (`Shrinkable`: kernels, ops, annotations) are cut, each by its own rule (a kernel
   keeps its function name, a CPU op both ends), the widest first down to the next widest (so
   they end up even), never below their `min_width`;
3. the columns are split into blocks printed one under the other, each repeating the first column
   (the row's key; `keys` columns): the fewest blocks that fit with names READABLE_NAME_WIDTH wide, as even as can
   be; each block is then narrowed by steps 1-2 again, from the full cells.
`fit_lines` then wraps any line still too long (prose, and tables too narrow to split further) at
spaces, with a hanging indent. Widths count characters: every character the renderers write
(`…`, `→`, `µ`, `█`) takes one column.
"""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

from tabulate import tabulate

from traceanalyze.renderers.escape import output_text, visible

FALLBACK_WIDTH = 80  # the usual terminal, where none is known but one is meant
NOT_A_TERMINAL_WIDTH = 4000  # the output is not a terminal and COLUMNS is not set: lines kept whole
MIN_WIDTH = 40  # the narrowest layout (`--width` refuses less; a narrower terminal gets this)
MIN_NAME_WIDTH = 16  # a name column is never cut below this many characters
READABLE_NAME_WIDTH = 28  # a name column's width when the columns are split into blocks
HEADER_PADDING = 2  # tabulate's "simple" style pads a header by 2 columns beyond its cells


def terminal_width() -> int:
    """The width of the text outputs when `--width` is not given: `COLUMNS` when set, else the
    terminal's own width, else NOT_A_TERMINAL_WIDTH (output to a file, a pipe, a CI log: lines are
    kept whole, a verdict's gain and confidence never cut); at least MIN_WIDTH."""
    return max(shutil.get_terminal_size((NOT_A_TERMINAL_WIDTH, 24)).columns, MIN_WIDTH)


@dataclass(frozen=True)
class Shrinkable:
    """A column whose cells may be cut to fit: `cells(width)` gives the column's cells, each at
    most `width` characters (`width` ≥ `min_width`)."""

    cells: Callable[[int], Sequence[str]]
    min_width: int = MIN_NAME_WIDTH


def text_table(rows: Sequence[Sequence[object]], headers: Sequence[str], *, align: Sequence[str] | None = None,
               indent: str = "  ", width: int | None = None, shrink: Mapping[int, Shrinkable] | None = None,
               keys: int = 1) -> str:
    """Columns lined up under `headers` (tabulate's "simple" style: no numbers re-parsed), every
    line indented by `indent`; `align` gives each column's "left"/"right"/"center". With `width`,
    narrowed to it as the module docstring says (`shrink`: the name columns that may be cut; `keys`:
    how many leading columns name a row, repeated in every block)."""
    cells = [[visible(cell) for cell in row] for row in rows]
    text = _render(cells, list(headers), align, indent)
    if width is None or _widest(text) <= width:
        return text
    columns = list(range(len(headers)))
    fitted = _narrowed(cells, list(headers), columns, align, indent, width, shrink or {})
    if _widest(fitted) <= width or len(headers) < keys + 2:
        return fitted
    blocks = _blocks(cells, list(headers), indent, width, shrink or {}, keys)
    return "\n\n".join(_narrowed(cells, list(headers), block, align, indent, width, shrink or {}) for block in blocks)


def _render(rows: list[list[str]], headers: list[str], align: Sequence[str] | None, indent: str) -> str:
    text = tabulate(rows, headers=headers, tablefmt="simple", colalign=align, disable_numparse=True)
    return "\n".join(indent + line for line in text.splitlines())


def _widest(text: str) -> int:
    return max((len(line) for line in text.splitlines()), default=0)


def _header(text: str, width: int) -> str:
    """`text` wrapped onto lines of at most `width - HEADER_PADDING` characters (so that it does not
    widen a column `width` wide), but never onto more than two lines and never breaking a word."""
    words = text.split()
    if not words:
        return text
    least = max(len(word) for word in words)
    while len(textwrap.wrap(text, least)) > 2:
        least += 1
    return "\n".join(textwrap.wrap(text, max(width - HEADER_PADDING, least))) or text


def _header_width(header: str) -> int:
    return max(len(line) for line in header.split("\n")) + HEADER_PADDING


def _cell_width(rows: list[list[str]], column: int) -> int:
    return max((len(row[column]) for row in rows), default=0)


def _narrowed(rows: list[list[str]], headers: list[str], columns: list[int], align: Sequence[str] | None,
              indent: str, width: int, shrink: Mapping[int, Shrinkable]) -> str:
    """The table of `columns`, its headers wrapped and its name columns cut until it fits `width`
    (or cannot be narrowed further)."""
    rows = [[row[c] for c in columns] for row in rows]
    cut = {index: shrink[c] for index, c in enumerate(columns) if c in shrink}
    heads = [headers[c] for c in columns]
    chosen = None if align is None else [align[c] for c in columns]
    text = _render(rows, heads, chosen, indent)
    while _widest(text) > width:  # wrap the header that narrows its column the most, one at a time
        cells = [_cell_width(rows, index) for index in range(len(heads))]
        gains = {index: max(_header_width(head), cells[index])
                 - max(_header_width(_header(head, cells[index])), cells[index])
                 for index, head in enumerate(heads)}
        index = max(gains, key=lambda i: (gains[i], -i))
        if gains[index] <= 0:
            break
        heads[index] = _header(heads[index], cells[index])
        text = _render(rows, heads, chosen, indent)
    stuck: set[int] = set()  # columns whose cells come back no narrower when asked to be
    while _widest(text) > width:
        current = {index: _cell_width(rows, index) for index in cut}
        wider = [index for index in cut if current[index] > cut[index].min_width and index not in stuck]
        if not wider:
            break
        # the widest name column gives up characters first, down to the next widest: names end up
        # cut to even widths, not one of them to the bone
        index = max(wider, key=lambda i: (current[i], -i))
        tied = sum(1 for i in wider if current[i] == current[index])
        below = max((current[i] for i in wider if current[i] < current[index]), default=0)
        excess = _widest(text) - width
        target = max(cut[index].min_width, current[index] - -(-excess // tied), below)
        for row, cell in zip(rows, cut[index].cells(target)):
            row[index] = visible(cell)
        if _cell_width(rows, index) >= current[index]:
            stuck.add(index)
        heads[index] = _header(headers[columns[index]], target)
        text = _render(rows, heads, chosen, indent)
    return text


def _blocks(rows: list[list[str]], headers: list[str], indent: str, width: int,
            shrink: Mapping[int, Shrinkable], keys: int) -> list[list[int]]:
    """The columns after the first `keys` split into the fewest blocks that fit `width`, each
    block starting with those key columns, as even as can be (the widest block as narrow as it can
    be), names counted at a readable width (`_readable`), so that what is left goes to them."""
    sizes = [_readable(rows, headers, column, shrink) for column in range(len(headers))]
    key = len(indent) + sum(sizes[:keys]) + 2 * (keys - 1)
    rest = [2 + size for size in sizes[keys:]]  # a column and the 2 spaces before it

    def widest(cuts: tuple[int, ...]) -> int:
        bounds = (0, *cuts, len(rest))
        return key + max(sum(rest[a:b]) for a, b in zip(bounds, bounds[1:]))

    best: tuple[int, ...] = tuple(range(1, len(rest)))  # one column per block: the narrowest there is
    for count in range(1, len(rest)):
        fitting = [cuts for cuts in combinations(range(1, len(rest)), count - 1) if widest(cuts) <= width]
        if fitting:
            best = min(fitting, key=widest)
            break
    bounds = (0, *best, len(rest))
    return [[*range(keys), *range(keys + a, keys + b)] for a, b in zip(bounds, bounds[1:])]


def _readable(rows: list[list[str]], headers: list[str], column: int, shrink: Mapping[int, Shrinkable]) -> int:
    """A column's width in a block: its cells (a name column's at most READABLE_NAME_WIDTH), or its
    header's longest word, padded."""
    cells = _cell_width(rows, column)
    if column in shrink:
        cells = min(cells, max(shrink[column].min_width, READABLE_NAME_WIDTH))
    return max(cells, max((len(word) for word in headers[column].split()), default=0) + HEADER_PADDING)


def fit_lines(lines: Sequence[str], width: int | None) -> list[str]:
    """Every line at most `width` characters, as it will be printed (`escape.output_text` first: an
    escaped control character takes its columns): a longer one wraps at spaces (words longer than a
    line are cut), continuing under its text after an opening ` — ` or list marker when that is not
    too far right, else two columns in from its own indent. Lines may hold newlines (tables)."""
    text = output_text("\n".join(lines))
    if width is None:
        return text.split("\n")
    out: list[str] = []
    for line in text.split("\n"):
        if len(line) <= width:
            out.append(line)
            continue
        body = line.lstrip(" ")
        indent = " " * (len(line) - len(body))
        hang = _hang(line, width) or len(indent) + 2
        out.extend(textwrap.wrap(body, width, initial_indent=indent, subsequent_indent=" " * hang,
                                 break_on_hyphens=False) or [line[:width]])
    return out


def _hang(line: str, width: int) -> int | None:
    """Where a wrapped line's continuation starts: after ` — ` or a list marker (`- `, `✗ `, `1. `),
    if that is within the first half of `width`."""
    body = line.lstrip(" ")
    start = len(line) - len(body)
    marks = [start + len(marker) for marker in ("- ", "✗ ", "→ ", "* ") if body.startswith(marker)]
    number = body.split(" ", 1)[0]
    if number[:-1].isdigit() and number.endswith("."):
        marks.append(start + len(number) + 1)
    dash = line.find(" — ")
    if dash >= 0:
        marks.append(dash + 3)
    good = [mark for mark in marks if mark <= width // 2]
    return min(good) if good else None
