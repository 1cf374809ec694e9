"""Charts as inline SVG, drawn on the server: no script, no library, no inline style (the
colours and line styles come from the stylesheet through class names). Every label is
escaped.

Series often coincide (everything received was processed; nothing failed), so each is told
apart by more than its colour: received is a wide pale band, processed a dashed line drawn
over it, failed a dotted line on top; the legend shows the same strokes. Zero sits a few
units above the axis, so a series that stays at zero runs along the axis without hiding it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC

from markupsafe import Markup, escape

from inbox._operations.records import Activity

__all__ = ["SERIES", "activity_charts", "legend", "svg_chart"]

WIDTH, HEIGHT = 1200, 180
LEFT, RIGHT, TOP, BOTTOM = 44, 8, 12, 22
FLOOR = 5  # between the axis and the height of zero
SERIES = ("received", "processed", "failed")  # drawn in this order: the last on top


def _nice_max(value: float) -> float:
    """The axis top: 1, 2 or 5 times a power of ten, at least ``value``."""
    if value <= 0:
        return 1.0
    scale = 1.0
    while scale * 10 <= value:
        scale *= 10
    while scale > value:
        scale /= 10
    for step in (1, 2, 5, 10):
        if step * scale >= value:
            return step * scale
    return 10 * scale


def svg_chart(title: str, x_labels: Sequence[str], series: Mapping[str, Sequence[float]]) -> Markup:
    """A line per series over the same x positions; ``x_labels`` names the first, middle
    and last position on the axis. The series' names are the CSS classes of their lines."""
    count = max((len(v) for v in series.values()), default=0)
    top = _nice_max(max((max(v, default=0) for v in series.values()), default=0))
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM - FLOOR
    axis = HEIGHT - BOTTOM

    def x(i: int) -> float:
        return LEFT + (plot_w * i / (count - 1) if count > 1 else plot_w / 2)

    def y(v: float) -> float:
        return TOP + plot_h - plot_h * v / top

    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img"'
        f' aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(title)}</title>",
        f'<line class="axis" x1="{LEFT}" y1="{axis}" x2="{WIDTH - RIGHT}" y2="{axis}"/>',
        f'<text class="tick" x="{LEFT - 4}" y="{TOP + 4}" text-anchor="end">{top:g}</text>',
        f'<text class="tick" x="{LEFT - 4}" y="{TOP + plot_h + 4}" text-anchor="end">0</text>',
    ]
    if x_labels and count:
        anchors = [(0, "start"), (count // 2, "middle"), (count - 1, "end")]
        for (i, anchor), label in zip(anchors, x_labels, strict=False):
            parts.append(
                f'<text class="tick" x="{x(i):.1f}" y="{HEIGHT - 6}"'
                f' text-anchor="{anchor}">{escape(label)}</text>'
            )
    for name, values in series.items():
        points = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(values))
        if points:
            parts.append(
                f'<polyline class="series {escape(name)}" points="{points}">'
                f"<title>{escape(name)}</title></polyline>"
            )
    parts.append("</svg>")
    return Markup("".join(parts))  # noqa: S704 - every interpolated text is escaped above


def legend() -> Markup:
    """The series' names, each after a sample of its line (the chart's classes)."""
    return Markup(  # noqa: S704 - only the constant names of SERIES
        " ".join(
            f'<span class="legend-item"><svg class="swatch" viewBox="0 0 28 8" aria-hidden="true"'
            f' xmlns="http://www.w3.org/2000/svg"><line class="series {name}" x1="1" y1="4"'
            f' x2="27" y2="4"/></svg> {name}</span>'
            for name in SERIES
        )
    )


def activity_charts(windows: Sequence[tuple[str, Activity]]) -> list[tuple[str, Markup]]:
    """One chart per (title, activity) of the operator API: received, processed, failed."""
    charts = []
    for title, activity in windows:
        points = activity.points
        labels = [p.at.astimezone(UTC).strftime("%H:%M") for p in points]
        if labels:
            labels = [labels[0], labels[len(labels) // 2], labels[-1]]
        series = {
            "received": [float(p.received) for p in points],
            "processed": [float(p.processed) for p in points],
            "failed": [float(p.failed) for p in points],
        }
        charts.append((title, svg_chart(title, labels, series)))
    return charts
