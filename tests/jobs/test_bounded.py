"""A folder's ranks leave their workers bounded (`pipeline.rank.bounded`): the text formats read
nothing else, so the terminal, Markdown and JSON reports are the same as from the full ranks, and
what the parent holds per rank does not grow with the rank's number of ops."""

from __future__ import annotations

import dataclasses

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import multirank as mr
import traceanalyze
from shared_traces import SHARED_TRACES_DIR
from traceanalyze.analysis import attribution
from traceanalyze.renderers.jsonout import render_json
from traceanalyze.renderers.markdown import render_markdown
from traceanalyze.renderers.terminal import render_terminal
from traceanalyze import RunOptions

DLRM = SHARED_TRACES_DIR / "param_v100_dlrm_4ranks"


def _every_rank(report):
    return dataclasses.replace(report, options=dataclasses.replace(report.options, details=True))


@pytest.fixture(scope="module", params=["synthetic job", "dlrm"])
def reports(request, tmp_path_factory):
    if request.param == "dlrm":
        if not DLRM.is_dir():
            pytest.skip(f"{DLRM} is absent (the shared traces sit next to the repository)")
        folder = DLRM
    else:
        folder = mr.write_job(tmp_path_factory.mktemp("job"))
    return (traceanalyze.analyze(folder, run=RunOptions(workers=1)),
            traceanalyze.analyze(folder, run=RunOptions(workers=1, rank_frames="bounded")),
            traceanalyze.analyze(folder, run=RunOptions(workers=1, rank_frames="text")))


@pytest.mark.parametrize("render", [render_json, render_markdown, lambda r: render_terminal(_every_rank(r), width=100)],
                         ids=["json", "markdown", "terminal --details"])
def test_text_formats_are_the_same_from_bounded_ranks(reports, render):
    full, small, text = reports
    assert render(small) == render(full) == render(text)


def test_text_ranks_carry_no_chart_inputs_and_refuse_html(reports):
    from traceanalyze.renderers.html import render_html

    _, small, text = reports
    assert all(rank.charts is not None for rank in small.ranks)
    assert all(rank.charts is None for rank in text.ranks)
    with pytest.raises(ValueError, match="rank_frames='text'"):
        render_html(text)


def test_bounded_rank_keeps_no_per_op_rows(reports):
    full, small, _ = reports
    for whole, kept in zip(full.ranks, small.ranks):
        assert kept.roofline.is_empty() and kept.small_kernels.is_empty() and whole.roofline.height > 0
        assert_frame_equal(kept.gaps, whole.gaps.head(full.options.max_gaps))
        assert kept.gap_count == whole.gap_count == whole.gaps.height
        # only the launches the pooled statistics read: kernels, memcpy and memset, clock skew left out
        assert kept.latency.height == whole.latency.filter(
            ~pl.col("skewed") & pl.col("kind").cast(pl.String).is_in(["kernel", "memcpy", "memset"])).height
        assert kept.latency.columns == ["skewed", "kind", "launch_to_start_ns", "queue_wait_ns", "launch_overhead_ns",
                                        "launch_cpu_ns", "launch_delay_ns"]


def test_pooled_kernels_from_parts_equal_the_pooled_rows(reports):
    full, _, _ = reports
    rows = pl.concat([r.roofline for r in full.ranks], how="vertical_relaxed")
    expected = attribution.kernels_by_name(rows)
    # float sums are summed per rank first: equal to the last digits, counts and times exactly
    assert_frame_equal(full.kernels, expected, check_exact=False, rel_tol=1e-12)
    assert full.kernels.select("name", "bound", "count",
                               "total_ns").equals(expected.select("name", "bound", "count", "total_ns"))
    assert_frame_equal(full.ops, attribution.kernels_by_op(rows), check_exact=False, rel_tol=1e-12)
