"""Unit conversion for rendering only: tables stay in ns, bytes and FLOPs."""

from __future__ import annotations


def ns_to_us(value_ns: float | int | None) -> float | None:
    return None if value_ns is None else value_ns / 1000.0


def format_duration_ns(value_ns: float | int | None) -> str:
    if value_ns is None:
        return "–"
    value = float(value_ns)
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {unit}" if abs(value) < 100 * scale else f"{value / scale:,.0f} {unit}"
    return f"{value:.0f} ns"


def format_percent(fraction: float | None) -> str:
    return "–" if fraction is None else f"{100 * fraction:.1f}%"


def short_name(name: str | None, width: int = 48) -> str:
    """A kernel or op name cut for a table cell: no return type, no template or argument lists."""
    if not name:
        return "–"
    text = name.removeprefix("void ").replace("(anonymous namespace)::", "")
    for opener in ("<", "("):
        cut = text.find(opener)
        if cut > 0 and len(text) > width:
            text = text[:cut]
    return text if len(text) <= width else text[: width - 1] + "…"


def format_rate(value: float | None, unit: str) -> str:
    """1.2e12, "FLOP/s" → "1.2 TFLOP/s"."""
    if value is None:
        return "–"
    for prefix, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def format_count(value: float | None, unit: str = "") -> str:
    return format_rate(value, unit).strip()


def bar(fraction: float, width: int = 24) -> str:
    filled = round(max(0.0, min(1.0, fraction)) * width)
    return "█" * filled + "·" * (width - filled)
