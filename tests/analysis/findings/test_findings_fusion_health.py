"""The fusion rule reads the fusion table; trace health downgrades or removes findings; ranking."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from builder import TraceBuilder
from findings_cases import A100, BF16, BF16_GEMM, findings_of, mm, report_of

import traceanalyze
from traceanalyze.analysis.findings import rules_kernels
from traceanalyze.analysis.findings.finding import Finding, findings_frame
from traceanalyze.analysis.findings.inputs import FindingInputs
from traceanalyze.analysis.findings.rules_trace import apply_health
from traceanalyze.pipeline.rank import build_report

F32 = "float"
COS = ("void at::native::vectorized_elementwise_kernel<4, at::native::cos_kernel_cuda(at::TensorIteratorBase&)::"
       "{lambda()#1}, at::detail::Array<char*, 2> >")
FIXTURE = Path(__file__).resolve().parents[3] / "fixtures" / "synthetic_training.json.gz"


def test_fusion_gain_is_the_time_the_fusion_table_saves():
    rank = build_report(traceanalyze.load_trace(FIXTURE)).ranks[0]
    row = rank.findings.filter(pl.col("id") == "fuse-bandwidth-chain").row(0, named=True)
    chain = rank.fusion.row(0, named=True)  # the fixture's one chain, 4× relu → gelu → add → layer_norm → softmax
    assert rank.fusion.height == 1 and chain["occurrences"] == 4
    # the fusion table's row (tests/analysis/test_fusion.py checks its rule): 380 µs saved at the
    # achieved bandwidth, the gain; the merges (at the roof, their launch calls gone) take out more,
    # which is the bound (docs/whatif.md, "Bounds")
    assert row["evidence"] == ("1 chain; top aten::relu → aten::gelu → aten::add → aten::native_layer_norm → "
                               "aten::_softmax under `## forward ##`, 4× (20 kernels, 522 µs): 537 MB of "
                               "intermediates, 380 µs saved; 4 of 4 chain occurrences modelled, each as one "
                               "kernel at the memory roof for its external bytes")
    assert row["gain_ns"] == chain["time_saved_ns"] < row["bound_ns"] and row["saving_ns"] <= row["bound_ns"]
    assert "torch.compile" in row["action"]


def test_a_lone_gemm_has_nothing_to_fuse(tmp_path):
    b = TraceBuilder(**A100)
    mm(b, 0, 2048, 2048, 2048, BF16, BF16_GEMM, 60)
    assert "fuse-bandwidth-chain" not in findings_of(b, tmp_path)


def finding(id_: str, gain: float | None, confidence="high") -> Finding:
    return Finding(id=id_, regime="overhead", title="t", evidence="e", action="a", gain_ns=gain, confidence=confidence)


def health(*rows: tuple[str, int]) -> pl.DataFrame:
    return pl.DataFrame({"rank": [0] * len(rows), "finding": [r[0] for r in rows], "count": [r[1] for r in rows],
                         "affects": [""] * len(rows), "detail": [""] * len(rows)},
                        schema_overrides={"rank": pl.Int32})


def test_clock_skew_downgrades_gap_findings_and_says_so():
    out = apply_health([finding("sync-in-step", 5.0), finding("fp32-simt-gemm", 3.0)], health(("clock_skew", 7)))
    assert [(f.id, f.confidence, f.evidence) for f in out] == [
        ("sync-in-step", "medium", "e; trace health: clock_skew (7)"), ("fp32-simt-gemm", "high", "e")]


def test_cuda_graphs_in_the_trace_suppress_the_launch_bound_advice():
    out = apply_health([finding("launch-bound", 5.0), finding("cpu-bound-gaps", 3.0)],
                       health(("cuda_graph_launches", 4)))
    assert [f.id for f in out] == ["cpu-bound-gaps"]


def test_healthy_counts_of_zero_change_nothing():
    found = [finding("launch-bound", 5.0, "low")]
    assert apply_health(found, health(("cuda_graph_launches", 0), ("clock_skew", 0))) == found


def test_ranked_by_gain_with_notes_last():
    frame = findings_frame(0, [finding("b", None), finding("a", 1.0), finding("c", 9.0), finding("a2", None)])
    assert frame["id"].to_list() == ["c", "a", "a2", "b"]


def fusion_inputs(ops: str) -> FindingInputs:
    """FindingInputs holding one fusion-table chain of `ops` (what the fusion rule reads)."""
    empty = pl.DataFrame()
    chain = pl.DataFrame({"ops": [ops], "annotation": ["## Call CompiledFxGraph fx ##"], "occurrences": [6],
                          "kernels": [18], "duration_ns": [71_500], "bytes_saved": [75.5e6],
                          "time_saved_ns": [38_900.0]})
    roofline = pl.DataFrame({"regime": ["bandwidth"], "start_ns": [0], "end_ns": [71_500], "duration_ns": [71_500],
                             "cost_model": ["elementwise"]})
    return FindingInputs(rank=0, device_family="CUDA", peaks=None, roofline=roofline, gaps=empty, steps=empty,
                         small_kernel_runs=empty, fusion=chain, attribution=empty, health=empty, cpu_ops=empty)


def test_a_chain_of_inductor_kernels_gets_no_advice_to_compile():
    """Recorded on an H100 with `torch.compile`: the chains are Inductor's own Triton kernels, so
    "use torch.compile" would be advice the script already follows."""
    compiled = ("triton_poi_fused__to_copy_5 → triton_per_fused__to_copy_add_native_layer_norm_backward_view_9 → "
                "triton_red_fused__to_copy_native_layer_norm_backward_view_2")
    (found,) = rules_kernels.fusion(fusion_inputs(compiled))
    assert "torch.compile(model)" not in found.action and "graph_breaks" in found.action
    assert found.gain_ns == 38_900.0
    (eager,) = rules_kernels.fusion(fusion_inputs("aten::relu → triton_poi_fused_gelu_0"))  # a chain half eager
    assert "`model = torch.compile(model)`" in eager.action


def test_a_chain_is_replayed_as_one_kernel_at_the_memory_roof_for_its_external_bytes(tmp_path):
    """cos → cos on 2^24 floats, launched ahead (the GPU is the bottleneck): K1 [20, 120], K2
    [121, 221], then an unlinked sin K3 [222, 232] (each queued 1 µs after the one before). The
    merge: K1 takes external bytes / peak bandwidth = d, K2 and its launch take no time; K3 follows
    1 µs after, no sooner than its launch (L3 at 9, L2 now instant) + the typical latency 19: the
    window [20, 232] → [20, 31 + d]."""
    n = 1 << 24
    b = TraceBuilder()
    for i, (name, start, dur) in enumerate((("aten::cos", 20, 100), ("aten::cos", 121, 100), ("aten::sin", 222, 10))):
        op = b.cpu_op(name, 6 * i, 5, input_dims=[[n]], input_types=[F32], input_strides=[[1]], concrete_inputs=[""])
        b.launch_kernel(launch_us=6 * i + 1, launch_dur_us=4, start_us=start, dur_us=dur, external_id=op,
                        name=COS.replace("cos_kernel", "sin_kernel") if name == "aten::sin" else COS)
    rank = report_of(b, tmp_path).ranks[0]
    assert rank.fusion.height == 1 and rank.fusion["kernels"].to_list() == [2]
    external = 2 * n * 4  # read once, written once: the intermediate stays on chip
    d = round(external / rank.roofline["peak_bytes_per_s"][0] * 1e9)
    row = findings_of(b, tmp_path)["fuse-bandwidth-chain"]
    assert row["evidence"].endswith("1 of 1 chain occurrence modelled, each as one kernel at the memory roof for its "
                                    "external bytes")
    assert row["saving_ns"] == 201_000 - d
    # the rule's 100 µs (at the achieved bandwidth), its gain, is less than the merge takes out: K1's
    # 100 − d, K2's 100, its 1 µs behind K1, its launch latency (the typical 19) and L2's 4: the bound
    assert (row["gain_ns"], row["bound_ns"]) == (100_000, 224_000 - d)
