"""What `traceanalyze capture` was asked to do: plain data, checked once, no torch."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from traceanalyze.errors import ConfigError

DEFAULT_OUT_DIR = Path("traceanalyze-out")


@dataclass(frozen=True)
class Schedule:
    """The `torch.profiler.schedule` in steps: skip `wait`, warm up for `warmup`, record `active`,
    `repeat` times (0 = until the script ends)."""

    wait: int = 1
    warmup: int = 1
    active: int = 3
    repeat: int = 1

    def check(self) -> None:
        if self.wait < 0 or self.warmup < 0 or self.repeat < 0:
            raise ConfigError(
                f"--wait, --warmup and --repeat must be >= 0 (got wait={self.wait}, "
                f"warmup={self.warmup}, repeat={self.repeat})"
            )
        if self.active < 1:
            raise ConfigError(f"--active must be >= 1 (got {self.active})")

    @property
    def first_recorded_step(self) -> int:
        """Number of the first `ProfilerStep#N` the schedule records (steps count from 0)."""
        return self.wait + self.warmup

    def to_dict(self) -> dict[str, int]:
        return {"wait": self.wait, "warmup": self.warmup, "active": self.active, "repeat": self.repeat}


@dataclass(frozen=True)
class CaptureOptions:
    """Everything `run_capture` needs.

    `steps_from` names a `record_function` region that ends each step (default: optimizer steps);
    `duration_s` replaces the step schedule by a time window that opens `delay_s` after the script
    starts. `environ` stands in for `os.environ` (only `RANK`, `WORLD_SIZE`, `LOCAL_RANK` are read).
    """

    script: Path
    args: tuple[str, ...] = ()
    out_dir: Path = DEFAULT_OUT_DIR
    schedule: Schedule = field(default_factory=Schedule)
    steps_from: str | None = None
    duration_s: float | None = None
    delay_s: float = 0.0
    stop_after_capture: bool = False
    with_stack: bool = False
    profile_memory: bool = False
    command: tuple[str, ...] = ()
    environ: dict[str, str] | None = None

    def check(self) -> None:
        self.schedule.check()
        if self.duration_s is not None and not self.duration_s > 0:
            raise ConfigError(f"--duration must be > 0 seconds (got {self.duration_s})")
        if self.delay_s < 0:
            raise ConfigError(f"--delay must be >= 0 seconds (got {self.delay_s})")
        if self.delay_s > 0 and self.duration_s is None:
            raise ConfigError("--delay only applies with --duration")
        if self.steps_from is not None and not self.steps_from.strip():
            raise ConfigError("--steps-from needs the name of a record_function region")
        if self.stop_after_capture and self.duration_s is None and self.schedule.repeat == 0:
            raise ConfigError("--stop-after-capture needs a finite schedule: --repeat 0 records until the end")
