"""Where a training step ends, found without editing the script (imports torch lazily).

Both sources end a step when a `record_function` region *closes*, so `ProfilerStep#N` spans never
straddle another region on the same thread:

- optimizer steps (default): a global optimizer post-hook marks the step done, and the step ends
  when the enclosing `Optimizer.step#…` region closes (the hook itself runs inside that region);
- `--steps-from NAME`: the step ends when a region named NAME closes.

Both work by wrapping `torch.autograd.profiler.record_function.__enter__/__exit__` (the class
behind `torch.profiler.record_function`) for the duration of the run, and restoring them after.
"""

from __future__ import annotations

import os
import signal
import threading
import weakref
from collections.abc import Callable
from typing import Any

from traceanalyze.errors import CaptureError

OPTIMIZER_REGION_PREFIX = "Optimizer.step#"
_PROFILER_STEP_PREFIX = "ProfilerStep#"


class StepHooks:
    """Calls `on_step()` at the end of every step, on the thread that installed it.

    `region=None` counts optimizer steps: with several optimizers, the first one that steps sets
    the pace (a GAN's two optimizers make one step, not two); if it is garbage-collected, the
    next one to step takes over.
    """

    def __init__(self, on_step: Callable[[], None], *, region: str | None = None) -> None:
        self._on_step = on_step
        self._region = region
        self._thread = threading.get_ident()
        self._pid = os.getpid()  # a forked DataLoader worker inherits the hooks, not the profiler
        self._depth = 0  # open Optimizer.step regions on our thread
        self._pending = False  # the pacing optimizer finished a step; end it when its region closes
        self._pacer: weakref.ref[Any] | None = None
        self._restore: list[Callable[[], None]] = []

    def install(self) -> None:
        from torch.autograd.profiler import record_function

        original_enter, original_exit = record_function.__dict__["__enter__"], record_function.__dict__["__exit__"]
        hooks = self

        def __enter__(rf: Any) -> Any:
            if hooks._region is None and rf.name.startswith(OPTIMIZER_REGION_PREFIX) and hooks._ours():
                hooks._depth += 1
            return original_enter(rf)

        def __exit__(rf: Any, exc_type: Any, exc_value: Any, tb: Any) -> Any:
            result = original_exit(rf, exc_type, exc_value, tb)
            name = rf.name
            if name.startswith(_PROFILER_STEP_PREFIX) or not hooks._ours():
                return result
            if hooks._region is None:
                if name.startswith(OPTIMIZER_REGION_PREFIX):
                    hooks._depth = max(0, hooks._depth - 1)
                    if hooks._depth == 0 and hooks._pending and exc_type is None:
                        hooks._pending = False
                        hooks._on_step()
            elif name == hooks._region and exc_type is None:
                hooks._on_step()
            return result

        record_function.__enter__ = __enter__  # type: ignore[method-assign]
        record_function.__exit__ = __exit__  # type: ignore[method-assign]

        def restore() -> None:
            record_function.__enter__ = original_enter  # type: ignore[method-assign]
            record_function.__exit__ = original_exit  # type: ignore[method-assign]

        self._restore.append(restore)
        if self._region is None:
            from torch.optim.optimizer import register_optimizer_step_post_hook

            handle = register_optimizer_step_post_hook(self._optimizer_stepped)
            self._restore.append(handle.remove)

    def remove(self) -> None:
        while self._restore:
            self._restore.pop()()

    def _ours(self) -> bool:
        return threading.get_ident() == self._thread and os.getpid() == self._pid

    def _optimizer_stepped(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if not self._ours():
            return
        pacer = self._pacer() if self._pacer is not None else None
        if pacer is None:
            self._pacer = weakref.ref(optimizer)
        elif pacer is not optimizer:
            return
        if self._depth == 0:  # an optimizer whose step() is not wrapped in its region
            self._on_step()
        else:
            self._pending = True


class AlarmTimer:
    """Calls `callback()` on the main thread `seconds` from now (SIGALRM), re-armable from the
    callback. Used by `--duration`: the profiler must be started and stopped on the thread that
    runs the script, which a timer thread cannot do."""

    def __init__(self, callback: Callable[[], None]) -> None:
        self._callback = callback
        self._previous: Any = None
        self._installed = False

    def install(self) -> None:
        if not hasattr(signal, "setitimer"):
            raise CaptureError("--duration needs SIGALRM, which this platform lacks (use the step schedule)")
        if threading.current_thread() is not threading.main_thread():
            raise CaptureError("--duration must run on the main thread")
        self._previous = signal.signal(signal.SIGALRM, self._fire)
        self._installed = True

    def arm(self, seconds: float) -> None:
        signal.setitimer(signal.ITIMER_REAL, max(seconds, 1e-6))

    def remove(self) -> None:
        if self._installed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self._previous if self._previous is not None else signal.SIG_DFL)
            self._installed = False

    def _fire(self, signum: int, frame: Any) -> None:
        self._callback()
