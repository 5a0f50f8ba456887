"""The blocks a report document is made of (`renderers.document` lays them out; `renderers.markdown`
and `report.html` write them). Plain data: no rendering, no computing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union


@dataclass(frozen=True)
class Code:
    """Inline code: a kernel, op or file name, shown verbatim."""

    text: str


@dataclass(frozen=True)
class Strong:
    text: str


Inline = Union[str, Code, Strong]


@dataclass(frozen=True)
class Cell:
    """A table cell. `full` is the untruncated text (an HTML tooltip); `key` a regime or gap cause
    (a colour chip in HTML); `share` in [0, 1] draws a bar (text in Markdown)."""

    text: str
    full: str | None = None
    code: bool = False
    numeric: bool = False
    key: str | None = None
    share: float | None = None


@dataclass(frozen=True)
class Heading:
    level: int
    text: str
    anchor: str


@dataclass(frozen=True)
class Paragraph:
    parts: tuple[Inline, ...]
    note: bool = False


@dataclass(frozen=True)
class BulletList:
    items: tuple[tuple[Inline, ...], ...]


@dataclass(frozen=True)
class Table:
    headers: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]


@dataclass(frozen=True)
class Figures:
    """Headline numbers: (label, value, detail)."""

    items: tuple[tuple[str, str, str], ...]


@dataclass(frozen=True, eq=False)
class Chart:
    """A slot for a chart of `rank` (None: all ranks of the report). Kinds: `ranks`, `regimes`,
    `timeline`, `causes`, `latency`, `steps`, `roofline`, and the job's `job-heatmap`,
    `job-timeline`, `job-collectives` (renderers.html: `JOB_CHARTS`); `charted-ranks` is only a note (`omitted`)
    saying which ranks' charts a job draws. Formats without charts (Markdown) skip every chart."""

    kind: str
    rank: Any = None  # a report.model.RankReport (not imported: the blocks sit below the report model)
    omitted: str = ""  # when set, the chart is not drawn and this says why (a rank past `Report.charted_ranks`)


@dataclass(frozen=True, eq=False)
class Group:
    """One rank of a multi-rank report: collapsible, summarised by `summary`."""

    anchor: str
    summary: tuple[Inline, ...]
    blocks: tuple["Block", ...]


Block = Union[Heading, Paragraph, BulletList, Table, Figures, Chart, Group]
