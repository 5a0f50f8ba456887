"""Whether runs are one program at different sizes: the same ops per step in the same order
(docs/scaling.md#one-program). The autograd engine's nodes (`autograd::engine::evaluate_function: …`)
are left out: the backward follows from the forward, and the engine's order of independent branches
(and on a CPU even the nodes seen in a step) varied between captures of one program. GPU kernels
may differ by shape-specialised variants (a GEMM's tile
sizes, a split-K reduction): those are a note, not a difference."""

from __future__ import annotations

import re
from collections.abc import Sequence

from traceanalyze.scaling.measure import RunPoint

# what makes kernels of one op differ between sizes: template arguments, tile sizes, numbers
_VARIANT = re.compile(r"<.*>|\(.*\)|\d+")
AUTOGRAD_NODE = "autograd::engine::evaluate_function"


def _ordered(sequence: Sequence[str]) -> tuple[str, ...]:
    return tuple(name for name in sequence if not name.startswith(AUTOGRAD_NODE))


def same_sequence(a: Sequence[str], b: Sequence[str]) -> bool:
    """Whether two steps' op sequences are one program's (the autograd engine's nodes left out)."""
    return _ordered(a) == _ordered(b)


def first_difference(points: Sequence[RunPoint]) -> str | None:
    """None when every run has the first run's op sequence per step, else a line naming the first
    difference (the runs, the position and the two ops)."""
    base = points[0]
    for other in points[1:]:
        a, b = _ordered(base.sequence), _ordered(other.sequence)
        for index, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return (f"{base.source} and {other.source} are not one program: op {index + 1} of a step is "
                        f"{x} in the first and {y} in the second")
        if len(a) != len(b):
            (short, shorter), (long, longer) = sorted(((base, a), (other, b)), key=lambda pair: len(pair[1]))
            return (f"{base.source} and {other.source} are not one program: a step of {short.source} has "
                    f"{len(shorter)} ops, one of {long.source} {len(longer)} (the first extra: {longer[len(shorter)]})")
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
