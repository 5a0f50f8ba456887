"""A folder of rank traces as a map and a reduce, on one machine or a cluster.

- map (`mapreduce.analyse_file`): one rank file → its `RankReport` (every per-rank analysis and
  the small tables the job-level analyses need). Runs in a worker; the rank's raw tables never
  leave it.
- reduce (`mapreduce.reduce_ranks`): the `RankReport`s → the `Report` (rank numbers settled,
  pooled tables, `analysis.job.job_analysis`). Runs in the parent, on small tables only.

`executors.EXECUTORS` runs the map: `local` (spawned processes on this machine), `ray` (Ray
tasks), `dask` (Dask futures). The same two functions everywhere; no scheduler of our own.
"""

from traceanalyze.pipeline.executors import EXECUTORS, analyse_folder

__all__ = ["EXECUTORS", "analyse_folder"]
