"""Progress bars (rich, on stderr) while trace files load: one bar per file, filled as its bytes
are read. Only used when stderr is a terminal (see `load_trace`)."""

from __future__ import annotations

from pathlib import Path

from traceanalyze.load.files import load_file
from traceanalyze.load.limits import LoadLimits
from traceanalyze.model import Trace


def load_with_progress(files: list[Path], *, include_python: bool, workers: int, include_flows: bool = False,
                       limits: LoadLimits = LoadLimits()) -> list[Trace]:
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as bars:
        tasks = [bars.add_task(f"loading {f.name}", total=f.stat().st_size) for f in files]

        def update(index: int, done: int, total: int) -> None:
            bars.update(tasks[index], completed=done, total=total)

        if workers > 1:
            from traceanalyze.load.parallel import load_parallel

            return load_parallel(files, include_python=include_python, include_flows=include_flows, workers=workers,
                                 on_progress=update, limits=limits)
        return [
            load_file(f, include_python=include_python, include_flows=include_flows,
                      progress=lambda done, total, i=i: update(i, done, total), limits=limits)
            for i, f in enumerate(files)
        ]
