"""A comparison drawn as an SVG image, for a blog post or a forum to embed.

``/compare/chart.svg?<the comparison's query>`` draws what ``/compare/`` draws: the
median of each series at each x value, with the range of the cell's measurements as a
whisker where it has more than one, the y axis from zero. Numeric x values (clients) are
lines over evenly spaced points; any other (filesystems, operations) grouped bars. Every
text in it comes from data people uploaded, so every one is escaped.
"""

from __future__ import annotations

import math
from html import escape
from typing import Any

from benchhub.comparisons.aggregation import Comparison, label_shown

WIDTH, PLOT_HEIGHT = 860, 300
LEFT, RIGHT, TOP = 80, 20, 64
LABEL_CHARS = 28  # an x label longer than this is cut, with an ellipsis
CHAR_WIDTH = 6.5  # about, at 12 px
# Colour-blind-safe (Okabe-Ito), the order the page's chart takes its series in.
COLOURS = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000")
TICKS = 5


def nice_ceiling(value: float) -> float:
    """The smallest 1, 2, 2.5 or 5 times 10^k at or above ``value`` (the axis' top)."""
    if value <= 0:
        return 1.0
    magnitude = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if step * magnitude >= value:
            return step * magnitude
    return 10 * magnitude  # not reached: ten magnitudes exceed value


def number_text(value: float) -> str:
    if value == 0:
        return "0"
    if abs(value) >= 1e6 or abs(value) < 1e-3:
        return f"{value:.3g}"
    return f"{value:,.6g}"


def comparison_svg(
    comparison: Comparison, x_values: list[Any], *, title: str, y_title: str, subtitle: str
) -> str:
    """The chart of ``comparison`` at ``x_values`` (the page's, without an article's
    TOTALS, which would set the scale)."""
    top = nice_ceiling(
        max(
            (max(p.max, p.value) for s in comparison.series for p in s.points if p.x in x_values),
            default=0.0,
        )
    )
    low = min(
        (min(p.min, p.value) for s in comparison.series for p in s.points if p.x in x_values),
        default=0.0,
    )
    bottom = -nice_ceiling(-low) if low < 0 else 0.0
    plot_w, plot_h = WIDTH - LEFT - RIGHT, PLOT_HEIGHT
    slot = plot_w / max(1, len(x_values))
    names = [_cut(label_shown(x)) for x in x_values]
    # Labels wider than their slot are turned, as Chart.js turns them.
    turned = max(map(len, names), default=0) * CHAR_WIDTH > slot
    label_area = int(max(map(len, names), default=0) * CHAR_WIDTH * 0.65) + 24 if turned else 24
    columns = 1 if max((len(s.label) for s in comparison.series), default=0) > 24 else 4
    legend_top = TOP + plot_h + label_area + 18
    height = legend_top + 18 * -(-len(comparison.series) // columns) + 30

    def y_of(value: float) -> float:
        return TOP + plot_h * (top - value) / (top - bottom)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12">',
        f"<title>{escape(title)}</title>",
        f'<rect width="{WIDTH}" height="{height}" fill="#fff"/>',
        f'<text x="{WIDTH / 2}" y="22" text-anchor="middle" font-size="16" '
        f'font-weight="bold">{escape(title)}</text>',
        f'<text x="{WIDTH / 2}" y="42" text-anchor="middle" fill="#555">{escape(subtitle)}</text>',
    ]
    for i in range(TICKS + 1):
        value = bottom + (top - bottom) * i / TICKS
        y = y_of(value)
        parts.append(
            f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>'
            f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{number_text(value)}</text>'
        )
    parts.append(
        f'<text transform="translate(18 {TOP + plot_h / 2}) rotate(-90)" '
        f'text-anchor="middle">{escape(y_title)}</text>'
    )
    for i, name in enumerate(names):
        centre, y = LEFT + slot * (i + 0.5), TOP + plot_h + 18
        place = (
            f'transform="translate({centre:.1f} {y}) rotate(-40)" text-anchor="end"'
            if turned
            else f'x="{centre:.1f}" y="{y}" text-anchor="middle"'
        )
        parts.append(f"<text {place}>{escape(name)}</text>")
    positions = {x: i for i, x in enumerate(x_values)}
    lines = comparison.x_numeric
    count = max(1, len(comparison.series))
    bar_w = slot * 0.8 / count
    for k, series in enumerate(comparison.series):
        colour = COLOURS[k % len(COLOURS)]
        points = sorted(
            (p for p in series.points if p.x in positions), key=lambda p: positions[p.x]
        )
        centres = []
        for p in points:
            if lines:
                cx = LEFT + slot * (positions[p.x] + 0.5)
            else:
                cx = LEFT + slot * positions[p.x] + slot * 0.1 + bar_w * (k + 0.5)
                y0, y1 = sorted((y_of(0.0), y_of(p.value)))
                parts.append(
                    f'<rect x="{cx - bar_w / 2:.1f}" y="{y0:.1f}" width="{bar_w:.1f}" '
                    f'height="{y1 - y0:.1f}" fill="{colour}"/>'
                )
            centres.append((cx, y_of(p.value)))
            if p.n > 1 and p.min != p.max:
                parts.append(
                    f'<line x1="{cx:.1f}" x2="{cx:.1f}" y1="{y_of(p.min):.1f}" '
                    f'y2="{y_of(p.max):.1f}" stroke="#333"/>'
                )
        if lines and centres:
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y in centres)
            parts.append(
                f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>'
            )
            parts.extend(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{colour}"/>' for x, y in centres
            )
        legend_x = LEFT + (k % columns) * (plot_w / columns)
        legend_y = legend_top + (k // columns) * 18
        parts.append(
            f'<rect x="{legend_x:.1f}" y="{legend_y - 10}" width="12" height="12" fill="{colour}"/>'
            f'<text x="{legend_x + 18:.1f}" y="{legend_y}">{escape(series.label)}</text>'
        )
    parts.append(
        f'<text x="{WIDTH - RIGHT}" y="{height - 8}" text-anchor="end" fill="#777">'
        "BenchHub: median of each cell, whisker: min to max of its measurements</text>"
    )
    parts.append("</svg>")
    return "\n".join(parts)


def _cut(name: str) -> str:
    return name if len(name) <= LABEL_CHARS else name[: LABEL_CHARS - 1] + "\u2026"
