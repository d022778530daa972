"""The closure of an incremental run's keys over a fake ledger (the lookups are its only seam):
exactly the positions and boards reachable, each asked about once."""

from __future__ import annotations

from collections.abc import Iterable

from boardstream.reconcile.incremental.affected import Keys, Position, close

# joined records: (board, source position)
RECORDS = [
    ("b1", (0, 1)),
    ("b1", (0, 5)),  # b1 updated: a second source record
    ("b2", (1, 2)),
    ("b3", (0, 5)),  # a forged output of b3 at b1's position
    ("b3", (2, 9)),
    ("b4", (1, 7)),  # unrelated
]


class Ledger:
    """The two lookups over RECORDS, recording what each was asked."""

    def __init__(self) -> None:
        self.asked_boards: list[str] = []
        self.asked_positions: list[Position] = []

    def positions_of(self, boards: frozenset[str]) -> Iterable[Position]:
        self.asked_boards += sorted(boards)
        return [position for board, position in RECORDS if board in boards]

    def boards_at(self, positions: frozenset[Position]) -> Iterable[str]:
        self.asked_positions += sorted(positions)
        return [board for board, position in RECORDS if position in positions]


def test_a_new_record_of_a_board_brings_its_other_positions_and_their_boards() -> None:
    ledger = Ledger()
    keys = close(Keys.of(boards=["b1"]), ledger.positions_of, ledger.boards_at)
    assert keys == Keys.of([(0, 1), (0, 5), (2, 9)], ["b1", "b3"])
    # each key asked about once: b1, then its positions, then b3, then b3's new position
    assert ledger.asked_boards == ["b1", "b3"]
    assert ledger.asked_positions == [(0, 1), (0, 5), (2, 9)]


def test_a_position_brings_the_boards_held_there() -> None:
    ledger = Ledger()
    keys = close(Keys.of([(1, 2)]), ledger.positions_of, ledger.boards_at)
    assert keys == Keys.of([(1, 2)], ["b2"])


def test_a_key_nothing_holds_stays_alone() -> None:
    ledger = Ledger()
    keys = close(Keys.of([(5, 5)], ["nobody"]), ledger.positions_of, ledger.boards_at)
    assert keys == Keys.of([(5, 5)], ["nobody"])
    assert (ledger.asked_boards, ledger.asked_positions) == (["nobody"], [(5, 5)])


def test_no_seed_asks_nothing() -> None:
    ledger = Ledger()
    assert close(Keys(), ledger.positions_of, ledger.boards_at) == Keys()
    assert (ledger.asked_boards, ledger.asked_positions) == ([], [])
