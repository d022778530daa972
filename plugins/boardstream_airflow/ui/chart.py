"""Small inline SVG charts, drawn on the server so the page needs no JavaScript library."""

from __future__ import annotations

from collections.abc import Sequence

COLORS = {
    "source": "#1f6feb",
    "joined": "#2da44e",
    "unmatched": "#d29922",
    "dead_lettered": "#cf222e",
}


def line_chart(
    points: Sequence[dict], series: Sequence[str], width: int = 640, height: int = 200
) -> str:
    """One polyline per series over the points (oldest first), a shared y axis from zero."""
    if not points:
        return "<p>No finished reconciliation runs yet.</p>"
    top = max(max(point[name] for name in series) for point in points) or 1
    step = width / max(len(points) - 1, 1)

    def xy(index: int, value: float) -> str:
        return f"{index * step:.1f},{height - value / top * (height - 10):.1f}"

    lines = [
        f'<polyline fill="none" stroke="{COLORS.get(name, "#555")}" stroke-width="2" '
        f'data-series="{name}" points="{" ".join(xy(i, p[name]) for i, p in enumerate(points))}"/>'
        for name in series
    ]
    legend = " ".join(
        f'<span style="color:{COLORS.get(name, "#555")}">&#9632; {name} {points[-1][name]:,}</span>'
        for name in series
    )
    return (
        f'<svg viewBox="-2 -2 {width + 4} {height + 4}" width="{width}" height="{height}" '
        f'role="img" aria-label="source vs joined vs unmatched per run">{"".join(lines)}</svg>'
        f'<div class="legend">{legend}</div>'
    )


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
