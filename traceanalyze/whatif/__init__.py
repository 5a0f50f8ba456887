"""What if: the trace replayed, and each finding's action applied to it (docs/whatif.md).

`graph.build_graph` turns one rank's trace into a dependency graph, `replay.replay` re-times it,
`transform.apply` changes it as a `Remedy` says, `predict` gives the measured and replayed window
and steps and each finding's predicted saving.
"""

from traceanalyze.whatif.graph import Graph, build_graph
from traceanalyze.whatif.replay import Timing, replay

__all__ = ["Graph", "Timing", "build_graph", "replay"]
