"""The keys an incremental run re-checks, closed so that none is checked on partial data.

The checks group by two keys: the position checks by source position, the table checks by
board. A board's joined records sit at several source positions (each update of the board is a
new source record), and a source position may hold joined records of other boards (a conflict,
or a forged output). Checking a position without every record at it, or a board without every
record of it, would find things a full run does not (an "extra" output, a "stale" row), so the
seed keys are closed under both relations until nothing new joins them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass

log = logging.getLogger(__name__)

Position = tuple[int, int]  # a source record's (partition, offset) in board


@dataclass(frozen=True)
class Keys:
    """Source positions and boards to re-check."""

    positions: frozenset[Position] = frozenset()
    boards: frozenset[str] = frozenset()

    @classmethod
    def of(cls, positions: Iterable[Position] = (), boards: Iterable[str] = ()) -> Keys:
        return cls(frozenset(positions), frozenset(boards))

    def __or__(self, other: Keys) -> Keys:
        return Keys(self.positions | other.positions, self.boards | other.boards)


def close(
    seed: Keys,
    positions_of: Callable[[frozenset[str]], Iterable[Position]],
    boards_at: Callable[[frozenset[Position]], Iterable[str]],
) -> Keys:
    """``seed`` with every source position of a joined record of its boards
    (``positions_of``) and every board of a joined record at its positions (``boards_at``),
    repeated until neither adds a key. Each round asks only about the keys the last one added,
    so the lookups cost what the closure holds, not what the ledger holds."""
    keys = seed
    new = seed
    rounds = 0
    while new.positions or new.boards:
        rounds += 1
        found = Keys.of(positions_of(new.boards), boards_at(new.positions))
        new = Keys(found.positions - keys.positions, found.boards - keys.boards)
        keys = keys | new
    log.debug(
        "affected keys: %d positions, %d boards from %d and %d in %d rounds",
        len(keys.positions),
        len(keys.boards),
        len(seed.positions),
        len(seed.boards),
        rounds,
    )
    return keys
