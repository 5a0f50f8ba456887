"""`run_capture`: runs a script under `torch.profiler` and writes its trace(s) and `run.json`."""

from __future__ import annotations

import json
import os
import shlex
import time
import warnings
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from traceanalyze.capture.environment import (
    cpu_name,
    gpu_backend,
    gpu_name,
    import_torch,
    quiet_kineto,
    rank_of,
    traceanalyze_version,
    versions,
)
from traceanalyze.capture.options import CaptureOptions
from traceanalyze.capture.redact import redact_arguments, redact_text, secret_values
from traceanalyze.capture.script import as_main, resolve_script, run_as_main, script_traceback, system_exit_code
from traceanalyze.capture.steps import AlarmTimer, StepHooks
from traceanalyze.errors import CaptureError
from traceanalyze.output import atomic_path, write_atomically

RUN_SCHEMA_VERSION = 1
PRIVATE_MODE = 0o600  # run.json and the traces: what a script's run saw (paths, argv, names) is the user's alone
EXIT_INTERRUPTED = 130
EXIT_NOTHING_CAPTURED = CaptureError.exit_code

Outcome = Literal["completed", "exception", "system_exit", "interrupted", "stopped_after_capture"]


class _StopCapture(BaseException):
    """Raised into the script once the recording is written and `--stop-after-capture` asked to
    end the run. A BaseException, so a script's `except Exception:` does not swallow it."""


@dataclass(frozen=True)
class CaptureResult:
    """What a capture produced. `exit_code` is the script's own (0, 1 for an exception, n for
    `SystemExit(n)`, 130 for Ctrl-C), or 2 when the script succeeded but nothing was recorded."""

    exit_code: int
    outcome: Outcome
    traces: tuple[Path, ...]
    run_json: Path
    steps_seen: int
    steps_captured: int
    rank: int | None
    script_stderr: str | None = None  # the script's traceback / exit message, as Python prints it
    messages: tuple[str, ...] = field(default_factory=tuple)  # one-line notes for the user

    @property
    def trace(self) -> Path | None:
        """The main trace file (the first recorded window), if any."""
        return self.traces[0] if self.traces else None

    @property
    def primary_rank(self) -> bool:
        return self.rank in (None, 0)


def run_capture(options: CaptureOptions) -> CaptureResult:
    """Run `options.script` as `__main__` under `torch.profiler` and write the trace.

    Raises `CaptureError` (exit 2) before running anything when the script is missing or not
    Python, or torch cannot be imported; after that, the script's own failures are reported in
    the result (its traceback text and exit code), never raised.

    Examples
    --------
    >>> from traceanalyze.capture import CaptureOptions, run_capture
    >>> result = run_capture(CaptureOptions(script=Path("scripts/examples/mlp_train.py"),
    ...                                     args=("--steps", "6")))  # doctest: +SKIP
    >>> result.steps_captured  # doctest: +SKIP
    3
    """
    with quiet_kineto():
        return _run_capture(options)


def _run_capture(options: CaptureOptions) -> CaptureResult:
    """Run the script under the profiler and write the trace and run.json as one unit.

    Long: the capture's steps (check, environment, profiler, script, exit status, atomic writes)
    in the order they happen, each a few lines that share the same local state."""
    options.check()
    script = resolve_script(options.script)
    torch = import_torch()
    environ = dict(os.environ if options.environ is None else options.environ)
    rank, world_size, local_rank = rank_of(environ)
    cwd = os.getcwd()
    out_dir = Path(options.out_dir).absolute()  # the script may chdir
    try:
        out_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as error:
        raise CaptureError(f"{out_dir}: cannot create the output folder ({error.strerror or error})") from None
    stem = "trace" if rank is None else f"trace_rank{rank}"
    run_name = "run" if rank is None else f"run_rank{rank}"
    started_pid = os.getpid()  # a forked child of the script must not write or report (see _end_forked_child)

    recorder = _Recorder(torch, options, out_dir, stem, gpu=gpu_backend(torch) is not None,
                         record=out_dir / f"{run_name}.json")
    recorder.build()
    hooks = StepHooks(recorder.on_step, region=options.steps_from)
    timer = AlarmTimer(recorder.on_alarm) if options.duration_s is not None else None
    recorder.timer = timer

    started_at = datetime.now(timezone.utc)
    clock = time.perf_counter()
    outcome: Outcome = "completed"
    exit_code = 0
    script_stderr: str | None = None
    try:
        if timer is not None:
            timer.install()
        hooks.install()
        with as_main(script, str(options.script), options.args):
            try:
                recorder.script_running = True
                if timer is None or options.delay_s == 0:
                    recorder.start()
                if timer is not None:
                    timer.arm(options.delay_s or options.duration_s or 0)
                run_as_main(script)
                recorder.script_running = False
            except _StopCapture:
                recorder.script_running = False
                outcome = "stopped_after_capture"
            except SystemExit as error:
                recorder.script_running = False
                outcome = "system_exit"
                exit_code, script_stderr = system_exit_code(error)
            except KeyboardInterrupt as error:
                recorder.script_running = False
                outcome, exit_code, script_stderr = "interrupted", EXIT_INTERRUPTED, script_traceback(error)
            except BaseException as error:  # the script's own failure: report it as Python would
                recorder.script_running = False
                outcome, exit_code, script_stderr = "exception", 1, script_traceback(error)
            finally:
                if timer is not None:
                    timer.remove()
    finally:
        hooks.remove()
        if timer is not None:
            timer.remove()
        recorder.finish()
    wall_s = time.perf_counter() - clock
    if os.getpid() != started_pid:
        _end_forked_child(exit_code, script_stderr)

    secrets = secret_values([*options.command, *options.args], environ)
    messages = [redact_text(message, secrets) for message in (*recorder.errors, *_explain(options, recorder, outcome))]
    if not recorder.traces and exit_code == 0:
        exit_code = EXIT_NOTHING_CAPTURED

    backend = gpu_backend(torch)
    run_info: dict[str, Any] = {
        "schema_version": RUN_SCHEMA_VERSION,
        "tool": "traceanalyze capture",
        "traceanalyze_version": traceanalyze_version(),
        "command": shlex.join(redact_arguments(options.command)) if options.command else None,
        "script": script,
        "argv": redact_arguments([str(options.script), *options.args]),
        "cwd": cwd,
        **versions(torch),
        "device": backend or "cpu",
        "device_name": gpu_name(torch, local_rank) if backend else cpu_name(),
        "activities": ["cpu", "cuda"] if recorder.gpu else ["cpu"],
        "rank": rank,
        "world_size": world_size,
        "local_rank": local_rank,
        "record_shapes": True,
        "with_stack": options.with_stack,
        "profile_memory": options.profile_memory,
        "steps_from": {"kind": "optimizer"} if options.steps_from is None
        else {"kind": "record_function", "name": options.steps_from},
        "schedule": None if options.duration_s is not None else options.schedule.to_dict(),
        "duration": None
        if options.duration_s is None
        else {"delay_s": options.delay_s, "duration_s": options.duration_s},
        "stop_after_capture": options.stop_after_capture,
        "whole_run": recorder.whole_run and bool(recorder.traces),
        "steps_seen": recorder.steps_seen,
        "steps_captured": len(recorder.captured_steps),
        "captured_step_numbers": recorder.captured_steps,
        "traces": [str(path.relative_to(out_dir)) for path in recorder.traces],
        "started_at": started_at.isoformat(timespec="seconds"),
        "wall_s": round(wall_s, 3),
        "exit_status": {
            "code": exit_code,
            "outcome": outcome,
            "script_error": redact_text(_last_line(script_stderr) or "", secrets) or None
            if outcome in ("exception", "interrupted") else None,
        },
        "messages": messages,
    }
    # run.json describes the trace next to it: a run that wrote no trace leaves both as they were
    # and records itself in run.failed.json
    run_json = out_dir / (f"{run_name}.json" if recorder.traces else f"{run_name}.failed.json")
    try:
        write_atomically(run_json, json.dumps(run_info, indent=2) + "\n", mode=PRIVATE_MODE)
    except OSError as error:
        messages.append(f"could not write {run_json}: {error.strerror or error}")

    return CaptureResult(
        exit_code=exit_code,
        outcome=outcome,
        traces=tuple(recorder.traces),
        run_json=run_json,
        steps_seen=recorder.steps_seen,
        steps_captured=len(recorder.captured_steps),
        rank=rank,
        script_stderr=script_stderr,
        messages=tuple(messages),
    )


class _Recorder:
    """Owns the `torch.profiler.profile` object and moves it along as steps end or time passes."""

    def __init__(self, torch: Any, options: CaptureOptions, out_dir: Path, stem: str, *, gpu: bool,
                 record: Path | None = None) -> None:
        self.torch = torch
        self.record = record  # the run.json of this run: a previous one never describes a new trace
        self.options = options
        self.out_dir = out_dir
        self.stem = stem
        self.gpu = gpu
        self.prof: Any = None
        self.timer: AlarmTimer | None = None
        self.started = False
        self.finished = False
        self.busy = False
        self.alarm_pending = False
        self.script_running = False
        self.steps_seen = 0
        self.captured_steps: list[int] = []
        self.cycles = 0
        self.traces: list[Path] = []
        self.empty_windows = 0  # recordings that held no event, hence written nowhere
        self.pid = os.getpid()
        self.errors: list[str] = []
        self.step_span: Any = None
        # Until the first step ends we record everything, so that a script whose steps never come
        # (no optimizer, no --steps-from region) still leaves a trace: of the whole run.
        self.whole_run = options.duration_s is None and options.schedule.first_recorded_step > 0

    def build(self, *, scheduled: bool | None = None) -> None:
        """The profiler: by the step schedule, or (`--duration`, and the whole-run recording that
        lasts until the first step ends) from start() to stop()."""
        from torch.profiler import ProfilerAction, ProfilerActivity, profile, schedule

        self._recording = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)
        self._saving = ProfilerAction.RECORD_AND_SAVE
        activities = [ProfilerActivity.CPU]
        if self.gpu:
            activities.append(ProfilerActivity.CUDA)  # CUPTI on NVIDIA, roctracer on ROCm builds
        if scheduled is None:
            scheduled = self.options.duration_s is None and not self.whole_run
        step_schedule: Any = None  # --duration: we mark the steps ourselves
        if scheduled:
            plan = self.options.schedule
            step_schedule = schedule(wait=plan.wait, warmup=plan.warmup, active=plan.active, repeat=plan.repeat)
        self.prof = profile(
            activities=activities,
            schedule=step_schedule,
            on_trace_ready=None if self.whole_run else self._trace_ready,  # a whole run is written by finish()
            record_shapes=True,
            with_stack=self.options.with_stack,
            profile_memory=self.options.profile_memory,
        )

    def start(self) -> None:
        self.prof.start()
        self.started = True

    def on_step(self) -> None:
        """End of one training step (called from the step hooks, on the script's thread)."""
        self.steps_seen += 1
        if not self.started or self.finished:
            return
        self.busy = True
        try:
            if self.options.duration_s is not None:
                self._mark_step()
            elif self.whole_run:
                self._to_schedule()
            else:
                action = self.prof.current_action
                if action in self._recording:
                    self.captured_steps.append(int(self.prof.step_num))
                    if action == self._saving:
                        self._end_profiler_step()  # so that the wait below lies after the step, not in it
                        self._synchronize()  # the window's last kernels belong in its trace
                with warnings.catch_warnings():  # each --repeat window is its own file, as intended
                    warnings.filterwarnings("ignore", message=".*Profiler clears events at the end of each cycle")
                    self.prof.step()
        except Exception as error:  # never break the user's training because of the profiler
            self.errors.append(f"profiling stopped at step {self.steps_seen}: {type(error).__name__}: {error}")
            self.finished = True
        finally:
            self.busy = False
        if self.alarm_pending:
            self.alarm_pending = False
            self.on_alarm()
        if (
            self.options.stop_after_capture
            and self.options.duration_s is None
            and self.cycles >= self.options.schedule.repeat
            and self.script_running
        ):
            raise _StopCapture()

    def _to_schedule(self) -> None:
        """The first step has ended: drop the whole-run recording (it held setup and step 0, which
        the schedule skips anyway) and hand over to the step schedule, at step 1."""
        self.prof.stop()
        self.whole_run = False
        self.build(scheduled=True)
        self.prof.start()  # at step 0, which has just ended:
        self.prof.step()  # the schedule's step 1 starts now

    def on_alarm(self) -> None:
        """`--duration`: the delay or the window has elapsed (SIGALRM, on the script's thread)."""
        if self.busy:
            self.alarm_pending = True
            return
        if self.finished:
            return
        if not self.started:
            self.start()
            if self.timer is not None and self.options.duration_s is not None:
                self.timer.arm(self.options.duration_s)
            return
        self.finish()
        if self.options.stop_after_capture and self.script_running:
            raise _StopCapture()

    def finish(self) -> None:
        """Stop the profiler; a window still recording is written (the trace of what ran)."""
        if not self.started or self.finished or os.getpid() != self.pid:
            return
        self.finished = True
        self.busy = True
        try:
            if self.step_span is not None:  # --duration: the step cut by the window's end
                self.step_span.__exit__(None, None, None)
                self.step_span = None
            self._end_profiler_step()
            self._synchronize()
            self.prof.__exit__(None, None, None)
            if self.whole_run:
                self._trace_ready(self.prof)
        except Exception as error:
            self.errors.append(f"could not finish the trace: {type(error).__name__}: {error}")
        finally:
            self.busy = False

    def _mark_step(self) -> None:
        """--duration: `ProfilerStep#N` spans between step ends seen inside the window (the profiler
        would otherwise label the whole window as one step, even for a script with no steps)."""
        from torch.autograd.profiler import record_function

        if self.step_span is not None:
            self.step_span.__exit__(None, None, None)
            self.captured_steps.append(self.steps_seen - 1)
        self.step_span = record_function(f"ProfilerStep#{self.steps_seen}")
        self.step_span.__enter__()

    def _end_profiler_step(self) -> None:
        """Close the profiler's open `ProfilerStep#N` span now (`profile.step()` and `stop()` close
        it only when set): the synchronize that follows is capture's own wait for the window's
        last kernels, and inside the step it would read as the script's sync (a report's
        `sync-in-step`, a last step hundreds of ms long)."""
        span = getattr(self.prof, "step_rec_fn", None)
        if span is not None:
            span.__exit__(None, None, None)
            self.prof.step_rec_fn = None

    def _synchronize(self) -> None:
        if self.gpu and self.torch.cuda.is_initialized():
            try:
                self.torch.cuda.synchronize()
            except Exception:  # e.g. after a device-side assert: keep what was recorded
                pass

    def _trace_ready(self, prof: Any) -> None:
        self.cycles += 1
        if self.cycles == 1:
            path = self.out_dir / f"{self.stem}.json.gz"
        else:  # later windows of --repeat N, kept apart so the folder still reads as one run
            path = self.out_dir / "cycles" / f"{self.stem}_cycle{self.cycles}.json.gz"
        if not _holds_events(prof):  # never replace a previous trace with an empty one
            self.empty_windows += 1
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path, mode=PRIVATE_MODE) as temporary:  # a failed export leaves the previous trace
            prof.export_chrome_trace(str(temporary))
            if self.cycles == 1 and self.record is not None:
                # the trace and run.json are one unit: the previous run's record goes before the new
                # trace lands, so a run killed before its own run.json (os._exit, SIGTERM) leaves
                # the new trace alone, never beside a record of another run
                self.record.unlink(missing_ok=True)
        self.traces.append(path)


def _holds_events(prof: Any) -> bool:
    """Whether the profiler recorded at least one event (an op, a kernel, a region); True when
    this torch cannot say."""
    try:
        return len(prof.profiler.kineto_results.events()) > 0
    except Exception:
        return True


def _end_forked_child(exit_code: int, script_stderr: str | None) -> None:
    """The script forked and this is the child, leaving the script (it returned, raised or called
    `sys.exit`): end the process as the script would have, without writing a trace or run.json,
    or printing a report (the profiler and the output belong to the process that started them).
    The child runs its `atexit` handlers and flushes its output, then leaves with `os._exit`, as
    `multiprocessing` children do: the C++ teardown of the profiler state it inherited would abort
    (`std::system_error`) in a process whose profiler threads do not exist."""
    import atexit
    import sys

    if script_stderr:
        sys.stderr.write(script_stderr if script_stderr.endswith("\n") else script_stderr + "\n")
    try:
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(exit_code & 0xFF if exit_code >= 0 else 1)


def _explain(options: CaptureOptions, recorder: _Recorder, outcome: Outcome) -> list[str]:
    """One-line notes on what was (not) recorded and why."""
    if recorder.traces:
        where = ", ".join(str(path) for path in recorder.traces)
        captured = len(recorder.captured_steps)
        if outcome in ("exception", "interrupted"):
            return [f"the script stopped early; the trace of what ran is in {where}"]
        if recorder.whole_run:
            seen = ("no optimizer step" if options.steps_from is None
                    else f"no record_function region named {options.steps_from!r}")
            return [f"{seen} was seen, so the trace covers the whole run ({where}); --steps-from NAME or "
                    "--duration SECONDS choose a window"]
        notes = [f"trace of {captured} step{'s' if captured != 1 else ''} written to {where}"]
        if options.duration_s is None and captured < options.schedule.active:
            notes.append(
                f"the script ended after {recorder.steps_seen} steps, so only {captured} of the "
                f"{options.schedule.active} active steps were recorded"
            )
        return notes
    if recorder.empty_windows:
        return ["nothing was recorded: no torch operation ran while the profiler was on; no trace written "
                "(a trace already in the output folder is kept)"]
    if outcome in ("exception", "interrupted"):
        return [f"the script stopped at step {recorder.steps_seen}, before recording started; no trace written"]
    if options.duration_s is not None:
        return ["nothing was recorded (the script ended before the --delay elapsed)"]
    first = options.schedule.first_recorded_step
    return [
        f"the script ended after {recorder.steps_seen} steps, before step {first} where recording "
        f"starts (--wait {options.schedule.wait} --warmup {options.schedule.warmup}); nothing was recorded"
    ]


def _last_line(text: str | None) -> str | None:
    if not text:
        return None
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else None
