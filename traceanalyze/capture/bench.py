"""Timed micro-benchmarks behind `traceanalyze calibrate` (torch is passed in, never imported here
at module level).

- the essay's sweep: `x = x * c` repeated r times in ONE kernel, so memory traffic stays 2·N
  elements while the FLOPs grow with r. The kernel is fused by `torch.compile` (inductor → Triton on
  a GPU, a vectorised C++ loop on a CPU). With `--quick` on a CPU (and where compiling fails), a
  hand-written blocked loop gives the same DRAM traffic: each cache-sized block is read once,
  multiplied r times while it sits in cache, and written once (its compute roof is then the
  in-cache pointwise rate, not the ALUs').
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
from typing import Any

SWEEP_REPEATS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
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
        return BenchPlan("cuda", sweep, 4096 if quick else 8192, samples=5 if quick else 10, min_sample_s=0.01 if quick else 0.05)
    sweep = size or (1 << (20 if quick else 24))
    threads = 1 if quick else torch.get_num_threads()
    return BenchPlan(
        "cpu", sweep, 256 if quick else 1024, samples=3 if quick else 7, min_sample_s=0.002 if quick else 0.05, threads=threads,
        compile_on_cpu=not quick,  # compiling nine kernels takes tens of seconds: not for --quick
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


def median_seconds(torch: Any, device: str, fn: Callable[[], Any], *, samples: int, min_sample_s: float) -> float:
    """Median seconds per call of `fn` (see the module docstring for the protocol)."""
    cuda = device == "cuda"
    sync: Callable[[], Any] = torch.cuda.synchronize if cuda else (lambda: None)
    fn()  # warm-up: compilation, allocation, caches
    sync()
    begin = time.perf_counter()
    fn()
    sync()
    estimate = max(time.perf_counter() - begin, 1e-7)
    inner = max(1, min(10_000, math.ceil(min_sample_s / estimate)))
    times: list[float] = []
    for _ in range(samples):
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(inner):
                fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / 1e3 / inner)
        else:
            begin = time.perf_counter()
            for _ in range(inner):
                fn()
            times.append((time.perf_counter() - begin) / inner)
    return statistics.median(times)


def sweep(torch: Any, plan: BenchPlan, *, progress: Callable[[str], None]) -> tuple[list[tuple[int, float]], str]:
    """[(r, seconds)] for the fp32 `x * c` chain, and a one-line description of the method."""
    x = torch.randn(plan.sweep_size, dtype=torch.float32, device=plan.device)
    if plan.device == "cuda" or plan.compile_on_cpu:
        try:
            return _compiled_sweep(torch, plan, x, progress=progress)
        except Exception as error:  # no C++ compiler, an unsupported platform…: fall back
            if plan.device == "cuda":
                raise
            progress(f"torch.compile failed on the CPU ({type(error).__name__}); using the blocked loop")
    results: list[tuple[int, float]] = []
    block = cpu_block_elements(torch, x.element_size())
    method = (
        f"x * c repeated r times over {block}-element blocks that stay in cache "
        f"({torch.get_num_threads()} threads): one read and one write of x per run"
    )
    out = torch.empty_like(x)
    buffer = torch.empty(min(block, plan.sweep_size), dtype=x.dtype)
    for repeat in plan.repeats:
        seconds = median_seconds(
            torch, "cpu", lambda: _blocked_chain(torch, x, out, buffer, repeat), samples=plan.samples, min_sample_s=plan.min_sample_s
        )
        results.append((repeat, seconds))
        progress(f"sweep r={repeat}: {seconds * 1e3:.3f} ms")
    return results, method


def _compiled_sweep(torch: Any, plan: BenchPlan, x: Any, *, progress: Callable[[str], None]) -> tuple[list[tuple[int, float]], str]:
    import torch._dynamo  # noqa: F401  (lazy: only this sweep compiles)

    where = "one kernel" if plan.device == "cuda" else f"one C++ loop ({torch.get_num_threads()} threads)"
    method = f"x * c repeated r times, fused into {where} by torch.compile (inductor)"
    results: list[tuple[int, float]] = []
    for repeat in plan.repeats:
        torch._dynamo.reset()  # one fresh graph per r; avoids the recompilation limit
        kernel = torch.compile(_chain(repeat), fullgraph=True, dynamic=False)
        seconds = median_seconds(torch, plan.device, lambda: kernel(x), samples=plan.samples, min_sample_s=plan.min_sample_s)
        results.append((repeat, seconds))
        progress(f"sweep r={repeat}: {seconds * 1e3:.3f} ms")
    return results, method


def _chain(repeat: int) -> Callable[[Any], Any]:
    def chain(x: Any) -> Any:
        for _ in range(repeat):
            x = x * MULTIPLIER
        return x

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
        if device == "cuda" and dtype is torch.bfloat16 and not torch.cuda.is_bf16_supported(including_emulation=False):
            continue
        try:
            probe = torch.ones(8, 8, dtype=dtype, device=device)
            torch.mm(probe, probe)
        except (RuntimeError, TypeError):
            continue
        found.append(dtype)
    return found


def dtype_name(dtype: Any) -> str:
    name = str(dtype).removeprefix("torch.")
    return DTYPE_NAMES.get(name, name)


def copy_rate(torch: Any, plan: BenchPlan, dtype: Any) -> float:
    """Bytes per second moved by `dst.copy_(src)` (read + write)."""
    source = torch.randn(plan.sweep_size, device=plan.device).to(dtype)
    target = torch.empty_like(source)
    seconds = median_seconds(torch, plan.device, lambda: target.copy_(source), samples=plan.samples, min_sample_s=plan.min_sample_s)
    return 2 * source.numel() * source.element_size() / seconds


def matmul_rates(torch: Any, plan: BenchPlan, dtype: Any, *, progress: Callable[[str], None]) -> dict[str, float]:
    """FLOP/s of an n×n matmul, keyed "dtype:unit": fp32 → "fp32:simt" (TF32 off; on an Ampere+
    NVIDIA GPU also "tf32:tensor" with TF32 on), bf16/fp16 → "bf16:tensor"/"fp16:tensor"."""
    n = plan.matmul_size
    a = torch.randn(n, n, device=plan.device).to(dtype)
    b = torch.randn(n, n, device=plan.device).to(dtype)
    c = torch.empty(n, n, device=plan.device, dtype=dtype)

    def rate() -> float:
        seconds = median_seconds(torch, plan.device, lambda: torch.mm(a, b, out=c), samples=plan.samples, min_sample_s=plan.min_sample_s)
        return 2 * n**3 / seconds

    rates: dict[str, float] = {}
    if dtype is not torch.float32:
        rates[f"{dtype_name(dtype)}:tensor"] = rate()
    elif plan.device == "cuda":
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
    else:
        rates["fp32:simt"] = rate()
    for key, value in rates.items():
        progress(f"matmul {key} n={n}: {value / 1e12:.3f} TFLOP/s")
    return rates
