"""Runs `report`, `info`, `gate` and `diff` on one input, in this one process, and prints for each
what a user would see: exit code, stderr, seconds, and this process's peak RSS so far (MB), as one
JSON line. The hostile tests start it as a child so that its memory is measured on its own,
and so that one case costs one interpreter start, not four.

    python run_commands.py INPUT GOOD_TRACE [extra option …]
"""

from __future__ import annotations

import contextlib
import io
import json
import resource
import sys
import time
import traceback


def run(argv: list[str]) -> dict:
    from traceanalyze.cli import main

    stderr, stdout = io.StringIO(), io.StringIO()
    started = time.perf_counter()
    code = 0
    with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(stdout):
        sys.argv = ["traceanalyze", *argv]
        try:
            main()
        except SystemExit as done:
            code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
        except BaseException:  # what a user would see as a traceback
            traceback.print_exc(file=stderr)
            code = 1
    return {"argv": argv, "exit": code, "stderr": stderr.getvalue(), "seconds": time.perf_counter() - started,
            "peak_mb": peak_mb()}


def peak_mb() -> float:
    """This process's peak resident memory so far: VmHWM, the high-water mark of its own address
    space (`ru_maxrss` would carry over the parent's from before the exec, on Linux)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    path, good, *extra = sys.argv[1:]
    commands = [
        ["report", path, *extra],
        ["info", path, *extra],
        ["gate", path, "--max-idle-fraction", "1", *extra],
        ["diff", good, path, *extra],
    ]
    for argv in commands:
        print(json.dumps(run(argv)), file=sys.__stdout__, flush=True)


if __name__ == "__main__":
    main()
