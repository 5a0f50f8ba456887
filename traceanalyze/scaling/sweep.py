"""`traceanalyze capture SCRIPT --sweep "--batch-size=8,16,32"`: the script captured once per value,
each in its own process (an out-of-memory or a crash at one size loses none of the others), each
trace kept under OUT_DIR/<flag>=<value>/, then the scaling report over those that succeeded,
also written as OUT_DIR/scaling.json (docs/scaling.md#capture---sweep)."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from traceanalyze.errors import ConfigError

_SPEC = re.compile(r"^(-{1,2}[A-Za-z0-9][A-Za-z0-9_.-]*)(=|\s+)(\S.*)$", re.DOTALL)
_SAFE = re.compile(r"[^A-Za-z0-9._+=-]")
# capture options passed on to each size's capture: option name → flag
PASSED_ON = {"wait": "--wait", "warmup": "--warmup", "active": "--active", "repeat": "--repeat",
             "steps_from": "--steps-from", "duration": "--duration", "delay": "--delay",
             "stop_after_capture": "--stop-after-capture", "with_stack": "--with-stack",
             "profile_memory": "--profile-memory"}


@dataclass(frozen=True)
class SweepSpec:
    """The script's flag, its values, and whether they were joined with `=` (`--batch-size=8`) or
    given as the next argument (`--batch-size 8`)."""

    flag: str
    values: tuple[str, ...]
    joined: bool

    def arguments(self, value: str) -> list[str]:
        return [f"{self.flag}={value}"] if self.joined else [self.flag, value]

    def folder(self, value: str) -> str:
        """The folder name of one value's capture: `batch-size=8`."""
        return _SAFE.sub("_", f"{self.flag.lstrip('-')}={value}")


def parse_sweep(text: str) -> SweepSpec:
    """`"--batch-size=8,16,32"` (or `"--batch-size 8,16,32"`) → `SweepSpec`; `ConfigError` otherwise.

    >>> parse_sweep("--batch-size=8,16,32")
    SweepSpec(flag='--batch-size', values=('8', '16', '32'), joined=True)
    """
    match = _SPEC.match(text.strip())
    if match is None:
        raise ConfigError("--sweep must be the script's flag and its values, like "
                          f"\"--batch-size=8,16,32\"; got {text!r}")
    values = tuple(value.strip() for value in match.group(3).split(","))
    if len(values) < 2 or any(not value for value in values) or len(set(values)) < len(values):
        raise ConfigError(f"--sweep needs two or more different values separated by commas, got {match.group(3)!r}")
    spec = SweepSpec(match.group(1), values, match.group(2) == "=")
    if len({spec.folder(value) for value in values}) < len(values):
        raise ConfigError(f"--sweep values {values!r} name the same folder")
    return spec


@dataclass(frozen=True)
class SweepRun:
    value: str
    folder: Path
    exit_code: int

    @property
    def trace(self) -> Path | None:
        path = self.folder / "trace.json.gz"
        return path if self.exit_code == 0 and path.is_file() else None


def capture_flags(options: Mapping[str, object]) -> list[str]:
    """The capture options given to `capture`, as flags for each size's capture (defaults and unset
    options left out: each capture then uses the same defaults)."""
    flags: list[str] = []
    for name, flag in PASSED_ON.items():
        value = options.get(name)
        if value is None or value is False:
            continue
        flags += [flag] if value is True else [flag, str(value)]
    return flags


def run_sweep(spec: SweepSpec, script: Path, script_args: Sequence[str], out_dir: Path, flags: Sequence[str], *,
              say: Callable[[str], None]) -> list[SweepRun]:
    """Capture `script` once per value of `spec`, each in a child `python -m traceanalyze capture`."""
    runs = []
    for index, value in enumerate(spec.values, 1):
        folder = out_dir / spec.folder(value)
        say(f"sweep {index}/{len(spec.values)}: {' '.join(spec.arguments(value))} → {folder}")
        command = [sys.executable, "-m", "traceanalyze", "capture", "--no-report", "-o", str(folder), *flags,
                   str(script), "--", *script_args, *spec.arguments(value)]
        runs.append(SweepRun(value, folder, subprocess.run(command, check=False).returncode))
    return runs
