"""Polars' own JSON reader against the compiled scanner, on the chunker's `[event, ...]` slices.

For each trace, every chunk the streaming reader cuts (`chrome.EventChunks`, 16 MB) is parsed
(a) by `_native.scan` (the scanner: top-level fields and the `args` keys of `fields.ARG_FIELDS`
into typed columns) and (b) by `pl.read_json` with an explicit schema of the same fields
(`args` as a struct of the keys the tables read, values as strings where a trace may write an
int or a string). Times are over the chunks polars parses (the others it refuses: a value
of another type than the schema's); parse only: neither includes routing events to tables. Best of `--repeat` runs,
one thread each (POLARS_MAX_THREADS=1 is set before polars loads), the chunks in memory.

    python scripts/bench_polars_json.py TRACE [TRACE ...] [--repeat 3]
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("POLARS_MAX_THREADS", "1")

import polars as pl  # noqa: E402

from traceanalyze import fields  # noqa: E402
from traceanalyze.load import columnar  # noqa: E402
from traceanalyze.load.chrome import EventChunks  # noqa: E402
from traceanalyze.native import compiled  # noqa: E402

# what a trace may write for each field; a wider type where it writes several (int or str ids)
_ARG_TYPES = {fields.INT: pl.Int64, fields.FLOAT: pl.Float64, fields.STRING: pl.String,
              fields.INTS3: pl.List(pl.Int64), fields.TEXT: pl.String}
SCHEMA = pl.Schema({
    "ph": pl.String, "cat": pl.String, "name": pl.String, "pid": pl.String, "tid": pl.String,
    "ts": pl.Float64, "dur": pl.Float64, "id": pl.String,
    "args": pl.Struct({f.key: _ARG_TYPES[f.kind] for f in fields.ARG_FIELDS}),
})


def chunks(path: Path) -> list[bytes]:
    return [b"".join((b"[", *parts, b"]")) for parts in EventChunks(path).pieces()]


def best(run, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("traces", nargs="+", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    native = compiled()
    if native is None:
        sys.exit("the compiled scanner is not built")
    print("| trace | MB parsed by both | scanner s | polars read_json s | polars / scanner | polars refused |")
    print("|---|---:|---:|---:|---:|---:|")
    for path in options.traces:
        texts = chunks(path)
        accepted = []
        for text in texts:  # chunks polars parses with this schema (it refuses a value of another type)
            try:
                pl.read_json(io.BytesIO(text), schema=SCHEMA)
                accepted.append(text)
            except pl.exceptions.PolarsError:
                pass
        size = sum(map(len, accepted)) / 1e6
        if not accepted:
            print(f"| {path.name} | 0 | - | - | - | {len(texts)}/{len(texts)} |")
            continue
        scanner = best(lambda: [native.scan(t, columnar.ARG_KEYS) for t in accepted], options.repeat)
        reader = best(lambda: [pl.read_json(io.BytesIO(t), schema=SCHEMA) for t in accepted], options.repeat)
        print(f"| {path.name} | {size:.1f} | {scanner:.3f} | {reader:.3f} | {reader / scanner:.1f}x "
              f"| {len(texts) - len(accepted)}/{len(texts)} |")

if __name__ == "__main__":
    main()
