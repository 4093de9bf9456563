"""The report's charts as inline SVG: lines, grouped bars, box plots with their points, and
log axes (the roofline is a line chart on two of them).

A charting library's browser bundle was 4.8 MB of every report, whatever it showed; these
charts are the figures themselves, drawn here from the numbers, so a report is as large as
its data and opens without a network or a script. Each point, bar and box carries its
values as an SVG ``<title>`` (the browser's tooltip on hover); a legend entry names a
series by ``data-series``, which the page's few lines of script hide and show on a click.
Every chart is a ``<figure class="chart" data-chart=NAME>`` holding ``<svg id="chart-NAME">``.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

WIDTH = 640  # the drawing's own units; the page scales it to its column
FONT = 11
LEFT, RIGHT, TOP, BOTTOM = 62, 14, 12, 46
DASHES = {None: "", "dash": "6 4", "dot": "2 3"}
GRID = "#e6e6e6"
INK = "#444"


@dataclass(frozen=True)
class Point:
    """One value of a series and what hovering it says."""

    x: float
    y: float | None
    text: str


@dataclass
class Series:
    """A line, a set of markers or both, drawn in one colour; ``dash`` is None, "dash" or
    "dot"; ``symbol`` "circle" or "diamond"."""

    name: str
    points: list[Point]
    colour: str
    dash: str | None = None
    lines: bool = True
    markers: bool = True
    symbol: str = "circle"


@dataclass(frozen=True)
class Axis:
    """An axis: its title, logarithmic or linear, a fixed range (``low``/``high``, else
    the data's, padded), whole-number ticks (``whole``: iterations, k) and a linear range
    that starts at zero (``from_zero``)."""

    title: str
    log: bool = False
    low: float | None = None
    high: float | None = None
    whole: bool = False
    from_zero: bool = False


@dataclass(frozen=True)
class Rule:
    """A horizontal reference line (a speedup of 1), with an optional label at its end."""

    y: float
    label: str = ""


@dataclass
class Bars:
    """One series of a grouped bar chart: a value per group (None: no bar), the text shown
    on each bar and the text of its tooltip."""

    name: str
    colour: str
    values: list[float | None]
    labels: list[str]
    texts: list[str]


@dataclass
class Box:
    """A box plot of ``values`` (quartiles, median, whiskers to the extremes) with every
    value drawn as a point beside it; ``texts`` say what each point is."""

    name: str
    colour: str
    values: list[float]
    texts: list[str]
    symbol: str = "circle"
    caption: list[str] = field(default_factory=list)  # the label under it, a line each


# ---------------------------------------------------------------------------
# Scales and ticks
# ---------------------------------------------------------------------------


class _Scale:
    """Data values to drawing units along one axis (``start`` is where ``low`` lands)."""

    def __init__(self, low: float, high: float, start: float, end: float, log: bool) -> None:
        self.log = log
        self.low, self.high = (math.log10(low), math.log10(high)) if log else (low, high)
        self.start, self.end = start, end

    def __call__(self, value: float) -> float:
        v = math.log10(value) if self.log else value
        span = (self.high - self.low) or 1.0
        return self.start + (v - self.low) / span * (self.end - self.start)


def _range(axis: Axis, values: Sequence[float]) -> tuple[float, float]:
    """The axis's range: its own where given, else the values' padded a little (a log axis
    by a factor of 1.25 each way; a linear one by 5 % of its span, or half a unit)."""
    shown = [v for v in values if v is not None and (v > 0 or not axis.log)]
    if axis.log:
        low = axis.low if axis.low is not None else (min(shown) / 1.25 if shown else 0.1)
        high = axis.high if axis.high is not None else (max(shown) * 1.25 if shown else 10.0)
        return (low, high) if high > low else (low / 10, low * 10)
    low = 0.0 if axis.from_zero else (min(shown) if shown else 0.0)
    high = max(shown) if shown else 1.0
    pad = (high - low) * 0.05 if high > low else 0.5
    low = axis.low if axis.low is not None else (low if axis.from_zero else low - pad)
    high = axis.high if axis.high is not None else high + pad
    return low, high


def ticks(low: float, high: float, log: bool = False, whole: bool = False) -> list[float]:
    """Tick values within [low, high]: on a log axis powers of ten, or where that gives
    fewer than three, also 2 and 5 times them, then every whole multiple and 1.5; on a linear one,
    about five steps of 1, 2 or 5 times a power of ten (whole numbers only with ``whole``)."""
    if log:
        first, last = math.floor(math.log10(low)), math.ceil(math.log10(high))
        found: list[float] = []
        for factors in ((1,), (1, 2, 5), (1, 1.5, 2, 3, 4, 5, 6, 7, 8, 9)):
            found = [v for v in sorted(f * 10.0 ** e for e in range(first, last + 1) for f in factors)
                     if low * (1 - 1e-9) <= v <= high * (1 + 1e-9)]
            if len(found) >= 3:
                break
        return found
    raw = (high - low) / 5 or 1.0
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(f * magnitude for f in (1, 2, 5, 10) if f * magnitude >= raw * (1 - 1e-9))
    if whole:
        step = max(1.0, math.ceil(step))
    start = math.ceil(low / step - 1e-9) * step
    count = int((high - start) / step + 1e-9) + 1
    return [round(start + i * step, 12) for i in range(max(count, 0))]


def number(value: float) -> str:
    """A tick label: as short as the value allows (0.001, 0.5, 20, 1000)."""
    return f"{value:g}" if abs(value) < 1e5 or value == 0 else f"{value:.0e}"


# ---------------------------------------------------------------------------
# Pieces of a drawing
# ---------------------------------------------------------------------------


def _e(text: str) -> str:
    return html.escape(text, quote=True)


def _f(value: float) -> str:
    return f"{value:.1f}"


def _title(text: str) -> str:
    return f"<title>{_e(text)}</title>" if text else ""


def _marker(x: float, y: float, colour: str, symbol: str, text: str) -> str:
    if symbol == "diamond":
        r = 4.5
        points = f"{_f(x)},{_f(y - r)} {_f(x + r)},{_f(y)} {_f(x)},{_f(y + r)} {_f(x - r)},{_f(y)}"
        return f'<polygon class="point" points="{points}" fill="{colour}">{_title(text)}</polygon>'
    return f'<circle class="point" cx="{_f(x)}" cy="{_f(y)}" r="3.5" fill="{colour}">{_title(text)}</circle>'


def _frame(name: str, title: str, height: int, body: list[str], legend: str = "") -> str:
    """The figure around a drawing: caption, the SVG (scaled to its column) and legend."""
    svg = (f'<svg id="chart-{_e(name)}" viewBox="0 0 {WIDTH} {height}" role="img" aria-label="{_e(title)}" '
           f'font-size="{FONT}" xmlns="http://www.w3.org/2000/svg">' + "".join(body) + "</svg>")
    return (f'<figure class="chart" data-chart="{_e(name)}"><figcaption>{_e(title)}</figcaption>'
            f"{svg}{legend}</figure>")


def _legend(entries: list[tuple[str, str]]) -> str:
    """The legend under a chart: (swatch SVG, name) per series, in series order."""
    items = "".join(f'<li data-series="{i}" title="click to hide or show">'
                    f'<svg class="swatch" width="26" height="10" viewBox="0 0 26 10">{swatch}</svg>{_e(name)}</li>'
                    for i, (swatch, name) in enumerate(entries))
    return f'<ul class="legend">{items}</ul>'


def _line_swatch(series: Series) -> str:
    dash = DASHES[series.dash]
    line = (f'<line x1="1" y1="5" x2="25" y2="5" stroke="{series.colour}" stroke-width="2"'
            + (f' stroke-dasharray="{dash}"' if dash else "") + "/>") if series.lines else ""
    dot = f'<circle cx="13" cy="5" r="3" fill="{series.colour}"/>' if series.markers else ""
    return line + dot


def _axes(name: str, height: int, bottom: int, y: _Scale, y_axis: Axis, y_ticks: list[float],
          x: tuple[_Scale, Axis, list[float]] | None = None) -> list[str]:
    """The plot area (``bottom`` units above the drawing's foot) with its clip path, grid
    lines, tick labels and axis titles; the x axis's where ``x`` gives it (bars and boxes
    label their groups themselves)."""
    top, foot = TOP, height - bottom
    left, right = LEFT, WIDTH - RIGHT
    out = [f'<clipPath id="clip-{_e(name)}"><rect x="{left}" y="{top}" width="{right - left}" '
           f'height="{foot - top}"/></clipPath>',
           f'<rect x="{left}" y="{top}" width="{right - left}" height="{foot - top}" fill="none" stroke="#ccc"/>']
    for value in y_ticks:
        at = _f(y(value))
        out.append(f'<line x1="{left}" y1="{at}" x2="{right}" y2="{at}" stroke="{GRID}"/>'
                   f'<text x="{left - 5}" y="{at}" text-anchor="end" dominant-baseline="middle" '
                   f'fill="{INK}">{_e(number(value))}</text>')
    out.append(f'<text transform="translate(14 {_f((top + foot) / 2)}) rotate(-90)" text-anchor="middle" '
               f'fill="{INK}">{_e(y_axis.title)}</text>')
    if x is not None:
        scale, axis, x_ticks = x
        for value in x_ticks:
            at = _f(scale(value))
            out.append(f'<line x1="{at}" y1="{top}" x2="{at}" y2="{foot}" stroke="{GRID}"/>'
                       f'<text x="{at}" y="{foot + 15}" text-anchor="middle" fill="{INK}">'
                       f"{_e(number(value))}</text>")
        out.append(f'<text x="{_f((left + right) / 2)}" y="{height - 8}" text-anchor="middle" '
                   f'fill="{INK}">{_e(axis.title)}</text>')
    return out


def _rules(name: str, rules: Sequence[Rule], y: _Scale) -> list[str]:
    out = []
    for rule in rules:
        at = _f(y(rule.y))
        out.append(f'<g class="rule" clip-path="url(#clip-{_e(name)})"><line x1="{LEFT}" y1="{at}" '
                   f'x2="{WIDTH - RIGHT}" y2="{at}" stroke="grey" stroke-dasharray="6 4"/>'
                   + (f'<text x="{WIDTH - RIGHT - 4}" y="{float(at) - 4:.1f}" text-anchor="end" fill="grey">'
                      f"{_e(rule.label)}</text>" if rule.label else "") + "</g>")
    return out


# ---------------------------------------------------------------------------
# Charts
# ---------------------------------------------------------------------------


def _drawable(point: Point, x_axis: Axis, y_axis: Axis) -> bool:
    return point.y is not None and (point.y > 0 or not y_axis.log) and (point.x > 0 or not x_axis.log)


def line_chart(name: str, title: str, series: Sequence[Series], x_axis: Axis, y_axis: Axis,
               rules: Sequence[Rule] = (), height: int = 380) -> str:
    """Series of (x, y) points joined by lines and/or marked, on linear or log axes; a
    missing y breaks its line, and a point a log axis cannot place is left out."""
    drawn = [[p for p in s.points if _drawable(p, x_axis, y_axis)] for s in series]
    x_low, x_high = _range(x_axis, [p.x for s in series for p in s.points])  # a gap keeps its x
    y_low, y_high = _range(y_axis, [p.y for points in drawn for p in points if p.y is not None]
                           + [r.y for r in rules])
    x = _Scale(x_low, x_high, LEFT, WIDTH - RIGHT, x_axis.log)
    y = _Scale(y_low, y_high, height - BOTTOM, TOP, y_axis.log)
    body = _axes(name, height, BOTTOM, y, y_axis, ticks(y_low, y_high, y_axis.log, y_axis.whole),
                 (x, x_axis, ticks(x_low, x_high, x_axis.log, x_axis.whole)))
    body += _rules(name, rules, y)
    for index, s in enumerate(series):
        parts = [f'<g class="series" data-series="{index}" clip-path="url(#clip-{_e(name)})">']
        if s.lines:
            path, pen = [], "M"
            for p in s.points:
                if not _drawable(p, x_axis, y_axis):
                    pen = "M"  # a gap: the line starts again after it
                    continue
                path.append(f"{pen}{_f(x(p.x))} {_f(y(p.y))}")  # type: ignore[arg-type]
                pen = "L"
            dash = DASHES[s.dash]
            parts.append(f'<path d="{" ".join(path)}" fill="none" stroke="{s.colour}" stroke-width="2"'
                         + (f' stroke-dasharray="{dash}"' if dash else "") + f">{_title(s.name)}</path>")
        if s.markers:
            parts += [_marker(x(p.x), y(p.y), s.colour, s.symbol, p.text)  # type: ignore[arg-type]
                      for p in s.points if _drawable(p, x_axis, y_axis)]
        parts.append("</g>")
        body.append("".join(parts))
    return _frame(name, title, height, body, _legend([(_line_swatch(s), s.name) for s in series]))


def bar_chart(name: str, title: str, groups: Sequence[str], bars: Sequence[Bars], y_axis: Axis,
              height: int = 340) -> str:
    """Grouped bars: one group per name in ``groups`` (along x), one bar per series in each;
    group names turn on their side where they would not fit beside each other."""
    values = [v for b in bars for v in b.values if v is not None]
    crowded = sum(len(g) for g in groups) * FONT * 0.6 > (WIDTH - LEFT - RIGHT) * 0.9
    longest = max((len(g) for g in groups), default=0)
    bottom = BOTTOM + (int(longest * FONT * 0.45) if crowded else 0)
    low, high = _range(y_axis, values)
    y = _Scale(low, high, height - bottom, TOP, y_axis.log)
    body = _axes(name, height, bottom, y, y_axis, ticks(low, high, y_axis.log))
    band = (WIDTH - LEFT - RIGHT) / max(len(groups), 1)
    width = min(band * 0.8 / max(len(bars), 1), 56.0)
    margin = (band - width * len(bars)) / 2  # the group's bars centred in its band
    base = y(max(low, 0.0)) if not y_axis.log else height - bottom
    for index, b in enumerate(bars):
        parts = [f'<g class="series" data-series="{index}">']
        for g, (value, label, text) in enumerate(zip(b.values, b.labels, b.texts, strict=True)):
            if value is None:
                continue
            left = LEFT + band * g + margin + width * index
            top = y(value)
            tall = base - top
            parts.append(f'<rect class="bar" x="{_f(left)}" y="{_f(min(top, base))}" width="{_f(width)}" '
                         f'height="{_f(abs(tall))}" fill="{b.colour}">{_title(text)}</rect>')
            if label:
                inside = tall >= FONT + 6
                parts.append(f'<text x="{_f(left + width / 2)}" y="{_f(top + FONT + 2 if inside else top - 3)}" '
                             f'text-anchor="middle" font-size="{FONT - 1}" fill="{"#fff" if inside else INK}" '
                             f'pointer-events="none">{_e(label)}</text>')
        parts.append("</g>")
        body.append("".join(parts))
    for g, group in enumerate(groups):
        at = LEFT + band * (g + 0.5)
        if crowded:
            body.append(f'<text transform="translate({_f(at)} {height - bottom + 12}) rotate(-35)" '
                        f'text-anchor="end" fill="{INK}">{_e(group)}</text>')
        else:
            body.append(f'<text x="{_f(at)}" y="{height - bottom + 15}" text-anchor="middle" '
                        f'fill="{INK}">{_e(group)}</text>')
    swatches = [(f'<rect x="6" y="0" width="14" height="10" fill="{b.colour}"/>', b.name) for b in bars]
    return _frame(name, title, height, body, _legend(swatches))


def quartiles(values: Sequence[float]) -> tuple[float, float, float]:
    """First quartile, median and third quartile, interpolated between the sorted values."""
    ordered = sorted(values)

    def at(share: float) -> float:
        position = share * (len(ordered) - 1)
        below = math.floor(position)
        above = min(below + 1, len(ordered) - 1)
        return ordered[below] + (ordered[above] - ordered[below]) * (position - below)

    return at(0.25), at(0.5), at(0.75)


def box_chart(name: str, title: str, boxes: Sequence[Box], y_axis: Axis, rules: Sequence[Rule] = (),
              height: int = 420) -> str:
    """One box per ``Box`` along x (first quartile to third, the median across it, whiskers
    to the smallest and largest value) with each value as a point spread beside it; its
    caption under it. Boxes without values are left out."""
    shown = [b for b in boxes if b.values]
    values = [v for b in shown for v in b.values] + [r.y for r in rules]
    low, high = _range(y_axis, values)
    bottom = BOTTOM + FONT + 4
    y = _Scale(low, high, height - bottom, TOP, y_axis.log)
    body = _axes(name, height, bottom, y, y_axis, ticks(low, high, y_axis.log))
    body += _rules(name, rules, y)
    band = (WIDTH - LEFT - RIGHT) / max(len(shown), 1)
    for index, b in enumerate(shown):
        middle = LEFT + band * (index + 0.5)
        half = min(band * 0.18, 40)
        q1, median, q3 = quartiles(b.values)
        summary = (f"{b.name}: {len(b.values)} values, min {min(b.values):.3g}, first quartile {q1:.3g}, "
                   f"median {median:.3g}, third quartile {q3:.3g}, max {max(b.values):.3g}")
        box_left = middle - half * 2.2
        parts = [f'<g class="series" data-series="{index}">',
                 f'<line x1="{_f(box_left + half)}" y1="{_f(y(min(b.values)))}" x2="{_f(box_left + half)}" '
                 f'y2="{_f(y(max(b.values)))}" stroke="{b.colour}"/>',
                 f'<rect class="box" x="{_f(box_left)}" y="{_f(y(q3))}" width="{_f(2 * half)}" '
                 f'height="{_f(max(y(q1) - y(q3), 1.0))}" fill="{b.colour}" fill-opacity="0.2" '
                 f'stroke="{b.colour}">{_title(summary)}</rect>',
                 f'<line x1="{_f(box_left)}" y1="{_f(y(median))}" x2="{_f(box_left + 2 * half)}" '
                 f'y2="{_f(y(median))}" stroke="{b.colour}" stroke-width="2"/>']
        for k, (value, text) in enumerate(zip(b.values, b.texts, strict=True)):
            spread = ((k * 0.6180339887) % 1.0) * half * 1.6  # the golden ratio: spread, not random
            parts.append(_marker(middle + half * 0.4 + spread, y(value), b.colour, b.symbol, text))
        parts.append("</g>")
        body.append("".join(parts))
        room = max(int(band / (FONT * 0.6)), 4)  # characters that fit under the box
        for line, caption in enumerate(b.caption or [b.name]):
            shown = caption if len(caption) <= room else caption[:room - 1] + "…"
            body.append(f'<text x="{_f(middle)}" y="{height - bottom + 15 + line * (FONT + 3)}" '
                        f'text-anchor="middle" fill="{INK}">{_e(shown)}{_title(caption)}</text>')
    return _frame(name, title, height, body)


__all__ = ["Axis", "Bars", "Box", "Point", "Rule", "Series", "bar_chart", "box_chart", "line_chart",
           "number", "quartiles", "ticks"]
