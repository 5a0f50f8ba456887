"""Unit conversion for rendering only: tables stay in ns, bytes and FLOPs."""

from __future__ import annotations

import math


def ns_to_us(value_ns: float | int | None) -> float | None:
    """Nanoseconds as microseconds (a trace event's `ts` and `dur`), exactly: None stays None."""
    return None if value_ns is None else value_ns / 1000.0


def json_us(value_ns: float | int | None) -> float | None:
    """Nanoseconds as the JSON report's microseconds: rounded to the nanosecond (3 decimals)."""
    return None if value_ns is None else round(value_ns / 1000.0, 3)


def format_duration_ns(value_ns: float | int | None) -> str:
    if value_ns is None:
        return "–"
    value = float(value_ns)
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {unit}" if abs(value) < 100 * scale else f"{value / scale:,.0f} {unit}"
    return f"{value:.0f} ns"


def plural(count: int, word: str, words: str | None = None) -> str:
    """"1 gap", "3 gaps"."""
    return f"{count} {word if count == 1 else (words or word + 's')}"


def format_percent(fraction: float | None) -> str:
    return "–" if fraction is None else f"{100 * fraction:.1f}%"


GENERIC_KERNELS = ("cutlass::Kernel", "cutlass::Kernel2", "cutlass::device_kernel", "cute::device_kernel")
# how far into a name its signature is looked for: real kernel names are under 6,000 characters
# (the longest in ../shared/traces: 5,123); a longer one is parsed only this far, so that a
# trace of megabyte-long names costs no more than its length to shorten (it took 0.3 s per MB
# and per shortening: 30 s for twenty 1 MB names)
SIGNATURE_SCAN = 16_384


def _top_level(text: str, separator: str) -> list[int]:
    """Indices of `separator` outside template brackets and parentheses; `<`/`>` inside
    parentheses are comparisons, not brackets (`enable_if<((8)>(0))>`)."""
    angle = paren = 0
    found = []
    for index, char in enumerate(text):
        if angle == 0 and paren == 0 and text.startswith(separator, index):
            found.append(index)
        if char == "(":
            paren += 1
        elif char == ")":
            paren = max(0, paren - 1)
        elif paren == 0 and char == "<":
            angle += 1
        elif paren == 0 and char == ">" and angle:
            angle -= 1
    return found


def kernel_function_name(name: str) -> str:
    """The function's qualified name inside a demangled kernel signature: no return type, no
    template arguments, no parameter list (`void at::native::foo<4, float>(int)` →
    `at::native::foo`; `std::enable_if<…>::type vllm::rms_norm_kernel<…>(…)` →
    `vllm::rms_norm_kernel`); for a generic wrapper (`cutlass::Kernel<X>`), its first template
    argument. Names that are not signatures come back unchanged."""
    text = name.replace("(anonymous namespace)::", "")
    opening = _top_level(text[:SIGNATURE_SCAN], "(")
    if not opening:
        return text
    prefix = text[: opening[0]]
    spaces = _top_level(prefix, " ")
    qualified = prefix[spaces[-1] + 1:] if spaces else prefix
    function = qualified.split("<", 1)[0].strip()
    if not function or " " in function:
        return text
    if function in GENERIC_KERNELS and "<" in qualified:
        inner = qualified.split("<", 1)[1]
        argument = inner[: (_top_level(inner, ",") or [len(inner) - 1])[0]].strip().rstrip(">").strip()
        return argument.split("<", 1)[0] or function
    return function


def short_name(name: str | None, width: int = 48) -> str:
    """A kernel or op name cut for a table cell: no return type, no template or argument lists."""
    if not name:
        return "–"
    text = kernel_function_name(name) if len(name) > width else name.replace("(anonymous namespace)::", "")
    return text if len(text) <= width else text[: width - 1] + "…"


SI_PREFIXES = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""))
SI_FRACTION_PREFIXES = ((1e-3, "m"), (1e-6, "µ"), (1e-9, "n"))


def format_si(value: float, unit: str = "", *, digits: int = 3, fractions: bool = False) -> str:
    """`value` with an SI prefix and `digits` significant digits: 1.5e12, "FLOP/s" → "1.5 TFLOP/s";
    999.96e9 → "1 TFLOP/s" (rounding moves it up a prefix, never "1e+03 G"). Below 1, a plain number
    ("0.25 FLOP/B"), or with `fractions` the m/µ/n prefixes (2.5e-6, "s" → "2.5 µs"). The one
    number formatter of the package: every renderer (and `calibrate`) uses it.

    >>> format_si(1.5e12, "FLOP/s"), format_si(999.96e9, "B/s"), format_si(0.25), format_si(2.5e-6, "s", fractions=True)
    ('1.5 TFLOP/s', '1 TB/s', '0.25', '2.5 µs')
    """
    if value == 0 or not math.isfinite(value):
        return f"{value:g} {unit}".strip()
    for scale, prefix in SI_PREFIXES + (SI_FRACTION_PREFIXES if fractions else ()):
        if abs(value) >= scale * 0.9995:  # 999.96 rounds to 1000 at 3 digits: the next prefix up
            return f"{_plain(value / scale, digits)} {prefix}{unit}".strip()
    return f"{value:.{digits}g} {unit}".strip()


def _plain(value: float, digits: int) -> str:
    text = f"{value:.{digits}g}"
    return f"{value:.0f}" if "e" in text else text


def format_rate(value: float | None, unit: str) -> str:
    """1.2e12, "FLOP/s" → "1.2 TFLOP/s"; None → "–"."""
    if value is None:
        return "–"
    return format_si(value, unit)


def format_count(value: float | None, unit: str = "") -> str:
    return format_rate(value, unit).strip()


def bar(fraction: float, width: int = 24) -> str:
    filled = round(max(0.0, min(1.0, fraction)) * width)
    return "█" * filled + "·" * (width - filled)


def distinct_short_names(names: list[str | None], width: int) -> list[str]:
    """`short_name` of each name, except that different names that would read the same keep the
    part where they differ: "at::native::vectorized_elementwise_kernel" twice becomes
    "at::native::vectoriz…CUDAFunctor_add<float>…" and "…cos_kernel…"."""
    shorts = [short_name(n, width) for n in names]
    full_by_short: dict[str, set[str]] = {}
    for name, short in zip(names, shorts):
        full_by_short.setdefault(short, set()).add(name or "")
    out = []
    for name, short in zip(names, shorts):
        others = full_by_short[short] - {name or ""}
        if not others:
            out.append(short)
            continue
        text = name or ""
        differs = max(next((i for i, (a, b) in enumerate(zip(text, other)) if a != b), min(len(text), len(other)))
                      for other in others)
        start = max(text.rfind(c, 0, differs) for c in "<, (:_") + 1
        head = width // 3
        tail = text[start: start + width - head - 1]
        out.append(short_name(text, head).rstrip("…")[: head - 1] + "…" + tail + "…")
    # still equal (the names differ only past the cut): number them, one number per full name
    numbers: dict[str, list[str]] = {}
    for name, text in zip(names, out):
        if name not in numbers.setdefault(text, []):
            numbers[text].append(name)
    return [f"{text} #{numbers[text].index(name) + 1}" if len(numbers[text]) > 1 else text
            for name, text in zip(names, out)]
