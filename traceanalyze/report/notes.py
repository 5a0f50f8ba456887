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


def job_notes(ranks: list[int], world_sizes: list[int | None], rank_notes: list[tuple[str, ...]]) -> list[str]:
    """What a folder's report says first, in every format: the missing ranks, then the notes the
    reduce put on every rank (not one job, rank files skipped, colliding `distributedInfo.rank`):
    those every rank of several carries."""
    missing = missing_ranks_note(ranks, world_sizes)
    shared = [note for note in rank_notes[0] if all(note in notes for notes in rank_notes[1:])] \
        if len(rank_notes) > 1 else []
    return ([missing] if missing else []) + shared

