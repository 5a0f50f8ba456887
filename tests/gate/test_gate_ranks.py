"""The gate judges every rank of a job (the worst rank by default, named), or the pool with
`--ranks pooled`; and the wait and exposed-communication budgets. Exact numbers from the
synthetic job of tests/multirank.py."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import multirank as mr
from shared_traces import SHARED_TRACES_DIR
from traceanalyze.cli import app

runner = CliRunner()
DLRM = SHARED_TRACES_DIR / "param_v100_dlrm_4ranks"


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return mr.write_job(tmp_path_factory.mktemp("job"))


def _verdict(*args):
    result = runner.invoke(app, ["gate", *map(str, args), "--format", "json"])
    return result.exit_code, json.loads(result.output)


def test_wait_fraction_fails_on_a_waiting_rank(folder):
    # ranks 0, 1, 3 wait 5 ms of their 20 ms step 2: per step 0, 0.25, 0; median 0, max 0.25
    code, verdict = _verdict(folder, "--max-wait-fraction", "0.2", "--statistic", "max")
    check = verdict["checks"][0]
    assert code == 1 and check["status"] == "fail"
    assert check["measured"] == pytest.approx(mr.DELAY_US / mr.STEP_US)
    assert check["rank"] == 0 and check["ranks_judged"] == mr.RANKS  # the lowest of the equally bad ranks
    assert check["message"].startswith("rank 0: collective wait fraction 25.00%")
    code, pooled = _verdict(folder, "--max-wait-fraction", "0.2", "--statistic", "max", "--ranks", "pooled")
    assert code == 0 and pooled["checks"][0]["rank"] is None
    assert pooled["checks"][0]["measured"] == pytest.approx(3 * mr.DELAY_US / (mr.RANKS * mr.STEP_US))


def test_exposed_comm(folder):
    # exposed collective time per 20 ms step: 2 ms (7 ms in step 2 for those who waited 5 ms);
    # rank 0 hides 1 ms of step 1's behind a compute kernel. Means: ranks 1 and 3 (2+7+2)/60,
    # rank 0 (1+7+2)/60, the straggler 6/60
    code, verdict = _verdict(folder, "--max-exposed-comm", "0.15", "--statistic", "mean")
    check = verdict["checks"][0]
    assert code == 1 and check["rank"] == 1  # ranks 1 and 3 tie: the lowest is named
    step = mr.STEP_US
    assert check["measured"] == pytest.approx((2 * mr.TRANSFER_US + mr.TRANSFER_US + mr.DELAY_US) / (3 * step))
    code, verdict = _verdict(folder, "--max-exposed-comm", "0.19", "--statistic", "mean")
    assert code == 0 and verdict["checks"][0]["status"] == "pass" and verdict["checks"][0]["rank"] == 1


def test_idle_fraction_judges_the_worst_rank(folder):
    # per step (docs/metrics.md, per-step idle): a rank's step-s window runs from its first GPU op
    # in the step (its compute kernel, 20 µs in, later for the straggler in step 2) to its first
    # in step s+1 (the last: to its last op's end); busy: the compute kernel and its all-reduce
    # (rank 0's extra kernel runs inside its first). The budget judges the median step.
    import statistics

    def first_op(r, s):
        return mr.step_start(s) + 20 + (mr.DELAY_US if (r, s) == (mr.STRAGGLER, mr.DELAY_STEP) else 0)

    def window(r, s):
        return (first_op(r, s + 1) if s < mr.STEPS else mr.collective_end(s)) - first_op(r, s)

    def idle(r, s):
        return window(r, s) - mr.COMPUTE_US - (mr.collective_end(s) - mr.arrival(r, s))

    steps, ranks = range(1, mr.STEPS + 1), range(mr.RANKS)
    per_rank = {r: statistics.median(idle(r, s) / window(r, s) for s in steps) for r in ranks}
    pooled = statistics.median(sum(idle(r, s) for r in ranks) / sum(window(r, s) for r in ranks) for s in steps)
    assert max(per_rank, key=per_rank.get) == mr.STRAGGLER and per_rank[mr.STRAGGLER] > 0.75 > pooled
    code, verdict = _verdict(folder, "--max-idle-fraction", "0.75")
    check = verdict["checks"][0]
    assert code == 1 and check["rank"] == mr.STRAGGLER and check["ranks_judged"] == mr.RANKS
    assert check["measured"] == pytest.approx(per_rank[mr.STRAGGLER], rel=1e-12)  # 12 of its 15 ms step 2
    code, verdict = _verdict(folder, "--max-idle-fraction", "0.75", "--ranks", "pooled")
    assert code == 0 and verdict["checks"][0]["rank"] is None
    assert verdict["checks"][0]["measured"] == pytest.approx(pooled, rel=1e-12)


@pytest.mark.skipif(not DLRM.is_dir(), reason=f"{DLRM} is absent (the shared traces sit next to the repository)")
def test_dlrm_idle_budget_breaks_on_rank_2():
    code, verdict = _verdict(DLRM, "--max-idle-fraction", "0.5", "--allow-unreliable")
    check = verdict["checks"][0]
    assert code == 1 and check["rank"] == 2 and check["measured"] > 0.6
    code, pooled = _verdict(DLRM, "--max-idle-fraction", "0.5", "--allow-unreliable", "--ranks", "pooled")
    assert code == 0 and pooled["checks"][0]["measured"] < 0.5


def test_bad_rank_mode_is_refused(folder):
    result = runner.invoke(app, ["gate", str(folder), "--max-idle-fraction", "0.5", "--ranks", "best"])
    assert result.exit_code == 2 and "--ranks must be 'worst' or 'pooled'" in result.output
