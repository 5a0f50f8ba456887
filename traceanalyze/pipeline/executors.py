"""Who runs the map of a folder: `local` (spawned processes here), `ray` (Ray tasks) or `dask`
(Dask futures). Each hands its workers the rank files in batches (`analyse_batch`:
`mapreduce.analyse_files`, the small ranks of a batch analysed together), gathers the small
`RankReport`s in file order, and the parent reduces them (`mapreduce.reduce_ranks`).

On a cluster the workers read the paths themselves: give paths every worker sees (a shared
filesystem) or URLs (`s3://…`, `gs://…`: fsspec, with the matching filesystem package installed
on the workers). `address` names the cluster: `ray://head:10001` (or `auto`) for Ray,
`tcp://scheduler:8786` for Dask; none starts a local one on this machine. An executor that fails
(a worker killed, a cluster unreachable) is one error line naming it (`failures.guarded`).
"""

from __future__ import annotations

import dataclasses

import os
from collections.abc import Callable
from pathlib import Path

from traceanalyze.errors import ConfigError, TraceFormatError
from traceanalyze.pipeline.failures import USERINFO, guarded, without_credentials
from traceanalyze.pipeline.mapreduce import analyse_file, analyse_file_or_skip, analyse_files, reduce_ranks
from traceanalyze.pipeline.urls import SourceUrl
from traceanalyze.cache_files import CacheSetting
from traceanalyze.load.chunk_workers import main_script_hidden
from traceanalyze.load.limits import LoadLimits
from traceanalyze.report.model import RankReport, Report, ReportOptions

# (paths, options, workers, address, limits, cache, task=None): `task` maps one rank file (default
# `mapreduce.analyse_file`; `mapreduce.analyse_file_or_skip` under --skip-bad-ranks)
Executor = Callable[..., list[RankReport]]


def run_local(paths: list[str], options: ReportOptions, workers: int | None = None,
              address: str | None = None, limits: LoadLimits = LoadLimits(),
              cache: CacheSetting = False, task: Callable | None = None) -> list[RankReport]:
    """One spawned process per core (or `workers`), one rank file at a time each; one worker:
    every rank in this process, one after another (the parent then holds one rank's tables at a
    time)."""
    if address is not None:
        raise ConfigError("--executor-address is for ray and dask; the local executor runs on this machine")
    count = max(1, min(len(paths), workers if workers is not None else (os.cpu_count() or 1)))
    task = task or analyse_file  # resolved here: the worker runs what this module names now
    if count == 1:
        return analyse_batch(paths, options, limits, cache, task, pickled=False)
    from traceanalyze.load.chunk_workers import spawn_pool

    # the processes fill the cores: each one's polars threads share what is left (one each when a
    # process runs on every core), unless the environment names a number
    threads = None if "POLARS_MAX_THREADS" in os.environ else max(1, (os.cpu_count() or 1) // count)
    with spawn_pool(count, polars_threads=threads) as pool:
        futures = [pool.submit(analyse_batch, batch, options, limits, cache, task)
                   for batch in in_batches(paths, count)]
        return [report for f in futures for report in f.result()]


BATCHES_PER_WORKER = 4  # tasks per local worker: enough to balance ranks of unequal size, few enough to pay


def batch_size(ranks: int, workers: int) -> int:
    """Rank files per task of the local executor: many tiny ranks go in batches (one task, one
    round trip to the worker each), so a worker's fixed cost per task is paid per batch.

    >>> batch_size(1000, 2), batch_size(8, 2), batch_size(3, 4)
    (125, 1, 1)
    """
    return max(1, ranks // (workers * BATCHES_PER_WORKER))


def in_batches(paths: list[str], workers: int) -> list[list[str]]:
    """`paths` cut into the tasks of `workers` workers (`batch_size` files each), in order."""
    size = batch_size(len(paths), max(1, workers))
    return [paths[start:start + size] for start in range(0, len(paths), size)]


def analyse_batch(paths: list[str], options: ReportOptions, limits: LoadLimits, cache: CacheSetting,
                  task: Callable | None, *, pickled: bool = True) -> list[RankReport]:
    """`task` (default `mapreduce.analyse_file`) of each of `paths`, in order, in one worker task
    (whose results are pickled back to the parent): small ranks analysed together
    (`mapreduce.analyse_files`)."""
    if task in (None, analyse_file, analyse_file_or_skip):
        return analyse_files(paths, options, limits, cache, pickled=pickled,  # type: ignore[return-value]
                             skip_bad=task is analyse_file_or_skip)
    return [task(p, options, limits, cache, pickled=pickled) for p in paths]


def run_ray(paths: list[str], options: ReportOptions, workers: int | None = None,
            address: str | None = None, limits: LoadLimits = LoadLimits(),
            cache: CacheSetting = False, task: Callable | None = None) -> list[RankReport]:
    """Ray tasks, each a batch of rank files (`analyse_batch`: its small ranks analysed together),
    `BATCHES_PER_WORKER` per CPU of the cluster at `address` (or of a local Ray started with
    `workers` CPUs). Ray stays up afterwards if it was already initialised by the caller."""
    try:
        import ray
    except ImportError as exc:
        raise ConfigError("--executor ray needs Ray: pip install 'traceanalyze[ray]'") from exc
    started = False
    if not ray.is_initialized():
        ray.init(address=address, num_cpus=workers if address is None else None, include_dashboard=False,
                 log_to_driver=False, configure_logging=False)
        started = True
    try:
        remote = ray.remote(analyse_batch)
        slots = int(ray.cluster_resources().get("CPU", 1))
        refs = [remote.remote(batch, options, limits, cache, task) for batch in in_batches(paths, slots)]
        return [report for ref in refs for report in _unwrap_ray(ray, ref)]
    finally:
        if started:
            ray.shutdown()


def _unwrap_ray(ray, ref) -> list[RankReport]:
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as error:  # our own errors (bad input) keep their type and message
        cause = getattr(error, "cause", None)
        if isinstance(cause, Exception):
            raise cause from None
        raise


def run_dask(paths: list[str], options: ReportOptions, workers: int | None = None,
             address: str | None = None, limits: LoadLimits = LoadLimits(),
             cache: CacheSetting = False, task: Callable | None = None) -> list[RankReport]:
    """Dask futures, each a batch of rank files (`analyse_batch`), `BATCHES_PER_WORKER` per worker
    thread of the scheduler at `address` (or of a `LocalCluster` of `workers` single-threaded
    worker processes)."""
    try:
        from distributed import Client, LocalCluster
    except ImportError as exc:
        raise ConfigError("--executor dask needs Dask: pip install 'traceanalyze[dask]'") from exc
    if address is not None:
        with Client(address, timeout=DASK_CONNECT_SECONDS) as client:
            return _dask_map(client, paths, options, limits, cache, task)
    count = max(1, min(len(paths), workers if workers is not None else (os.cpu_count() or 1)))
    with main_script_hidden():  # the Dask workers spawned now import only modules
        cluster = LocalCluster(n_workers=count, threads_per_worker=1, processes=True, dashboard_address=None)
    with cluster, Client(cluster) as client:
        return _dask_map(client, paths, options, limits, cache, task)


def _dask_map(client, paths: list[str], options: ReportOptions, limits: LoadLimits, cache: CacheSetting,
              task: Callable | None) -> list[RankReport]:
    """`analyse_batch` of each batch of `paths` on `client`'s workers, results in file order."""
    slots = sum(client.nthreads().values()) or 1
    futures = client.map(analyse_batch, in_batches(paths, slots), options=options, limits=limits, cache=cache,
                         task=task, pure=False)
    return [report for batch in client.gather(futures) for report in batch]


DASK_CONNECT_SECONDS = 10  # how long a Dask scheduler at --executor-address may take to answer

EXECUTORS: dict[str, Executor] = {"local": run_local, "ray": run_ray, "dask": run_dask}


def analyse_folder(folder: str | Path, options: ReportOptions, *, executor: str = "local",
                   workers: int | None = None, address: str | None = None,
                   limits: LoadLimits = LoadLimits(), cache: CacheSetting = False, force_job: bool = False,
                   skip_bad_ranks: bool = False) -> Report:
    """A folder of rank traces → the `Report`: the map on `executor`, the reduce here. `folder`
    is a local path, or an fsspec URL of a folder (`s3://bucket/job42/`, `gs://…`,
    `file:///shared/job42`): listed here, each file read by the worker that analyses it. Each
    worker reads and writes the cache of loaded traces (`load.cache`, the folder `cache` names
    where it runs; local paths only). Files that are not one job are refused (`identity.NotOneJob`)
    unless `force_job`. With `skip_bad_ranks`, a rank file that cannot be read is left out and
    named, with its error, on every remaining rank (`mapreduce.analyse_file_or_skip`)."""
    if executor not in EXECUTORS:
        raise ConfigError(f"--executor must be one of {', '.join(EXECUTORS)}, not {executor!r}")
    task = analyse_file_or_skip if skip_bad_ranks else None
    if is_url(str(folder)):
        paths = url_files(str(folder))
        names = [p.rstrip("/").rsplit("/", 1)[-1] for p in paths]
        if executor == "local" and workers is None:
            workers = 1 if len(paths) < 2 else min(len(paths), os.cpu_count() or 1)
        chosen = per_worker(options, executor, workers, len(paths))
        results = guarded(executor, address,
                          lambda: EXECUTORS[executor](paths, chosen, workers, address, limits, cache, task=task))
        return reduce_ranks(results, names, options, SourceUrl(str(folder)),  # type: ignore[arg-type]
                            force_job=force_job)
    from traceanalyze.load import trace_files

    folder = Path(folder)
    files = trace_files(folder)
    if not files:
        raise TraceFormatError(f"{folder}: folder holds no .json or .json.gz trace files")
    paths = [str(f) for f in files]
    if executor == "local" and workers is None:
        workers = _local_workers(files)
    chosen = per_worker(options, executor, workers, len(paths))
    results = guarded(executor, address,
                      lambda: EXECUTORS[executor](paths, chosen, workers, address, limits, cache, task=task))
    return reduce_ranks(results, [f.name for f in files], options, folder, force_job=force_job)


def per_worker(options: ReportOptions, executor: str, workers: int | None, ranks: int) -> ReportOptions:
    """The options each worker analyses its rank with: ranks analysed side by side (several local
    processes, or a Ray or Dask cluster) already use the cores, so each worker runs its analyses
    in one thread (`ReportOptions.analysis_threads`), unless the options name a number."""
    side_by_side = ranks > 1 and (executor != "local" or (workers or 1) > 1)
    if side_by_side and options.analysis_threads == 0:
        return dataclasses.replace(options, analysis_threads=1)
    return options


def is_url(text: str) -> bool:
    """Whether `text` names a file or folder by URL (`scheme://…`) rather than a local path."""
    scheme, sep, _ = text.partition("://")
    return bool(sep) and scheme.isidentifier()


def url_files(url: str) -> list[str]:
    """The trace files (`.json`, `.json.gz`) directly inside the folder at `url`, as URLs in name
    order; a URL naming one trace file is a folder of that one file (fsspec lists them)."""
    from traceanalyze.load import TRACE_SUFFIXES

    shown = without_credentials(url)  # no error shows the URL's user:password@
    try:
        import fsspec
    except ImportError as exc:
        raise ConfigError(f"{shown}: reading a URL needs fsspec (pip install 'traceanalyze[dask]' or '[ray]')") from exc
    try:
        fs, root = fsspec.core.url_to_fs(url)
        if url.lower().endswith(TRACE_SUFFIXES) and fs.isfile(root):
            return [url]
        listed = fs.ls(root, detail=True)
    except (ImportError, ValueError) as exc:  # no filesystem for the scheme (s3fs, gcsfs, … not installed)
        raise ConfigError(f"{shown}: {without_credentials(str(exc))}") from None
    except OSError as exc:
        raise TraceFormatError(f"{shown}: cannot list it: {without_credentials(str(exc))}") from None
    files = sorted(entry["name"] for entry in listed
                   if entry.get("type") == "file" and entry["name"].lower().endswith(TRACE_SUFFIXES))
    if not files:
        raise TraceFormatError(f"{shown}: folder holds no .json or .json.gz trace files")
    return [_url_of(url, fs.unstrip_protocol(name)) for name in files]


def _url_of(folder_url: str, listed: str) -> str:
    """A listed file's URL with the folder URL's credentials kept (the worker that reads it needs
    them; they are removed from whatever is shown)."""
    found = USERINFO.match(folder_url)
    if found is None or "://" not in listed:
        return listed
    scheme, rest = listed.split("://", 1)
    if "@" in rest.split("/", 1)[0]:
        return listed
    return f"{scheme}://{found.group('userinfo')}{rest}"


# A rank costs about a quarter of a second whatever its size (hundreds of small table operations:
# 0.31 s for a 12 KB rank on 2 busy cores); a spawned worker about 2 s to start (its imports). From
# this many ranks, workers on every core pay, however small the files.
MANY_RANKS = 32


def _local_workers(files: list[Path]) -> int:
    """One per core when the folder is large enough for processes to pay (`load.PARALLEL_MIN_BYTES`,
    about, uncompressed), or holds `MANY_RANKS` files or more (each rank's fixed cost), else 1: every
    rank here, one at a time."""
    from traceanalyze.load import PARALLEL_MIN_BYTES

    if len(files) < 2:
        return 1
    size = sum(f.stat().st_size * (10 if f.name.lower().endswith(".gz") else 1) for f in files)
    return 1 if size < PARALLEL_MIN_BYTES and len(files) < MANY_RANKS else min(len(files), os.cpu_count() or 1)


