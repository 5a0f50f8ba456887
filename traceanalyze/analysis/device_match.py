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
    used = _used_devices(trace)
    targets = {(rank, device): target for rank, device, target, _ in _id_mapping_rows(used.drop_nulls(), trace.devices)}
    entries: dict[tuple, list[tuple]] = {}
    for entry in trace.devices.select(DEVICES_SCHEMA.names()).iter_rows():
        entries.setdefault(entry[:2], []).append(entry[2:])
    unmatched = (None,) * (len(DEVICES_SCHEMA) - 2)
    rows = []
    for rank, device in used.iter_rows():  # what a left join on the mapping, then on the entries, gives
        target = targets.get((rank, device))
        described = entries.get((rank, target), []) if target is not None else []
        rows += [(rank, device, *entry, target) for entry in described] or [(rank, device, *unmatched, None)]
    rows.sort(key=lambda row: (row[0], row[1] is not None, row[1] or 0))  # by rank, then device (none first)
    return pl.DataFrame(rows, schema={**DEVICES_SCHEMA, "properties_device": pl.Int32}, orient="row")


def _used_devices(trace: Trace) -> pl.DataFrame:
    return trace.gpu.select("rank", "device").unique(maintain_order=True)


def _id_mapping_rows(used: pl.DataFrame, devices: pl.DataFrame) -> list[tuple[int, int, int, bool]]:
    """`(rank, device, properties_device, remapped)` for every distinct non-null (rank, device)
    pair of `used` that a `deviceProperties` entry describes (rules 1-3 of the module docstring;
    unmatched ids are absent): a rank's few ids and entries are matched in Python (a query per
    rank cost more than the rules)."""
    ids_of: dict[int, list[int]] = {}
    for rank, device in used.iter_rows():
        ids_of.setdefault(rank, []).append(device)
    listed_of: dict[int, list[tuple]] = {}
    for rank, device, *description in devices.select("rank", "device", *DESCRIPTION).iter_rows():
        listed_of.setdefault(rank, []).append((device, tuple(description)))
    rows: list[tuple[int, int, int, bool]] = []
    for rank in sorted(ids_of):
        ids = sorted(ids_of[rank])
        listed = listed_of.get(rank, [])
        listed_ids = {device for device, _ in listed}
        unlisted = [d for d in ids if d not in listed_ids]
        rows += [(rank, d, d, False) for d in ids if d in listed_ids]
        if not unlisted or not listed:
            continue
        if len(listed) == 1 and len(ids) == 1:
            target = listed[0][0]
        elif len({description for _, description in listed}) == 1:
            target = min(device for device, _ in listed)
        else:
            continue
        rows += [(rank, d, target, True) for d in unlisted]
    return rows


def device_id_findings(trace: Trace, rank: int) -> list[tuple[str, int, str]]:
    """Health findings of one rank about device ids → `(finding, count, detail)`:
    `device_id_remapped` (GPU events' ids matched to another `deviceProperties` id) and
    `device_id_unmatched` (ids no entry could be matched to, while the trace has entries)."""
    listed = sorted(((device, name) for entry_rank, device, name in trace.devices.select("rank", "device", "name")
                     .iter_rows() if entry_rank == rank), key=lambda entry: entry[0])
    if not listed:
        return []  # `no_device_properties` says it
    used_pairs = _used_devices(trace).drop_nulls()
    mapping = [row for row in _id_mapping_rows(used_pairs, trace.devices) if row[0] == rank]
    used = sorted(device for device_rank, device in used_pairs.iter_rows() if device_rank == rank)
    listed_text = ", ".join(f"{d} ({name or 'no name'})" for d, name in listed)
    findings = []
    remapped = sorted((device, target) for _, device, target, moved in mapping if moved)
    if remapped:
        pairs = ", ".join(f"device {d} → deviceProperties id {p}" for d, p in remapped)
        findings.append(("device_id_remapped", len(remapped),
                         f"GPU events use ids that deviceProperties does not list ({listed_text}): matched {pairs}"))
    mapped = {device for _, device, _, _ in mapping}
    unmatched = [d for d in used if d not in mapped]
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
