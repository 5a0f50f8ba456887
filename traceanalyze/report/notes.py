"""Sentences about the report as a whole that every renderer shows the same way."""

from __future__ import annotations


def missing_ranks_note(ranks: list[int], world_sizes: list[int | None]) -> str | None:
    """"4 of 8 ranks present" when several rank files declare a larger `distributedInfo` world
    size than there are ranks (a single file is one rank by design: no note)."""
    world = max((w for w in world_sizes if w), default=None)
    if len(ranks) < 2 or world is None or world <= len(ranks):
        return None
    missing = sorted(set(range(world)) - set(ranks))
    listed = ", ".join(map(str, missing[:8])) + (", …" if len(missing) > 8 else "")
    return f"{len(ranks)} of {world} ranks present (world size {world} in distributedInfo); missing: {listed}"
