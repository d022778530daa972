"""The one order every reader of a run's numbers shows them in (CLI summary, XCom, health page,
demo), and the balance's parts: pinned name by name, so a reordered or renamed kind in the
checks shows up here rather than as a shuffled page."""

from __future__ import annotations

from boardstream.reconcile.checks.vocabulary import FAILING_PARTS, PARTS, SUMMARY_ORDER


def test_the_summary_order_is_balance_failing_reported_then_the_tables() -> None:
    assert SUMMARY_ORDER == (
        # the balance
        "source",
        "read",
        "not_yet_read",
        "joined",
        "unmatched",
        "dead_lettered",
        "pending",
        "missing",
        "expired_unseen",
        "conflicting",
        # failing findings not in the balance
        "extra",
        "altered_output",
        "unbalanced",
        "stalled",
        "overdue_pending",
        "stuck_pending",
        "referential",
        "duplicates",
        "missing_in_table",
        "extra_in_table",
        "mismatched",
        "stale_in_table",
        "moved_partition",
        "type_mismatch",
        # reported only
        "expired_evidence",
        "source_expired",
        "topic_replays",
        "unverifiable_in_table",
        "superseded",
        # the table's counts
        "expected_table_rows",
        "not_yet_loaded",
        "loaded_ahead",
        "sink_dead_lettered",
    )
    assert len(set(SUMMARY_ORDER)) == len(SUMMARY_ORDER)


def test_the_parts_are_what_adds_up_to_source_without_the_read_subtotal() -> None:
    assert PARTS == (
        "not_yet_read",
        "joined",
        "unmatched",
        "dead_lettered",
        "pending",
        "missing",
        "expired_unseen",
        "conflicting",
    )
    assert FAILING_PARTS == ("missing", "expired_unseen", "conflicting")
