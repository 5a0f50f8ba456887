"""How to run an analysis, apart from what it computes: where a folder's rank files are analysed
(`executor`, `workers`, `executor_address`), the cache, the loader's limits, how much of each
rank a folder's reduce keeps (`rank_frames`), and what a folder that is not one clean job gets
(`force_job`, `skip_bad_ranks`). None of it changes a number of a rank's report."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from traceanalyze.cache_files import CacheSetting
from traceanalyze.load.limits import LoadLimits


@dataclass(frozen=True)
class RunOptions:
    """How `traceanalyze.analyze` runs.

    Attributes
    ----------
    executor : "local", "ray" or "dask"
        Who analyses the rank files of a folder: local processes, Ray tasks or Dask futures.
    workers : int or None
        How many of them (None: one per core for a large folder).
    executor_address : str or None
        The cluster (`ray://head:10001`, `tcp://scheduler:8786`); None starts one here.
    cache : bool or path
        The cache of loaded traces and analysed ranks: True the default folder, a path that
        folder, False none (docs/cache.md).
    limits : LoadLimits
        What loading a file may read and hold (docs/limits.md).
    rank_frames : "full", "bounded" or "text"
        A folder's ranks: "full" keeps every per-op frame (`.roofline`, every gap, every launch);
        "bounded" keeps what the reports show, so the reduce's memory does not grow with the
        ranks' sizes (what `traceanalyze report --format html` uses); "text" the same without what
        the HTML charts draw (each worker spares computing it: the terminal, Markdown and JSON
        reports, `gate` and `diff`; `render_html` refuses such a report).
    force_job : bool
        Report a folder whose ranks do not look like one job (docs/limits.md) anyway, with a note,
        instead of refusing it.
    skip_bad_ranks : bool
        Report the readable ranks of a folder, naming the unreadable ones, instead of failing.
    """

    executor: str = "local"
    workers: int | None = None
    executor_address: str | None = None
    cache: CacheSetting = True
    limits: LoadLimits = field(default_factory=LoadLimits)
    rank_frames: Literal["full", "bounded", "text"] = "full"
    force_job: bool = False
    skip_bad_ranks: bool = False
