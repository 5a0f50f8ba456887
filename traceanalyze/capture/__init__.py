"""Capture: run a user's script under `torch.profiler` without editing it (torch is imported
only when a capture runs). `traceanalyze calibrate` lives in `traceanalyze.calibrate`."""

from traceanalyze.capture.options import DEFAULT_OUT_DIR, CaptureOptions, Schedule
from traceanalyze.capture.session import CaptureResult, run_capture

__all__ = ["DEFAULT_OUT_DIR", "CaptureOptions", "CaptureResult", "Schedule", "run_capture"]
