"""Ids that repeat stay linear (issue 13, "quadratic time on repeated ids"): a join on an id that
many rows share multiplies them (n² rows: 25 million at n = 5,000, several GB). Each trace here
repeats one id on every event of a kind; every command must finish in the hostile suite's time
and memory bounds (the child's own peak, as in test_hostile_input), report with exit 0.

Found by this audit (both were n², 1.7 GB at n = 4,000 and 9 GB at n = 8,000):
* a `cuda_sync` "Stream Wait Event" record joined to its `cudaStreamWaitEvent` call by correlation
  (analysis/idle.after_stream_wait);
* forward ops and autograd nodes joined on one `Sequence number` (costs/autograd_pairs.paired_nodes).
"""

from __future__ import annotations

import json
import polars as pl
import pytest

from hostile.test_hostile_input import PEAK_MB, SECONDS_PER_CASE, good_trace, run_case  # noqa: F401 (fixture)

N = 5_000
H100 = [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "numSms": 132}]


def stream_waits(n: int) -> list[dict]:
    """n copies, n stream-wait calls and n `Stream Wait Event` records, all of correlation 7."""
    events = []
    for i in range(n):
        events += [
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamWaitEvent", "pid": 1, "tid": 1, "ts": 10 * i,
             "dur": 1, "args": {"External id": 5, "correlation": 7}},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 1, "tid": 1, "ts": 10 * i + 1,
             "dur": 1, "args": {"External id": 5, "correlation": 7}},
            {"ph": "X", "cat": "cuda_sync", "name": "Stream Wait Event", "pid": 0, "tid": 7, "ts": 10 * i + 2,
             "dur": 0, "args": {"correlation": 7, "device": 0, "stream": 7, "wait_on_stream": 8}},
            {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7,
             "ts": 10 * i + 3, "dur": 5, "args": {"External id": 5, "correlation": 7, "device": 0, "stream": 7,
                                                  "bytes": 100}},
        ]
    return events


def sequence_numbers(n: int) -> list[dict]:
    """n `aten::cat` without TensorList shapes (paired through their CatBackward0 node) and n
    CatBackward0 nodes, all of sequence number 3."""
    events = []
    for i in range(n):
        events += [
            {"ph": "X", "cat": "cpu_op", "name": "aten::cat", "pid": 1, "tid": 1, "ts": 20 * i, "dur": 5,
             "args": {"External id": i, "Sequence number": 3, "Fwd thread id": 0, "Input Dims": [[], []],
                      "Input type": ["TensorList", "Scalar"]}},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 20 * i + 1,
             "dur": 1, "args": {"External id": i, "correlation": i}},
            {"ph": "X", "cat": "kernel", "name": "CatArrayBatchedCopy", "pid": 0, "tid": 7, "ts": 20 * i + 3,
             "dur": 5, "args": {"External id": i, "correlation": i, "device": 0, "stream": 7}},
            {"ph": "X", "cat": "cpu_op", "name": "CatBackward0", "pid": 1, "tid": 2, "ts": 20 * i + 10, "dur": 5,
             "args": {"External id": n + i, "Sequence number": 3, "Fwd thread id": 1, "Input Dims": [[4, 4]],
                      "Input type": ["float"]}},
        ]
    return events


@pytest.mark.parametrize("events", [stream_waits, sequence_numbers])
def test_repeated_ids_stay_within_the_bounds(tmp_path, good_trace, events):  # noqa: F811 (fixture)
    path = tmp_path / f"{events.__name__}.json"
    path.write_text(json.dumps({"traceEvents": events(N), "deviceProperties": H100}))
    results, seconds, peak_mb = run_case(path, good_trace, ())
    for result in results:
        assert "Traceback" not in result["stderr"], result["stderr"][-3000:]
    assert results[0]["argv"][0] == "report" and results[0]["exit"] == 0, results[0]["stderr"]
    assert peak_mb < PEAK_MB, f"peak {peak_mb:.0f} MB"
    assert seconds < SECONDS_PER_CASE, f"{seconds:.1f} s"


def test_a_repeated_sequence_number_pairs_nothing(tmp_path):
    """What the pairing gives them: nothing (which op made which node cannot be told), as before."""
    from traceanalyze.analysis.costs.autograd_pairs import paired_nodes
    from traceanalyze.load import load_trace

    path = tmp_path / "seq.json"
    events = sequence_numbers(3)
    path.write_text(json.dumps({"traceEvents": events, "deviceProperties": H100}))
    ops = load_trace(path).cpu_ops
    forward = ops.filter(ops["name"] == "aten::cat").select("op_id").with_columns(node_name=pl.lit("CatBackward0"))
    assert paired_nodes(ops, forward).is_empty()
    # with one op and one node of the number, they pair
    path.write_text(json.dumps({"traceEvents": sequence_numbers(1), "deviceProperties": H100}))
    ops = load_trace(path).cpu_ops
    forward = ops.filter(ops["name"] == "aten::cat").select("op_id").with_columns(node_name=pl.lit("CatBackward0"))
    assert paired_nodes(ops, forward).select("grad_dims").rows() == [([4, 4],)]


def test_a_stream_wait_record_takes_the_first_call_of_its_id(tmp_path):
    """Every record of a repeated id takes the first call's time (as a GPU op links to the first
    launch of its id): the copies after the first find no wait since their stream's previous op."""
    from traceanalyze.analysis.idle import after_stream_wait
    from traceanalyze.load import load_trace
    from traceanalyze.model import linked_gpu

    path = tmp_path / "waits.json"
    path.write_text(json.dumps({"traceEvents": stream_waits(3), "deviceProperties": H100}))
    trace = load_trace(path)
    linked = linked_gpu(trace).sort("start_ns")
    # all linked to the first copy call
    assert linked["launch_start_ns"].to_list() == [linked["launch_start_ns"][0]] * 3
    assert after_stream_wait(linked, trace).to_list() == [True, False, False]
