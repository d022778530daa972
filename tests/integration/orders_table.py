"""The shipped ``orders`` pipeline's table (issue #64), loaded with 300 rows of every declared
type, on SQLite and PostgreSQL: what the table's reads and digests are tested on."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from pathlib import Path

import pytest

from boardstream import database
from boardstream.pipelines import shipped
from boardstream.sink.table import SinkTable
from tests.fixtures import sqlite_or_postgres_url

ORDERS = shipped("orders")


def order_row(i: int) -> dict[str, object]:
    return {
        "order_id": f"o{i:04d}",
        "customer_id": f"c{i % 7}",
        "customer_name": None if i % 5 == 0 else f"customer {i % 7}",
        "amount": Decimal(f"{i}.{i % 100:02d}"),
        "credit_limit": Decimal("99999999999.99") if i % 2 else None,
        "vip": i % 3 == 0,
        "customer_since": date(2020, 1, 1 + i % 28),
        "gift": None if i % 4 == 0 else i % 4 == 1,
        "placed_at": 1_735_689_600_000_000 + i,
        "stream_partition": 0,
        "stream_offset": i,
        "table_partition": 0,
        "table_offset": i % 7,
        "joined_partition": 0,
        "joined_offset": i,
    }


@pytest.fixture(params=["sqlite", "postgresql"])
def orders_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """orders' table (issue #64) loaded with ``order_row`` 0-299 in a database of its own."""
    url = sqlite_or_postgres_url(request, tmp_path)
    engine = database.engine(url)
    target = SinkTable.of(ORDERS)
    target.create(engine)
    assert target.upsert(engine, [order_row(i) for i in range(300)]) == 300
    engine.dispose()
    return url
