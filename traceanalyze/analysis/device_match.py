"""Which `deviceProperties` entry describes each device that ran GPU work.

GPU events name their device by an id (`device` in their args); `deviceProperties` lists devices
by `id`. They normally agree. When a process sees fewer GPUs than the node has (containers,
`CUDA_VISIBLE_DEVICES`, ROCm virtual functions), the two can be numbered differently: e.g. one
entry `{id: 0, name: "AMD Instinct MI300X VF"}` while every GPU event says `device: 2`. Rules, per
rank (docs/devices.md):

1. an id that `deviceProperties` lists is that entry;
2. otherwise, when the rank lists exactly one device and its GPU events use exactly one id that
   is not listed, that id is the listed device (`device_id_remapped`);
3. otherwise, when every listed entry describes the same device (name, SM/CU count and memory),
   each unlisted id takes that description (`device_id_remapped`);
4. otherwise the id stays without properties (`device_id_unmatched`, naming the ids).
"""

from __future__ import annotations

import polars as pl

from traceanalyze.analysis.devices import DevicePeaks, device_peaks, normalized_name
from traceanalyze.model import DEVICES_SCHEMA, Trace

DESCRIPTION = ("name", "num_sms", "total_memory_bytes")


def matched_devices(trace: Trace) -> pl.DataFrame:
    """Per (rank, device) with GPU work → the columns of `DEVICES_SCHEMA` (null where no entry
    matches) and `properties_device`: the `deviceProperties` id the row was taken from (null
    when none). Sorted by rank and device."""
    used = trace.gpu.select("rank", "device").unique(maintain_order=True)
    mapping = device_id_mapping(trace)
    properties = trace.devices.rename({"device": "properties_device"})
    return (
        used.join(mapping, on=["rank", "device"], how="left")
        .join(properties, on=["rank", "properties_device"], how="left")
        .select(*DEVICES_SCHEMA.names(), "properties_device")
        .sort("rank", "device")
    )


def device_id_mapping(trace: Trace) -> pl.DataFrame:
    """`rank, device, properties_device, remapped` for every (rank, device) of GPU work that a
    `deviceProperties` entry describes (rules 1-3 of the module docstring); unmatched ids are
    absent."""
    rows: list[dict] = []
    used = trace.gpu.select("rank", "device").unique(maintain_order=True).drop_nulls()
    for rank in sorted(used["rank"].unique().to_list()):
        ids = sorted(used.filter(pl.col("rank") == rank)["device"].to_list())
        listed = trace.devices.filter(pl.col("rank") == rank)
        listed_ids = set(listed["device"].to_list())
        unlisted = [d for d in ids if d not in listed_ids]
        rows += [{"rank": rank, "device": d, "properties_device": d, "remapped": False} for d in ids if d in listed_ids]
        if not unlisted or listed.is_empty():
            continue
        if listed.height == 1 and len(ids) == 1:
            target = listed["device"][0]
        elif listed.select(DESCRIPTION).unique().height == 1:
            target = listed["device"].min()
        else:
            continue
        rows += [{"rank": rank, "device": d, "properties_device": target, "remapped": True} for d in unlisted]
    schema = {"rank": pl.Int32, "device": pl.Int32, "properties_device": pl.Int32, "remapped": pl.Boolean}
    return pl.DataFrame(rows, schema=schema)


def device_id_findings(trace: Trace, rank: int) -> list[tuple[str, int, str]]:
    """Health findings of one rank about device ids → `(finding, count, detail)`:
    `device_id_remapped` (GPU events' ids matched to another `deviceProperties` id) and
    `device_id_unmatched` (ids no entry could be matched to, while the trace has entries)."""
    listed = trace.devices.filter(pl.col("rank") == rank)
    if listed.is_empty():
        return []  # `no_device_properties` says it
    mapping = device_id_mapping(trace).filter(pl.col("rank") == rank)
    used = sorted(
        trace.gpu.select("rank", "device").filter(pl.col("rank") == rank)["device"].drop_nulls().unique().to_list()
    )
    listed_text = ", ".join(
        f"{d} ({name or 'no name'})" for d, name in listed.sort("device").select("device", "name").iter_rows()
    )
    findings = []
    remapped = mapping.filter(pl.col("remapped")).sort("device")
    if remapped.height:
        pairs = ", ".join(
            f"device {d} → deviceProperties id {p}"
            for d, p in remapped.select("device", "properties_device").iter_rows()
        )
        findings.append(("device_id_remapped", remapped.height,
                         f"GPU events use ids that deviceProperties does not list ({listed_text}): matched {pairs}"))
    unmatched = [d for d in used if d not in set(mapping["device"].to_list())]
    if unmatched:
        findings.append(("device_id_unmatched", len(unmatched),
                         f"GPU events use device {', '.join(map(str, unmatched))}, which deviceProperties "
                         f"(listing {listed_text}) does not describe and which cannot be matched to one entry: "
                         "their peaks are unknown"))
    return findings


def device_file_mismatches(trace: Trace, peaks: DevicePeaks) -> list[str]:
    """Devices of the trace that a device file does not describe, one sentence each (empty when
    it fits, or when nothing can be compared). A file measured on a CPU (`notes.kind` "cpu") fits
    no GPU. Otherwise the file's table entry (its `base`, or its name resolved like a trace's)
    must equal the device's (its deviceProperties resolved, docs/devices.md); when either is not
    in the table, the two names must be the same once normalised (`normalized_name`)."""
    named = device_peaks(peaks.file_device_name) if peaks.file_device_name else None
    file_key = peaks.base_key or (named.key if named else None)
    file_name = normalized_name(peaks.file_device_name or "")
    problems = []
    for row in matched_devices(trace).iter_rows(named=True):
        name = row["name"] or ""
        described = row["name"] or row["num_sms"] or row["total_memory_bytes"]
        entry = device_peaks(name, row["num_sms"], row["total_memory_bytes"]) if described else None
        shown = f"rank {row['rank']} device {row['device']} is {name or 'unnamed'!r}" + (
            f" ({entry.key})" if entry else ""
        )
        if peaks.measured_on == "cpu":
            problems.append(f"{shown}, but the file was measured on a CPU ({peaks.display_name!r})")
        elif file_key and entry:
            if file_key != entry.key:
                problems.append(f"{shown}, but the file describes {file_key} ({peaks.display_name!r})")
        elif file_name and normalized_name(name) and file_name != normalized_name(name):
            problems.append(f"{shown}, but the file describes {peaks.display_name!r}")
    return problems
