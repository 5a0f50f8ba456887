"""Records how it was run (argv, __name__, sys.path[0], cwd) into --report FILE, trains a few
steps, then exits with --exit-code N."""

import argparse
import json
import os
import sys

from tiny_training import train

parser = argparse.ArgumentParser()
parser.add_argument("--report", required=True)
parser.add_argument("--exit-code", type=int, default=0)
parser.add_argument("--steps", type=int, default=6)
parser.add_argument("rest", nargs="*")
args, _unknown = parser.parse_known_args()

with open(args.report, "w") as out:
    json.dump(
        {"argv": sys.argv, "name": __name__, "path0": sys.path[0], "cwd": os.getcwd(), "file": __file__}, out
    )
train(args.steps)
sys.exit(args.exit_code)
