"""Print the figures of the last fault-injection run of each scenario as a Markdown table.

.venv/bin/python -m tests.faults.report      # after pytest tests/faults
"""

from __future__ import annotations

import json

from tests.faults.harness import FIGURES

COLUMNS = (
    ("scenario", "scenario"),
    ("form", "form"),
    ("records_in", "records in"),
    ("boards", "boards"),
    ("faults", "faults injected"),
    ("restarts", "restarts"),
    ("lost", "lost rows"),
    ("duplicated_rows", "duplicate rows in board_detail"),
    ("topic_replays", "replays in board-detail (at-least-once)"),
    ("recover_s", "time to recover s"),
    ("reconciliation", "reconciliation"),
    ("at", "run at"),
)


def main() -> None:
    last: dict[str, dict] = {}
    for line in FIGURES.read_text().splitlines():
        row = json.loads(line)
        last[row["scenario"]] = row
    print("| " + " | ".join(title for _, title in COLUMNS) + " |")
    print("|" + "---|" * len(COLUMNS))
    for row in last.values():
        cells = [f"{v:,}" if isinstance(v := row.get(k, ""), int) else str(v) for k, _ in COLUMNS]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
