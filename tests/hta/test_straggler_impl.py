"""`get_potential_stragglers(straggler_identification_impl=...)` against HolisticTraceAnalysis
0.5.0 on the 4-rank DLRM job: HTA's own straggler function, and functions a notebook might write,
given our frame, name the ranks HTA names when given its own."""

from __future__ import annotations

import logging

import pytest
from shared_traces import SHARED_TRACES_DIR

from traceanalyze.hta import TraceAnalysis

pytest.importorskip("hta", reason="HolisticTraceAnalysis (the dev extra) is not installed")
pytestmark = pytest.mark.filterwarnings("ignore")
RANKS_FOLDER = SHARED_TRACES_DIR / "param_v100_dlrm_4ranks"


def gpu_events_per_rank(df, symbols, num_candidates, visualize):
    """A rank's GPU-side events in the chosen steps (`stream` > 0)."""
    return df[df["stream"] > 0].groupby("rank").size()


def nccl_time_per_rank(df, symbols, num_candidates, visualize):
    """A rank's `ncclKernel*` time, the names found through the symbol table as HTA's own rule does."""
    ids = [symbols.get_sym_id_map()[s] for s in symbols.get_sym_table() if s.startswith("ncclKernel")]
    return df[df["name"].isin(ids)].groupby("rank")["dur"].sum()


@pytest.fixture(scope="module")
def analyzers():
    if not RANKS_FOLDER.is_dir():
        pytest.skip(f"real traces not found: {RANKS_FOLDER}")
    from hta.configs.config import logger as hta_logger
    from hta.trace_analysis import TraceAnalysis as HtaTraceAnalysis

    hta_logger.setLevel(logging.ERROR)
    theirs = HtaTraceAnalysis(trace_dir=str(RANKS_FOLDER))
    return theirs, TraceAnalysis(trace_dir=str(RANKS_FOLDER), hta_rounding=True), TraceAnalysis(
        trace_dir=str(RANKS_FOLDER))


@pytest.mark.parametrize("num_candidates", [1, 2, 3])
def test_htas_own_rule_on_our_frame(analyzers, num_candidates):
    from hta.analyzers.straggler import find_stragglers_with_late_start_comm_kernels as late_start

    theirs, rounded, ours = analyzers
    expected = theirs.get_potential_stragglers(num_candidates=num_candidates)
    assert len(expected) == num_candidates
    for analyzer in (rounded, ours):
        assert analyzer.get_potential_stragglers(num_candidates=num_candidates,
                                                 straggler_identification_impl=late_start) == expected


@pytest.mark.parametrize("rule", [gpu_events_per_rank, nccl_time_per_rank])
def test_a_notebooks_rule_sees_htas_events(analyzers, rule):
    theirs, rounded, _ = analyzers
    frames = []

    def keep(df, symbols, num_candidates, visualize):
        frames.append(rule(df, symbols, num_candidates, visualize))
        return frames[-1]

    assert rounded.get_potential_stragglers(num_candidates=4, straggler_identification_impl=keep) == \
        theirs.get_potential_stragglers(num_candidates=4, straggler_identification_impl=keep)
    ours, reference = frames
    assert ours.to_dict() == pytest.approx(reference.to_dict(), rel=1e-9)
    assert len(set(reference.tolist())) > 1  # the ranks differ: the order is the rule's, not the ranks'
