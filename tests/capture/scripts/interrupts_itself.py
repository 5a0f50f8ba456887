"""Sends itself SIGINT (as Ctrl-C does) inside the recorded window."""

import os
import signal

from tiny_training import train


def maybe_interrupt(step: int) -> None:
    if step == 3:
        os.kill(os.getpid(), signal.SIGINT)


train(10, on_step=maybe_interrupt)
