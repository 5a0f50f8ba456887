"""What if: the trace replayed, and each finding's action applied to it (docs/whatif.md).

`graph.build_graph` turns one rank's trace into a dependency graph, `replay.replay` re-times it,
`transform.apply` changes it as a finding's `Remedy` says, `predict.predict` gives the measured
and replayed window and steps and each finding's predicted saving; `job.replay_job` replays the
ranks of a job together, joined at their collectives.
"""

from traceanalyze.whatif.graph import Graph, build_graph
from traceanalyze.whatif.job import JobGraph, JobTiming, job_graph, replay_job
from traceanalyze.whatif.predict import (
    REPLAY_SCHEMA,
    STEPS_SCHEMA,
    RankPrediction,
    Saving,
    Span,
    job_replay,
    predict,
    replay_frame,
    saving_bounds,
    with_notes,
)
from traceanalyze.whatif.replay import Timing, replay
from traceanalyze.whatif.transform import Unmodelled, apply

__all__ = [
    "REPLAY_SCHEMA",
    "STEPS_SCHEMA",
    "Graph",
    "JobGraph",
    "JobTiming",
    "RankPrediction",
    "Saving",
    "Span",
    "Timing",
    "Unmodelled",
    "apply",
    "build_graph",
    "job_graph",
    "job_replay",
    "predict",
    "replay",
    "replay_frame",
    "replay_job",
    "saving_bounds",
    "with_notes",
]
