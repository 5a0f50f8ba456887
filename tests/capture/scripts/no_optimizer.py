"""Inference without an optimizer: matmuls for --seconds seconds (default 0.5), with a
record_function region per iteration."""

import sys
import time

import torch

seconds = float(sys.argv[sys.argv.index("--seconds") + 1]) if "--seconds" in sys.argv else 0.5
weight = torch.randn(64, 64)
deadline = time.monotonic() + seconds
with torch.inference_mode():
    while time.monotonic() < deadline:
        with torch.profiler.record_function("infer"):
            torch.relu(torch.randn(32, 64) @ weight)
        time.sleep(0.002)
