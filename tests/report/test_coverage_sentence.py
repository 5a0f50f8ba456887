"""'model coverage' says what it is a share of, and how much modelled time has no roof (issue 12
point 10: "model coverage: 100.0%" was printed next to "unmodeled 13.0%")."""

from __future__ import annotations

import json

from builder import TraceBuilder

import traceanalyze
from traceanalyze.renderers.wording import coverage_sentence


def report_of(tmp_path, *, device_properties: bool):
    b = TraceBuilder()
    add = b.cpu_op("aten::add", 0, 8, input_dims=[[1024], [1024], []], input_types=["float", "float", "Scalar"])
    b.launch_kernel(launch_us=1, start_us=10, dur_us=10, external_id=add)  # modelled
    other = b.cpu_op("mylib::opaque", 20, 8)
    b.launch_kernel(launch_us=21, start_us=30, dur_us=10, external_id=other)  # no model
    document = b.to_dict()
    if not device_properties:
        document.pop("deviceProperties")
    path = tmp_path / "t.json"
    path.write_text(json.dumps(document))
    return traceanalyze.analyze(path).ranks[0]


def test_modelled_time_without_a_roof_is_named(tmp_path):
    rank = report_of(tmp_path, device_properties=False)
    row = rank.attribution.row(0, named=True)
    assert (row["modelled_busy_ns"], row["modelable_busy_ns"], row["unroofed_busy_ns"]) == (10_000, 20_000, 10_000)
    assert row["unmodeled_ns"] == 20_000  # both kernels: no peaks for the device
    assert coverage_sentence(rank) == (
        "model coverage: 50.0% of GPU busy time has a FLOP/byte model (copies included); 50.0% of it has a model "
        "but no roof (device or dtype peak unknown) and is counted as unmodeled; the shares above are of the window")


def test_with_a_roof_only_the_share_of_busy_time_is_said(tmp_path):
    rank = report_of(tmp_path, device_properties=True)
    assert rank.attribution["unroofed_busy_ns"].to_list() == [0]
    assert coverage_sentence(rank) == (
        "model coverage: 50.0% of GPU busy time has a FLOP/byte model (copies included); "
        "the shares above are of the window")
