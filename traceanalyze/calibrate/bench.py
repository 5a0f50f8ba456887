"""The torch half of `traceanalyze calibrate`: `measure`, and the timed micro-benchmarks behind it
(torch is passed in, never imported here at module level).

- the essay's sweep: `out = x * c` repeated r times in ONE kernel, so memory traffic stays 2·N
  elements (read x, write a preallocated out) while the FLOPs grow with r (r per element, spread
  over up to `CHAINS` independent chains: `chain_lengths`). The kernel is fused by
  `torch.compile` (inductor → Triton on a GPU, a vectorised C++ loop on a CPU). Where compiling
  fails on a CPU, a hand-written blocked loop gives the same memory traffic: each cache-sized block
  is read once, multiplied r times while it sits in cache, and written once (its compute roof is
  then the in-cache pointwise rate, not the ALUs').
- a large copy (`dst.copy_(src)`, 2·N·bytes moved) and a large square matmul (2·n³ FLOP) per dtype.

Timing: an untimed warm-up call (compilation, allocation, caches) and a timed estimate, then
`samples` timed samples, each running the kernel often enough to last `min_sample_s`; the median
sample wins. GPU samples are bracketed by CUDA events and synchronised.
"""

from __future__ import annotations

import math
import os
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from traceanalyze.calibrate.fit import Calibration, SweepPoint
from traceanalyze.errors import ConfigError

SWEEP_REPEATS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
CHAINS = 8  # independent multiply chains per element in the compiled sweep (see `chain_lengths`)
# The essay multiplies by 2. A power of two lets a compiler fold r multiplies into one (x*2*2 is
# exactly x*4), so we multiply by a constant that cannot be folded and stays finite for r <= 256.
MULTIPLIER = 1.0001
DTYPE_NAMES = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}


@dataclass(frozen=True)
class BenchPlan:
    device: str  # "cuda" (also ROCm builds) or "cpu"
    sweep_size: int  # elements of the swept / copied tensors
    matmul_size: int  # n of the n×n matmuls
    samples: int
    min_sample_s: float
    repeats: tuple[int, ...] = SWEEP_REPEATS
    threads: int | None = None  # CPU intra-op threads (None: torch's default)
    compile_on_cpu: bool = False  # fuse the CPU sweep with torch.compile (needs a C++ compiler)


def plan_for(torch: Any, device: str, *, size: int | None, quick: bool) -> BenchPlan:
    """Sizes that make the kernels memory-sized (not cache-sized) yet fit the device."""
    if device == "cuda":
        default = 1 << (26 if quick else 28)  # 256 MiB / 1 GiB of fp32
        sweep = size or default
        free, _total = torch.cuda.mem_get_info()
        sweep = min(sweep, max(1 << 20, int(free * 0.4) // (3 * 4)))  # x, out, and a spare copy
        return BenchPlan("cuda", sweep, 4096 if quick else 8192, samples=5 if quick else 10, min_sample_s=0.01 if quick
                         else 0.05)
    sweep = size or (1 << (21 if quick else 25))  # 8 MiB (in the last-level cache) / 128 MiB (DRAM)
    threads = 1 if quick else torch.get_num_threads()
    return BenchPlan(
        "cpu", sweep, 256 if quick else 1024, samples=5 if quick else 7, min_sample_s=0.005 if quick else 0.05,
        threads=threads,
        compile_on_cpu=True,
    )


@contextmanager
def cpu_threads(torch: Any, plan: BenchPlan) -> Iterator[None]:
    """Run with `plan.threads` intra-op threads (`--quick` uses one: a shared CI runner's other
    jobs then slow it down less than they stall a multi-threaded op at its barriers)."""
    saved = torch.get_num_threads()
    if plan.device == "cpu" and plan.threads is not None:
        torch.set_num_threads(plan.threads)
    try:
        yield
    finally:
        torch.set_num_threads(saved)


def calls_per_sample(torch: Any, plan: BenchPlan, fn: Callable[[], Any]) -> int:
    """Warm `fn` up (compilation, allocation, caches), then how many calls make one sample last
    `plan.min_sample_s`."""
    sync: Callable[[], Any] = torch.cuda.synchronize if plan.device == "cuda" else (lambda: None)
    fn()
    sync()
    begin = time.perf_counter()
    fn()
    sync()
    estimate = max(time.perf_counter() - begin, 1e-7)
    return max(1, min(10_000, math.ceil(plan.min_sample_s / estimate)))


def time_calls(torch: Any, device: str, fn: Callable[[], Any], calls: int) -> float:
    """Seconds per call of `fn` over `calls` back-to-back calls (CUDA events on a GPU)."""
    if device == "cuda":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3 / calls
    begin = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - begin) / calls


def median_seconds(torch: Any, plan: BenchPlan, fn: Callable[[], Any]) -> float:
    """Median seconds per call of `fn` over `plan.samples` samples (see the module docstring)."""
    calls = calls_per_sample(torch, plan, fn)
    return statistics.median(time_calls(torch, plan.device, fn, calls) for _ in range(plan.samples))


def sweep(torch: Any, plan: BenchPlan, *, progress: Callable[[str], None]) -> tuple[list[tuple[int, float]], str]:
    """[(r, seconds)] for the fp32 `x * c` chain, and a one-line description of the method.

    Every kernel reads `x` and writes a preallocated `out` (no allocation inside the timed call:
    a fresh output per call would time the allocator and page faults, not the memory). The kernels
    are built first, then timed in `plan.samples` rounds over all r, so that a burst of load from
    elsewhere slows one sample of every r rather than every sample of one r; the median wins."""
    x = torch.randn(plan.sweep_size, dtype=torch.float32, device=plan.device)
    out = torch.empty_like(x)
    kernels: dict[int, Callable[[], Any]] = {}
    if plan.device == "cuda" or plan.compile_on_cpu:
        try:
            for repeat in plan.repeats:
                kernel = torch.compile(_chain(repeat), fullgraph=True, dynamic=False)
                kernels[repeat] = lambda kernel=kernel: kernel(x, out)
                kernels[repeat]()  # compile now, outside the timing
                progress(f"sweep r={repeat}: compiled")
            where = "one kernel" if plan.device == "cuda" else f"one C++ loop ({torch.get_num_threads()} threads)"
            method = (f"r FLOP per element (x * c chains), fused into {where} by torch.compile (inductor), "
                      "writing a preallocated out")
        except Exception as error:  # no C++ compiler, an unsupported platform…: fall back
            if plan.device == "cuda":
                raise
            progress(f"torch.compile failed on the CPU ({type(error).__name__}); using the blocked loop")
            kernels = {}
    if not kernels:
        block = cpu_block_elements(torch, x.element_size())
        buffer = torch.empty(min(block, plan.sweep_size), dtype=x.dtype)
        kernels = {r: (lambda r=r: _blocked_chain(torch, x, out, buffer, r)) for r in plan.repeats}
        method = (
            f"x * c repeated r times over {block}-element blocks that stay in cache "
            f"({torch.get_num_threads()} threads): one read of x and one write of out per run"
        )
    samples: dict[int, list[float]] = {r: [] for r in plan.repeats}
    inner = {r: calls_per_sample(torch, plan, fn) for r, fn in kernels.items()}
    for _ in range(plan.samples):
        for repeat, fn in kernels.items():
            samples[repeat].append(time_calls(torch, plan.device, fn, inner[repeat]))
    results = [(r, statistics.median(samples[r])) for r in plan.repeats]
    for repeat, seconds in results:
        progress(f"sweep r={repeat}: {seconds * 1e3:.3f} ms")
    return results, method


def chain_lengths(repeat: int) -> list[int]:
    """Multiplies per independent chain for r FLOP per element: k = min(CHAINS, ⌊(r+1)/2⌋) chains
    share r − (k − 1) multiplies, and k − 1 adds join them. One long dependent chain would time the
    multiplier's latency on a CPU (its out-of-order window cannot overlap elements once a chain
    fills it), not its throughput.

    >>> chain_lengths(1), chain_lengths(2), chain_lengths(8), chain_lengths(256)[:2]
    ([1], [2], [2, 1, 1, 1], [32, 31])
    """
    chains = max(1, min(CHAINS, (repeat + 1) // 2))
    multiplies = repeat - (chains - 1)
    return [multiplies // chains + (1 if j < multiplies % chains else 0) for j in range(chains)]


def _chain(repeat: int) -> Callable[[Any, Any], None]:
    lengths = chain_lengths(repeat)

    def chain(x: Any, out: Any) -> None:
        total = None
        for j, length in enumerate(lengths):
            y = x * (MULTIPLIER + j * 1e-4)  # a constant per chain, so that no two chains are the same expression
            for _ in range(length - 1):
                y = y * MULTIPLIER
            total = y if total is None else total + y
        out.copy_(total)  # inductor stores the fused result straight into out: no temporary

    # a code object of its own per r, so that torch.compile keeps one cache entry per kernel
    # (sharing one would hit its recompilation limit, and a reset would drop the earlier kernels)
    chain.__code__ = chain.__code__.replace(co_name=f"chain_r{repeat}")
    return chain


def _blocked_chain(torch: Any, x: Any, out: Any, buffer: Any, repeat: int) -> None:
    if repeat == 1:
        torch.mul(x, MULTIPLIER, out=out)
        return
    block = buffer.numel()
    for start in range(0, x.numel(), block):
        source, target = x[start : start + block], out[start : start + block]
        scratch = buffer[: source.numel()]
        torch.mul(source, MULTIPLIER, out=scratch)
        for _ in range(repeat - 2):
            scratch.mul_(MULTIPLIER)
        torch.mul(scratch, MULTIPLIER, out=target)


def cpu_block_elements(torch: Any, element_size: int) -> int:
    """Elements per block: half of each thread's L2 (torch splits each op over its threads)."""
    l2 = _cache_bytes(2) or (1 << 20)
    return max(1 << 14, torch.get_num_threads() * (l2 // 2) // element_size)


def _cache_bytes(level: int) -> int | None:
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        for index in sorted(os.listdir(base)):
            folder = os.path.join(base, index)
            with open(os.path.join(folder, "level")) as f:
                if int(f.read()) != level:
                    continue
            with open(os.path.join(folder, "type")) as f:
                if f.read().strip() == "Instruction":
                    continue
            with open(os.path.join(folder, "size")) as f:
                text = f.read().strip().upper()
            scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
            return int(text.rstrip("KMG")) * scale
    except (OSError, ValueError):
        return None
    return None


def dtypes(torch: Any, device: str) -> list[Any]:
    """fp32, bf16 and fp16 where this device runs a matmul in them."""
    found = [torch.float32]
    for dtype in (torch.bfloat16, torch.float16):
        if device == "cuda" and dtype is torch.bfloat16 and not _native_bf16(torch):
            continue
        try:
            probe = torch.ones(8, 8, dtype=dtype, device=device)
            torch.mm(probe, probe)
        except (RuntimeError, TypeError):
            continue
        found.append(dtype)
    return found


def _native_bf16(torch: Any) -> bool:
    try:
        return bool(torch.cuda.is_bf16_supported(including_emulation=False))
    except TypeError:  # torch < 2.3 has no including_emulation (and reports native support only)
        return bool(torch.cuda.is_bf16_supported())


def dtype_name(dtype: Any) -> str:
    name = str(dtype).removeprefix("torch.")
    return DTYPE_NAMES.get(name, name)


def copy_rate(torch: Any, plan: BenchPlan, dtype: Any) -> float:
    """Bytes per second moved by `dst.copy_(src)` (read + write), over as many bytes as the fp32 sweep
    moves whatever the dtype (so that a narrower dtype does not fit a cache the sweep does not)."""
    elements = plan.sweep_size * 4 // torch.empty((), dtype=dtype).element_size()
    source = torch.randn(elements, device=plan.device).to(dtype)
    target = torch.empty_like(source)
    seconds = median_seconds(torch, plan, lambda: target.copy_(source))
    return 2 * source.numel() * source.element_size() / seconds


def matmul_rates(torch: Any, plan: BenchPlan, dtype: Any, *, progress: Callable[[str], None]) -> dict[str, float]:
    """FLOP/s of an n×n matmul, keyed "dtype:unit". On a GPU: fp32 → "fp32:simt" (TF32 off; on an
    Ampere+ NVIDIA GPU also "tf32:tensor" with TF32 on), bf16/fp16 → "bf16:tensor"/"fp16:tensor".
    On a CPU every dtype is "dtype:simt": its own cores ran it (a CPU has no tensor cores)."""
    n = plan.matmul_size
    a = torch.randn(n, n, device=plan.device).to(dtype)
    b = torch.randn(n, n, device=plan.device).to(dtype)
    c = torch.empty(n, n, device=plan.device, dtype=dtype)

    def rate() -> float:
        seconds = median_seconds(torch, plan, lambda: torch.mm(a, b, out=c))
        return 2 * n**3 / seconds

    rates: dict[str, float] = {}
    if plan.device == "cpu":
        rates[f"{dtype_name(dtype)}:simt"] = rate()
    elif dtype is not torch.float32:
        rates[f"{dtype_name(dtype)}:tensor"] = rate()
    else:
        matmul = torch.backends.cuda.matmul
        saved = matmul.allow_tf32
        try:
            matmul.allow_tf32 = False
            rates["fp32:simt"] = rate()
            if getattr(torch.version, "hip", None) is None and torch.cuda.get_device_capability() >= (8, 0):
                matmul.allow_tf32 = True
                rates["tf32:tensor"] = rate()
        finally:
            matmul.allow_tf32 = saved
    for key, value in rates.items():
        progress(f"matmul {key} n={n}: {value / 1e12:.3f} TFLOP/s")
    return rates


def measure(
    *,
    device: str | None = None,
    size: int | None = None,
    quick: bool = False,
    progress: Callable[[str], None] | None = None,
) -> Calibration:
    """Run the sweep, the copies and the matmuls on `device` ("cuda" or "cpu"; default: the GPU
    when torch sees one). `size` is the swept tensor's element count; `quick` shrinks everything
    to seconds (for CI).

    Examples
    --------
    >>> calibration = measure(device="cpu", quick=True)  # doctest: +SKIP
    >>> fit_roofs(calibration).bandwidth_bytes_per_s > 0  # doctest: +SKIP
    True
    """
    from traceanalyze.capture.environment import cpu_name, gpu_backend, gpu_name, import_torch

    torch = import_torch()
    say = progress or (lambda line: None)
    backend = gpu_backend(torch)
    if device is None:
        device = "cuda" if backend else "cpu"
    if device not in ("cuda", "cpu"):
        raise ConfigError(f"--device must be 'cuda' or 'cpu', not {device!r}")
    if device == "cuda" and backend is None:
        raise ConfigError("--device cuda: torch sees no GPU here")
    if size is not None and size < 1024:
        raise ConfigError(f"--size must be at least 1024 elements (got {size})")

    plan = plan_for(torch, device, size=size, quick=quick)
    notes: list[str] = []
    if plan.threads == 1 and torch.get_num_threads() > 1:
        notes.append("--quick on a CPU measures one thread")
    points: list[SweepPoint] = []
    copies: dict[str, float] = {}
    matmuls: dict[str, float] = {}
    with cpu_threads(torch, plan):
        try:
            results, method = sweep(torch, plan, progress=say)
            points = [SweepPoint(repeat, seconds, plan.sweep_size) for repeat, seconds in results]
            if device == "cpu" and "blocks" in method:
                notes.append(
                    "CPU: the sweep runs eager ops over cache-sized blocks, so its compute roof is the in-cache "
                    "pointwise rate; its bandwidth is DRAM only when --size is well above the last-level cache"
                )
        except Exception as error:  # e.g. no Triton for torch.compile: keep the copy and matmul roofs
            first_line = str(error).splitlines()[0] if str(error) else ""
            method = f"not measured ({type(error).__name__}: {first_line})"
            notes.append(f"the x * c sweep failed: {method}")
        for dtype in dtypes(torch, device):
            name = dtype_name(dtype)
            copies[name] = copy_rate(torch, plan, dtype)
            say(f"copy {name}: {copies[name] / 1e9:.1f} GB/s")
            matmuls.update(matmul_rates(torch, plan, dtype, progress=say))
    name = (gpu_name(torch, None) or "GPU") if device == "cuda" else cpu_name()
    return Calibration(
        device_kind=backend if device == "cuda" and backend else "cpu",
        device_name=name,
        base_key=_datasheet_key(torch, name) if device == "cuda" else None,
        torch_version=str(torch.__version__),
        sweep_method=method,
        sweep=tuple(points),
        copy_bytes_per_s=copies,
        matmul_size=plan.matmul_size,
        matmul_flops_per_s=matmuls,
        date=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        notes=tuple(notes),
    )


def _datasheet_key(torch: Any, name: str) -> str | None:
    """The built-in table's key for this GPU (`analysis.devices.device_peaks`), or None."""
    from traceanalyze.analysis.devices import device_peaks

    try:
        properties = torch.cuda.get_device_properties(torch.cuda.current_device())
        entry = device_peaks(name, properties.multi_processor_count, properties.total_memory)
    except Exception:
        return None
    return entry.key if entry is not None else None
