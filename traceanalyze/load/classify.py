"""Names → kinds. Category and API names differ across PyTorch eras and vendors; every rule that
maps a name to a kind lives here."""

from __future__ import annotations

import re

GPU_CATEGORIES = {"kernel": "kernel", "gpu_memcpy": "memcpy", "memcpy": "memcpy", "gpu_memset": "memset", "memset": "memset"}
RUNTIME_CATEGORIES = frozenset({"cuda_runtime", "runtime", "cuda_driver", "hip_runtime"})
CPU_OP_CATEGORIES = {"cpu_op": "cpu_op", "operator": "cpu_op", "user_annotation": "user_annotation"}
SYNC_CATEGORIES = frozenset({"cuda_sync"})
PYTHON_CATEGORIES = frozenset({"python_function"})
FLOW_CATEGORIES = frozenset({"ac2g", "async", "async_gpu", "async_cpu_to_gpu"})

STEP_NAME = re.compile(r"^ProfilerStep#(\d+)$")
MAX_DURATION_US = 86_400_000_000  # one day: anything longer is a recording error


# Collective kernels: NCCL/RCCL, and the all-reduce kernels of PyTorch symmetric memory
# (`multimem_all_reduce_kernel`), vLLM/TensorRT custom all-reduce, and the like.
COLLECTIVE_KERNEL = re.compile(r"nccl|rccl|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|cross_device_reduce", re.IGNORECASE)


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
