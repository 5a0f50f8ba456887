"""Trains, then fails inside the recorded window (at step --fail-at) with a ValueError."""

import sys

from tiny_training import train


def check_batch(step: int) -> None:
    if step == FAIL_AT:
        raise ValueError(f"bad batch at step {step}")


FAIL_AT = int(sys.argv[sys.argv.index("--fail-at") + 1]) if "--fail-at" in sys.argv else 3

if __name__ == "__main__":
    train(10, on_step=check_batch)
