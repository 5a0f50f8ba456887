"""Benchmark: traceanalyze against HolisticTraceAnalysis (HTA) and the bare decode floor.

For each input trace (the real ones in ../shared/traces, and generated ones of the sizes asked
for), each contender runs in its own process, timed from the outside (wall clock, Python start-up
included) while a sampler follows its memory:

- `traceanalyze`: `python -m traceanalyze report --format json` (output discarded);
- `hta`: HTA 0.5.0 doing less work: `TraceAnalysis` load, then `get_temporal_breakdown`,
  `get_idle_time_breakdown`, `get_cuda_kernel_launch_stats`, `get_queue_length_summary` and
  `get_gpu_kernel_breakdown` (skipped above `--hta-max`: a gigabyte takes it minutes);
- `floor`: the least any loader must do: gunzip the file and decode `traceEvents` with msgspec into
  typed structs (`ph, cat, name, pid, tid, ts, dur, id` typed, `args` kept raw), nothing else.

Memory is the peak, over the run, of the summed proportional set size (PSS: shared pages split
between the processes sharing them) of the process and all its children, sampled every 50 ms
from /proc/PID/smaps_rollup (RSS where that cannot be read). It prints a table of absolute figures
and the ratios the targets are stated in; `--json FILE` also writes every measurement.

    python scripts/bench.py                              # real traces + 100M and 1G generated
    python scripts/bench.py --sizes 100M --hta-max 200M  # quicker
    python scripts/bench.py --no-real --sizes 1G --repeat 3
    python scripts/bench.py --sizes 100M,1G --hta-max 2G --repeat-ours 3   # what docs/performance.md shows
    python scripts/bench.py --ranks 4,8,16 --rank-size 20M   # memory of a folder as the ranks grow
    python scripts/bench.py --ranks 4,16,64 --rank-size 20M --rank-format html   # the same, HTML
    python scripts/bench.py --no-real --sizes 1G --families a100-nccl   # one family
    python scripts/bench.py --no-real --sizes 1G --no-hta --commands report-html,annotate   # the other commands

Every generated trace also gets one in-process run of scripts/bench_stages.py: where the time goes
(load, each analysis, render), printed after the table.

Generated traces go to --work (default /tmp/traceanalyze-bench), never into the repository.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED_TRACES = REPO.parent / "shared" / "traces"
DEFAULT_BASE = SHARED_TRACES / "hta_a100_80gb_record_shapes_cudagraph.json.gz"
# the families of generated traces: real traces of different shapes, each replicated to the asked
# sizes (a speed measured on one shape says little about another)
FAMILIES = {
    "a100-cudagraph": DEFAULT_BASE,  # CUDA-graph replays, recorded shapes, few streams
    "a100-nccl": SHARED_TRACES / "hta_a100_nccl_rank0.json.gz",  # multi-stream training, NCCL kernels, idle gaps
    "b200-vllm-decode": SHARED_TRACES / "tracelens_b200_vllm_decode_tp8_rank0.json.gz",  # inference, many small kernels
    # three more shapes, beyond the three the targets name
    # a 2021 trace: no Concrete Inputs, convolutions
    "v100-resnet50": SHARED_TRACES / "kineto_v100_resnet50_2021.json.gz",
    "v100-dlrm": SHARED_TRACES / "param_v100_dlrm_4ranks" / "rank0.json.gz",  # embeddings, autograd pairs, NCCL
    "a100-training": SHARED_TRACES / "hta_a100_large_training.json.gz",  # long training steps, recorded shapes
}
SMALL_BASE = SHARED_TRACES / "hta_a100_alexnet.json.gz"

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_big_trace import Template, _open, _read, parse_size, write_trace  # noqa: E402

HTA_SCRIPT = r"""
import logging, os, sys, tempfile, warnings
warnings.filterwarnings("ignore")
logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis
folder = tempfile.mkdtemp()
os.symlink(os.path.abspath(sys.argv[1]), os.path.join(folder, os.path.basename(sys.argv[1])))
analyzer = TraceAnalysis(trace_dir=folder)
failed = []
for name, call in [
    ("get_temporal_breakdown", lambda: analyzer.get_temporal_breakdown(visualize=False)),
    ("get_idle_time_breakdown", lambda: analyzer.get_idle_time_breakdown(visualize=False)),
    ("get_cuda_kernel_launch_stats", lambda: analyzer.get_cuda_kernel_launch_stats(visualize=False)),
    ("get_queue_length_summary", lambda: analyzer.get_queue_length_summary(ranks=list(analyzer.t.traces))),
    ("get_gpu_kernel_breakdown", lambda: analyzer.get_gpu_kernel_breakdown(visualize=False)),
]:
    try:
        call()
    except Exception as error:
        failed.append(f"{name}: {type(error).__name__}")
print("FAILED " + "; ".join(failed) if failed else "OK")
"""

# self-contained on purpose: the floor imports neither traceanalyze nor polars (its struct mirrors
# `events.FastEvent`, the least any typed loader decodes)
FLOOR_SCRIPT = r"""
import gzip, sys, msgspec
class Event(msgspec.Struct, gc=False):
    ph: str | None = None
    cat: str | None = None
    name: str | None = None
    pid: int | str | None = None
    tid: int | str | None = None
    ts: int | float | None = None
    dur: int | float | None = None
    id: int | str | None = None
    args: msgspec.Raw = msgspec.Raw()
class Document(msgspec.Struct, gc=False):
    traceEvents: list[Event] = []
raw = open(sys.argv[1], "rb").read()
if raw[:2] == b"\x1f\x8b":
    raw = gzip.decompress(raw)
print(len(msgspec.json.decode(raw, type=Document).traceEvents))
"""


@dataclass
class Run:
    seconds: float
    peak_bytes: int
    ok: bool
    note: str = ""
    # user + system time of the process tree (steadier than wall time on a shared machine)
    cpu_seconds: float | None = None


@dataclass
class Result:
    trace: str
    size_bytes: int  # uncompressed
    runs: dict[str, list[Run]] = field(default_factory=dict)

    def best(self, who: str) -> Run | None:
        runs = [r for r in self.runs.get(who, []) if r.ok]
        return min(runs, key=lambda r: r.seconds) if runs else None


def _pss(pid: int) -> int | None:
    """Proportional set size of a process (bytes), from the kernel's one-line summary."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as rollup:
            for line in rollup:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def measure(command: list[str], env: dict[str, str], timeout: float) -> Run:
    """Run `command`, timing it and sampling the memory of its process tree (every 50 ms, its
    members every 0.5 s: the sampler must not take CPU from what it measures)."""
    import psutil

    import resource

    used_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        try:
            root = psutil.Process(process.pid)
        except psutil.Error:
            return
        members: list = [root]
        ticks = 0
        while not done.is_set():
            if ticks % 10 == 0:  # finding the children scans /proc: not every tick
                try:
                    members = [root, *root.children(recursive=True)]
                except psutil.Error:
                    pass
            ticks += 1
            total = 0
            for member in members:
                pss = _pss(member.pid)
                if pss is None:
                    try:
                        pss = member.memory_info().rss
                    except psutil.Error:
                        pss = 0
                total += pss
            peak = max(peak, total)
            done.wait(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        done.set()
        return Run(time.perf_counter() - start, peak, False, f"timed out after {timeout:.0f} s")
    seconds = time.perf_counter() - start
    done.set()
    sampler.join()
    # the children waited for so far: this one's tree since `before`
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (used.ru_utime - used_before.ru_utime) + (used.ru_stime - used_before.ru_stime)
    text = out.decode(errors="replace").strip()
    if process.returncode != 0:
        return Run(seconds, peak, False, (err.decode(errors="replace").strip().splitlines() or ["failed"])[-1][:200],
                   cpu)
    note = text if text.startswith("FAILED") else ""
    return Run(seconds, peak, True, note, cpu)


def uncompressed_size(path: Path) -> int:
    if path.name.endswith(".gz"):
        import gzip

        total = 0
        with gzip.open(path, "rb") as source:
            while chunk := source.read(1 << 24):
                total += len(chunk)
        return total
    return path.stat().st_size


def generate(size: int, work: Path, base: Path, label: str) -> Path:
    path = work / f"generated_{label}_{base.name.split('.')[0]}.json.gz"
    if not path.exists():
        template = Template(_read(base))
        with _open(path, 6) as out:
            write_trace(template, out, size)
    return path


def contender_commands(trace: Path) -> dict[str, list[str]]:
    python = sys.executable
    return {
        # --no-cache: every run parses (a second run would read the cache of loaded traces, docs/cache.md)
        "traceanalyze": [python, "-m", "traceanalyze", "report", "--format", "json", "--no-cache", "-o", os.devnull,
                         str(trace)],
        "hta": [python, "-c", HTA_SCRIPT, str(trace)],
        "floor": [python, "-c", FLOOR_SCRIPT, str(trace)],
    }


def child_env(work: Path) -> dict[str, str]:
    """As installed: bytecode cached (here under --work), the repository importable."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


def fmt_time(run: Run | None) -> str:
    if run is None:
        return "—"
    return f"{run.seconds:.2f} s" if run.seconds < 100 else f"{run.seconds:.0f} s"


def fmt_cpu(run: Run | None) -> str:
    return "—" if run is None or run.cpu_seconds is None else f"{run.cpu_seconds:.2f} s"


def fmt_mem(run: Run | None) -> str:
    return "—" if run is None else f"{run.peak_bytes / 1e6:.0f} MB"


def fmt_size(n: int) -> str:
    return f"{n / 1e9:.2f} GB" if n >= 1e9 else f"{n / 1e6:.1f} MB" if n >= 1e6 else f"{n / 1e3:.0f} kB"


def table(results: list[Result]) -> str:
    header = ("trace", "size", "ours", "HTA", "floor", "HTA/ours", "ours/floor", "ours cpu", "floor cpu", "ours mem",
              "HTA mem", "mem/size")
    rows = [header]
    for r in results:
        ours, hta, floor = r.best("traceanalyze"), r.best("hta"), r.best("floor")
        speedup = f"{hta.seconds / ours.seconds:.1f}×" if ours and hta else "—"
        vs_floor = f"{ours.seconds / floor.seconds:.2f}×" if ours and floor else "—"
        mem_ratio = f"{ours.peak_bytes / r.size_bytes:.2f}" if ours and r.size_bytes else "—"
        rows.append((r.trace, fmt_size(r.size_bytes), fmt_time(ours), fmt_time(hta), fmt_time(floor), speedup,
                     vs_floor, fmt_cpu(ours), fmt_cpu(floor), fmt_mem(ours), fmt_mem(hta), mem_ratio))
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["| " + " | ".join(cell.ljust(w) for cell, w in zip(row, widths)) + " |" for row in rows]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


# the other commands `--commands` times on each generated trace (one run each, output discarded)
COMMANDS = {
    "report-json": ["report", "--format", "json"],
    "report-html": ["report", "--format", "html"],
    "report-terminal": ["report", "--format", "terminal"],
    "annotate": ["annotate"],
    "info": ["info"],
    "gate": ["gate", "--max-idle-fraction", "1", "--allow-unreliable"],  # judged even without ProfilerStep spans
}


def command_runs(generated: list[tuple[str, Path]], names: list[str], work: Path, env: dict[str, str],
                 timeout: float) -> str:
    """Each command of `names` (`COMMANDS`) on each generated trace, without the cache: wall time
    and peak PSS (and its ratio to the trace's size), as a table."""
    lines = ["| trace | command | time | peak PSS | mem/size |", "|---|---|---|---|---|"]
    for label, path in generated:
        size = uncompressed_size(path)
        for name in names:
            output = work / f"command-output{'.json.gz' if name == 'annotate' else ''}"
            sink = [] if name in ("info", "gate") else ["-o", str(output)]
            command = [sys.executable, "-m", "traceanalyze", *COMMANDS[name], "--no-cache", *sink, str(path)]
            run = measure(command, env, timeout)
            output.unlink(missing_ok=True)
            ratio = f"{run.peak_bytes / size:.2f}" if run.ok and size else "—"
            lines.append(f"| {label} | {name} | {fmt_time(run) if run.ok else 'failed'} | {fmt_mem(run)} | {ratio} |")
    return "\n".join(lines)


def stage_breakdown(trace: Path, env: dict[str, str], timeout: float) -> dict | None:
    """scripts/bench_stages.py on `trace`, in its own process: load, each analysis, render (s)."""
    command = [sys.executable, str(Path(__file__).resolve().parent / "bench_stages.py"), "--json", str(trace)]
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    return json.loads(done.stdout) if done.returncode == 0 else None


def stages_table(breakdowns: dict[str, dict | None]) -> str:
    """Per generated trace: load, analyses (and their ratio to the load: target ≤ 0.5), render,
    the analyses in one thread and those of them that took longest."""
    lines = ["| trace | load | analyses | analyses/load | render | in one thread | slowest analyses (one thread) |",
             "|---|---|---|---|---|---|---|"]
    for label, figures in breakdowns.items():
        if figures is None:
            lines.append(f"| {label} | failed | | | | | |")
            continue
        slowest = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in list(figures["each_s"].items())[:4])
        lines.append(f"| {label} | {figures['load_s']:.2f} s | {figures['analyses_s']:.2f} s | "
                     f"{figures['analyses_s'] / figures['load_s']:.2f}× | {figures['render_s']:.2f} s | "
                     f"{figures['analyses_one_thread_s']:.2f} s | {slowest} |")
    return "\n".join(lines)


ALL_AT_ONCE_SCRIPT = """
import sys, traceanalyze
from traceanalyze.renderers.formats import RENDERERS
from traceanalyze.pipeline.rank import build_report
RENDERERS[sys.argv[2]](build_report(traceanalyze.load_trace(sys.argv[1], workers=1, cache=False)))
"""
# HTML from every rank's full frames, one worker: what `report --format html` did on a folder before
# the chart inputs were bounded (`pipeline.rank.bounded`)
FULL_RANKS_HTML_SCRIPT = """
import sys, traceanalyze
from traceanalyze.renderers.html import render_html
from traceanalyze import RunOptions
render_html(traceanalyze.analyze(sys.argv[1], run=RunOptions(workers=1, cache=False, rank_frames="full")))
"""


def rank_folder(rank_file: Path, count: int, work: Path) -> Path:
    """A folder of `count` ranks: symbolic links named rank0.json.gz … to one rank file (their
    ranks come from the names, as in a folder whose distributedInfo repeats)."""
    folder = work / f"ranks_{count}_{rank_file.stem.split('.')[0]}"
    folder.mkdir(parents=True, exist_ok=True)
    for rank in range(count):
        link = folder / f"rank{rank}.json.gz"
        if not link.exists():
            link.symlink_to(rank_file.resolve())
    return folder


def rank_memory(counts: list[int], rank_size: int, base: Path, work: Path, env: dict[str, str],
                timeout: float, fmt: str = "json") -> str:
    """Peak memory (PSS of the process tree) and time of a folder report (`fmt`: json or html) as
    the number of ranks grows: the map/reduce with one worker (every rank in the parent, one at a
    time) and with two processes, against loading every rank into one `Trace` first (what a folder
    did before); for HTML also the map/reduce keeping every rank's full frames (before its chart
    inputs were bounded)."""
    rank_file = generate(rank_size, work, base, f"rank_{rank_size}")
    python = sys.executable
    commands = {
        "map/reduce, 1 worker": lambda f: [python, "-m", "traceanalyze", "report", "--format", fmt, "-o", os.devnull,
                                           "--workers", "1", "--no-cache", str(f)],
        "map/reduce, 2 workers": lambda f: [python, "-m", "traceanalyze", "report", "--format", fmt, "-o", os.devnull,
                                            "--workers", "2", "--no-cache", str(f)],
        "all ranks at once": lambda f: [python, "-c", ALL_AT_ONCE_SCRIPT, str(f), fmt],
    }
    if fmt == "html":
        commands["full ranks, 1 worker"] = lambda f: [python, "-c", FULL_RANKS_HTML_SCRIPT, str(f)]
    size = uncompressed_size(rank_file)
    lines = [f"rank file: {fmt_size(size)} uncompressed ({base.name} replicated); peak PSS of the process tree, time",
             "| ranks | " + " | ".join(commands) + " |", "|---|" + "---|" * len(commands)]
    for count in counts:
        folder = rank_folder(rank_file, count, work)
        cells = []
        for make in commands.values():
            run = measure(make(folder), env, timeout)
            cells.append(f"{fmt_mem(run)}, {fmt_time(run)}" if run.ok else f"failed: {run.note}")
        lines.append(f"| {count} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks",
                        help="instead: peak memory of a folder of N ranks for each N (e.g. 4,8,16), map/reduce "
                        "against all ranks at once (see --rank-size, --rank-base)")
    parser.add_argument("--rank-format", choices=["json", "html"], default="json",
                        help="the report --ranks measures (default json)")
    parser.add_argument("--rank-size", type=parse_size, default=parse_size("20M"),
                        help="uncompressed size of each rank (default 20M)")
    parser.add_argument("--rank-base", type=Path, default=SHARED_TRACES / "param_v100_dlrm_4ranks" / "rank0.json.gz",
                        help="real rank trace each rank replicates")
    parser.add_argument("--sizes", default="100M,1G",
                        help="generated trace sizes, comma-separated ('' for none; default 100M,1G)")
    parser.add_argument("--families", default=",".join(FAMILIES),
                        help=f"families of generated traces, comma-separated (default: all: {', '.join(FAMILIES)})")
    parser.add_argument("--base", type=Path, help="instead of --families: one real trace the generated ones replicate")
    parser.add_argument("--no-stages", action="store_true", help="skip the per-stage breakdown of generated traces")
    parser.add_argument("--no-real", action="store_true", help="skip the real traces of ../shared/traces")
    parser.add_argument("--hta-max", type=parse_size, default=parse_size("600M"),
                        help="skip HTA above this uncompressed size (default 600M)")
    parser.add_argument("--no-hta", action="store_true", help="never run HTA")
    parser.add_argument("--repeat", type=int, default=1,
                        help="runs per contender and input (the best counts; default 1)")
    parser.add_argument("--repeat-ours", type=int,
                        help="runs of traceanalyze and the floor per input (default: --repeat); "
                        "HTA's minutes on a gigabyte need not be repeated to compare with the best of ours")
    parser.add_argument("--small-repeat", type=int, default=10, help="runs of the 1 MB start-up check (default 10)")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds before a run is abandoned")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "traceanalyze-bench",
                        help="where generated traces go")
    parser.add_argument("--json", type=Path, help="also write every measurement here")
    parser.add_argument("--commands", default="", help=f"also time these commands once on each generated trace, "
                        f"comma-separated, among {', '.join(COMMANDS)} (default: none)")
    args = parser.parse_args(argv)
    unknown_commands = [name for name in args.commands.split(",") if name.strip() and name.strip() not in COMMANDS]
    if unknown_commands:
        parser.error(f"unknown commands {unknown_commands}: choose among {', '.join(COMMANDS)}")
    try:
        import psutil  # noqa: F401
    except ImportError:
        parser.error("needs psutil (pip install psutil) to follow memory")
    if args.work.resolve().is_relative_to(REPO):
        parser.error("--work must be outside the repository")
    args.work.mkdir(parents=True, exist_ok=True)
    env = child_env(args.work)
    if args.ranks:
        counts = [int(n) for n in args.ranks.split(",") if n.strip()]
        print(f"# traceanalyze bench --ranks --rank-format {args.rank_format}, "
              f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, "
              f"{platform.node()}: {os.cpu_count()} cores, Python {platform.python_version()}")
        print(rank_memory(counts, args.rank_size, args.rank_base, args.work, env, args.timeout, args.rank_format))
        return 0

    inputs: list[tuple[str, Path]] = []
    if not args.no_real and SHARED_TRACES.is_dir():
        inputs += [(p.relative_to(SHARED_TRACES).as_posix(), p) for p in sorted(SHARED_TRACES.rglob("*.json.gz"))]
    small = generate(parse_size("1M"), args.work, SMALL_BASE, "1M")
    inputs.append(("generated 1M (start-up check)", small))
    if args.base is not None:
        families = {args.base.name.split(".")[0]: args.base}
    else:
        unknown = [name for name in args.families.split(",") if name.strip() and name.strip() not in FAMILIES]
        if unknown:
            parser.error(f"unknown families {unknown}: choose among {', '.join(FAMILIES)}")
        families = {name.strip(): FAMILIES[name.strip()] for name in args.families.split(",") if name.strip()}
    generated: list[tuple[str, Path]] = []
    for label in filter(None, (s.strip() for s in args.sizes.split(","))):
        for family, base in families.items():
            generated.append((f"generated {label} {family}", generate(parse_size(label), args.work, base, label)))
    inputs += generated

    interactive = sys.stderr.isatty()
    progress = None
    if interactive:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                            transient=True)
        progress.start()
    results: list[Result] = []
    try:
        # warm the bytecode cache and the page cache, so that the first timed run is not penalised
        subprocess.run(contender_commands(small)["traceanalyze"], env=env, capture_output=True)
        total = sum(len(contender_commands(p)) for _, p in inputs)
        task = progress.add_task("bench", total=total) if progress else None
        for label, path in inputs:
            size = uncompressed_size(path)
            result = Result(trace=label, size_bytes=size)
            for who, command in contender_commands(path).items():
                if progress:
                    progress.update(task, description=f"{who:12s} {label}")
                skip = who == "hta" and (args.no_hta or size > args.hta_max)
                if not skip:
                    repeats = args.repeat if who == "hta" or args.repeat_ours is None else args.repeat_ours
                    if path == small and who == "traceanalyze":
                        repeats = args.small_repeat
                    result.runs[who] = [measure(command, env, args.timeout) for _ in range(max(1, repeats))]
                if progress:
                    progress.advance(task)
            results.append(result)
    finally:
        if progress:
            progress.stop()

    processor = platform.processor() or platform.machine()
    machine = f"{platform.node()}: {os.cpu_count()} cores, {processor}, Python {platform.python_version()}"
    print(f"# traceanalyze bench, {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {machine}")
    try:
        print(f"# load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    except OSError:
        pass
    print(table(results))
    startup = next((r for r in results if r.trace.startswith("generated 1M")), None)
    if startup and startup.runs.get("traceanalyze"):
        times = sorted(r.seconds for r in startup.runs["traceanalyze"] if r.ok)
        if times:
            print(f"\nstart-up check, report on a 1 MB trace ({len(times)} runs): best {times[0]:.2f} s, "
                  f"median {statistics.median(times):.2f} s (target < 0.5 s)")
    breakdowns = {} if args.no_stages else {label: stage_breakdown(path, env, args.timeout)
                                            for label, path in generated}
    if breakdowns:
        print("\n" + stages_table(breakdowns))
    commands = [name.strip() for name in args.commands.split(",") if name.strip()]
    if commands:
        print("\n" + command_runs(generated, commands, args.work, env, args.timeout))
    notes = [(r.trace, who, run.note) for r in results for who, runs in r.runs.items() for run in runs[:1] if run.note]
    for trace, who, note in notes:
        print(f"note: {who} on {trace}: {note}")
    if args.json:
        args.json.write_text(json.dumps({"machine": machine, "results": [asdict(r) for r in results],
                                         "stages": breakdowns}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
