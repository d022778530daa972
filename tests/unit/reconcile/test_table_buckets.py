"""The pure parts of the table's bucket digests: buckets, the comparison, the running totals and
the 64-bit arithmetic the databases' sums rely on."""

from __future__ import annotations

import hashlib
import re

import pytest
import sqlalchemy as sa

from boardstream.errors import BoardstreamError
from boardstream.reconcile.incremental import sqlite_digests
from boardstream.reconcile.incremental import table_buckets as tb
from boardstream.reconcile.incremental.table_buckets import BucketDigest, RowDigest
from boardstream.sink import table as sink_table


def test_bucket_is_the_first_32_bits_of_sha256_of_the_board_id() -> None:
    # Pinned: a running ledger's buckets must not move between versions.
    assert [tb.bucket_of(b) for b in ("board-0001", "게시판", "")] == [996, 1423, 1090]
    assert tb.bucket_of("board-0001", 2**31) == 1907033060
    digest = hashlib.sha256("게시판".encode()).digest()
    assert tb.bucket_of("게시판", 1000) == int.from_bytes(digest[:4], "big") % 1000


def test_buckets_spread_over_the_whole_range() -> None:
    buckets = {tb.bucket_of(f"board-{i}", 16) for i in range(500)}
    assert buckets == set(range(16))


@pytest.mark.parametrize("buckets", [0, -1, 2**31 + 1])
def test_bucket_count_out_of_range_is_refused(buckets: int) -> None:
    with pytest.raises(BoardstreamError, match="bucket count"):
        tb._check_buckets(buckets)


def test_row_digest_is_sha256s_first_64_bits_as_sqlite_returns_them() -> None:
    canonical = b'["board-1",1,null]'
    unsigned = int.from_bytes(hashlib.sha256(canonical).digest()[:8], "big")
    signed = sqlite_digests.digest64(canonical)
    assert signed is not None and -(2**63) <= signed < 2**63
    assert signed % 2**64 == unsigned
    assert sqlite_digests.digest64(None) is None
    assert sqlite_digests.digest64(b'["1"]') != sqlite_digests.digest64(b"[1]")


@pytest.mark.parametrize("digest", [0, 1, 2**32 - 1, 2**32, 2**63 - 1, -(2**63), -1, -(2**32)])
def test_the_sums_halves_recombine_into_the_unsigned_digest(digest: int) -> None:
    """What the GROUP BY sums per row ((d >> 32) & mask, d & mask on the signed 64-bit digest,
    arithmetic shift as in both databases) recombines into the row digest, unsigned."""
    high, low = (digest >> 32) & 0xFFFFFFFF, digest & 0xFFFFFFFF
    assert 0 <= high < 2**32 and 0 <= low < 2**32
    assert 2**32 * high + low == digest % 2**64


def test_a_bucket_of_2_31_rows_of_the_largest_halves_fits_a_64_bit_sum() -> None:
    assert 2**31 * (2**32 - 1) < 2**63 - 1
    assert 50_000_000 * (2**32 - 1) < 2**63 - 1


def test_columns_are_plain_identifiers_and_leave_loaded_at_out() -> None:
    """The queries name the columns unquoted."""
    assert all(re.fullmatch(r"[a-z_]+", name) for name in sink_table.COLUMNS)
    assert "loaded_at" not in sink_table.COLUMNS
    assert {c.name for c in sink_table.board_detail.columns} - set(sink_table.COLUMNS) == {
        "loaded_at"
    }


def test_totals_and_plus_minus() -> None:
    rows = [RowDigest(1, 10), RowDigest(2, 5), RowDigest(1, 2**64 - 1)]
    assert tb.totals(rows) == {1: BucketDigest(2, 2**64 + 9), 2: BucketDigest(1, 5)}
    assert tb.totals([]) == {}
    assert BucketDigest(2, 15).minus(10) == BucketDigest(1, 5)
    assert tb.EMPTY.plus(7).minus(7) == tb.EMPTY


def test_differing_buckets_includes_buckets_missing_on_either_side() -> None:
    expected = {1: BucketDigest(2, 30), 2: BucketDigest(1, 5), 3: BucketDigest(1, 7)}
    actual = {1: BucketDigest(2, 30), 2: BucketDigest(1, 6), 4: BucketDigest(1, 7)}
    assert tb.differing_buckets(expected, actual) == [2, 3, 4]
    assert tb.differing_buckets(expected, dict(expected)) == []
    assert tb.differing_buckets({}, {}) == []
    # Same sum, another count (a row added whose digest is 0, say): differs.
    assert tb.differing_buckets({1: BucketDigest(1, 5)}, {1: BucketDigest(2, 5)}) == [1]


def test_an_emptied_bucket_is_no_different_from_an_absent_one() -> None:
    """A running total whose rows all left is (0, 0); the table's GROUP BY has no such bucket."""
    running = tb.totals([RowDigest(3, 9)])
    running[3] = running[3].minus(9)
    assert tb.differing_buckets(running, {}) == []


def test_differing_rows_names_changed_missing_and_unexpected_boards() -> None:
    expected = {"a": RowDigest(1, 1), "b": RowDigest(1, 2), "c": RowDigest(1, 3)}
    actual = {"a": RowDigest(1, 1), "b": RowDigest(1, 20), "d": RowDigest(1, 4)}
    assert tb.differing_rows(expected, actual) == ["b", "c", "d"]
    assert tb.differing_rows(expected, dict(expected)) == []


def test_only_sqlites_refusal_of_a_blob_reads_again_tagged() -> None:
    """Any other error of the untagged read is the caller's, not a reason to read again."""
    reads: list[bool] = []

    def refused(message: str):
        def read(tagged: bool) -> str:
            reads.append(tagged)
            if not tagged:
                raise sa.exc.OperationalError("SELECT", {}, Exception(message))
            return "tagged"

        return read

    assert tb._blob_tagged_if_needed(refused("JSON cannot hold BLOB values")) == "tagged"
    assert reads == [False, True]
    reads.clear()
    with pytest.raises(sa.exc.OperationalError, match="database is locked"):
        tb._blob_tagged_if_needed(refused("database is locked"))
    assert reads == [False]
