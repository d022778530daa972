"""The rows/s of a stream's recent batches as an inline SVG, drawn on the server: a cell of a
table row, too small for a chart library's axes and legend (the balance chart uses Chart.js)."""

from __future__ import annotations

from collections.abc import Sequence


def sparkline(values: Sequence[float], width: int = 160, height: int = 28) -> str:
    """One bar per batch, oldest first, each titled with its rate. Bars, not a line: a job run
    available-now often writes a single batch, and a line needs two points."""
    if not values:
        return ""
    top = max(values) or 1
    step = width / len(values)
    bars = "".join(
        f'<rect x="{i * step:.1f}" y="{height - max(v / top * height, 1):.1f}" '
        f'width="{max(step - 1, 1):.1f}" height="{max(v / top * height, 1):.1f}">'
        f"<title>{v:,.1f} rows/s</title></rect>"
        for i, v in enumerate(values)
    )
    return (
        f'<svg class="sparkline" width="{width}" height="{height}" fill="#1f6feb" role="img" '
        f'aria-label="rows/s of the last {len(values)} batches">{bars}</svg>'
    )
