"""Trains enough steps for the trace to be written, then leaves with os._exit (as a killed run,
or a script that ends that way): capture never gets to write its run.json."""

import os

from tiny_training import train

train(8)
os._exit(0)
