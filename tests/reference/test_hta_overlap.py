"""Comm-comp overlap against HTA's `get_comm_comp_overlap` on the 4-rank DLRM folder (HTA drops
nothing there: one ProfilerStep name). docs/hta.md explains where the numbers differ."""

from __future__ import annotations

import logging

import pytest

import traceanalyze
from shared_traces import SHARED_TRACES_DIR

DLRM = SHARED_TRACES_DIR / "param_v100_dlrm_4ranks"


@pytest.mark.skipif(not DLRM.is_dir(), reason=f"{DLRM} is absent (the shared traces sit next to the repository)")
def test_overlap_equals_hta_on_dlrm():
    pytest.importorskip("hta", reason="HolisticTraceAnalysis is a dev dependency")
    from hta.configs.config import logger as hta_logger
    from hta.trace_analysis import TraceAnalysis

    level = hta_logger.level
    hta_logger.setLevel(logging.ERROR)
    try:
        hta = TraceAnalysis(trace_dir=str(DLRM)).get_comm_comp_overlap(visualize=False)
    finally:
        hta_logger.setLevel(level)
    theirs = dict(zip(hta["rank"].tolist(), hta["comp_comm_overlap_pctg"].tolist()))
    ours = traceanalyze.analyze(DLRM).job.overlap
    assert sorted(theirs) == ours["rank"].to_list()
    for rank, fraction in ours.select("rank", "overlap_fraction").iter_rows():
        assert round(100 * fraction, 2) == pytest.approx(theirs[rank], abs=1e-9)
