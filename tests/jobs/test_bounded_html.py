"""The HTML report of a folder from bounded ranks (`pipeline.rank.bounded`): each rank's worker sends
what its charts draw (`report.chart_inputs`) instead of every kernel, gap and launch, the page is
the same as from the full ranks, and what a rank sends does not grow with its kernels and gaps."""

from __future__ import annotations

import dataclasses
import pickle
import re
from html import unescape

import polars as pl
import pytest

import traceanalyze
from builder import TraceBuilder
from shared_traces import SHARED_TRACES_DIR
from traceanalyze.pipeline.mapreduce import analyse_file
from traceanalyze.renderers import plots
from traceanalyze.renderers.html import render_html
from traceanalyze.report.model import ReportOptions
from traceanalyze.units import format_duration_ns
from traceanalyze import RunOptions

DLRM = SHARED_TRACES_DIR / "param_v100_dlrm_4ranks"


@pytest.fixture(scope="module")
def dlrm():
    if not DLRM.is_dir():
        pytest.skip(f"{DLRM} is absent (the shared traces sit next to the repository)")
    full = traceanalyze.analyze(DLRM, run=RunOptions(workers=1))
    small = traceanalyze.analyze(DLRM, run=RunOptions(workers=1, rank_frames="bounded"))
    return full, small, render_html(full), render_html(small)


def _tips(page: str, chart: str) -> list[list[str]]:
    """The tooltips of the marks of every `<svg data-chart=chart>` of the page, chart by chart."""
    svgs = re.findall(rf'<svg[^>]*data-chart="{chart}"[^>]*>(.*?)</svg>', page, flags=re.S)
    return [[unescape(t) for t in re.findall(r'class="mark"[^>]*><title>(.*?)</title>', svg, flags=re.S)]
            for svg in svgs]


def test_dlrm_html_is_the_same_from_bounded_ranks(dlrm):
    full, small, full_page, small_page = dlrm
    assert small_page == full_page
    for whole, kept in zip(full.ranks, small.ranks):  # what the charts read is not what the rank kept
        assert kept.roofline.is_empty() and whole.roofline.height > 0
        assert kept.gaps.height == full.options.max_gaps < whole.gaps.height


def test_dlrm_idle_by_cause_counts_every_gap_not_the_kept_ones(dlrm):
    full, small, _, page = dlrm
    per_rank = _tips(page, "causes")
    assert len(per_rank) == len(full.ranks) == 4
    for whole, kept, tips in zip(full.ranks, small.ranks, per_rank):
        totals = whole.gaps.group_by("cause").agg(pl.col("duration_ns").sum())
        window = format_duration_ns(whole.gaps["duration_ns"].sum())
        expected = {f"idle time — {cause}: " for cause in totals["cause"].cast(pl.String)}
        assert {t.split(": ")[0] + ": " for t in tips} == expected
        for cause, ns in totals.iter_rows():
            (tip,) = [t for t in tips if t.startswith(f"idle time — {cause}: ")]
            assert tip.endswith(f"({format_duration_ns(ns)} of {window})")
        # the rank kept only its longest gaps: their total is less than the chart's
        assert kept.gaps["duration_ns"].sum() < whole.gaps["duration_ns"].sum()


def test_dlrm_latency_histogram_counts_every_launch(dlrm):
    full, small, _, page = dlrm
    for whole, kept, tips in zip(full.ranks, small.ranks, _tips(page, "latency")):
        counted = sum(int(re.search(r": (\d+) in ", t).group(1)) for t in tips)
        launches = whole.latency.filter(~pl.col("skewed") & pl.col("launch_to_start_ns").is_not_null())
        assert counted == launches.height == kept.charts.launches > 0


def test_dlrm_timeline_draws_every_kernel_of_a_stream(dlrm):
    full, _, _, page = dlrm
    timelines = _tips(page, "timeline")
    assert len(timelines) == 4
    for whole, tips in zip(full.ranks, timelines):
        kernels = whole.roofline.height + whole.gaps.height
        if kernels <= plots.EXACT_TIMELINE_MARKS:  # one mark per kernel and per gap
            assert len(tips) == kernels
        else:  # binned: the marks' interval counts add up to every kernel and gap drawn
            drawn = sum(int(n) for t in tips for n in re.findall(r"\((\d+) intervals", t))
            assert drawn >= kernels


def _rank_file(tmp_path, kernels: int):
    """One rank: `kernels` kernels of 3 names on one stream, 4 µs each, 1 µs and 10 µs apart in
    turn (idle gaps of two causes in every pixel of the timeline, from 3,000 kernels on): 10× the
    kernels is 10× the gaps and launches."""
    b = TraceBuilder(rank=0, world_size=1)
    names = ("ampere_sgemm_128x64_nn", "vectorized_elementwise_kernel", "reduce_kernel")
    t = 0.0
    for i in range(kernels):
        t += 14.0 if i % 2 else 5.0
        b.launch_kernel(launch_us=t - 3, launch_dur_us=2, start_us=t, dur_us=4, name=names[i % 3])
    return b.write(tmp_path / f"rank0_{kernels}.json")


def _sizes(path):
    options = ReportOptions()
    full = analyse_file(str(path), options)
    kept = analyse_file(str(path), dataclasses.replace(options, rank_frames="bounded"))
    # the launch latencies the pooled percentiles read stay per launch (docs/performance.md)
    without_launches = dataclasses.replace(kept, latency=kept.latency.clear())
    return len(pickle.dumps(full)), len(pickle.dumps(without_launches)), len(pickle.dumps(kept.charts)), kept


def test_what_a_rank_sends_does_not_grow_with_its_kernels(tmp_path):
    full_small, sent_small, charts_small, small = _sizes(_rank_file(tmp_path, 3_000))
    full_big, sent_big, charts_big, big = _sizes(_rank_file(tmp_path, 30_000))
    assert small.charts.timeline_binned and big.charts.timeline_binned
    assert big.gap_count == 30_000 - 1 and small.gap_count == 3_000 - 1  # the GPU idles between kernels
    assert big.charts.launches == 10 * small.charts.launches
    assert full_big > 8 * full_small  # the full frames grow with the kernels
    assert abs(charts_big - charts_small) < 0.01 * charts_small
    assert abs(sent_big - sent_small) < 0.01 * sent_small
    for timeline in big.charts.timelines:  # at most a row per pixel bin and category, whatever the kernels
        for row in timeline.rows:
            assert row.intervals.is_empty()
            assert row.bins.height <= plots.MAX_MARKS // 2 * row.bins["category"].n_unique()
