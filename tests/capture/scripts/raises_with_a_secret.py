"""Trains two steps, then fails with an error that quotes what it was given: the --api-key value,
an Authorization header and a URL with credentials (as a script's own error may)."""

import sys

from tiny_training import train

key = sys.argv[sys.argv.index("--api-key") + 1]
train(6)
raise ValueError(f"rejected key {key} for https://alice:hunter2pw@example.org/x (Authorization: Bearer abc.def.ghi)")
