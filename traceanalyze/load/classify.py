"""Names → kinds. Category and API names differ across PyTorch eras and vendors; every rule that
maps a name to a kind lives here."""

from __future__ import annotations

import re

# Device work ("GPU ops": kernels, copies, sets) by category; `gpu_category_kind` also takes any
# category an accelerator's profiler plugin declares in the same style (`xpu_kernel`, `*_memcpy`).
GPU_CATEGORIES = {
    "kernel": "kernel",
    "gpu_memcpy": "memcpy",
    "memcpy": "memcpy",
    "gpu_memset": "memset",
    "memset": "memset",
    "mtia_ccp_events": "kernel",
}  # MTIA: its command processor's work (HTA's loader reads it so)
RUNTIME_CATEGORIES = frozenset({"cuda_runtime", "runtime", "cuda_driver", "hip_runtime", "mtia_runtime"})
_ACCELERATOR_WORK = re.compile(r"^(?!cpu)[a-z0-9]+_(kernel|memcpy|memset)$")
_ACCELERATOR_RUNTIME = re.compile(r"^(?!cpu|python)[a-z0-9]+_(runtime|driver)$")
CPU_OP_CATEGORIES = {"cpu_op": "cpu_op", "operator": "cpu_op", "user_annotation": "user_annotation"}
SYNC_CATEGORIES = frozenset({"cuda_sync"})
PYTHON_CATEGORIES = frozenset({"python_function"})
FLOW_CATEGORIES = frozenset({"ac2g", "async", "async_gpu", "async_cpu_to_gpu"})

STEP_NAME = re.compile(r"^ProfilerStep#(\d+)$")
MAX_DURATION_US = 86_400_000_000  # one day: anything longer is a recording error


# Collective kernels: NCCL/RCCL, and the all-reduce kernels of PyTorch symmetric memory
# (`multimem_all_reduce_kernel`), vLLM/TensorRT custom all-reduce, and the like.
COLLECTIVE_KERNEL = re.compile(
    r"nccl|rccl|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|cross_device_reduce", re.IGNORECASE
)


def gpu_category_kind(category: str) -> str | None:
    """The kind of device work a (lower-case) category holds — `kernel`, `memcpy` or `memset` —
    or None when it holds none: the known categories (`GPU_CATEGORIES`), and any
    `<accelerator>_kernel`, `_memcpy` or `_memset` an accelerator's profiler plugin writes."""
    known = GPU_CATEGORIES.get(category)
    if known is not None:
        return known
    match = _ACCELERATOR_WORK.match(category)
    return match.group(1) if match else None


def is_runtime_category(category: str) -> bool:
    """Whether a (lower-case) category holds runtime/driver API calls (launches, copies, syncs):
    `RUNTIME_CATEGORIES`, and any `<accelerator>_runtime` or `_driver`."""
    return category in RUNTIME_CATEGORIES or _ACCELERATOR_RUNTIME.match(category) is not None


def gpu_kind(category_kind: str, name: str) -> str:
    """`communication` for collective kernels (`COLLECTIVE_KERNEL`), else the category's kind."""
    if category_kind == "kernel" and COLLECTIVE_KERNEL.search(name):
        return "communication"
    return category_kind


def runtime_kind(name: str) -> str:
    """Kind of a CUDA/HIP runtime or driver call, from its API name."""
    lowered = name.lower()
    if "graphlaunch" in lowered:
        return "graph_launch"
    if "launchkernel" in lowered or "launchcooperativekernel" in lowered or "modulelaunch" in lowered:
        return "launch"
    if lowered.startswith("runfunction"):  # MTIA: `runFunction - job_prep_and_submit_for_execution`
        return "launch"
    if "synchronize" in lowered or "streamwaitevent" in lowered:
        return "sync"
    if "memcpy" in lowered:
        return "memcpy"
    if "memset" in lowered:
        return "memset"
    return "other"


def runtime_blocks_host(name: str, kind: str) -> bool:
    """Whether the call holds the CPU until the GPU has caught up: synchronize calls and the
    synchronous (non-`Async`) copy and set APIs."""
    if kind == "sync":
        return "streamwaitevent" not in name.lower()
    if kind in ("memcpy", "memset"):
        return "async" not in name.lower()
    return False


_AMD_NAME = re.compile(r"\b(AMD|Instinct|Radeon|MI\d{3}[A-Z]*)\b", re.IGNORECASE)
_NVIDIA_NAME = re.compile(r"\b(NVIDIA|Tesla|GeForce|Quadro|RTX|[ABHLT]\d{2,3}|GB?\d{3}|V100|P100)\b", re.IGNORECASE)


def device_family(*, has_device_work: bool, runtime_names: list[str], device_names: list[str],
                  hip_runtime_version: object = None, cuda_runtime_version: object = None,
                  cupti_version: object = None) -> str:
    """Which kind of accelerator a rank's trace is about (a key of `model.DEVICE_FAMILIES`): `MTIA` (its launches are
    `runFunction` calls, or its devices say so), `ROCm` (a HIP runtime, `hip*` calls, AMD device
    names), `CUDA` (a CUDA runtime or CUPTI version, `cuda*`/`cu*` calls, NVIDIA device names),
    `accelerator` for device work of another kind, and `none` for a trace without device work
    or launches (a CPU-only run)."""
    if not has_device_work and not runtime_names:
        return "none"  # whatever the machine had, this trace is about none of it
    lowered = [name.lower() for name in runtime_names]
    names = " ".join(device_names)
    if any(name.startswith("runfunction") for name in lowered) or "mtia" in names.lower():
        return "MTIA"
    if hip_runtime_version is not None or any(name.startswith("hip") for name in lowered) or _AMD_NAME.search(names):
        return "ROCm"
    if (cuda_runtime_version is not None or cupti_version is not None or _NVIDIA_NAME.search(names)
            or any(name.startswith("cu") for name in lowered)):
        return "CUDA"
    return "accelerator"
