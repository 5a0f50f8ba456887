"""Whether runs are one program at different sizes: the same ops per step in the same order
(docs/scaling.md#one-program). GPU kernels may differ by shape-specialised variants (a GEMM's tile
sizes, a split-K reduction): those are a note, not a difference."""

from __future__ import annotations

import re
from collections.abc import Sequence

from traceanalyze.scaling.measure import RunPoint

# what makes kernels of one op differ between sizes: template arguments, tile sizes, numbers
_VARIANT = re.compile(r"<.*>|\(.*\)|\d+")


def first_difference(points: Sequence[RunPoint]) -> str | None:
    """None when every run has the first run's op sequence per step, else a line naming the first
    difference (the runs, the position and the two ops)."""
    base = points[0]
    for other in points[1:]:
        a, b = base.sequence, other.sequence
        for index, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return (f"{base.source} and {other.source} are not one program: op {index + 1} of a step is "
                        f"{x} in the first and {y} in the second")
        if len(a) != len(b):
            shorter, longer = (base, other) if len(a) < len(b) else (other, base)
            extra = longer.sequence[len(shorter.sequence)]
            return (f"{base.source} and {other.source} are not one program: a step of {shorter.source} has "
                    f"{len(shorter.sequence)} ops, one of {longer.source} {len(longer.sequence)} "
                    f"(the first extra: {extra})")
    return None


def kernel_family(name: str) -> str:
    """A kernel name without its shape-specialised parts.

    >>> kernel_family("ampere_sgemm_128x64_tn") == kernel_family("ampere_sgemm_64x32_tn")
    True
    """
    return _VARIANT.sub("", name)


def kernel_variants_note(points: Sequence[RunPoint]) -> str | None:
    """A note when the runs' GPU kernels differ beyond shape-specialised variants (e.g. a split-K
    reduction at one size only), None when they do not or there are no kernels."""
    families = [frozenset(kernel_family(k) for k in p.kernels) for p in points]
    if not any(families) or all(f == families[0] for f in families):
        return None
    union = frozenset().union(*families)
    some = sorted(name for name in union if not all(name in f for f in families))
    return (f"{len(some)} kernel kind(s) run at some sizes only (e.g. {some[0]}): the library picks "
            "kernels by shape; the op sequence is the same")
