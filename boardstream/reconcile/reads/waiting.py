"""The boards the join holds for their member, as a person reads them in a summary: how long
each has waited and when the join's unmatched timeout will send it to ``board-unmatched``, so a
growing ``pending`` count can be told apart from boards that are simply young."""

from __future__ import annotations

from collections.abc import Iterable

from boardstream.durations import span


def waiting_lines(
    boards: Iterable[tuple[str, int]], now_ms: int, unmatched_timeout_ms: int
) -> list[str]:
    """One line per (board_id, arrived_ms), oldest first: ``b7: waiting 3m12s, times out in
    6m48s``, or ``b7: waiting 11m, timed out 1m ago`` past the timeout (its timer is late).
    Whole seconds, so the two spans add up to the timeout."""
    timeout_s = unmatched_timeout_ms // 1000
    lines = []
    for board_id, arrived_ms in sorted(boards, key=lambda board: (board[1], board[0])):
        waited_s = max(now_ms - arrived_ms, 0) // 1000
        left_s = timeout_s - waited_s
        due = f"times out in {span(left_s)}" if left_s > 0 else f"timed out {span(-left_s)} ago"
        lines.append(f"{board_id}: waiting {span(waited_s)}, {due}")
    return lines
