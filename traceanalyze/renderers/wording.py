"""Words that several formats write alike (the terminal report, and the Markdown/HTML document):
what each gap cause means, CPU op names cut to a width, a device's peak figures, the roofline's
model-coverage sentence, % of roof cells and their footnotes. One definition, so the formats say
the same thing."""

from __future__ import annotations


from traceanalyze.analysis.devices import DevicePeaks
from traceanalyze.report.model import RankReport
from traceanalyze.report.views import RoofNotes, Tf32Figures
from traceanalyze.units import format_duration_ns, format_percent, format_rate


CAUSE_HINTS = {
    "host": "the CPU was late to launch the next work (Python / framework overhead)",
    "sync": "the CPU waited on the GPU (synchronize, .item(), blocking copy) and the queue drained",
    "collective": "a collective was queued but started late: it waited on its peers (other ranks)",
    "stream_wait": ("work was queued behind a wait on another stream's event (cudaStreamWaitEvent): "
                    "it waited on work elsewhere"),
    "launch": "work was queued but started late (launch latency between kernels)",
    "other": "no next GPU work in the window, no launch recorded for it, or it started before its launch (clock skew)",
}


def cpu_name(name: str | None, width: int) -> str:
    """A CPU op or annotation name cut in the middle, keeping both ends
    (`enumerate(DataLoader)#…LoaderIter.__next__`): they are not kernel signatures."""
    if not name:
        return "–"
    if len(name) <= width:
        return name
    head = (width - 1) // 2
    return name[:head] + "…" + name[-(width - 1 - head):]


def peak_figures(peaks: DevicePeaks) -> str:
    """"bf16 tensor 312 TFLOP/s, …; 1.55 TB/s memory": the three highest FLOP/s and the bandwidth."""
    best = sorted(peaks.flops_per_s.items(), key=lambda kv: -kv[1])[:3]
    figures = ", ".join(f"{dtype} {unit} {format_rate(v, 'FLOP/s')}" for (dtype, unit), v in best)
    if peaks.default_flops_per_s is not None:
        other = f"{format_rate(peaks.default_flops_per_s, 'FLOP/s')} for any other math"
        figures = ", ".join(filter(None, [figures, other]))
    return f"{figures}; {format_rate(peaks.memory_bandwidth_bytes_per_s, 'B/s')} memory"


def coverage_sentence(report: RankReport) -> str | None:
    """"model coverage: …" from the attribution's busy-time columns (docs/roofline.md)."""
    attribution = report.summary.attribution
    share, communication = attribution.model_coverage, attribution.communication_busy_ns
    if not attribution.modelable_busy_ns or share is None:
        return None
    comm = (f"; collectives ({format_duration_ns(communication)} busy) are outside the roofline and not counted"
            if communication else "")
    unroofed = attribution.unroofed_busy_ns
    no_roof = (f"; {format_percent(unroofed / attribution.modelable_busy_ns)} of it has a model but no roof "
               "(device or dtype peak unknown) and is counted as unmodeled" if unroofed else "")
    return (f"model coverage: {format_percent(share)} of GPU busy time has a FLOP/byte model "
            f"(copies included{comm}){no_roof}; the shares above are of the window")


def roof_fraction_cell(fraction: float | None, regime: str | None = None) -> str:
    """A fraction of the roof as a cell: "43.1%"; above 100% marked "*" for a kernel, "†" for a
    copy (footnoted by `roof_footnotes`); "–" for none."""
    if fraction is None or fraction != fraction:
        return "–"
    return format_percent(fraction) + (("†" if regime == "memcpy" else "*") if fraction > 1 else "")


def roof_footnotes(notes: RoofNotes) -> list[str]:
    """One line for each mark of `roof_fraction_cell` used in a kernel table (`notes`:
    `RankReport.roof_notes`), one for the TF32 roof of FP32 matmul-like kernels, and one per reason
    a copy has no roof."""
    lines = []
    if notes.kernel_above_roof:
        lines.append("  * above 100% of the roof: bytes are an ideal-cache lower bound (every input read once from "
                     "memory), so data served from L2 cache, or a Winograd/FFT convolution doing fewer FLOPs "
                     "than counted, beats the roof")
    if notes.copy_above_roof:
        lines.append("  † a copy above 100% of its link's roof: the link peak in the table is wrong for this system "
                     "(its link is faster than the datasheet's), or the copy never crossed that link (device-local)")
    if notes.tf32 is not None:
        lines.append(f"  TF32: {tf32_sentence(notes.tf32)}")
    for reason in notes.no_roof_reasons:
        lines.append(f"  – % of roof left empty: {reason}")
    return lines


def tf32_sentence(tf32: Tf32Figures) -> str:
    """FP32 matmul-like kernels judged against the FP32 SIMT roof, against the device's TF32
    tensor-core roof as well (`tf32_peak_flops_per_s`, docs/roofline.md)."""
    share, peak, total = tf32.share, tf32.peak_flops_per_s, format_duration_ns(tf32.total_ns)
    return (f"FP32 matmul/convolution kernels ({total}) run on the FP32 SIMT roof; "
            f"against the TF32 tensor-core roof ({format_rate(peak, 'FLOP/s')}) they reach {format_percent(share)}: "
            "allow TF32 (torch.backends.cuda.matmul.allow_tf32 = True, torch.backends.cudnn.allow_tf32 = True, or "
            "torch.set_float32_matmul_precision(\"high\"))")


# why the slowest rank of a job is slow, by its step's main gap cause (terminal and document)
CAUSE_WORDS = {
    "host": "its CPU was late to launch work (data loading, Python, framework overhead)",
    "sync": "its CPU waited on its GPU (synchronize, .item(), blocking copy)",
    "launch": "its queued work started late (launch latency)",
    "stream_wait": "its queued work waited on another stream's event",
    "other": "gaps of unknown cause (no launch recorded, or clock skew)",
}
