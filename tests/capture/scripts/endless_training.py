"""Trains for --steps steps (default 100000: minutes), for --stop-after-capture."""

import sys

from tiny_training import train

steps = int(sys.argv[sys.argv.index("--steps") + 1]) if "--steps" in sys.argv else 100_000
train(steps)
