"""Trains a few steps; at step 2 forks a child that runs a torch op and leaves through
sys.exit(0) (the way a worker or a helper process launched with os.fork may end)."""

import os
import sys

from tiny_training import train


def fork_at_step_two(step: int) -> None:
    if step != 2:
        return
    child = os.fork()
    if child == 0:
        import torch

        torch.ones(4).add_(1)
        sys.exit(0)
    os.waitpid(child, 0)


train(6, on_step=fork_at_step_two)
