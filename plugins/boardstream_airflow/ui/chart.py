"""Small inline SVG charts, drawn on the server so the page needs no JavaScript library."""

from __future__ import annotations

from collections.abc import Sequence

COLORS = {
    "not_yet_read": "#8c959f",
    "joined": "#2da44e",
    "unmatched": "#d29922",
    "dead_lettered": "#8250df",
    "pending": "#1f6feb",
    "missing": "#cf222e",
    "conflicting": "#bc4c00",
}


def stacked_bars(
    points: Sequence[dict],
    parts: Sequence[str],
    only_when_any: Sequence[str] = (),
    width: int = 640,
    height: int = 220,
) -> str:
    """One bar per run (oldest first, labelled with its run id) stacked from ``parts`` in
    their order, bottom up; a part in ``only_when_any`` is left out unless some run has it.
    The y axis counts from zero to the tallest bar."""
    if not points:
        return "<p>No finished reconciliation runs yet.</p>"
    shown = [p for p in parts if p not in only_when_any or any(pt[p] for pt in points)]
    left, bottom, top_pad = 56, 34, 8
    plot_w, plot_h = width - left - 8, height - bottom - top_pad
    top = max(sum(point[p] for p in shown) for point in points) or 1
    slot = plot_w / len(points)
    bar_w = min(slot * 0.7, 48)
    bars = []
    for i, point in enumerate(points):
        x, base, rects = left + (i + 0.5) * slot - bar_w / 2, top_pad + plot_h, []
        for part in shown:
            h = point[part] / top * plot_h
            base -= h
            rects.append(
                f'<rect data-part="{part}" x="{x:.1f}" y="{base:.1f}" width="{bar_w:.1f}" '
                f'height="{h:.1f}" fill="{COLORS.get(part, "#555")}">'
                f"<title>run {point['run_id']}: {part} {point[part]:,}</title></rect>"
            )
        bars.append(
            f'<g data-run="{point["run_id"]}">{"".join(rects)}<text class="tick" '
            f'x="{x + bar_w / 2:.1f}" y="{top_pad + plot_h + 14}" text-anchor="middle">'
            f"{point['run_id']}</text></g>"
        )
    axes = (
        f'<line x1="{left}" y1="{top_pad}" x2="{left}" y2="{top_pad + plot_h}" stroke="#57606a"/>'
        f'<line x1="{left}" y1="{top_pad + plot_h}" x2="{left + plot_w}" y2="{top_pad + plot_h}" '
        f'stroke="#57606a"/>'
        f'<text class="tick" x="{left - 4}" y="{top_pad + plot_h}" text-anchor="end">0</text>'
        f'<text class="tick" x="{left - 4}" y="{top_pad + 8}" text-anchor="end">{top:,}</text>'
        f'<text data-axis="y" transform="translate(12 {top_pad + plot_h / 2:.1f}) rotate(-90)" '
        f'text-anchor="middle">source positions</text>'
        f'<text data-axis="x" x="{left + plot_w / 2:.1f}" y="{height - 4}" '
        f'text-anchor="middle">reconciliation run</text>'
    )
    legend = " ".join(
        f'<span style="color:{COLORS.get(part, "#555")}">&#9632; {part}</span>' for part in shown
    )
    return (
        f'<svg viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
        f'font-size="11" aria-label="the balance of each run: {", ".join(shown)}">'
        f"{axes}{''.join(bars)}</svg>"
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
