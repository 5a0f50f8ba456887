"""Dies in argument parsing (exit 2) before running any torch op: a typo on the command line."""

import argparse

import torch  # noqa: F401  (imported like any training script, but never used)

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=6)
parser.parse_args()
