"""Collectives across ranks: which kernels are the same collective, who arrived last, how long
the others waited for it, and how fast the data moved once everyone was there.

Two halves, so that a folder of ranks never needs every rank's raw tables at once:

- `rank_collectives(trace)` (one rank, in a worker): its communication kernels, numbered per
  process group in launch order (`seq`), with the message size from the kernel's arguments.
- `match_collectives(per_rank, offsets)` (the reduce): the k-th collective of a process group on
  each of its ranks is the same collective (NCCL requires every rank of a group to issue them in
  the same order). Per matched collective and rank: arrival (kernel start, on the aligned clock),
  the last arrival, the wait (arrival → last arrival: time lost to the last rank), the transfer
  (last arrival → end), message size, algorithm and bus bandwidth.

When the ranks of a group hold different numbers of collectives (a rank's trace cut short, a
collective missing), the first `min` of them are matched and the rest are left unmatched (counted
in `unmatched_collectives`): matching beyond the shortest rank could pair different collectives.

Definitions in docs/metrics.md ("Collectives"); bus bandwidth factors from nccl-tests'
PERFORMANCE.md.
"""

from __future__ import annotations

import polars as pl
import polars.selectors as cs

from traceanalyze.analysis.intervals import covered_in_windows
from traceanalyze.model import Trace

DEFAULT_GROUP = "default"  # process group of kernels that do not name one (older traces)

# nccl-tests (doc/PERFORMANCE.md): busbw = algbw * factor(n)
BUS_FACTORS = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "all_to_all": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
    "send_recv": lambda n: 1.0,  # point to point: the bus bandwidth is the algorithm bandwidth
}

# bytes per element of the `dtype` argument PyTorch records (c10 ScalarType names)
DTYPE_BYTES = {
    "Float": 4, "Double": 8, "Half": 2, "BFloat16": 2, "Long": 8, "Int": 4, "Short": 2, "Char": 1, "Byte": 1,
    "Bool": 1, "Float8_e4m3fn": 1, "Float8_e5m2": 1, "Float8_e4m3fnuz": 1, "Float8_e5m2fnuz": 1,
    "ComplexFloat": 8, "ComplexDouble": 16, "UInt16": 2, "UInt32": 4, "UInt64": 8,
}

RANK_COLLECTIVE_SCHEMA = pl.Schema(
    {
        "rank": pl.Int32,
        "process_group": pl.String,
        "seq": pl.Int64,
        "collective": pl.String,
        "name": pl.String,
        "algorithm": pl.String,
        "protocol": pl.String,
        "dtype": pl.String,
        "message_bytes": pl.Int64,
        "stream": pl.Int64,
        "start_ns": pl.Int64,
        "end_ns": pl.Int64,
        "duration_ns": pl.Int64,
        "overlapped_ns": pl.Int64,
    }
)


def collective_kind(text: str | None) -> str:
    """`all_reduce`, `all_gather`, `reduce_scatter`, `all_to_all`, `broadcast`, `reduce`,
    `send_recv`, `barrier` or `other`, from the `Collective name` argument or the kernel name."""
    if not text:
        return "other"
    key = "".join(c for c in text.lower() if c.isalnum())
    for part, kind in (("allreduce", "all_reduce"), ("reducescatter", "reduce_scatter"), ("allgather", "all_gather"),
                       ("alltoall", "all_to_all"), ("broadcast", "broadcast"), ("sendrecv", "send_recv"),
                       ("barrier", "barrier"), ("reduce", "reduce"), ("send", "send_recv"), ("recv", "send_recv")):
        if part in key:
            return kind
    return "other"


def _name_part(name: pl.Expr, choices: tuple[str, ...]) -> pl.Expr:
    """The first of `choices` that appears as an `_X_` part of an NCCL kernel name, else null."""
    expr = pl.lit(None, dtype=pl.String)
    for choice in reversed(choices):
        expr = pl.when(name.str.contains(f"_{choice}(_|\\(|$)")).then(pl.lit(choice)).otherwise(expr)
    return expr


def rank_collectives(trace: Trace) -> pl.DataFrame:
    """Each rank's communication kernels, ordered by start, numbered per rank and process group
    (`seq`, from 0) → `RANK_COLLECTIVE_SCHEMA`. `message_bytes` is the larger of the input and output
    element counts times the element size (nccl-tests' S: the whole array), null when the trace
    does not record them (older traces). `overlapped_ns`: how long a compute kernel (kind
    `kernel`) ran on the same device during the collective (`overlap` defines it per rank)."""
    comm = trace.gpu.filter(pl.col("kind") == "communication").with_columns(cs.categorical().cast(pl.String))
    # the collective's arguments, where the loader keeps them (msg_nelems, dtype, process_group)
    comm = comm.with_columns(pl.lit(None, dtype=dtype).alias(name) for name, dtype in
                             (("in_msg_nelems", pl.Int64), ("out_msg_nelems", pl.Int64), ("dtype", pl.String),
                              ("process_group", pl.String))
                             if name not in comm.columns)
    if comm.is_empty():
        return pl.DataFrame(schema=RANK_COLLECTIVE_SCHEMA)
    kinds = {n: collective_kind(n) for n in comm["collective"].drop_nulls().unique(maintain_order=True).to_list()}
    kinds.update({n: collective_kind(n) for n in comm["name"].unique(maintain_order=True).to_list()})
    element = pl.col("dtype").replace_strict(DTYPE_BYTES, default=None, return_dtype=pl.Int64)
    frame = (
        comm.sort("rank", "start_ns", "end_ns")
        .with_columns(
            pl.col("process_group").fill_null(DEFAULT_GROUP),
            pl.coalesce(
                pl.col("collective").replace_strict(kinds, default=None, return_dtype=pl.String),
                pl.col("name").replace_strict(kinds, default="other", return_dtype=pl.String),
            ).alias("collective"),
            _name_part(pl.col("name"), ("RING", "TREE", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT"))
            .alias("algorithm"),
            _name_part(pl.col("name"), ("LL128", "LL", "SIMPLE")).alias("protocol"),
            (pl.max_horizontal("in_msg_nelems", "out_msg_nelems") * element).alias("message_bytes"),
        )
        .with_columns(pl.int_range(pl.len(), dtype=pl.Int64).over("rank", "process_group").alias("seq"))
    )
    compute = (
        trace.gpu.select("rank", "device", "kind", "start_ns", "end_ns").filter(pl.col("kind") == "kernel").drop("kind")
    )
    kernels = frame.select(
        "rank", "device", pl.col("start_ns").alias("window_start_ns"), pl.col("end_ns").alias("window_end_ns")
    )
    frame = frame.with_columns(covered_in_windows(compute, kernels, ["rank", "device"]).alias("overlapped_ns"))
    return frame.select(list(RANK_COLLECTIVE_SCHEMA)).cast(RANK_COLLECTIVE_SCHEMA)  # type: ignore[arg-type]


def group_counts(per_rank: pl.DataFrame) -> pl.DataFrame:
    """Collectives per process group and rank, and how many of them can be matched (the fewest
    any rank of the group holds) → `process_group, rank, count, matched, unmatched`."""
    counts = per_rank.group_by("process_group", "rank").agg(pl.len().cast(pl.Int64).alias("count"))
    return (
        counts.with_columns(pl.col("count").min().over("process_group").alias("matched"))
        .with_columns((pl.col("count") - pl.col("matched")).alias("unmatched"))
        .sort("process_group", "rank")
    )


MATCHED_SCHEMA = pl.Schema({
    "process_group": pl.String, "seq": pl.Int64, "rank": pl.Int32, "collective": pl.String, "algorithm": pl.String,
    "protocol": pl.String, "ranks": pl.Int64, "message_bytes": pl.Int64, "arrival_ns": pl.Int64, "end_ns": pl.Int64,
    "duration_ns": pl.Int64, "last_arrival_ns": pl.Int64, "last_rank": pl.Int32, "wait_ns": pl.Int64,
    "transfer_ns": pl.Int64, "overlapped_ns": pl.Int64, "consistent": pl.Boolean,
})


def match_collectives(per_rank: pl.DataFrame, offsets: pl.DataFrame | None = None) -> pl.DataFrame:
    """Every rank's row of every matched collective → `MATCHED_SCHEMA`.

    `per_rank`: `rank_collectives` of every rank, concatenated. `offsets`: `rank, offset_ns`
    (`clocks.clock_offsets`), subtracted from each rank's times; none: the clocks are taken as
    they are. Only groups seen on two ranks or more are matched. `wait_ns` = min(last arrival,
    own end) − arrival; `transfer_ns` = own end − last arrival, at least 0; `consistent` is False
    when the ranks disagree on the collective's kind (the order differs: the match is suspect).
    """
    if per_rank.is_empty():
        return pl.DataFrame(schema=MATCHED_SCHEMA)
    frame = per_rank
    if offsets is not None and not offsets.is_empty():
        frame = frame.join(offsets.select("rank", "offset_ns"), on="rank", how="left").with_columns(
            (pl.col("start_ns") - pl.col("offset_ns").fill_null(0)).alias("start_ns"),
            (pl.col("end_ns") - pl.col("offset_ns").fill_null(0)).alias("end_ns"),
        )
    counts = group_counts(per_rank).filter(pl.col("rank").n_unique().over("process_group") >= 2)
    limits = counts.select("process_group", "matched").unique()
    frame = frame.join(limits, on="process_group", how="inner").filter(pl.col("seq") < pl.col("matched"))
    by = ["process_group", "seq"]
    arrival = pl.col("start_ns")
    matched = (
        frame.sort("process_group", "seq", "start_ns", "rank")
        .with_columns(
            arrival.max().over(by).alias("last_arrival_ns"),
            pl.len().over(by).cast(pl.Int64).alias("ranks"),
            (pl.col("collective").n_unique().over(by) == 1).alias("consistent"),
            pl.col("message_bytes").max().over(by).alias("message_bytes"),
        )
        .with_columns(
            (pl.min_horizontal("last_arrival_ns", "end_ns") - arrival).clip(lower_bound=0).alias("wait_ns"),
            (pl.col("end_ns") - pl.col("last_arrival_ns")).clip(lower_bound=0).alias("transfer_ns"),
            arrival.alias("arrival_ns"),
        )
    )
    # the last arriver's rank: the latest start; on equal starts, the lowest rank (stable)
    last = (
        matched.sort("start_ns", "rank", descending=[True, False]).group_by(by, maintain_order=True)
        .agg(pl.col("rank").first().alias("last_rank"))
    )
    matched = matched.join(last, on=by, how="left")
    ordered = matched.select(list(MATCHED_SCHEMA)).cast(MATCHED_SCHEMA)  # type: ignore[arg-type]
    return ordered.sort("process_group", "seq", "rank")


def collective_summary(matched: pl.DataFrame, link_bytes_per_s: float | None = None) -> pl.DataFrame:
    """One row per matched collective → `process_group, seq, collective, algorithm, protocol,
    ranks, message_bytes, first_arrival_ns, last_arrival_ns, last_rank, end_ns, wait_ns (summed
    over ranks), max_wait_ns, transfer_ns, algbw_bytes_per_s, busbw_bytes_per_s,
    link_peak_bytes_per_s, link_fraction, consistent`.

    `transfer_ns` is the duration of the last arriver's kernel (it waited for no one: all of its
    time is the transfer; no clock alignment enters). algbw = message_bytes / transfer_ns;
    busbw = algbw × the nccl-tests factor of the collective for its number of ranks;
    link_fraction = busbw / the link's peak (`link_bytes_per_s`, per direction)."""
    schema = {
        "process_group": pl.String, "seq": pl.Int64, "collective": pl.String, "algorithm": pl.String,
        "protocol": pl.String, "ranks": pl.Int64, "message_bytes": pl.Int64, "first_arrival_ns": pl.Int64,
        "last_arrival_ns": pl.Int64, "last_rank": pl.Int32, "end_ns": pl.Int64, "wait_ns": pl.Int64,
        "max_wait_ns": pl.Int64, "transfer_ns": pl.Int64, "algbw_bytes_per_s": pl.Float64,
        "busbw_bytes_per_s": pl.Float64, "link_peak_bytes_per_s": pl.Float64, "link_fraction": pl.Float64,
        "consistent": pl.Boolean,
    }
    if matched.is_empty():
        return pl.DataFrame(schema=schema)
    by = ["process_group", "seq"]
    rows = matched.group_by(by).agg(
        pl.col("collective").first(), pl.col("algorithm").first(), pl.col("protocol").first(),
        pl.col("ranks").first(), pl.col("message_bytes").first(),
        pl.col("arrival_ns").min().alias("first_arrival_ns"), pl.col("last_arrival_ns").first(),
        pl.col("last_rank").first(), pl.col("end_ns").max(), pl.col("wait_ns").sum(),
        pl.col("wait_ns").max().alias("max_wait_ns"),
        pl.col("duration_ns").filter(pl.col("rank") == pl.col("last_rank")).first().alias("transfer_ns"),
        pl.col("consistent").first(),
    )
    factor = pl.struct("collective", "ranks").map_elements(
        lambda row: BUS_FACTORS[row["collective"]](row["ranks"]) if row["collective"] in BUS_FACTORS else None,
        return_dtype=pl.Float64)
    algbw = pl.when(pl.col("transfer_ns") > 0).then(pl.col("message_bytes") / (pl.col("transfer_ns") / 1e9))
    return (
        rows.with_columns(algbw.alias("algbw_bytes_per_s"), factor.alias("_factor"))
        .with_columns(
            (pl.col("algbw_bytes_per_s") * pl.col("_factor")).alias("busbw_bytes_per_s"),
            pl.lit(link_bytes_per_s, dtype=pl.Float64).alias("link_peak_bytes_per_s"),
        )
        .with_columns((pl.col("busbw_bytes_per_s") / pl.col("link_peak_bytes_per_s")).alias("link_fraction"))
        .select(list(schema)).cast(schema)  # type: ignore[arg-type]
        .sort(by)
    )


def waits_caused(matched: pl.DataFrame) -> pl.DataFrame:
    """Per rank, the collective wait it caused others (summed over the collectives it arrived
    last at) → `rank, caused_wait_ns, collectives_last`."""
    return (
        matched.filter(pl.col("rank") != pl.col("last_rank"))
        .group_by(pl.col("last_rank").alias("rank"))
        .agg(pl.col("wait_ns").sum().alias("caused_wait_ns"),
             pl.struct("process_group", "seq").n_unique().cast(pl.Int64).alias("collectives_last"))
        .sort("rank")
    )
