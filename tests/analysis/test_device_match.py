"""GPU event device ids matched to deviceProperties entries, and devices named by their size."""

from __future__ import annotations

import json


from builder import TraceBuilder

import traceanalyze
from traceanalyze.analysis.device_match import matched_devices
from traceanalyze.analysis.devices import device_peaks
from traceanalyze.analysis.health import trace_health
from traceanalyze.analysis.roofline import choose_peaks

MI300X_VF = dict(device_name="AMD Instinct MI300X VF", num_sms=304, total_memory=205_822_885_888)


def load(document: dict, tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps(document))
    return traceanalyze.load_trace(path)


def kernels_on(b: TraceBuilder, *devices: int) -> TraceBuilder:
    for i, device in enumerate(devices):
        b.launch_kernel(launch_us=10 * i, start_us=10 * i + 5, dur_us=3, device=device)
    return b


def findings(trace) -> dict[str, tuple[int, str]]:
    return {f: (c, d) for f, c, d in trace_health(trace).select("finding", "count", "detail").iter_rows()}


def test_one_listed_device_and_one_other_id_are_matched(tmp_path):
    # deviceProperties lists id 0; every GPU event says device 2 (the process saw one GPU)
    trace = load(kernels_on(TraceBuilder(devices=3, properties_ids=[0], **MI300X_VF), 2, 2).to_dict(), tmp_path)
    matched = matched_devices(trace)
    assert matched.select("rank", "device", "properties_device", "name", "num_sms").rows() == [
        (0, 2, 0, "AMD Instinct MI300X VF", 304)]
    [choice] = choose_peaks(trace)
    assert (choice.device, choice.peaks.key, choice.source,
            choice.device_name) == (2, "mi300x", "datasheet", "AMD Instinct MI300X VF")
    count, detail = findings(trace)["device_id_remapped"]
    assert count == 1
    assert detail == ("GPU events use ids that deviceProperties does not list (0 (AMD Instinct MI300X VF)): "
                      "matched device 2 → deviceProperties id 0")
    assert "device_id_unmatched" not in findings(trace)


def test_matching_ids_need_no_finding(tmp_path):
    trace = load(kernels_on(TraceBuilder(devices=3, **MI300X_VF), 2).to_dict(), tmp_path)
    assert matched_devices(trace)["properties_device"].to_list() == [2]
    assert not {"device_id_remapped", "device_id_unmatched"} & set(findings(trace))


def test_identical_listed_devices_describe_an_unlisted_id(tmp_path):
    # two identical A100s listed as 0 and 1; the events use 4 (numbered on the whole node)
    trace = load(kernels_on(TraceBuilder(devices=5, properties_ids=[0, 1]), 4).to_dict(), tmp_path)
    assert matched_devices(trace).select("device", "properties_device").rows() == [(4, 0)]
    assert choose_peaks(trace)[0].peaks.key == "a100-sxm4-80gb"
    assert findings(trace)["device_id_remapped"][0] == 1


def test_undecidable_ids_are_named(tmp_path):
    # two different devices listed (0, 1), events on 2 and 3: which is which cannot be told
    document = kernels_on(TraceBuilder(devices=4, properties_ids=[0, 1]), 2, 3).to_dict()
    document["deviceProperties"][1]["name"] = "NVIDIA H100 80GB HBM3"
    trace = load(document, tmp_path)
    assert matched_devices(trace).select("device", "properties_device",
                                         "name").rows() == [(2, None, None), (3, None, None)]
    assert [c.peaks for c in choose_peaks(trace)] == [None, None]
    count, detail = findings(trace)["device_id_unmatched"]
    assert count == 2
    assert detail == ("GPU events use device 2, 3, which deviceProperties (listing 0 (NVIDIA A100-SXM4-80GB), "
                      "1 (NVIDIA H100 80GB HBM3)) does not describe and which cannot be matched to one entry: "
                      "their peaks are unknown")
    assert "device_id_remapped" not in findings(trace)


def test_no_device_properties_is_its_own_finding(tmp_path):
    document = kernels_on(TraceBuilder(), 0).to_dict()
    document.pop("deviceProperties")
    trace = load(document, tmp_path)
    assert {"no_device_properties"} == set(findings(trace)) - {"no_profiler_steps"}


def test_empty_device_name_is_resolved_by_compute_units(tmp_path):
    trace = load(kernels_on(TraceBuilder(device_name="", num_sms=304, total_memory=205_822_885_888), 0).to_dict(),
                 tmp_path)
    [choice] = choose_peaks(trace)
    assert (choice.peaks.key, choice.source) == ("mi300x", "datasheet")


def test_generic_names_are_resolved_by_sm_count_and_memory():
    assert device_peaks("", 132, 85_520_809_984).key == "h100-sxm"  # 79.6 GiB
    assert device_peaks("NVIDIA Graphics Device", 114, 85_520_809_984).key == "h100-pcie"
    assert device_peaks("Device 2330", 132, 85_520_809_984).key == "h100-sxm"
    assert device_peaks("", 104, None).key == "mi250-gcd"
    # the same SM count and memory for several entries: not decided
    assert device_peaks("", 108, 85_899_345_920) is None  # A100 SXM4 or PCIe, 80 GB
    assert device_peaks("", 132, 150_754_820_096) is None  # H200 SXM or NVL
    assert device_peaks("", 132, None) is None
    # a real name we do not know is never matched by its size
    assert device_peaks("NVIDIA GeForce RTX 3090", 82, 25_769_803_776) is None
    assert device_peaks("NVIDIA L4", 58, 24_000_000_000).key == "l4"
    assert device_peaks("Weird Accelerator", 108, 42_949_672_960) is None
    assert device_peaks("", 999, 1) is None
