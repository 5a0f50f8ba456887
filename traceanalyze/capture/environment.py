"""Facts about the machine and the torch build, for run.json and the device file (lazy torch)."""

from __future__ import annotations

import os
import platform
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from traceanalyze.errors import CaptureError

# Kineto prints `USDT:`/`STAGE:` lines on stderr at every profiler start and stop; level 6 is above
# its highest (USDT = 5). A KINETO_LOG_LEVEL the user set is kept.
KINETO_QUIET_LEVEL = "6"

INSTALL_HINT = "pip install torch (what traceanalyze's `capture` extra installs)"


def import_torch() -> Any:
    """`import torch`, or a one-line `CaptureError` telling how to install it."""
    try:
        import torch
    except ImportError as error:
        raise CaptureError(
            f"PyTorch is needed for this command but cannot be imported ({error}); "
            f"install it into this environment: {INSTALL_HINT}"
        ) from None
    return torch


@contextmanager
def quiet_kineto() -> Iterator[None]:
    """Silence Kineto's own log lines while capturing (set before torch starts Kineto), unless the
    user set `KINETO_LOG_LEVEL`; the script's own output is untouched."""
    if "KINETO_LOG_LEVEL" in os.environ:
        yield
        return
    os.environ["KINETO_LOG_LEVEL"] = KINETO_QUIET_LEVEL
    try:
        yield
    finally:
        os.environ.pop("KINETO_LOG_LEVEL", None)


def rank_of(environ: Mapping[str, str]) -> tuple[int | None, int | None, int | None]:
    """(rank, world size, local rank) as torchrun sets them, or None where unset or not a number."""

    def number(name: str) -> int | None:
        value = environ.get(name)
        try:
            return int(value) if value is not None else None
        except ValueError:
            return None

    return number("RANK"), number("WORLD_SIZE"), number("LOCAL_RANK")


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "CPU"


def gpu_backend(torch: Any) -> str | None:
    """'cuda' or 'rocm' when torch sees a GPU, else None. (`torch.cuda` covers ROCm builds.)"""
    if not torch.cuda.is_available():
        return None
    return "rocm" if getattr(torch.version, "hip", None) else "cuda"


def gpu_name(torch: Any, local_rank: int | None) -> str | None:
    """Name of the GPU this process used: the current device when the script initialised CUDA,
    else LOCAL_RANK's (or 0). Call after the script ran, so that asking does not create a CUDA
    context on the wrong device under torchrun."""
    try:
        if not torch.cuda.is_available():
            return None
        if torch.cuda.is_initialized():
            index = torch.cuda.current_device()
        else:
            index = min(local_rank or 0, torch.cuda.device_count() - 1)
        return str(torch.cuda.get_device_name(index))
    except Exception:  # a broken driver must not lose the trace
        return None


def versions(torch: Any) -> dict[str, Any]:
    cudnn = None
    try:
        if torch.backends.cudnn.is_available():
            cudnn = torch.backends.cudnn.version()
    except Exception:
        pass
    return {
        "python_version": platform.python_version(),
        "torch_version": str(torch.__version__),
        "cuda_version": getattr(torch.version, "cuda", None),
        "hip_version": getattr(torch.version, "hip", None),
        "cudnn_version": cudnn,
        "platform": platform.platform(),
        "python_executable": sys.executable,
    }


def traceanalyze_version() -> str | None:
    try:
        from importlib.metadata import version

        return version("traceanalyze")
    except Exception:
        return None
